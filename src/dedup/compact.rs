//! Phases 6 and 7: compaction and id remapping (libbpf `btf_dedup_compact_types`,
//! `btf_dedup_remap_types`).
//!
//! Own types that are their own canonical representative survive, in id order, renumbered
//! from `start_id`; base ids keep their numbers. Every referenced id of every survivor (libbpf's
//! IDS field order) becomes `new_id[resolve(id)]`. libbpf reuses `hypot_map`'s array for the
//! renumbering; so does this module. The result is built in fresh vectors so that the
//! [`crate::btf::Btf`] is only replaced once everything succeeded.

use super::hypot::HypotMap;
use super::{for_each_id_field, Dedup, UNPROCESSED};
use crate::btf::kinds::MAX_NR_TYPES;
use crate::error::{Error, Result};

impl Dedup {
    /// The surviving own records (remapped) and their word offsets.
    pub(crate) fn compact_and_remap(&mut self) -> Result<(Vec<u32>, Vec<u32>)> {
        let start = self.types.start_id;
        let cnt = self.types.type_cnt();
        let mut new_id = std::mem::replace(&mut self.hypot, HypotMap::new(0)).into_array();
        for id in 0..start {
            new_id[id as usize] = id;
        }
        let mut kept = 0usize;
        let mut next = start;
        for id in start..cnt {
            if self.types.map(id) == id {
                new_id[id as usize] = next;
                next += 1;
                kept += self.types.rec_exact(id).len();
            } else {
                new_id[id as usize] = UNPROCESSED;
            }
        }
        let mut words = Vec::with_capacity(kept);
        let mut offs = Vec::with_capacity((next - start) as usize);
        for id in start..cnt {
            if self.types.map(id) != id {
                continue;
            }
            let pos = words.len();
            offs.push(pos as u32);
            words.extend_from_slice(self.types.rec_exact(id));
            let rec = &mut words[pos..];
            let mut bad = None;
            for_each_id_field(rec[1], |i| {
                let new = new_id[self.resolve(rec[i]) as usize];
                if new > MAX_NR_TYPES {
                    bad.get_or_insert(rec[i]);
                } else {
                    rec[i] = new;
                }
            });
            if let Some(b) = bad {
                return Err(Error::BadBtf(format!(
                    "type [{id}] references type [{b}], which has no deduplicated id"
                )));
            }
        }
        Ok((words, offs))
    }
}
