//! One type record as the checks see it: [`T`] gives bounds-checked access to its fields
//! (missing words read as 0, so a truncated record cannot panic) and answers the kernel's
//! per-record questions (`btf_type_is_modifier`, `btf_type_nosize`, `btf_type_needs_resolve`,
//! `btf_type_int_is_regular`, ...).

use crate::btf::kinds::{self, Kind};

/// A type record with bounds-checked field access (missing words read as 0). Id 0 is `void`.
#[derive(Clone, Copy)]
pub(super) struct T<'a> {
    pub(super) id: u32,
    pub(super) w: &'a [u32],
}

/// A STRUCT or UNION member.
#[derive(Clone, Copy)]
pub(super) struct Member {
    pub(super) name_off: u32,
    pub(super) type_id: u32,
    /// Bit offset; with kind_flag, bitfield size in the top 8 bits.
    pub(super) offset: u32,
}

impl<'a> T<'a> {
    pub(super) fn word(&self, i: usize) -> u32 {
        self.w.get(i).copied().unwrap_or(0)
    }
    pub(super) fn name_off(&self) -> u32 {
        self.word(0)
    }
    pub(super) fn info(&self) -> u32 {
        self.word(1)
    }
    /// The kind; `None` for void and for unknown kind numbers.
    pub(super) fn kind(&self) -> Option<Kind> {
        if self.id == 0 {
            None
        } else {
            Kind::from_u32(kinds::info_kind(self.info()))
        }
    }
    pub(super) fn is(&self, k: Kind) -> bool {
        self.kind() == Some(k)
    }
    pub(super) fn vlen(&self) -> u32 {
        kinds::info_vlen(self.info())
    }
    pub(super) fn kflag(&self) -> bool {
        kinds::info_kflag(self.info())
    }
    /// `size` or `type`.
    pub(super) fn st(&self) -> u32 {
        self.word(2)
    }
    pub(super) fn is_void(&self) -> bool {
        self.id == 0
    }
    pub(super) fn is_modifier(&self) -> bool {
        matches!(
            self.kind(),
            Some(Kind::Typedef | Kind::Volatile | Kind::Const | Kind::Restrict | Kind::TypeTag)
        )
    }
    /// A TYPE_TAG or DECL_TAG with kind_flag 1: an arbitrary `__attribute__`, which kernels
    /// take from 6.15 on.
    pub(super) fn is_attribute_tag(&self) -> bool {
        self.kflag() && matches!(self.kind(), Some(Kind::TypeTag | Kind::DeclTag))
    }
    pub(super) fn is_struct(&self) -> bool {
        matches!(self.kind(), Some(Kind::Struct | Kind::Union))
    }
    /// `btf_type_nosize`.
    pub(super) fn nosize(&self) -> bool {
        self.is_void() || matches!(self.kind(), Some(Kind::Fwd | Kind::Func | Kind::FuncProto))
    }
    /// `btf_type_is_resolve_source_only`.
    pub(super) fn source_only(&self) -> bool {
        matches!(self.kind(), Some(Kind::Var | Kind::DeclTag | Kind::Datasec))
    }
    /// `btf_type_needs_resolve`.
    pub(super) fn needs_resolve(&self) -> bool {
        self.is_modifier()
            || matches!(
                self.kind(),
                Some(
                    Kind::Ptr
                        | Kind::Struct
                        | Kind::Union
                        | Kind::Array
                        | Kind::Var
                        | Kind::Func
                        | Kind::DeclTag
                        | Kind::Datasec
                )
            )
    }
    /// `btf_type_has_size`.
    pub(super) fn has_size(&self) -> bool {
        matches!(
            self.kind(),
            Some(
                Kind::Int
                    | Kind::Struct
                    | Kind::Union
                    | Kind::Enum
                    | Kind::Datasec
                    | Kind::Float
                    | Kind::Enum64
            )
        )
    }
    pub(super) fn int_bits(&self) -> u32 {
        self.word(3) & 0xff
    }
    pub(super) fn int_offset(&self) -> u32 {
        (self.word(3) >> 16) & 0xff
    }
    /// `btf_type_int_is_regular`: no bit offset, whole bytes, 1/2/4/8/16 bytes.
    pub(super) fn int_is_regular(&self) -> bool {
        let bits = self.int_bits();
        bits.is_multiple_of(8) && self.int_offset() == 0 && matches!(bits / 8, 1 | 2 | 4 | 8 | 16)
    }
    /// Entry `i` of a vlen section with `per` words per entry (after `extra` kind words).
    pub(super) fn entry(&self, extra: usize, per: usize, i: u32, field: usize) -> u32 {
        self.word(3 + extra + per * i as usize + field)
    }
    pub(super) fn member(&self, i: u32) -> Member {
        Member {
            name_off: self.entry(0, 3, i, 0),
            type_id: self.entry(0, 3, i, 1),
            offset: self.entry(0, 3, i, 2),
        }
    }
}

/// Bits rounded up to whole bytes (`BITS_ROUNDUP_BYTES`).
pub(super) fn roundup_bytes(bits: u32) -> u32 {
    (bits >> 3) + u32::from(bits & 7 != 0)
}

impl T<'_> {
    /// The kind's name for messages; "void" for id 0, the number for an unknown kind.
    pub(super) fn desc_kind(&self) -> String {
        match self.kind() {
            Some(k) => k.name().into(),
            None if self.is_void() => "void".into(),
            None => format!("{}", kinds::info_kind(self.info())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundup() {
        assert_eq!(roundup_bytes(0), 0);
        assert_eq!(roundup_bytes(1), 1);
        assert_eq!(roundup_bytes(8), 1);
        assert_eq!(roundup_bytes(9), 2);
        assert_eq!(roundup_bytes(u32::MAX), 0x2000_0000);
    }
}
