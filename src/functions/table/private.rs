//! The private-index control ([`PrivateTable`]): each worker folds every instance as it saves
//! it, as the shared table and dashmap do, but into an index of its own (entry → its fold)
//! that no other thread reads; the table takes that index when the worker's saver is dropped,
//! and `finish` only distributes the folds. Against save-merge it adds folding at save time;
//! against the shared table it removes the shared index: the two factors the shared design
//! changes at once, separated (`docs/concurrency.md`).

use rustc_hash::FxHashMap;

use super::{check_entry, empty_entries, push_fold, HandedIn, OwnerClaims};
use super::{Fold, FuncSaver, FuncTable, Owner};

/// One owner's folds: entry → the fold of its instances of that entry.
type Index<T> = FxHashMap<u32, T>;

/// Per-owner private indexes, handed in once by each saver's `drop`.
pub struct PrivateTable<T> {
    entries: usize,
    /// `indexes[owner]`: that owner's folds; written once, when its saver is dropped.
    indexes: HandedIn<Index<T>>,
    claims: OwnerClaims,
}

/// The per-owner handle of a [`PrivateTable`]; its folds reach the table when it is dropped.
pub struct PrivateSaver<'t, T> {
    table: &'t PrivateTable<T>,
    owner: Owner,
    index: Index<T>,
}

impl<T: Fold> FuncTable<T> for PrivateTable<T> {
    type Saver<'t>
        = PrivateSaver<'t, T>
    where
        T: 't;

    fn new(entries: usize, owners: usize) -> Self {
        PrivateTable {
            entries,
            indexes: HandedIn::new(owners),
            claims: OwnerClaims::new(owners),
        }
    }

    fn saver(&self, owner: Owner) -> PrivateSaver<'_, T> {
        self.claims.claim(owner);
        PrivateSaver {
            table: self,
            owner,
            index: Index::default(),
        }
    }

    fn finish(self) -> Vec<Vec<T>> {
        let mut out = empty_entries(self.entries);
        // Owners ascending, one fold per entry each: appending keeps an entry's folds in owner
        // order whatever order an index yields its entries in.
        for index in self.indexes.into_owners() {
            for (entry, fold) in index {
                push_fold(&mut out[entry as usize], fold);
            }
        }
        out
    }
}

impl<T: Fold> FuncSaver<T> for PrivateSaver<'_, T> {
    fn save(&mut self, entry: u32, instance: T::Instance) {
        check_entry(entry, self.table.entries);
        match self.index.entry(entry) {
            std::collections::hash_map::Entry::Occupied(mut fold) => fold.get_mut().add(instance),
            std::collections::hash_map::Entry::Vacant(slot) => {
                slot.insert(T::new(instance));
            }
        }
    }
}

impl<T> Drop for PrivateSaver<'_, T> {
    fn drop(&mut self) {
        self.table.indexes.hand_in(self.owner, &mut self.index);
    }
}

#[cfg(test)]
mod tests {
    use super::super::contract_tests;
    use super::*;

    contract_tests!(PrivateTable);

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
        assert!(table.indexes.0[1].lock().is_empty());
        drop(late);
        assert_eq!(
            table.finish(),
            [vec![], vec![vec!["early"], vec!["late", "later"]]]
        );
    }
}
