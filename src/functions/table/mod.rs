//! The function table: where parallel encoders record what they learn about each ELF function.
//!
//! Four designs implement one trait and must give byte-identical output:
//! - [`shared`]: one table over the ELF functions; each entry heads a lock-free singly linked
//!   list of per-owner nodes (`owner`, `next`, state) pushed with compare-and-swap (the
//!   "shared elf_functions" design proposed for pahole);
//! - [`dashmap`]: entry → per-owner states behind `dashmap`'s sharded locks;
//! - [`save_merge`]: each encoder appends to its own plain list; one pass at the end groups
//!   them by entry (Alan Maguire's save-then-merge, what pahole ≥ 1.29 does);
//! - [`private`]: the control: each encoder folds as it saves, as the shared table does, but
//!   into an index of its own; nothing is shared while encoding.
//!
//! Workers get a per-owner [`FuncSaver`] handle. A table keeps, per entry and owner, a
//! [`Fold`] of that owner's instances: the shared table and dashmap fold each instance in as
//! it is saved (the encoder-local merge), and so does the private index, in its own map;
//! save-merge keeps plain lists and folds them at the end. After the workers have joined, [`FuncTable::finish`] hands every entry's per-owner
//! folds to the single-threaded final pass (`final_pass.rs`), which merges across owners.
//!
//! The parts of the contract every design shares live here: one saver per owner
//! (`OwnerClaims`), the entry range check, and the contract tests every design runs.

pub mod dashmap;
pub mod dispatch;
pub mod private;
pub mod save_merge;
pub mod shared;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Index of a worker (encoder) — the owner of the states it saves.
pub type Owner = u32;

/// What a table keeps per (entry, owner): that owner's instances, folded in save order.
pub trait Fold: Send + Sized {
    /// What a worker saves.
    type Instance: Send;
    /// The fold of one instance.
    fn new(first: Self::Instance) -> Self;
    /// Folds in the next instance.
    fn add(&mut self, instance: Self::Instance);
    /// The heap bytes this fold owns (what it points to, not its own size), for
    /// [`FuncTable::memory`]. A fold that owns no heap memory keeps the default.
    fn heap_bytes(&self) -> usize {
        0
    }
    /// The heap bytes an unfolded instance owns (save-merge keeps instances, not folds).
    fn instance_heap_bytes(_instance: &Self::Instance) -> usize {
        0
    }
}

/// Keeps every instance, in save order: the fold of the contract tests, the loom models and
/// the contention benchmark, which check where each instance went.
impl<T: Send> Fold for Vec<T> {
    type Instance = T;
    fn new(first: T) -> Self {
        vec![first]
    }
    fn add(&mut self, instance: T) {
        self.push(instance);
    }
    fn heap_bytes(&self) -> usize {
        self.capacity() * std::mem::size_of::<T>()
    }
}

/// What one worker uses to record instances. Not shared between threads.
pub trait FuncSaver<S: Fold> {
    /// Records one instance of the ELF function with index `entry`.
    fn save(&mut self, entry: u32, instance: S::Instance);
}

/// A table of per-owner folds of function instances, filled concurrently by `owners` workers.
pub trait FuncTable<S: Fold>: Sync + Sized {
    /// The per-worker handle.
    type Saver<'t>: FuncSaver<S> + Send
    where
        Self: 't;

    /// A table for `entries` ELF functions and `owners` workers.
    fn new(entries: usize, owners: usize) -> Self;

    /// The handle of worker `owner` (call once per owner; each handle goes to one thread).
    fn saver(&self, owner: Owner) -> Self::Saver<'_>;

    /// Contention seen so far by the savers already dropped, each kind of event counted
    /// apart; none for a design that shares nothing while encoding.
    fn contention(&self) -> Contended {
        Contended::default()
    }

    /// What the table holds, counted from its own structures, once every saver is gone and
    /// before [`FuncTable::finish`] (`&mut self`: no saver can be alive).
    fn memory(&mut self) -> TableMemory;

    /// After every worker has joined: for each entry (index = entry), one fold per owner that
    /// saved into it, owners ascending, each folding that owner's instances in save order.
    fn finish(self) -> Vec<Vec<S>>;
}

/// Contention events of a table, by kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Contended {
    /// Failed compare-and-swaps on a list head (shared: a push that found the head moved).
    pub cas_failures: u64,
    /// Saves whose `try_entry` found the entry's shard locked and then waited (dashmap).
    pub lock_waits: u64,
}

/// What a function table holds once every saver is gone, in bytes, counted from the table's
/// own structures (`docs/concurrency.md`, "Memory per design"): no allocator headers, rounding
/// or freed memory an allocator keeps; dashmap's map is estimated from its capacity.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TableMemory {
    /// The index every worker uses: the shared table's list heads; dashmap's buckets and
    /// shards.
    pub shared_index: u64,
    /// The per-owner indexes, summed over the owners (the private control's dense slots:
    /// each lives until its owner's saver is dropped, and the workers' savers live together).
    pub owner_index: u64,
    /// The records in use: the shared table's nodes (link and fold), dashmap's `(owner,
    /// fold)` pairs, private's `(entry, fold)` pairs, save-merge's `(entry, instance)` pairs.
    pub records: u64,
    /// Room allocated for records and not used: arena slots not handed out, list capacity
    /// beyond length, map buckets not filled.
    pub slack: u64,
    /// Per-owner bookkeeping: arena chunk lists, the per-worker lists' and per-entry lists'
    /// headers, the hand-over slots.
    pub per_owner: u64,
    /// What the folds (save-merge: the unfolded instances) point to on the heap.
    pub heap: u64,
}

/// The function table's counters after a run, for researchers comparing the designs.
#[derive(Clone, Debug, Default)]
pub struct TableStats {
    /// Instances saved by the workers.
    pub saves: u64,
    /// Per-owner folds (nodes of the shared table's lists), per owner.
    pub nodes_per_owner: Vec<u64>,
    /// Failed compare-and-swaps while pushing a node (shared) and saves that found their
    /// shard locked (dashmap), apart; none where nothing is shared while encoding.
    pub contention: Contended,
    /// `lengths[n]`: how many ELF functions have folds from `n` owners (list length).
    pub lengths: Vec<u64>,
    /// `instances[n]`: how many ELF functions have `n` DWARF instances saved.
    pub instances: Vec<u64>,
    /// Instances still held after folding, going into the final pass.
    pub held: u64,
    /// The bytes of the per-owner folds going into the final pass: the summaries, their
    /// instances and what those point to (without the allocator's per-allocation overhead).
    pub held_bytes: u64,
    /// Seconds in `finish` (save-merge groups and folds there).
    pub finish: f64,
    /// What the table held before `finish`, counted by the table.
    pub memory: TableMemory,
}

impl std::ops::AddAssign for TableMemory {
    fn add_assign(&mut self, other: TableMemory) {
        self.shared_index += other.shared_index;
        self.owner_index += other.owner_index;
        self.records += other.records;
        self.slack += other.slack;
        self.per_owner += other.per_owner;
        self.heap += other.heap;
    }
}

impl TableMemory {
    /// Every part added up.
    pub fn total(&self) -> u64 {
        self.shared_index
            + self.owner_index
            + self.records
            + self.slack
            + self.per_owner
            + self.heap
    }
}

/// `n` values of `T`, in bytes.
fn bytes_of<T>(n: usize) -> u64 {
    (n * std::mem::size_of::<T>()) as u64
}

/// Enforces "one saver per owner": the shared table's soundness depends on it, and the other
/// designs' results would silently depend on it.
struct OwnerClaims(Box<[AtomicBool]>);

impl OwnerClaims {
    fn new(owners: usize) -> Self {
        OwnerClaims((0..owners).map(|_| AtomicBool::new(false)).collect())
    }

    /// Claims `owner`; panics if it is out of range or already claimed. A plain std atomic even
    /// under loom: the swap is a read-modify-write, so exactly one caller wins whatever the
    /// ordering, and nothing else is synchronized through it.
    fn claim(&self, owner: Owner) {
        let flag = self.0.get(owner as usize).unwrap_or_else(|| {
            panic!(
                "function table: owner {owner} out of range ({} owners)",
                self.0.len()
            )
        });
        assert!(
            !flag.swap(true, std::sync::atomic::Ordering::Relaxed),
            "function table: owner {owner} already has a saver"
        );
    }
}

/// A design's contention count (failed CAS, lock waits): each saver counts in its own
/// [`LocalContention`] and adds the count when dropped, so counting adds no shared write to the
/// hot path. A plain std atomic even under loom: a statistic, nothing is synchronized by it.
#[derive(Default)]
struct Contention(AtomicU64);

impl Contention {
    /// A saver's counter.
    fn local(&self) -> LocalContention<'_> {
        LocalContention {
            total: &self.0,
            count: 0,
        }
    }

    /// What the savers dropped so far counted.
    fn total(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// One saver's contention count, added to its table's [`Contention`] when dropped.
struct LocalContention<'t> {
    total: &'t AtomicU64,
    count: u64,
}

impl LocalContention<'_> {
    fn add(&mut self, n: u64) {
        self.count += n;
    }
}

impl Drop for LocalContention<'_> {
    fn drop(&mut self) {
        self.total.fetch_add(self.count, Ordering::Relaxed);
    }
}

/// Per-owner slots, each filled once by its owner's saver when it is dropped (save-merge's
/// lists, the private indexes): the only writer of a slot is that saver (`OwnerClaims`), so
/// the locks are never contended; they make the hand-over safe, not fast.
/// The locks come from [`crate::sync`], so loom sees the hand-over (`loom-tests/`).
struct HandedIn<V>(Box<[crate::sync::Mutex<V>]>);

impl<V: Default> HandedIn<V> {
    fn new(owners: usize) -> Self {
        HandedIn((0..owners).map(|_| Default::default()).collect())
    }

    /// Fills `owner`'s slot with `value`, leaving `value` empty.
    fn hand_in(&self, owner: Owner, value: &mut V) {
        *self.0[owner as usize].lock() = std::mem::take(value);
    }

    /// The slots' own bytes (`per_owner`) and, per slot, `f` of its value, added up.
    fn memory(&mut self, mut f: impl FnMut(&V) -> TableMemory) -> TableMemory {
        let mut sum = TableMemory {
            per_owner: bytes_of::<crate::sync::Mutex<V>>(self.0.len()),
            ..TableMemory::default()
        };
        for slot in self.0.iter() {
            sum += f(&slot.lock());
        }
        sum
    }

    /// The slots, owners ascending.
    fn into_owners(self) -> impl Iterator<Item = V> {
        self.0
            .into_vec()
            .into_iter()
            .map(crate::sync::Mutex::into_inner)
    }
}

/// Panics unless `entry` is below `entries` (the same message in every design).
fn check_entry(entry: u32, entries: usize) {
    assert!(
        (entry as usize) < entries,
        "function table: entry {entry} out of range ({entries} entries)"
    );
}

/// Every entry's (so far empty) list of per-owner folds.
fn empty_entries<T>(entries: usize) -> Vec<Vec<T>> {
    (0..entries).map(|_| Vec::new()).collect()
}

/// Appends an owner's fold to an entry's list, which grows one fold at a time: nearly every
/// function has one owner, and a `Vec`'s first growth would make room for four. The lists
/// live until the final pass, tens of thousands of them.
fn push_fold<T>(folds: &mut Vec<T>, fold: T) {
    folds.reserve_exact(1);
    folds.push(fold);
}

/// The contract tests every design runs, and the cross-design property test.
/// The contract tests of one design: `contract_tests!(SharedTable)` inside its test module.
#[cfg(test)]
macro_rules! contract_tests {
    ($table:ident) => {
        use super::super::contract::{self, Inst};

        #[test]
        fn contract() {
            contract::check::<$table<Vec<Inst>>>();
        }

        #[test]
        fn drop_without_finish() {
            contract::drop_without_finish::<$table<Vec<std::sync::Arc<()>>>>();
        }

        #[test]
        #[should_panic(expected = "already has a saver")]
        fn second_saver_panics() {
            contract::second_saver_panics::<$table<Vec<Inst>>>();
        }

        #[test]
        #[should_panic(expected = "entry 3 out of range")]
        fn entry_out_of_range_panics() {
            contract::entry_out_of_range_panics::<$table<Vec<Inst>>>();
        }
    };
}
#[cfg(test)]
use contract_tests;

#[cfg(test)]
mod contract {
    use std::sync::Arc;

    use super::*;
    use crate::rng::Rng;

    /// What a test saves: `(owner, sequence number)`, unique per save.
    pub(super) type Inst = (Owner, u32);

    /// `plan[owner]` = the entries `owner` saves into, in order; each owner on its own thread.
    /// Returns each entry's instances: its per-owner folds (checked to be one per owner,
    /// owners ascending) concatenated.
    pub(super) fn run<F: FuncTable<Vec<Inst>>>(
        entries: usize,
        plan: &[Vec<u32>],
    ) -> Vec<Vec<Inst>> {
        let table = F::new(entries, plan.len());
        on_owner_threads(&table, plan.len(), |owner, mut saver| {
            for (seq, &entry) in (0..).zip(&plan[owner as usize]) {
                saver.save(entry, (owner, seq));
            }
        });
        table
            .finish()
            .into_iter()
            .map(|folds| {
                let owners: Vec<Owner> = folds.iter().map(|fold| fold[0].0).collect();
                assert!(owners.windows(2).all(|w| w[0] < w[1]), "owners {owners:?}");
                for fold in &folds {
                    assert!(fold.iter().all(|inst| inst.0 == fold[0].0));
                }
                folds.concat()
            })
            .collect()
    }

    /// Runs `work(owner, its saver)` for each of `owners` on a scoped thread of its own, and
    /// joins them explicitly (`pthread_join`): ThreadSanitizer sees that order, not the one
    /// the scope's own wait takes inside std, which it does not instrument (scripts/test.sh).
    fn on_owner_threads<S: Fold, F: FuncTable<S>>(
        table: &F,
        owners: usize,
        work: impl Fn(Owner, F::Saver<'_>) + Sync,
    ) {
        std::thread::scope(|s| {
            let threads: Vec<_> = (0..owners as Owner)
                .map(|owner| {
                    let (saver, work) = (table.saver(owner), &work);
                    s.spawn(move || work(owner, saver))
                })
                .collect();
            for thread in threads {
                thread.join().unwrap();
            }
        });
    }

    /// What every design must return for `plan`, computed sequentially.
    pub(super) fn expected(entries: usize, plan: &[Vec<u32>]) -> Vec<Vec<Inst>> {
        let mut out = vec![Vec::new(); entries];
        for (owner, saves) in (0..).zip(plan) {
            for (seq, &entry) in (0..).zip(saves) {
                out[entry as usize].push((owner, seq));
            }
        }
        out
    }

    /// A reproducible random plan.
    pub(super) fn random_plan(
        seed: u64,
        owners: usize,
        saves: usize,
        entries: u32,
    ) -> Vec<Vec<u32>> {
        let mut rng = Rng::with_state(seed | 1);
        (0..owners)
            .map(|_| {
                (0..saves)
                    .map(|_| rng.below(entries as usize) as u32)
                    .collect()
            })
            .collect()
    }

    /// The whole contract for one design.
    pub(super) fn check<F: FuncTable<Vec<Inst>>>() {
        // Sequential shape: owners out of order, repeated entries, an empty entry, an owner
        // that saves nothing.
        let plan = vec![vec![2, 0, 2], vec![], vec![2, 1, 2, 2], vec![0]];
        assert_eq!(run::<F>(4, &plan), expected(4, &plan));
        assert_eq!(
            run::<F>(4, &plan),
            vec![
                vec![(0, 1), (3, 0)],
                vec![(2, 1)],
                vec![(0, 0), (0, 2), (2, 0), (2, 2), (2, 3)],
                vec![],
            ]
        );
        assert_eq!(run::<F>(0, &[]), Vec::<Vec<Inst>>::new());
        // Concurrent, high and low overlap; under Miri, which interprets every step, fewer.
        let (seeds, saves) = if cfg!(miri) { (2, 40) } else { (8, 2000) };
        for seed in 1..=seeds {
            for entries in [3, 500] {
                let plan = random_plan(seed, 4, saves, entries);
                assert_eq!(
                    run::<F>(entries as usize, &plan),
                    expected(entries as usize, &plan)
                );
            }
        }
    }

    /// A table dropped without `finish` drops every saved instance exactly once.
    pub(super) fn drop_without_finish<F: FuncTable<Vec<Arc<()>>>>() {
        let token = Arc::new(());
        {
            let table = F::new(5, 3);
            on_owner_threads(&table, 3, |owner, mut saver| {
                for entry in [4, 1, 4, owner] {
                    saver.save(entry, Arc::clone(&token));
                }
            });
            assert_eq!(Arc::strong_count(&token), 13);
        }
        assert_eq!(Arc::strong_count(&token), 1);
    }

    /// A second saver for one owner panics.
    pub(super) fn second_saver_panics<F: FuncTable<Vec<Inst>>>() {
        let table = F::new(1, 2);
        let _first = table.saver(1);
        let _second = table.saver(1);
    }

    /// Saving into entry 3 of a 3-entry table panics.
    pub(super) fn entry_out_of_range_panics<F: FuncTable<Vec<Inst>>>() {
        let table = F::new(3, 1);
        table.saver(0).save(3, (0, 0));
    }

    /// Fills a 3-entry table for 2 owners with the plan every design's memory test counts:
    /// owner 0 saves into entries 0, 0 and 2, owner 1 into entry 0; returns the table once
    /// both savers are dropped. Folds of that plan hold `[u64]` capacities 4, 1 and 1
    /// (`vec![first]`, then one push): [`PLAN_FOLD_HEAP`] bytes.
    pub(super) fn memory_plan<F: FuncTable<Vec<u64>>>() -> F {
        let table = F::new(3, 2);
        {
            let (mut a, mut b) = (table.saver(0), table.saver(1));
            a.save(0, 1);
            b.save(0, 2);
            a.save(0, 3);
            a.save(2, 4);
        }
        table
    }

    /// The folds' heap bytes of [`memory_plan`].
    pub(super) const PLAN_FOLD_HEAP: u64 = (4 + 1 + 1) * 8;
}
