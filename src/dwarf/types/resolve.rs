//! Reference resolution, once the walk is done: alias DIEs (atomic types, `DW_AT_signature`
//! declarations) mapped to the type they stand for, every raw reference turned into a small
//! id, names taken from specifications, enum signedness from the underlying type, and member
//! bit offsets computed as pahole does.

use super::model::{DecodeError, Entry, Member};
use super::walker::{RawMember, RawRef, Walker, RESOLVED, VOID};
use crate::btf::Kind;
use crate::dwarf::foreign::IMPORTED;

impl<'a> Walker<'a, '_> {
    /// The small id a raw reference stands for (0, void, when it leads to a DIE that is no
    /// type, as libdw's failed lookup is for pahole). A reference into the CU that leads to no
    /// DIE at all (past the unit's end, or into the middle of a DIE) is an error naming
    /// `referrer`, the DIE holding the reference, and `what` the reference is.
    fn res(&self, r: RawRef, referrer: u32, what: &str) -> Result<u32, DecodeError> {
        if r == VOID {
            return Ok(0);
        }
        if r & RESOLVED != 0 {
            return Ok(r & !RESOLVED);
        }
        if let Some(&id) = self.offset_to_id.get(&r) {
            return Ok(id);
        }
        if r & IMPORTED == 0 {
            let target = r as usize;
            self.out
                .die_starts
                .check(target)
                .map_err(|bad| self.err(referrer, bad.describe(what, target)))?;
        }
        Ok(0)
    }

    /// Maps each alias DIE to the small id of the type it stands for, following chains of
    /// aliases; every alias is resolved once. A chain longer than the number of aliases has
    /// met one twice: a cycle, which no type can end.
    pub(super) fn resolve_aliases(&mut self) -> Result<(), DecodeError> {
        let mut chain = Vec::new();
        for i in 0..self.buf.alias_order.len() {
            let start = self.buf.alias_order[i];
            let mut cur = start;
            chain.clear();
            while let Some(&target) = self.buf.aliases.get(&cur) {
                if self.offset_to_id.contains_key(&cur) {
                    break; // resolved earlier, as part of another chain
                }
                if chain.len() >= self.buf.aliases.len() {
                    return Err(self.err(
                        start,
                        "DW_TAG_atomic_type (or a DW_AT_signature declaration) refers to itself \
                         through a cycle of atomic types",
                    ));
                }
                chain.push(cur);
                cur = target;
            }
            let referrer = chain.last().copied().unwrap_or(start);
            let id = self.res(cur, referrer, "DW_AT_type")?;
            for &o in &chain {
                self.offset_to_id.insert(o, id);
            }
        }
        for atomic in &mut self.out.dropped_atomics {
            atomic.1 = self.offset_to_id.get(&atomic.0).copied().unwrap_or(0);
        }
        Ok(())
    }

    /// Turns every raw reference into a small id and computes member bit offsets.
    pub(super) fn resolve(&mut self) -> Result<(), DecodeError> {
        for i in 0..self.out.entries.len() {
            let die = self.out.dies[i];
            let id = self.res(self.buf.raw_refs[i], die, "DW_AT_type")?;
            if let Entry::FuncProto { params, .. } = &self.out.entries[i] {
                for p in params.start as usize..params.end as usize {
                    let r = self.buf.param_refs[p];
                    self.out.params[p].1 = self.res(r, die, "a parameter's DW_AT_type")?;
                }
            }
            match &mut self.out.entries[i] {
                Entry::Modifier { ty, .. }
                | Entry::Typedef { ty, .. }
                | Entry::TypeTag { ty, .. } => *ty = id,
                Entry::Array { elem, .. } => *elem = id,
                Entry::FuncProto { ret, .. } => *ret = id,
                _ => {}
            }
        }
        for &(idx, spec) in &self.buf.specs {
            let from = self.res(spec, self.out.dies[idx], "DW_AT_specification")?;
            let spec_name = entry_by_id(&self.out.entries, from).and_then(entry_name);
            if let (Some(name), Some(spec_name)) =
                (entry_name_mut(&mut self.out.entries[idx]), spec_name)
            {
                if name.is_empty() {
                    *name = spec_name;
                }
            }
        }
        for &(idx, base) in &self.buf.enum_signed {
            let base = self.res(base, self.out.dies[idx], "DW_AT_type")?;
            let signed = matches!(
                entry_by_id(&self.out.entries, base),
                Some(Entry::Base { encoding, .. })
                    if *encoding == gimli::DW_ATE_signed.0 || *encoding == gimli::DW_ATE_signed_char.0
            );
            if let Entry::Enum { signed: s, .. } = &mut self.out.entries[idx] {
                *s = signed;
            }
        }
        let raw_members = std::mem::take(&mut self.buf.raw_members);
        let mut members = std::mem::take(&mut self.out.members);
        members.reserve(raw_members.len());
        // Member ranges index raw_members; static members stay in place with no type so that
        // ranges remain valid, and are skipped by the encoder.
        for m in &raw_members {
            let ty = self.res(m.ty, m.die, "DW_AT_type")?;
            let bit_offset = if m.is_static {
                u32::MAX
            } else {
                let bits = self.bit_offset(m, ty);
                let bits = u64::try_from(bits).unwrap_or(u64::MAX);
                self.fits(m.die, bits, "the member's offset in bits")?
            };
            members.push(Member {
                name: m.name,
                ty,
                bit_offset,
                bitfield_size: m.bit_size as u32,
            });
        }
        self.out.members = members;
        self.buf.raw_members = raw_members;
        self.out.offset_to_id = std::mem::take(&mut self.offset_to_id);
        Ok(())
    }

    /// pahole's `class_member__cache_byte_size` bit offset.
    /// Negative or past 32 bits only in DWARF BTF cannot hold (the caller refuses it).
    fn bit_offset(&self, m: &RawMember<'a>, ty: u32) -> i128 {
        if let Some(dbo) = m.data_bit_offset {
            return i128::from(dbo);
        }
        let byte_offset = i128::from(m.byte_offset);
        if m.bit_size == 0 {
            return byte_offset * 8;
        }
        let byte_size = if m.byte_size != 0 {
            m.byte_size
        } else {
            self.storage_bytes(ty)
        };
        if byte_size == 0 {
            return byte_offset * 8;
        }
        let bit_size = i128::from(byte_size) * 8;
        let in_unit = if self.cu.little_endian {
            bit_size - i128::from(m.dw_bit_offset) - i128::from(m.bit_size)
        } else {
            i128::from(m.dw_bit_offset)
        };
        byte_offset * 8 + in_unit
    }

    /// Byte size of a bitfield's storage unit: the size of its type without typedefs and
    /// modifiers, or of the enum/base type behind it.
    fn storage_bytes(&self, mut id: u32) -> u64 {
        for _ in 0..64 {
            let Some(e) = id
                .checked_sub(1)
                .and_then(|i| self.out.entries.get(i as usize))
            else {
                return 0;
            };
            match e {
                Entry::Typedef { ty, .. } | Entry::TypeTag { ty, .. } => id = *ty,
                Entry::Modifier { kind, ty } if *kind != Kind::Ptr => id = *ty,
                Entry::Modifier { .. } => return self.cu.header.address_size() as u64,
                Entry::Base { byte_size, .. } => return *byte_size as u64,
                Entry::Enum { byte_size, .. } => return *byte_size as u64,
                Entry::Composite { size, .. } => return *size as u64,
                _ => return 0,
            }
        }
        0
    }
}

/// The entry with small id `id`; `None` for void (0, also what an unresolvable reference
/// becomes) and past the end.
fn entry_by_id<'e, 'a>(entries: &'e [Entry<'a>], id: u32) -> Option<&'e Entry<'a>> {
    entries.get((id as usize).checked_sub(1)?)
}

fn entry_name<'a>(e: &Entry<'a>) -> Option<&'a [u8]> {
    match e {
        Entry::Composite { name, .. } | Entry::Typedef { name, .. } | Entry::Enum { name, .. } => {
            Some(name)
        }
        _ => None,
    }
}

fn entry_name_mut<'e, 'a>(e: &'e mut Entry<'a>) -> Option<&'e mut &'a [u8]> {
    match e {
        Entry::Composite { name, .. } | Entry::Typedef { name, .. } | Entry::Enum { name, .. } => {
            Some(name)
        }
        _ => None,
    }
}
