//! The member checks of STRUCT and UNION (rule `R5-member`): the kinds' `check_member` and
//! `check_kflag_member` callbacks, which the resolve pass calls once a member's type is
//! resolved — does the member, bitfield or not, fit its kind and lie within the struct.

use super::record::{roundup_bytes, Member, T};
use super::verifier::{Fail, Verifier};
use crate::btf::kinds::Kind;

impl<'a> Verifier<'a> {
    /// The kinds' `check_member` / `check_kflag_member` callbacks.
    pub(super) fn check_member(
        &self,
        sid: u32,
        st: T<'_>,
        mut m: Member,
        idx: u32,
        mut mt: T<'a>,
        kflag: bool,
    ) -> Result<(), Fail> {
        let m0 = m;
        let fail = |msg: String| {
            Fail::Report(
                sid,
                "R5-member",
                format!("{} {}: {msg}", self.desc(st), self.member_desc(m0, idx)),
            )
        };
        if mt.is_modifier() {
            let resolved = self
                .type_id_size(m.type_id)
                .and_then(|(rid, _)| self.ty(rid));
            let Some(rt) = resolved else {
                return Err(fail(format!(
                    "type {} does not resolve to a sized type",
                    self.desc_id(m.type_id)
                )));
            };
            m.type_id = rt.id;
            mt = rt;
        }
        let size = st.st();
        let kind = mt.kind();
        let (bit_off, bf_size) = if kflag {
            (m.offset & 0x00ff_ffff, m.offset >> 24)
        } else {
            (m.offset, 0)
        };
        match kind {
            Some(Kind::Int) if kflag => {
                if !mt.int_is_regular() {
                    return Err(fail("a bitfield's base type must be a regular int".into()));
                }
                let int_bits = mt.int_bits();
                let nr_bits = if bf_size == 0 {
                    if !bit_off.is_multiple_of(8) {
                        return Err(fail(format!("bit offset {bit_off} is not byte aligned")));
                    }
                    int_bits
                } else if bf_size > int_bits {
                    return Err(fail(format!(
                        "bitfield size {bf_size} exceeds the {int_bits} bits of its int"
                    )));
                } else {
                    bf_size
                };
                let copy_bits = nr_bits + bit_off % 8;
                if copy_bits > 128 {
                    return Err(fail("nr_copy_bits exceeds 128".into()));
                }
                let bytes_off = bit_off / 8;
                if size < bytes_off || size - bytes_off < roundup_bytes(copy_bits) {
                    return Err(fail(format!("member exceeds the size of {size} bytes")));
                }
            }
            Some(Kind::Int) => {
                let int_off = mt.int_offset();
                let Some(off) = m.offset.checked_add(int_off) else {
                    return Err(fail("bit offset exceeds U32_MAX".into()));
                };
                let copy_bits = mt.int_bits() + off % 8;
                if copy_bits > 128 {
                    return Err(fail("nr_copy_bits exceeds 128".into()));
                }
                let bytes_off = off / 8;
                if size < bytes_off || size - bytes_off < roundup_bytes(copy_bits) {
                    return Err(fail(format!("member exceeds the size of {size} bytes")));
                }
            }
            Some(Kind::Enum | Kind::Enum64) if kflag => {
                let nr_bits = if bf_size == 0 {
                    if !bit_off.is_multiple_of(8) {
                        return Err(fail(format!("bit offset {bit_off} is not byte aligned")));
                    }
                    32
                } else if bf_size > 32 {
                    return Err(fail(format!("bitfield size {bf_size} exceeds 32")));
                } else {
                    bf_size
                };
                if size < roundup_bytes(bit_off + nr_bits) {
                    return Err(fail(format!("member exceeds the size of {size} bytes")));
                }
            }
            Some(
                Kind::Ptr
                | Kind::Array
                | Kind::Struct
                | Kind::Union
                | Kind::Enum
                | Kind::Enum64
                | Kind::Float,
            ) => {
                // btf_generic_check_kflag_member, then the plain check_member.
                if bf_size != 0 {
                    return Err(fail(format!(
                        "bitfield size {bf_size} on a member of kind {}",
                        mt.desc_kind()
                    )));
                }
                let off = bit_off;
                if mt.is(Kind::Float) {
                    let align_bits = u64::from(self.ptr_size.min(mt.st())) * 8;
                    if align_bits != 0 && !u64::from(off).is_multiple_of(align_bits) {
                        return Err(fail(format!(
                            "FLOAT member at bit offset {off} is not aligned to {} bytes",
                            align_bits / 8
                        )));
                    }
                    if u64::from(off / 8) + u64::from(mt.st()) > u64::from(size) {
                        return Err(fail(format!("member exceeds the size of {size} bytes")));
                    }
                    return Ok(());
                }
                if !off.is_multiple_of(8) {
                    return Err(fail(format!("bit offset {off} is not byte aligned")));
                }
                let msize = match kind {
                    Some(Kind::Ptr) => self.ptr_size,
                    Some(Kind::Array) => self.type_id_size(m.type_id).map_or(0, |(_, s)| s),
                    _ => mt.st(),
                };
                if size.wrapping_sub(off / 8) < msize {
                    return Err(fail(format!("member exceeds the size of {size} bytes")));
                }
            }
            _ => {
                return Err(fail(format!(
                    "type {} cannot be a member",
                    self.desc_id(m.type_id)
                )));
            }
        }
        Ok(())
    }
}
