//! DIE → type model: one CU's types table, in exactly the order pahole's `dwarf_loader` builds
//! its `types_table`, so that BTF id = `type_id_off + small_id` as in pahole.
//!
//! pahole adds a type DIE to the table after all of its children (nested types first), adds
//! `btf_type_tag` annotations of a pointer before the pointer, leaves top-level
//! `DW_TAG_unspecified_type` out (references to it become void) and keeps everything else in
//! DIE order. One DFS over the CU with an explicit frame stack reproduces that; DW_AT_type
//! references are collected as unit offsets and resolved to small ids once the walk is done.
//!
//! DIEs of other units that the CU references (LTO, dwz, type units: `foreign.rs`) are walked
//! after the CU, each subtree in its own unit, and their entries follow the CU's own; a
//! reference to one is an [`IMPORTED`] value instead of a unit offset. A declaration that
//! names a type unit's type with `DW_AT_signature` (gcc's skeletons) takes no slot and stands
//! for that type, as an atomic type does below.
//!
//! `DW_TAG_atomic_type` (C11 `_Atomic`) is where this differs from pahole, which rejects it:
//! BTF has no atomic qualifier, so, as LLVM's BPF backend does, the qualifier is dropped. An
//! atomic DIE takes no table slot; before references are resolved it is mapped to the small
//! id of the type it qualifies (through chains of atomics; a cycle of them is an error), so
//! every reference to it, including the lookups of `functions.rs` and `variables.rs` through
//! [`CuTypes::type_id_of`], sees the unqualified type. [`CuTypes::dropped_atomics`] lists them
//! for the `-V` notes.

use std::ops::Range;
use std::sync::Arc;

use gimli::{AttributeValue, DwTag, EntriesRaw, UnitOffset};
use rustc_hash::FxHashMap;

use super::foreign::{DieKey, Imports, UnitIndex, IMPORTED};
use super::units::{Cu, R};

mod imports;
use crate::btf::Kind;
use crate::config::Features;

/// A reference not yet resolved: a unit offset, `VOID`, or a small id with `RESOLVED` set.
type RawRef = u32;
const VOID: RawRef = u32::MAX;
const RESOLVED: RawRef = 1 << 31;

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
    /// An array, its dimensions flattened as pahole does.
    Array {
        /// The element type.
        elem: u32,
        /// The element count: the product of every dimension's count (0 when one is unknown,
        /// as for a flexible array).
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
}

impl<'a> CuTypes<'a> {
    /// The small id of the type DIE with local reference value `local` (0, void, when it is
    /// not a type).
    pub fn type_id_of(&self, local: u32) -> u32 {
        self.offset_to_id.get(&local).copied().unwrap_or(0)
    }

    /// The type with small id `id` spelled roughly as in C (`int`, `struct s *`,
    /// `const counter_t`), for messages.
    pub fn c_name(&self, id: u32) -> String {
        self.c_name_depth(id, 0)
    }

    fn c_name_depth(&self, id: u32, depth: usize) -> String {
        let Some(entry) = id.checked_sub(1).and_then(|i| self.entries.get(i as usize)) else {
            return "void".into();
        };
        if depth > 8 {
            return "...".into();
        }
        let named = |what: &str, name: &[u8]| {
            let name = if name.is_empty() {
                "(anon)".into()
            } else {
                String::from_utf8_lossy(name)
            };
            format!("{what}{name}")
        };
        let inner = |ty: u32| self.c_name_depth(ty, depth + 1);
        match entry {
            Entry::Base { name, .. } | Entry::Typedef { name, .. } => named("", name),
            Entry::Composite {
                union: true, name, ..
            } => named("union ", name),
            Entry::Composite { name, .. } => named("struct ", name),
            Entry::Enum { name, .. } => named("enum ", name),
            Entry::Modifier {
                kind: Kind::Ptr,
                ty,
            } => format!("{} *", inner(*ty)),
            Entry::Modifier { kind, ty } => {
                let q = match kind {
                    Kind::Const => "const",
                    Kind::Volatile => "volatile",
                    _ => "restrict",
                };
                let t = inner(*ty);
                if t.ends_with('*') {
                    format!("{t}{q}")
                } else {
                    format!("{q} {t}")
                }
            }
            Entry::TypeTag { value, ty } => {
                format!("{} __tag({})", inner(*ty), String::from_utf8_lossy(value))
            }
            Entry::Array { elem, nelems } => format!("{}[{nelems}]", inner(*elem)),
            Entry::FuncProto { .. } => "function type".into(),
            Entry::Unsupported { tag } => tag.static_string().unwrap_or("DW_TAG_?").into(),
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
    pub reason: String,
}

impl From<gimli::Error> for DecodeError {
    fn from(e: gimli::Error) -> Self {
        DecodeError {
            die_offset: 0,
            reason: e.to_string(),
        }
    }
}

/// The attributes the type model reads from one DIE.
#[derive(Default)]
struct Attrs<'a> {
    name: &'a [u8],
    ty: Option<RawRef>,
    byte_size: u64,
    encoding: u8,
    declaration: bool,
    member_location: Option<u64>,
    data_bit_offset: Option<u64>,
    bit_offset: u64,
    bit_size: u64,
    upper_bound: Option<u64>,
    count: Option<u64>,
    const_value: u64,
    const_str: &'a [u8],
    specification: Option<u32>,
    signature: Option<RawRef>,
}

/// A member as read, before its bit offset can be computed.
struct RawMember<'a> {
    name: &'a [u8],
    ty: RawRef,
    byte_offset: u64,
    data_bit_offset: Option<u64>,
    dw_bit_offset: u64,
    bit_size: u64,
    byte_size: u64,
    is_static: bool,
}

enum FrameKind {
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

struct Frame<'a> {
    depth: isize,
    offset: u32,
    kind: FrameKind,
    /// The entry to append when this frame closes (type DIEs only).
    pending: Option<Entry<'a>>,
    /// The DIE's raw DW_AT_type.
    ty: RawRef,
    /// For composites/typedefs: a DW_AT_specification to take the name from.
    spec: Option<u32>,
}

/// The decoder of one CU's types.
struct Walker<'a, 'd> {
    /// The CU being decoded.
    cu: &'d Cu<'a>,
    /// The unit being walked when it is not `cu`: the one of an imported DIE.
    foreign: Option<Arc<Cu<'a>>>,
    /// Units of imported DIEs, by the key of their header.
    foreign_units: FxHashMap<DieKey, Arc<Cu<'a>>>,
    units: &'d UnitIndex<'a>,
    /// Per abbreviation code of `cu`: 0 unknown, 1 has no cross-unit reference form, 2 has one.
    abbrev_leaves_unit: Vec<u8>,
    dwarf: &'d gimli::Dwarf<R<'a>>,
    features: &'d Features,
    out: CuTypes<'a>,
    raw_members: Vec<RawMember<'a>>,
    scratch_members: Vec<RawMember<'a>>,
    scratch_values: Vec<(&'a [u8], u64)>,
    scratch_dims: Vec<u32>,
    scratch_params: Vec<(&'a [u8], RawRef)>,
    scratch_annots: Vec<Annot<'a>>,
    scratch_tags: Vec<u32>,
    raw_refs: Vec<RawRef>,
    param_refs: Vec<RawRef>,
    offset_to_id: FxHashMap<u32, u32>,
    /// DIEs that take no slot and stand for another type, by local reference value: atomic
    /// types (their raw `DW_AT_type`) and declarations that name a type unit's type
    /// (`DW_AT_signature`).
    aliases: FxHashMap<u32, RawRef>,
    /// Those DIEs in DIE order.
    alias_order: Vec<u32>,
    specs: Vec<(usize, u32)>,
    enum_signed: Vec<(usize, u32)>,
    frames: Vec<Frame<'a>>,
}

/// Decodes the types of one CU, with those it imports from other units of `units`.
pub fn decode_cu_types<'a>(
    dwarf: &gimli::Dwarf<R<'a>>,
    units: &UnitIndex<'a>,
    cu: &Cu<'a>,
    features: &Features,
) -> Result<CuTypes<'a>, DecodeError> {
    if cu.header.length_including_self() >= IMPORTED as usize {
        return Err(DecodeError {
            die_offset: cu.offset as u64,
            reason: "the unit is larger than 1 GiB".into(),
        });
    }
    let mut w = Walker {
        cu,
        foreign: None,
        foreign_units: FxHashMap::default(),
        units,
        abbrev_leaves_unit: Vec::new(),
        dwarf,
        features,
        out: CuTypes::default(),
        raw_members: Vec::new(),
        scratch_members: Vec::new(),
        scratch_values: Vec::new(),
        scratch_dims: Vec::new(),
        scratch_params: Vec::new(),
        scratch_annots: Vec::new(),
        scratch_tags: Vec::new(),
        raw_refs: Vec::new(),
        param_refs: Vec::new(),
        offset_to_id: FxHashMap::default(),
        aliases: FxHashMap::default(),
        alias_order: Vec::new(),
        specs: Vec::new(),
        enum_signed: Vec::new(),
        frames: Vec::new(),
    };
    w.walk()?;
    w.import_foreign()?;
    w.resolve_aliases()?;
    w.resolve()?;
    Ok(w.out)
}

// gimli's constants are lower-case-named; matching on them trips the style lint.
#[allow(non_upper_case_globals)]
fn is_interesting(tag: DwTag) -> bool {
    use gimli::constants::*;
    !matches!(
        tag,
        DW_TAG_formal_parameter
            | DW_TAG_variable
            | DW_TAG_call_site
            | DW_TAG_call_site_parameter
            | DW_TAG_GNU_call_site
            | DW_TAG_GNU_call_site_parameter
            | DW_TAG_label
            | DW_TAG_dwarf_procedure
            | DW_TAG_subprogram
            | DW_TAG_lexical_block
            | DW_TAG_inlined_subroutine
            | DW_TAG_compile_unit
    )
}

/// `DW_TAG_GNU_annotation` (GCC 16+).
const DW_TAG_GNU_ANNOTATION: DwTag = DwTag(0x6001);
/// `DW_TAG_LLVM_annotation` (clang's btf_type_tag / btf_decl_tag).
const DW_TAG_LLVM_ANNOTATION: DwTag = DwTag(0x6000);

impl<'a> Walker<'a, '_> {
    fn walk(&mut self) -> Result<(), DecodeError> {
        let cu = self.cu;
        let raw = cu.header.entries_raw(&cu.abbrevs, None)?;
        self.walk_entries(raw, false)
    }

    /// Walks the CU (`subtree` false) or the subtree of one imported DIE (true), whose DIEs
    /// are imported as they are met so that references to them resolve.
    fn walk_entries(
        &mut self,
        mut raw: EntriesRaw<'_, R<'a>>,
        subtree: bool,
    ) -> Result<(), DecodeError> {
        let mut attrs_buf = Vec::new();
        let mut first = true;
        let mut skip_below: Option<isize> = None;
        while !raw.is_empty() {
            let depth = raw.next_depth();
            if subtree && !first && depth <= 0 {
                break;
            }
            first = false;
            let unit_offset = raw.next_offset().0;
            let Some(abbrev) = raw.read_abbreviation()? else {
                continue;
            };
            if skip_below.is_some_and(|d| depth > d) {
                raw.skip_attributes(abbrev.attributes())?;
                continue;
            }
            skip_below = None;
            // The CU's own DIEs are their unit offsets; an imported subtree's are imports.
            let offset = if subtree {
                self.local_of_unit_offset(unit_offset)?
            } else {
                unit_offset as u32
            };
            if subtree && !self.out.imports.mark_walked(offset) {
                // Walked already, as an import or inside an earlier one.
                raw.skip_attributes(abbrev.attributes())?;
                if abbrev.has_children() {
                    skip_below = Some(depth);
                }
                continue;
            }
            self.close_frames(depth)?;
            let tag = abbrev.tag();
            let in_proto = matches!(
                self.frames.last().map(|f| &f.kind),
                Some(FrameKind::FuncProto { .. })
            );
            if !subtree {
                if tag == gimli::DW_TAG_subprogram {
                    self.out.subprograms.push(offset);
                } else if tag == gimli::DW_TAG_variable && depth == 1 {
                    self.out.variables.push(offset);
                }
            }
            if tag == gimli::DW_TAG_imported_unit {
                raw.read_attributes(abbrev.attributes(), &mut attrs_buf)?;
                self.import_unit(&attrs_buf, offset)?;
                if abbrev.has_children() {
                    self.push_frame(depth, offset, FrameKind::Other, None, VOID, None);
                }
                continue;
            }
            let proto_param = in_proto && tag == gimli::DW_TAG_formal_parameter;
            if !(is_interesting(tag) || proto_param) {
                let function_part = matches!(
                    tag,
                    gimli::DW_TAG_subprogram | gimli::DW_TAG_formal_parameter
                );
                if (subtree && function_part) || (!subtree && self.leaves_unit(abbrev)) {
                    // Functions and variables read these later: import them now.
                    raw.read_attributes(abbrev.attributes(), &mut attrs_buf)?;
                    self.import_types_of(&attrs_buf, offset, function_part)?;
                } else {
                    raw.skip_attributes(abbrev.attributes())?;
                }
                if abbrev.has_children() {
                    self.push_frame(depth, offset, FrameKind::Other, None, VOID, None);
                }
                continue;
            }
            raw.read_attributes(abbrev.attributes(), &mut attrs_buf)?;
            let attrs = self.read_attrs(&attrs_buf, offset)?;
            self.on_die(tag, abbrev.has_children(), depth, offset, attrs)?;
        }
        // Every frame, even one opened at a negative depth (more null entries than parents,
        // in malformed DWARF), gets its entry.
        self.close_frames(isize::MIN)?;
        Ok(())
    }

    fn err(&self, offset: u32, reason: impl Into<String>) -> DecodeError {
        DecodeError {
            die_offset: self.out.die_offset(offset, self.cu.offset as u64),
            reason: reason.into(),
        }
    }

    fn read_attrs(
        &mut self,
        buf: &[gimli::Attribute<R<'a>>],
        offset: u32,
    ) -> Result<Attrs<'a>, DecodeError> {
        let mut a = Attrs::default();
        for attr in buf {
            match attr.name() {
                gimli::DW_AT_name => {
                    a.name = self
                        .unit()
                        .string(self.dwarf, attr.value())
                        .map_err(|e| self.err(offset, format!("DW_AT_name: {e}")))?
                }
                gimli::DW_AT_type => a.ty = Some(self.type_ref(attr.value(), offset)?),
                gimli::DW_AT_byte_size => a.byte_size = udata(attr.raw_value()).unwrap_or(0),
                gimli::DW_AT_encoding => {
                    if let AttributeValue::Encoding(e) = attr.value() {
                        a.encoding = e.0;
                    }
                }
                gimli::DW_AT_declaration => a.declaration = flag(attr.raw_value()),
                gimli::DW_AT_data_member_location => {
                    a.member_location = Some(member_location(attr.raw_value()))
                }
                gimli::DW_AT_data_bit_offset => {
                    a.data_bit_offset = Some(udata(attr.raw_value()).unwrap_or(0))
                }
                gimli::DW_AT_bit_offset => a.bit_offset = udata(attr.raw_value()).unwrap_or(0),
                gimli::DW_AT_bit_size => a.bit_size = udata(attr.raw_value()).unwrap_or(0),
                gimli::DW_AT_upper_bound => a.upper_bound = udata(attr.raw_value()),
                gimli::DW_AT_count => a.count = udata(attr.raw_value()),
                gimli::DW_AT_const_value => match attr.value() {
                    v @ (AttributeValue::String(_)
                    | AttributeValue::DebugStrRef(_)
                    | AttributeValue::DebugLineStrRef(_)
                    | AttributeValue::DebugStrOffsetsIndex(_)) => {
                        a.const_str = self.unit().string(self.dwarf, v).unwrap_or(b"")
                    }
                    v => a.const_value = udata(v).unwrap_or(0),
                },
                gimli::DW_AT_specification => {
                    a.specification = self.unit_ref(attr.value(), offset).ok()
                }
                gimli::DW_AT_signature => a.signature = Some(self.unit_ref(attr.value(), offset)?),
                _ => {}
            }
        }
        Ok(a)
    }

    /// [`Walker::unit_ref`] for `DW_AT_type`, with the common case (a reference into the CU
    /// being walked) first.
    #[inline]
    fn type_ref(&mut self, v: AttributeValue<R<'a>>, offset: u32) -> Result<u32, DecodeError> {
        match v {
            AttributeValue::UnitRef(UnitOffset(o))
                if self.foreign.is_none() && o < self.cu.header.length_including_self() =>
            {
                Ok(o as u32)
            }
            v => self.unit_ref(v, offset),
        }
    }

    fn push_frame(
        &mut self,
        depth: isize,
        offset: u32,
        kind: FrameKind,
        pending: Option<Entry<'a>>,
        ty: RawRef,
        spec: Option<u32>,
    ) {
        self.frames.push(Frame {
            depth,
            offset,
            kind,
            pending,
            ty,
            spec,
        });
    }

    fn close_frames(&mut self, depth: isize) -> Result<(), DecodeError> {
        while self.frames.last().is_some_and(|f| f.depth >= depth) {
            let f = self.frames.pop().expect("checked non-empty");
            if let Some(pending) = f.pending {
                self.finish_entry(f.offset, f.kind, pending, f.ty, f.spec);
            }
        }
        Ok(())
    }

    /// Appends a type entry and records its DIE offset; returns its small id.
    fn add_entry(&mut self, offset: u32, entry: Entry<'a>, raw_ref: RawRef) -> u32 {
        self.out.entries.push(entry);
        self.out.dies.push(offset);
        self.raw_refs.push(raw_ref);
        let id = self.out.entries.len() as u32;
        self.offset_to_id.insert(offset, id);
        id
    }

    /// Completes a type entry from what its children left on the scratch stacks.
    fn finish_entry(
        &mut self,
        offset: u32,
        kind: FrameKind,
        mut entry: Entry<'a>,
        ty: RawRef,
        spec: Option<u32>,
    ) {
        let mut raw_ref = ty;
        match (&mut entry, kind) {
            (
                Entry::Composite {
                    members, annots, ..
                },
                FrameKind::Composite {
                    members_start,
                    annots_start,
                    ..
                },
            ) => {
                *members = drain_into(
                    &mut self.scratch_members,
                    members_start,
                    &mut self.raw_members,
                );
                *annots = drain_into(&mut self.scratch_annots, annots_start, &mut self.out.annots);
            }
            (Entry::Typedef { annots, .. }, FrameKind::Typedef { annots_start }) => {
                *annots = drain_into(&mut self.scratch_annots, annots_start, &mut self.out.annots);
            }
            (Entry::Enum { values, .. }, FrameKind::Enum { values_start }) => {
                *values = drain_into(
                    &mut self.scratch_values,
                    values_start,
                    &mut self.out.enumerators,
                );
            }
            (Entry::Array { nelems, .. }, FrameKind::Array { dims_start }) => {
                *nelems = self.scratch_dims[dims_start..]
                    .iter()
                    .fold(1u32, |acc, &d| acc.wrapping_mul(d));
                self.scratch_dims.truncate(dims_start);
            }
            (
                Entry::FuncProto {
                    params, varargs, ..
                },
                FrameKind::FuncProto {
                    params_start,
                    varargs: v,
                },
            ) => {
                let start = self.out.params.len() as u32;
                for (name, r) in self.scratch_params.drain(params_start..) {
                    self.out.params.push((name, 0));
                    self.param_refs.push(r);
                }
                *params = start..self.out.params.len() as u32;
                *varargs = v;
            }
            (Entry::Modifier { .. }, FrameKind::Pointer { tags_start }) => {
                // PTR → tagN → … → tag1 → pointee (tags were added in child order).
                let tags: Vec<u32> = self.scratch_tags.drain(tags_start..).collect();
                if let Some(&last) = tags.last() {
                    let mut pointee = ty;
                    for &tag_id in &tags {
                        self.raw_refs[tag_id as usize - 1] = pointee;
                        pointee = tag_id | RESOLVED;
                    }
                    raw_ref = last | RESOLVED;
                }
            }
            (Entry::Array { nelems, .. }, _) => *nelems = 0,
            _ => {}
        }
        let id = self.add_entry(offset, entry, raw_ref);
        if let Some(spec) = spec {
            self.specs.push((id as usize - 1, spec));
        }
    }

    #[allow(non_upper_case_globals)]
    fn on_die(
        &mut self,
        tag: DwTag,
        has_children: bool,
        depth: isize,
        offset: u32,
        a: Attrs<'a>,
    ) -> Result<(), DecodeError> {
        use gimli::constants::*;
        let ty = a.ty.unwrap_or(VOID);
        if let Some(target) = a.signature {
            // A declaration standing for a type unit's type (gcc's skeletons): no slot.
            self.add_alias(offset, target);
            if has_children {
                self.push_frame(depth, offset, FrameKind::Other, None, VOID, None);
            }
            return Ok(());
        }
        let (kind, pending): (FrameKind, Option<Entry<'a>>) = match tag {
            DW_TAG_base_type => (
                FrameKind::Other,
                Some(Entry::Base {
                    name: a.name,
                    byte_size: a.byte_size as u32,
                    encoding: a.encoding,
                }),
            ),
            DW_TAG_pointer_type => (
                FrameKind::Pointer {
                    tags_start: self.scratch_tags.len(),
                },
                Some(Entry::Modifier {
                    kind: Kind::Ptr,
                    ty: 0,
                }),
            ),
            DW_TAG_const_type | DW_TAG_volatile_type | DW_TAG_restrict_type => {
                let kind = match tag {
                    DW_TAG_const_type => Kind::Const,
                    DW_TAG_volatile_type => Kind::Volatile,
                    _ => Kind::Restrict,
                };
                (FrameKind::Other, Some(Entry::Modifier { kind, ty: 0 }))
            }
            DW_TAG_typedef => (
                FrameKind::Typedef {
                    annots_start: self.scratch_annots.len(),
                },
                Some(Entry::Typedef {
                    name: a.name,
                    ty: 0,
                    annots: 0..0,
                }),
            ),
            DW_TAG_structure_type
            | DW_TAG_class_type
            | DW_TAG_interface_type
            | DW_TAG_union_type => {
                let union = tag == DW_TAG_union_type;
                (
                    FrameKind::Composite {
                        union,
                        members_start: self.scratch_members.len(),
                        annots_start: self.scratch_annots.len(),
                        member_idx: 0,
                    },
                    Some(Entry::Composite {
                        union,
                        name: a.name,
                        size: a.byte_size as u32,
                        declaration: a.declaration,
                        members: 0..0,
                        annots: 0..0,
                    }),
                )
            }
            DW_TAG_enumeration_type => {
                if let Some(base) = a.ty {
                    self.enum_signed.push((self.out.entries.len(), base));
                }
                let byte_size = if a.byte_size == 0 {
                    4
                } else {
                    a.byte_size as u32
                };
                (
                    FrameKind::Enum {
                        values_start: self.scratch_values.len(),
                    },
                    Some(Entry::Enum {
                        name: a.name,
                        byte_size,
                        signed: false,
                        values: 0..0,
                    }),
                )
            }
            DW_TAG_array_type => (
                FrameKind::Array {
                    dims_start: self.scratch_dims.len(),
                },
                Some(Entry::Array { elem: 0, nelems: 0 }),
            ),
            DW_TAG_subroutine_type => (
                FrameKind::FuncProto {
                    params_start: self.scratch_params.len(),
                    varargs: false,
                },
                Some(Entry::FuncProto {
                    ret: 0,
                    params: 0..0,
                    varargs: false,
                }),
            ),
            DW_TAG_unspecified_type => {
                // pahole leaves it out of the table; references to it become void.
                self.offset_to_id.insert(offset, 0);
                (FrameKind::Other, None)
            }
            DW_TAG_atomic_type => {
                // No slot: resolve_aliases maps it to the type it qualifies.
                self.add_alias(offset, ty);
                self.out.dropped_atomics.push((offset, 0));
                (FrameKind::Other, None)
            }
            DW_TAG_reference_type
            | DW_TAG_rvalue_reference_type
            | DW_TAG_ptr_to_member_type
            | DW_TAG_string_type => (FrameKind::Other, Some(Entry::Unsupported { tag })),
            DW_TAG_member | DW_TAG_inheritance => {
                let kind = self.on_member(&a);
                (kind, None)
            }
            DW_TAG_enumerator => {
                if let Some(FrameKind::Enum { .. }) = self.frames.last().map(|f| &f.kind) {
                    self.scratch_values.push((a.name, a.const_value));
                }
                (FrameKind::Other, None)
            }
            DW_TAG_subrange_type => {
                if let Some(FrameKind::Array { .. }) = self.frames.last().map(|f| &f.kind) {
                    let n = match (a.upper_bound, a.count) {
                        (Some(ub), _) => ub.wrapping_add(1),
                        (None, Some(c)) => c,
                        _ => 0,
                    };
                    self.scratch_dims.push(n as u32);
                }
                (FrameKind::Other, None)
            }
            DW_TAG_formal_parameter => {
                self.scratch_params.push((a.name, ty));
                (FrameKind::Other, None)
            }
            DW_TAG_unspecified_parameters => {
                if let Some(FrameKind::FuncProto { varargs, .. }) =
                    self.frames.last_mut().map(|f| &mut f.kind)
                {
                    *varargs = true;
                }
                (FrameKind::Other, None)
            }
            DW_TAG_LLVM_ANNOTATION | DW_TAG_GNU_ANNOTATION => {
                self.on_annotation(offset, &a);
                (FrameKind::Other, None)
            }
            _ => (FrameKind::Other, None),
        };
        match pending {
            Some(p) if has_children => {
                self.push_frame(depth, offset, kind, Some(p), ty, a.specification)
            }
            Some(p) => self.finish_entry(offset, kind, p, ty, a.specification),
            None if has_children => self.push_frame(depth, offset, kind, None, VOID, None),
            None => {}
        }
        Ok(())
    }

    /// A `DW_TAG_member`: recorded on the enclosing composite; returns the frame kind for its
    /// children (annotations, which become decl tags with the member's index).
    fn on_member(&mut self, a: &Attrs<'a>) -> FrameKind {
        let Some(Frame {
            kind: FrameKind::Composite {
                union, member_idx, ..
            },
            ..
        }) = self.frames.last_mut()
        else {
            return FrameKind::Other;
        };
        let component = *member_idx;
        *member_idx += 1;
        let is_static = a.data_bit_offset.is_none() && a.member_location.is_none() && !*union;
        self.scratch_members.push(RawMember {
            name: a.name,
            ty: a.ty.unwrap_or(VOID),
            byte_offset: a.member_location.unwrap_or(0),
            data_bit_offset: a.data_bit_offset,
            dw_bit_offset: a.bit_offset,
            bit_size: a.bit_size,
            byte_size: a.byte_size,
            is_static,
        });
        FrameKind::Member { component }
    }

    /// A `DW_TAG_LLVM_annotation` child: a type tag of a pointer, or a decl tag of a struct,
    /// union, member or typedef.
    fn on_annotation(&mut self, offset: u32, a: &Attrs<'a>) {
        let parent = self.frames.last().map(|f| &f.kind);
        match (a.name, parent) {
            (b"btf_type_tag", Some(FrameKind::Pointer { .. })) if self.features.type_tag => {
                let id = self.add_entry(
                    offset,
                    Entry::TypeTag {
                        value: a.const_str,
                        ty: 0,
                    },
                    VOID,
                );
                self.scratch_tags.push(id);
            }
            (b"btf_decl_tag", Some(parent)) if self.features.decl_tag => {
                let component = match parent {
                    FrameKind::Composite { .. } | FrameKind::Typedef { .. } => -1,
                    FrameKind::Member { component } => *component,
                    _ => return,
                };
                self.scratch_annots.push(Annot {
                    value: a.const_str,
                    component,
                });
            }
            _ => {}
        }
    }

    fn res(&self, r: RawRef) -> u32 {
        if r == VOID {
            0
        } else if r & RESOLVED != 0 {
            r & !RESOLVED
        } else {
            self.offset_to_id.get(&r).copied().unwrap_or(0)
        }
    }

    fn add_alias(&mut self, offset: u32, target: RawRef) {
        self.aliases.insert(offset, target);
        self.alias_order.push(offset);
    }

    /// Maps each alias DIE to the small id of the type it stands for, following chains of
    /// aliases; every alias is resolved once. A chain longer than the number of aliases has
    /// met one twice: a cycle, which no type can end.
    fn resolve_aliases(&mut self) -> Result<(), DecodeError> {
        let mut chain = Vec::new();
        for i in 0..self.alias_order.len() {
            let start = self.alias_order[i];
            let mut cur = start;
            chain.clear();
            while let Some(&target) = self.aliases.get(&cur) {
                if self.offset_to_id.contains_key(&cur) {
                    break; // resolved earlier, as part of another chain
                }
                if chain.len() >= self.aliases.len() {
                    return Err(self.err(
                        start,
                        "DW_TAG_atomic_type (or a DW_AT_signature declaration) refers to itself \
                         through a cycle of atomic types",
                    ));
                }
                chain.push(cur);
                cur = target;
            }
            let id = self.res(cur);
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
    fn resolve(&mut self) -> Result<(), DecodeError> {
        for i in 0..self.out.entries.len() {
            let id = self.res(self.raw_refs[i]);
            match &mut self.out.entries[i] {
                Entry::Modifier { ty, .. }
                | Entry::Typedef { ty, .. }
                | Entry::TypeTag { ty, .. } => *ty = id,
                Entry::Array { elem, .. } => *elem = id,
                Entry::FuncProto { ret, .. } => *ret = id,
                _ => {}
            }
        }
        for (i, &r) in self.param_refs.iter().enumerate() {
            self.out.params[i].1 = self.res(r);
        }
        for &(idx, spec) in &self.specs {
            let from = self.res(spec);
            let spec_name = entry_by_id(&self.out.entries, from).and_then(entry_name);
            if let (Some(name), Some(spec_name)) =
                (entry_name_mut(&mut self.out.entries[idx]), spec_name)
            {
                if name.is_empty() {
                    *name = spec_name;
                }
            }
        }
        for &(idx, base) in &self.enum_signed {
            let base = self.res(base);
            let signed = matches!(
                entry_by_id(&self.out.entries, base),
                Some(Entry::Base { encoding, .. })
                    if *encoding == gimli::DW_ATE_signed.0 || *encoding == gimli::DW_ATE_signed_char.0
            );
            if let Entry::Enum { signed: s, .. } = &mut self.out.entries[idx] {
                *s = signed;
            }
        }
        let raw_members = std::mem::take(&mut self.raw_members);
        let mut members = Vec::with_capacity(raw_members.len());
        // Member ranges index raw_members; static members stay in place with no type so that
        // ranges remain valid, and are skipped by the encoder.
        for m in &raw_members {
            let ty = self.res(m.ty);
            members.push(Member {
                name: m.name,
                ty,
                bit_offset: if m.is_static {
                    u32::MAX
                } else {
                    self.bit_offset(m, ty)
                },
                bitfield_size: m.bit_size as u32,
            });
        }
        self.out.members = members;
        self.out.offset_to_id = std::mem::take(&mut self.offset_to_id);
        Ok(())
    }

    /// pahole's `class_member__cache_byte_size` bit offset.
    fn bit_offset(&self, m: &RawMember<'a>, ty: u32) -> u32 {
        if let Some(dbo) = m.data_bit_offset {
            return dbo as u32;
        }
        let byte_offset = m.byte_offset;
        if m.bit_size == 0 {
            return (byte_offset * 8) as u32;
        }
        let byte_size = if m.byte_size != 0 {
            m.byte_size
        } else {
            self.storage_bytes(ty)
        };
        if byte_size == 0 {
            return (byte_offset * 8) as u32;
        }
        let bit_size = byte_size * 8;
        let in_unit = if self.cu.little_endian {
            bit_size as i64 - m.dw_bit_offset as i64 - m.bit_size as i64
        } else {
            m.dw_bit_offset as i64
        };
        (byte_offset as i64 * 8 + in_unit) as u32
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

fn drain_into<T>(scratch: &mut Vec<T>, start: usize, out: &mut Vec<T>) -> Range<u32> {
    let first = out.len() as u32;
    out.extend(scratch.drain(start..));
    first..out.len() as u32
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

fn udata(v: AttributeValue<R<'_>>) -> Option<u64> {
    Some(match v {
        AttributeValue::Data1(x) => x as u64,
        AttributeValue::Data2(x) => x as u64,
        AttributeValue::Data4(x) => x as u64,
        AttributeValue::Data8(x) => x,
        AttributeValue::Udata(x) => x,
        AttributeValue::Sdata(x) => x as u64,
        AttributeValue::Flag(f) => f as u64,
        _ => return None,
    })
}

fn flag(v: AttributeValue<R<'_>>) -> bool {
    udata(v).is_some_and(|x| x != 0)
}

/// `DW_AT_data_member_location`: a constant, or a `DW_OP_plus_uconst`/`DW_OP_constu` block.
fn member_location(v: AttributeValue<R<'_>>) -> u64 {
    match v {
        AttributeValue::Exprloc(gimli::Expression(e)) | AttributeValue::Block(e) => {
            let bytes = e.slice();
            match bytes.first() {
                Some(&op) if op == gimli::DW_OP_plus_uconst.0 || op == gimli::DW_OP_constu.0 => {
                    let mut r = gimli::EndianSlice::new(&bytes[1..], gimli::LittleEndian);
                    gimli::Reader::read_uleb128(&mut r).unwrap_or(0)
                }
                _ => 0,
            }
        }
        v => udata(v).unwrap_or(0),
    }
}
