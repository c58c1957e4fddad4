//! Phases 6 and 7: compaction and id remapping (libbpf `btf_dedup_compact_types`,
//! `btf_dedup_remap_types`).
//!
//! Own types that are their own canonical representative survive, in id order, renumbered
//! from `start_id`; base ids keep their numbers. Every referenced id of every survivor (libbpf's
//! IDS field order) becomes `new_id[resolve(id)]`.
//!
//! libbpf keeps `new_id` in `hypot_map`'s array. Here it is kept in `map` itself, which is
//! where compaction's memory peak was otherwise (a second array of 4 bytes an id): a canonical
//! own id's entry becomes `RENUMBERED | new id`. That value is above `MAX_ID`, so
//! `resolve` reads it as "not mapped" and still ends every chain at the canonical id, whose
//! entry then gives the new id. The result is built in fresh vectors so that the
//! [`crate::btf::Btf`] is only replaced once everything succeeded.

use std::sync::Arc;

use super::entry::{MAX_ID, TAG, UNPROCESSED};
use super::state::Dedup;
use super::table::CandTable;
use crate::btf::types::for_each_type_id_word;
use crate::error::{DedupError, Result};

/// Marks a `map` value that is a surviving own type's new id (ids are at most `MAX_ID`,
/// below this bit).
const RENUMBERED: u32 = TAG;

impl Dedup {
    /// The surviving own records (remapped) and their word offsets.
    pub(crate) fn compact_and_remap(&mut self) -> Result<(Vec<u32>, Vec<u32>)> {
        // Compaction reads only the records and `map`: the candidate table goes first.
        self.table = CandTable::new(false, 0);
        let (kept_words, starts) = self.renumber_in_map();
        self.release_positions();
        self.freed();
        let g = self.types.graph();
        let start = g.start_id;
        // The new id of a referenced id: its canonical id's, or the base id it resolves to.
        let new_id = |id: u32| -> Option<u32> {
            let canon = g.resolve(id);
            if canon < start {
                return Some(canon);
            }
            let m = g.map(canon);
            (m != UNPROCESSED && m & RENUMBERED != 0).then_some(m & !RENUMBERED)
        };
        let view = self.types.recs.store.view();
        let mut words = Vec::with_capacity(kept_words);
        let mut offs = Vec::with_capacity(starts.len());
        let survivors = (start..g.type_cnt()).filter(|&id| {
            let m = g.map(id);
            m != UNPROCESSED && m & RENUMBERED != 0
        });
        for (id, &at) in survivors.zip(&starts) {
            let pos = words.len();
            offs.push(pos as u32);
            view.rec_at(id, at as usize).write_to(&mut words);
            let rec = &mut words[pos..];
            let mut bad = None;
            for_each_type_id_word(rec[1], |i| match new_id(rec[i]) {
                Some(new) => rec[i] = new,
                None => {
                    bad.get_or_insert(rec[i]);
                }
            });
            if let Some(b) = bad {
                return Err(DedupError::NoNewId { id, target: b }.into());
            }
        }
        Ok((words, offs))
    }

    /// Drops the store's positions by id before the output is built beside the store and
    /// `map` (the dedup's last peak): the records are read in id order from here on. The
    /// reference-type thread has ended, so the store is no longer shared; were it still,
    /// the positions would stay.
    fn release_positions(&mut self) {
        if let Some(recs) = Arc::get_mut(&mut self.types.recs) {
            recs.store.release_positions();
        }
    }

    /// Gives every own type that is its own canonical representative its new id, in id order
    /// from `start_id`, in its `map` entry (`RENUMBERED | new id`); an own type left unmapped
    /// gets `UNPROCESSED`, so that no tag of an earlier phase reads as a new id. Returns the
    /// survivors' record words and where each one's record starts in the store (so that the
    /// store's positions by id can go before the output is built).
    fn renumber_in_map(&mut self) -> (usize, Vec<u32>) {
        let g = self.types.graph();
        let mut kept_words = 0usize;
        let mut starts = Vec::new();
        for id in g.start_id..g.type_cnt() {
            let m = g.map(id);
            if m == id {
                g.set_map(id, RENUMBERED | (g.start_id + starts.len() as u32));
                starts.push(g.view.byte_of(id) as u32);
                kept_words += g.rec(id).tpl().len();
            } else if m > MAX_ID {
                g.set_map(id, UNPROCESSED);
            }
        }
        (kept_words, starts)
    }
}
