//! DIE → variable model: the top-level `DW_TAG_variable`s of one CU that pahole's
//! `btf_encoder__encode_cu_variables` may turn into BTF `VAR`s, with what the encoder needs.
//!
//! Each DIE listed in [`CuTypes::variables`] (the CU's direct `DW_TAG_variable` children,
//! pahole's `top_level` variables) is read by its unit offset, as `variable__new` and
//! `dwarf__location` read it in pahole's `dwarf_loader.c`:
//! - `DW_AT_declaration`, `DW_AT_external` and `DW_AT_artificial` count by *presence*
//!   (`dwarf_hasattr`), whatever their value;
//! - a declaration is never encoded (pahole reads no location for one, so it never has
//!   global scope), and neither is an artificial variable;
//! - the variable must have global scope: a `DW_AT_location` expression (not a location
//!   list) whose first operation is `DW_OP_addr` or `DW_OP_addrx` (resolved through
//!   `.debug_addr` with the CU's `DW_AT_addr_base`); when the expression has exactly two
//!   operations and the second is `DW_OP_plus_uconst`, its operand is added (LLVM's
//!   GlobalMerge emits that);
//! - a `DW_AT_specification` that refers to a `DW_TAG_variable` of the same CU supplies the
//!   name, the type, `DW_AT_external` and the `btf_decl_tag` annotations; the address always
//!   comes from the defining DIE. A specification pahole cannot resolve (another CU, not a
//!   variable) is ignored, so the defining DIE's own attributes are used;
//! - annotations are the `DW_TAG_LLVM_annotation`/`DW_TAG_GNU_annotation` children named
//!   `btf_decl_tag`, their string `DW_AT_const_value` being the tag, in child order, only
//!   with the `decl_tag` feature. (pahole reads no `DW_AT_GNU_annotation` chain for
//!   variables, and neither does this module.)
//!
//! The size is pahole's `tag__size` of the variable's type, computed on the CU's type model
//! (the DWARF sizes, not the BTF ones: a base type BTF sanitises to a 4-byte INT keeps its
//! DWARF size here, as in pahole).
//!
//! Section placement, name filters and everything else that needs the ELF happen in
//! [`crate::encode::variables`].

use std::ops::Range;

use gimli::{AttributeValue, DwTag, Operation, Reader, Section, UnitOffset};

use super::types::{CuTypes, DecodeError, Entry};
use super::units::{Cu, R};
use super::{DW_TAG_GNU_ANNOTATION, DW_TAG_LLVM_ANNOTATION, MAX_CHAIN};
use crate::btf::Kind;
use crate::config::Features;

/// Where the address of a variable's location is stored, for relocatable inputs whose
/// section placement must come from the relocation at that spot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddrSite {
    /// The `DW_OP_addr` operand, at this offset in `.debug_info`.
    DebugInfo(u64),
    /// The `.debug_addr` slot a `DW_OP_addrx` refers to, at this offset in `.debug_addr`.
    DebugAddr(u64),
}

/// One top-level variable with global scope, ready for the encoder's ELF checks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Variable<'a> {
    /// Unit offset of the defining DIE.
    pub die: u32,
    /// `DW_AT_name` (of the specification, when there is one); `None` when absent.
    pub name: Option<&'a [u8]>,
    /// Small id of the type (of the specification, when there is one); 0 = void.
    pub ty: u32,
    /// pahole's `tag__size` of the type; `u64::MAX` when the type chain is broken (pahole's
    /// `-1`), which the encoder treats as over-sized.
    pub size: u64,
    /// `DW_AT_external` (of the specification, when there is one).
    pub external: bool,
    /// The location's address (plus a trailing `DW_OP_plus_uconst`).
    pub addr: u64,
    /// Where that address is stored in the debug sections.
    pub addr_site: AddrSite,
    /// The variable's `btf_decl_tag` values: a range of [`CuVariables::annots`].
    pub annots: Range<u32>,
}

/// The candidate variables of one CU, in DIE order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CuVariables<'a> {
    /// The CU's `DW_AT_name` (for messages).
    pub cu_name: &'a [u8],
    /// Offset of the unit header in `.debug_info` (unit offset + this = section offset).
    pub unit_offset: usize,
    /// The candidates, in DIE order.
    pub vars: Vec<Variable<'a>>,
    /// Decl tag values of all variables, indexed by [`Variable::annots`].
    pub annots: Vec<&'a [u8]>,
}

impl CuVariables<'_> {
    /// The decl tag values of `var`.
    pub fn annots_of(&self, var: &Variable<'_>) -> &[&[u8]] {
        self.annots
            .get(var.annots.start as usize..var.annots.end as usize)
            .unwrap_or(&[])
    }
}

/// What one variable DIE says, before the specification is followed.
#[derive(Default)]
struct VarDie<'a> {
    name: Option<&'a [u8]>,
    ty: Option<AttributeValue<R<'a>>>,
    external: bool,
    declaration: bool,
    artificial: bool,
    specification: Option<AttributeValue<R<'a>>>,
    location: Option<gimli::Expression<R<'a>>>,
}

struct Decoder<'a, 'd> {
    dwarf: &'d gimli::Dwarf<R<'a>>,
    cu: &'d Cu<'a>,
    types: &'d CuTypes<'a>,
    decl_tag: bool,
    attrs: Vec<gimli::Attribute<R<'a>>>,
}

/// Decodes the variables of one CU that have global scope (see the module documentation).
pub fn decode_cu_variables<'a>(
    dwarf: &gimli::Dwarf<R<'a>>,
    cu: &Cu<'a>,
    types: &CuTypes<'a>,
    features: &Features,
) -> Result<CuVariables<'a>, DecodeError> {
    let mut d = Decoder {
        dwarf,
        cu,
        types,
        decl_tag: features.decl_tag,
        attrs: Vec::new(),
    };
    let mut out = CuVariables {
        cu_name: d.cu_name(),
        unit_offset: cu.offset,
        ..Default::default()
    };
    for &off in &types.variables {
        d.decode(off, &mut out)?;
    }
    Ok(out)
}

impl<'a> Decoder<'a, '_> {
    fn err(&self, off: u32, reason: impl Into<String>) -> DecodeError {
        DecodeError {
            die_offset: self.cu.die_offset(UnitOffset(off as usize)),
            reason: reason.into(),
        }
    }

    fn cu_name(&mut self) -> &'a [u8] {
        let root = self.cu.header.root_offset().0 as u32;
        match self.read_die(root, None) {
            Ok(Some((_, die))) => die.name.unwrap_or(b""),
            _ => b"",
        }
    }

    fn decode(&mut self, off: u32, out: &mut CuVariables<'a>) -> Result<(), DecodeError> {
        let annots_start = out.annots.len();
        let want = self.decl_tag;
        let die = match self.read_die(off, want.then_some(&mut out.annots)) {
            Ok(Some((tag, die))) if tag == gimli::DW_TAG_variable => die,
            Ok(_) => {
                out.annots.truncate(annots_start);
                return Ok(());
            }
            Err(e) => return Err(self.err(off, format!("variable DIE: {e}"))),
        };
        let location = die.location;
        if die.declaration || die.artificial {
            out.annots.truncate(annots_start);
            return Ok(());
        }
        let Some((addr, addr_site)) = location.and_then(|e| self.global_address(e)) else {
            out.annots.truncate(annots_start);
            return Ok(());
        };
        let spec = match die.specification {
            Some(v) => self.unit_ref(v, off, "DW_AT_specification")?,
            None => None,
        }
        .filter(|&s| s != off);
        let mut src = (off, die);
        if let Some(s) = spec {
            let mark = out.annots.len();
            match self.read_die(s, want.then_some(&mut out.annots)) {
                Ok(Some((gimli::DW_TAG_variable, d))) => {
                    // The specification's annotations replace the definition's.
                    out.annots.drain(annots_start..mark);
                    src = (s, d);
                }
                _ => out.annots.truncate(mark),
            }
        }
        let (src_off, src) = src;
        let ty = match src.ty {
            None => 0,
            Some(v) => match self.type_ref(v, src_off)? {
                Some(t) => self.types.type_id_of(t),
                None => {
                    return Err(self.err(
                        src_off,
                        "variable type (DW_AT_type): not a reference, or a reference into \
                         another unit that this unit does not import",
                    ))
                }
            },
        };
        out.vars.push(Variable {
            die: off,
            name: src.name,
            ty,
            size: tag_size(self.types, ty, self.cu.header.address_size() as u64),
            external: src.external,
            addr,
            addr_site,
            annots: annots_start as u32..out.annots.len() as u32,
        });
        Ok(())
    }

    /// A variable's `DW_AT_type` (held by the DIE at `off`), as a local reference value.
    fn type_ref(&self, v: AttributeValue<R<'a>>, off: u32) -> Result<Option<u32>, DecodeError> {
        match self.types.imported(&v) {
            Some(t) => Ok(Some(t)),
            None => self.unit_ref(v, off, "variable type (DW_AT_type)"),
        }
    }

    /// A reference to a DIE of this CU, as a unit offset (none for other forms). One that
    /// leads to no DIE the types walker met (past the unit, or into the middle of a DIE) is
    /// an error naming `off`, the DIE holding it, and `what` it is.
    fn unit_ref(
        &self,
        v: AttributeValue<R<'a>>,
        off: u32,
        what: &str,
    ) -> Result<Option<u32>, DecodeError> {
        let target = match v {
            AttributeValue::UnitRef(UnitOffset(o)) => o,
            AttributeValue::DebugInfoRef(o) if self.cu.holds(o) => o.0 - self.cu.offset,
            _ => return Ok(None),
        };
        match self.types.die_starts.check(target) {
            Ok(()) => Ok(Some(target as u32)),
            Err(bad) => Err(self.err(off, bad.describe(what, target))),
        }
    }

    /// Reads the DIE at unit offset `off`: its tag and variable attributes. With `annots`,
    /// also appends the `btf_decl_tag` values of its annotation children.
    fn read_die(
        &mut self,
        off: u32,
        annots: Option<&mut Vec<&'a [u8]>>,
    ) -> gimli::Result<Option<(DwTag, VarDie<'a>)>> {
        let cu = self.cu;
        let mut raw = cu
            .header
            .entries_raw(&cu.abbrevs, Some(UnitOffset(off as usize)))?;
        let Some(abbrev) = raw.read_abbreviation()? else {
            return Ok(None);
        };
        let tag = abbrev.tag();
        raw.read_attributes(abbrev.attributes(), &mut self.attrs)?;
        let mut die = VarDie::default();
        for attr in &self.attrs {
            match attr.name() {
                gimli::DW_AT_name => die.name = Some(cu.string(self.dwarf, attr.value())?),
                gimli::DW_AT_type => die.ty = Some(attr.value()),
                gimli::DW_AT_external => die.external = true,
                gimli::DW_AT_declaration => die.declaration = true,
                gimli::DW_AT_artificial => die.artificial = true,
                gimli::DW_AT_specification => die.specification = Some(attr.value()),
                gimli::DW_AT_location => {
                    if let AttributeValue::Exprloc(e) = attr.value() {
                        die.location = Some(e);
                    }
                }
                _ => {}
            }
        }
        if let (Some(annots), true) = (annots, abbrev.has_children()) {
            self.read_annotations(&mut raw, annots)?;
        }
        Ok(Some((tag, die)))
    }

    /// Reads the children of the DIE just read (depth 1), keeping `btf_decl_tag` values.
    fn read_annotations(
        &mut self,
        raw: &mut gimli::EntriesRaw<'_, R<'a>>,
        annots: &mut Vec<&'a [u8]>,
    ) -> gimli::Result<()> {
        while raw.next_depth() >= 1 && !raw.is_empty() {
            let depth = raw.next_depth();
            let Some(abbrev) = raw.read_abbreviation()? else {
                continue;
            };
            let tag = abbrev.tag();
            if depth != 1 || (tag != DW_TAG_LLVM_ANNOTATION && tag != DW_TAG_GNU_ANNOTATION) {
                raw.skip_attributes(abbrev.attributes())?;
                continue;
            }
            raw.read_attributes(abbrev.attributes(), &mut self.attrs)?;
            let mut name: &[u8] = b"";
            let mut value: &'a [u8] = b"";
            for attr in &self.attrs {
                match attr.name() {
                    gimli::DW_AT_name => name = self.cu.string(self.dwarf, attr.value())?,
                    gimli::DW_AT_const_value => {
                        value = self.cu.string(self.dwarf, attr.value()).unwrap_or(b"")
                    }
                    _ => {}
                }
            }
            if name == b"btf_decl_tag" {
                annots.push(value);
            }
        }
        Ok(())
    }

    /// pahole's `dwarf__location` for `VSCOPE_GLOBAL`: the address of a location whose first
    /// operation is `DW_OP_addr`/`DW_OP_addrx`, plus the operand of a second and last
    /// `DW_OP_plus_uconst`. `None` for any other location, or one that does not parse.
    fn global_address(&self, expr: gimli::Expression<R<'a>>) -> Option<(u64, AddrSite)> {
        let bytes = expr.0;
        let first = *bytes.slice().first()?;
        if first != gimli::DW_OP_addr.0 && first != gimli::DW_OP_addrx.0 {
            return None;
        }
        let encoding = self.cu.header.encoding();
        let mut r = bytes;
        let op1 = Operation::parse(&mut r, encoding).ok()?;
        let mut nops = 1;
        let mut plus = 0;
        while !r.is_empty() {
            let op = Operation::parse(&mut r, encoding).ok()?;
            nops += 1;
            if let (2, Operation::PlusConstant { value }) = (nops, op) {
                plus = value;
            }
        }
        if nops != 2 {
            plus = 0;
        }
        let addr_size = u64::from(encoding.address_size);
        let (addr, site) = match op1 {
            Operation::Address { address } => {
                let info = self.dwarf.debug_info.reader();
                let start = slice_offset(bytes.slice(), info.slice())?;
                (address, AddrSite::DebugInfo(start + 1))
            }
            Operation::AddressIndex { index } => {
                let base = self.cu.addr_base;
                let address = self
                    .dwarf
                    .debug_addr
                    .get_address(encoding.address_size, base, index)
                    .ok()?;
                let slot = (index.0 as u64)
                    .checked_mul(addr_size)?
                    .checked_add(base.0 as u64)?;
                (address, AddrSite::DebugAddr(slot))
            }
            _ => return None,
        };
        Some((addr.wrapping_add(plus), site))
    }
}

/// Offset of `inner` within `outer`, when it lies there.
fn slice_offset(inner: &[u8], outer: &[u8]) -> Option<u64> {
    let start = (inner.as_ptr() as usize).checked_sub(outer.as_ptr() as usize)?;
    (start + inner.len() <= outer.len()).then_some(start as u64)
}

/// pahole's `tag__size` of the type with small id `id`, on the CU's type model: base types,
/// enums and structs/unions give their DWARF byte size (a member-less struct of size 1 gives
/// 0, pahole's empty-base trick), pointers and function types the address size, typedefs and
/// modifiers their target's size, arrays their element size times the element count. Void
/// gives 0; a chain longer than 64 links gives `u64::MAX`.
pub fn tag_size(types: &CuTypes<'_>, id: u32, addr_size: u64) -> u64 {
    let mut id = id;
    let mut mult: u64 = 1;
    for _ in 0..MAX_CHAIN {
        let Some(entry) = id
            .checked_sub(1)
            .and_then(|i| types.entries.get(i as usize))
        else {
            return 0;
        };
        let size = match entry {
            Entry::Base { byte_size, .. } => u64::from(*byte_size),
            Entry::Enum { byte_size, .. } => u64::from(*byte_size),
            Entry::Composite { size, members, .. } => {
                if *size == 1 && members.is_empty() {
                    0
                } else {
                    u64::from(*size)
                }
            }
            Entry::Modifier {
                kind: Kind::Ptr, ..
            }
            | Entry::FuncProto { .. } => addr_size,
            Entry::Modifier { ty, .. } | Entry::Typedef { ty, .. } | Entry::TypeTag { ty, .. } => {
                id = *ty;
                continue;
            }
            Entry::Array { elem, nelems } => {
                mult = mult.saturating_mul(u64::from(*nelems));
                id = *elem;
                continue;
            }
            Entry::Unsupported { tag } if *tag == gimli::DW_TAG_reference_type => addr_size,
            Entry::Unsupported { .. } => 0,
        };
        return size.saturating_mul(mult);
    }
    u64::MAX
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dwarf::types::Member;

    /// The CU's types, decoded as the encoder decodes them.
    fn decoded_types<'a>(
        dwarf: &gimli::Dwarf<R<'a>>,
        cu: &Cu<'a>,
        features: &Features,
    ) -> CuTypes<'a> {
        let scratch = &mut Default::default();
        crate::dwarf::types::decode_cu_types(dwarf, &Default::default(), cu, features, scratch)
            .unwrap()
    }

    fn types(entries: Vec<Entry<'static>>) -> CuTypes<'static> {
        CuTypes {
            entries,
            ..Default::default()
        }
    }

    #[test]
    fn sizes_follow_tag_size() {
        let t = types(vec![
            /* 1 */
            Entry::Base {
                name: b"int",
                byte_size: 4,
                encoding: 5,
            },
            /* 2 */
            Entry::Typedef {
                name: b"t",
                ty: 1,
                annots: 0..0,
            },
            /* 3 */
            Entry::Modifier {
                kind: Kind::Const,
                ty: 2,
            },
            /* 4 */
            Entry::Array {
                elem: 3,
                nelems: 10,
            },
            /* 5 */ Entry::Array { elem: 4, nelems: 3 },
            /* 6 */
            Entry::Modifier {
                kind: Kind::Ptr,
                ty: 5,
            },
            /* 7 */
            Entry::Composite {
                union: false,
                name: b"empty",
                size: 1,
                declaration: false,
                members: 0..0,
                annots: 0..0,
            },
            /* 8 */
            Entry::Composite {
                union: false,
                name: b"fwd",
                size: 0,
                declaration: true,
                members: 0..0,
                annots: 0..0,
            },
            /* 9 */ Entry::Array { elem: 1, nelems: 0 },
            /* 10 */
            Entry::Enum {
                name: b"e",
                byte_size: 8,
                signed: false,
                values: 0..0,
            },
            /* 11 */
            Entry::Typedef {
                name: b"v",
                ty: 0,
                annots: 0..0,
            },
            /* 12 */
            Entry::Base {
                name: b"_BitInt",
                byte_size: 3,
                encoding: 7,
            },
            /* 13 */
            Entry::Modifier {
                kind: Kind::Volatile,
                ty: 13,
            },
        ]);
        assert_eq!(tag_size(&t, 1, 8), 4);
        assert_eq!(tag_size(&t, 3, 8), 4);
        assert_eq!(tag_size(&t, 4, 8), 40);
        assert_eq!(tag_size(&t, 5, 8), 120);
        assert_eq!(tag_size(&t, 6, 8), 8);
        assert_eq!(tag_size(&t, 6, 4), 4);
        assert_eq!(tag_size(&t, 7, 8), 0);
        assert_eq!(tag_size(&t, 8, 8), 0);
        assert_eq!(tag_size(&t, 9, 8), 0);
        assert_eq!(tag_size(&t, 10, 8), 8);
        assert_eq!(tag_size(&t, 11, 8), 0);
        assert_eq!(tag_size(&t, 0, 8), 0);
        assert_eq!(
            tag_size(&t, 12, 8),
            3,
            "the DWARF size, not the sanitised BTF one"
        );
        assert_eq!(tag_size(&t, 13, 8), u64::MAX, "a loop is over-sized");
        assert_eq!(tag_size(&t, 99, 8), 0);
    }

    #[test]
    fn struct_with_members_keeps_size_one() {
        let mut t = types(vec![Entry::Composite {
            union: false,
            name: b"s",
            size: 1,
            declaration: false,
            members: 0..1,
            annots: 0..0,
        }]);
        t.members.push(Member {
            name: b"c",
            ty: 0,
            bit_offset: 0,
            bitfield_size: 0,
        });
        assert_eq!(tag_size(&t, 1, 8), 1);
    }

    #[test]
    fn slice_offsets() {
        let outer = [0u8; 16];
        assert_eq!(slice_offset(&outer[4..8], &outer), Some(4));
        assert_eq!(slice_offset(&outer, &outer[4..]), None);
        let other = [0u8; 4];
        let far = slice_offset(&other, &outer);
        assert!(far.is_none() || far.unwrap() + 4 <= 16);
    }

    /// A hand-assembled DWARF 4 CU (little-endian, 8-byte addresses).
    struct Asm {
        info: Vec<u8>,
        abbrev: Vec<u8>,
        next_code: u8,
    }

    const FORM_STRING: u8 = 0x08;
    const FORM_REF4: u8 = 0x13;
    const FORM_PRESENT: u8 = 0x19;
    const FORM_EXPRLOC: u8 = 0x18;
    const FORM_DATA1: u8 = 0x0b;
    const FORM_SEC_OFFSET: u8 = 0x17;
    const AT_NAME: u8 = 0x03;
    const AT_TYPE: u8 = 0x49;
    const AT_EXTERNAL: u8 = 0x3f;
    const AT_LOCATION: u8 = 0x02;
    const AT_DECLARATION: u8 = 0x3c;
    const AT_SPECIFICATION: u8 = 0x47;
    const AT_ARTIFICIAL: u8 = 0x34;
    const AT_CONST_VALUE: u8 = 0x1c;

    /// An attribute value.
    enum V<'s> {
        Str(&'s str),
        Ref(u32),
        Present,
        Expr(&'s [u8]),
        Data1(u8),
        SecOff(u32),
    }

    impl Asm {
        fn new() -> Self {
            // unit_length (patched), version 4, abbrev offset 0, address size 8.
            let mut info = vec![0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 8];
            info.reserve(256);
            Asm {
                info,
                abbrev: Vec::new(),
                next_code: 1,
            }
        }

        /// Emits a DIE (with a fresh abbreviation); returns its unit offset.
        fn die(&mut self, tag: u16, children: bool, attrs: &[(u8, V<'_>)]) -> u32 {
            let off = self.info.len() as u32;
            let code = self.next_code;
            self.next_code += 1;
            self.abbrev.push(code);
            let t = tag as u32;
            if t < 0x80 {
                self.abbrev.push(t as u8);
            } else {
                // ULEB128 of tags up to 0x1fffff.
                self.abbrev
                    .extend([(t & 0x7f) as u8 | 0x80, ((t >> 7) & 0x7f) as u8 | 0x80]);
                self.abbrev.push((t >> 14) as u8);
            }
            self.abbrev.push(children as u8);
            self.info.push(code);
            for (at, v) in attrs {
                let form = match v {
                    V::Str(s) => {
                        self.info.extend(s.as_bytes());
                        self.info.push(0);
                        FORM_STRING
                    }
                    V::Ref(r) => {
                        self.info.extend(r.to_le_bytes());
                        FORM_REF4
                    }
                    V::Present => FORM_PRESENT,
                    V::Expr(e) => {
                        self.info.push(e.len() as u8);
                        self.info.extend(*e);
                        FORM_EXPRLOC
                    }
                    V::Data1(d) => {
                        self.info.push(*d);
                        FORM_DATA1
                    }
                    V::SecOff(o) => {
                        self.info.extend(o.to_le_bytes());
                        FORM_SEC_OFFSET
                    }
                };
                self.abbrev.extend([*at, form]);
            }
            self.abbrev.extend([0, 0]);
            off
        }

        fn end_children(&mut self) {
            self.info.push(0);
        }

        fn finish(mut self) -> (Vec<u8>, Vec<u8>) {
            let len = (self.info.len() - 4) as u32;
            self.info[..4].copy_from_slice(&len.to_le_bytes());
            self.abbrev.push(0);
            (self.info, self.abbrev)
        }
    }

    fn addr_expr(addr: u64, tail: &[u8]) -> Vec<u8> {
        let mut e = vec![gimli::DW_OP_addr.0];
        e.extend(addr.to_le_bytes());
        e.extend(tail);
        e
    }

    #[test]
    fn decodes_variables_like_pahole() {
        let mut a = Asm::new();
        // DW_AT_addr_base = 8: past a DWARF 5 .debug_addr header.
        a.die(
            0x11,
            true,
            &[(AT_NAME, V::Str("t.c")), (0x73, V::SecOff(8))],
        );
        let int = a.die(
            0x24,
            false,
            &[
                (AT_NAME, V::Str("int")),
                (0x0b, V::Data1(4)),
                (0x3e, V::Data1(5)),
            ],
        );
        let plain_expr = addr_expr(0x1000, &[]);
        let plain = a.die(
            0x34,
            false,
            &[
                (AT_NAME, V::Str("plain")),
                (AT_TYPE, V::Ref(int)),
                (AT_EXTERNAL, V::Present),
                (AT_LOCATION, V::Expr(&plain_expr)),
            ],
        );
        let decl = a.die(
            0x34,
            false,
            &[
                (AT_NAME, V::Str("spec")),
                (AT_TYPE, V::Ref(int)),
                (AT_EXTERNAL, V::Present),
                (AT_DECLARATION, V::Present),
            ],
        );
        let def_expr = addr_expr(0x2000, &[]);
        a.die(
            0x34,
            false,
            &[
                (AT_SPECIFICATION, V::Ref(decl)),
                (AT_LOCATION, V::Expr(&def_expr)),
            ],
        );
        let art_expr = addr_expr(0x2100, &[]);
        a.die(
            0x34,
            false,
            &[
                (AT_NAME, V::Str("artificial")),
                (AT_TYPE, V::Ref(int)),
                (AT_ARTIFICIAL, V::Present),
                (AT_LOCATION, V::Expr(&art_expr)),
            ],
        );
        let plus = addr_expr(0x3000, &[gimli::DW_OP_plus_uconst.0, 0x10]);
        a.die(
            0x34,
            false,
            &[
                (AT_NAME, V::Str("plus")),
                (AT_TYPE, V::Ref(int)),
                (AT_LOCATION, V::Expr(&plus)),
            ],
        );
        let three = addr_expr(
            0x4000,
            &[gimli::DW_OP_plus_uconst.0, 0x10, gimli::DW_OP_stack_value.0],
        );
        a.die(
            0x34,
            false,
            &[
                (AT_NAME, V::Str("three_ops")),
                (AT_LOCATION, V::Expr(&three)),
            ],
        );
        let fbreg = [gimli::DW_OP_fbreg.0, 0x10];
        a.die(
            0x34,
            false,
            &[(AT_NAME, V::Str("stack")), (AT_LOCATION, V::Expr(&fbreg))],
        );
        a.die(
            0x34,
            false,
            &[(AT_NAME, V::Str("loclist")), (AT_LOCATION, V::SecOff(0))],
        );
        let tagged_expr = addr_expr(0x5000, &[]);
        a.die(
            0x34,
            true,
            &[
                (AT_NAME, V::Str("tagged")),
                (AT_TYPE, V::Ref(int)),
                (AT_LOCATION, V::Expr(&tagged_expr)),
            ],
        );
        for (name, value) in [
            ("btf_decl_tag", "t1"),
            ("btf_type_tag", "no"),
            ("btf_decl_tag", "t2"),
        ] {
            a.die(
                0x6000,
                false,
                &[(AT_NAME, V::Str(name)), (AT_CONST_VALUE, V::Str(value))],
            );
        }
        a.end_children();
        let addrx = [gimli::DW_OP_addrx.0, 1];
        a.die(
            0x34,
            false,
            &[(AT_TYPE, V::Ref(int)), (AT_LOCATION, V::Expr(&addrx))],
        );
        a.end_children();
        let (info, abbrev) = a.finish();
        let mut debug_addr = vec![0u8; 8];
        debug_addr.extend(0x6000u64.to_le_bytes());
        debug_addr.extend(0x7000u64.to_le_bytes());

        let endian = gimli::RunTimeEndian::Little;
        let dwarf = gimli::Dwarf::<R<'_>> {
            debug_info: gimli::DebugInfo::new(&info, endian),
            debug_abbrev: gimli::DebugAbbrev::new(&abbrev, endian),
            debug_addr: gimli::DebugAddr::from(gimli::EndianSlice::new(&debug_addr, endian)),
            ..Default::default()
        };
        let header = dwarf.units().next().unwrap().unwrap();
        let cu = Cu::new(&dwarf, header, true).unwrap();
        let features = Features::default();
        let types = decoded_types(&dwarf, &cu, &features);
        assert_eq!(types.variables.len(), 10);
        let vars = decode_cu_variables(&dwarf, &cu, &types, &features).unwrap();
        assert_eq!(vars.cu_name, b"t.c");
        let got: Vec<_> = vars
            .vars
            .iter()
            .map(|v| {
                (
                    v.name.map(|n| std::str::from_utf8(n).unwrap()),
                    v.addr,
                    v.external,
                    v.ty,
                )
            })
            .collect();
        let int_id = types.type_id_of(int);
        assert_eq!(
            got,
            [
                (Some("plain"), 0x1000, true, int_id),
                (Some("spec"), 0x2000, true, int_id),
                (Some("plus"), 0x3010, false, int_id),
                (Some("three_ops"), 0x4000, false, 0),
                (Some("tagged"), 0x5000, false, int_id),
                (None, 0x7000, false, int_id),
            ]
        );
        assert_eq!(vars.vars[0].size, 4);
        assert_eq!(vars.vars[3].size, 0);
        // The DW_OP_addr operand follows the opcode, after the exprloc length byte.
        let operand = info
            .windows(plain_expr.len())
            .position(|w| w == &plain_expr[..])
            .unwrap() as u64
            + 1;
        assert_eq!(vars.vars[0].addr_site, AddrSite::DebugInfo(operand));
        assert!(plain < 0x100);
        assert_eq!(vars.vars[5].addr_site, AddrSite::DebugAddr(16));
        let tags: Vec<&[u8]> = vars.annots_of(&vars.vars[4]).to_vec();
        assert_eq!(tags, [&b"t1"[..], b"t2"]);
        assert!(vars.vars.iter().filter(|v| v.annots.is_empty()).count() == 5);

        // Without the decl_tag feature there are no annotations.
        let no_tags = Features {
            decl_tag: false,
            ..Features::default()
        };
        let vars = decode_cu_variables(&dwarf, &cu, &types, &no_tags).unwrap();
        assert!(vars.annots.is_empty() && vars.vars.len() == 6);
    }

    /// A variable for [`decode_vars`]: name, a reference attribute (attribute, unit offset),
    /// location expression.
    type TestVar<'s> = (&'s str, Option<(u8, u32)>, &'s [u8]);
    /// A decoded variable for [`decode_vars`]: name, address, type.
    type DecodedVar = (Option<Vec<u8>>, u64, u32);

    /// The variables (name, address, type) of a unit whose variables are `vars`, or the
    /// error decoding them gives.
    fn decode_vars(vars: &[TestVar<'_>]) -> Result<Vec<DecodedVar>, String> {
        let mut a = Asm::new();
        a.die(0x11, true, &[(AT_NAME, V::Str("bad.c"))]);
        for (name, extra, location) in vars {
            let mut attrs = vec![(AT_NAME, V::Str(name)), (AT_LOCATION, V::Expr(location))];
            attrs.extend(extra.map(|(at, unit_offset)| (at, V::Ref(unit_offset))));
            a.die(0x34, false, &attrs);
        }
        a.end_children();
        let (info, abbrev) = a.finish();
        let endian = gimli::RunTimeEndian::Little;
        let dwarf = gimli::Dwarf::<R<'_>> {
            debug_info: gimli::DebugInfo::new(&info, endian),
            debug_abbrev: gimli::DebugAbbrev::new(&abbrev, endian),
            ..Default::default()
        };
        let header = dwarf.units().next().unwrap().unwrap();
        let cu = Cu::new(&dwarf, header, true).unwrap();
        let features = Features::default();
        let types = decoded_types(&dwarf, &cu, &features);
        let vars = decode_cu_variables(&dwarf, &cu, &types, &features).map_err(|e| e.reason)?;
        Ok(vars
            .vars
            .iter()
            .map(|v| (v.name.map(<[u8]>::to_vec), v.addr, v.ty))
            .collect())
    }

    /// A specification or type reference past the end of the unit is an error naming it
    /// (read as nothing, it made a variable of type void, which the kernel rejects).
    #[test]
    fn references_past_the_unit_are_errors() {
        let at = addr_expr(0x10, &[]);
        for attr in [AT_SPECIFICATION, AT_TYPE] {
            let got = decode_vars(&[("own", Some((attr, 0xfff0)), &at)]);
            let err = got.expect_err("a reference past the unit");
            assert!(
                err.contains("leads to unit offset 0xfff0, past the end of the unit"),
                "{err}"
            );
        }
    }

    /// Locations that are not global addresses make no variable, and no panic.
    #[test]
    fn locations_that_are_not_addresses_make_no_variable() {
        // A truncated address operand; DW_OP_addrx without a .debug_addr.
        let short = [gimli::DW_OP_addr.0, 1, 2];
        let addrx = [gimli::DW_OP_addrx.0, 3];
        let own = addr_expr(0x10, &[]);
        let got = decode_vars(&[
            ("short", None, &short),
            ("noaddr", None, &addrx),
            ("own", None, &own),
        ]);
        assert_eq!(got, Ok(vec![(Some(b"own".to_vec()), 0x10, 0)]));
    }
}
