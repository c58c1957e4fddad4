//! What is wrong with BTF, as the format finds it: reading bytes ([`BtfError`]), joining split
//! BTF to its base ([`JoinError`]), one record ([`RecordError`]), a `Btf::add_*` call
//! ([`BuildError`]), a format limit ([`LimitError`]) and distilling a base
//! ([`DistillError`]). Closed, typed enums beside the format that finds them, gimli's way; the
//! crate's [`crate::error::Error`] wraps each.

use crate::btf::kinds::{self, Kind};

/// What is wrong with BTF bytes being read (`btf::read`): one variant per failure, with its
/// data, gimli's way.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BtfError {
    /// Fewer bytes than the 24 of a header.
    #[error("{len} bytes is too short for a BTF header")]
    TooShort {
        /// The bytes there are.
        len: usize,
    },
    /// The first two bytes are not the BTF magic in either byte order.
    #[error("bad magic {magic:#06x} (expected 0xeb9f)")]
    BadMagic {
        /// The first two bytes, little-endian.
        magic: u16,
    },
    /// The header length is under 24 or beyond the data.
    #[error("bad header length {hdr_len}")]
    BadHeaderLength {
        /// The header's `hdr_len`.
        hdr_len: u32,
    },
    /// The type or string section ends past the data.
    #[error("a section runs past the end of the data")]
    SectionPastEnd,
    /// The type section's offset or length is not a multiple of 4.
    #[error("type section is not 4-byte aligned")]
    TypesUnaligned,
    /// Fewer words are left than a record's first three.
    #[error("type #{index} is truncated")]
    TypeTruncated {
        /// The record's position in the type section, from 1.
        index: usize,
    },
    /// A record's kind is none the format defines.
    #[error("type #{index} has unknown kind {kind}")]
    UnknownKind {
        /// The record's position in the type section, from 1.
        index: usize,
        /// The kind number found.
        kind: u32,
    },
    /// A record's members run past the type section.
    #[error("type #{index} ({kind}) runs past the type section")]
    TypePastEnd {
        /// The record's position in the type section, from 1.
        index: usize,
        /// The record's kind.
        kind: Kind,
    },
    /// The kind layout section of a header of 32 bytes or more ends past the data.
    #[error(
        "the kind layout section (layout_off {off}, layout_len {len}) runs past the end of the \
         data"
    )]
    LayoutPastEnd {
        /// The header's `layout_off`.
        off: u32,
        /// The header's `layout_len`.
        len: u32,
    },
}

/// Why split BTF and its base cannot be joined into one blob (`toolbox::kernel::join_split`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum JoinError {
    /// The base cannot be read.
    #[error("base: {0}")]
    Base(BtfError),
    /// The split BTF cannot be read.
    #[error("split BTF: {0}")]
    Split(BtfError),
    /// One is little-endian, the other big-endian.
    #[error("the base and the split BTF have different byte orders")]
    ByteOrders,
    /// The joined sections would not fit the header's 32-bit lengths.
    #[error("base and split BTF together exceed 4 GiB")]
    TooLarge,
}

/// What is wrong with one type record: its shape, or a type id or string offset in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    /// Fewer words than a record's first three.
    #[error("type [{id}] is truncated")]
    Truncated {
        /// The record's type id.
        id: u32,
    },
    /// A kind none the format defines.
    #[error("type [{id}] has unknown kind {kind}")]
    UnknownKind {
        /// The record's type id.
        id: u32,
        /// The kind number found.
        kind: u32,
    },
    /// More or fewer words than the record's kind and vlen say.
    #[error(
        "type [{id}] ({}) has {words} words, its kind and vlen say {want}",
        kind_name(*kind)
    )]
    WrongLength {
        /// The record's type id.
        id: u32,
        /// The record's kind; `None` for `void`'s kind 0.
        kind: Option<Kind>,
        /// The words the record has.
        words: usize,
        /// The words its kind and vlen call for.
        want: usize,
    },
    /// A type id at or past the type count.
    #[error(
        "type [{id}] ({}) references type [{target}], past the last type [{last}]",
        kind_name(*kind)
    )]
    RefPastEnd {
        /// The referring record's type id.
        id: u32,
        /// The referring record's kind; `None` for `void`'s kind 0.
        kind: Option<Kind>,
        /// The first bad id it references.
        target: u32,
        /// The last type id there is.
        last: u32,
    },
    /// A string offset at or past the end of the string section.
    #[error("type [{id}] references string offset {off}, past the string section")]
    StringPastEnd {
        /// The referring record's type id.
        id: u32,
        /// The bad offset.
        off: u32,
    },
}

/// A kind's name in a message; `void` for the kind 0 a record store lets through.
fn kind_name(kind: Option<Kind>) -> &'static str {
    kind.map_or("void", Kind::name)
}

/// What a `Btf::add_*` call refuses, where libbpf's `btf__add_*` returns `-EINVAL`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BuildError {
    /// A referenced id is beyond the ids a BTF can have (libbpf's `validate_type_id`).
    #[error(
        "{what} refers to type id {id}, beyond the {max} a BTF can hold",
        max = kinds::MAX_NR_TYPES
    )]
    IdTooLarge {
        /// What holds the reference (a kind, or a part of one such as "ARRAY index").
        what: &'static str,
        /// The id.
        id: u32,
    },
    /// Records were to be held in a record store after raw ones had been added.
    #[error("records can be held in a store only before the first raw one")]
    HeldAfterRaw,
    /// A member, enumerator, parameter or section entry with no type of its kind last.
    #[error("{what} added without a preceding {kind}")]
    NoPrecedingType {
        /// What was being added ("member", "enumerator" ...).
        what: &'static str,
        /// The kind it belongs to (the first of those accepted).
        kind: Kind,
    },
    /// An INT without a name, or of a size that is no power of two up to 16 bytes.
    #[error("INT '{name}' of {byte_sz} bytes: needs a name and a power-of-two size up to 16")]
    BadInt {
        /// The name given (lossy UTF-8).
        name: String,
        /// The size given, in bytes.
        byte_sz: u32,
    },
    /// A FLOAT without a name, or of a size other than 2, 4, 8, 12 or 16 bytes.
    #[error("FLOAT '{name}' of {byte_sz} bytes: needs a name and size 2, 4, 8, 12 or 16")]
    BadFloat {
        /// The name given (lossy UTF-8).
        name: String,
        /// The size given, in bytes.
        byte_sz: u32,
    },
    /// A TYPEDEF, TYPE_TAG, FWD, FUNC, VAR or DATASEC without a name.
    #[error("{kind} without a name")]
    Unnamed {
        /// The kind being added.
        kind: Kind,
    },
    /// A type attribute or DECL_TAG with an empty value.
    #[error("{what} without a value")]
    NoValue {
        /// What was being added ("type attribute", "DECL_TAG").
        what: &'static str,
    },
    /// A DECL_TAG's component index below -1 (-1 tags the type itself).
    #[error("DECL_TAG component {component_idx} is below -1")]
    BadComponent {
        /// The index given.
        component_idx: i32,
    },
    /// A bitfield of 0 or more than 255 bits, or at a bit offset beyond 24 bits.
    #[error("bitfield of {bit_size} bits at bit {bit_offset} cannot be encoded")]
    BadBitfield {
        /// The bitfield's size in bits.
        bit_size: u32,
        /// The member's offset in bits.
        bit_offset: u32,
    },
    /// A UNION member at a non-zero offset.
    #[error("union member at bit offset {bit_offset} (must be 0)")]
    UnionMemberOffset {
        /// The offset given, in bits.
        bit_offset: u32,
    },
    /// An ENUM or ENUM64 of a size that is no power of two up to 8 bytes.
    #[error("{kind} of {byte_sz} bytes: needs a power-of-two size up to 8")]
    BadEnumSize {
        /// ENUM or ENUM64.
        kind: Kind,
        /// The size given, in bytes.
        byte_sz: u32,
    },
    /// An enumerator with an empty name.
    #[error("enumerator without a name")]
    UnnamedEnumerator,
    /// An ENUM enumerator whose value is neither an `i32` nor a `u32`.
    #[error("enumerator '{name}' = {value} does not fit a 32-bit ENUM")]
    EnumValueRange {
        /// The enumerator's name (lossy UTF-8).
        name: String,
        /// Its value.
        value: i64,
    },
}

/// Why no base can be distilled from split BTF (libbpf's `btf__distill_base` `-EINVAL`, and
/// the ids libbpf's parser lets through).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DistillError {
    /// The BTF has no base.
    #[error("distilling a base needs split BTF; this BTF has no base")]
    NoBase,
    /// A base id that resolves to no type.
    #[error("base type [{id}] is missing")]
    MissingBaseType {
        /// The id.
        id: u32,
    },
    /// A type id at or past the type count.
    #[error("a type refers to type id {id}, past the last type {last}")]
    IdPastEnd {
        /// The bad id.
        id: u32,
        /// The last type id there is.
        last: u32,
    },
    /// A split type references a base type of a kind the distilled base has no place for.
    #[error(
        "split BTF refers to base type [{id}] of kind {kind}, which a distilled base cannot hold"
    )]
    KindNotDistillable {
        /// The base type's id.
        id: u32,
        /// Its kind.
        kind: Kind,
    },
}

/// Which format limit BTF being built would exceed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LimitError {
    /// More types than libbpf's `BTF_MAX_NR_TYPES`.
    #[error("more than {max} types", max = kinds::MAX_NR_TYPES)]
    TooManyTypes,
    /// More members, enumerators, parameters or section entries than a vlen can count.
    #[error("type [{id}] would have more than {max} members", max = kinds::MAX_VLEN)]
    TooManyMembers {
        /// The type being added to.
        id: u32,
    },
    /// The record store's 2^31 bytes are used up.
    #[error("the record store is full")]
    StoreFull,
    /// More distinct record templates than the record store can number.
    #[error("too many distinct type records")]
    TooManyTemplates,
}
