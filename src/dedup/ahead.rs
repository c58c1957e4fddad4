//! Streaming the struct phase's upcoming types into the outer caches.
//!
//! The struct phase visits ids in order, but the first check of each compile unit's copy of
//! the core type graph walks that whole copy at once, thousands of records beyond the current
//! id, in graph order rather than address order, so each of them is a cache miss that the
//! hardware's sequential prefetcher never saw coming. Prefetching the records and per-id
//! entries a fixed number of ids ahead of the loop (into L2/L3, not L1, so the walk's own
//! working set stays) turns those misses into hits.

use super::state::Graph;

/// How many ids ahead of the struct phase the records are prefetched: about two compile
/// units of the kernel (how it was chosen: docs/dedup-performance.md).
const RECORDS_AHEAD: u32 = 4096;
/// The per-id entries (record positions, the canonical map with the kinds) go this much
/// further ahead, so that the record positions are cached by the time the records are
/// prefetched.
const ENTRIES_LEAD: u32 = 512;
/// The templates are prefetched this many ids ahead, from records prefetched long before.
const TEMPLATES_AHEAD: u32 = 1024;
/// `u32` words per cache line.
const LINE_WORDS: usize = 16;
/// Record bytes per cache line.
const LINE_BYTES: usize = 64;

/// Position of the prefetch streams.
pub(super) struct Ahead {
    /// Next id whose per-id entries are not yet prefetched.
    entries: u32,
    /// Next record byte (a line start) not yet prefetched.
    byte: usize,
    /// Next id whose template is not yet prefetched.
    templates: u32,
}

impl Ahead {
    pub(super) fn new(g: Graph<'_>) -> Self {
        // Split BTF with no types of its own has no record to start from.
        let byte = if g.start_id < g.type_cnt() {
            g.record_byte(g.start_id) & !(LINE_BYTES - 1)
        } else {
            g.record_bytes()
        };
        Ahead {
            entries: g.start_id,
            byte,
            templates: g.start_id,
        }
    }

    /// Prefetches what the struct phase needs up to `RECORDS_AHEAD` ids beyond `id`.
    #[inline(always)]
    pub(super) fn advance(&mut self, g: Graph<'_>, id: u32) {
        let cnt = g.type_cnt();
        let entries_to = (id + RECORDS_AHEAD + ENTRIES_LEAD).min(cnt);
        while self.entries < entries_to {
            g.prefetch_entries(self.entries);
            self.entries += LINE_WORDS as u32 / 2;
        }
        let records_to = match id + RECORDS_AHEAD {
            to if to < cnt => g.record_byte(to),
            _ => g.record_bytes(),
        };
        while self.byte < records_to {
            g.prefetch_record_byte(self.byte);
            self.byte += LINE_BYTES;
        }
        let templates_to = (id + TEMPLATES_AHEAD).min(cnt);
        while self.templates < templates_to {
            g.prefetch_template(self.templates);
            self.templates += 1;
        }
    }
}
