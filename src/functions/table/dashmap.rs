//! The sharded-lock function table ([`DashmapTable`]): entry → per-owner states in a
//! `dashmap::DashMap`, each save done under the write lock of the entry's shard.

use dashmap::DashMap;
use rustc_hash::FxBuildHasher;

use super::{check_entry, empty_entries, Contended, Contention, LocalContention, OwnerClaims};
use super::{Fold, FuncSaver, FuncTable, Owner};

/// Entry → `(owner, that owner's fold)` slots, behind `dashmap`'s sharded locks.
pub struct DashmapTable<T> {
    entries: usize,
    map: DashMap<u32, Exclusive<OwnerStates<T>>, FxBuildHasher>,
    claims: OwnerClaims,
    /// Saves that found their shard locked.
    lock_waits: Contention,
}

/// The per-owner handle of a [`DashmapTable`].
pub struct DashmapSaver<'t, T> {
    table: &'t DashmapTable<T>,
    owner: Owner,
    /// This saver's saves that found their shard locked.
    lock_waits: LocalContention<'t>,
}

/// One entry's per-owner folds: `(owner, its fold)`, distinct owners, in first-save order.
pub type OwnerStates<T> = Vec<(Owner, T)>;

/// A value reachable only through `&mut` (like the unstable `std::sync::Exclusive`), so that the
/// map is `Sync` for `T: Send` alone: `DashMap` would otherwise want `T: Sync`, for the shared
/// read guards this table never takes.
struct Exclusive<V>(V);

// SAFETY: a `&Exclusive<V>` gives no access to the `V` at all (there is no `&self` method and
// the field is private), so sharing such references between threads cannot race on `V`.
unsafe impl<V> Sync for Exclusive<V> {}

impl<T: Fold> FuncTable<T> for DashmapTable<T> {
    type Saver<'t>
        = DashmapSaver<'t, T>
    where
        T: 't;

    fn new(entries: usize, owners: usize) -> Self {
        DashmapTable {
            entries,
            map: DashMap::with_capacity_and_hasher(entries, FxBuildHasher),
            claims: OwnerClaims::new(owners),
            lock_waits: Contention::default(),
        }
    }

    fn saver(&self, owner: Owner) -> DashmapSaver<'_, T> {
        self.claims.claim(owner);
        DashmapSaver {
            table: self,
            owner,
            lock_waits: self.lock_waits.local(),
        }
    }

    fn contention(&self) -> Contended {
        Contended {
            cas_failures: 0,
            lock_waits: self.lock_waits.total(),
        }
    }

    fn finish(self) -> Vec<Vec<T>> {
        let mut out = empty_entries(self.entries);
        for (entry, Exclusive(states)) in self.map {
            out[entry as usize] = by_owner(states);
        }
        out
    }
}

impl<T: Fold> FuncSaver<T> for DashmapSaver<'_, T> {
    fn save(&mut self, entry: u32, instance: T::Instance) {
        check_entry(entry, self.table.entries);
        let slot = match self.table.map.try_entry(entry) {
            Some(slot) => slot,
            None => {
                self.lock_waits.add(1);
                self.table.map.entry(entry)
            }
        };
        let mut slots = slot.or_insert(Exclusive(Vec::new()));
        let Exclusive(states) = &mut *slots;
        fold_in(states, self.owner, instance);
    }
}

/// Folds `owner`'s `instance` into its entry's `states`, under the entry's shard lock: the
/// step a save takes inside the lock. Public so that the loom model of this design
/// (`loom-tests/tests/dashmap_fold.rs`) runs this very step under loom's `Mutex`, dashmap's
/// own locks being invisible to loom.
pub fn fold_in<T: Fold>(states: &mut OwnerStates<T>, owner: Owner, instance: T::Instance) {
    match states.iter_mut().find(|(o, _)| *o == owner) {
        Some((_, fold)) => fold.add(instance),
        None => states.push((owner, T::new(instance))),
    }
}

/// One entry's per-owner folds, owners ascending: what `finish` makes of each entry's
/// `states` (public for the same loom model).
pub fn by_owner<T>(mut states: OwnerStates<T>) -> Vec<T> {
    states.sort_unstable_by_key(|&(owner, _)| owner);
    let mut folds: Vec<T> = states.into_iter().map(|(_, fold)| fold).collect();
    // The folds live until the final pass: no spare room (see `push_fold`).
    folds.shrink_to_fit();
    folds
}

#[cfg(test)]
mod tests {
    use super::super::contract_tests;
    use super::*;

    contract_tests!(DashmapTable);

    #[test]
    fn by_owner_orders_owners() {
        let states = vec![(3, vec![30, 31, 32]), (0, vec![0]), (1, vec![10])];
        assert_eq!(by_owner(states), [vec![0], vec![10], vec![30, 31, 32]]);
        assert_eq!(by_owner::<u8>(Vec::new()), Vec::<u8>::new());
    }
}
