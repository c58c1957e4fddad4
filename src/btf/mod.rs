//! In-memory BTF: a flat array of type records plus a string section, built like libbpf's
//! `btf__add_*` API builds it, and read back from raw bytes or an ELF `.BTF` section.
//!
//! Records are stored as native-order `u32` words, back to back, exactly as they are written;
//! `offs[i]` is the word offset of type `start_id + i`. Split BTF continues a base: its ids start
//! at the base's type count and its string offsets at the base's string length.

pub mod distill;
pub mod error;
pub mod kinds;
pub mod read;
pub mod store;
pub mod strings;
pub mod types;
pub mod write;

use std::sync::Arc;

use crate::error::{BuildError, LimitError, Result};
pub use kinds::Kind;
use strings::StringTable;
pub use types::Type;

/// Byte order of a BTF blob.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Endian {
    /// Least significant byte first.
    #[default]
    Little,
    /// Most significant byte first.
    Big,
}

impl Endian {
    /// The byte order of the machine running us.
    pub fn native() -> Self {
        if cfg!(target_endian = "little") {
            Endian::Little
        } else {
            Endian::Big
        }
    }

    /// The `u32` in these four bytes, in this byte order: the one reader of BTF (and ELF)
    /// words that every other reads through.
    #[inline]
    pub fn u32_from(self, b: [u8; 4]) -> u32 {
        match self {
            Endian::Little => u32::from_le_bytes(b),
            Endian::Big => u32::from_be_bytes(b),
        }
    }

    /// The `u32` at byte `off` of `data`; `None` when `data` ends before it.
    #[inline]
    pub fn u32_at(self, data: &[u8], off: usize) -> Option<u32> {
        let b = data.get(off..off.checked_add(4)?)?;
        Some(self.u32_from(b.try_into().ok()?))
    }

    /// The whole 4-byte words of `data`, in order (a partial word at the end is left out).
    pub fn words(self, data: &[u8]) -> Vec<u32> {
        let mut words = vec![0u32; data.len() / 4];
        let pairs = words.iter_mut().zip(data.chunks_exact(4));
        // One loop per byte order, writing into a zeroed vector: each is a plain bulk
        // conversion the compiler vectorizes, where a per-word byte-order test or a collect
        // through an iterator adapter would not be.
        match self {
            Endian::Little => {
                pairs.for_each(|(w, c)| *w = u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            }
            Endian::Big => {
                pairs.for_each(|(w, c)| *w = u32::from_be_bytes([c[0], c[1], c[2], c[3]]))
            }
        }
        words
    }
}

/// The index type id the encoder gives every ARRAY while a chunk is encoded, before the array
/// index type is known; `encode::concat` replaces it with the real one. [`Btf::add_array`]
/// accepts it as an index (and only there) although it is no valid id.
pub const INDEX_PLACEHOLDER: u32 = u32::MAX - 1;
const _: () = assert!(INDEX_PLACEHOLDER > kinds::MAX_NR_TYPES);

/// libbpf's `validate_type_id`: an id an `add_*` call refers to must be one a BTF can have
/// (at most [`kinds::MAX_NR_TYPES`]). It need not exist yet: BTF is built with forward
/// references (a pointer before the struct it points to), so libbpf checks no more either.
fn check_id(id: u32, what: &'static str) -> Result<()> {
    if id > kinds::MAX_NR_TYPES {
        return Err(BuildError::IdTooLarge { what, id }.into());
    }
    Ok(())
}

/// A BTF type graph with its strings; optionally split on top of a base.
#[derive(Clone, Debug)]
pub struct Btf {
    base: Option<Arc<Btf>>,
    start_id: u32,
    start_str_off: u32,
    /// Own types whose records a [`store::Store`] holds (the encoder's, until dedup): ids
    /// `start_id..start_id + held`, before those in `words`.
    held: u32,
    words: Vec<u32>,
    offs: Vec<u32>,
    strings: StringTable,
    /// Byte order used when this BTF is written.
    pub endian: Endian,
    /// True when the string section has no duplicates and no unused strings to drop: BTF built
    /// with the `add_*` API (libbpf's `strs_deduped`). Parsed BTF starts out false.
    pub strs_deduped: bool,
}

impl Default for Btf {
    fn default() -> Self {
        Btf::new()
    }
}

impl Btf {
    /// An empty base BTF (only `void`).
    pub fn new() -> Self {
        Btf {
            base: None,
            start_id: 1,
            start_str_off: 0,
            held: 0,
            words: Vec::new(),
            offs: Vec::new(),
            strings: StringTable::new_base(),
            endian: Endian::Little,
            strs_deduped: true,
        }
    }

    /// An empty split BTF continuing `base`.
    pub fn new_split(base: Arc<Btf>) -> Self {
        Btf {
            start_id: base.type_cnt(),
            start_str_off: base.str_end(),
            endian: base.endian,
            base: Some(base),
            held: 0,
            words: Vec::new(),
            offs: Vec::new(),
            strings: StringTable::new_split(),
            strs_deduped: true,
        }
    }

    pub(crate) fn from_parts(
        base: Option<Arc<Btf>>,
        words: Vec<u32>,
        offs: Vec<u32>,
        strings: StringTable,
        endian: Endian,
    ) -> Self {
        let (start_id, start_str_off) = base
            .as_ref()
            .map_or((1, 0), |b| (b.type_cnt(), b.str_end()));
        Btf {
            base,
            start_id,
            start_str_off,
            held: 0,
            words,
            offs,
            strings,
            endian,
            strs_deduped: false,
        }
    }

    /// Mutable access to the raw parts, for passes that rewrite BTF wholesale (dedup):
    /// the record words, the word offset of each own type, and the own string section.
    pub(crate) fn raw_parts_mut(&mut self) -> (&mut Vec<u32>, &mut Vec<u32>, &mut StringTable) {
        (&mut self.words, &mut self.offs, &mut self.strings)
    }

    /// The base this BTF is split on, if any.
    pub fn base(&self) -> Option<&Arc<Btf>> {
        self.base.as_ref()
    }
    /// The first id this BTF owns (1 for base BTF).
    pub fn start_id(&self) -> u32 {
        self.start_id
    }
    /// The first string offset this BTF owns (0 for base BTF).
    pub fn start_str_off(&self) -> u32 {
        self.start_str_off
    }
    /// One past the highest type id (libbpf's `btf__type_cnt`, counting void and the base).
    pub fn type_cnt(&self) -> u32 {
        self.start_id + self.held + self.offs.len() as u32
    }
    /// Number of types this BTF owns.
    pub fn own_len(&self) -> usize {
        self.held as usize + self.offs.len()
    }
    /// How many own types a record store holds (see [`Btf::hold_in_store`]).
    pub fn held(&self) -> u32 {
        self.held
    }
    /// Notes that the next `n` own ids were given to records a [`store::Store`] holds
    /// (the encoder's way of keeping its pre-dedup records compact). Only raw records can be
    /// read through this BTF ([`Btf::type_by_id`] is `None` for a held id, and
    /// [`Btf::own_types`] skips them), so held records must come before any raw one.
    pub fn hold_in_store(&mut self, n: u32) -> Result<()> {
        if !self.offs.is_empty() {
            return Err(BuildError::HeldAfterRaw.into());
        }
        self.held = self
            .held
            .checked_add(n)
            .filter(|&h| self.start_id + h <= kinds::MAX_NR_TYPES)
            .ok_or(LimitError::TooManyTypes)?;
        Ok(())
    }
    /// Forgets the held ids (dedup took their records back from the store).
    pub(crate) fn release_held(&mut self) {
        self.held = 0;
    }
    /// Makes the held records raw again, read from `store` (which holds every id from
    /// `void` up to the last held one), before the raw ones.
    pub fn take_back_held(&mut self, store: &store::Store) {
        debug_assert_eq!(store.len(), self.start_id + self.held);
        let (mut words, mut offs) = store.raw_own_records();
        let shift = words.len() as u32;
        offs.extend(self.offs.iter().map(|&o| o + shift));
        words.extend_from_slice(&self.words);
        (self.words, self.offs, self.held) = (words, offs, 0);
    }
    /// One past the highest string offset, base included.
    pub fn str_end(&self) -> u32 {
        self.start_str_off + self.strings.len() as u32
    }
    /// This BTF's own string section.
    pub fn strings(&self) -> &StringTable {
        &self.strings
    }
    /// This BTF's own type records, back to back.
    pub fn type_words(&self) -> &[u32] {
        &self.words
    }

    /// The type with id `id`, looking into the base for lower ids; `None` for void or past the end.
    pub fn type_by_id(&self, id: u32) -> Option<Type<'_>> {
        if id < self.start_id {
            return self.base.as_ref().and_then(|b| b.type_by_id(id));
        }
        let i = id.checked_sub(self.start_id + self.held)? as usize;
        let start = *self.offs.get(i)? as usize;
        let end = self
            .offs
            .get(i + 1)
            .map_or(self.words.len(), |&o| o as usize);
        Some(Type {
            id,
            words: &self.words[start..end],
        })
    }

    /// The own types, in id order.
    pub fn own_types(&self) -> impl Iterator<Item = Type<'_>> + '_ {
        (self.start_id..self.type_cnt()).filter_map(move |id| self.type_by_id(id))
    }

    /// The string at `off` (base strings included), or `None` when the offset is invalid.
    pub fn str_at(&self, off: u32) -> Option<&[u8]> {
        if off < self.start_str_off {
            return self.base.as_ref().and_then(|b| b.str_at(off));
        }
        self.strings.get(off - self.start_str_off)
    }

    /// The string at `off` as text (lossy), `""` for an invalid offset.
    pub fn name(&self, off: u32) -> std::borrow::Cow<'_, str> {
        String::from_utf8_lossy(self.str_at(off).unwrap_or(b""))
    }

    /// Drops the own strings' index until the next string is added or looked up (see
    /// [`StringTable::release_index`]).
    pub fn release_string_index(&mut self) {
        self.strings.release_index();
    }

    /// Adds a string (libbpf `btf__add_str`): a base string is reused, then an own one.
    pub fn add_str(&mut self, s: &[u8]) -> u32 {
        if let Some(base) = &self.base {
            if let Some(off) = base.find_str(s) {
                return off;
            }
        }
        self.start_str_off + self.strings.add(s)
    }

    /// Finds a string without adding it (base first).
    pub fn find_str(&self, s: &[u8]) -> Option<u32> {
        if let Some(off) = self.base.as_ref().and_then(|b| b.find_str(s)) {
            return Some(off);
        }
        self.strings.find(s).map(|o| o + self.start_str_off)
    }

    /// Makes every string of a section read from bytes findable (needed before adding to it).
    pub fn index_strings(&mut self) {
        self.strings.build_index();
    }

    fn opt_name(&mut self, name: Option<&[u8]>) -> u32 {
        match name {
            Some(s) if !s.is_empty() => self.add_str(s),
            _ => 0,
        }
    }

    fn check_room(&self) -> Result<()> {
        if self.type_cnt() > kinds::MAX_NR_TYPES {
            return Err(LimitError::TooManyTypes.into());
        }
        Ok(())
    }

    /// Appends a complete record and returns its id.
    pub fn push_record(&mut self, words: &[u32]) -> Result<u32> {
        self.check_room()?;
        let id = self.type_cnt();
        self.offs.push(self.words.len() as u32);
        self.words.extend_from_slice(words);
        Ok(id)
    }

    fn push(&mut self, name_off: u32, info: u32, size_or_type: u32, extra: &[u32]) -> Result<u32> {
        self.check_room()?;
        let id = self.type_cnt();
        self.offs.push(self.words.len() as u32);
        self.words
            .extend_from_slice(&[name_off, info, size_or_type]);
        self.words.extend_from_slice(extra);
        Ok(id)
    }

    fn last_kind(&self) -> Option<Kind> {
        let start = *self.offs.last()? as usize;
        Kind::from_u32(kinds::info_kind(self.words[start + 1]))
    }

    /// Appends a vlen entry to the last type, bumping its vlen and OR-ing in `kflag`.
    fn push_entry(&mut self, entry: &[u32], kflag: bool) -> Result<()> {
        let start = *self.offs.last().expect("caller checked the last kind") as usize;
        let info = self.words[start + 1];
        let vlen = kinds::info_vlen(info);
        if vlen >= kinds::MAX_VLEN {
            let id = self.type_cnt() - 1;
            return Err(LimitError::TooManyMembers { id }.into());
        }
        let kind = Kind::from_u32(kinds::info_kind(info)).expect("own records are valid");
        self.words[start + 1] = kinds::info(kind, vlen + 1, kflag || kinds::info_kflag(info));
        self.words.extend_from_slice(entry);
        Ok(())
    }

    fn expect_last(&self, kinds_ok: &[Kind], what: &'static str) -> Result<()> {
        match self.last_kind() {
            Some(k) if kinds_ok.contains(&k) => Ok(()),
            _ => Err(BuildError::NoPrecedingType {
                what,
                kind: kinds_ok[0],
            }
            .into()),
        }
    }

    /// `btf__add_int`.
    pub fn add_int(&mut self, name: &[u8], byte_sz: u32, encoding: u8) -> Result<u32> {
        if name.is_empty() || !byte_sz.is_power_of_two() || byte_sz > 16 {
            let name = String::from_utf8_lossy(name).into_owned();
            return Err(BuildError::BadInt { name, byte_sz }.into());
        }
        let name_off = self.add_str(name);
        let data = kinds::int_data(encoding, 0, (byte_sz * 8) as u8);
        self.push(name_off, kinds::info(Kind::Int, 0, false), byte_sz, &[data])
    }

    /// `btf__add_float`.
    pub fn add_float(&mut self, name: &[u8], byte_sz: u32) -> Result<u32> {
        if name.is_empty() || ![2, 4, 8, 12, 16].contains(&byte_sz) {
            let name = String::from_utf8_lossy(name).into_owned();
            return Err(BuildError::BadFloat { name, byte_sz }.into());
        }
        let name_off = self.add_str(name);
        self.push(name_off, kinds::info(Kind::Float, 0, false), byte_sz, &[])
    }

    /// PTR, CONST, VOLATILE, RESTRICT (no name) and TYPEDEF, TYPE_TAG (named).
    pub fn add_ref(&mut self, kind: Kind, name: Option<&[u8]>, ref_id: u32) -> Result<u32> {
        let named = matches!(kind, Kind::Typedef | Kind::TypeTag);
        if named && name.is_none_or(|n| n.is_empty()) {
            return Err(BuildError::Unnamed { kind }.into());
        }
        check_id(ref_id, kind.name())?;
        let name_off = self.opt_name(name);
        self.push(name_off, kinds::info(kind, 0, false), ref_id, &[])
    }

    /// `btf__add_type_attr`: a TYPE_TAG with kflag set, an attribute such as
    /// `address_space(1)` rather than a `btf_type_tag` annotation.
    pub fn add_type_attr(&mut self, value: &[u8], ref_id: u32) -> Result<u32> {
        if value.is_empty() {
            return Err(BuildError::NoValue {
                what: "type attribute",
            }
            .into());
        }
        check_id(ref_id, "type attribute")?;
        let name_off = self.add_str(value);
        self.push(name_off, kinds::info(Kind::TypeTag, 0, true), ref_id, &[])
    }

    /// `btf__add_fwd` for STRUCT (`is_union == false`) or UNION.
    pub fn add_fwd(&mut self, name: &[u8], is_union: bool) -> Result<u32> {
        if name.is_empty() {
            return Err(BuildError::Unnamed { kind: Kind::Fwd }.into());
        }
        let name_off = self.add_str(name);
        self.push(name_off, kinds::info(Kind::Fwd, 0, is_union), 0, &[])
    }

    /// `btf__add_array`; `index_id` may also be [`INDEX_PLACEHOLDER`], which is no valid id
    /// but is replaced before the record is used (`encode::concat`).
    pub fn add_array(&mut self, index_id: u32, elem_id: u32, nelems: u32) -> Result<u32> {
        if index_id != INDEX_PLACEHOLDER {
            check_id(index_id, "ARRAY index")?;
        }
        check_id(elem_id, "ARRAY element")?;
        self.push(
            0,
            kinds::info(Kind::Array, 0, false),
            0,
            &[elem_id, index_id, nelems],
        )
    }

    /// `btf__add_struct` / `btf__add_union`.
    pub fn add_composite(&mut self, kind: Kind, name: Option<&[u8]>, byte_sz: u32) -> Result<u32> {
        debug_assert!(kind.is_composite());
        let name_off = self.opt_name(name);
        self.push(name_off, kinds::info(kind, 0, false), byte_sz, &[])
    }

    /// `btf__add_field`: a member of the last STRUCT/UNION.
    pub fn add_field(
        &mut self,
        name: Option<&[u8]>,
        type_id: u32,
        bit_offset: u32,
        bit_size: u32,
    ) -> Result<()> {
        self.expect_last(&[Kind::Struct, Kind::Union], "member")?;
        check_id(type_id, "member")?;
        let is_bitfield = bit_size != 0 || !bit_offset.is_multiple_of(8);
        if is_bitfield && (bit_size == 0 || bit_size > 255 || bit_offset > 0xff_ffff) {
            return Err(BuildError::BadBitfield {
                bit_size,
                bit_offset,
            }
            .into());
        }
        if self.last_kind() == Some(Kind::Union) && bit_offset != 0 {
            return Err(BuildError::UnionMemberOffset { bit_offset }.into());
        }
        let name_off = self.opt_name(name);
        self.push_entry(
            &[name_off, type_id, bit_offset | (bit_size << 24)],
            is_bitfield,
        )
    }

    /// `btf__add_enum` (starts unsigned) or `btf__add_enum64`.
    pub fn add_enum(
        &mut self,
        kind: Kind,
        name: Option<&[u8]>,
        byte_sz: u32,
        signed: bool,
    ) -> Result<u32> {
        if !byte_sz.is_power_of_two() || byte_sz > 8 {
            return Err(BuildError::BadEnumSize { kind, byte_sz }.into());
        }
        let name_off = self.opt_name(name);
        self.push(name_off, kinds::info(kind, 0, signed), byte_sz, &[])
    }

    /// `btf__add_enum_value`: sets kind_flag (signed) on a negative value.
    pub fn add_enum_value(&mut self, name: &[u8], value: i64) -> Result<()> {
        self.expect_last(&[Kind::Enum], "enumerator")?;
        if name.is_empty() {
            return Err(BuildError::UnnamedEnumerator.into());
        }
        if value < i32::MIN as i64 || value > u32::MAX as i64 {
            let name = String::from_utf8_lossy(name).into_owned();
            return Err(BuildError::EnumValueRange { name, value }.into());
        }
        let name_off = self.add_str(name);
        self.push_entry(&[name_off, value as u32], value < 0)
    }

    /// `btf__add_enum64_value`.
    pub fn add_enum64_value(&mut self, name: &[u8], value: u64) -> Result<()> {
        self.expect_last(&[Kind::Enum64], "enumerator")?;
        if name.is_empty() {
            return Err(BuildError::UnnamedEnumerator.into());
        }
        let name_off = self.add_str(name);
        self.push_entry(&[name_off, value as u32, (value >> 32) as u32], false)
    }

    /// `btf__add_func_proto`.
    pub fn add_func_proto(&mut self, ret_id: u32) -> Result<u32> {
        check_id(ret_id, "FUNC_PROTO return")?;
        self.push(0, kinds::info(Kind::FuncProto, 0, false), ret_id, &[])
    }

    /// `btf__add_func_param`: a parameter of the last FUNC_PROTO.
    pub fn add_func_param(&mut self, name: Option<&[u8]>, type_id: u32) -> Result<()> {
        self.expect_last(&[Kind::FuncProto], "parameter")?;
        check_id(type_id, "parameter")?;
        let name_off = self.opt_name(name);
        self.push_entry(&[name_off, type_id], false)
    }

    /// `btf__add_func`.
    pub fn add_func(&mut self, name: &[u8], linkage: u32, proto_id: u32) -> Result<u32> {
        if name.is_empty() {
            return Err(BuildError::Unnamed { kind: Kind::Func }.into());
        }
        check_id(proto_id, "FUNC")?;
        let name_off = self.add_str(name);
        self.push(
            name_off,
            kinds::info(Kind::Func, linkage, false),
            proto_id,
            &[],
        )
    }

    /// `btf__add_var`.
    pub fn add_var(&mut self, name: &[u8], linkage: u32, type_id: u32) -> Result<u32> {
        if name.is_empty() {
            return Err(BuildError::Unnamed { kind: Kind::Var }.into());
        }
        check_id(type_id, "VAR")?;
        let name_off = self.add_str(name);
        self.push(
            name_off,
            kinds::info(Kind::Var, 0, false),
            type_id,
            &[linkage],
        )
    }

    /// `btf__add_datasec`.
    pub fn add_datasec(&mut self, name: &[u8], byte_sz: u32) -> Result<u32> {
        if name.is_empty() {
            return Err(BuildError::Unnamed {
                kind: Kind::Datasec,
            }
            .into());
        }
        let name_off = self.add_str(name);
        self.push(name_off, kinds::info(Kind::Datasec, 0, false), byte_sz, &[])
    }

    /// `btf__add_datasec_var_info`.
    pub fn add_datasec_var(&mut self, var_id: u32, offset: u32, size: u32) -> Result<()> {
        self.expect_last(&[Kind::Datasec], "variable section info")?;
        check_id(var_id, "variable section info")?;
        self.push_entry(&[var_id, offset, size], false)
    }

    /// `btf__add_decl_tag`.
    pub fn add_decl_tag(&mut self, value: &[u8], ref_id: u32, component_idx: i32) -> Result<u32> {
        if value.is_empty() {
            return Err(BuildError::NoValue { what: "DECL_TAG" }.into());
        }
        if component_idx < -1 {
            return Err(BuildError::BadComponent { component_idx }.into());
        }
        check_id(ref_id, "DECL_TAG")?;
        let name_off = self.add_str(value);
        self.push(
            name_off,
            kinds::info(Kind::DeclTag, 0, false),
            ref_id,
            &[component_idx as u32],
        )
    }

    /// Per-kind counts of the own types, indexed by kind number; records of a kind the kernel
    /// does not know count at index 0.
    pub fn kind_counts(&self) -> [usize; 20] {
        let mut counts = [0usize; 20];
        for t in self.own_types() {
            counts[t.kind().map_or(0, |k| k as usize)] += 1;
        }
        counts
    }
}

#[cfg(test)]
mod tests;
