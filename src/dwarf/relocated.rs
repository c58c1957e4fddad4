//! A relocatable object's `.debug_info`, relocated unit by unit as the units are read and
//! given back when they are done, instead of one relocated copy of the whole section (a large
//! module's is 17 MiB, resident until the encoding ends).
//!
//! The relocated bytes live in an anonymous mapping the size of the section, at the section's
//! offsets, so that a unit's slices have the lifetime of the whole section as the decoders
//! expect. A unit's range is written once, before any slice of it is handed out; when its
//! reader is done, the pages wholly inside it are given back (and read as zeros if read again,
//! which the encoder does not do: a unit is read again only through
//! [`RelocatedUnits::unit`], which relocates it anew).

use std::collections::HashSet;
use std::ops::Range;

use parking_lot::Mutex;

use crate::error::{Error, Result};
use crate::input::relocations::RangeRelocations;
use crate::measure::page_size;

/// The section's relocated units (see the module's doc).
pub struct RelocatedUnits<'a> {
    relocations: RangeRelocations<'a>,
    /// The anonymous mapping the units are relocated into. It is written only through `base`.
    map: memmap2::MmapMut,
    /// The mapping's first byte.
    base: *mut u8,
    /// The start offsets of the units relocated and not given back since.
    live: Mutex<HashSet<usize>>,
}

// SAFETY: `base` points into `map`, which the struct owns; bytes behind it are written only
// under `live`'s lock, in a unit range no slice has been handed out for (see `unit`).
unsafe impl Send for RelocatedUnits<'_> {}
// SAFETY: as for `Send`: shared use writes only under the lock, to ranges no reader holds.
unsafe impl Sync for RelocatedUnits<'_> {}

impl<'a> RelocatedUnits<'a> {
    /// Room for the section that `relocations` apply to; nothing is relocated yet.
    pub fn new(relocations: RangeRelocations<'a>, path: &std::path::Path) -> Result<Self> {
        let len = relocations.bytes().len().max(1);
        let mut map = memmap2::MmapMut::map_anon(len).map_err(|e| Error::io(path, e))?;
        let base = map.as_mut_ptr();
        Ok(RelocatedUnits {
            relocations,
            map,
            base,
            live: Mutex::new(HashSet::new()),
        })
    }

    /// The section's unrelocated bytes (where the unit headers are listed from: the fields a
    /// header scan needs are not relocated).
    pub fn unrelocated(&self) -> &'a [u8] {
        self.relocations.bytes()
    }

    /// The unit at `range` of the section, relocated (on the first call since it was given
    /// back, if ever).
    pub fn unit(&self, range: Range<usize>) -> Result<&[u8]> {
        if range.start > range.end || range.end > self.relocations.bytes().len() {
            return Err(self.relocations.bad(format!(
                "the unit at {:#x}..{:#x} lies outside the section",
                range.start, range.end
            )));
        }
        let mut live = self.live.lock();
        if !live.contains(&range.start) {
            // SAFETY: the range lies inside the mapping (checked above), and no slice of it
            // is held: none is handed out before its unit is in `live`, and a unit leaves
            // `live` only when its reader gives it back. Units do not overlap, so no other
            // unit's slice covers these bytes; the lock keeps two writers apart.
            let out =
                unsafe { std::slice::from_raw_parts_mut(self.base.add(range.start), range.len()) };
            self.relocations.relocate_into(range.clone(), out)?;
            live.insert(range.start);
        }
        drop(live);
        // SAFETY: inside the mapping, and written above or by an earlier call; it is not
        // written again until the unit is given back by its reader.
        Ok(unsafe { std::slice::from_raw_parts(self.base.add(range.start), range.len()) })
    }

    /// Gives back the units starting in `range`: the pages wholly inside it leave the resident
    /// set (the pages a neighbouring unit shares stay). Call it only when no slice of those
    /// units is read again.
    pub fn release(&self, range: Range<usize>) {
        self.live.lock().retain(|start| !range.contains(start));
        let page = page_size().unwrap_or(4096);
        let start = range.start.next_multiple_of(page);
        let end = (range.end.min(self.map.len()) / page) * page;
        if end > start {
            // SAFETY: MADV_DONTNEED on a private anonymous mapping: the range's pages read
            // as zeros afterwards. The caller gives back only units whose slices are not read
            // again, and `unit` relocates a unit anew before handing it out again.
            let _ = unsafe {
                self.map.unchecked_advise_range(
                    memmap2::UncheckedAdvice::DontNeed,
                    start,
                    end - start,
                )
            };
        }
    }
}
