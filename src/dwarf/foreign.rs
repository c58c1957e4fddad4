//! References that leave their unit: `DW_FORM_ref_addr` into another unit of `.debug_info`
//! (clang LTO, which shares types between CUs; dwz's partial units), `DW_FORM_ref_sig8` into a
//! type unit (`.debug_types` of DWARF 4 `-fdebug-types-section`, DWARF 5 type units),
//! `DW_FORM_GNU_ref_alt` into the supplementary file of `dwz -m` (`.gnu_debugaltlink`), and
//! `DW_TAG_imported_unit`, which includes a partial unit's DIEs in the unit that names it.
//!
//! pahole merges every CU into one when it meets a cross-CU reference, which costs it the
//! memory of the whole program's DWARF at once. dwarf2btf keeps encoding one CU at a time: a
//! CU *imports* the DIEs it references outside itself. `types/` walks each imported DIE's
//! subtree as part of the CU and appends its types after the CU's own, so every chunk stays
//! self-contained, and the dedup merges the copies as it merges the copies of a header's
//! types between CUs. The resulting BTF has the same types as pahole's (or, where pahole
//! cannot read the input, as the same program built without type units), in another order.
//!
//! This file owns the two tables that make that possible: [`UnitIndex`], which finds the unit
//! holding a section offset or a type signature, and [`Imports`], one CU's imported DIEs.

use gimli::{AttributeValue, DebugTypeSignature, SectionId, UnitHeader};
use rustc_hash::FxHashMap;

use super::units::R;

/// A DIE anywhere in the input: its section offset, with the section in the top bits.
pub type DieKey = u64;

/// Tags `.debug_types` offsets in a [`DieKey`] (`.debug_info` offsets carry no tag).
const IN_DEBUG_TYPES: DieKey = 1 << 63;
/// Tags offsets in the supplementary file's `.debug_info`.
const IN_SUP: DieKey = 1 << 62;

/// The key of the DIE at section offset `offset` of the section holding `header`, in the
/// supplementary file when `sup`.
pub fn die_key(header: &UnitHeader<R<'_>>, sup: bool, offset: usize) -> DieKey {
    match (header.section(), sup) {
        (SectionId::DebugTypes, _) => IN_DEBUG_TYPES | offset as u64,
        (_, true) => IN_SUP | offset as u64,
        _ => offset as u64,
    }
}

/// A key's section offset and section name, for messages.
pub fn describe(key: DieKey) -> (u64, &'static str) {
    if key & IN_DEBUG_TYPES != 0 {
        (key & !IN_DEBUG_TYPES, ".debug_types")
    } else if key & IN_SUP != 0 {
        (key & !IN_SUP, "the supplementary file's .debug_info")
    } else {
        (key, ".debug_info")
    }
}

/// Which section `key` is in, as the tag bits of a key.
pub fn section_of(key: DieKey) -> DieKey {
    key & (IN_DEBUG_TYPES | IN_SUP)
}

/// Whether DIE `key` is in the supplementary file.
pub fn in_sup(key: DieKey) -> bool {
    key & IN_SUP != 0
}

/// Every unit of the input, found by offset or by type signature.
#[derive(Default)]
pub struct UnitIndex<'a> {
    /// `.debug_info` units, then `.debug_types` units, each part sorted by offset.
    units: Vec<UnitHeader<R<'a>>>,
    /// Where the `.debug_types` units start in `units`.
    types_start: usize,
    /// The supplementary file's units, sorted by offset.
    sup_units: Vec<UnitHeader<R<'a>>>,
    /// Type signature → key of the type's DIE.
    signatures: FxHashMap<u64, DieKey>,
}

impl<'a> UnitIndex<'a> {
    /// Indexes `info_units` (every unit of `.debug_info`, in order) and the units of
    /// `.debug_types`.
    pub fn new(
        dwarf: &gimli::Dwarf<R<'a>>,
        info_units: Vec<UnitHeader<R<'a>>>,
    ) -> gimli::Result<Self> {
        let mut units = info_units;
        let types_start = units.len();
        let mut iter = dwarf.type_units();
        while let Some(header) = iter.next()? {
            units.push(header);
        }
        let mut sup_units = Vec::new();
        if let Some(sup) = dwarf.sup() {
            let mut iter = sup.units();
            while let Some(header) = iter.next()? {
                sup_units.push(header);
            }
        }
        let mut signatures = FxHashMap::default();
        for h in &units {
            if let gimli::UnitType::Type {
                type_signature,
                type_offset,
            } = h.type_()
            {
                let key = die_key(h, false, h.offset().0 + type_offset.0);
                signatures.insert(type_signature.0, key);
            }
        }
        Ok(UnitIndex {
            units,
            types_start,
            sup_units,
            signatures,
        })
    }

    /// Every unit: `.debug_info`'s, then `.debug_types`', each in section order.
    pub fn headers(&self) -> &[UnitHeader<R<'a>>] {
        &self.units
    }

    /// The key of the type DIE a `DW_FORM_ref_sig8` names.
    pub fn signature(&self, sig: DebugTypeSignature) -> Option<DieKey> {
        self.signatures.get(&sig.0).copied()
    }

    /// The unit holding the DIE `key`.
    pub fn unit_of(&self, key: DieKey) -> Option<UnitHeader<R<'a>>> {
        let (offset, _) = describe(key);
        let part = if key & IN_DEBUG_TYPES != 0 {
            &self.units[self.types_start..]
        } else if in_sup(key) {
            &self.sup_units[..]
        } else {
            &self.units[..self.types_start]
        };
        let after = part.partition_point(|h| h.offset().0 as u64 <= offset);
        let h = *part.get(after.checked_sub(1)?)?;
        let end = h.offset().0 as u64 + h.length_including_self() as u64;
        (offset < end).then_some(h)
    }
}

/// The target of a reference out of its unit (of the supplementary file when `from_sup`),
/// `None` for any other value.
pub fn foreign_target(
    index: &UnitIndex<'_>,
    v: &AttributeValue<R<'_>>,
    from_sup: bool,
) -> Option<Target> {
    match *v {
        AttributeValue::DebugInfoRef(o) if from_sup => Some(Target::Found(IN_SUP | o.0 as DieKey)),
        AttributeValue::DebugInfoRef(o) => Some(Target::Found(o.0 as DieKey)),
        AttributeValue::DebugInfoRefSup(o) => Some(Target::Found(IN_SUP | o.0 as DieKey)),
        AttributeValue::DebugTypesRef(sig) => Some(
            index
                .signature(sig)
                .map_or(Target::UnknownSignature(sig.0), Target::Found),
        ),
        _ => None,
    }
}

/// Where a cross-unit reference leads.
pub enum Target {
    /// The referenced DIE.
    Found(DieKey),
    /// A `DW_FORM_ref_sig8` whose signature no type unit has.
    UnknownSignature(u64),
}

/// The DIEs one CU imports from other units, each with a CU-local reference value.
#[derive(Default, Debug)]
pub struct Imports {
    /// Imported DIEs by local index.
    keys: Vec<DieKey>,
    /// Local index by DIE.
    index: FxHashMap<DieKey, u32>,
    /// Whether each DIE's subtree has been walked (as an import or inside another one).
    walked: Vec<bool>,
    /// Local index by the type signature that imported it.
    by_signature: FxHashMap<u64, u32>,
}

/// Marks a CU-local reference value as an import (the rest of it is the local index); values
/// without it are unit offsets of the CU's own DIEs.
pub const IMPORTED: u32 = 1 << 30;

impl Imports {
    /// The local reference value of DIE `key`, which is imported if it is not yet.
    pub fn local(&mut self, key: DieKey) -> Option<u32> {
        if let Some(&i) = self.index.get(&key) {
            return Some(IMPORTED | i);
        }
        let i = u32::try_from(self.keys.len())
            .ok()
            .filter(|&i| i < IMPORTED)?;
        self.keys.push(key);
        self.walked.push(false);
        self.index.insert(key, i);
        Some(IMPORTED | i)
    }

    /// Records that reference value `v` (a `DW_FORM_ref_sig8`) led to `local`.
    pub fn note_value(&mut self, v: &AttributeValue<R<'_>>, local: u32) {
        if let AttributeValue::DebugTypesRef(sig) = *v {
            self.by_signature.insert(sig.0, local);
        }
    }

    /// The local reference value of a reference out of the unit, if the CU imported its DIE.
    pub fn lookup_value(&self, v: &AttributeValue<R<'_>>) -> Option<u32> {
        match *v {
            AttributeValue::DebugInfoRef(o) => self.lookup(o.0 as DieKey),
            AttributeValue::DebugInfoRefSup(o) => self.lookup(IN_SUP | o.0 as DieKey),
            AttributeValue::DebugTypesRef(sig) => self.by_signature.get(&sig.0).copied(),
            _ => None,
        }
    }

    /// The local reference value of DIE `key`, if the CU imported it.
    pub fn lookup(&self, key: DieKey) -> Option<u32> {
        self.index.get(&key).map(|&i| IMPORTED | i)
    }

    /// The DIE behind a local reference value that has [`IMPORTED`] set.
    pub fn key(&self, local: u32) -> Option<DieKey> {
        self.keys.get((local & !IMPORTED) as usize).copied()
    }

    /// Marks the subtree of `local` walked; false if it was already.
    pub fn mark_walked(&mut self, local: u32) -> bool {
        let w = &mut self.walked[(local & !IMPORTED) as usize];
        !std::mem::replace(w, true)
    }

    /// The first import at or after local index `from` whose subtree is not walked yet.
    pub fn next_unwalked(&self, from: usize) -> Option<usize> {
        (from..self.keys.len()).find(|&i| !self.walked[i])
    }

    /// The DIE with local index `i`.
    pub fn key_at(&self, i: usize) -> DieKey {
        self.keys[i]
    }
}
