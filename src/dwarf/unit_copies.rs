//! `.debug_info` read a compile unit at a time, as the workers take the units, into buffers
//! that are used again for later units: a module's relocated as it is read (instead of one
//! relocated copy of the whole section: a large module's is 17 MiB, resident until the
//! encoding ends), a vmlinux's as the file holds it.
//!
//! The bytes come from the file with `pread`, not through the input's mapping: the mapped
//! pages of a unit would have to leave the resident set when its worker is done, and each
//! such `MADV_DONTNEED` interrupts the other CPUs running the process's threads to flush
//! their TLBs (reading the units so saves 0.08 s of the reference vmlinux's 2.6 s of CPU at
//! -j2, at the same peak). A buffer is an anonymous mapping that stays with the units'
//! store when its unit is given back, for the next unit: the units in flight (one per
//! worker, and the pre-scanned one) are all the store ever holds. Only the pages past
//! [`KEEP`] of a large unit's buffer are dropped when it is given back (88 of the 2,553 units
//! of a 7.3 kernel are larger; half are under 83 KB), so the buffers hold about what the
//! mapped pages of the units in flight did.

use std::collections::HashMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

use memmap2::MmapMut;
use parking_lot::Mutex;

use crate::error::{Error, Result};
use crate::input::relocations::RangeRelocations;
use crate::mapped::Mapped;
use crate::measure::page_size;

/// The address space a buffer takes (more when a unit needs it): only the pages a unit is
/// read into become resident.
const RESERVED: usize = 8 << 20;

/// The bytes of a buffer that stay resident when its unit is given back; the pages past
/// them leave the resident set.
const KEEP: usize = 256 << 10;

/// The section's units, read unit by unit (see the module's doc).
pub struct UnitCopies<'a> {
    /// The mapped file the section lies in.
    mapped: &'a Mapped,
    /// The section's bytes as the file holds them (unrelocated), in the mapping.
    bytes: &'a [u8],
    /// A relocatable object's relocations of the section.
    relocations: Option<RangeRelocations<'a>>,
    path: PathBuf,
    buffers: Mutex<Buffers>,
}

/// The units read and not given back since, by start offset (each a buffer and the unit's
/// length, which the buffer may exceed), and the buffers of the units given back.
#[derive(Default)]
struct Buffers {
    live: HashMap<usize, (MmapMut, usize)>,
    spare: Vec<MmapMut>,
}

impl<'a> UnitCopies<'a> {
    /// The units of `bytes`, a section of `mapped` (of the file `path`), with `relocations`
    /// applied when they are given; nothing is read yet.
    pub fn new(
        mapped: &'a Mapped,
        bytes: &'a [u8],
        relocations: Option<RangeRelocations<'a>>,
        path: &Path,
    ) -> Self {
        UnitCopies {
            mapped,
            bytes,
            relocations,
            path: path.to_path_buf(),
            buffers: Mutex::new(Buffers::default()),
        }
    }

    /// The section's bytes as the file holds them, in the mapping (where the unit headers are
    /// listed from: the fields a header scan needs are not relocated).
    pub fn unrelocated(&self) -> &'a [u8] {
        self.bytes
    }

    /// The unit at `range` of the section, read (and relocated) on the first call since it
    /// was given back, if ever.
    pub fn unit(&self, range: Range<usize>) -> Result<&[u8]> {
        if range.start > range.end || range.end > self.bytes.len() {
            return Err(self.bad(format!(
                "the unit at {:#x}..{:#x} lies outside the section",
                range.start, range.end
            )));
        }
        let mut buffers = self.buffers.lock();
        if !buffers.live.contains_key(&range.start) {
            let spare = buffers.spare.pop();
            drop(buffers);
            let mut unit = match spare {
                Some(spare) if spare.len() >= range.len() => spare,
                _ => MmapMut::map_anon(RESERVED.max(range.len()))
                    .map_err(|e| Error::io(&self.path, e))?,
            };
            self.read(range.clone(), &mut unit[..range.len()])?;
            buffers = self.buffers.lock();
            buffers
                .live
                .entry(range.start)
                .or_insert((unit, range.len()));
        }
        let (unit, len) = &buffers.live[&range.start];
        let (start, len) = (unit.as_ptr(), *len);
        drop(buffers);
        // SAFETY: the slice lies in the anonymous mapping of a live unit, which stays where it
        // is when its `MmapMut` moves (as `live` grows) and is neither written nor unmapped
        // until the unit is given back by its reader (`release`), who reads none of its
        // slices afterwards; the store outlives the borrow of `self`.
        Ok(unsafe { std::slice::from_raw_parts(start, len) })
    }

    /// Reads the unit at `range` from the file into `out` (as long), relocated.
    fn read(&self, range: Range<usize>, out: &mut [u8]) -> Result<()> {
        self.mapped
            .read_from_file(&self.bytes[range.clone()], out)
            .map_err(|e| Error::io(&self.path, e))?;
        match &self.relocations {
            Some(relocations) => relocations.apply(range, out),
            None => Ok(()),
        }
    }

    /// Gives back the units starting in `range`; their buffers serve later units. Call it
    /// only when no slice of those units is read again.
    pub fn release(&self, range: Range<usize>) {
        let mut buffers = self.buffers.lock();
        let Buffers { live, spare } = &mut *buffers;
        let done: Vec<usize> = live.keys().filter(|s| range.contains(s)).copied().collect();
        for (unit, len) in done.iter().filter_map(|s| live.remove(s)) {
            drop_pages_past_keep(&unit, len);
            spare.push(unit);
        }
    }

    fn bad(&self, reason: String) -> Error {
        Error::BadSection {
            path: self.path.clone(),
            section: ".debug_info".into(),
            reason,
        }
    }
}

/// Drops the resident pages of `unit`, a buffer that held `len` bytes, past its first
/// [`KEEP`] bytes.
fn drop_pages_past_keep(unit: &MmapMut, len: usize) {
    let page = page_size().unwrap_or(4096);
    let end = len.next_multiple_of(page).min(unit.len());
    if end > KEEP {
        // SAFETY: MADV_DONTNEED on a private anonymous mapping: its pages read as zeros
        // afterwards. The buffer's unit was given back, so no slice of it is read again, and
        // the next unit is read into it before any slice of that unit is handed out.
        let _ = unsafe {
            unit.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, KEEP, end - KEEP)
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Units larger and smaller than [`KEEP`], read in turn into the buffers that earlier units
    /// gave back (the large ones' tails dropped), each as the file holds it.
    #[test]
    fn units_read_into_reused_buffers_are_the_files_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("section");
        let bytes: Vec<u8> = (0..3 * KEEP as u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &bytes).unwrap();
        // SAFETY: the file is this test's own, in its own directory, and is not written again.
        let mapped = unsafe { Mapped::open(&path) }.unwrap();
        let section = &mapped.bytes()[7..];
        let copies = UnitCopies::new(&mapped, section, None, &path);
        let units = [
            0..KEEP + 5000,
            KEEP + 5000..KEEP + 9000,
            100..2 * KEEP + 100,
        ];
        for round in 0..2 {
            for unit in units.iter().skip(round) {
                let read = copies.unit(unit.clone()).unwrap();
                assert!(
                    read == &section[unit.clone()],
                    "unit {unit:?}, round {round}"
                );
                copies.release(unit.clone());
            }
        }
        assert_eq!(copies.buffers.lock().spare.len(), 1);
        let outside = copies.unit(section.len() - 1..section.len() + 1);
        assert!(outside
            .unwrap_err()
            .to_string()
            .contains("outside the section"));
    }
}
