//! The `cfg(dwarf2btf_loom)` shim: loom's atomics, cells and threads under
//! `--cfg dwarf2btf_loom`, std's otherwise. The cfg is this crate's own (as crossbeam's
//! `crossbeam_loom`): a global `--cfg loom` would also switch dependencies that know loom.
//!
//! Concurrent code that loom must be able to check ([`crate::functions::table::shared`], and the
//! dedup's hand-over between its struct phase and the reference-type classifier,
//! [`crate::dedup::handover`]) takes its atomics and interior-mutable cells from here and
//! nowhere else, so the production build and the
//! loom models (`loom-tests/`) compile one and the same source. [`UnsafeCell`] and [`Track`] get
//! tiny std stand-ins with loom's API: closure access (`with`/`with_mut`) for the cell, so loom can
//! see every access and check it against the happens-before order; a no-op wrapper for `Track`,
//! which under loom reports any tracked value still alive when a model ends (a leak).

#[cfg(dwarf2btf_loom)]
pub use loom::{
    alloc::Track,
    cell::UnsafeCell,
    sync::atomic::{AtomicPtr, AtomicU32, Ordering},
    sync::Arc,
    thread,
};

#[cfg(not(dwarf2btf_loom))]
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
