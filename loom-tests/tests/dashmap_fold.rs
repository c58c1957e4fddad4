//! A loom model of dashmap's fold. `dashmap`'s own shard locks are not loom's (they spin and
//! park on real atomics, which loom can neither see nor preempt), so the model keeps each
//! entry's per-owner folds behind loom's `Mutex` instead (one lock per entry: a shard holding
//! several entries only serializes more) and runs the design's own steps under it:
//! `dashmap::fold_in` for each save, `dashmap::by_owner` for `finish`. What it checks is the
//! fold's invariant — one fold per (entry, owner), each an owner's instances in save order,
//! owners ascending after `finish` — not dashmap's locking, which the contract tests run for
//! real (`src/functions/table/dashmap.rs`).
#![cfg(dwarf2btf_loom)]

use dwarf2btf::functions::table::dashmap::{by_owner, fold_in, OwnerStates};
use dwarf2btf::sync::{thread, Arc};
use loom::sync::Mutex;
use loom_tests::{check_folds, expected, explore_bounded, Inst, Plan, BOUND};

/// One thread per owner of `plan` folds its saves into per-entry locked states; after the
/// joins, `by_owner` gives each entry's folds, checked against `plan`.
fn model(name: &str, bound: Option<usize>, entries: u32, plan: Plan) {
    explore_bounded(name, bound, move || {
        let map: Arc<Vec<Mutex<OwnerStates<Vec<Inst>>>>> =
            Arc::new((0..entries).map(|_| Mutex::new(Vec::new())).collect());
        let threads: Vec<_> = (0..)
            .zip(plan)
            .map(|(owner, &saves)| {
                let map = Arc::clone(&map);
                thread::spawn(move || {
                    for (seq, &entry) in (0..).zip(saves) {
                        fold_in(
                            &mut map[entry as usize].lock().unwrap(),
                            owner,
                            (owner, seq),
                        );
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        let map = Arc::try_unwrap(map).unwrap_or_else(|_| panic!("a saver outlived its join"));
        let folds = map
            .into_iter()
            .map(|states| by_owner(states.into_inner().unwrap()))
            .collect();
        check_folds(folds, &expected(entries, plan));
    });
}

#[test]
fn dashmap_fold() {
    model(
        "dashmap fold, 3 owners",
        BOUND,
        2,
        &[&[0, 1, 0], &[1, 1], &[0, 1]],
    );
    model(
        "dashmap fold, 2 owners, unbounded",
        None,
        1,
        &[&[0, 0], &[0]],
    );
}
