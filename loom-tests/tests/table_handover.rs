//! loom models of the hand-over of save-merge and of the private-index control: each saver
//! keeps its list (or index) to itself and hands it in under its owner's lock when it is
//! dropped, at the end of its thread; `finish`, after the joins, groups what was handed in.
//! The locks are `dwarf2btf::sync::Mutex`, loom's under loom, so loom orders every hand-in
//! against `finish` and checks each list's cells.
#![cfg(dwarf2btf_loom)]

use dwarf2btf::functions::table::{private::PrivateTable, save_merge::SaveMergeTable, FuncTable};
use dwarf2btf::sync::Arc;
use loom_tests::{explore_bounded, join_and_check, spawn_savers, Inst, Plan, BOUND};

/// Three owners over two entries, one coming back to an entry after another.
const THREE: Plan = &[&[0, 1, 0], &[1], &[1, 0]];

/// Two owners into one entry, small enough for no preemption bound.
const TWO: Plan = &[&[0, 0], &[0]];

/// `plan` saved by one thread per owner into a table `F` of `entries`, checked after join.
fn model<F: FuncTable<Vec<Inst>> + Send + 'static>(
    name: &str,
    bound: Option<usize>,
    entries: u32,
    plan: Plan,
) {
    explore_bounded(name, bound, move || {
        let table = Arc::new(F::new(entries as usize, plan.len()));
        let savers = spawn_savers(&table, plan);
        join_and_check(table, savers, entries, plan);
    });
}

#[test]
fn save_merge_hand_over() {
    model::<SaveMergeTable<Vec<Inst>>>("save-merge, 3 owners", BOUND, 2, THREE);
    model::<SaveMergeTable<Vec<Inst>>>("save-merge, 2 owners, unbounded", None, 1, TWO);
}

#[test]
fn private_hand_over() {
    model::<PrivateTable<Vec<Inst>>>("private, 3 owners", BOUND, 2, THREE);
    model::<PrivateTable<Vec<Inst>>>("private, 2 owners, unbounded", None, 1, TWO);
}
