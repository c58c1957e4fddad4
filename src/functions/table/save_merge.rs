//! The save-then-merge function table ([`SaveMergeTable`], Alan Maguire's design in pahole ≥ 1.29):
//! each worker appends `(entry, instance)` to its own plain `Vec`, sharing nothing while
//! encoding; the table takes that `Vec` when the worker's saver is dropped, and `finish` groups
//! everything by entry and owner in one pass, folding each owner's instances there (no merging
//! while encoding: that is this design's point).

use super::{bytes_of, check_entry, empty_entries, push_fold, HandedIn, OwnerClaims};
use super::{Fold, FuncSaver, FuncTable, Owner, TableMemory};

/// One owner's saves, in order: `(entry, instance)`.
type Saves<T> = Vec<(u32, <T as Fold>::Instance)>;

/// Per-owner lists of saves, handed in once by each saver's `drop`.
pub struct SaveMergeTable<T: Fold> {
    entries: usize,
    /// `saved[owner]`: that owner's saves in order; written once, when its saver is dropped.
    saved: HandedIn<Saves<T>>,
    claims: OwnerClaims,
}

/// The per-owner handle of a [`SaveMergeTable`]; its saves reach the table when it is dropped.
pub struct SaveMergeSaver<'t, T: Fold> {
    table: &'t SaveMergeTable<T>,
    owner: Owner,
    saved: Saves<T>,
}

impl<T: Fold> FuncTable<T> for SaveMergeTable<T> {
    type Saver<'t>
        = SaveMergeSaver<'t, T>
    where
        T: 't;

    fn new(entries: usize, owners: usize) -> Self {
        SaveMergeTable {
            entries,
            saved: HandedIn::new(owners),
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

    fn memory(&mut self) -> TableMemory {
        self.saved.memory(|saved| TableMemory {
            records: bytes_of::<(u32, T::Instance)>(saved.len()),
            slack: bytes_of::<(u32, T::Instance)>(saved.capacity() - saved.len()),
            heap: saved
                .iter()
                .map(|(_, instance)| T::instance_heap_bytes(instance) as u64)
                .sum(),
            ..TableMemory::default()
        })
    }

    fn finish(self) -> Vec<Vec<T>> {
        let mut out: Vec<Vec<T>> = empty_entries(self.entries);
        // Owners ascending, each owner's saves in order: an entry's last fold is this owner's
        // when this owner has saved into the entry before.
        let mut last_owner = vec![Owner::MAX; self.entries];
        for (owner, saved) in (0..).zip(self.saved.into_owners()) {
            for (entry, instance) in saved {
                let folds = &mut out[entry as usize];
                match folds.last_mut() {
                    Some(fold) if last_owner[entry as usize] == owner => fold.add(instance),
                    _ => {
                        push_fold(folds, T::new(instance));
                        last_owner[entry as usize] = owner;
                    }
                }
            }
        }
        out
    }
}

impl<T: Fold> FuncSaver<T> for SaveMergeSaver<'_, T> {
    fn save(&mut self, entry: u32, instance: T::Instance) {
        check_entry(entry, self.table.entries);
        self.saved.push((entry, instance));
    }
}

impl<T: Fold> Drop for SaveMergeSaver<'_, T> {
    fn drop(&mut self) {
        self.table.saved.hand_in(self.owner, &mut self.saved);
    }
}

#[cfg(test)]
mod tests {
    use super::super::contract_tests;
    use super::*;

    contract_tests!(SaveMergeTable);

    #[test]
    fn memory_counts_the_unfolded_saves() {
        let mut table = contract::memory_plan::<SaveMergeTable<Vec<u64>>>();
        let m = table.memory();
        let save = std::mem::size_of::<(u32, u64)>() as u64;
        assert_eq!(m.records, 4 * save);
        assert_eq!(
            m.slack,
            (1 + 3) * save,
            "lists of 3 and 1 saves, capacity 4 each"
        );
        assert_eq!((m.heap, m.shared_index, m.owner_index), (0, 0, 0));
    }

    #[test]
    fn saves_reach_the_table_when_the_saver_drops() {
        let table = SaveMergeTable::<Vec<&str>>::new(2, 2);
        let mut late = table.saver(1);
        late.save(0, "late");
        {
            let mut early = table.saver(0);
            early.save(0, "early");
        }
        assert!(table.saved.0[1].lock().is_empty());
        drop(late);
        assert_eq!(table.finish(), [vec![vec!["early"], vec!["late"]], vec![]]);
    }
}
