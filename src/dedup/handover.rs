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
//! Atomics come from [`crate::sync`], so `loom-tests/` model-checks this code, including each of
//! its three orderings weakened to `Relaxed` (`mutants`, loom builds only), which loom must
//! reject.

use super::entry::{entry_value, MAX_ID};
use crate::sync::{mutable_ordering, AtomicU32, Ordering};

/// [`StructFrontier`] once phases 2–4 are over (every canonical id final).
pub const DONE: u32 = u32::MAX;

/// Test-only switches, each weakening one ordering the hand-over relies on to `Relaxed`, which
/// a loom model must catch (`loom-tests/tests/broken_publish.rs`, `relaxed_finish.rs`,
/// `relaxed_wait.rs`). Compiled only in loom and shuttle builds and with `--cfg dwarf2btf_mutants`;
/// process-global: keep a model that sets one in its own test binary.
#[cfg(any(dwarf2btf_loom, dwarf2btf_shuttle, dwarf2btf_mutants))]
pub mod mutants {
    use std::sync::atomic::AtomicBool;

    /// [`super::StructFrontier::publish`] stores with `Relaxed` instead of `Release`.
    pub static BROKEN_PUBLISH: AtomicBool = AtomicBool::new(false);
    /// [`super::StructFrontier::finish`] stores with `Relaxed` instead of `Release`.
    pub static RELAXED_FINISH: AtomicBool = AtomicBool::new(false);
    /// [`super::StructFrontier::wait_past`] loads with `Relaxed` instead of `Acquire`.
    pub static RELAXED_WAIT: AtomicBool = AtomicBool::new(false);
}

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
        let ordering = mutable_ordering!(Ordering::Release, mutants::BROKEN_PUBLISH);
        self.0.store(below, ordering);
    }

    /// Phases 2–4 are over: every canonical id is final.
    pub fn finish(&self) {
        let ordering = mutable_ordering!(Ordering::Release, mutants::RELAXED_FINISH);
        self.0.store(DONE, ordering);
    }

    /// Waits until `id` is published or the phases are over; returns the position seen.
    pub fn wait_past(&self, id: u32) -> u32 {
        loop {
            let done = self
                .0
                .load(mutable_ordering!(Ordering::Acquire, mutants::RELAXED_WAIT));
            if done == DONE || done > id {
                return done;
            }
            pause();
        }
    }
}

/// Lets the struct phase run: sleep rather than spin (it needs the core, or its sibling); under
/// loom (or shuttle), a yield, which the model checker needs to explore a waiting loop.
fn pause() {
    #[cfg(any(dwarf2btf_loom, dwarf2btf_shuttle))]
    crate::sync::thread::yield_now();
    #[cfg(not(any(dwarf2btf_loom, dwarf2btf_shuttle)))]
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
        let m = entry_value(&map[end as usize]);
        if m > MAX_ID {
            return None;
        }
        if m == end {
            break;
        }
        end = m;
    }
    (done == DONE || !is_fwd(end)).then_some(end)
}
