//! The DIE walk of the types decoder: one DFS over a CU (and over each subtree it imports)
//! with an explicit frame stack, appending a type DIE's entry after its children, as pahole's
//! `dwarf_loader` does. References are left raw for `resolve.rs`.

use std::ops::Range;

use gimli::DwTag;
use rustc_hash::FxHashMap;

use super::attrs::{is_read, Attrs};
use super::model::{Annot, CuTypes, DecodeError, Entry};
use super::walker::{Buffers, Frame, FrameKind, RawMember, RawRef, Walker, RESOLVED, VOID};
use crate::btf::Kind;
use crate::config::Features;
use crate::dwarf::dies::{AbbrevPlans, DieCursor};
use crate::dwarf::error::DwarfCause;
use crate::dwarf::foreign::UnitIndex;
use crate::dwarf::units::{Cu, R};
use crate::dwarf::{DW_TAG_GNU_ANNOTATION, DW_TAG_LLVM_ANNOTATION};

impl<'a, 'd> Walker<'a, 'd> {
    /// A walker of `cu`'s DIEs with nothing decoded yet, filling `scratch`'s buffers.
    pub(super) fn new(
        dwarf: &'d gimli::Dwarf<R<'a>>,
        units: &'d UnitIndex<'a>,
        cu: &'d Cu<'a>,
        features: &'d Features,
        scratch: &mut TypesScratch<'a>,
    ) -> Self {
        let mut out = std::mem::take(&mut scratch.out);
        out.die_starts.reset(cu.header.length_including_self());
        Walker {
            cu,
            foreign: None,
            foreign_units: FxHashMap::default(),
            units,
            dwarf,
            features,
            offset_to_id: std::mem::take(&mut out.offset_to_id),
            out,
            buf: std::mem::take(&mut scratch.buf),
        }
    }

    /// The result, giving the walk's buffers back to `scratch`.
    pub(super) fn finish(mut self, scratch: &mut TypesScratch<'a>) -> CuTypes<'a> {
        self.buf.clear();
        scratch.buf = self.buf;
        self.out
    }
}

/// A worker's buffers for decoding CUs one after another: each CU's walk fills them and
/// they keep their capacity, so that a CU does not grow them again from nothing (their
/// growth, copies and fresh pages, was a tenth of the decoding's instructions).
#[derive(Default)]
pub struct TypesScratch<'a> {
    /// An emptied result of an earlier CU.
    out: CuTypes<'a>,
    buf: Buffers<'a>,
}

impl<'a> TypesScratch<'a> {
    /// Keeps `types`' vectors, emptied, for the next CU.
    pub fn recycle(&mut self, types: CuTypes<'a>) {
        self.out = types.emptied();
    }
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

impl<'a> Walker<'a, '_> {
    /// Walks the CU's DIEs, in DIE order.
    pub(super) fn walk(&mut self) -> Result<(), DecodeError> {
        let cu = self.cu;
        let dies = DieCursor::new(&cu.header, &cu.abbrevs, None)?;
        self.walk_entries(dies, false, &mut AbbrevPlans::new(is_read))
    }

    /// Walks the CU (`subtree` false) or the subtree of one imported DIE (true), whose DIEs
    /// are imported as they are met so that references to them resolve. `plans` are those of
    /// the walked unit's abbreviations.
    pub(super) fn walk_entries(
        &mut self,
        mut dies: DieCursor<'a, '_>,
        subtree: bool,
        plans: &mut AbbrevPlans,
    ) -> Result<(), DecodeError> {
        let mut attrs_buf = Vec::new();
        let mut first = true;
        let mut skip_below: Option<isize> = None;
        while !dies.is_empty() {
            let depth = dies.next_depth();
            if subtree && !first && depth <= 0 {
                break;
            }
            first = false;
            let unit_offset = dies.next_offset().0;
            let Some(abbrev) = dies.read_abbreviation()? else {
                continue;
            };
            if !subtree {
                self.out.die_starts.insert(unit_offset);
            }
            let plan = plans.plan(abbrev, dies.header());
            if skip_below.is_some_and(|d| depth > d) {
                dies.skip(plans, plan)?;
                continue;
            }
            skip_below = None;
            // The CU's own DIEs are their unit offsets; an imported subtree's are imports (a
            // DIE the cursor reached lies inside its unit: no referrer to blame).
            let offset = if subtree {
                self.local_of_unit_offset(unit_offset, 0)?
            } else {
                unit_offset as u32
            };
            if subtree && !self.out.imports.mark_walked(offset) {
                // Walked already, as an import or inside an earlier one.
                dies.skip(plans, plan)?;
                if abbrev.has_children() {
                    skip_below = Some(depth);
                }
                continue;
            }
            self.close_frames(depth)?;
            let tag = abbrev.tag();
            let in_proto = matches!(
                self.buf.frames.last().map(|f| &f.kind),
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
                dies.read_all(abbrev, &mut attrs_buf)?;
                self.import_unit(&attrs_buf, offset)?;
                if abbrev.has_children() {
                    self.buf
                        .frames
                        .push(Frame::bare(depth, offset, FrameKind::Other));
                }
                continue;
            }
            let proto_param = in_proto && tag == gimli::DW_TAG_formal_parameter;
            if !(is_interesting(tag) || proto_param) {
                let function_part = matches!(
                    tag,
                    gimli::DW_TAG_subprogram | gimli::DW_TAG_formal_parameter
                );
                if (subtree && function_part) || (!subtree && plan.leaves_unit) {
                    // Functions and variables read these later: import them now.
                    dies.read_all(abbrev, &mut attrs_buf)?;
                    self.import_types_of(&attrs_buf, offset, function_part)?;
                } else {
                    dies.skip(plans, plan)?;
                }
                if abbrev.has_children() {
                    self.buf
                        .frames
                        .push(Frame::bare(depth, offset, FrameKind::Other));
                }
                continue;
            }
            let attrs = self.read_attrs(&mut dies, plans, plan, offset)?;
            self.on_die(tag, abbrev.has_children(), depth, offset, attrs)?;
        }
        // Every frame, even one opened at a negative depth (more null entries than parents,
        // in malformed DWARF), gets its entry.
        self.close_frames(isize::MIN)?;
        Ok(())
    }

    /// An error about the DIE with local reference value `offset`.
    /// `value` as BTF's 32 bits hold it, or an error naming the DIE at `offset` and `what`
    /// the value is: wrapped, it would give BTF the kernel rejects or, worse, accepts with
    /// the wrong layout.
    pub(super) fn fits(&self, offset: u32, value: u64, what: &str) -> Result<u32, DecodeError> {
        u32::try_from(value).map_err(|_| {
            self.err(
                offset,
                format!("{what} ({value}) does not fit in BTF's 32 bits"),
            )
        })
    }

    pub(super) fn err(&self, offset: u32, reason: impl Into<String>) -> DecodeError {
        DecodeError {
            die_offset: self.out.die_offset(offset, self.cu.offset as u64),
            cause: DwarfCause::Malformed(reason.into()),
        }
    }

    fn close_frames(&mut self, depth: isize) -> Result<(), DecodeError> {
        while self.buf.frames.last().is_some_and(|f| f.depth >= depth) {
            let f = self.buf.frames.pop().expect("checked non-empty");
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
        self.buf.raw_refs.push(raw_ref);
        let id = self.out.entries.len() as u32;
        self.offset_to_id.insert(offset, id);
        id
    }

    /// pahole 1.32's multi-dimensional arrays: `T a[2][3][4]` is one ARRAY per dimension,
    /// `ARRAY(ARRAY(ARRAY(T, 4), 3), 2)`. The inner ones are added first, innermost (the last
    /// subrange) first, each the element of the next, so that the DIE's own entry, added after
    /// them, is the outermost. Returns the raw reference of the outermost one's element.
    fn add_inner_dimensions(&mut self, offset: u32, dims_start: usize, elem: RawRef) -> RawRef {
        let mut elem = elem;
        for k in (dims_start + 1..self.buf.scratch_dims.len()).rev() {
            let nelems = self.buf.scratch_dims[k];
            let id = self.add_entry(offset, Entry::Array { elem: 0, nelems }, elem);
            elem = id | RESOLVED;
        }
        elem
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
                    &mut self.buf.scratch_members,
                    members_start,
                    &mut self.buf.raw_members,
                );
                *annots = drain_into(
                    &mut self.buf.scratch_annots,
                    annots_start,
                    &mut self.out.annots,
                );
            }
            (Entry::Typedef { annots, .. }, FrameKind::Typedef { annots_start }) => {
                *annots = drain_into(
                    &mut self.buf.scratch_annots,
                    annots_start,
                    &mut self.out.annots,
                );
            }
            (Entry::Enum { values, .. }, FrameKind::Enum { values_start }) => {
                *values = drain_into(
                    &mut self.buf.scratch_values,
                    values_start,
                    &mut self.out.enumerators,
                );
            }
            (Entry::Array { nelems, .. }, FrameKind::Array { dims_start }) => {
                raw_ref = self.add_inner_dimensions(offset, dims_start, ty);
                *nelems = self.buf.scratch_dims.get(dims_start).copied().unwrap_or(1);
                self.buf.scratch_dims.truncate(dims_start);
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
                for (name, r) in self.buf.scratch_params.drain(params_start..) {
                    self.out.params.push((name, 0));
                    self.buf.param_refs.push(r);
                }
                *params = start..self.out.params.len() as u32;
                *varargs = v;
            }
            (Entry::Modifier { .. }, FrameKind::Pointer { tags_start }) => {
                // PTR → tagN → … → tag1 → pointee (tags were added in child order).
                let tags: Vec<u32> = self.buf.scratch_tags.drain(tags_start..).collect();
                if let Some(&last) = tags.last() {
                    let mut pointee = ty;
                    for &tag_id in &tags {
                        self.buf.raw_refs[tag_id as usize - 1] = pointee;
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
            self.buf.specs.push((id as usize - 1, spec));
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
                self.buf
                    .frames
                    .push(Frame::bare(depth, offset, FrameKind::Other));
            }
            return Ok(());
        }
        let (kind, pending): (FrameKind, Option<Entry<'a>>) = match tag {
            DW_TAG_base_type => (
                FrameKind::Other,
                Some(Entry::Base {
                    name: a.name,
                    // Past 32 bits is past 16 bytes: sanitized as pahole sanitizes any
                    // size BTF has no integer for.
                    byte_size: u32::try_from(a.byte_size).unwrap_or(u32::MAX),
                    encoding: a.encoding,
                }),
            ),
            DW_TAG_pointer_type => (
                FrameKind::Pointer {
                    tags_start: self.buf.scratch_tags.len(),
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
                    annots_start: self.buf.scratch_annots.len(),
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
                        members_start: self.buf.scratch_members.len(),
                        annots_start: self.buf.scratch_annots.len(),
                        member_idx: 0,
                    },
                    Some(Entry::Composite {
                        union,
                        name: a.name,
                        size: self.fits(offset, a.byte_size, "its size in bytes")?,
                        declaration: a.declaration,
                        members: 0..0,
                        annots: 0..0,
                    }),
                )
            }
            DW_TAG_enumeration_type => {
                if let Some(base) = a.ty {
                    self.buf.enum_signed.push((self.out.entries.len(), base));
                }
                let byte_size = if a.byte_size == 0 {
                    4
                } else {
                    self.fits(offset, a.byte_size, "its size in bytes")?
                };
                (
                    FrameKind::Enum {
                        values_start: self.buf.scratch_values.len(),
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
                    dims_start: self.buf.scratch_dims.len(),
                },
                Some(Entry::Array { elem: 0, nelems: 0 }),
            ),
            DW_TAG_subroutine_type => (
                FrameKind::FuncProto {
                    params_start: self.buf.scratch_params.len(),
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
                let kind = self.on_member(offset, &a);
                (kind, None)
            }
            DW_TAG_enumerator => {
                if let Some(FrameKind::Enum { .. }) = self.buf.frames.last().map(|f| &f.kind) {
                    self.buf.scratch_values.push((a.name, a.const_value));
                }
                (FrameKind::Other, None)
            }
            DW_TAG_subrange_type => {
                if let Some(FrameKind::Array { .. }) = self.buf.frames.last().map(|f| &f.kind) {
                    let n = match (a.upper_bound, a.count) {
                        // An upper bound of -1 (gcc's zero-length arrays) counts 0.
                        (Some(ub), _) => ub.wrapping_add(1),
                        (None, Some(c)) => c,
                        _ => 0,
                    };
                    let n = self.fits(offset, n, "the element count of its dimension")?;
                    self.buf.scratch_dims.push(n);
                }
                (FrameKind::Other, None)
            }
            DW_TAG_formal_parameter => {
                self.buf.scratch_params.push((a.name, ty));
                (FrameKind::Other, None)
            }
            DW_TAG_unspecified_parameters => {
                if let Some(FrameKind::FuncProto { varargs, .. }) =
                    self.buf.frames.last_mut().map(|f| &mut f.kind)
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
            Some(p) if has_children => self.buf.frames.push(Frame {
                pending: Some(p),
                ty,
                spec: a.specification,
                ..Frame::bare(depth, offset, kind)
            }),
            Some(p) => self.finish_entry(offset, kind, p, ty, a.specification),
            None if has_children => self.buf.frames.push(Frame::bare(depth, offset, kind)),
            None => {}
        }
        Ok(())
    }

    /// A `DW_TAG_member`: recorded on the enclosing composite; returns the frame kind for its
    /// children (annotations, which become decl tags with the member's index).
    fn on_member(&mut self, offset: u32, a: &Attrs<'a>) -> FrameKind {
        let Some(Frame {
            kind: FrameKind::Composite {
                union, member_idx, ..
            },
            ..
        }) = self.buf.frames.last_mut()
        else {
            return FrameKind::Other;
        };
        let component = *member_idx;
        *member_idx += 1;
        let is_static = a.data_bit_offset.is_none() && a.member_location.is_none() && !*union;
        self.buf.scratch_members.push(RawMember {
            name: a.name,
            ty: a.ty.unwrap_or(VOID),
            byte_offset: a.member_location.unwrap_or(0),
            data_bit_offset: a.data_bit_offset,
            dw_bit_offset: a.bit_offset,
            bit_size: a.bit_size,
            byte_size: a.byte_size,
            is_static,
            die: offset,
        });
        FrameKind::Member { component }
    }

    /// A `DW_TAG_LLVM_annotation` child: a type tag of a pointer, or a decl tag of a struct,
    /// union, member or typedef.
    fn on_annotation(&mut self, offset: u32, a: &Attrs<'a>) {
        let parent = self.buf.frames.last().map(|f| &f.kind);
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
                self.buf.scratch_tags.push(id);
            }
            (b"btf_decl_tag", Some(parent)) if self.features.decl_tag => {
                let component = match parent {
                    FrameKind::Composite { .. } | FrameKind::Typedef { .. } => -1,
                    FrameKind::Member { component } => *component,
                    _ => return,
                };
                self.buf.scratch_annots.push(Annot {
                    value: a.const_str,
                    component,
                });
            }
            _ => {}
        }
    }
    /// Records a DIE that takes no slot and stands for the type `target` refers to.
    fn add_alias(&mut self, offset: u32, target: RawRef) {
        self.buf.aliases.insert(offset, target);
        self.buf.alias_order.push(offset);
    }
}

fn drain_into<T>(scratch: &mut Vec<T>, start: usize, out: &mut Vec<T>) -> Range<u32> {
    let first = out.len() as u32;
    out.extend(scratch.drain(start..));
    first..out.len() as u32
}
