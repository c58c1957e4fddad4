//! Struct layout as pahole's `dwarves.c` (dwarves 1436dafff5c2) computes it, for one
//! question: is a struct packed? `btf_encoder.c`'s `ftype__has_uncertain_arg_loc` asks it of
//! the structs passed by value beyond the register parameters (`super::functions`).
//!
//! Ported: `class__infer_packed_attributes` (with `DW_AT_alignment` ignored, as under `-J`),
//! with what it needs: `tag__strip_typedefs_and_modifiers`, `tag__size`,
//! `tag__natural_alignment`, `class_member__cache_byte_size` ([`Layout`]'s member layout)
//! and `class__find_holes`, reduced to the number of byte holes and the tail padding. A struct
//! with holes or padding is not packed, but `type__check_structs_at_unnatural_alignments`
//! marks the structs embedded in it at an offset their alignment forbids as packed; pahole
//! memoises both answers on the type, so the marking depends on which structs were asked
//! about first, and so does it here (the memo lives as long as the CU's functions decoder).

use super::types::{CuTypes, Entry};
use super::MAX_CHAIN;
use crate::btf::Kind;

/// A struct member laid out as pahole's `class_member__cache_byte_size` leaves it.
#[derive(Clone, Copy, Debug)]
struct MemberLayout {
    ty: u32,
    bit_offset: u32,
    byte_offset: u32,
    byte_size: u64,
    bit_size: u32,
    bitfield_size: u8,
}

/// The size and alignment rules of `dwarves.c` on a CU's types table, for
/// `class__infer_packed_attributes`.
pub(super) struct Layout<'l, 'a> {
    types: &'l CuTypes<'a>,
    addr_size: u64,
    /// 0 unknown, 1 not packed, 2 packed (`packed_attributes_inferred` + `is_packed`).
    packed: &'l mut Vec<u8>,
}

impl<'l, 'a> Layout<'l, 'a> {
    /// The layout rules on `types`, with `packed` as the memo of the packed inference (by
    /// small id; emptied when it does not fit `types`, kept across calls otherwise).
    pub(super) fn new(types: &'l CuTypes<'a>, addr_size: u32, packed: &'l mut Vec<u8>) -> Self {
        if packed.len() != types.entries.len() + 1 {
            *packed = vec![0; types.entries.len() + 1];
        }
        Layout {
            types,
            addr_size: u64::from(addr_size),
            packed,
        }
    }
    fn entry(&self, id: u32) -> Option<&Entry<'a>> {
        id.checked_sub(1)
            .and_then(|i| self.types.entries.get(i as usize))
    }

    /// `tag__strip_typedefs_and_modifiers` (0: void).
    fn strip(&self, mut id: u32) -> u32 {
        for _ in 0..MAX_CHAIN {
            match self.entry(id) {
                Some(Entry::Typedef { ty, .. }) => id = *ty,
                Some(Entry::Modifier { kind, ty }) if *kind != Kind::Ptr => id = *ty,
                _ => return id,
            }
        }
        id
    }

    /// `tag__size`.
    fn size(&self, mut id: u32) -> u64 {
        let mut mult = 1u64;
        for _ in 0..MAX_CHAIN {
            let Some(e) = self.entry(id) else {
                return 0;
            };
            let size = match *e {
                Entry::Modifier {
                    kind: Kind::Ptr, ..
                } => self.addr_size,
                Entry::Base { byte_size, .. } | Entry::Enum { byte_size, .. } => {
                    u64::from(byte_size)
                }
                Entry::FuncProto { .. } => self.addr_size,
                Entry::Composite {
                    size, ref members, ..
                } => {
                    if size == 1 && members.is_empty() {
                        0
                    } else {
                        u64::from(size)
                    }
                }
                Entry::Array { elem, nelems } => {
                    mult = mult.wrapping_mul(u64::from(nelems));
                    id = elem;
                    continue;
                }
                Entry::Modifier { ty, .. }
                | Entry::Typedef { ty, .. }
                | Entry::TypeTag { ty, .. } => {
                    id = ty;
                    continue;
                }
                Entry::Unsupported { .. } => 0,
            };
            return size.wrapping_mul(mult);
        }
        0
    }

    /// `tag__natural_alignment`.
    fn natural_alignment(&self, id: u32, depth: usize) -> u64 {
        let a = match self.entry(id) {
            None => 1,
            Some(Entry::Modifier {
                kind: Kind::Ptr, ..
            }) => self.addr_size,
            Some(Entry::Base { byte_size, .. }) | Some(Entry::Enum { byte_size, .. }) => {
                u64::from(*byte_size)
            }
            Some(Entry::Composite { members, .. }) => {
                let mut max = 0;
                if depth < MAX_CHAIN {
                    for m in &self.types.members[members.start as usize..members.end as usize] {
                        if m.bit_offset == u32::MAX {
                            continue;
                        }
                        let mt = self.strip(m.ty);
                        if mt == 0 {
                            continue;
                        }
                        max = max.max(self.natural_alignment(mt, depth + 1));
                    }
                }
                max
            }
            Some(Entry::Array { elem, .. }) => {
                let t = self.strip(*elem);
                if t == 0 || depth >= MAX_CHAIN {
                    1
                } else {
                    self.natural_alignment(t, depth + 1)
                }
            }
            Some(_) => 1,
        };
        if a == 0 {
            1
        } else {
            a
        }
    }

    /// The non-static members of struct `id`, laid out.
    fn members(&self, id: u32) -> (u32, Vec<MemberLayout>) {
        let Some(Entry::Composite { size, members, .. }) = self.entry(id) else {
            return (0, Vec::new());
        };
        let mut out = Vec::with_capacity(members.len());
        for m in &self.types.members[members.start as usize..members.end as usize] {
            if m.bit_offset == u32::MAX {
                continue;
            }
            let bitfield_size = m.bitfield_size as u8;
            let (byte_size, byte_offset) = if bitfield_size == 0 {
                (self.size(m.ty), m.bit_offset / 8)
            } else {
                let storage = self.size(self.strip(m.ty));
                let bit_size = storage.wrapping_mul(8) as u32;
                let byte_offset = match m.bit_offset.checked_div(bit_size) {
                    Some(units) => units * bit_size / 8,
                    None => m.bit_offset / 8,
                };
                (storage, byte_offset)
            };
            out.push(MemberLayout {
                ty: m.ty,
                bit_offset: m.bit_offset,
                byte_offset,
                byte_size,
                bit_size: byte_size.wrapping_mul(8) as u32,
                bitfield_size,
            });
        }
        (*size, out)
    }

    /// `class__find_holes`, reduced to what the packed inference reads: the number of byte
    /// holes (`uint8_t`) and the tail padding (`uint16_t`).
    fn holes(size: u32, members: &[MemberLayout]) -> (u8, u16) {
        let mut cur_bitfield_end = size.wrapping_mul(8);
        let mut cur_bitfield_size = 0u32;
        let mut last_seen_bit = 0u32;
        let mut in_bitfield = false;
        let mut nr_holes = 0u8;
        for m in members {
            let bit_start = m.bit_offset;
            let bit_end = if m.bitfield_size != 0 {
                bit_start.wrapping_add(u32::from(m.bitfield_size))
            } else {
                bit_start.wrapping_add(m.byte_size.wrapping_mul(8) as u32)
            };
            let mut byte_holes = 0i32;
            if in_bitfield {
                last_seen_bit = bit_start.min(cur_bitfield_end);
            }
            if m.bitfield_size != 0 {
                let aligned_start = m.byte_offset.wrapping_mul(8);
                if last_seen_bit < aligned_start && aligned_start <= bit_start {
                    // (pahole then moves last_seen_bit to aligned_start for its bit holes,
                    // which the packed inference does not read.)
                    byte_holes = m.byte_offset.wrapping_sub(last_seen_bit / 8) as i32;
                }
            } else {
                byte_holes = (bit_start / 8).wrapping_sub(last_seen_bit / 8) as i32;
            }
            last_seen_bit = bit_end;
            if m.bitfield_size != 0 {
                in_bitfield = true;
                if bit_end > cur_bitfield_end || m.bit_size > cur_bitfield_size {
                    cur_bitfield_size = m.bit_size;
                    cur_bitfield_end = m
                        .byte_offset
                        .wrapping_mul(8)
                        .wrapping_add(cur_bitfield_size);
                    if bit_end > cur_bitfield_end {
                        cur_bitfield_end = cur_bitfield_end.wrapping_add(cur_bitfield_size);
                    }
                }
            } else {
                in_bitfield = false;
                cur_bitfield_size = 0;
                cur_bitfield_end = bit_end;
            }
            if byte_holes > 0 {
                nr_holes = nr_holes.wrapping_add(1);
            }
        }
        if in_bitfield {
            last_seen_bit = size.wrapping_mul(8).min(cur_bitfield_end);
        }
        (nr_holes, size.wrapping_sub(last_seen_bit / 8) as u16)
    }

    /// `class__infer_packed_attributes` (with `DW_AT_alignment` ignored, as under `-J`).
    pub(super) fn infer_packed(&mut self, id: u32) -> bool {
        match self.packed.get(id as usize) {
            Some(1) => return false,
            Some(2) => return true,
            Some(_) => {}
            None => return false,
        }
        let (size, members) = self.members(id);
        let (nr_holes, padding) = Self::holes(size, &members);
        let mut packed = false;
        if padding != 0 || nr_holes != 0 {
            // type__check_structs_at_unnatural_alignments: structs embedded at an offset
            // their alignment forbids are marked packed.
            for m in &members {
                let mt = self.strip(m.ty);
                if !matches!(self.entry(mt), Some(Entry::Composite { union: false, .. })) {
                    continue;
                }
                let na = self.natural_alignment(mt, 0);
                if u64::from(m.byte_offset) % na != 0 {
                    if let Some(slot) = self.packed.get_mut(mt as usize) {
                        *slot = 2;
                    }
                }
            }
        } else {
            let mut max_natural_alignment = 1u16;
            for m in &members {
                let na = self.natural_alignment(self.strip(m.ty), 0);
                if na == 1 {
                    continue;
                }
                max_natural_alignment = max_natural_alignment.max(na as u16);
                if u64::from(m.byte_offset) % na != 0 {
                    packed = true;
                    break;
                }
            }
            if !packed && max_natural_alignment != 0 && size % u32::from(max_natural_alignment) != 0
            {
                packed = true;
            }
        }
        if let Some(slot) = self.packed.get_mut(id as usize) {
            *slot = if packed { 2 } else { 1 };
        }
        packed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dwarf::types::Member;

    fn member(ty: u32, bit_offset: u32, bitfield_size: u32) -> Member<'static> {
        Member {
            name: b"m",
            ty,
            bit_offset,
            bitfield_size,
        }
    }

    /// char (1), int (2), then the structs under test.
    fn types_with(structs: &[(u32, Vec<Member<'static>>)]) -> CuTypes<'static> {
        let mut t = CuTypes {
            entries: vec![
                Entry::Base {
                    name: b"char",
                    byte_size: 1,
                    encoding: 6,
                },
                Entry::Base {
                    name: b"int",
                    byte_size: 4,
                    encoding: 5,
                },
            ],
            ..CuTypes::default()
        };
        for (size, members) in structs {
            let start = t.members.len() as u32;
            t.members.extend(members.iter().cloned());
            t.entries.push(Entry::Composite {
                union: false,
                name: b"s",
                size: *size,
                declaration: false,
                members: start..t.members.len() as u32,
                annots: 0..0,
            });
        }
        t
    }

    fn packed(types: &CuTypes<'_>, id: u32) -> bool {
        let mut memo = vec![0; types.entries.len() + 1];
        Layout::new(types, 8, &mut memo).infer_packed(id)
    }

    #[test]
    fn packed_inference() {
        let t = types_with(&[
            // 3: struct { char a; int b; } __packed (size 5, b at 1).
            (5, vec![member(1, 0, 0), member(2, 8, 0)]),
            // 4: struct { char a; int b; } (size 8, a hole after a).
            (8, vec![member(1, 0, 0), member(2, 32, 0)]),
            // 5: struct { int b; char a; } __packed (size 5: no hole, size not aligned).
            (5, vec![member(2, 0, 0), member(1, 32, 0)]),
            // 6: struct { char a, b; } (alignment 1: never packed).
            (2, vec![member(1, 0, 0), member(1, 8, 0)]),
            // 7: struct { int x:3; int y:5; } (size 4).
            (4, vec![member(2, 0, 3), member(2, 3, 5)]),
        ]);
        assert!(packed(&t, 3));
        assert!(!packed(&t, 4));
        assert!(packed(&t, 5));
        assert!(!packed(&t, 6));
        assert!(!packed(&t, 7));
        let m = |id| {
            let mut memo = Vec::new();
            Layout::new(&t, 8, &mut memo).members(id)
        };
        let (size, members) = m(4);
        assert_eq!(Layout::holes(size, &members), (1, 0));
        let (size, members) = m(7);
        assert_eq!(Layout::holes(size, &members), (0, 0));
    }

    #[test]
    fn embedded_struct_at_an_unnatural_offset_is_marked_packed() {
        let mut t = types_with(&[
            // 3: struct { int b; } (not packed by itself).
            (4, vec![member(2, 0, 0)]),
        ]);
        // 4: struct { char a; struct s3 s; char pad[3]; } with s at offset 1, and a hole
        // before `pad` so the outer struct is "not packed" and checks its members.
        let start = t.members.len() as u32;
        t.members
            .extend([member(1, 0, 0), member(3, 8, 0), member(1, 64, 0)]);
        t.entries.push(Entry::Composite {
            union: false,
            name: b"outer",
            size: 12,
            declaration: false,
            members: start..t.members.len() as u32,
            annots: 0..0,
        });
        let mut memo = vec![0; t.entries.len() + 1];
        let mut l = Layout::new(&t, 8, &mut memo);
        assert!(!l.infer_packed(4));
        assert!(l.infer_packed(3), "marked by the outer struct's check");
        let mut fresh = vec![0; t.entries.len() + 1];
        let mut l = Layout::new(&t, 8, &mut fresh);
        assert!(!l.infer_packed(3));
    }
}
