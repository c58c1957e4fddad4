//! Parameter locations: what a formal parameter's `DW_AT_location` says about where the
//! argument arrived, as pahole's `dwarf_loader.c` (dwarves 1436dafff5c2) reads it through
//! libdw.
//!
//! [`Locations::classify`] sorts the attribute value the way libdw's `dwarf_getlocations`
//! does: one expression, a `.debug_loc`/`.debug_loclists` list, or nothing it can read.
//! [`Locations::facts`] ports `parameter__decode_location` and `parameter__multi_exprs` over
//! every entry of the location:
//! - `loc_num` counts the entries `dwarf_getlocations` returns: base-address entries are not
//!   returned, empty ranges and `DW_LLE_default_location` are; an entry libdw cannot parse
//!   (its addresses or its expression, [`super::expr::parse_ops`]) ends the walk.
//! - A trailing `DW_OP_stack_value` of a 2-operation expression is dropped.
//! - `DW_OP_reg0..31` (not `DW_OP_regx`, as in pahole) and `DW_OP_bregN` +
//!   `DW_OP_stack_value` give the register at entry 0 only; `DW_OP_fbreg` (on the stack) and
//!   constants likewise; `DW_OP_entry_value`/`DW_OP_GNU_entry_value` of a lone `DW_OP_regN`
//!   gives it in any entry. Only the first register found counts (`parameter__set_loc_reg`).
//! - Pieces of an aggregate larger than a register take the first register seen, and record
//!   the byte offsets each register holds (`first_reg_fields`, `second_reg_fields`), which
//!   `true_signature`'s analysis reads.
//!
//! Location lists are walked raw with gimli: the addresses are never needed, only the entries
//! and their expressions (an `addrx` entry is still checked, as libdw fails on a bad index).

use gimli::AttributeValue;

use super::expr::{breg_to_reg, is_breg, is_const, is_reg, parse_ops, reg_number, Op, OpSizes};
use super::units::{Cu, R};
use crate::input::arch::UNKNOWN_REG;

/// A parameter's `DW_AT_location`, as libdw would walk it.
#[derive(Clone, Copy, Debug)]
pub(super) enum Loc<'a> {
    /// No attribute.
    None,
    /// One expression (exprloc, or a block before DWARF 4).
    Expr(&'a [u8]),
    /// A location list at this offset of `.debug_loc` (DWARF ≤ 4) or `.debug_loclists`.
    List(usize),
    /// Present, but libdw returns no location from it (bad form or list index).
    Unreadable,
}

/// The location facts `parameter__decode_location` gathers for one parameter.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct LocFacts {
    /// The register number N of the `DW_OP_regN` found.
    pub loc_reg: Option<u8>,
    pub loc_const_value: bool,
    pub loc_stack: bool,
    /// Byte offsets (bits) of the aggregate's pieces held in the first argument register.
    pub first_fields: u64,
    /// Byte offsets, from the second register's start, of the pieces held in it.
    pub second_fields: u64,
}

impl LocFacts {
    /// `parameter__set_loc_reg`: only the first register found counts.
    fn set_reg(&mut self, atom: u8) {
        if self.loc_reg.is_none() {
            self.loc_reg = Some(reg_number(atom));
        }
    }

    /// One entry of the location list (`loc_num` counts from 0), as the loop body of
    /// `parameter__decode_location`. `aggregate` is `type_byte_size > addr_size &&
    /// agg_use_two_regs`, where `parameter__multi_exprs` walks the pieces.
    fn entry<'e>(
        &mut self,
        ops: &[Op<'e>],
        loc_num: usize,
        aggregate: bool,
        sizes: OpSizes,
        little: bool,
        inner: &mut Vec<Op<'e>>,
    ) {
        if ops.is_empty() {
            return;
        }
        let had_stack_value = gimli::DwOp(ops[ops.len() - 1].atom) == gimli::DW_OP_stack_value;
        let len = if ops.len() == 2 && had_stack_value {
            1
        } else {
            ops.len()
        };
        if len != 1 {
            self.multi(ops, loc_num, aggregate, sizes.addr as i64);
            return;
        }
        let op = ops[0];
        let atom = op.atom;
        let first = loc_num == 0;
        match gimli::DwOp(atom) {
            _ if first && is_reg(atom) => self.set_reg(atom),
            _ if first && had_stack_value && is_breg(atom) => self.set_reg(breg_to_reg(atom)),
            gimli::DW_OP_fbreg if first => self.loc_stack = true,
            _ if first && is_const(atom) => self.loc_const_value = true,
            gimli::DW_OP_entry_value | gimli::DW_OP_GNU_entry_value
                if parse_ops(op.block, sizes, little, inner).is_some()
                    && inner.len() == 1
                    && is_reg(inner[0].atom) =>
            {
                self.set_reg(inner[0].atom)
            }
            _ => {}
        }
    }

    /// `parameter__multi_exprs`.
    fn multi(&mut self, ops: &[Op<'_>], loc_num: usize, aggregate: bool, addr_size: i64) {
        let first = ops[0].atom;
        if is_const(first) {
            if loc_num == 0 {
                self.loc_const_value = true;
            }
            return;
        }
        if !aggregate {
            if loc_num == 0 && is_reg(first) {
                self.set_reg(first);
            } else if loc_num == 0
                && is_breg(first)
                && ops[1..]
                    .iter()
                    .any(|o| gimli::DwOp(o.atom) == gimli::DW_OP_stack_value)
            {
                self.set_reg(breg_to_reg(first));
            }
            return;
        }
        // Whatever the piece offset, only an unset register is ever recorded, so the first
        // register operation of any entry wins.
        if let Some(op) = ops.iter().find(|o| is_reg(o.atom)) {
            self.set_reg(op.atom);
        }
        // The pieces' byte offsets: a leading piece only sets where the next one starts (as
        // pahole reads it); the operand is an `int` there.
        let mut off: i64 = 0;
        for (i, op) in ops.iter().enumerate() {
            if gimli::DwOp(op.atom) != gimli::DW_OP_piece {
                continue;
            }
            let size = i64::from(op.number as i32);
            if i > 0 {
                let (fields, at) = if off < addr_size {
                    (&mut self.first_fields, off)
                } else {
                    (&mut self.second_fields, off - addr_size)
                };
                if (0..64).contains(&at) {
                    *fields |= 1 << at;
                }
                off += size;
            } else {
                off = size;
            }
        }
    }
}

/// Reads the parameter locations of one CU; holds the scratch buffers of the walk.
pub(super) struct Locations<'a, 'd> {
    dwarf: &'d gimli::Dwarf<R<'a>>,
    cu: &'d Cu<'a>,
    sizes: OpSizes,
    ops: Vec<Op<'a>>,
    inner: Vec<Op<'a>>,
}

impl<'a, 'd> Locations<'a, 'd> {
    pub(super) fn new(dwarf: &'d gimli::Dwarf<R<'a>>, cu: &'d Cu<'a>) -> Self {
        Locations {
            dwarf,
            cu,
            sizes: OpSizes::new(cu.header.encoding()),
            ops: Vec::new(),
            inner: Vec::new(),
        }
    }

    /// Classifies a `DW_AT_location` value the way libdw's `dwarf_getlocations` would.
    pub(super) fn classify(&self, v: AttributeValue<R<'a>>) -> Loc<'a> {
        let version = self.cu.header.version();
        match v {
            AttributeValue::Exprloc(e) => Loc::Expr(e.0.slice()),
            AttributeValue::Block(b) if version < 4 => Loc::Expr(b.slice()),
            AttributeValue::SecOffset(o) => Loc::List(o),
            AttributeValue::Data4(o) if version < 4 => Loc::List(o as usize),
            AttributeValue::Data8(o) if version < 4 => {
                usize::try_from(o).map_or(Loc::Unreadable, Loc::List)
            }
            AttributeValue::DebugLocListsIndex(i) => self
                .dwarf
                .locations
                .get_offset(self.cu.header.encoding(), self.cu.loclists_base, i)
                .map_or(Loc::Unreadable, |o| Loc::List(o.0)),
            _ => Loc::Unreadable,
        }
    }

    /// `parameter__decode_location`: walks the location entries as `dwarf_getlocations`
    /// returns them.
    pub(super) fn facts(&mut self, loc: Loc<'a>, aggregate: bool) -> LocFacts {
        let Locations {
            dwarf,
            cu,
            sizes,
            ops,
            inner,
        } = self;
        let (dwarf, cu, sizes) = (*dwarf, *cu, *sizes);
        let little = cu.little_endian;
        let mut facts = LocFacts::default();
        match loc {
            Loc::None | Loc::Unreadable => {}
            Loc::Expr(bytes) => {
                if parse_ops(bytes, sizes, little, ops).is_some() {
                    facts.entry(ops, 0, aggregate, sizes, little, inner);
                }
            }
            Loc::List(offset) => {
                let encoding = cu.header.encoding();
                let Ok(mut iter) = dwarf
                    .locations
                    .raw_locations(gimli::LocationListsOffset(offset), encoding)
                else {
                    return facts;
                };
                let addrx_ok = |i: gimli::DebugAddrIndex<usize>| {
                    dwarf
                        .debug_addr
                        .get_address(encoding.address_size, cu.addr_base, i)
                        .is_ok()
                };
                let mut loc_num = 0;
                // An entry libdw cannot read ends its walk, as does the end of the list.
                while let Ok(Some(entry)) = iter.next() {
                    use gimli::RawLocListEntry as E;
                    let data = match entry {
                        E::BaseAddress { .. } => continue,
                        E::BaseAddressx { addr } => {
                            if addrx_ok(addr) {
                                continue;
                            }
                            break;
                        }
                        E::StartxEndx { begin, end, data } => {
                            if !(addrx_ok(begin) && addrx_ok(end)) {
                                break;
                            }
                            data
                        }
                        E::StartxLength { begin, data, .. } => {
                            if !addrx_ok(begin) {
                                break;
                            }
                            data
                        }
                        E::AddressOrOffsetPair { data, .. }
                        | E::OffsetPair { data, .. }
                        | E::DefaultLocation { data }
                        | E::StartEnd { data, .. }
                        | E::StartLength { data, .. } => data,
                    };
                    if parse_ops(data.0.slice(), sizes, little, ops).is_none() {
                        break;
                    }
                    facts.entry(ops, loc_num, aggregate, sizes, little, inner);
                    loc_num += 1;
                }
            }
        }
        facts
    }
}

/// Where a parameter arrives, as the location analysis saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParamLoc {
    /// It has a `DW_AT_location`.
    pub has_loc: bool,
    /// The DWARF register its location names ([`UNKNOWN_REG`]: none).
    pub reg: i32,
    /// It has a `DW_AT_const_value` (the compiler knows its value).
    pub const_value: bool,
    /// Its location is on the stack (`DW_OP_fbreg`).
    pub stack: bool,
    /// Too large for the argument registers: the caller passes it in memory.
    pub in_memory: bool,
    /// Counted as optimized out (feeds `optimized_parms` with `!has_loc`).
    pub optimized: bool,
    /// Not in the register the ABI puts it in (feeds `unexpected_reg`).
    pub unexpected_reg: bool,
}

impl ParamLoc {
    /// The location of the trailing vararg "parameter": none.
    pub const VARARG: ParamLoc = ParamLoc {
        has_loc: false,
        reg: UNKNOWN_REG,
        const_value: false,
        stack: false,
        in_memory: false,
        optimized: false,
        unexpected_reg: false,
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dwarf::expr::tests::{ops, SIZES};

    /// Runs `parameter__decode_location` over a list of entries.
    fn facts(entries: &[&[u8]], aggregate: bool) -> LocFacts {
        let mut f = LocFacts::default();
        let mut inner = Vec::new();
        for (loc_num, e) in entries.iter().enumerate() {
            f.entry(&ops(e), loc_num, aggregate, SIZES, true, &mut inner);
        }
        f
    }

    #[test]
    fn registers_count_at_the_first_entry_only() {
        assert_eq!(facts(&[&[0x55]], false).loc_reg, Some(5));
        assert_eq!(
            facts(&[&[0x91, 0x10], &[0x55]], false),
            LocFacts {
                loc_stack: true,
                ..LocFacts::default()
            }
        );
        // DW_OP_regx is not a register for pahole.
        assert_eq!(facts(&[&[0x90, 0x05]], false).loc_reg, None);
        // The first register found wins.
        assert_eq!(facts(&[&[0x58]], false).loc_reg, Some(8));
        // An empty expression still counts as an entry.
        assert_eq!(facts(&[&[], &[0x55]], false).loc_reg, None);
    }

    #[test]
    fn entry_values_count_in_any_entry() {
        // [reg1 ... ), then DW_OP_entry_value(DW_OP_reg5), DW_OP_stack_value.
        let f = facts(&[&[0x91, 0x08], &[0xa3, 0x01, 0x55, 0x9f]], false);
        assert_eq!((f.loc_reg, f.loc_stack), (Some(5), true));
        let f = facts(&[&[0xf3, 0x01, 0x54, 0x9f]], false);
        assert_eq!(f.loc_reg, Some(4));
        // Only a lone register inside the entry value.
        assert_eq!(
            facts(&[&[0xa3, 0x02, 0x75, 0x00, 0x9f]], false).loc_reg,
            None
        );
        // Without the stack value the entry value alone is a single operation too.
        assert_eq!(facts(&[&[0xa3, 0x01, 0x51]], false).loc_reg, Some(1));
    }

    #[test]
    fn stack_values_constants_and_frame_base() {
        // DW_OP_breg5 0, DW_OP_stack_value: the value of rdi.
        assert_eq!(facts(&[&[0x75, 0x00, 0x9f]], false).loc_reg, Some(5));
        // A memory location at rdi is not.
        assert_eq!(facts(&[&[0x75, 0x00]], false).loc_reg, None);
        // ... nor the stack value at a later entry.
        assert_eq!(
            facts(&[&[0x91, 0x00], &[0x75, 0x00, 0x9f]], false).loc_reg,
            None
        );
        // breg with an offset and a stack value (3 operations) still names the register.
        assert_eq!(
            facts(&[&[0x75, 0x01, 0x23, 0x01, 0x9f]], false).loc_reg,
            Some(5)
        );
        assert!(facts(&[&[0x30, 0x9f]], false).loc_const_value);
        assert!(facts(&[&[0x10, 0x2a, 0x9f]], false).loc_const_value);
        assert!(!facts(&[&[0x55], &[0x31, 0x9f]], false).loc_const_value);
        assert!(facts(&[&[0x91, 0x70]], false).loc_stack);
        // Constants first in a multi-operation expression count too.
        assert!(facts(&[&[0x31, 0x93, 0x04, 0x55, 0x93, 0x04]], true).loc_const_value);
    }

    #[test]
    fn pieces_of_aggregates() {
        // A 16-byte struct in rdi:rsi.
        let pieces: &[u8] = &[0x55, 0x93, 0x08, 0x54, 0x93, 0x08];
        assert_eq!(facts(&[pieces], true).loc_reg, Some(5));
        // Its first half optimized out: the register of the second half is taken.
        let second: &[u8] = &[0x93, 0x08, 0x54, 0x93, 0x08];
        assert_eq!(facts(&[second], true).loc_reg, Some(4));
        // Pieces count in any entry for aggregates ...
        assert_eq!(facts(&[&[0x91, 0x00], pieces], true).loc_reg, Some(5));
        // ... but for scalars only the first operation of entry 0 is looked at.
        assert_eq!(facts(&[second], false).loc_reg, None);
        assert_eq!(facts(&[pieces], false).loc_reg, Some(5));
        assert_eq!(facts(&[&[0x91, 0x00], pieces], false).loc_reg, None);
    }
}
