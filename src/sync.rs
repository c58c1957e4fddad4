//! The `cfg(dwarf2btf_loom)` / `cfg(dwarf2btf_shuttle)` shim: loom's atomics, cells and threads
//! under `--cfg dwarf2btf_loom`; shuttle's atomics, locks and threads under
//! `--cfg dwarf2btf_shuttle` (the randomized schedulers, for sizes loom cannot reach; shuttle
//! checks no memory ordering and has no cells, so the cells and `Track` stay std's stand-ins);
//! std's and `parking_lot`'s otherwise. The cfgs are this crate's own (as crossbeam's
//! `crossbeam_loom`): a global `--cfg loom` would also switch dependencies that know loom.
//!
//! Concurrent code that loom must be able to check ([`crate::functions::table::shared`], the
//! per-owner hand-overs of the other tables, and the dedup's hand-over between its struct phase
//! and the reference-type classifier, [`crate::dedup::handover`], the pipeline's per-owner
//! saver locks, [`crate::pipeline::owners`]) takes its atomics, locks and
//! interior-mutable cells from here and nowhere else, so the production build and the loom
//! models (`loom-tests/`) compile one and the same source. [`UnsafeCell`] and [`Track`] get
//! tiny std stand-ins with loom's API: closure access (`with`/`with_mut`) for the cell, so loom
//! can see every access and check it against the happens-before order; a no-op wrapper for
//! `Track`, which under loom reports any tracked value still alive when a model ends (a leak).

#[cfg(dwarf2btf_loom)]
pub use loom::{
    alloc::Track,
    cell::UnsafeCell,
    sync::atomic::{AtomicPtr, AtomicU32, Ordering},
    sync::Arc,
    thread,
};

#[cfg(dwarf2btf_shuttle)]
pub use shuttle::{
    sync::atomic::{AtomicPtr, AtomicU32, Ordering},
    sync::Arc,
    thread,
};

/// A lock whose `lock` cannot fail (poisoning dropped, as `parking_lot`'s): loom's or
/// shuttle's `Mutex`, so that the model checkers see the per-owner hand-overs of save-merge and
/// the private index, and the pipeline's per-owner saver locks (`pipeline::owners`).
#[cfg(any(dwarf2btf_loom, dwarf2btf_shuttle))]
#[derive(Default)]
pub struct Mutex<T>(checker::Mutex<T>);

#[cfg(dwarf2btf_loom)]
use loom::sync as checker;
#[cfg(dwarf2btf_shuttle)]
use shuttle::sync as checker;

#[cfg(any(dwarf2btf_loom, dwarf2btf_shuttle))]
impl<T> Mutex<T> {
    /// An unlocked mutex holding `value`.
    pub fn new(value: T) -> Self {
        Mutex(checker::Mutex::new(value))
    }

    /// Locks the mutex (a panic while it was held is not an error here).
    pub fn lock(&self) -> checker::MutexGuard<'_, T> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The contents.
    pub fn into_inner(self) -> T {
        self.0
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(not(any(dwarf2btf_loom, dwarf2btf_shuttle)))]
pub use parking_lot::Mutex;

#[cfg(not(any(dwarf2btf_loom, dwarf2btf_shuttle)))]
pub use std::{
    sync::atomic::{AtomicPtr, AtomicU32, Ordering},
    sync::Arc,
    thread,
};

/// `std::cell::UnsafeCell` behind loom's closure API (zero cost: the closures inline away).
#[cfg(not(dwarf2btf_loom))]
#[derive(Debug, Default)]
pub struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

#[cfg(not(dwarf2btf_loom))]
impl<T> UnsafeCell<T> {
    /// A cell holding `data`.
    pub const fn new(data: T) -> Self {
        Self(std::cell::UnsafeCell::new(data))
    }

    /// Calls `f` with a shared raw pointer to the contents. The caller (inside `f`) must make
    /// sure no `with_mut` access to the same cell overlaps.
    #[inline(always)]
    pub fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
        f(self.0.get())
    }

    /// Calls `f` with a unique raw pointer to the contents. The caller (inside `f`) must make
    /// sure no other access to the same cell overlaps.
    #[inline(always)]
    pub fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }

    /// The contents.
    pub fn into_inner(self) -> T {
        self.0.into_inner()
    }
}

/// loom's leak tracker; outside loom a transparent wrapper that checks nothing.
#[cfg(not(dwarf2btf_loom))]
#[derive(Debug, Default)]
pub struct Track<T>(T);

#[cfg(not(dwarf2btf_loom))]
impl<T> Track<T> {
    /// Tracks `value` (no-op outside loom).
    #[inline(always)]
    pub const fn new(value: T) -> Self {
        Self(value)
    }
}

// `mutable_ordering!(ordering, mutant)`: `ordering`, or `Relaxed` while the mutant switch
// `mutant` (an `AtomicBool`) is set. The switches exist in loom and shuttle builds and in builds with
// `--cfg dwarf2btf_mutants` (ThreadSanitizer's negative control, scripts/test.sh) only;
// elsewhere this is just `ordering`, and `mutant` is not even compiled. How a model shows that
// an ordering the design relies on is needed: with it weakened, loom must fail the model.
#[cfg(any(dwarf2btf_loom, dwarf2btf_shuttle, dwarf2btf_mutants))]
macro_rules! mutable_ordering {
    ($ordering:expr, $mutant:expr) => {
        if $mutant.load(std::sync::atomic::Ordering::Relaxed) {
            $crate::sync::Ordering::Relaxed
        } else {
            $ordering
        }
    };
}

#[cfg(not(any(dwarf2btf_loom, dwarf2btf_shuttle, dwarf2btf_mutants)))]
macro_rules! mutable_ordering {
    ($ordering:expr, $mutant:expr) => {
        $ordering
    };
}

pub(crate) use mutable_ordering;
