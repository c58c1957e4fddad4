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

use gimli::{AttributeValue, DwTag, Operation, Reader, UnitOffset};

use super::types::{CuTypes, DecodeError, Entry};
use super::units::{Cu, R};
use super::{DW_TAG_GNU_ANNOTATION, DW_TAG_LLVM_ANNOTATION, MAX_CHAIN};
use crate::btf::Kind;
use crate::config::Features;
use crate::dwarf::error::DwarfCause;

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
            cause: DwarfCause::Malformed(reason.into()),
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
                let start = self.cu.section_offset_of(bytes.slice())?;
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
mod tests;
