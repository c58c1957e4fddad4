//! The hand-over between the struct phase and the thread that classifies reference types
//! while phases 2–4 run (`refs.rs`): which canonical ids the classifier may read as final.
//!
//! The struct phase writes `map` entries with plain (relaxed) stores and, every few hundred
//! ids, [`StructFrontier::publish`]es how far it is with a Release store; the classifier's
//! [`final_id`] Acquire-loads that position, so every `map` store for an id below it happened
//! before its `map` loads. Only the end of a map chain is ever rewritten later, and a canonical
//! type other than a FWD never is (FWDs are resolved up to the end of phase 4): so a chain
//! ending at a canonical non-FWD type below the published position, or any chain once the
//! phases are over ([`StructFrontier::finish`]), is final.
//!
//! Atomics come from [`crate::sync`], so `loom-tests/` model-checks this code, including a
//! publish with the wrong ordering (`BROKEN_PUBLISH`, loom builds only) that loom must reject.

use crate::btf::kinds::MAX_NR_TYPES;
use crate::sync::{AtomicU32, Ordering};

/// [`StructFrontier`] once phases 2–4 are over (every canonical id final).
pub const DONE: u32 = u32::MAX;

/// Test-only switch (loom builds only): when set, [`StructFrontier::publish`] stores with Relaxed
/// ordering, which loom must catch. Process-global: keep models that set it in their own test
/// binary.
#[cfg(dwarf2btf_loom)]
pub static BROKEN_PUBLISH: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

/// How far the struct phase is: every id below the value has its final struct-phase mapping.
/// A plain atomic, not padded to a cache line of its own: it is written every 256 ids and read
/// every 200 µs, too rarely for false sharing to matter.
pub struct StructFrontier(AtomicU32);

impl Default for StructFrontier {
    fn default() -> Self {
        StructFrontier(AtomicU32::new(0))
    }
}

impl StructFrontier {
    /// Every `map` store for the ids below `below` is done.
    pub fn publish(&self, below: u32) {
        #[cfg(dwarf2btf_loom)]
        if BROKEN_PUBLISH.load(std::sync::atomic::Ordering::Relaxed) {
            self.0.store(below, Ordering::Relaxed);
            return;
        }
        self.0.store(below, Ordering::Release);
    }

    /// Phases 2–4 are over: every canonical id is final.
    pub fn finish(&self) {
        self.0.store(DONE, Ordering::Release);
    }

    /// Waits until `id` is published or the phases are over; returns the position seen.
    pub fn wait_past(&self, id: u32) -> u32 {
        loop {
            let done = self.0.load(Ordering::Acquire);
            if done == DONE || done > id {
                return done;
            }
            pause();
        }
    }
}

/// Lets the struct phase run: sleep rather than spin (it needs the core, or its sibling); under
/// loom, a yield, which loom needs to explore a waiting loop.
fn pause() {
    #[cfg(dwarf2btf_loom)]
    crate::sync::thread::yield_now();
    #[cfg(not(dwarf2btf_loom))]
    std::thread::sleep(std::time::Duration::from_micros(200));
}

/// The canonical id of the non-reference type `id` once it is final, `None` if it may still
/// change. `is_fwd(t)` tells whether type `t` is a FWD. Waits for the struct phase to pass `id`.
pub fn final_id(
    map: &[AtomicU32],
    progress: &StructFrontier,
    id: u32,
    is_fwd: impl Fn(u32) -> bool,
) -> Option<u32> {
    let done = progress.wait_past(id);
    let mut end = id;
    loop {
        let m = map[end as usize].load(Ordering::Relaxed);
        if m > MAX_NR_TYPES {
            return None;
        }
        if m == end {
            break;
        }
        end = m;
    }
    (done == DONE || !is_fwd(end)).then_some(end)
}
