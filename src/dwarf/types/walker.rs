//! The state of one CU's types decoding, shared by the walk (`walk.rs`), the attribute reader
//! (`attrs.rs`), the resolution (`resolve.rs`) and the imports (`imports.rs`), each of which
//! adds its own `impl Walker`: the [`Walker`] and its buffers, and the raw references and
//! members the walk leaves for the resolution. It names none of those files, so their
//! imports point one way, down to it.

use std::sync::Arc;

use rustc_hash::FxHashMap;

use super::model::{Annot, CuTypes, Entry};
use crate::config::Features;
use crate::dwarf::foreign::{DieKey, UnitIndex};
use crate::dwarf::units::{Cu, R};

/// A reference not yet resolved: a unit offset, `VOID`, or a small id with `RESOLVED` set.
pub(super) type RawRef = u32;
/// A reference to no type.
pub(super) const VOID: RawRef = u32::MAX;
/// Set on a raw reference that is already a small id.
pub(super) const RESOLVED: RawRef = 1 << 31;

/// A member as read, before its bit offset can be computed.
pub(super) struct RawMember<'a> {
    pub(super) name: &'a [u8],
    pub(super) ty: RawRef,
    pub(super) byte_offset: u64,
    pub(super) data_bit_offset: Option<u64>,
    pub(super) dw_bit_offset: u64,
    pub(super) bit_size: u64,
    pub(super) byte_size: u64,
    pub(super) is_static: bool,
    /// The member's DIE, for messages.
    pub(super) die: u32,
}

/// What an open DIE collects from its children.
pub(super) enum FrameKind {
    Composite {
        union: bool,
        members_start: usize,
        annots_start: usize,
        member_idx: i32,
    },
    Enum {
        values_start: usize,
    },
    Array {
        dims_start: usize,
    },
    FuncProto {
        params_start: usize,
        varargs: bool,
    },
    Pointer {
        tags_start: usize,
    },
    Typedef {
        annots_start: usize,
    },
    /// A member DIE with children: its annotations belong to the enclosing composite.
    Member {
        component: i32,
    },
    Other,
}

/// A DIE whose children are being walked.
pub(super) struct Frame<'a> {
    pub(super) depth: isize,
    pub(super) offset: u32,
    pub(super) kind: FrameKind,
    /// The entry to append when this frame closes (type DIEs only).
    pub(super) pending: Option<Entry<'a>>,
    /// The DIE's raw DW_AT_type.
    pub(super) ty: RawRef,
    /// For composites/typedefs: a DW_AT_specification to take the name from.
    pub(super) spec: Option<u32>,
}

impl Frame<'_> {
    /// A frame that appends no entry when it closes.
    pub(super) fn bare(depth: isize, offset: u32, kind: FrameKind) -> Self {
        Frame {
            depth,
            offset,
            kind,
            pending: None,
            ty: VOID,
            spec: None,
        }
    }
}

/// The decoder of one CU's types.
pub(super) struct Walker<'a, 'd> {
    /// The CU being decoded.
    pub(super) cu: &'d Cu<'a>,
    /// The unit being walked when it is not `cu`: the one of an imported DIE.
    pub(super) foreign: Option<Arc<Cu<'a>>>,
    /// Units of imported DIEs, by the key of their header.
    pub(super) foreign_units: FxHashMap<DieKey, Arc<Cu<'a>>>,
    /// Every unit, for the references that leave the CU.
    pub(super) units: &'d UnitIndex<'a>,
    /// The input's DWARF sections.
    pub(super) dwarf: &'d gimli::Dwarf<R<'a>>,
    pub(super) features: &'d Features,
    /// What is decoded so far; the result once resolved.
    pub(super) out: CuTypes<'a>,
    /// Small id by local reference value, filled as entries are added.
    pub(super) offset_to_id: FxHashMap<u32, u32>,
    /// Everything else the walk fills.
    pub(super) buf: Buffers<'a>,
}

/// The buffers a walk fills besides its result, kept from one CU to the next (see
/// [`TypesScratch`]).
#[derive(Default)]
pub(super) struct Buffers<'a> {
    /// Every composite's members as read, indexed by the entries' member ranges.
    pub(super) raw_members: Vec<RawMember<'a>>,
    pub(super) scratch_members: Vec<RawMember<'a>>,
    pub(super) scratch_values: Vec<(&'a [u8], u64)>,
    pub(super) scratch_dims: Vec<u32>,
    pub(super) scratch_params: Vec<(&'a [u8], RawRef)>,
    pub(super) scratch_annots: Vec<Annot<'a>>,
    pub(super) scratch_tags: Vec<u32>,
    /// Each entry's raw type reference (`DW_AT_type`, element or return type), by entry.
    pub(super) raw_refs: Vec<RawRef>,
    /// Each FUNC_PROTO parameter's raw type, by index in `out.params`.
    pub(super) param_refs: Vec<RawRef>,
    /// DIEs that take no slot and stand for another type, by local reference value: atomic
    /// types (their raw `DW_AT_type`) and declarations that name a type unit's type
    /// (`DW_AT_signature`).
    pub(super) aliases: FxHashMap<u32, RawRef>,
    /// Those DIEs in DIE order.
    pub(super) alias_order: Vec<u32>,
    /// Entries that take their name from a `DW_AT_specification`: (entry index, reference).
    pub(super) specs: Vec<(usize, u32)>,
    /// Enums with a `DW_AT_type`: (entry index, reference to their underlying type).
    pub(super) enum_signed: Vec<(usize, u32)>,
    pub(super) frames: Vec<Frame<'a>>,
}

impl Buffers<'_> {
    /// Empties every buffer, keeping its capacity.
    pub(super) fn clear(&mut self) {
        self.raw_members.clear();
        self.scratch_members.clear();
        self.scratch_values.clear();
        self.scratch_dims.clear();
        self.scratch_params.clear();
        self.scratch_annots.clear();
        self.scratch_tags.clear();
        self.raw_refs.clear();
        self.param_refs.clear();
        self.aliases.clear();
        self.alias_order.clear();
        self.specs.clear();
        self.enum_signed.clear();
        self.frames.clear();
    }
}
