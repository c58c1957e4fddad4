//! BTF deduplication with libbpf v1.7.0 semantics: `dedup(btf)` produces, byte for byte, what
//! libbpf v1.7.0's `btf__dedup(btf, opts)` produces for the same input.
//!
//! # The algorithm
//!
//! Dedup finds, for every type, a *canonical* representative among the types that describe the
//! same C type, then drops every non-canonical type and renumbers the survivors. Compilers emit
//! one copy of every type per compilation unit, so a kernel's pre-dedup BTF holds thousands of
//! copies of `struct task_struct`, `int`, `const char *` ...; dedup merges them, resolving
//! forward declarations against full definitions on the way.
//!
//! The state (`state.rs`, `Dedup` there) is that of libbpf's `struct btf_dedup`:
//!
//! * `map[id]`: the canonical id of `id` (itself when canonical), `UNPROCESSED` before a
//!   decision. VAR and DATASEC map to themselves from the start: they are never deduplicated.
//!   A type is *mapped* when `map[id] <= MAX_ID` (2^26 − 1; libbpf's bound is 2^31 − 1, and
//!   the dedup takes 2^26 − 3 types); `resolve(id)` follows the map chain to its end. Each
//!   entry keeps its type's kind in its top 5 bits (`entry.rs`), so the kind needs
//!   no array of its own and is read with the map value.
//! * the candidate table (`table.rs`): a multimap from a type's signature hash to the
//!   canonical ids with that hash, reproducing libbpf's hashmap bucket chains so that
//!   candidates are tried in exactly libbpf's order.
//! * `hypot_map`/`hypot_list` (`hypot.rs`): the hypothetical canonical → candidate mapping
//!   built by one graph-equivalence check, reset through the list of touched entries.
//!
//! Phases, in libbpf's order (one module each):
//!
//! 0. **prep** (this module): for split BTF every base type is canonical (`map[id] = id`) and
//!    is entered into the candidate table (with `hash_common` for base TYPEDEFs, as v1.7.0 does —
//!    so base typedefs are never matched; the later libbpf fix is deliberately not applied).
//! 1. **strings** (`strings.rs`): only when the string section may hold duplicates or unused
//!    strings (BTF parsed from bytes, `strs_deduped == false`): every string reference, in type
//!    order and libbpf's field order, is re-added to a fresh section (first reference wins,
//!    unused strings vanish); in split BTF a string already present in the base is rewritten to
//!    the base offset. BTF built with the `add_*` API skips this phase, like libbpf.
//! 2. **primitives** (`prim.rs`): INT, FLOAT, FWD, ENUM, ENUM64 by exact equality, in id order,
//!    with enum forward declarations resolved to full enums (which may re-point an already
//!    canonical enum fwd to a later full enum).
//! 3. **structs, unions and typedefs** (`structs.rs`): for each candidate with the same shallow
//!    signature, a side-by-side DFS of both type graphs (`is_equiv`) decides equivalence,
//!    resolving FWDs on the canonical side and recording a hypothetical mapping; on success the
//!    mapping is merged (FWD → struct resolutions, and struct → struct pre-mappings that speed up
//!    later decisions). The v1.6+ `identical_types` fallback, including its ARRAY quirk (both
//!    array descriptors are read from the first type), is reproduced.
//! 4. **unambiguous forward declarations** (`fwd.rs`): a FWD left unresolved is mapped to the
//!    only canonical struct/union with its name, if there is exactly one (base included).
//! 5. **reference types** (`refs.rs`): PTR, CONST, VOLATILE, RESTRICT, TYPE_TAG, FUNC,
//!    DECL_TAG, ARRAY and FUNC_PROTO, by exact equality of their records with referenced ids
//!    canonicalised; the first copy libbpf's depth-first walk would finish becomes canonical.
//!    That order depends on the graph alone, and most types can be classified as soon as the
//!    ids they reference are final, so a second thread does both during phases 2–4.
//! 6. **compaction and remapping** (`compact.rs`): canonical own types are kept in id order and
//!    renumbered from `start_id`; every referenced id is rewritten through `resolve` and the
//!    renumbering. Base types never move and are never rewritten.
//!
//! # Stack depth
//!
//! libbpf recurses through the type graph in `is_equiv` and in the reference-type DFS; on a
//! kernel the chains (struct → ptr → struct ...) run thousands deep. Both are implemented here
//! with explicit stacks (reused across calls, so they do not allocate per type), which visit
//! the types in exactly the recursive order: `is_equiv` has no work after a child returns
//! except propagating a failure, so a pre-order stack walk is equivalent; the reference-type
//! order keeps a frame per type with the index of the next field to visit. The only recursion left
//! is `identical_types`, bounded by its depth limit of 16 (its modifier loop is guarded against
//! cycles, where libbpf would spin forever).
//!
//! # Errors
//!
//! Malformed input yields an error, and the BTF keeps its records: [`Error::Record`] for a
//! record that does not fit, has an unknown kind, or references a type past the last or a
//! string past the section; [`Error::Dedup`] for the graph (reference-type cycles, struct
//! members of impossible kinds). As with libbpf, a failure after the string phase leaves the
//! strings deduplicated (still consistent with the records).
//!
//! [`Error::Record`]: crate::error::Error::Record
//! [`Error::Dedup`]: crate::error::Error::Dedup
//!
//! # Threads
//!
//! [`DedupOptions::threads`] only changes how the work is spread, never the result: the record
//! checks split by id range (`par.rs`), and the reference types are ordered and mostly
//! classified beside phases 2–4 (`refs.rs`), reading the canonical map as the struct phase
//! writes it (hence atomics, with plain loads and stores).

mod ahead;
mod compact;
mod entry;
pub mod error;
mod fwd;
pub mod handover;
mod hash;
mod hypot;
mod par;
mod prim;
mod records;
mod refs;
mod state;
mod strings;
mod structs;
mod table;

use handover::StructFrontier;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::btf::kinds::kind;
use crate::btf::store::Store;
use crate::btf::Btf;
use crate::error::{DedupError, Result};
use crate::measure::Held;
use crate::sync::AtomicU32;
use hash::kind_of;
use hypot::HypotMap;
use records::check_own;
pub use records::store_with_base;
pub(crate) use records::Recs;
use state::{Dedup, Types};
use table::CandTable;

/// Options of [`dedup`], mirroring libbpf's `struct btf_dedup_opts`.
#[derive(Clone, Copy, Debug, Default)]
pub struct DedupOptions {
    /// Make every signature hash collide (libbpf's testing knob). The result is identical;
    /// only the time changes (quadratically).
    pub force_collisions: bool,
    /// Threads for the passes that split by type id and for ordering the reference types
    /// beside the struct phase (0: one per core; never more than one per core). The result
    /// does not depend on it.
    pub threads: usize,
    /// Called after the phases that free much of what they built (the setup's copies, the
    /// struct phase's hypothetical map, the reference classes, the store's positions), so
    /// that the caller can give the freed heap back to the system before the next phase's
    /// peak stands on it: a vector that grows by doubling below the allocator's mapping
    /// threshold leaves its old blocks free but resident. The library leaves the process's
    /// allocator alone.
    pub freed: Option<fn()>,
}

/// Deduplicates `btf` in place with libbpf v1.7.0 `btf__dedup` semantics. Split BTF is
/// deduplicated against its base, which is never modified.
pub fn dedup(btf: &mut Btf, opts: &DedupOptions) -> Result<()> {
    dedup_timed(btf, opts).map(drop)
}

/// What a [`dedup_timed`] run measured.
#[derive(Clone, Debug, Default)]
pub struct DedupRun {
    /// How long each phase took, in order (`-V` prints them). With more than one thread,
    /// "reference wait" is the time the main thread waited, after phase 4, for the thread
    /// ordering and classifying the reference types.
    pub phases: Vec<(&'static str, Duration)>,
    /// The large structures the phases held (`--stats` prints them).
    pub held: Vec<Held>,
}

/// [`dedup`], also returning how long each phase took and what it held.
pub fn dedup_timed(btf: &mut Btf, opts: &DedupOptions) -> Result<DedupRun> {
    let start = Instant::now();
    let mut marks = Vec::new();
    check_own(btf, opts.threads)?;
    let mut store = store_with_base(btf)?;
    marks.push(("records", Instant::now()));
    if !btf.strs_deduped {
        strings::dedup_strings(btf)?;
        btf.strs_deduped = true;
        marks.push(("strings", Instant::now()));
    }
    let (words, offs, _) = btf.raw_parts_mut();
    for id in 0..offs.len() {
        let end = offs.get(id + 1).map_or(words.len(), |&e| e as usize);
        store.push(&words[offs[id] as usize..end])?;
    }
    (*words, *offs) = (Vec::new(), Vec::new());
    run_on_store(btf, store, opts, start, marks)
}

/// [`dedup_timed`] of the BTF whose first own records are in `store` (which holds every id
/// from `void` on: the base's records, then those own ones) and whose other own records, if
/// any, follow in `btf` (see [`Btf::hold_in_store`]). The encoder's path: its records never
/// exist as raw words all at once.
pub fn dedup_store(btf: &mut Btf, mut store: Store, opts: &DedupOptions) -> Result<DedupRun> {
    let start = Instant::now();
    debug_assert_eq!(store.len(), btf.start_id() + btf.held());
    // Straight from the BTF: a copy of the tail (~80,000 small vectors on a kernel) would
    // leave its freed chunks resident in the heap under the whole dedup.
    for t in btf.own_types() {
        store.push(t.words)?;
    }
    btf.release_held();
    let (words, offs, _) = btf.raw_parts_mut();
    (*words, *offs) = (Vec::new(), Vec::new());
    // The raw tail (the final pass's records, ~3 MB on a kernel) is freed: give it back
    // before the positions and `map` are laid beside the store.
    if let Some(freed) = opts.freed {
        freed();
    }
    if !btf.strs_deduped {
        // Only BTF read from bytes carries duplicate strings; it takes the raw path.
        let own = store.raw_own_records();
        let (words, offs, _) = btf.raw_parts_mut();
        (*words, *offs) = own;
        return dedup_timed(btf, opts);
    }
    // The encoder's merge defers the positions (its peak is at its last batches), and
    // the records pushed here are the last.
    store.record_positions(par::threads_for(opts.threads));
    store.shrink_to_fit();
    store.release_index();
    run_on_store(btf, store, opts, start, vec![("records", Instant::now())])
}

/// Runs the phases on `store` (every record from `void` on) and puts the result in `btf`;
/// after an error, `btf` gets its own records back.
fn run_on_store(
    btf: &mut Btf,
    store: Store,
    opts: &DedupOptions,
    start: Instant,
    mut marks: Vec<(&'static str, Instant)>,
) -> Result<DedupRun> {
    let start_id = btf.start_id();
    let (recs, map) = match Recs::entries_checked(&store, start_id, opts.threads) {
        Ok(map) => (Recs { store }, map),
        Err(e) => {
            let (words, offs, _) = btf.raw_parts_mut();
            (*words, *offs) = store.raw_own_records();
            return Err(e);
        }
    };
    let mut held = vec![
        Held {
            what: format!(
                "dedup's record store: {} records, {} distinct templates",
                recs.store.len(),
                recs.store.templates()
            ),
            bytes: recs.store.bytes(),
        },
        Held {
            what: "dedup's per-id state: canonical map (with the kinds)".into(),
            bytes: std::mem::size_of_val(&map[..]),
        },
    ];
    let mut d = Dedup::new(start_id, recs, map, opts);
    marks.push(("setup", Instant::now()));
    let result = d.run().and_then(|()| d.compact_and_remap());
    d.mark("compaction");
    marks.append(&mut d.marks);
    held.append(&mut d.resident);
    let (words, offs, _) = btf.raw_parts_mut();
    match result {
        Ok((new_words, new_offs)) => {
            *words = new_words;
            *offs = new_offs;
            let mut since = start;
            let phases = marks
                .into_iter()
                .map(|(phase, end)| (phase, end - std::mem::replace(&mut since, end)))
                .collect();
            Ok(DedupRun { phases, held })
        }
        Err(e) => {
            (*words, *offs) = d.into_own_records();
            Err(e)
        }
    }
}

impl Dedup {
    /// `btf_dedup_new` over `recs`, whose initial `map` is `map`
    /// ([`Recs::entries_checked`]).
    fn new(start_id: u32, recs: Recs, map: Vec<AtomicU32>, opts: &DedupOptions) -> Self {
        let cnt = recs.type_cnt() as usize;
        Dedup {
            types: Types {
                recs: Arc::new(recs),
                map: Arc::new(map),
                start_id,
            },
            hypot: HypotMap::new(cnt),
            hypot_adjust_canon: false,
            table: CandTable::new(opts.force_collisions, cnt / 4),
            equiv_stack: Vec::new(),
            progress: Arc::new(StructFrontier::default()),
            threads: par::threads_for(opts.threads),
            freed: opts.freed,
            marks: Vec::new(),
            resident: Vec::new(),
        }
    }

    /// The own records and their offsets, handed back after a failure.
    fn into_own_records(self) -> (Vec<u32>, Vec<u32>) {
        self.types.recs.store.raw_own_records()
    }

    fn run(&mut self) -> Result<()> {
        self.freed();
        self.prep()?;
        let recs = Arc::clone(&self.types.recs);
        let map = Arc::clone(&self.types.map);
        let progress = Arc::clone(&self.progress);
        let start_id = self.types.start_id;
        if start_id > 1 {
            // Split BTF: classes may join base types, found through the candidate table,
            // which the struct phase is still filling; classify afterwards.
            self.dedup_non_ref_types()?;
            drop((recs, map));
            self.dedup_ref_types()?;
            self.mark("reference types");
            return Ok(());
        }
        let classify = || -> Result<_> { refs::classify_early(&recs, &map, start_id, &progress) };
        let classified = if self.threads == 1 {
            let phases = self.dedup_non_ref_types();
            self.progress.finish();
            let classified = phases.and_then(|()| classify())?;
            self.mark("reference order");
            classified
        } else {
            // Reference types only need the type graph and, for each, the final canonical ids
            // of what it references: classify them on another core while phases 2–4 run,
            // leaving for later those whose referenced types are not final yet.
            std::thread::scope(|s| {
                let helper = s.spawn(classify);
                let phases = self.dedup_non_ref_types();
                self.progress.finish();
                let classified = helper
                    .join()
                    .unwrap_or_else(|p| std::panic::resume_unwind(p));
                self.mark("reference wait");
                phases.and(classified)
            })?
        };
        drop((recs, map));
        self.resident.push(classified.held());
        self.finish_ref_classes(classified);
        self.freed();
        self.mark("reference classes");
        Ok(())
    }

    /// Notes what the per-id state and the tables hold resident now, at the end of the struct
    /// phase: the dedup's peak, before the reference phase frees the hypothetical map.
    fn note_resident(&mut self) {
        use crate::measure::resident_bytes;
        let (table, entries) = self.table.resident();
        let recs = &self.types.recs;
        self.resident = vec![
            Held {
                what: "  at the struct phase's end, resident: record store".into(),
                bytes: recs.store.resident(),
            },
            Held {
                what: "  at the struct phase's end, resident: canonical map (with the kinds)"
                    .into(),
                bytes: resident_bytes(&self.types.map),
            },
            Held {
                what: "  at the struct phase's end, held: hypothetical map".into(),
                bytes: self.hypot.bytes(),
            },
            Held {
                what: format!(
                    "  at the struct phase's end, resident: candidate table ({entries} entries)"
                ),
                bytes: table,
            },
            Held {
                what: "  at the struct phase's end, the process's resident set".into(),
                bytes: (crate::measure::status_mib("VmRSS:") << 20) as usize,
            },
        ];
    }

    /// Phases 2 to 4.
    fn dedup_non_ref_types(&mut self) -> Result<()> {
        self.dedup_prim_types();
        self.mark("primitives");
        self.dedup_struct_types()?;
        self.note_resident();
        // Only equivalence checks use the hypothetical map: its touched pages go now rather
        // than stay under the reference types' peak.
        self.hypot = HypotMap::new(0);
        self.freed();
        self.mark("structs");
        self.resolve_fwds();
        self.mark("forward declarations");
        Ok(())
    }

    /// `btf_dedup_prep`: base types are canonical and become candidates.
    fn prep(&mut self) -> Result<()> {
        let mut unknown = None;
        let graph = self.types.graph();
        let mut words = Vec::new();
        let candidates = (1..graph.start_id).filter_map(|id| {
            graph.set_map(id, id);
            words.clear();
            graph.rec(id).write_to(&mut words);
            let t = &words[..];
            Some(match kind_of(t) {
                kind::VAR | kind::DATASEC => return None,
                kind::CONST
                | kind::VOLATILE
                | kind::RESTRICT
                | kind::PTR
                | kind::FWD
                | kind::TYPEDEF
                | kind::FUNC
                | kind::FLOAT
                | kind::TYPE_TAG => (hash::hash_common(t), id),
                kind::INT | kind::DECL_TAG => (hash::hash_int_decl_tag(t), id),
                kind::ENUM | kind::ENUM64 => (hash::hash_enum(t), id),
                kind::STRUCT | kind::UNION => (hash::hash_struct(t), id),
                kind::ARRAY => (hash::hash_array(t), id),
                kind::FUNC_PROTO => (hash::hash_fnproto(t), id),
                k => {
                    unknown.get_or_insert((id, k));
                    return None;
                }
            })
        });
        self.table.append_all(candidates);
        match unknown {
            Some((id, kind)) => Err(DedupError::UnknownBaseKind { id, kind }.into()),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::btf::Kind;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// The caller hears of each phase that freed much: after the setup, the struct phase, the
    /// reference classes and the store's positions (before compaction builds the output), on
    /// either path of the reference phase.
    #[test]
    fn the_caller_is_told_after_each_freeing_phase() {
        static CALLS: AtomicUsize = AtomicUsize::new(0);
        for threads in [1, 2] {
            CALLS.store(0, Ordering::SeqCst);
            let mut btf = Btf::new();
            let int = btf
                .add_int(b"int", 4, crate::btf::kinds::INT_SIGNED)
                .unwrap();
            for _ in 0..2 {
                btf.add_ref(Kind::Ptr, None, int).unwrap();
            }
            let opts = DedupOptions {
                threads,
                freed: Some(|| {
                    CALLS.fetch_add(1, Ordering::SeqCst);
                }),
                ..DedupOptions::default()
            };
            dedup(&mut btf, &opts).unwrap();
            assert_eq!(btf.type_cnt(), 3, "the two pointers are one");
            assert_eq!(CALLS.load(Ordering::SeqCst), 4, "with {threads} threads");
        }
    }
}
