//! The save-then-merge function table ([`SaveMergeTable`], Alan Maguire's design in pahole ≥ 1.29):
//! each worker appends `(entry, instance)` to its own plain `Vec`, sharing nothing while
//! encoding; the table takes that `Vec` when the worker's saver is dropped, and `finish` groups
//! everything by entry in one pass.

use std::sync::{Mutex, PoisonError};

use super::shared::{check_entry, empty_entries, OwnerClaims};
use super::{FuncSaver, FuncTable, Owner};

/// One owner's saves, in order: `(entry, instance)`.
type Saves<T> = Vec<(u32, T)>;

/// Per-owner lists of saves, handed in once by each saver's `drop`.
pub struct SaveMergeTable<T> {
    entries: usize,
    /// `saved[owner]`: that owner's saves in order; written once, when its saver is dropped.
    saved: Box<[Mutex<Saves<T>>]>,
    claims: OwnerClaims,
}

/// The per-owner handle of a [`SaveMergeTable`]; its saves reach the table when it is dropped.
pub struct SaveMergeSaver<'t, T> {
    table: &'t SaveMergeTable<T>,
    owner: Owner,
    saved: Saves<T>,
}

impl<T: Send> FuncTable<T> for SaveMergeTable<T> {
    type Saver<'t>
        = SaveMergeSaver<'t, T>
    where
        T: 't;

    fn new(entries: usize, owners: usize) -> Self {
        SaveMergeTable {
            entries,
            saved: (0..owners).map(|_| Mutex::new(Vec::new())).collect(),
            claims: OwnerClaims::new(owners),
        }
    }

    fn saver(&self, owner: Owner) -> SaveMergeSaver<'_, T> {
        self.claims.claim(owner);
        SaveMergeSaver {
            table: self,
            owner,
            saved: Vec::new(),
        }
    }

    fn finish(self) -> Vec<Vec<T>> {
        let mut out = empty_entries(self.entries);
        // Owners ascending, each owner's saves in order: the grouping is stable by construction.
        for saved in self.saved {
            for (entry, instance) in saved.into_inner().unwrap_or_else(PoisonError::into_inner) {
                out[entry as usize].push(instance);
            }
        }
        out
    }
}

impl<T: Send> FuncSaver<T> for SaveMergeSaver<'_, T> {
    fn save(&mut self, entry: u32, instance: T) {
        check_entry(entry, self.table.entries);
        self.saved.push((entry, instance));
    }
}

impl<T> Drop for SaveMergeSaver<'_, T> {
    fn drop(&mut self) {
        // The only writer of this slot (`OwnerClaims`), so the lock is never contended; a
        // poisoned lock only means another thread panicked, the `Vec` is still whole.
        *self.table.saved[self.owner as usize]
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = std::mem::take(&mut self.saved);
    }
}

#[cfg(test)]
mod tests {
    use super::super::shared::contract::{self, Inst};
    use super::*;

    #[test]
    fn contract() {
        contract::check::<SaveMergeTable<Inst>>();
    }

    #[test]
    fn drop_without_finish() {
        contract::drop_without_finish::<SaveMergeTable<std::sync::Arc<()>>>();
    }

    #[test]
    #[should_panic(expected = "already has a saver")]
    fn second_saver_panics() {
        contract::second_saver_panics::<SaveMergeTable<Inst>>();
    }

    #[test]
    #[should_panic(expected = "entry 3 out of range")]
    fn entry_out_of_range_panics() {
        contract::entry_out_of_range_panics::<SaveMergeTable<Inst>>();
    }

    #[test]
    fn saves_reach_the_table_when_the_saver_drops() {
        let table = SaveMergeTable::new(2, 2);
        let mut late = table.saver(1);
        late.save(0, "late");
        {
            let mut early = table.saver(0);
            early.save(0, "early");
        }
        assert!(table.saved[1].lock().unwrap().is_empty());
        drop(late);
        assert_eq!(table.finish(), [vec!["early", "late"], vec![]]);
    }
}
