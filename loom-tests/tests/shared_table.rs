//! loom models of the shared function table: find-or-insert, save, and what the final pass
//! reads (`finish`'s folds, drained from the owners' arenas after the join).
#![cfg(dwarf2btf_loom)]

use std::sync::atomic::{AtomicU64, Ordering};

use dwarf2btf::functions::table::{shared::SharedTable, FuncSaver, FuncTable};
use dwarf2btf::sync::{thread, Arc};
use loom_tests::{
    check_folds, explore, explore_bounded, join_and_check, spawn_savers, Inst, Plan, BOUND,
};

/// `plan` saved by one thread per owner into a table of `entries`, checked after join, with
/// loom's preemption bound `bound`; returns the most failed compare-and-swaps of any execution.
fn model(name: &str, bound: Option<usize>, entries: u32, plan: Plan) -> u64 {
    let most = std::sync::Arc::new(AtomicU64::new(0));
    let seen = std::sync::Arc::clone(&most);
    explore_bounded(name, bound, move || {
        let table = Arc::new(SharedTable::<Vec<Inst>>::new(entries as usize, plan.len()));
        let savers = spawn_savers(&table, plan);
        let contended = join_and_check(table, savers, entries, plan);
        seen.fetch_max(contended.cas_failures, Ordering::Relaxed);
    });
    most.load(Ordering::Relaxed)
}

/// `owners` owners push their node onto one empty list at once. A failed strong
/// compare-and-swap means another owner's push succeeded, and each owner pushes once: at most
/// `owners` − 1 failures per push, `owners` × (`owners` − 1) / 2 in all; the counter must see
/// at least one (it counts real conflicts, and loom makes them happen).
fn one_list(name: &str, bound: Option<usize>, owners: usize) {
    const PLANS: [Plan; 3] = [
        &[&[0], &[0]],
        &[&[0], &[0], &[0]],
        &[&[0], &[0], &[0], &[0]],
    ];
    let most = model(name, bound, 1, PLANS[owners - 2]);
    let limit = (owners * (owners - 1) / 2) as u64;
    eprintln!("loom model {name}: at most {most} failed compare-and-swaps (bound {limit})");
    assert!(
        (1..=limit).contains(&most),
        "{most} failed compare-and-swaps"
    );
}

/// (a) Two owners insert their node into the same empty list; also with no preemption bound.
#[test]
fn same_entry_two_owners() {
    one_list("same entry, 2 owners", BOUND, 2);
    one_list("same entry, 2 owners, unbounded", None, 2);
}

/// (a) Three owners insert their node into the same empty list.
#[test]
fn same_entry_three_owners() {
    one_list("same entry, 3 owners", BOUND, 3);
}

/// (a) Four owners (loom's most threads beside the main one) insert their node into the same
/// empty list; bound 2 keeps it to seconds.
#[test]
fn same_entry_four_owners() {
    one_list("same entry, 4 owners", Some(2), 4);
}

/// (b) Different entries, then the same two entries in opposite orders.
#[test]
fn different_entries() {
    model("different entries", BOUND, 2, &[&[0], &[1]]);
    model(
        "two entries, opposite orders",
        BOUND,
        2,
        &[&[0, 1], &[1, 0]],
    );
}

/// (b) Three owners over two entries, one of them saving into both.
#[test]
fn three_owners_two_entries() {
    model("3 owners, 2 entries", BOUND, 2, &[&[0, 1], &[1], &[0]]);
}

/// (b) Four owners over two entries, two of them saving into both in opposite orders and
/// coming back to the first.
#[test]
fn four_owners_two_entries() {
    const PLAN: Plan = &[&[0, 1, 0], &[1, 0], &[0], &[1]];
    model("4 owners, 2 entries", Some(1), 2, PLAN);
}

/// (c) An owner saves twice into an entry another owner is pushing into: the second save finds
/// and reuses its node, whatever was pushed in between; also with no preemption bound.
#[test]
fn owner_saves_twice() {
    const PLAN: Plan = &[&[0, 0], &[0]];
    model("owner saves twice", BOUND, 1, PLAN);
    model("owner saves twice, unbounded", None, 1, PLAN);
}

/// (c) Saves that cross arena chunk boundaries: under loom an arena's first chunk holds one
/// node and each next one twice as many, so owner 0's four nodes lie in three chunks and
/// owner 1's two in two; the later saves find nodes in the first and the last chunk while the
/// other owner pushes, and `finish` drains every chunk. A smaller plan (two chunks each)
/// also with no preemption bound.
#[test]
fn saves_cross_arena_chunks() {
    const PLAN: Plan = &[&[0, 1, 2, 3, 0, 3], &[3, 0, 3]];
    model("saves cross arena chunks", BOUND, 4, PLAN);
    const SMALL: Plan = &[&[0, 1, 0], &[1, 0]];
    model("saves cross arena chunks, unbounded", None, 2, SMALL);
}

/// (c) An owner finds its node deep in the list while others push: owners 0, 1 and 2 have
/// pushed (list 2 → 1 → 0) before the threads start; then owner 0 saves again, walking past
/// the two other nodes, while owner 3 pushes onto the same list and owner 1 walks it. Four
/// threads with the main one, which checks `finish` after the joins.
#[test]
fn owner_finds_its_node_deep_in_the_list() {
    explore("owner finds its node deep in the list", || {
        // The savers move into threads, so they must borrow a table that lives as long as
        // any thread: a leaked one, taken back once every thread is joined.
        let raw = Box::into_raw(Box::new(SharedTable::<Vec<Inst>>::new(1, 4)));
        // SAFETY: `raw` comes from `Box::into_raw` just above and is freed only below, after
        // every thread that borrowed through this reference has been joined.
        let table: &'static SharedTable<Vec<Inst>> = unsafe { &*raw };
        let mut savers: Vec<_> = (0..3).map(|owner| table.saver(owner)).collect();
        for (owner, saver) in (0..).zip(&mut savers) {
            saver.save(0, (owner, 0));
        }
        let (mut owner0, mut owner1) = (savers.remove(0), savers.remove(0));
        drop(savers);
        let threads = [
            thread::spawn(move || owner0.save(0, (0, 1))),
            thread::spawn(move || table.saver(3).save(0, (3, 0))),
            thread::spawn(move || owner1.save(0, (1, 1))),
        ];
        for thread in threads {
            thread.join().unwrap();
        }
        // SAFETY: every saver borrowing `table` was dropped by now (those moved into threads
        // with their joined threads), so `raw`, from `Box::into_raw` above, is freed once and
        // nothing refers to it.
        let table = unsafe { Box::from_raw(raw) };
        let want = vec![vec![(0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (3, 0)]];
        check_folds(table.finish(), &want);
    });
}

/// Dropping the table without `finish` drops every node: loom's leak checker fails the model
/// otherwise (each node carries a tracked allocation).
#[test]
fn drop_without_finish() {
    const PLAN: Plan = &[&[0, 1], &[0]];
    explore("drop without finish", || {
        let table = Arc::new(SharedTable::<Vec<Inst>>::new(2, 2));
        for saver in spawn_savers(&table, PLAN) {
            saver.join().unwrap();
        }
    });
}
