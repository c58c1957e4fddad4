//! BTF kinds, the `info` word, record sizes and the UAPI limits.
//!
//! This is the vocabulary every other BTF module speaks: what a kind number means, how `info`
//! packs kind, vlen and kind_flag, and how many 32-bit words a record of a kind occupies.
//! Code that matches on raw kind numbers in hot loops (the dedup, like libbpf's switches) uses
//! the [`kind`] constants, which are defined from [`Kind`], instead of converting to [`Kind`].

/// `KSYM_NAME_LEN` of Linux 6.1 and later: the longest name, in bytes, the kernel's BTF check
/// accepts (pahole caps variable names at its own 128, `encode::variables`).
pub const KSYM_NAME_LEN: usize = 512;

/// The largest type id the kernel accepts (`BTF_MAX_TYPE`).
pub const MAX_TYPE_ID: u32 = 0x000f_ffff;
/// libbpf's internal limit on types in one BTF (`BTF_MAX_NR_TYPES`); pre-dedup BTF of a
/// kernel exceeds [`MAX_TYPE_ID`], only the final BTF must stay below it. The dedup's maps
/// use it as libbpf's do: a value above it is not an id (unprocessed, or a marker).
pub const MAX_NR_TYPES: u32 = 0x7fff_ffff;
const _: () = assert!(MAX_TYPE_ID < MAX_NR_TYPES);
/// The largest string offset the kernel accepts (`BTF_MAX_NAME_OFFSET`).
pub const MAX_NAME_OFFSET: u32 = 0x00ff_ffff;
/// The largest vlen of the classic `info` layout (`BTF_MAX_VLEN`).
pub const MAX_VLEN: u32 = 0xffff;
/// Bits of `info` a 6.x kernel accepts (`BTF_INFO_MASK`).
pub const INFO_MASK: u32 = 0x9f00_ffff;

/// `BTF_INT_SIGNED` in the INT data word.
pub const INT_SIGNED: u8 = 1;
/// `BTF_INT_CHAR` in the INT data word.
pub const INT_CHAR: u8 = 2;
/// `BTF_INT_BOOL` in the INT data word.
pub const INT_BOOL: u8 = 4;

/// `BTF_FUNC_STATIC`, the only linkage pahole emits for functions.
pub const FUNC_STATIC: u32 = 0;
/// `BTF_FUNC_GLOBAL`.
pub const FUNC_GLOBAL: u32 = 1;
/// `BTF_VAR_STATIC`.
pub const VAR_STATIC: u32 = 0;
/// `BTF_VAR_GLOBAL_ALLOCATED`.
pub const VAR_GLOBAL_ALLOCATED: u32 = 1;

/// A BTF kind, numbered as in `include/uapi/linux/btf.h`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum Kind {
    /// `BTF_KIND_INT`: an integer, `char` or `_Bool`, with size and encoding in a data word.
    Int = 1,
    /// `BTF_KIND_PTR`: a pointer to `type`.
    Ptr = 2,
    /// `BTF_KIND_ARRAY`: an array, described by a `btf_array` data record.
    Array = 3,
    /// `BTF_KIND_STRUCT`: a struct with `vlen` members.
    Struct = 4,
    /// `BTF_KIND_UNION`: a union with `vlen` members.
    Union = 5,
    /// `BTF_KIND_ENUM`: an enum with `vlen` 32-bit values.
    Enum = 6,
    /// `BTF_KIND_FWD`: a forward declaration of a struct or union (`kind_flag` set for a union).
    Fwd = 7,
    /// `BTF_KIND_TYPEDEF`: a typedef naming `type`.
    Typedef = 8,
    /// `BTF_KIND_VOLATILE`: the `volatile` qualifier on `type`.
    Volatile = 9,
    /// `BTF_KIND_CONST`: the `const` qualifier on `type`.
    Const = 10,
    /// `BTF_KIND_RESTRICT`: the `restrict` qualifier on `type`.
    Restrict = 11,
    /// `BTF_KIND_FUNC`: a function; `type` is its FUNC_PROTO, `vlen` its linkage.
    Func = 12,
    /// `BTF_KIND_FUNC_PROTO`: a function signature with `vlen` parameters.
    FuncProto = 13,
    /// `BTF_KIND_VAR`: a variable, with its linkage in a data word.
    Var = 14,
    /// `BTF_KIND_DATASEC`: an ELF section with `vlen` variables in it.
    Datasec = 15,
    /// `BTF_KIND_FLOAT`: a floating-point type of `size` bytes.
    Float = 16,
    /// `BTF_KIND_DECL_TAG`: a `btf_decl_tag` attribute on a type, member or parameter.
    DeclTag = 17,
    /// `BTF_KIND_TYPE_TAG`: a `btf_type_tag` attribute on `type`.
    TypeTag = 18,
    /// `BTF_KIND_ENUM64`: an enum with `vlen` 64-bit values.
    Enum64 = 19,
}

/// Raw kind numbers (`BTF_KIND_*`) as `u32`, for matching on the kind field of an `info` word
/// ([`info_kind`]) without a conversion, as libbpf's switch statements do.
pub mod kind {
    use super::Kind;

    /// `BTF_KIND_UNKN`: not a kind (`void`, or a placeholder).
    pub const UNKN: u32 = 0;
    /// `BTF_KIND_INT`.
    pub const INT: u32 = Kind::Int as u32;
    /// `BTF_KIND_PTR`.
    pub const PTR: u32 = Kind::Ptr as u32;
    /// `BTF_KIND_ARRAY`.
    pub const ARRAY: u32 = Kind::Array as u32;
    /// `BTF_KIND_STRUCT`.
    pub const STRUCT: u32 = Kind::Struct as u32;
    /// `BTF_KIND_UNION`.
    pub const UNION: u32 = Kind::Union as u32;
    /// `BTF_KIND_ENUM`.
    pub const ENUM: u32 = Kind::Enum as u32;
    /// `BTF_KIND_FWD`.
    pub const FWD: u32 = Kind::Fwd as u32;
    /// `BTF_KIND_TYPEDEF`.
    pub const TYPEDEF: u32 = Kind::Typedef as u32;
    /// `BTF_KIND_VOLATILE`.
    pub const VOLATILE: u32 = Kind::Volatile as u32;
    /// `BTF_KIND_CONST`.
    pub const CONST: u32 = Kind::Const as u32;
    /// `BTF_KIND_RESTRICT`.
    pub const RESTRICT: u32 = Kind::Restrict as u32;
    /// `BTF_KIND_FUNC`.
    pub const FUNC: u32 = Kind::Func as u32;
    /// `BTF_KIND_FUNC_PROTO`.
    pub const FUNC_PROTO: u32 = Kind::FuncProto as u32;
    /// `BTF_KIND_VAR`.
    pub const VAR: u32 = Kind::Var as u32;
    /// `BTF_KIND_DATASEC`.
    pub const DATASEC: u32 = Kind::Datasec as u32;
    /// `BTF_KIND_FLOAT`.
    pub const FLOAT: u32 = Kind::Float as u32;
    /// `BTF_KIND_DECL_TAG`.
    pub const DECL_TAG: u32 = Kind::DeclTag as u32;
    /// `BTF_KIND_TYPE_TAG`.
    pub const TYPE_TAG: u32 = Kind::TypeTag as u32;
    /// `BTF_KIND_ENUM64`.
    pub const ENUM64: u32 = Kind::Enum64 as u32;
}

impl Kind {
    /// Every kind, in numeric order.
    pub const ALL: [Kind; 19] = [
        Kind::Int,
        Kind::Ptr,
        Kind::Array,
        Kind::Struct,
        Kind::Union,
        Kind::Enum,
        Kind::Fwd,
        Kind::Typedef,
        Kind::Volatile,
        Kind::Const,
        Kind::Restrict,
        Kind::Func,
        Kind::FuncProto,
        Kind::Var,
        Kind::Datasec,
        Kind::Float,
        Kind::DeclTag,
        Kind::TypeTag,
        Kind::Enum64,
    ];

    /// The kind with this number, if it is one the kernel knows.
    pub fn from_u32(n: u32) -> Option<Kind> {
        Kind::ALL.get((n as usize).wrapping_sub(1)).copied()
    }

    /// The upper-case name bpftool and pahole print (`STRUCT`, `FUNC_PROTO`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Kind::Int => "INT",
            Kind::Ptr => "PTR",
            Kind::Array => "ARRAY",
            Kind::Struct => "STRUCT",
            Kind::Union => "UNION",
            Kind::Enum => "ENUM",
            Kind::Fwd => "FWD",
            Kind::Typedef => "TYPEDEF",
            Kind::Volatile => "VOLATILE",
            Kind::Const => "CONST",
            Kind::Restrict => "RESTRICT",
            Kind::Func => "FUNC",
            Kind::FuncProto => "FUNC_PROTO",
            Kind::Var => "VAR",
            Kind::Datasec => "DATASEC",
            Kind::Float => "FLOAT",
            Kind::DeclTag => "DECL_TAG",
            Kind::TypeTag => "TYPE_TAG",
            Kind::Enum64 => "ENUM64",
        }
    }

    /// Words (u32) of kind-specific data after the 3-word common header, excluding vlen entries.
    pub fn extra_words(self) -> usize {
        match self {
            Kind::Int | Kind::Var | Kind::DeclTag => 1,
            Kind::Array => 3,
            _ => 0,
        }
    }

    /// Words (u32) per vlen entry.
    pub fn vlen_entry_words(self) -> usize {
        match self {
            Kind::Struct | Kind::Union | Kind::Datasec | Kind::Enum64 => 3,
            Kind::Enum | Kind::FuncProto => 2,
            _ => 0,
        }
    }

    /// Total words of a record of this kind with `vlen` entries.
    pub fn record_words(self, vlen: u32) -> usize {
        3 + self.extra_words() + self.vlen_entry_words() * vlen as usize
    }

    /// STRUCT or UNION.
    pub fn is_composite(self) -> bool {
        matches!(self, Kind::Struct | Kind::Union)
    }

    /// PTR, TYPEDEF, CONST, VOLATILE, RESTRICT, TYPE_TAG: kinds whose `type` field is the only
    /// reference and which have no trailing data.
    pub fn is_modifier_like(self) -> bool {
        matches!(
            self,
            Kind::Ptr
                | Kind::Typedef
                | Kind::Const
                | Kind::Volatile
                | Kind::Restrict
                | Kind::TypeTag
        )
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Words of a record whose `info` word is `info`, as its kind and vlen say; an unknown kind
/// counts as the 3 common words only.
#[inline]
pub fn record_words_of(info: u32) -> usize {
    match Kind::from_u32(info_kind(info)) {
        Some(kind) => kind.record_words(info_vlen(info)),
        None => 3,
    }
}

/// Packs an `info` word as libbpf's `btf_type_info` does.
pub fn info(kind: Kind, vlen: u32, kflag: bool) -> u32 {
    ((kflag as u32) << 31) | ((kind as u32) << 24) | (vlen & 0xffff)
}

/// The raw kind number of an `info` word (classic 5-bit field).
#[inline]
pub fn info_kind(info: u32) -> u32 {
    (info >> 24) & 0x1f
}

/// The vlen of an `info` word.
#[inline]
pub fn info_vlen(info: u32) -> u32 {
    info & 0xffff
}

/// The kind_flag of an `info` word.
#[inline]
pub fn info_kflag(info: u32) -> bool {
    info >> 31 != 0
}

/// Packs the INT data word.
pub fn int_data(encoding: u8, offset: u8, bits: u8) -> u32 {
    ((encoding as u32) << 24) | ((offset as u32) << 16) | bits as u32
}
