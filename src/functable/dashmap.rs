//! The sharded-lock function table ([`DashmapTable`]): entry → per-owner states in a
//! `dashmap::DashMap`, each save done under the write lock of the entry's shard.

use dashmap::DashMap;
use rustc_hash::FxBuildHasher;

use super::shared::{check_entry, concat_by_owner, OwnerClaims, OwnerStates, State};
use super::{FuncSaver, FuncTable, Owner};

/// Entry → `(owner, that owner's state)` slots, behind `dashmap`'s sharded locks.
pub struct DashmapTable<T> {
    entries: usize,
    map: DashMap<u32, Exclusive<OwnerStates<T>>, FxBuildHasher>,
    claims: OwnerClaims,
}

/// The per-owner handle of a [`DashmapTable`].
pub struct DashmapSaver<'t, T> {
    table: &'t DashmapTable<T>,
    owner: Owner,
}

/// A value reachable only through `&mut` (like the unstable `std::sync::Exclusive`), so that the
/// map is `Sync` for `T: Send` alone: `DashMap` would otherwise want `T: Sync`, for the shared
/// read guards this table never takes.
struct Exclusive<V>(V);

// SAFETY: a `&Exclusive<V>` gives no access to the `V` at all (there is no `&self` method and
// the field is private), so sharing such references between threads cannot race on `V`.
unsafe impl<V> Sync for Exclusive<V> {}

impl<T: Send> FuncTable<T> for DashmapTable<T> {
    type Saver<'t>
        = DashmapSaver<'t, T>
    where
        T: 't;

    fn new(entries: usize, owners: usize) -> Self {
        DashmapTable {
            entries,
            map: DashMap::with_capacity_and_hasher(entries, FxBuildHasher),
            claims: OwnerClaims::new(owners),
        }
    }

    fn saver(&self, owner: Owner) -> DashmapSaver<'_, T> {
        self.claims.claim(owner);
        DashmapSaver { table: self, owner }
    }

    fn finish(self) -> Vec<Vec<T>> {
        let mut out: Vec<Vec<T>> = (0..self.entries).map(|_| Vec::new()).collect();
        for (entry, Exclusive(mut states)) in self.map {
            out[entry as usize] = concat_by_owner(&mut states);
        }
        out
    }
}

impl<T: Send> FuncSaver<T> for DashmapSaver<'_, T> {
    fn save(&mut self, entry: u32, instance: T) {
        check_entry(entry, self.table.entries);
        let mut slots = self.table.map.entry(entry).or_insert(Exclusive(Vec::new()));
        let Exclusive(states) = &mut *slots;
        match states.iter_mut().find(|(owner, _)| *owner == self.owner) {
            Some((_, state)) => state.push(instance),
            None => states.push((self.owner, State::new(instance))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::shared::contract::{self, Inst};
    use super::*;

    #[test]
    fn contract() {
        contract::check::<DashmapTable<Inst>>();
    }

    #[test]
    fn drop_without_finish() {
        contract::drop_without_finish::<DashmapTable<std::sync::Arc<()>>>();
    }

    #[test]
    #[should_panic(expected = "already has a saver")]
    fn second_saver_panics() {
        contract::second_saver_panics::<DashmapTable<Inst>>();
    }

    #[test]
    #[should_panic(expected = "entry 3 out of range")]
    fn entry_out_of_range_panics() {
        contract::entry_out_of_range_panics::<DashmapTable<Inst>>();
    }
}
