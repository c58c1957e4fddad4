//! The functions decoder's DIE references: a reference as a local reference value (a DIE of
//! the CU, or one of another unit the types decoder imported), and the abstract origins in
//! other units (gcc LTO's early-debug CUs), read as origins of the CU's functions.

use gimli::{AttributeValue, UnitOffset};

use super::Decoder;
use crate::dwarf::die_starts::BadRef;
use crate::dwarf::foreign::{describe, die_key, IMPORTED};
use crate::dwarf::types::DecodeError;
use crate::dwarf::units::R;

impl<'a, 'd> Decoder<'a, 'd> {
    /// A DIE reference as a local reference value: a DIE of this CU, or one of another unit
    /// the types decoder imported; other references out of the CU are errors, other forms
    /// resolve to nothing (pahole's failed `dwarf_formref_die`).
    pub(super) fn unit_ref(
        &self,
        v: AttributeValue<R<'a>>,
        off: u32,
        what: &str,
    ) -> Result<Option<u32>, DecodeError> {
        if let Some(local) = self.types.imported(&v) {
            return Ok(Some(local));
        }
        let local = |o: usize| {
            self.local(o)
                .map_err(|bad| self.err(off, bad.describe(what, o)))
        };
        match v {
            AttributeValue::UnitRef(UnitOffset(o)) => local(o),
            AttributeValue::DebugInfoRef(o) if self.cu.holds(o) => local(o.0 - self.cu.offset),
            AttributeValue::DebugInfoRef(_) | AttributeValue::DebugTypesRef(_) => Err(self.err(
                off,
                format!("{what}: a reference into another unit that this unit does not import"),
            )),
            _ => Ok(None),
        }
    }

    /// The local reference value of the DIE at `unit_offset` of the unit being read: a DIE
    /// the types walker met in the CU, or the import of a DIE of another unit (none when the
    /// walker did not import it).
    fn local(&self, unit_offset: usize) -> Result<Option<u32>, BadRef> {
        if !self.in_foreign_unit {
            self.types.die_starts.check(unit_offset)?;
            return Ok(Some(unit_offset as u32));
        }
        if unit_offset >= self.cu.header.length_including_self() {
            return Err(BadRef::PastUnit);
        }
        let key = die_key(&self.cu.header, self.cu.sup, self.cu.offset + unit_offset);
        Ok(self.types.imports.lookup(key))
    }

    /// Reads the abstract origins in other units (gcc LTO: the early-debug CUs) of the CU's
    /// functions, as pahole's merged CU has them: they are origins for names, return types,
    /// parameters and location facts, and are not functions of this CU themselves.
    pub(super) fn read_foreign_origins(&mut self) -> Result<(), DecodeError> {
        let mut origins: Vec<u32> = self
            .funcs
            .iter()
            .filter_map(|f| f.origin)
            .filter(|&o| o & IMPORTED != 0)
            .collect();
        origins.sort_unstable();
        origins.dedup();
        let main = self.cu;
        for local in origins {
            let Some(unit) = self.types.unit_of_import(local) else {
                continue;
            };
            let Some(key) = self.types.imports.key(local) else {
                continue;
            };
            let unit_offset = describe(key).0 as usize - unit.offset;
            self.cu = unit;
            self.in_foreign_unit = true;
            let parms_start = self.parms.len();
            let read = self.read_function(unit_offset as u32);
            self.cu = main;
            self.in_foreign_unit = false;
            read?;
            let f = self.funcs.last_mut().expect("read_function pushes");
            f.die = local;
            f.ret = f.ret_type.map_or(0, |t| self.types.type_id_of(t));
            for p in &mut self.parms[parms_start..] {
                let key = die_key(&unit.header, unit.sup, unit.offset + p.die as usize);
                p.die = self.types.imports.lookup(key).unwrap_or(u32::MAX);
            }
        }
        Ok(())
    }
}
