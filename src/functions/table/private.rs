//! The private-index control ([`PrivateTable`]): each worker folds every instance as it saves
//! it, as the shared table and dashmap do, but into an index of its own that no other thread
//! reads; the table takes the folds when the worker's saver is dropped, and `finish` only
//! distributes them. Against save-merge it adds folding at save time; against the shared
//! table it removes the shared index: the two factors the shared design changes at once,
//! separated (`docs/concurrency.md`).
//!
//! The index is dense like the shared table's heads (one slot per entry, found without
//! hashing), but per owner: 4 bytes × entries for each owner that saves anything, allocated
//! at its first save and freed when its saver is dropped.

use std::sync::atomic::{AtomicU64, Ordering};

use super::{bytes_of, check_entry, empty_entries, push_fold, HandedIn, OwnerClaims};
use super::{Fold, FuncSaver, FuncTable, Owner, TableMemory};

/// One owner's folds, `(entry, fold)`, in the order of their first instances.
type Folds<T> = Vec<(u32, T)>;

/// [`PrivateSaver::slots`]' mark of an entry the owner has not saved into.
const NONE: u32 = u32::MAX;

/// Per-owner folds, handed in once by each saver's `drop`.
pub struct PrivateTable<T> {
    entries: usize,
    /// `folds[owner]`: that owner's folds; written once, when its saver is dropped.
    folds: HandedIn<Folds<T>>,
    claims: OwnerClaims,
    /// The bytes of the dropped savers' indexes (a statistic: nothing is synchronized by it).
    index_bytes: AtomicU64,
}

/// The per-owner handle of a [`PrivateTable`]; its folds reach the table when it is dropped.
pub struct PrivateSaver<'t, T> {
    table: &'t PrivateTable<T>,
    owner: Owner,
    /// `slots[entry]`: the index in `folds` of the entry's fold, or [`NONE`]; empty until the
    /// first save.
    slots: Vec<u32>,
    folds: Folds<T>,
}

impl<T: Fold> FuncTable<T> for PrivateTable<T> {
    type Saver<'t>
        = PrivateSaver<'t, T>
    where
        T: 't;

    fn new(entries: usize, owners: usize) -> Self {
        PrivateTable {
            entries,
            folds: HandedIn::new(owners),
            claims: OwnerClaims::new(owners),
            index_bytes: AtomicU64::new(0),
        }
    }

    fn saver(&self, owner: Owner) -> PrivateSaver<'_, T> {
        self.claims.claim(owner);
        PrivateSaver {
            table: self,
            owner,
            slots: Vec::new(),
            folds: Vec::new(),
        }
    }

    fn memory(&mut self) -> TableMemory {
        let mut memory = self.folds.memory(|folds| TableMemory {
            records: bytes_of::<(u32, T)>(folds.len()),
            slack: bytes_of::<(u32, T)>(folds.capacity() - folds.len()),
            heap: folds.iter().map(|(_, fold)| fold.heap_bytes() as u64).sum(),
            ..TableMemory::default()
        });
        memory.owner_index = *self.index_bytes.get_mut();
        memory
    }

    fn finish(self) -> Vec<Vec<T>> {
        let mut out = empty_entries(self.entries);
        // Owners ascending, one fold per entry each: appending keeps an entry's folds in owner
        // order.
        for folds in self.folds.into_owners() {
            for (entry, fold) in folds {
                push_fold(&mut out[entry as usize], fold);
            }
        }
        out
    }
}

impl<T: Fold> FuncSaver<T> for PrivateSaver<'_, T> {
    fn save(&mut self, entry: u32, instance: T::Instance) {
        check_entry(entry, self.table.entries);
        if self.slots.is_empty() {
            self.slots = vec![NONE; self.table.entries];
        }
        let slot = &mut self.slots[entry as usize];
        match *slot {
            NONE => {
                *slot = self.folds.len() as u32;
                self.folds.push((entry, T::new(instance)));
            }
            at => self.folds[at as usize].1.add(instance),
        }
    }
}

impl<T> Drop for PrivateSaver<'_, T> {
    fn drop(&mut self) {
        let index = bytes_of::<u32>(self.slots.capacity());
        self.table.index_bytes.fetch_add(index, Ordering::Relaxed);
        self.table.folds.hand_in(self.owner, &mut self.folds);
    }
}

#[cfg(test)]
mod tests {
    use super::super::contract_tests;
    use super::*;

    contract_tests!(PrivateTable);

    #[test]
    fn memory_counts_the_indexes_and_folds() {
        let mut table = contract::memory_plan::<PrivateTable<Vec<u64>>>();
        let m = table.memory();
        assert_eq!(
            m.owner_index,
            2 * 3 * 4,
            "two owners' dense slots, 3 entries"
        );
        assert_eq!(m.records, 3 * std::mem::size_of::<(u32, Vec<u64>)>() as u64);
        assert_eq!(m.heap, contract::PLAN_FOLD_HEAP);
        assert_eq!(m.shared_index, 0);
    }

    #[test]
    fn folds_reach_the_table_when_the_saver_drops() {
        let table = PrivateTable::<Vec<&str>>::new(2, 2);
        let mut late = table.saver(1);
        late.save(1, "late");
        late.save(1, "later");
        {
            let mut early = table.saver(0);
            early.save(1, "early");
        }
        assert!(table.folds.0[1].lock().is_empty());
        drop(late);
        assert_eq!(
            table.finish(),
            [vec![], vec![vec!["early"], vec!["late", "later"]]]
        );
    }
}
