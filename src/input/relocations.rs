//! Relocation arithmetic for relocatable inputs: the absolute relocation types debug sections
//! use and how a relocated field is written, shared by the whole-section path
//! (`Elf::debug_section`) and [`RangeRelocations`], which relocates a range of a section on
//! its own (a compile unit of `.debug_info`, when a worker reads it).

use std::ops::Range;
use std::path::Path;

use object::elf::Rela64;
use object::read::elf::{ElfFile64, SectionHeader};
use object::{Object, SectionIndex};

use crate::btf::Endian;
use crate::error::{Error, Result};
use crate::mapped::Mapped;

/// How many relocations are applied between two releases of the entries behind them.
pub(super) const RELEASE_RELOCATIONS_EVERY: usize = 1 << 16;

/// Writes `value` into a 4- or 8-byte relocated field.
pub(super) fn write_slot(slot: &mut [u8], value: u64, endian: Endian) {
    match (slot.len(), endian) {
        (4, Endian::Little) => slot.copy_from_slice(&(value as u32).to_le_bytes()),
        (4, Endian::Big) => slot.copy_from_slice(&(value as u32).to_be_bytes()),
        (8, Endian::Little) => slot.copy_from_slice(&value.to_le_bytes()),
        _ => slot.copy_from_slice(&value.to_be_bytes()),
    }
}

/// The RELA entries that apply to section `index` of a 64-bit file, when its relocation
/// table is one and is linked to the symbol table.
pub(super) fn rela_entries<'a>(
    file: &ElfFile64<'a>,
    index: SectionIndex,
) -> Option<&'a [Rela64<object::Endianness>]> {
    let endian = file.endian();
    let header = file
        .section_by_index(index)
        .ok()?
        .elf_relocation_section()
        .ok()??;
    let (entries, link) = header.rela(endian, file.data()).ok()??;
    let symtab = file.elf_symbol_table().section();
    (link == symtab).then_some(entries)
}

/// A section's RELA relocations in offset order, for relocating any range of it on its own:
/// a compile unit when a worker reads it ([`crate::dwarf::units::DebugSections::load_by_unit`]).
pub struct RangeRelocations<'a> {
    pub(super) path: &'a Path,
    pub(super) name: String,
    pub(super) mapped: &'a Mapped,
    /// The section's bytes, unrelocated, in the mapped file.
    pub(super) bytes: &'a [u8],
    /// Its relocation entries, in the mapped file, sorted by offset.
    pub(super) entries: &'a [Rela64<object::Endianness>],
    /// The file's byte order, as object reads it.
    pub(super) endian: object::Endianness,
    /// The same, as the relocated fields are written.
    pub(super) target: Endian,
    pub(super) machine: u16,
    /// Each symbol's relocation value, by index.
    pub(super) sym_values: Vec<u64>,
}

impl<'a> RangeRelocations<'a> {
    /// The section's unrelocated bytes.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// An error about the section, for `reason`.
    pub fn bad(&self, reason: String) -> Error {
        Error::BadSection {
            path: self.path.to_path_buf(),
            section: self.name.clone(),
            reason,
        }
    }

    /// Applies the relocations that fall in `range` of the section to `out`, a copy of that
    /// range. The entries read leave the resident set.
    pub fn apply(&self, range: Range<usize>, out: &mut [u8]) -> Result<()> {
        let e = self.endian;
        let offset = |r: &Rela64<object::Endianness>| r.r_offset.get(e);
        let lo = self
            .entries
            .partition_point(|r| offset(r) < range.start as u64);
        let len = self.entries[lo..].partition_point(|r| offset(r) < range.end as u64);
        let used = &self.entries[lo..lo + len];
        for r in used {
            let r_type = r.r_type(e, false).0;
            let Some(size) = reloc_size(self.machine, r_type) else {
                continue; // R_*_NONE: the only type `all_applicable` lets through unsized
            };
            let value =
                self.sym_values[r.r_sym(e, false) as usize].wrapping_add(r.r_addend.get(e) as u64);
            let at = (offset(r) - range.start as u64) as usize;
            let slot = out.get_mut(at..at + size).ok_or_else(|| {
                self.bad(format!(
                    "relocation at {:#x} crosses the end of the unit at {:#x}",
                    offset(r),
                    range.end
                ))
            })?;
            write_slot(slot, value, self.target);
        }
        self.mapped.release_slice(object::pod::bytes_of_slice(used));
        Ok(())
    }

    /// Whether every entry can be applied range by range exactly as the whole-section path
    /// applies it: in offset order, inside the section, of a known size (or `R_*_NONE`), of a
    /// symbol that exists and is not one of `own_symbols` (the section's own). The entries'
    /// pages leave the resident set behind the check.
    pub(super) fn all_applicable(&self, own_symbols: &[bool]) -> bool {
        let e = self.endian;
        let mut last = 0;
        for chunk in self.entries.chunks(RELEASE_RELOCATIONS_EVERY) {
            for r in chunk {
                let (at, sym, r_type) =
                    (r.r_offset.get(e), r.r_sym(e, false), r.r_type(e, false).0);
                let size = match reloc_size(self.machine, r_type) {
                    Some(size) => size as u64,
                    None if r_type == 0 => 0,
                    None => return false,
                };
                let inside = at
                    .checked_add(size)
                    .is_some_and(|end| end <= self.bytes.len() as u64);
                let known = own_symbols.get(sym as usize).is_some_and(|&own| !own);
                if at < last || !inside || !known {
                    return false;
                }
                last = at;
            }
            self.mapped
                .release_slice(object::pod::bytes_of_slice(chunk));
        }
        true
    }
}

/// Byte size of the absolute relocation types debug sections use.
pub(super) fn reloc_size(machine: u16, r_type: u32) -> Option<usize> {
    const EM_X86_64: u16 = 62;
    const EM_AARCH64: u16 = 183;
    const EM_386: u16 = 3;
    match (machine, r_type) {
        (EM_X86_64, 1) => Some(8),       // R_X86_64_64
        (EM_X86_64, 10 | 11) => Some(4), // R_X86_64_32, R_X86_64_32S
        (EM_AARCH64, 257) => Some(8),    // R_AARCH64_ABS64
        (EM_AARCH64, 258) => Some(4),    // R_AARCH64_ABS32
        (EM_386, 1) => Some(4),          // R_386_32
        _ => None,
    }
}
