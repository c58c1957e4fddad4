//! Harness for the loom models of `dwarf2btf::functions::table::shared` (the models are in `tests/`).
//!
//! Run them with `RUSTFLAGS="--cfg dwarf2btf_loom" cargo test --release -p loom-tests`; without
//! `--cfg dwarf2btf_loom` this crate and its tests compile to nothing.
#![cfg(dwarf2btf_loom)]

use std::sync::atomic::{AtomicUsize, Ordering};

use dwarf2btf::dedup::handover::StructFrontier;
use dwarf2btf::functions::table::{shared::SharedTable, FuncSaver, FuncTable, Owner};
use dwarf2btf::sync::{thread, Arc, AtomicU32};

/// What the models save: `(owner, sequence number)`, unique per save.
pub type Inst = (Owner, u32);

/// `plan[owner]`: the entries that `owner` saves into, in order.
pub type Plan = &'static [&'static [u32]];

/// Model-checks `model` under every interleaving loom explores with preemption bound 3 (which
/// keeps the suite to seconds), and prints how many executions that took; panics, like loom, on
/// the first failing one. Asserts that there was more than one: a model that cannot interleave
/// proves nothing.
pub fn explore(name: &str, model: impl Fn() + Sync + Send + 'static) {
    let executions = std::sync::Arc::new(AtomicUsize::new(0));
    let counter = std::sync::Arc::clone(&executions);
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(3);
    builder.check(move || {
        counter.fetch_add(1, Ordering::Relaxed);
        model();
    });
    let executions = executions.load(Ordering::Relaxed);
    eprintln!("loom model {name}: {executions} executions");
    assert!(executions > 1, "model {name} has a single interleaving");
}

/// Explores `model`, which a test switch has broken, and checks that loom fails it, with a
/// message containing `reason`: proof that the models catch the bug the switch plants.
pub fn expect_failure(name: &str, reason: &str, model: impl Fn() + Sync + Send + 'static) {
    let quiet = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| explore(name, model)));
    std::panic::set_hook(quiet);
    let message = match result {
        Ok(()) => panic!("model {name}: loom explored every interleaving and found no failure"),
        Err(payload) => payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default(),
    };
    assert!(
        message.contains(reason),
        "model {name}: loom failed for another reason: {message}"
    );
}

/// Starts one thread per owner of `plan`, each saving its entries through its own saver.
pub fn spawn_savers(
    table: &Arc<SharedTable<Vec<Inst>>>,
    plan: Plan,
) -> Vec<thread::JoinHandle<()>> {
    (0..)
        .zip(plan)
        .map(|(owner, &entries)| {
            let table = Arc::clone(table);
            thread::spawn(move || {
                let mut saver = table.saver(owner);
                for (seq, &entry) in (0..).zip(entries) {
                    saver.save(entry, (owner, seq));
                }
            })
        })
        .collect()
}

/// Joins the savers, then checks the table against `plan`: every entry's list holds each
/// owner that saved into it exactly once, and `finish` returns one fold per such owner, owners
/// ascending, each holding that owner's instances in save order.
pub fn join_and_check(
    table: Arc<SharedTable<Vec<Inst>>>,
    savers: Vec<thread::JoinHandle<()>>,
    entries: u32,
    plan: Plan,
) {
    for saver in savers {
        saver.join().unwrap();
    }
    let mut expected = vec![Vec::new(); entries as usize];
    for (owner, &saves) in (0..).zip(plan) {
        for (seq, &entry) in (0..).zip(saves) {
            expected[entry as usize].push((owner, seq));
        }
    }
    for entry in 0..entries {
        let mut owners: Vec<Owner> = table.walk_owners(entry).collect();
        owners.sort_unstable();
        let mut want: Vec<Owner> = expected[entry as usize].iter().map(|&(o, _)| o).collect();
        want.dedup();
        assert_eq!(owners, want, "entry {entry}: a node is lost or duplicated");
    }
    let table = Arc::try_unwrap(table).unwrap_or_else(|_| panic!("a saver outlived its join"));
    let folds = table.finish();
    for (entry, folds) in folds.iter().enumerate() {
        let owners: Vec<Owner> = folds.iter().map(|fold| fold[0].0).collect();
        assert!(
            owners.windows(2).all(|w| w[0] < w[1]),
            "entry {entry}: owners {owners:?}"
        );
        assert!(folds
            .iter()
            .all(|fold| fold.iter().all(|i| i.0 == fold[0].0)));
    }
    let got: Vec<Vec<Inst>> = folds.into_iter().map(|folds| folds.concat()).collect();
    assert_eq!(got, expected, "an instance is lost or misplaced");
}

/// For the dedup hand-over models: a `map` of `types` unprocessed types, a fresh progress, and
/// a thread running `struct_phase` on them, as the struct phase does beside the classifier.
pub fn spawn_struct_phase(
    types: usize,
    struct_phase: impl FnOnce(&[AtomicU32], &StructFrontier) + Send + 'static,
) -> (
    Arc<Vec<AtomicU32>>,
    Arc<StructFrontier>,
    thread::JoinHandle<()>,
) {
    let map: Arc<Vec<AtomicU32>> = Arc::new((0..types).map(|_| AtomicU32::new(u32::MAX)).collect());
    let progress = Arc::new(StructFrontier::default());
    let writer = {
        let (map, progress) = (Arc::clone(&map), Arc::clone(&progress));
        thread::spawn(move || struct_phase(&map, &progress))
    };
    (map, progress, writer)
}
