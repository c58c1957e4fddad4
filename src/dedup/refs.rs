//! Phase 5: reference types (libbpf `btf_dedup_ref_types`).
//!
//! PTR, CONST, VOLATILE, RESTRICT, TYPE_TAG, FUNC, DECL_TAG, ARRAY and FUNC_PROTO. libbpf walks
//! them depth first from each unprocessed type in id order: the referenced ids of a type are
//! canonicalised first, then the now-stable record is looked up by exact equality among the
//! canonical types, so the first type of an equivalence class to *finish* becomes canonical.
//!
//! That is done here in two steps with the same outcome:
//!
//! 1. [`finish_order`]: the order in which libbpf's walk finishes the reference types. It
//!    depends on the type graph alone (everything a reference type can bottom out in —
//!    primitives, structs, unions, typedefs, VAR, DATASEC, base types — is already mapped when
//!    the phase starts, and no reference type is), so it is computed on another thread while
//!    the struct phase runs. A reference type met again while in progress is a cycle through
//!    reference types only, which C cannot produce: `Err`, like libbpf's `-ELOOP`.
//! 2. [`Dedup::dedup_ref_types`]: in that order, each type's record with its referenced ids
//!    canonicalised is looked up among the classes seen so far; the first member of a class is
//!    its canonical type. In split BTF a class first looks for an equal base type through the
//!    candidate table, in libbpf's candidate order, as libbpf's lookup does.
//!
//! libbpf writes the canonical ids into the records as it goes; here the records stay as they
//! are, since compaction rewrites every reference through the canonical map anyway.

use hashbrown::HashTable;
use rustc_hash::FxHasher;
use std::hash::{Hash, Hasher};

use super::hash::{self, kind_of, vlen};
use super::{for_each_id_field, kind, Dedup, Rec};
use crate::error::{Error, Result};

/// An exact-equality predicate on two records.
type Equal = fn(&[u32], &[u32]) -> bool;

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

/// Word index of the `i`-th referenced id of a reference type, in libbpf's visiting order,
/// or `None` past the last one.
fn ref_field(t: &[u32], i: usize) -> Option<usize> {
    match kind_of(t) {
        kind::ARRAY => [3, 4].get(i).copied(),
        kind::FUNC_PROTO => match i {
            0 => Some(2),
            _ if i <= vlen(t) => Some(3 + 2 * (i - 1) + 1),
            _ => None,
        },
        _ => (i == 0).then_some(2),
    }
}

/// The own reference types (ids from `start_id`, records in `own` where `recs` says) in the
/// order libbpf's depth-first walk finishes them.
pub(crate) fn finish_order(own: &[u32], recs: &[Rec], start_id: u32) -> Result<Vec<u32>> {
    #[derive(Clone, Copy, PartialEq)]
    enum State {
        Unseen,
        Open,
        Done,
    }
    let rec = |id: u32| &own[recs[id as usize].off as usize..];
    let is_ref = |id: u32| id >= start_id && is_ref_kind(recs[id as usize].kind);
    let own_cnt = recs.len() - start_id as usize;
    let mut state = vec![State::Unseen; own_cnt];
    let mut order = Vec::new();
    let mut stack: Vec<(u32, usize)> = Vec::new();
    for root in start_id..recs.len() as u32 {
        if !is_ref(root) || state[(root - start_id) as usize] == State::Done {
            continue;
        }
        state[(root - start_id) as usize] = State::Open;
        stack.push((root, 0));
        while let Some(top) = stack.last_mut() {
            let (id, pos) = *top;
            let Some(field) = ref_field(rec(id), pos) else {
                state[(id - start_id) as usize] = State::Done;
                order.push(id);
                stack.pop();
                continue;
            };
            top.1 += 1;
            let child = rec(id)[field];
            if !is_ref(child) {
                continue;
            }
            match state[(child - start_id) as usize] {
                State::Done => {}
                State::Open => {
                    return Err(Error::BadBtf(format!(
                        "type [{child}] is part of a reference type cycle"
                    )))
                }
                State::Unseen => {
                    state[(child - start_id) as usize] = State::Open;
                    stack.push((child, 0));
                }
            }
        }
    }
    Ok(order)
}

/// The canonical reference types found so far, by canonicalised record.
#[derive(Default)]
struct Classes {
    /// `(canonical id, start, len)` of each class's record in `words`.
    table: HashTable<(u32, u32, u32)>,
    words: Vec<u32>,
}

impl Classes {
    fn find(&self, h: u64, key: &[u32]) -> Option<u32> {
        self.table
            .find(h, |&(_, s, n)| {
                &self.words[s as usize..(s + n) as usize] == key
            })
            .map(|&(id, _, _)| id)
    }

    fn insert(&mut self, h: u64, key: &[u32], id: u32) {
        let start = self.words.len() as u32;
        self.words.extend_from_slice(key);
        let words = &self.words;
        self.table
            .insert_unique(h, (id, start, key.len() as u32), |&(_, s, n)| {
                fx_hash(&words[s as usize..(s + n) as usize])
            });
    }
}

fn fx_hash(words: &[u32]) -> u64 {
    let mut h = FxHasher::default();
    words.hash(&mut h);
    h.finish()
}

impl Dedup {
    /// Maps every own reference type, visited in `order` (see [`finish_order`]), to its
    /// canonical type.
    pub(crate) fn dedup_ref_types(&mut self, order: &[u32]) {
        let mut classes = Classes::default();
        let mut key = Vec::new();
        for &id in order {
            self.canonical_record(id, &mut key);
            let h = fx_hash(&key);
            let canon = match classes.find(h, &key) {
                Some(c) => c,
                None => {
                    let c = self.base_equal(&key).unwrap_or(id);
                    classes.insert(h, &key, c);
                    c
                }
            };
            self.types.set_map(id, canon);
        }
    }

    /// The record of `id` with every referenced id replaced by its canonical id.
    fn canonical_record(&self, id: u32, key: &mut Vec<u32>) {
        key.clear();
        key.extend_from_slice(self.types.rec_exact(id));
        for_each_id_field(key[1], |i| key[i] = self.resolve(key[i]));
    }

    /// The base type libbpf's lookup would find equal to the canonicalised record `t`, if any
    /// (split BTF; the candidate table holds no own reference type).
    fn base_equal(&self, t: &[u32]) -> Option<u32> {
        if self.types.start_id == 1 {
            return None;
        }
        let (h, eq): (u64, Equal) = match kind_of(t) {
            kind::DECL_TAG => (hash::hash_int_decl_tag(t), hash::equal_int_tag),
            kind::ARRAY => (hash::hash_array(t), hash::equal_array),
            kind::FUNC_PROTO => (hash::hash_fnproto(t), hash::equal_fnproto),
            _ => (hash::hash_common(t), hash::equal_common),
        };
        let mut cur = self.table.cursor(h);
        while let Some(c) = self.table.next(&mut cur, h) {
            if eq(t, self.types.rec(c)) {
                return Some(c);
            }
        }
        None
    }
}
