//! The sharded-lock function table ([`DashmapTable`]): entry → per-owner states in a
//! `dashmap::DashMap`, each save done under the write lock of the entry's shard.
//!
//! The shard count is set from the savers that can run at once, not left to dashmap's default
//! (4 × the machine's CPUs, a power of two): [`shard_amount`] is that rule applied to
//! min(owners, CPUs), so `-j2` on a 64-CPU machine does not pay for 256 shards, and a save
//! finds its shard taken with probability at most about a quarter of the fraction of time one
//! saver holds a lock (`docs/concurrency.md`, "The contention model"). Measured here with 16
//! and 64 threads on 2 CPUs, 4 × owners shards waited more often than 8, not less.

use dashmap::DashMap;
use rustc_hash::FxBuildHasher;

use super::{bytes_of, check_entry, empty_entries, Contended, Contention, LocalContention};
use super::{Fold, FuncSaver, FuncTable, Owner, OwnerClaims, TableMemory};

/// Entry → `(owner, that owner's fold)` slots, behind `dashmap`'s sharded locks.
pub struct DashmapTable<T> {
    entries: usize,
    /// The map's shards ([`shard_amount`]).
    shards: usize,
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
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let shards = shard_amount(owners.min(cpus));
        DashmapTable {
            entries,
            shards,
            map: DashMap::with_capacity_and_hasher_and_shard_amount(entries, FxBuildHasher, shards),
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

    fn memory(&mut self) -> TableMemory {
        // A bucket holds the key and the entry's list header, plus hashbrown's control byte;
        // a shard is dashmap's lock and table header, cache-padded (estimated by the size of
        // five words padded the same way).
        let bucket = std::mem::size_of::<(u32, Exclusive<OwnerStates<T>>)>() as u64 + 1;
        let shard = std::mem::size_of::<crossbeam_utils::CachePadded<[usize; 5]>>() as u64;
        let (len, capacity) = (self.map.len() as u64, self.map.capacity() as u64);
        let mut memory = TableMemory {
            shared_index: len * bucket + self.shards as u64 * shard,
            slack: capacity.saturating_sub(len) * bucket,
            ..TableMemory::default()
        };
        for mut slot in self.map.iter_mut() {
            let Exclusive(states) = slot.value_mut();
            memory.records += bytes_of::<(Owner, T)>(states.len());
            memory.slack += bytes_of::<(Owner, T)>(states.capacity() - states.len());
            memory.heap += states
                .iter()
                .map(|(_, fold)| fold.heap_bytes() as u64)
                .sum::<u64>();
        }
        memory
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

/// The map's shard count for `running` savers at once: dashmap's default rule (4 per CPU, a
/// power of two) applied to them; at least 4 (dashmap wants 2).
fn shard_amount(running: usize) -> usize {
    (4 * running).next_power_of_two().max(4)
}

/// Folds `owner`'s `instance` into its entry's `states`, under the entry's shard lock: the
/// step a save takes inside the lock. Public so that the loom model of this design
/// (`loom-tests/tests/dashmap_fold.rs`) runs this very step under loom's `Mutex`, dashmap's
/// own locks being invisible to loom.
pub fn fold_in<T: Fold>(states: &mut OwnerStates<T>, owner: Owner, instance: T::Instance) {
    match states.iter_mut().find(|(o, _)| *o == owner) {
        Some((_, fold)) => fold.add(instance),
        None => {
            // Grown one owner at a time (nearly every function has one owner; a `Vec`'s
            // first growth would make room for four, 9 MiB of slack on a kernel).
            states.reserve_exact(1);
            states.push((owner, T::new(instance)));
        }
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
    fn memory_counts_pairs_and_folds_without_list_slack() {
        let mut table = contract::memory_plan::<DashmapTable<Vec<u64>>>();
        let m = table.memory();
        let pair = std::mem::size_of::<(Owner, Vec<u64>)>() as u64;
        assert_eq!(m.records, 3 * pair);
        assert_eq!(m.heap, contract::PLAN_FOLD_HEAP);
        // Two entries in the map, each list grown one owner at a time: the slack is the map's
        // unfilled buckets only, whole buckets.
        let bucket = std::mem::size_of::<(u32, Exclusive<OwnerStates<Vec<u64>>>)>() as u64 + 1;
        assert_eq!(m.slack % bucket, 0, "{m:?}");
        assert!(m.shared_index >= 2 * bucket);
    }

    #[test]
    fn shards_follow_the_owners() {
        assert_eq!(shard_amount(1), 4);
        assert_eq!(shard_amount(2), 8);
        assert_eq!(shard_amount(3), 16);
        assert_eq!(shard_amount(64), 256);
    }

    #[test]
    fn by_owner_orders_owners() {
        let states = vec![(3, vec![30, 31, 32]), (0, vec![0]), (1, vec![10])];
        assert_eq!(by_owner(states), [vec![0], vec![10], vec![30, 31, 32]]);
        assert_eq!(by_owner::<u8>(Vec::new()), Vec::<u8>::new());
    }
}
