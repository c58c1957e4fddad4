//! The second half of pahole's `parameter__new`, once every parameter is read (an origin's
//! type must be known first): each parameter's type byte size, whether it is passed in
//! memory, its location facts, and the one member of an aggregate its pieces hold.

use super::{Decoder, Parm};
use crate::btf::Kind;
use crate::dwarf::types::{DecodeError, Entry};
use crate::dwarf::MAX_CHAIN;
use crate::input::arch::UNKNOWN_REG;

impl<'a, 'd> Decoder<'a, 'd> {
    /// `__get_type_byte_size` on the type DIE at `type_off`: a pointer is `addr_size`, a DIE
    /// with `DW_AT_byte_size` has that size, anything else is looked through.
    fn type_byte_size(&self, type_off: u32) -> i32 {
        let mut id = self.types.type_id_of(type_off);
        for _ in 0..MAX_CHAIN {
            let Some(e) = self.entry(id) else {
                return 0;
            };
            match *e {
                Entry::Modifier {
                    kind: Kind::Ptr, ..
                } => return self.addr_size as i32,
                Entry::Base { byte_size, .. } | Entry::Enum { byte_size, .. } => {
                    return byte_size as i32
                }
                Entry::Composite { size, .. } => return size as i32,
                Entry::Modifier { ty, .. }
                | Entry::Typedef { ty, .. }
                | Entry::TypeTag { ty, .. } => id = ty,
                Entry::Array { elem, .. } => id = elem,
                Entry::FuncProto { ret, .. } => id = ret,
                Entry::Unsupported { .. } => return 0,
            }
        }
        0
    }

    /// The `DW_AT_type` (unit offset) of the DIE at `off`.
    fn die_type(&mut self, off: u32) -> Result<Option<u32>, DecodeError> {
        if let Some(i) = self.parm_at(off) {
            return Ok(self.parms[i].own_type);
        }
        self.with_attrs(|this, attrs| {
            this.read_die(off, attrs)?;
            let mut ty = None;
            for a in attrs.iter() {
                if a.name() == gimli::DW_AT_type {
                    ty = this.unit_ref(a.raw_value(), off, "DW_AT_type")?;
                }
            }
            Ok(ty)
        })
    }

    /// Type sizes and locations of every parameter (`parameter__new`, second half: the
    /// origin's type must be known first).
    pub(super) fn finish_parms(&mut self) -> Result<(), DecodeError> {
        let two = self.arch.agg_use_two_regs;
        let addr_size = self.addr_size as i32;
        for i in 0..self.parms.len() {
            let p = &self.parms[i];
            let type_off = if p.has_origin_attr {
                match p.origin {
                    Some(o) => self.die_type(o)?,
                    None => None,
                }
            } else {
                p.own_type
            };
            let tbs = type_off.map_or(0, |t| self.type_byte_size(t));
            let aggregate = two && tbs > addr_size;
            let facts = self.locs.facts(self.parms[i].loc, aggregate);
            let p = &mut self.parms[i];
            p.type_byte_size = tbs;
            p.passed_in_memory = tbs > if two { 2 * addr_size } else { addr_size };
            p.loc_reg = facts.loc_reg.map_or(UNKNOWN_REG, i32::from);
            p.loc_const_value = facts.loc_const_value;
            p.loc_stack = facts.loc_stack;
            p.first_fields = facts.first_fields;
            p.second_fields = facts.second_fields;
            self.parms[i].member = self.piece_member(&self.parms[i]);
        }
        Ok(())
    }

    /// `parameter__finish_piece_decode`: when the pieces put exactly one byte offset in one
    /// register, the member of the parameter's own type (through typedefs and qualifiers) at
    /// that offset, if it has a name and a type (`get_member_with_offset`).
    fn piece_member(&self, p: &Parm<'a>) -> Option<(&'a [u8], u32)> {
        let (first, second) = (p.first_fields, p.second_fields);
        if (first == 0) == (second == 0) || first.count_ones() >= 2 || second.count_ones() >= 2 {
            return None;
        }
        p.name?;
        let offset = if first != 0 {
            first.trailing_zeros()
        } else {
            self.addr_size + second.trailing_zeros()
        };
        let mut id = self.types.type_id_of(p.own_type?);
        for _ in 0..MAX_CHAIN {
            match *self.entry(id)? {
                Entry::Typedef { ty, .. } | Entry::TypeTag { ty, .. } => id = ty,
                Entry::Modifier { kind, ty } if kind != Kind::Ptr => id = ty,
                Entry::Array { elem, .. } => id = elem,
                Entry::Composite {
                    union: false,
                    size,
                    ref members,
                    ..
                } if size != 0 => {
                    let m = self.types.members[members.start as usize..members.end as usize]
                        .iter()
                        .find(|m| m.bit_offset != u32::MAX && m.bit_offset == offset * 8)?;
                    return (!m.name.is_empty() && m.ty != 0).then_some((m.name, m.ty));
                }
                _ => return None,
            }
        }
        None
    }
}
