//! Reading one subprogram: its attributes and those of its direct children (parameters,
//! `DW_TAG_unspecified_parameters`, annotations), with `EntriesRaw` and no `gimli::Unit`;
//! subtrees below the children are skipped, jumping with `DW_AT_sibling` where GCC gives one.

use gimli::{AttributeValue, DwTag, EntriesRaw, UnitOffset};

use super::{Decoder, Func, Parm, DW_CC_NOCALL};
use crate::dwarf::locations::Loc;
use crate::dwarf::types::DecodeError;
use crate::dwarf::units::R;
use crate::dwarf::{
    name_too_long, DW_AT_GNU_ANNOTATION, DW_TAG_GNU_ANNOTATION, DW_TAG_LLVM_ANNOTATION,
};
use crate::input::arch::UNKNOWN_REG;

/// The attributes read from a parameter DIE.
struct ParmAttrs<'a> {
    name: Option<&'a [u8]>,
    own_type: Option<u32>,
    has_origin_attr: bool,
    origin: Option<u32>,
    loc: Loc<'a>,
    has_const_value: bool,
    gnu_annot: Option<u32>,
}

impl<'a, 'd> Decoder<'a, 'd> {
    /// A string attribute's value (`None` when it cannot be read).
    pub(super) fn string(&self, v: AttributeValue<R<'a>>) -> Option<&'a [u8]> {
        self.cu.string(self.dwarf, v).ok()
    }

    /// The `DW_AT_name` of the DIE at `off` (none when it is no string); one longer than BTF
    /// can hold is an error.
    fn name(&self, v: AttributeValue<R<'a>>, off: u32) -> Result<Option<&'a [u8]>, DecodeError> {
        let name = self.string(v);
        match name.and_then(name_too_long) {
            Some(why) => Err(self.err(off, why)),
            None => Ok(name),
        }
    }

    /// The DIEs of the unit being read from the one at unit offset `off` on.
    fn entries_at(&self, off: u32) -> Result<EntriesRaw<'d, R<'a>>, DecodeError> {
        let cu = self.cu;
        cu.header
            .entries_raw(&cu.abbrevs, Some(UnitOffset(off as usize)))
            .map_err(self.gimli_err(off))
    }

    /// Reads one subprogram and its direct children.
    pub(super) fn read_function(&mut self, off: u32) -> Result<(), DecodeError> {
        let e = self.gimli_err(off);
        let mut raw = self.entries_at(off)?;
        let Some(abbrev) = raw.read_abbreviation().map_err(&e)? else {
            return Err(self.err(off, "expected a DW_TAG_subprogram, found a null entry"));
        };
        if abbrev.tag() != gimli::DW_TAG_subprogram {
            return Err(self.err(
                off,
                format!("expected a DW_TAG_subprogram, found {}", abbrev.tag()),
            ));
        }
        let mut attrs = std::mem::take(&mut self.attrs);
        raw.read_attributes(abbrev.attributes(), &mut attrs)
            .map_err(&e)?;
        let mut f = Func {
            die: off,
            end: 0,
            name: None,
            declaration: false,
            external: false,
            inlined: false,
            has_origin_attr: false,
            origin: None,
            spec: None,
            addr: 0,
            ret_type: None,
            ret: 0,
            cc_nocall: false,
            unspec: false,
            parms: 0..0,
            annots: 0..0,
            reordered_parm: false,
            signature_changed: false,
            optimized_parms: false,
            unexpected_reg: false,
        };
        let mut gnu_annot = None;
        for attr in &attrs {
            match attr.name() {
                gimli::DW_AT_name => f.name = self.name(attr.raw_value(), off)?,
                gimli::DW_AT_declaration => f.declaration = true,
                gimli::DW_AT_external => f.external = true,
                gimli::DW_AT_inline => f.inlined = numeric(attr.raw_value()) != 0,
                gimli::DW_AT_abstract_origin => {
                    f.has_origin_attr = true;
                    f.origin = self.unit_ref(attr.raw_value(), off, "DW_AT_abstract_origin")?;
                }
                gimli::DW_AT_specification => {
                    f.spec = self.unit_ref(attr.raw_value(), off, "DW_AT_specification")?
                }
                gimli::DW_AT_low_pc => f.addr = self.address(attr.raw_value()),
                gimli::DW_AT_type => {
                    f.ret_type = self.unit_ref(attr.raw_value(), off, "DW_AT_type")?
                }
                gimli::DW_AT_calling_convention => {
                    f.cc_nocall = numeric(attr.raw_value()) == DW_CC_NOCALL
                }
                DW_AT_GNU_ANNOTATION => {
                    gnu_annot = self.unit_ref(attr.raw_value(), off, "DW_AT_GNU_annotation")?
                }
                _ => {}
            }
        }
        self.attrs = attrs;
        let parms_start = self.parms.len() as u32;
        let annots_start = self.annots.len() as u32;
        if abbrev.has_children() {
            self.read_children(&mut raw, &mut f)?;
        }
        if self.features.decl_tag {
            self.gnu_chain(gnu_annot, -1, off)?;
        }
        f.end = raw.next_offset().0 as u32;
        f.parms = parms_start..self.parms.len() as u32;
        f.annots = annots_start..self.annots.len() as u32;
        self.funcs.push(f);
        Ok(())
    }

    /// `die__process_function` for the direct children of a subprogram.
    fn read_children(
        &mut self,
        raw: &mut EntriesRaw<'d, R<'a>>,
        f: &mut Func<'a>,
    ) -> Result<(), DecodeError> {
        let mut param_idx: u8 = 0;
        loop {
            let child = raw.next_offset().0 as u32;
            let e = self.gimli_err(child);
            let Some(abbrev) = raw.read_abbreviation().map_err(&e)? else {
                return Ok(());
            };
            match abbrev.tag() {
                gimli::DW_TAG_formal_parameter => {
                    let pa = self.read_parm_attrs(raw, abbrev, child)?;
                    let idx = param_idx;
                    param_idx = param_idx.wrapping_add(1);
                    if abbrev.has_children() {
                        self.read_annotation_children(raw, i32::from(idx))?;
                    }
                    if self.features.decl_tag {
                        self.gnu_chain(pa.gnu_annot, i32::from(idx), child)?;
                    }
                    self.parms.push(Parm {
                        die: child,
                        name: pa.name,
                        idx,
                        own_type: pa.own_type,
                        has_origin_attr: pa.has_origin_attr,
                        origin: pa.origin,
                        loc: pa.loc,
                        ty: pa.own_type.map_or(0, |t| self.types.type_id_of(t)),
                        type_byte_size: 0,
                        passed_in_memory: false,
                        loc_reg: UNKNOWN_REG,
                        has_loc: !matches!(pa.loc, Loc::None),
                        has_const_value: pa.has_const_value,
                        loc_const_value: false,
                        loc_stack: false,
                        optimized: false,
                        unexpected_reg: false,
                        first_fields: 0,
                        second_fields: 0,
                        member: None,
                    });
                }
                gimli::DW_TAG_unspecified_parameters => {
                    f.unspec = true;
                    self.skip_entry(raw, abbrev, child)?;
                }
                DW_TAG_LLVM_ANNOTATION | DW_TAG_GNU_ANNOTATION if self.features.decl_tag => {
                    self.read_annotation(raw, abbrev, child, -1)?;
                }
                _ => self.skip_entry(raw, abbrev, child)?,
            }
        }
    }

    fn read_parm_attrs(
        &mut self,
        raw: &mut EntriesRaw<'d, R<'a>>,
        abbrev: &gimli::Abbreviation,
        off: u32,
    ) -> Result<ParmAttrs<'a>, DecodeError> {
        self.with_attrs(|this, attrs| {
            raw.read_attributes(abbrev.attributes(), attrs)
                .map_err(this.gimli_err(off))?;
            let mut pa = ParmAttrs {
                name: None,
                own_type: None,
                has_origin_attr: false,
                origin: None,
                loc: Loc::None,
                has_const_value: false,
                gnu_annot: None,
            };
            for attr in attrs.iter() {
                match attr.name() {
                    gimli::DW_AT_name => pa.name = this.name(attr.raw_value(), off)?,
                    gimli::DW_AT_type => {
                        pa.own_type = this.unit_ref(attr.raw_value(), off, "DW_AT_type")?
                    }
                    gimli::DW_AT_abstract_origin => {
                        pa.has_origin_attr = true;
                        pa.origin =
                            this.unit_ref(attr.raw_value(), off, "DW_AT_abstract_origin")?;
                    }
                    gimli::DW_AT_location => pa.loc = this.locs.classify(attr.raw_value()),
                    gimli::DW_AT_const_value => pa.has_const_value = true,
                    DW_AT_GNU_ANNOTATION => {
                        pa.gnu_annot =
                            this.unit_ref(attr.raw_value(), off, "DW_AT_GNU_annotation")?
                    }
                    _ => {}
                }
            }
            Ok(pa)
        })
    }

    /// `dwarf_lowpc`: an address, or an index into `.debug_addr`; 0 when it cannot be read.
    fn address(&self, v: AttributeValue<R<'a>>) -> u64 {
        match v {
            AttributeValue::Addr(a) => a,
            AttributeValue::DebugAddrIndex(i) => self
                .dwarf
                .debug_addr
                .get_address(self.cu.header.address_size(), self.cu.addr_base, i)
                .unwrap_or(0),
            _ => 0,
        }
    }

    /// Runs `f` with the reusable attribute buffer, taken out of `self` for the call and put
    /// back afterwards, whatever `f` returns.
    pub(super) fn with_attrs<T>(
        &mut self,
        f: impl FnOnce(&Self, &mut Vec<gimli::Attribute<R<'a>>>) -> T,
    ) -> T {
        let mut attrs = std::mem::take(&mut self.attrs);
        let r = f(self, &mut attrs);
        self.attrs = attrs;
        r
    }

    /// Reads the attributes of the DIE at `off` into `attrs`; its tag, `None` for a null entry.
    pub(super) fn read_die(
        &self,
        off: u32,
        attrs: &mut Vec<gimli::Attribute<R<'a>>>,
    ) -> Result<Option<DwTag>, DecodeError> {
        let e = self.gimli_err(off);
        let mut raw = self.entries_at(off)?;
        let Some(abbrev) = raw.read_abbreviation().map_err(&e)? else {
            attrs.clear();
            return Ok(None);
        };
        raw.read_attributes(abbrev.attributes(), attrs)
            .map_err(&e)?;
        Ok(Some(abbrev.tag()))
    }

    /// Skips a DIE whose abbreviation has been read: its attributes and its subtree.
    pub(super) fn skip_entry(
        &mut self,
        raw: &mut EntriesRaw<'d, R<'a>>,
        abbrev: &gimli::Abbreviation,
        off: u32,
    ) -> Result<(), DecodeError> {
        if !abbrev.has_children() {
            return raw
                .skip_attributes(abbrev.attributes())
                .map_err(self.gimli_err(off));
        }
        if self.jump_to_sibling(raw, abbrev, off)? {
            return Ok(());
        }
        self.skip_children(raw, off)
    }

    /// For a DIE with children whose abbreviation has just been read: reads its attributes
    /// and, when it has a usable `DW_AT_sibling` (GCC), moves `raw` there. Without one, the
    /// attributes are skipped and `raw` is left at the first child.
    fn jump_to_sibling(
        &mut self,
        raw: &mut EntriesRaw<'d, R<'a>>,
        abbrev: &gimli::Abbreviation,
        off: u32,
    ) -> Result<bool, DecodeError> {
        let e = self.gimli_err(off);
        if !abbrev
            .attributes()
            .iter()
            .any(|s| s.name() == gimli::DW_AT_sibling)
        {
            raw.skip_attributes(abbrev.attributes()).map_err(&e)?;
            return Ok(false);
        }
        let mut sibling = None;
        for spec in abbrev.attributes() {
            let attr = raw.read_attribute(*spec).map_err(&e)?;
            if attr.name() == gimli::DW_AT_sibling {
                if let AttributeValue::UnitRef(o) = attr.raw_value() {
                    sibling = Some(o);
                }
            }
        }
        match sibling {
            // Forward, and (in the CU's own unit, whose DIEs the types walker saw) to a DIE.
            Some(o)
                if o.0 > raw.next_offset().0
                    && (self.in_foreign_unit || self.types.die_starts.check(o.0).is_ok()) =>
            {
                let cu = self.cu;
                if let Ok(r) = cu.header.entries_raw(&cu.abbrevs, Some(o)) {
                    *raw = r;
                    return Ok(true);
                }
                Ok(false)
            }
            _ => Ok(false),
        }
    }

    /// With `raw` at the first child of a DIE: moves it past the null entry that ends the
    /// children, jumping over subtrees with `DW_AT_sibling` where there is one.
    pub(super) fn skip_children(
        &mut self,
        raw: &mut EntriesRaw<'d, R<'a>>,
        off: u32,
    ) -> Result<(), DecodeError> {
        let mut depth = 1usize;
        while depth > 0 {
            let at = raw.next_offset().0 as u32;
            let Some(abbrev) = raw.read_abbreviation().map_err(self.gimli_err(off))? else {
                depth -= 1;
                continue;
            };
            if !abbrev.has_children() {
                raw.skip_attributes(abbrev.attributes())
                    .map_err(self.gimli_err(at))?;
            } else if !self.jump_to_sibling(raw, abbrev, at)? {
                depth += 1;
            }
        }
        Ok(())
    }
}

/// pahole's `attr_numeric` for the constant and flag forms.
pub(super) fn numeric(v: AttributeValue<R<'_>>) -> u64 {
    match v {
        AttributeValue::Data1(x) => u64::from(x),
        AttributeValue::Data2(x) => u64::from(x),
        AttributeValue::Data4(x) => u64::from(x),
        AttributeValue::Data8(x) => x,
        AttributeValue::Udata(x) => x,
        AttributeValue::Sdata(x) => x as u64,
        AttributeValue::Flag(f) => u64::from(f),
        // DW_AT_inline and DW_AT_calling_convention come out of `raw_value` as data forms;
        // these are what `value` would turn them into.
        AttributeValue::Inline(i) => u64::from(i.0),
        AttributeValue::CallingConvention(c) => u64::from(c.0),
        _ => 0,
    }
}
