//! loom models of the shared function table's find-or-insert, save, walk and finish.
#![cfg(dwarf2btf_loom)]

use std::sync::atomic::{AtomicUsize, Ordering};

use dwarf2btf::functions::table::{shared::SharedTable, FuncTable};
use dwarf2btf::sync::{thread, Arc};
use loom_tests::{explore, join_and_check, spawn_savers, Inst, Plan};

/// `plan` saved by one thread per owner into a table of `entries`, checked after join.
fn model(name: &str, entries: u32, plan: Plan) {
    explore(name, move || {
        let table = Arc::new(SharedTable::<Vec<Inst>>::new(entries as usize, plan.len()));
        let savers = spawn_savers(&table, plan);
        join_and_check(table, savers, entries, plan);
    });
}

/// (a) Two owners insert their node into the same empty list.
#[test]
fn same_entry_two_owners() {
    model("same entry, 2 owners", 1, &[&[0], &[0]]);
}

/// (a) Three owners insert their node into the same empty list.
#[test]
fn same_entry_three_owners() {
    model("same entry, 3 owners", 1, &[&[0], &[0], &[0]]);
}

/// (b) Different entries, then the same two entries in opposite orders.
#[test]
fn different_entries() {
    model("different entries", 2, &[&[0], &[1]]);
    model("two entries, opposite orders", 2, &[&[0, 1], &[1, 0]]);
}

/// (b) Three owners over two entries, one of them saving into both.
#[test]
fn three_owners_two_entries() {
    model("3 owners, 2 entries", 2, &[&[0, 1], &[1], &[0]]);
}

/// (c) An owner saves twice into an entry another owner is pushing into: the second save finds
/// and reuses its node, whatever was pushed in between.
#[test]
fn owner_saves_twice() {
    model("owner saves twice", 1, &[&[0, 0], &[0]]);
}

/// (d) A reader walks the list twice while two owners push: each walk is a suffix of the next
/// and of the final list (pushes only prepend), with no owner twice, and loom checks that no
/// node's `owner`/`next` is read before its publication (a torn node).
///
/// The reader runs on a thread of its own: loom 0.7 never showed a push to a reader on the
/// model's main thread (such a model survived a `Relaxed` head load in `walk_owners`; this one
/// fails on it). The count of executions in which the reader saw a node guards against that.
#[test]
fn reader_walks_while_owners_push() {
    const PLAN: Plan = &[&[0], &[0]];
    static READER_SAW_A_NODE: AtomicUsize = AtomicUsize::new(0);
    explore("reader walks while 2 owners push", || {
        let table = Arc::new(SharedTable::<Vec<Inst>>::new(1, 2));
        let savers = spawn_savers(&table, PLAN);
        let reader = thread::spawn({
            let table = Arc::clone(&table);
            move || {
                let first: Vec<_> = table.walk_owners(0).collect();
                let second: Vec<_> = table.walk_owners(0).collect();
                assert!(second.ends_with(&first), "{first:?} then {second:?}");
                if !first.is_empty() {
                    READER_SAW_A_NODE.fetch_add(1, Ordering::Relaxed);
                }
                second
            }
        });
        let seen = reader.join().unwrap();
        for saver in savers {
            saver.join().unwrap();
        }
        let last: Vec<_> = table.walk_owners(0).collect();
        assert!(last.ends_with(&seen), "{seen:?} then {last:?}");
        join_and_check(table, Vec::new(), 1, PLAN);
    });
    assert!(
        READER_SAW_A_NODE.load(Ordering::Relaxed) > 0,
        "the reader never saw a push"
    );
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
