//! The sharded-lock function table ([`DashmapTable`]): entry → per-owner states in a
//! `dashmap::DashMap`, each save done under the write lock of the entry's shard.

use dashmap::DashMap;
use rustc_hash::FxBuildHasher;

use super::shared::{check_entry, empty_entries, OwnerClaims, State};
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

/// One entry's per-owner states: `(owner, its state)`, distinct owners, in first-save order.
type OwnerStates<T> = Vec<(Owner, State<T>)>;

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
        let mut out = empty_entries(self.entries);
        for (entry, Exclusive(states)) in self.map {
            out[entry as usize] = concat_by_owner(states);
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

/// One entry's instances from its per-owner states: owners ascending, each owner's instances
/// in save order.
fn concat_by_owner<T>(mut states: OwnerStates<T>) -> Vec<T> {
    states.sort_unstable_by_key(|&(owner, _)| owner);
    let mut out = Vec::with_capacity(states.iter().map(|(_, state)| state.len()).sum());
    for (_, state) in states {
        state.append_to(&mut out);
    }
    out
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
    fn concat_by_owner_orders_owners() {
        let mut three = State::new(30);
        three.push(31);
        three.push(32);
        let states = vec![(3, three), (0, State::new(0)), (1, State::new(10))];
        assert_eq!(concat_by_owner(states), [0, 10, 30, 31, 32]);
        assert_eq!(concat_by_owner::<u8>(Vec::new()), []);
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
