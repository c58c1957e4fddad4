//! The compact record store: type records held in about a quarter of their raw size, read in
//! place, for the BTF that exists only between encoding and deduplication.
//!
//! A record is split in two: its *template*, the record with its type-id fields zeroed (name,
//! info, size, member names and offsets, enumerators ...), and its type ids. A kernel's 3.4 M
//! pre-dedup records have only ~70,000 distinct templates (every CU repeats the same
//! structs), so each template is kept once, numbered in the order first seen, and a record is
//! a header byte, its template's number and its ids, packed in bytes:
//!
//! - the header byte: the ids' bit width (4 bits: 0, 2, 4 ... 28, or 32), how many bytes the
//!   template number takes after it (2 bits: 0 to 3), and the number's low 2 bits;
//! - the rest of the number, little-endian;
//! - each id as its (wrapping) distance from the record's own id, all of one record's ids in
//!   the same width `w`, offset by 2^(w-1) so that they are unsigned, back to back from the
//!   first bit. A CU's types reference each other, so distances are small: 10–12 bits is
//!   typical for a struct's members.
//!
//! Every field is at a fixed bit offset, so reading the `k`-th id is one unaligned 8-byte
//! load and a shift, and the store keeps [`PAD`] zero bytes after the last record for it.
//!
//! Equal templates have equal references, so libbpf's shallow struct equality (name, size,
//! member names and offsets) is one integer comparison, and a hash over a template's words is
//! a hash of the record's id-free fields.
//!
//! The type-id fields are those of libbpf's `BTF_FIELD_ITER_IDS` except FWD's `type` word,
//! which stays in the template (it is not a reference, and is 0 in every encoder's output).

mod bits;
mod positions;

use bits::{
    bits_of_distance, code_of_bits, offset_of_width, pack_bits, width_mask, width_of_code,
    WIDTH_CODE,
};
use hashbrown::HashTable;
use positions::{Positions, PositionsView};
use rustc_hash::FxHasher;
use std::hash::{Hash, Hasher};

use super::kinds::{self, kind, Kind, MAX_NR_TYPES};
use crate::error::{LimitError, RecordError, Result};

/// In a record's header byte: how many bytes of template number follow it.
const NUMBER_BYTES_SHIFT: u32 = 4;
/// In a record's header byte: where the template number's low bits are.
const NUMBER_LOW_SHIFT: u32 = 6;
/// Template numbers fit in the header's 2 bits and 3 more bytes.
const MAX_TEMPLATES: usize = 1 << 26;
/// Zero bytes kept after the last record, so that every field can be read with one 8-byte
/// load.
const PAD: usize = 8;

/// Type records by id, from id 0 (`void`) on: the base's raw, then the BTF's own compact.
pub struct Store {
    /// `void` (three zero words) and the base's records, raw, back to back: a module's base
    /// is vmlinux, whose 100,000 records would cost more to compact than the module itself.
    base: Vec<u32>,
    /// Per base id: where its record starts in `base`.
    base_offs: Vec<u32>,
    /// Every distinct template, back to back.
    tpls: Vec<u32>,
    /// Per template number: where the template starts in `tpls`.
    tpl_offs: Vec<u32>,
    /// The template numbers, by a hash of their words (for interning).
    index: HashTable<u32>,
    /// Per record, in id order: the header byte, the rest of the template number, the packed
    /// ids (see the module's comment); then [`PAD`] zero bytes.
    data: Vec<u8>,
    /// Per id: where its record starts in `data`.
    offs: Positions,
    /// Reused while pushing: the record being split.
    scratch: Vec<u32>,
    ids: Vec<u32>,
}

/// A record's template number and ids only ([`View::rec_ids`]): a compact record's
/// template words are not read (its `tpl` stays empty), a raw base record is whole.
#[derive(Clone, Copy)]
pub struct RecIds<'a>(Rec<'a>);

impl RecIds<'_> {
    /// [`Rec::template`].
    #[inline(always)]
    pub fn template(self) -> Option<u32> {
        self.0.template()
    }

    /// [`Rec::id`].
    #[inline(always)]
    pub fn id(self, k: usize) -> u32 {
        self.0.id(k)
    }
}

impl<'a> From<Rec<'a>> for RecIds<'a> {
    fn from(rec: Rec<'a>) -> Self {
        RecIds(rec)
    }
}

/// One record of a [`Store`], read in place.
#[derive(Clone, Copy)]
pub struct Rec<'a> {
    tpl: &'a [u32],
    /// The packed ids and the store's bytes after them (at least [`PAD`]).
    ids: &'a [u8],
    /// The ids' bit width, or [`RAW`] for a raw base record (the ids are in its words).
    width: u32,
    /// What a packed value is added to: the record's id less the packing's offset.
    origin: u32,
    id: u32,
    /// The template's number (meaningless for a raw record).
    key: u32,
}

/// A [`Rec`]'s width when it is a raw base record.
const RAW: u32 = u32::MAX;

impl<'a> Rec<'a> {
    /// The record's words, exactly as long as its kind and vlen say, with its type-id fields
    /// zeroed, or (in a base record) holding the ids: read ids with [`Rec::id`], and compare
    /// templates with functions that skip the id fields.
    #[inline(always)]
    pub fn tpl(self) -> &'a [u32] {
        self.tpl
    }

    /// The number of the record's template, unless it is a raw base record. Templates are
    /// interned: two compact records have equal template words exactly when their numbers
    /// are equal.
    #[inline(always)]
    pub fn template(self) -> Option<u32> {
        (self.width != RAW).then_some(self.key)
    }

    /// The `info` word.
    #[inline(always)]
    pub fn info(self) -> u32 {
        self.tpl[1]
    }

    /// The raw kind.
    #[inline(always)]
    pub fn kind(self) -> u32 {
        kinds::info_kind(self.tpl[1])
    }

    /// The vlen.
    #[inline(always)]
    pub fn vlen(self) -> usize {
        kinds::info_vlen(self.tpl[1]) as usize
    }

    /// The `k`-th type id, in [`for_each_id_word`]'s order: the referenced type of a
    /// modifier, typedef, FUNC, VAR or DECL_TAG; an array's element then index type; a
    /// struct's member types; a FUNC_PROTO's return type then parameter types; a DATASEC's
    /// variables.
    #[inline(always)]
    pub fn id(self, k: usize) -> u32 {
        if self.width == RAW {
            return self.tpl[id_word(self.tpl[1], k)];
        }
        let bit = k * self.width as usize;
        let bytes: [u8; 8] = self.ids[bit / 8..bit / 8 + 8].try_into().expect("8 bytes");
        let packed = (u64::from_le_bytes(bytes) >> (bit % 8)) as u32 & width_mask(self.width);
        self.origin.wrapping_add(packed)
    }

    /// Whether every id the record holds is below `cnt`, told by its width alone: ids packed
    /// in `w` bits are within 2^(w-1) of the record's own id, so when that is that far from 0
    /// and from `cnt`, none can be out of range and none needs reading.
    pub fn ids_below_by_width(self, cnt: u32) -> bool {
        if self.width >= 32 {
            return false;
        }
        let reach = 1u32 << self.width.saturating_sub(1);
        self.id >= reach && self.id < cnt.saturating_sub(reach)
    }

    /// Appends the record's raw words to `out`.
    pub fn write_to(self, out: &mut Vec<u32>) {
        let start = out.len();
        out.extend_from_slice(self.tpl);
        if self.width == RAW {
            return;
        }
        let rec = &mut out[start..];
        let mut k = 0;
        for_each_id_word(rec[1], |w| {
            rec[w] = self.id(k);
            k += 1;
        });
    }
}

/// A [`Store`]'s arrays borrowed as plain slices: a hot loop holding one keeps their base
/// pointers in registers.
#[derive(Clone, Copy)]
pub struct View<'a> {
    base: &'a [u32],
    base_offs: &'a [u32],
    tpls: &'a [u32],
    tpl_offs: &'a [u32],
    data: &'a [u8],
    offs: PositionsView<'a>,
}

impl<'a> View<'a> {
    /// The record of `id` (which must be below the store's length).
    #[inline(always)]
    pub fn rec(self, id: u32) -> Rec<'a> {
        let Some(own) = (id as usize).checked_sub(self.base_offs.len()) else {
            let start = self.base_offs[id as usize] as usize;
            let len = kinds::record_words_of(self.base[start + 1]);
            return Rec {
                tpl: &self.base[start..start + len],
                ids: &[],
                width: RAW,
                origin: 0,
                id,
                key: 0,
            };
        };
        self.rec_at(id, self.offs.of(own as u32))
    }

    /// The template number and ids of `id`'s record, without reading its template (a
    /// compact record's template words are elsewhere in memory than its ids).
    #[inline(always)]
    pub fn rec_ids(self, id: u32) -> RecIds<'a> {
        let Some(own) = (id as usize).checked_sub(self.base_offs.len()) else {
            return RecIds(self.rec(id));
        };
        RecIds(self.ids_at(id, self.offs.of(own as u32)))
    }

    /// The own record of `id` at byte `o`, its template words not read (`tpl` empty).
    #[inline(always)]
    fn ids_at(self, id: u32, o: usize) -> Rec<'a> {
        let (header, key, ids) = self.header(o);
        let width = width_of_code(header & WIDTH_CODE);
        Rec {
            tpl: &[],
            ids: &self.data[ids..],
            width,
            origin: id.wrapping_sub(offset_of_width(width)),
            id,
            key,
        }
    }

    /// The record of own id `id`, which starts at byte `o` of the record bytes
    /// ([`Self::byte_of`]): read without the positions.
    #[inline(always)]
    pub fn rec_at(self, id: u32, o: usize) -> Rec<'a> {
        let mut rec = self.ids_at(id, o);
        let start = self.tpl_offs[rec.key as usize] as usize;
        let len = kinds::record_words_of(self.tpls[start + 1]);
        rec.tpl = &self.tpls[start..start + len];
        rec
    }

    /// Where the own record after the one at byte `o` starts, `id_counts` giving each
    /// template's number of ids.
    #[inline(always)]
    fn record_end(self, o: usize, id_counts: &[u32]) -> usize {
        let (header, key, ids) = self.header(o);
        let width = width_of_code(header & WIDTH_CODE) as usize;
        ids + (id_counts[key as usize] as usize * width).div_ceil(8)
    }

    /// The header byte of the record at byte `o`, its template number and where its ids
    /// start.
    #[inline(always)]
    fn header(self, o: usize) -> (u8, u32, usize) {
        let bytes: [u8; 8] = self.data[o..o + 8].try_into().expect("8 bytes");
        let word = u64::from_le_bytes(bytes);
        let header = word as u8;
        let more = usize::from(header >> NUMBER_BYTES_SHIFT & 3);
        let high = (word >> 8) as u32 & ((1u32 << (8 * more)) - 1);
        let key = u32::from(header >> NUMBER_LOW_SHIFT) | high << 2;
        (header, key, o + 1 + more)
    }

    /// Where `id`'s record starts among the record bytes of the store.
    #[inline(always)]
    pub fn byte_of(self, id: u32) -> usize {
        self.offs.of(self.own_index(id))
    }

    /// The index among the compact records of `id`, which is not a base id.
    #[inline(always)]
    fn own_index(self, id: u32) -> u32 {
        id - self.base_offs.len() as u32
    }

    /// How many record bytes the store holds (its padding included).
    pub fn bytes(self) -> usize {
        self.data.len()
    }

    /// The position entries of `id` (not a base id), its own and its block's (for
    /// prefetching).
    #[inline(always)]
    pub fn entries(self, id: u32) -> (&'a u8, &'a u32) {
        let own = self.own_index(id);
        (self.offs.entry(own), self.offs.block(own))
    }

    /// The first word of the template of `id`, which is not a base id (for prefetching).
    #[inline(always)]
    pub fn template_start(self, id: u32) -> &'a u32 {
        let (_, key, _) = self.header(self.offs.of(self.own_index(id)));
        &self.tpls[self.tpl_offs[key as usize] as usize]
    }

    /// The record byte at `at` (for prefetching).
    #[inline(always)]
    pub fn byte(self, at: usize) -> &'a u8 {
        &self.data[at]
    }
}

/// How many type-id fields [`for_each_id_word`] visits for `info`.
fn id_count(info: u32) -> usize {
    let vlen = kinds::info_vlen(info) as usize;
    match Kind::from_u32(kinds::info_kind(info)) {
        None | Some(Kind::Int | Kind::Float | Kind::Enum | Kind::Enum64 | Kind::Fwd) => 0,
        Some(Kind::Array) => 2,
        Some(Kind::Struct | Kind::Union | Kind::Datasec) => vlen,
        Some(Kind::FuncProto) => 1 + vlen,
        Some(_) => 1,
    }
}

/// Calls `f` with the word index of every type-id field a [`Store`] holds outside the
/// template, in order (libbpf's `BTF_FIELD_ITER_IDS` order, FWD's `type` word excepted).
#[inline(always)]
pub fn for_each_id_word(info: u32, mut f: impl FnMut(usize)) {
    let Some(k) = Kind::from_u32(kinds::info_kind(info)) else {
        return;
    };
    // The fixed words that are ids, then (entry words, the id's place in an entry).
    let (fixed, entries): (&[usize], _) = match k {
        Kind::Int | Kind::Float | Kind::Enum | Kind::Enum64 | Kind::Fwd => return,
        Kind::Array => (&[3, 4], None),
        Kind::Struct | Kind::Union => (&[], Some((3, 1))),
        Kind::Datasec => (&[], Some((3, 0))),
        Kind::FuncProto => (&[2], Some((2, 1))),
        Kind::Func | Kind::Var | Kind::DeclTag => (&[2], None),
        _ => {
            debug_assert!(k.is_modifier_like());
            (&[2], None)
        }
    };
    fixed.iter().for_each(|&w| f(w));
    if let Some((per, at)) = entries {
        let n = kinds::info_vlen(info) as usize;
        (0..n).for_each(|i| f(3 + per * i + at));
    }
}

/// The word index of the `k`-th id of [`for_each_id_word`] in a raw record with `info`.
#[inline]
fn id_word(info: u32, k: usize) -> usize {
    match kinds::info_kind(info) {
        kind::ARRAY => 3 + k,
        kind::STRUCT | kind::UNION => 3 + 3 * k + 1,
        kind::DATASEC => 3 + 3 * k,
        kind::FUNC_PROTO if k > 0 => 3 + 2 * (k - 1) + 1,
        _ => 2,
    }
}

fn hash_words(words: &[u32]) -> u64 {
    let mut h = FxHasher::default();
    words.hash(&mut h);
    h.finish()
}

impl Default for Store {
    fn default() -> Self {
        Store::new()
    }
}

impl Store {
    /// A store holding only `void` (id 0).
    pub fn new() -> Self {
        Store::with_base(vec![0; 3], vec![0])
    }

    /// A store holding `void` and a base: `base` is `void`'s three zero words and the base's
    /// records, back to back (checked: each as long as its kind says), `base_offs` where
    /// each id's record starts.
    pub fn with_base(base: Vec<u32>, base_offs: Vec<u32>) -> Self {
        Store {
            base,
            base_offs,
            tpls: Vec::new(),
            tpl_offs: Vec::new(),
            index: HashTable::new(),
            data: vec![0; PAD],
            offs: Positions::default(),
            scratch: Vec::new(),
            ids: Vec::new(),
        }
    }

    /// How many records there are (one past the highest id).
    pub fn len(&self) -> u32 {
        (self.base_offs.len() + self.offs.len()) as u32
    }

    /// Whether the store is empty (never: it holds `void`).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends `rec`, a whole record whose kind is known (or `void`'s three zero words), and
    /// returns its id.
    pub fn push(&mut self, rec: &[u32]) -> Result<u32> {
        let mut tpl = std::mem::take(&mut self.scratch);
        tpl.clear();
        tpl.extend_from_slice(rec);
        let pushed = self.push_in_place(&mut tpl, |t| t);
        self.scratch = tpl;
        pushed
    }

    /// [`Self::push`] of the record in `rec` with each of its type ids passed through `map`
    /// (which sees them in libbpf's field order), taking `rec` as scratch: its id fields are
    /// zero afterwards.
    pub fn push_in_place(
        &mut self,
        rec: &mut [u32],
        mut map: impl FnMut(u32) -> u32,
    ) -> Result<u32> {
        let id = self.len();
        if id > MAX_NR_TYPES {
            return Err(LimitError::TooManyTypes.into());
        }
        check_shape(id, rec, true)?;
        let mut ids = std::mem::take(&mut self.ids);
        ids.clear();
        for_each_id_word(rec[1], |w| {
            ids.push(map(rec[w]));
            rec[w] = 0;
        });
        let number = self.intern(rec)?;
        ids.iter_mut().for_each(|t| *t = t.wrapping_sub(id));
        let bits = ids.iter().map(|&d| bits_of_distance(d)).max().unwrap_or(0);
        let code = code_of_bits(bits);
        let width = width_of_code(code);
        self.data.truncate(self.data.len() - PAD);
        self.offs.push(self.data.len() as u32);
        self.push_header(code, number);
        let start = self.data.len();
        let packed = (ids.len() * width as usize).div_ceil(8);
        self.data.resize(start + packed + PAD, 0);
        pack_bits(&mut self.data[start..], &ids, width);
        if self.data.len() >= 1 << 31 {
            return Err(LimitError::StoreFull.into());
        }
        self.ids = ids;
        Ok(id)
    }

    /// Appends a record's header byte (width code `code`) and the rest of template number
    /// `number`.
    fn push_header(&mut self, code: u8, number: u32) {
        let high = number >> 2;
        let more = (32 - high.leading_zeros()).div_ceil(8);
        let header =
            code | (more as u8) << NUMBER_BYTES_SHIFT | ((number & 3) as u8) << NUMBER_LOW_SHIFT;
        self.data.push(header);
        self.data
            .extend_from_slice(&high.to_le_bytes()[..more as usize]);
    }

    /// The number of template `tpl`, added if new.
    fn intern(&mut self, tpl: &[u32]) -> Result<u32> {
        if self.index.len() < self.tpl_offs.len() {
            self.rebuild_index();
        }
        let h = hash_words(tpl);
        let (tpls, tpl_offs) = (&self.tpls, &self.tpl_offs);
        let words_of = |number| template_words(tpls, tpl_offs, number);
        if let Some(&number) = self.index.find(h, |&n| words_of(n) == tpl) {
            return Ok(number);
        }
        let number = self.tpl_offs.len();
        if number >= MAX_TEMPLATES || self.tpls.len() + tpl.len() > u32::MAX as usize {
            return Err(LimitError::TooManyTemplates.into());
        }
        self.tpl_offs.push(self.tpls.len() as u32);
        self.tpls.extend_from_slice(tpl);
        let (tpls, tpl_offs) = (&self.tpls, &self.tpl_offs);
        self.index.insert_unique(h, number as u32, |&n| {
            hash_words(template_words(tpls, tpl_offs, n))
        });
        Ok(number as u32)
    }

    /// Drops the template index, which only pushing needs (the dedup reads records by id):
    /// 0.6 MiB on a 7.3 kernel. The next push rebuilds it.
    pub fn release_index(&mut self) {
        self.index = HashTable::new();
    }

    /// Indexes every template again after [`Self::release_index`] (templates are distinct,
    /// so each gets its own entry).
    fn rebuild_index(&mut self) {
        let (tpls, tpl_offs) = (&self.tpls, &self.tpl_offs);
        let words_of = |number| template_words(tpls, tpl_offs, number);
        let mut index = HashTable::with_capacity(tpl_offs.len());
        for number in 0..tpl_offs.len() as u32 {
            index.insert_unique(hash_words(words_of(number)), number, |&n| {
                hash_words(words_of(n))
            });
        }
        self.index = index;
    }

    /// The record of `id` (which must be below [`Self::len`]).
    #[inline(always)]
    pub fn rec(&self, id: u32) -> Rec<'_> {
        self.view().rec(id)
    }

    /// The store's arrays, borrowed as plain slices (for hot loops).
    #[inline(always)]
    pub fn view(&self) -> View<'_> {
        View {
            base: &self.base,
            base_offs: &self.base_offs,
            tpls: &self.tpls,
            tpl_offs: &self.tpl_offs,
            data: &self.data,
            offs: self.offs.view(),
        }
    }

    /// The raw words of `id`'s record.
    pub fn words(&self, id: u32) -> Vec<u32> {
        let mut out = Vec::new();
        self.rec(id).write_to(&mut out);
        out
    }

    /// The raw own records (every id after the base's), back to back, and the word offset
    /// of each.
    pub fn raw_own_records(&self) -> (Vec<u32>, Vec<u32>) {
        let mut words = Vec::new();
        let mut offs = Vec::with_capacity(self.offs.len());
        for rec in self.own_records() {
            offs.push(words.len() as u32);
            rec.write_to(&mut words);
        }
        (words, offs)
    }

    /// The own records (every id after the base's) in id order, each read where the one
    /// before ends: with or without the positions ([`Self::release_positions`]).
    pub fn own_records(&self) -> impl Iterator<Item = Rec<'_>> {
        let view = self.view();
        let id_counts = self.id_counts();
        let mut at = 0;
        (self.base_offs.len() as u32..self.len()).map(move |id| {
            let rec = view.rec_at(id, at);
            at = view.record_end(at, &id_counts);
            rec
        })
    }

    /// Per template number: how many ids its records hold (what [`View::record_end`] reads
    /// beside the records).
    fn id_counts(&self) -> Vec<u32> {
        (0..self.templates() as u32)
            .map(|n| id_count(template_words(&self.tpls, &self.tpl_offs, n)[1]) as u32)
            .collect()
    }

    /// Drops the positions by id (1.25 bytes an id), keeping the records: afterwards they are
    /// read with [`Self::own_records`] or [`View::rec_at`] (and the base's by id) only, until
    /// [`Self::record_positions`]. The dedup's compaction, which knows where its survivors
    /// start, calls it: 6.1 MiB on a 7.3 kernel.
    pub fn release_positions(&mut self) {
        self.offs.release();
    }

    /// Stops recording where each pushed record starts until [`Self::record_positions`]:
    /// the encoder's merge, which never reads a record by id, pushes a kernel's millions of
    /// records so, and its peak is at its last batches (6.1 MiB lower on a 7.3 kernel).
    pub fn defer_positions(&mut self) {
        self.offs.defer();
    }

    /// Finds where each record without a position starts, reading them in id order from the
    /// last one with a position (and from each checkpoint the deferral noted, on up to
    /// `threads` threads), and records positions on every push again.
    pub fn record_positions(&mut self, threads: usize) {
        if self.offs.recorded() == self.offs.len() {
            return;
        }
        let id_counts = self.id_counts();
        let view = self.view();
        let first = self.base_offs.len() as u32 + self.offs.recorded() as u32;
        let at = match first.checked_sub(1) {
            Some(last) if last >= self.base_offs.len() as u32 => {
                view.record_end(view.byte_of(last), &id_counts)
            }
            _ => 0,
        };
        let mut offs = std::mem::take(&mut self.offs);
        let view = self.view();
        offs.record_missing(at as u32, threads, |pos| {
            view.record_end(pos as usize, &id_counts) as u32
        });
        self.offs = offs;
    }

    /// The bytes the store holds (its arrays' lengths; capacity aside).
    pub fn bytes(&self) -> usize {
        (self.base.len() + self.base_offs.len()) * 4
            + (self.tpls.len() + self.tpl_offs.len() + self.index.len()) * 4
            + self.data.len()
            + self.offs.bytes()
    }

    /// Of [`Self::bytes`] (the template index aside), those resident now.
    pub fn resident(&self) -> usize {
        use crate::measure::resident_bytes;
        resident_bytes(&self.base)
            + resident_bytes(&self.base_offs)
            + resident_bytes(&self.tpls)
            + resident_bytes(&self.tpl_offs)
            + resident_bytes(&self.data)
            + self.offs.resident()
    }

    /// How many distinct templates there are.
    pub fn templates(&self) -> usize {
        self.tpl_offs.len()
    }

    /// Frees the spare capacity of the arrays (once nothing more is pushed).
    pub fn shrink_to_fit(&mut self) {
        self.data.shrink_to_fit();
        self.offs.shrink_to_fit();
        self.tpls.shrink_to_fit();
        self.tpl_offs.shrink_to_fit();
        self.scratch = Vec::new();
        self.ids = Vec::new();
    }
}

/// The words of template `number`.
fn template_words<'t>(tpls: &'t [u32], tpl_offs: &[u32], number: u32) -> &'t [u32] {
    let off = tpl_offs[number as usize] as usize;
    &tpls[off..off + kinds::record_words_of(tpls[off + 1])]
}

/// Checks that record `id` is at least the three common words and exactly as long as its kind
/// and vlen say, and that its kind is known, or (when `void_ok`) `void`'s (kind 0, three
/// words); returns the kind, `None` for `void`'s.
pub(crate) fn check_shape(
    id: u32,
    rec: &[u32],
    void_ok: bool,
) -> Result<Option<Kind>, RecordError> {
    if rec.len() < 3 {
        return Err(RecordError::Truncated { id });
    }
    let k = kinds::info_kind(rec[1]);
    let kind = match Kind::from_u32(k) {
        None if void_ok && k == kind::UNKN => None,
        None => return Err(RecordError::UnknownKind { id, kind: k }),
        known => known,
    };
    let want = kind.map_or(3, |kind| kind.record_words(kinds::info_vlen(rec[1])));
    if rec.len() != want {
        let words = rec.len();
        return Err(RecordError::WrongLength {
            id,
            kind,
            words,
            want,
        });
    }
    Ok(kind)
}

#[cfg(test)]
mod tests;
