//! The types walker's side of cross-unit references (`foreign.rs`): importing the DIEs of
//! other units a CU references, walking each imported subtree in its own unit, and turning
//! references into local reference values.

use std::sync::Arc;

use gimli::{AttributeValue, UnitOffset};
use rustc_hash::FxHashMap;

use super::attrs::is_read;
use super::model::{CuTypes, DecodeError};
use super::walker::Walker;
use crate::dwarf::die_starts::BadRef;
use crate::dwarf::dies::{AbbrevPlans, DieCursor};
use crate::dwarf::foreign::{
    describe, die_key, foreign_target, in_sup, section_of, DieKey, Target, IMPORTED,
};
use crate::dwarf::units::{Cu, R};

impl<'a> CuTypes<'a> {
    /// The local reference value of a reference that leaves the unit (`DW_FORM_ref_addr`,
    /// `DW_FORM_ref_sig8`, `DW_FORM_GNU_ref_alt`), if its DIE was imported: the decoder
    /// imports every type and abstract origin the CU's functions and variables reference.
    pub fn imported(&self, v: &AttributeValue<R<'_>>) -> Option<u32> {
        self.imports.lookup_value(v)
    }

    /// The unit of an imported DIE.
    pub fn unit_of_import(&self, local: u32) -> Option<&Cu<'a>> {
        let key = self.imports.key(local)?;
        let (offset, _) = describe(key);
        self.foreign_units.iter().map(|u| &**u).find(|u| {
            section_of(die_key(&u.header, u.sup, u.offset)) == section_of(key)
                && u.range().contains(&(offset as usize))
        })
    }

    /// The section offset of the DIE with local reference value `local` of a CU whose unit
    /// starts at `die_base`, for messages.
    pub fn die_offset(&self, local: u32, die_base: u64) -> u64 {
        match self.imports.key(local) {
            Some(key) if local & IMPORTED != 0 => describe(key).0,
            _ => die_base + u64::from(local),
        }
    }
}

impl<'a> Walker<'a, '_> {
    /// The unit being walked.
    #[inline]
    pub(super) fn unit(&self) -> &Cu<'a> {
        self.foreign.as_deref().unwrap_or(self.cu)
    }

    /// Walks every imported DIE's subtree (imports can import more), each in its own unit.
    pub(super) fn import_foreign(&mut self) -> Result<(), DecodeError> {
        // The abbreviation plans of each unit walked, by its address (`foreign_units` holds
        // the units until the end).
        let mut plans: FxHashMap<*const Cu<'a>, AbbrevPlans> = FxHashMap::default();
        let mut next = 0;
        while let Some(i) = self.out.imports.next_unwalked(next) {
            next = i + 1;
            let key = self.out.imports.key_at(i);
            let unit = self.foreign_unit(key)?;
            let start = UnitOffset((describe(key).0 - unit.offset as u64) as usize);
            self.foreign = Some(unit.clone());
            let dies = DieCursor::new(&unit.header, &unit.abbrevs, Some(start))?;
            let unit_plans = plans
                .entry(Arc::as_ptr(&unit))
                .or_insert_with(|| AbbrevPlans::new(is_read));
            self.walk_entries(dies, true, unit_plans)?;
        }
        self.foreign = None;
        self.out.foreign_units = self.foreign_units.drain().map(|(_, u)| u).collect();
        Ok(())
    }

    /// The unit holding the imported DIE `key`, read once per CU.
    pub(super) fn foreign_unit(&mut self, key: DieKey) -> Result<Arc<Cu<'a>>, DecodeError> {
        let (offset, section) = describe(key);
        let Some(header) = self.units.unit_of(key) else {
            return Err(DecodeError {
                die_offset: offset,
                cause: format!("a reference leads to {section}+{offset:#x}, which no unit holds")
                    .into(),
            });
        };
        let sup = in_sup(key);
        let unit_key = die_key(&header, sup, header.offset().0);
        if let Some(unit) = self.foreign_units.get(&unit_key) {
            return Ok(unit.clone());
        }
        let unit = Arc::new(Cu::new_in(self.dwarf, header, self.cu.little_endian, sup)?);
        self.foreign_units.insert(unit_key, unit.clone());
        Ok(unit)
    }

    /// Imports the `DW_AT_type` of a DIE the type model does not read otherwise.
    /// With `origins` (a subprogram or parameter), its abstract origin as well (gcc LTO's
    /// concrete functions name their early-debug DIEs in other units).
    pub(super) fn import_types_of(
        &mut self,
        attrs: &[gimli::Attribute<R<'a>>],
        offset: u32,
        origins: bool,
    ) -> Result<(), DecodeError> {
        for attr in attrs {
            let wanted = match attr.name() {
                gimli::DW_AT_type => true,
                gimli::DW_AT_abstract_origin => origins,
                _ => false,
            };
            if wanted {
                self.unit_ref(attr.value(), offset)?;
            }
        }
        Ok(())
    }

    /// `DW_TAG_imported_unit`: the partial unit it names is part of this one, so all of its
    /// types are imported, referenced or not (as they were before dwz moved them there).
    pub(super) fn import_unit(
        &mut self,
        attrs: &[gimli::Attribute<R<'a>>],
        offset: u32,
    ) -> Result<(), DecodeError> {
        for attr in attrs {
            if attr.name() == gimli::DW_AT_import {
                self.unit_ref(attr.value(), offset)?;
            }
        }
        Ok(())
    }

    /// The local reference value of the DIE at `unit_offset` of the unit being walked, for
    /// a reference held by the DIE at `referrer`. A reference past the end of its unit
    /// (malformed DWARF) is an error: it leads to no type (void, for pahole), and a member,
    /// variable or parameter of type void is BTF the kernel rejects.
    #[inline]
    pub(super) fn local_of_unit_offset(
        &mut self,
        unit_offset: usize,
        referrer: u32,
    ) -> Result<u32, DecodeError> {
        let unit = self.unit();
        if unit_offset >= unit.header.length_including_self() {
            return Err(self.err(
                referrer,
                BadRef::PastUnit.describe("a reference", unit_offset),
            ));
        }
        match &self.foreign {
            None => Ok(unit_offset as u32),
            Some(unit) => {
                let key = die_key(&unit.header, unit.sup, unit.offset + unit_offset);
                self.import(key)
            }
        }
    }

    /// The local reference value of DIE `key` of another unit, imported if it is not yet.
    pub(super) fn import(&mut self, key: DieKey) -> Result<u32, DecodeError> {
        self.out.imports.local(key).ok_or_else(|| DecodeError {
            die_offset: describe(key).0,
            cause: "too many DIEs of other units are referenced from one CU".into(),
        })
    }

    /// A reference, as a local reference value: the unit offset of a DIE of the CU, or an
    /// import of a DIE of another unit.
    #[inline]
    pub(super) fn unit_ref(
        &mut self,
        v: AttributeValue<R<'a>>,
        offset: u32,
    ) -> Result<u32, DecodeError> {
        match v {
            AttributeValue::UnitRef(UnitOffset(o)) => self.local_of_unit_offset(o, offset),
            AttributeValue::DebugInfoRef(o) if !self.unit().sup && self.cu.holds(o) => {
                Ok((o.0 - self.cu.offset) as u32)
            }
            v => match foreign_target(self.units, &v, self.unit().sup) {
                Some(Target::Found(key)) => {
                    let local = self.import(key)?;
                    self.out.imports.note_value(&v, local);
                    Ok(local)
                }
                Some(Target::UnknownSignature(sig)) => Err(self.err(
                    offset,
                    format!("DW_FORM_ref_sig8 {sig:#018x}: no type unit has this signature"),
                )),
                None => Err(self.err(offset, "DW_AT_type is not a reference")),
            },
        }
    }
}
