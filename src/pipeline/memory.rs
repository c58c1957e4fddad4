//! The run's memory policy and accounting: when the input's resident DWARF pages are dropped
//! (each CU's `.debug_info` range as a worker finishes it, everything every few merged
//! batches), and the large structures the encoding reports with `--stats`.

use std::ops::Range;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::btf::store::Store;
use crate::btf::Btf;
use crate::functions::table::TableStats;
use crate::input::elf::Mapped;
use crate::input::symbols::ElfFunctions;
use crate::measure::{self, Held};

/// Batches merged between two drops of every resident DWARF page: the pages that CUs in
/// flight still need come back as minor faults from the page cache, a few milliseconds a
/// drop. Over the last [`RELEASE_DWARF_EVERY`] batches the pages are dropped after each one:
/// the encoding's end is where a run peaks, and an input of fewer batches than that (a
/// module: `mlx5_core.ko` has 94 CUs, 12 batches) would otherwise keep every page it read.
pub(super) const RELEASE_DWARF_EVERY: usize = 8;

/// The input's mapped DWARF as the merge sees it. The workers release each CU's
/// `.debug_info` range when they are done with it, but the sections that CUs share
/// (abbreviations, strings, location and range lists) are read all along; their pages would
/// stay resident until the end (~40 MiB on a kernel), so the merge drops every page every
/// [`RELEASE_DWARF_EVERY`] batches, noting the resident peak first when `--stats` asks.
pub(super) struct DwarfPages<'m> {
    mapped: &'m Mapped,
    path: &'m Path,
    stats: bool,
    peak_mib: AtomicU64,
}

impl<'m> DwarfPages<'m> {
    pub(super) fn new(mapped: &'m Mapped, path: &'m Path, stats: bool) -> Self {
        DwarfPages {
            mapped,
            path,
            stats,
            peak_mib: AtomicU64::new(0),
        }
    }

    /// Called with the number of batches merged so far, of `total`: drops every page each
    /// [`RELEASE_DWARF_EVERY`] batches, and after each of the last [`RELEASE_DWARF_EVERY`].
    pub(super) fn batches_merged(&self, merged: usize, total: usize) {
        if merged.is_multiple_of(RELEASE_DWARF_EVERY) || merged + RELEASE_DWARF_EVERY >= total {
            self.release_all();
        }
    }

    fn release_all(&self) {
        if self.stats {
            let resident = measure::file_resident_mib(self.path);
            self.peak_mib.fetch_max(resident, Ordering::Relaxed);
        }
        self.mapped.release(0..self.mapped.bytes().len());
    }

    /// The most resident DWARF seen before a drop, in MiB (0 without `--stats`).
    pub(super) fn peak_mib(&self) -> u64 {
        self.peak_mib.load(Ordering::Relaxed)
    }
}

/// The encoding's large structures at its end, when they are largest.
pub(super) fn encoding_held(
    store: &Store,
    btf: &Btf,
    funcs: &ElfFunctions,
    table: &TableStats,
    dwarf_peak_mib: u64,
) -> Vec<Held> {
    vec![
        Held {
            what: format!(
                "record store: {} records, {} distinct templates",
                store.len(),
                store.templates()
            ),
            bytes: store.bytes(),
        },
        Held {
            what: "strings".into(),
            bytes: btf.strings().len(),
        },
        Held {
            what: format!(
                "ELF functions table: {} names, {} symbols",
                funcs.len(),
                funcs.entries().map(|f| f.syms.len()).sum::<usize>()
            ),
            bytes: funcs.heap_bytes(),
        },
        Held {
            what: format!(
                "resident DWARF: the input's mapped pages, before the main thread drops them \
                 every {RELEASE_DWARF_EVERY} batches and after each of the last \
                 {RELEASE_DWARF_EVERY} (the CUs themselves are read from the file, or dropped as \
                 they finish)"
            ),
            bytes: (dwarf_peak_mib << 20) as usize,
        },
        Held {
            what: format!(
                "function table: {} instances held for the final pass, in their per-owner summaries",
                table.held
            ),
            bytes: table.held_bytes as usize,
        },
    ]
}

/// Drops the resident pages of a `.debug_info` range (the unit headers the scan has read, or
/// a finished CU's when the units are read through the mapping) when the section is mapped
/// straight from the file (not decompressed into memory). The 64 KiB before the range go
/// too: the kernel's fault-around maps them in with the range's first page.
pub(super) fn release_info_pages(mapped: &Mapped, info: &[u8], range: Range<usize>) {
    let map = mapped.bytes().as_ptr_range();
    let info_start = info.as_ptr();
    if !map.contains(&info_start) {
        return;
    }
    let base = info_start as usize - map.start as usize;
    mapped.release(base + range.start.saturating_sub(64 * 1024)..base + range.end);
}
