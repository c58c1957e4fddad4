//! Decl tags of functions and parameters (`features.decl_tag`): `DW_TAG_LLVM_annotation` and
//! `DW_TAG_GNU_annotation` children, and GCC 16's `DW_AT_GNU_annotation` chains, in pahole's
//! list order; only `btf_decl_tag` annotations are kept.

use gimli::EntriesRaw;

use super::Decoder;
use crate::dwarf::types::{Annot, DecodeError};
use crate::dwarf::units::R;
use crate::dwarf::{DW_AT_GNU_ANNOTATION, DW_TAG_GNU_ANNOTATION, DW_TAG_LLVM_ANNOTATION};

/// The attributes read from an annotation DIE.
struct AnnotAttrs<'a> {
    name: Option<&'a [u8]>,
    value: &'a [u8],
    next: Option<u32>,
}

impl<'a, 'd> Decoder<'a, 'd> {
    /// An annotation DIE whose abbreviation has just been read: its decl tag, for
    /// `component` (-1: the function), then past its children.
    pub(super) fn read_annotation(
        &mut self,
        raw: &mut EntriesRaw<'d, R<'a>>,
        abbrev: &gimli::Abbreviation,
        off: u32,
        component: i32,
    ) -> Result<(), DecodeError> {
        let a = self.read_annot_attrs(raw, abbrev, off)?;
        self.add_annotation(&a, component);
        if abbrev.has_children() {
            self.skip_children(raw, off)?;
        }
        Ok(())
    }

    fn read_annot_attrs(
        &mut self,
        raw: &mut EntriesRaw<'d, R<'a>>,
        abbrev: &gimli::Abbreviation,
        off: u32,
    ) -> Result<AnnotAttrs<'a>, DecodeError> {
        self.with_attrs(|this, attrs| {
            raw.read_attributes(abbrev.attributes(), attrs)
                .map_err(this.gimli_err(off))?;
            this.annot_attrs(attrs, off)
        })
    }

    fn annot_attrs(
        &self,
        attrs: &[gimli::Attribute<R<'a>>],
        off: u32,
    ) -> Result<AnnotAttrs<'a>, DecodeError> {
        let mut a = AnnotAttrs {
            name: None,
            value: b"",
            next: None,
        };
        for attr in attrs {
            match attr.name() {
                gimli::DW_AT_name => a.name = self.string(attr.raw_value()),
                gimli::DW_AT_const_value => a.value = self.string(attr.raw_value()).unwrap_or(b""),
                DW_AT_GNU_ANNOTATION => {
                    a.next = self.unit_ref(attr.raw_value(), off, "DW_AT_GNU_annotation")?
                }
                _ => {}
            }
        }
        Ok(a)
    }

    /// `add_tag_annotation`: only `btf_decl_tag` annotations are kept.
    fn add_annotation(&mut self, a: &AnnotAttrs<'a>, component: i32) {
        if a.name == Some(b"btf_decl_tag".as_slice()) {
            self.annots.push(Annot {
                value: a.value,
                component,
            });
        }
    }

    /// `add_child_llvm_annotations` of a parameter: its annotation children, in order.
    pub(super) fn read_annotation_children(
        &mut self,
        raw: &mut EntriesRaw<'d, R<'a>>,
        component: i32,
    ) -> Result<(), DecodeError> {
        loop {
            let child = raw.next_offset().0 as u32;
            let Some(abbrev) = raw.read_abbreviation().map_err(self.gimli_err(child))? else {
                return Ok(());
            };
            let tag = abbrev.tag();
            if self.features.decl_tag
                && (tag == DW_TAG_LLVM_ANNOTATION || tag == DW_TAG_GNU_ANNOTATION)
            {
                self.read_annotation(raw, abbrev, child, component)?;
            } else {
                self.skip_entry(raw, abbrev, child)?;
            }
        }
    }

    /// `add_gnu_annotation_chain`: follows `DW_AT_GNU_annotation` through
    /// `DW_TAG_GNU_annotation` DIEs.
    pub(super) fn gnu_chain(
        &mut self,
        mut next: Option<u32>,
        component: i32,
        off: u32,
    ) -> Result<(), DecodeError> {
        let mut hops = 0;
        while let Some(at) = next {
            hops += 1;
            if hops > 1024 {
                return Err(self.err(off, "DW_AT_GNU_annotation chain does not end"));
            }
            let a = self.with_attrs(|this, attrs| match this.read_die(at, attrs)? {
                Some(DW_TAG_GNU_ANNOTATION) => this.annot_attrs(attrs, at).map(Some),
                _ => Ok(None),
            })?;
            let Some(a) = a else {
                return Ok(());
            };
            self.add_annotation(&a, component);
            next = a.next;
        }
        Ok(())
    }
}
