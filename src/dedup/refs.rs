//! Phase 5: reference types (libbpf `btf_dedup_ref_types`).
//!
//! PTR, CONST, VOLATILE, RESTRICT, TYPE_TAG, FUNC, DECL_TAG, ARRAY and FUNC_PROTO. libbpf walks
//! them depth first from each unprocessed type in id order: the referenced ids of a type are
//! canonicalised first, then the now-stable record is looked up by exact equality among the
//! canonical types, so the first type of an equivalence class to *finish* becomes canonical.
//!
//! That is done here with the same outcome in three steps:
//!
//! 1. [`walk_finish_order`]: the order in which libbpf's walk finishes the reference types. It
//!    depends on the type graph alone (everything a reference type can bottom out in —
//!    primitives, structs, unions, typedefs, VAR, DATASEC, base types — is mapped when the
//!    phase starts, and no reference type is). A reference type met again while in progress
//!    is a cycle through reference types only, which C cannot produce: `Err`, like libbpf's
//!    `-ELOOP`. The walk keeps its state in the types' `map` entries (`OPEN` while a type is
//!    on the walk's stack, its class afterwards), so it needs no array of its own, and each
//!    type is classified as it finishes, so the order is never stored either.
//! 2. [`classify_early`], on a second thread while phases 2–4 run: in that order, each type's
//!    record, with referenced non-reference types replaced by their canonical ids and
//!    referenced reference types by their class numbers, is filed among the classes seen so
//!    far. A canonical id is used only once it is final (see [`KeyView::final_id`]); a type
//!    referencing one that is not (a FWD that may still be resolved, a type the struct phase
//!    has not reached) is deferred, and so is everything referencing a deferred type — about
//!    2.5 % of the kernel's 2 M reference types.
//! 3. [`Dedup::finish_ref_classes`], after phase 4: the deferred types are filed, then every
//!    type maps to the member of its class that finishes first — libbpf's canonical choice,
//!    since the first member of a class to finish finds no equal canonical type.
//!
//! Class membership is exact equality of the canonicalised records, as in libbpf's lookup
//! (a class number stands for the class's canonical id, one to one). libbpf writes the
//! canonical ids into the records as it goes; here the records stay as they are, since
//! compaction rewrites every reference through the canonical map anyway.
//!
//! Split BTF is classified after phase 4 in finish order ([`Dedup::dedup_ref_types`]): there a
//! class may join an equal base type, found through the candidate table in libbpf's order,
//! and that table is being filled by the struct phase until then.

use hashbrown::HashTable;
use rustc_hash::FxHasher;
use std::hash::{Hash, Hasher};

use super::entry::{entry_kind, entry_value, set_entry, MAX_ID, TAG, UNPROCESSED};
use super::handover::{self, StructFrontier};
use super::hash::{self, kind_of};
use super::records::Recs;
use super::state::Dedup;
use crate::btf::kinds::kind;
use crate::btf::store::Rec;
use crate::btf::types::for_each_type_id_word;
use crate::error::{DedupError, Result};
use crate::sync::AtomicU32;

/// Whether libbpf's reference-type phase deduplicates the raw kind `k`.
fn is_ref_kind(k: u32) -> bool {
    matches!(
        k,
        kind::CONST
            | kind::VOLATILE
            | kind::RESTRICT
            | kind::PTR
            | kind::FUNC
            | kind::TYPE_TAG
            | kind::DECL_TAG
            | kind::ARRAY
            | kind::FUNC_PROTO
    )
}

/// How many ids a reference type references, in libbpf's visiting order (the store's id
/// order: an array's element then index type, a FUNC_PROTO's return then parameter types).
fn ref_count(t: Rec<'_>) -> usize {
    match t.kind() {
        kind::ARRAY => 2,
        kind::FUNC_PROTO => 1 + t.vlen(),
        _ => 1,
    }
}

/// A reference type's `map` value while the finish-order walk has it on its stack (above
/// `MAX_ID`: every phase reads it as "not mapped", as it reads `UNPROCESSED`).
const OPEN: u32 = UNPROCESSED - 2;

/// Visits the own reference types (ids from `start_id`) in the order libbpf's depth-first
/// walk finishes them, calling `finish(id)` as each one finishes. A type's `map` entry says
/// where the walk is with it: `UNPROCESSED` before, `OPEN` on the stack, and after `finish`
/// whatever `finish` stored, which must be neither.
pub(crate) fn walk_finish_order(
    recs: &Recs,
    map: &[AtomicU32],
    start_id: u32,
    mut finish: impl FnMut(u32),
) -> Result<()> {
    let is_ref = |id: u32| id >= start_id && is_ref_kind(entry_kind(&map[id as usize]));
    let state = |id: u32| entry_value(&map[id as usize]);
    let open = |id: u32| set_entry(&map[id as usize], OPEN);
    let mut stack: Vec<(u32, usize)> = Vec::new();
    for root in start_id..recs.type_cnt() {
        if !is_ref(root) || state(root) != UNPROCESSED {
            continue;
        }
        open(root);
        stack.push((root, 0));
        while let Some(top) = stack.last_mut() {
            let (id, pos) = *top;
            let t = recs.rec(id);
            if pos == ref_count(t) {
                stack.pop();
                finish(id);
                debug_assert!(!matches!(state(id), UNPROCESSED | OPEN));
                continue;
            }
            top.1 += 1;
            let child = t.id(pos);
            if !is_ref(child) {
                continue;
            }
            match state(child) {
                UNPROCESSED => {
                    open(child);
                    stack.push((child, 0));
                }
                OPEN => return Err(DedupError::RefCycle { id: child }.into()),
                _ => {}
            }
        }
    }
    Ok(())
}

/// The classes of reference types found so far, numbered from 0 in the order found, by key
/// (a canonicalised record): class `c`'s key is `words[starts[c]..]`, up to the next class's.
#[derive(Default)]
struct Classes {
    /// Class numbers, by their key's hash.
    table: HashTable<u32>,
    starts: Vec<u32>,
    words: Vec<u32>,
}

impl Classes {
    /// Room for `classes` classes of keys of up to [`KEY_WORDS`] words on average, taken
    /// at once: vectors that grow by doubling leave each old block freed but resident in the
    /// heap, under the reference phase's peak. Room never used is never touched, so it takes
    /// no memory.
    fn with_capacity(classes: usize) -> Self {
        Classes {
            table: HashTable::with_capacity(classes),
            starts: Vec::with_capacity(classes),
            words: Vec::with_capacity(classes * KEY_WORDS),
        }
    }

    fn key(&self, class: u32) -> &[u32] {
        class_key(&self.starts, &self.words, class)
    }

    fn find(&self, h: u64, key: &[u32]) -> Option<u32> {
        self.table.find(h, |&c| self.key(c) == key).copied()
    }

    /// Adds the class of `key` (not found), returning its number.
    fn insert(&mut self, h: u64, key: &[u32]) -> u32 {
        let class = self.starts.len() as u32;
        self.starts.push(self.words.len() as u32);
        self.words.extend_from_slice(key);
        let (starts, words) = (&self.starts, &self.words);
        self.table
            .insert_unique(h, class, |&c| fx_hash(class_key(starts, words, c)));
        class
    }

    /// The bytes it holds.
    fn bytes(&self) -> usize {
        self.table.allocation_size()
            + std::mem::size_of_val(&self.starts[..])
            + std::mem::size_of_val(&self.words[..])
    }
}

/// The classes [`classify_early`] makes room for: one per this many own types. The hash
/// table's buckets are all touched however few classes there are, so the room is kept near
/// what kernels need (one class per 87 types on the reference, 104 on 7.3); the table rounds
/// it up to a power of two of buckets, and an input that needs more grows it once.
const CLASS_EVERY: usize = 96;
/// The key words per class it makes room for (3.6 on average on a kernel).
const KEY_WORDS: usize = 4;
/// The deferred types [`classify_early`] makes room for: one per this many own types (one
/// per 61 on the reference at -j2, 46 on 7.3). Room never used is never touched.
const DEFERRED_EVERY: usize = 32;

/// Class `class`'s key in [`Classes`]' `starts` and `words`.
fn class_key<'w>(starts: &[u32], words: &'w [u32], class: u32) -> &'w [u32] {
    let c = class as usize;
    let end = starts.get(c + 1).map_or(words.len(), |&e| e as usize);
    &words[starts[c] as usize..end]
}

/// While reference types are classified, their `map` entry holds `CLASS | class number`, or
/// `DEFERRED` when classification waits for phases 2–4 to end. Both are above `MAX_ID`, so
/// every phase reads them as "not mapped", exactly as libbpf's struct phase sees reference
/// types; and a class number in a key cannot be mistaken for a type id.
const CLASS: u32 = TAG;
const DEFERRED: u32 = UNPROCESSED - 1;

/// Reference types classified by canonicalised record (referenced reference types by class
/// number), the canonical member of each class being the one libbpf finishes first.
pub(crate) struct EarlyClasses {
    /// Per template number: a FUNC record uses it, and no other record does (see
    /// [`lone_func_templates`]).
    lone_funcs: Vec<bool>,
    classes: Classes,
    /// Per class number: (finish position, id) of its earliest member seen so far.
    first: Vec<(u32, u32)>,
    /// (finish position, id) of the types left for after phases 2–4, in finish order.
    deferred: Vec<(u32, u32)>,
}

impl EarlyClasses {
    /// Files the type `id`, at finish position `pos`, if its key is complete, and tags it
    /// with its class; otherwise tags it deferred.
    fn classify(&mut self, view: &KeyView, key: &mut Vec<u32>, pos: u32, id: u32) {
        if self.is_lone_func(view, id) {
            // Its class would hold it alone: it is its own canonical type, already final.
            set_entry(&view.map[id as usize], id);
            return;
        }
        let tag = if view.canonical_key(id, key) {
            CLASS | self.file(key, pos, id)
        } else {
            self.deferred.push((pos, id));
            DEFERRED
        };
        set_entry(&view.map[id as usize], tag);
    }

    /// Whether `id` is a FUNC whose template no other record has. libbpf's FUNCs are
    /// equal when their name, linkage and canonical prototype are, so such a FUNC equals no
    /// other type and stays canonical. A kernel's FUNCs come from the final pass, one per
    /// name (nearly 60,000 on a 7.3 kernel), and filing each under a class of its own took
    /// about 1 MiB at the reference phase's peak.
    fn is_lone_func(&self, view: &KeyView, id: u32) -> bool {
        // The kind from the entry: only FUNCs' records are read here.
        entry_kind(&view.map[id as usize]) == kind::FUNC
            && (view.recs.rec(id).template()).is_some_and(|t| self.lone_funcs[t as usize])
    }

    /// Files the type at finish position `pos` under the class of `key`.
    fn file(&mut self, key: &[u32], pos: u32, id: u32) -> u32 {
        let h = fx_hash(key);
        let class = match self.classes.find(h, key) {
            Some(class) => class,
            None => {
                self.first.push((pos, id));
                self.classes.insert(h, key)
            }
        };
        let first = &mut self.first[class as usize];
        if pos < first.0 {
            *first = (pos, id);
        }
        class
    }
}

/// What [`canonical_key`] needs to read: the records, the canonical map, and how far phases
/// 2–4 are.
struct KeyView<'a> {
    recs: &'a Recs,
    map: &'a [AtomicU32],
    progress: &'a StructFrontier,
}

impl KeyView<'_> {
    /// The canonical id of the non-reference type `id` once it is final (see `handover.rs`).
    fn final_id(&self, id: u32) -> Option<u32> {
        handover::final_id(self.map, self.progress, id, |t| {
            entry_kind(&self.map[t as usize]) == kind::FWD
        })
    }

    /// The key of reference type `id`: its record's template number, then its referenced
    /// ids with non-reference types replaced by their final canonical ids and reference types
    /// by their tagged class numbers; `false` if one of them is not final or not classified
    /// yet. Templates are interned, so two keys are equal exactly when the canonicalised
    /// records are, in a fraction of their words.
    fn canonical_key(&self, id: u32, key: &mut Vec<u32>) -> bool {
        key.clear();
        let rec = self.recs.rec(id);
        key.push(rec.template().expect("own records are compact"));
        for k in 0..ref_count(rec) {
            let child = rec.id(k);
            if child == 0 {
                key.push(0);
                continue;
            }
            let entry = &self.map[child as usize];
            let canonical = if is_ref_kind(entry_kind(entry)) {
                // A class number (tagged), or a lone FUNC's own id (final, untagged).
                let m = entry_value(entry);
                (m <= MAX_ID || (m & CLASS != 0 && m != DEFERRED)).then_some(m)
            } else {
                self.final_id(child)
            };
            let Some(canonical) = canonical else {
                return false;
            };
            key.push(canonical);
        }
        true
    }
}

/// Classifies the own reference types (ids from `start_id`) in finish order while phases 2–4
/// run (`progress`), as far as their referenced types are final; tags the others deferred.
/// Non-split BTF only.
pub(crate) fn classify_early(
    recs: &Recs,
    map: &[AtomicU32],
    start_id: u32,
    progress: &StructFrontier,
) -> Result<EarlyClasses> {
    let view = KeyView {
        recs,
        map,
        progress,
    };
    // A kernel's reference types fall into about one class per 90 types (39,415 of the
    // reference's 3.4 M, 49,175 of 7.3's 5.1 M), its FUNCs left aside.
    let own = recs.type_cnt().saturating_sub(start_id) as usize;
    let classes = own / CLASS_EVERY;
    let mut early = EarlyClasses {
        lone_funcs: lone_func_templates(recs, map, start_id),
        classes: Classes::with_capacity(classes),
        first: Vec::with_capacity(classes),
        deferred: Vec::with_capacity(own / DEFERRED_EVERY),
    };
    let (mut key, mut pos) = (Vec::new(), 0u32);
    walk_finish_order(recs, map, start_id, |id| {
        early.classify(&view, &mut key, pos, id);
        pos += 1;
    })?;
    Ok(early)
}

/// Per template number of `recs`' store: whether exactly one own record uses it, and that
/// record is a FUNC. A template holds its record's `info`, so only FUNCs share a FUNC's
/// template: counting the FUNCs' (their kinds are in `map`) is enough. (Non-split BTF: no
/// base record can equal an own one.)
fn lone_func_templates(recs: &Recs, map: &[AtomicU32], start_id: u32) -> Vec<bool> {
    let mut uses = vec![0u8; recs.store.templates()];
    let funcs =
        (start_id..recs.type_cnt()).filter(|&id| entry_kind(&map[id as usize]) == kind::FUNC);
    for id in funcs {
        if let Some(t) = recs.rec(id).template() {
            uses[t as usize] = uses[t as usize].saturating_add(1);
        }
    }
    uses.into_iter().map(|n| n == 1).collect()
}

impl EarlyClasses {
    /// What it holds, as `--stats` lines: its classes and the types it deferred.
    pub(crate) fn held(&self) -> crate::measure::Held {
        let bytes = self.classes.bytes()
            + std::mem::size_of_val(&self.first[..])
            + std::mem::size_of_val(&self.deferred[..]);
        crate::measure::Held {
            what: format!(
                "  reference classes found during the struct phase: {} classes, {} types deferred",
                self.first.len(),
                self.deferred.len()
            ),
            bytes,
        }
    }
}

fn fx_hash(words: &[u32]) -> u64 {
    let mut h = FxHasher::default();
    words.hash(&mut h);
    h.finish()
}

impl Dedup {
    /// After phases 2–4: classifies the deferred types (everything is final now), then maps
    /// every reference type to the earliest-finished member of its class.
    pub(crate) fn finish_ref_classes(&mut self, mut early: EarlyClasses) {
        let view = KeyView {
            recs: &self.types.recs,
            map: &self.types.map,
            progress: &self.progress,
        };
        let mut key = Vec::new();
        for (pos, id) in std::mem::take(&mut early.deferred) {
            early.classify(&view, &mut key, pos, id);
        }
        debug_assert!(
            early.deferred.is_empty(),
            "after phase 4 every referenced type is final"
        );
        let g = self.types.graph();
        for id in g.start_id..g.type_cnt() {
            let m = g.map(id);
            if is_ref_kind(g.kind(id)) && m & CLASS != 0 {
                g.set_map(id, early.first[(m & !CLASS) as usize].1);
            }
        }
    }

    /// Maps every own reference type of split BTF, in finish order (see
    /// [`walk_finish_order`]), to its canonical type.
    pub(crate) fn dedup_ref_types(&self) -> Result<()> {
        let mut classes = Classes::default();
        // Per class number: the canonical id (a base type's or the class's first own type's).
        let mut canonical = Vec::new();
        let mut key = Vec::new();
        let g = self.types.graph();
        walk_finish_order(&self.types.recs, &self.types.map, g.start_id, |id| {
            self.canonical_record(id, &mut key);
            let h = fx_hash(&key);
            let canon = match classes.find(h, &key) {
                Some(class) => canonical[class as usize],
                None => {
                    let c = self.base_equal(&key).unwrap_or(id);
                    classes.insert(h, &key);
                    canonical.push(c);
                    c
                }
            };
            g.set_map(id, canon);
        })
    }

    /// The record of `id` with every referenced id replaced by its canonical id.
    fn canonical_record(&self, id: u32, key: &mut Vec<u32>) {
        key.clear();
        self.types.rec(id).write_to(key);
        for_each_type_id_word(key[1], |i| key[i] = self.resolve(key[i]));
    }

    /// The base type libbpf's lookup would find equal to the canonicalised record `t`, if any
    /// (split BTF; the candidate table holds no own reference type).
    fn base_equal(&self, t: &[u32]) -> Option<u32> {
        if self.types.start_id == 1 {
            return None;
        }
        let (h, eq): (u64, hash::Equal) = match kind_of(t) {
            kind::DECL_TAG => (hash::hash_int_decl_tag(t), hash::equal_int_tag),
            kind::ARRAY => (hash::hash_array(t), hash::equal_array),
            kind::FUNC_PROTO => (hash::hash_fnproto(t), hash::equal_fnproto),
            _ => (hash::hash_common(t), hash::equal_common),
        };
        let mut cur = self.table.cursor(h);
        let mut cand = Vec::new();
        while let Some(c) = self.table.next(&mut cur, h) {
            cand.clear();
            self.types.rec(c).write_to(&mut cand);
            if eq(t, &cand) {
                return Some(c);
            }
        }
        None
    }
}
