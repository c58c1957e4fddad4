//! The dedup's state (libbpf's `struct btf_dedup`): every record with its kind and canonical
//! map ([`Types`], borrowed read-only as a [`Graph`]), the hypothetical map and candidate
//! table of the running phase, and what the run measured. The phases (`prim.rs`,
//! `structs.rs`, `fwd.rs`, `refs.rs`, `compact.rs`) are `impl Dedup` blocks over it.

use std::sync::Arc;
use std::time::Instant;

use super::entry::{entry_kind, entry_value, set_entry, MAX_ID};
use super::handover::StructFrontier;
use super::hypot::HypotMap;
use super::records::Recs;
use super::table::CandTable;
use crate::btf::kinds::kind;
use crate::btf::store::{Rec, RecIds, View};
use crate::measure::Held;
use crate::sync::AtomicU32;

/// All type records, base and own, addressable by id, with the per-id dedup state.
pub(crate) struct Types {
    /// Every record; read-only, and shared with the thread that orders the reference types.
    pub(super) recs: Arc<Recs>,
    /// `map`, each entry with its type's kind (`entry.rs`): atomic so that the thread
    /// classifying reference types can read it while the struct phase writes it (relaxed
    /// accesses are plain loads and stores).
    pub(super) map: Arc<Vec<AtomicU32>>,
    pub(super) start_id: u32,
}

/// The read-only side of [`Types`] borrowed as plain slices: a hot loop holding one keeps
/// the base pointers in registers instead of reloading them through the `Arc`s.
#[derive(Clone, Copy)]
pub(crate) struct Graph<'a> {
    pub(super) view: View<'a>,
    pub(super) map: &'a [AtomicU32],
    pub(super) start_id: u32,
}

impl<'a> Graph<'a> {
    /// The record of `id` (`void` for 0).
    #[inline(always)]
    pub(crate) fn rec(self, id: u32) -> Rec<'a> {
        self.view.rec(id)
    }

    /// The template number and ids of `id`'s record, its template words unread.
    #[inline(always)]
    pub(crate) fn rec_ids(self, id: u32) -> RecIds<'a> {
        self.view.rec_ids(id)
    }

    /// The raw kind of `id`, without reading its record.
    #[inline(always)]
    pub(crate) fn kind(self, id: u32) -> u32 {
        entry_kind(&self.map[id as usize])
    }

    /// `map[id]`: the canonical id; any value above [`MAX_ID`] means not mapped yet.
    #[inline(always)]
    pub(crate) fn map(self, id: u32) -> u32 {
        entry_value(&self.map[id as usize])
    }

    /// Sets `map[id]` (atomic, so a shared borrow will do; only the thread running phases
    /// 2–5 writes the map).
    #[inline(always)]
    pub(crate) fn set_map(self, id: u32, to: u32) {
        set_entry(&self.map[id as usize], to);
    }

    /// One past the highest id.
    pub(crate) fn type_cnt(self) -> u32 {
        self.map.len() as u32
    }

    /// Where the record of `id` starts among the store's record bytes.
    pub(crate) fn record_byte(self, id: u32) -> usize {
        self.view.byte_of(id)
    }

    /// How many record bytes the store holds.
    pub(crate) fn record_bytes(self) -> usize {
        self.view.bytes()
    }

    /// Prefetches the line of record byte `at` into the outer caches.
    #[inline(always)]
    pub(crate) fn prefetch_record_byte(self, at: usize) {
        prefetch_outer(self.view.byte(at));
    }

    /// Prefetches the template of `id`, an own id whose record is cached, into the outer
    /// caches.
    #[inline(always)]
    pub(crate) fn prefetch_template(self, id: u32) {
        prefetch_outer(self.view.template_start(id));
    }

    /// Prefetches the per-id entries of `id` (record position, kind and canonical map) into
    /// the outer caches.
    #[inline(always)]
    pub(crate) fn prefetch_entries(self, id: u32) {
        let (own, block) = self.view.entries(id);
        prefetch_outer(own);
        prefetch_outer(block);
        prefetch_outer(&self.map[id as usize]);
    }

    /// `is_type_mapped`.
    #[inline(always)]
    pub(crate) fn is_mapped(self, id: u32) -> bool {
        self.map(id) <= MAX_ID
    }

    /// `resolve_type_id`: follows the canonical map to its end.
    #[inline(always)]
    pub(crate) fn resolve(self, id: u32) -> u32 {
        self.resolve_from(id, self.map(id))
    }

    /// [`Self::resolve`] of `id`, given `mapped_to = map(id)`.
    #[inline(always)]
    pub(crate) fn resolve_from(self, mut id: u32, mut mapped_to: u32) -> u32 {
        while mapped_to <= MAX_ID && mapped_to != id {
            id = mapped_to;
            mapped_to = self.map(id);
        }
        id
    }

    /// `resolve_fwd_id` of `id`, given `resolved = resolve(id)`: a FWD resolves to what it
    /// maps to only if that is not a FWD.
    #[inline(always)]
    pub(crate) fn resolve_fwd(self, id: u32, resolved: u32) -> u32 {
        if self.kind(id) == kind::FWD && self.kind(resolved) != kind::FWD {
            resolved
        } else {
            id
        }
    }
}

impl Types {
    /// The read-only side, borrowed.
    #[inline(always)]
    pub(crate) fn graph(&self) -> Graph<'_> {
        Graph {
            view: self.recs.store.view(),
            map: &self.map,
            start_id: self.start_id,
        }
    }

    /// See [`Graph::rec`].
    #[inline(always)]
    pub(crate) fn rec(&self, id: u32) -> Rec<'_> {
        self.recs.rec(id)
    }

    /// See [`Graph::kind`].
    #[inline(always)]
    pub(crate) fn kind(&self, id: u32) -> u32 {
        self.graph().kind(id)
    }

    /// See [`Graph::map`].
    #[inline(always)]
    pub(crate) fn map(&self, id: u32) -> u32 {
        self.graph().map(id)
    }

    #[inline(always)]
    pub(crate) fn set_map(&mut self, id: u32, to: u32) {
        self.graph().set_map(id, to);
    }

    /// One past the highest id.
    pub(crate) fn type_cnt(&self) -> u32 {
        self.graph().type_cnt()
    }
}

/// The dedup state (libbpf's `struct btf_dedup`); `map` lives in [`Types`].
pub(crate) struct Dedup {
    pub(crate) types: Types,
    /// `hypot_map` and `hypot_list` of the running equivalence check.
    pub(crate) hypot: HypotMap,
    pub(crate) hypot_adjust_canon: bool,
    pub(crate) table: CandTable,
    /// Pending (candidate, canonical) pairs of the running `is_equiv`.
    pub(crate) equiv_stack: Vec<(u32, u32)>,
    /// How far phases 2–4 are, for the thread classifying reference types meanwhile: every
    /// id below it is processed (`refs::DONE`: the phases are over).
    pub(crate) progress: Arc<StructFrontier>,
    /// Threads to use, at most one per core: with one, the reference types are ordered
    /// after the struct phase instead of beside it.
    pub(super) threads: usize,
    /// [`super::DedupOptions::freed`].
    pub(super) freed: Option<fn()>,
    /// When each phase ended, for `dedup_timed`.
    pub(super) marks: Vec<(&'static str, Instant)>,
    /// What was resident at the dedup's peak (noted at the end of the struct phase).
    pub(super) resident: Vec<Held>,
}

impl Dedup {
    /// Notes that `phase` ended now.
    pub(super) fn mark(&mut self, phase: &'static str) {
        self.marks.push((phase, Instant::now()));
    }

    /// Tells the caller that a phase has just freed much ([`super::DedupOptions::freed`]).
    pub(super) fn freed(&self) {
        if let Some(freed) = self.freed {
            freed();
        }
    }

    /// See [`Graph::resolve`].
    #[inline]
    pub(crate) fn resolve(&self, id: u32) -> u32 {
        self.types.graph().resolve(id)
    }
}

/// Asks the CPU to bring the line holding `v` into the outer caches (L2/L3, `prefetcht2`).
#[inline(always)]
fn prefetch_outer<T>(v: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint with no architectural effect, and the address comes from
    // a reference.
    unsafe {
        std::arch::x86_64::_mm_prefetch(
            (v as *const T).cast::<i8>(),
            std::arch::x86_64::_MM_HINT_T2,
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = v;
}
