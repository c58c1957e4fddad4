//! The types decoder's model: the entries of one CU's types table ([`Entry`], [`Member`],
//! [`Annot`]), the table itself ([`CuTypes`]) and what goes wrong ([`DecodeError`]). The walk,
//! the attribute reader and the resolution fill it; none of them is known here.

use std::ops::Range;
use std::sync::Arc;

use gimli::DwTag;
use rustc_hash::FxHashMap;

use crate::btf::Kind;
use crate::dwarf::die_starts::DieStarts;
use crate::dwarf::error::DwarfCause;
use crate::dwarf::foreign::Imports;
use crate::dwarf::units::Cu;

/// One entry of a CU's types table. All `ty` fields are small ids (0 = void) after decoding.
#[derive(Clone, Debug)]
pub enum Entry<'a> {
    /// `DW_TAG_base_type`: an INT, FLOAT or BOOL-like type.
    Base {
        /// Its name.
        name: &'a [u8],
        /// Its size in bytes.
        byte_size: u32,
        /// `DW_ATE_*`.
        encoding: u8,
    },
    /// PTR, CONST, VOLATILE or RESTRICT.
    Modifier {
        /// Which of the four.
        kind: Kind,
        /// The modified type.
        ty: u32,
    },
    /// `DW_TAG_typedef`.
    Typedef {
        /// The typedef's name.
        name: &'a [u8],
        /// The type it names.
        ty: u32,
        /// Its decl tags, in [`CuTypes::annots`].
        annots: Range<u32>,
    },
    /// A `btf_type_tag` annotation on a pointer's pointee.
    TypeTag {
        /// The tag's value.
        value: &'a [u8],
        /// The tagged type.
        ty: u32,
    },
    /// A struct or union (also a declaration, which becomes a FWD).
    Composite {
        /// A union rather than a struct.
        union: bool,
        /// Its name (empty when anonymous).
        name: &'a [u8],
        /// Its size in bytes.
        size: u32,
        /// Only declared here (`DW_AT_declaration`).
        declaration: bool,
        /// Its data members, in [`CuTypes::members`].
        members: Range<u32>,
        /// Its decl tags, in [`CuTypes::annots`].
        annots: Range<u32>,
    },
    /// An enumeration (ENUM or ENUM64, by size and features).
    Enum {
        /// Its name (empty when anonymous).
        name: &'a [u8],
        /// Its size in bytes.
        byte_size: u32,
        /// Its underlying type (`DW_AT_type`) is a signed base type.
        signed: bool,
        /// Its enumerators, in [`CuTypes::enumerators`].
        values: Range<u32>,
    },
    /// One dimension of an array: a `DW_TAG_array_type` with N subranges is N entries, the
    /// inner dimensions first (`walk.rs`), as pahole 1.32 encodes it.
    Array {
        /// The element type (for an outer dimension, the next inner one).
        elem: u32,
        /// The dimension's element count (0 when unknown, as for a flexible array).
        nelems: u32,
    },
    /// A subroutine type.
    FuncProto {
        /// The return type (0 = void).
        ret: u32,
        /// Its parameters, in [`CuTypes::params`].
        params: Range<u32>,
        /// It ends with `...`.
        varargs: bool,
    },
    /// A type DIE BTF cannot express (C++ references, pointers to members, ...).
    Unsupported {
        /// The DIE's tag, for the error message.
        tag: DwTag,
    },
}

/// A data member of a struct or union, with its final BTF bit offset.
#[derive(Clone, Debug)]
pub struct Member<'a> {
    /// The member's name (empty when anonymous).
    pub name: &'a [u8],
    /// Its type.
    pub ty: u32,
    /// Its offset from the start of the struct, in bits.
    pub bit_offset: u32,
    /// Its width in bits when it is a bit-field, else 0.
    pub bitfield_size: u32,
}

/// A `btf_decl_tag` annotation: its value and the member/parameter index (-1 = the type).
#[derive(Clone, Copy, Debug)]
pub struct Annot<'a> {
    /// The tag's value.
    pub value: &'a [u8],
    /// The member or parameter index it belongs to, -1 for the type itself.
    pub component: i32,
}

/// One CU's types table and the side arrays its entries index into.
#[derive(Default, Debug)]
pub struct CuTypes<'a> {
    /// Entry `i` has small id `i + 1`.
    pub entries: Vec<Entry<'a>>,
    /// Each entry's DIE as a local reference value (for messages: [`CuTypes::die_offset`]).
    pub dies: Vec<u32>,
    /// Struct and union members, indexed by [`Entry::Composite`] ranges.
    pub members: Vec<Member<'a>>,
    /// Enumerators (name, value as 64 bits), indexed by [`Entry::Enum`] ranges.
    pub enumerators: Vec<(&'a [u8], u64)>,
    /// FUNC_PROTO parameters: name (may be empty) and type.
    pub params: Vec<(&'a [u8], u32)>,
    /// Decl tags, indexed by the entries' `annots` ranges.
    pub annots: Vec<Annot<'a>>,
    /// Unit offsets of the top-level `DW_TAG_variable` DIEs (pahole's `top_level` variables).
    pub variables: Vec<u32>,
    /// Unit offsets of every `DW_TAG_subprogram` DIE, nested ones included, in DIE order.
    pub subprograms: Vec<u32>,
    /// Small id of every type DIE by local reference value: the unit offset of the CU's own
    /// DIEs, an [`IMPORTED`] value for DIEs of other units (unspecified types map to 0, void;
    /// atomic types to the type they qualify).
    pub offset_to_id: FxHashMap<u32, u32>,
    /// Every `DW_TAG_atomic_type` DIE, in DIE order: its local reference value and the small
    /// id of the unqualified type that replaces it (0 = void).
    pub dropped_atomics: Vec<(u32, u32)>,
    /// The DIEs of other units the CU references (`foreign.rs`), whose types follow its own.
    pub imports: Imports,
    /// The units those DIEs are in.
    pub foreign_units: Vec<Arc<Cu<'a>>>,
    /// Where the CU's own DIEs start, for checking references read after the walk.
    pub die_starts: DieStarts,
}

impl<'a> CuTypes<'a> {
    /// The small id of the type DIE with local reference value `local` (0, void, when it is
    /// not a type).
    pub fn type_id_of(&self, local: u32) -> u32 {
        self.offset_to_id.get(&local).copied().unwrap_or(0)
    }

    /// An empty result with `self`'s vectors (emptied, their capacity kept).
    pub(super) fn emptied(self) -> Self {
        fn emptied<T>(mut v: Vec<T>) -> Vec<T> {
            v.clear();
            v
        }
        let mut offset_to_id = self.offset_to_id;
        offset_to_id.clear();
        let die_starts = self.die_starts;
        CuTypes {
            entries: emptied(self.entries),
            dies: emptied(self.dies),
            members: emptied(self.members),
            enumerators: emptied(self.enumerators),
            params: emptied(self.params),
            annots: emptied(self.annots),
            variables: emptied(self.variables),
            subprograms: emptied(self.subprograms),
            offset_to_id,
            die_starts,
            ..CuTypes::default()
        }
    }

    /// The small id of the first base type named `int`, as `cu__find_base_type_by_name`.
    pub fn int_id(&self) -> Option<u32> {
        self.entries
            .iter()
            .position(|e| matches!(e, Entry::Base { name, .. } if *name == b"int"))
            .map(|i| i as u32 + 1)
    }
}

/// What went wrong while decoding, with the DIE it concerns.
#[derive(Debug)]
pub struct DecodeError {
    /// The DIE's offset in `.debug_info` (0 when the error is about the whole CU).
    pub die_offset: u64,
    /// What is wrong with it.
    pub cause: DwarfCause,
}

impl From<gimli::Error> for DecodeError {
    fn from(e: gimli::Error) -> Self {
        DecodeError {
            die_offset: 0,
            cause: DwarfCause::Read(e),
        }
    }
}
