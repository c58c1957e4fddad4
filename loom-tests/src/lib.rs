//! Harness for the loom models of `dwarf2btf`'s function tables and the dedup's hand-over (the
//! models are in `tests/`; what each checks, its bounds and execution counts:
//! `docs/concurrency.md`, "Verification").
//!
//! Run them with `RUSTFLAGS="--cfg dwarf2btf_loom" cargo nextest run --cargo-profile testing -p loom-tests
//! --profile loom --no-capture` (each model prints how many executions loom explored). The same
//! harness, but for the loom-only explorers, serves the randomized schedulers of
//! `tests/shuttle_tables.rs` under `--cfg dwarf2btf_shuttle` (sizes loom cannot reach); with
//! neither cfg this crate and its tests compile to nothing.
#![cfg(any(dwarf2btf_loom, dwarf2btf_shuttle))]

#[cfg(dwarf2btf_loom)]
use std::sync::atomic::{AtomicUsize, Ordering};

use dwarf2btf::dedup::handover::StructFrontier;
#[cfg(dwarf2btf_loom)]
use dwarf2btf::functions::table::shared::SharedTable;
use dwarf2btf::functions::table::{Contended, FuncSaver, FuncTable, Owner};
use dwarf2btf::sync::{thread, Arc, AtomicU32};

/// What the models save: `(owner, sequence number)`, unique per save.
pub type Inst = (Owner, u32);

/// `plan[owner]`: the entries that `owner` saves into, in order.
pub type Plan = &'static [&'static [u32]];

#[cfg(dwarf2btf_loom)]
/// The preemption bound of most models: 3 keeps the suite to seconds.
pub const BOUND: Option<usize> = Some(3);

#[cfg(dwarf2btf_loom)]
/// Model-checks `model` under every interleaving loom explores with at most `bound`
/// preemptions per execution (`None`: no bound, every interleaving), prints how many
/// executions that took, and returns the count; panics, like loom, on the first failing one.
/// Asserts that there was more than one: a model that cannot interleave proves nothing.
pub fn explore_bounded(
    name: &str,
    bound: Option<usize>,
    model: impl Fn() + Sync + Send + 'static,
) -> usize {
    let executions = std::sync::Arc::new(AtomicUsize::new(0));
    let counter = std::sync::Arc::clone(&executions);
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = bound;
    builder.check(move || {
        counter.fetch_add(1, Ordering::Relaxed);
        model();
    });
    let executions = executions.load(Ordering::Relaxed);
    let bound = bound.map_or("none".to_string(), |b| b.to_string());
    eprintln!("loom model {name} (preemption bound {bound}): {executions} executions");
    assert!(executions > 1, "model {name} has a single interleaving");
    executions
}

#[cfg(dwarf2btf_loom)]
/// [`explore_bounded`] with the usual bound, [`BOUND`].
pub fn explore(name: &str, model: impl Fn() + Sync + Send + 'static) {
    explore_bounded(name, BOUND, model);
}

#[cfg(dwarf2btf_loom)]
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
    eprintln!("loom model {name}: failed as it must ({reason})");
}

#[cfg(dwarf2btf_loom)]
/// Sets the loom-only mutant switch `mutant` (one of `shared::mutants`), explores `plan` on a
/// shared table with it set, checks that loom fails the model with a message containing
/// `reason` ([`expect_failure`]), and clears the switch.
pub fn expect_mutant_caught(
    name: &str,
    mutant: &'static std::sync::atomic::AtomicBool,
    reason: &str,
    plan: Plan,
) {
    let entries = plan
        .iter()
        .flat_map(|saves| saves.iter())
        .max()
        .map_or(0, |&e| e + 1);
    mutant.store(true, Ordering::Relaxed);
    expect_failure(name, reason, move || {
        let table = Arc::new(SharedTable::<Vec<Inst>>::new(entries as usize, plan.len()));
        let savers = spawn_savers(&table, plan);
        join_and_check(table, savers, entries, plan);
    });
    mutant.store(false, Ordering::Relaxed);
}

/// Starts one thread per owner of `plan`, each saving its entries through its own saver
/// (dropped at the thread's end: save-merge's and the private index's hand-over).
pub fn spawn_savers<F>(table: &Arc<F>, plan: Plan) -> Vec<thread::JoinHandle<()>>
where
    F: FuncTable<Vec<Inst>> + Send + 'static,
{
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

/// Each entry's instances as `plan` saves them: owners ascending, each owner's in save order.
pub fn expected(entries: u32, plan: Plan) -> Vec<Vec<Inst>> {
    let mut expected = vec![Vec::new(); entries as usize];
    for (owner, &saves) in (0..).zip(plan) {
        for (seq, &entry) in (0..).zip(saves) {
            expected[entry as usize].push((owner, seq));
        }
    }
    expected
}

/// Checks what the final pass reads, `finish`'s folds, against `want` (each entry's
/// instances, owners ascending): one fold per owner that saved into the entry, owners
/// ascending, each holding that owner's instances in save order. A fold twice for one owner
/// is what a node lost from a shared list leads to (the owner's next save pushes another).
pub fn check_folds(folds: Vec<Vec<Vec<Inst>>>, want: &[Vec<Inst>]) {
    for (entry, folds) in folds.iter().enumerate() {
        let owners: Vec<Owner> = folds.iter().map(|fold| fold[0].0).collect();
        let mut distinct = owners.clone();
        distinct.dedup();
        assert_eq!(
            owners, distinct,
            "entry {entry}: an owner has two folds: a node was lost from its list"
        );
        assert!(
            owners.windows(2).all(|w| w[0] < w[1]),
            "entry {entry}: owners {owners:?}"
        );
        assert!(folds
            .iter()
            .all(|fold| fold.iter().all(|i| i.0 == fold[0].0)));
    }
    let got: Vec<Vec<Inst>> = folds.into_iter().map(|folds| folds.concat()).collect();
    assert_eq!(got, want, "an instance is lost or misplaced");
}

/// Joins the savers, then checks `finish`'s folds against `plan` ([`check_folds`]); returns
/// the contention the table counted.
pub fn join_and_check<F: FuncTable<Vec<Inst>>>(
    table: Arc<F>,
    savers: Vec<thread::JoinHandle<()>>,
    entries: u32,
    plan: Plan,
) -> Contended {
    for saver in savers {
        saver.join().unwrap();
    }
    let table = Arc::try_unwrap(table).unwrap_or_else(|_| panic!("a saver outlived its join"));
    let contended = table.contention();
    check_folds(table.finish(), &expected(entries, plan));
    contended
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

/// The batches of the owner hand-over model, `(batch, entries saved)`: with two owners, batch
/// `b` belongs to owner `b % 2`, so owner 0 saves batches 0 and 2 (entries 0, 1, then 0 again)
/// and owner 1 batch 1 (entry 0, the same list).
const HANDOVER_BATCHES: [(usize, &[u32]); 3] = [(0, &[0, 1]), (1, &[0]), (2, &[0])];

/// Batch `b`'s instances as the pipeline hands them to its owner: `(entry, (owner, id))`, the
/// id unique per save (`10 × b + i`).
fn handover_batch(b: usize, entries: &[u32]) -> Vec<(u32, Inst)> {
    (0..)
        .zip(entries)
        .map(|(i, &entry)| (entry, (b as Owner % 2, 10 * b as u32 + i)))
        .collect()
}

/// The owner hand-over of the pipeline (`dwarf2btf::pipeline::owners`) on a table `F`: thread
/// A saves batch 0 as owner 0; thread B takes owner 0's lock and saves batch 2 (or, if it gets
/// there first, leaves it waiting for batch 0); thread C saves batch 1 as owner 1 into the same
/// entry. After the joins and the savers' drop, `finish` must equal a sequential run's (every
/// save exactly once, each owner's instances in batch order) and pass [`check_folds`].
pub fn owner_handover<F: FuncTable<Vec<Inst>> + Send + 'static>() {
    let batches = HANDOVER_BATCHES.map(|(b, entries)| handover_batch(b, entries));
    let sequential = sequential::<F>(2, 2, &batches);
    let folds = through_owners::<F>(2, 2, |owners| {
        [0, 2, 1]
            .into_iter()
            .map(|b| {
                let owners = Arc::clone(owners);
                let (b, entries) = HANDOVER_BATCHES[b];
                thread::spawn(move || owners.save(b, handover_batch(b, entries)))
            })
            .collect()
    });
    check_against_sequential(folds, sequential);
}

/// The savers of a table `F` (`entries`, `owners`) behind the pipeline's per-owner locks
/// (`dwarf2btf::pipeline::owners::Owners`), shared with the threads `start` spawns; after their
/// joins and the savers' drop, `finish`'s folds.
pub fn through_owners<F: FuncTable<Vec<Inst>> + Send + 'static>(
    entries: usize,
    owners: usize,
    start: impl FnOnce(&Arc<SavingOwners>) -> Vec<thread::JoinHandle<()>>,
) -> Vec<Vec<Vec<Inst>>> {
    use dwarf2btf::pipeline::owners::{BoxedSaver, Owners};
    // The savers move into threads, so they must borrow a table that lives as long as any
    // thread: a leaked one, taken back once every thread is joined and every saver dropped.
    let raw = Box::into_raw(Box::new(F::new(entries, owners)));
    // SAFETY: `raw` comes from `Box::into_raw` just above and is freed only below, after every
    // thread that borrowed through this reference has been joined and every saver dropped.
    let table: &'static F = unsafe { &*raw };
    let savers = Owners::new(
        (0..owners as Owner).map(|o| Box::new(table.saver(o)) as BoxedSaver<'static, Vec<Inst>>),
    );
    let savers = Arc::new(savers);
    for thread in start(&savers) {
        thread.join().unwrap();
    }
    drop(Arc::try_unwrap(savers).unwrap_or_else(|_| panic!("a thread outlived its join")));
    // SAFETY: every saver borrowing `table` was dropped just above, and every thread joined, so
    // `raw`, from `Box::into_raw` above, is freed once and nothing refers to it.
    unsafe { Box::from_raw(raw) }.finish()
}

/// The owners' savers as [`through_owners`] shares them.
pub type SavingOwners = dwarf2btf::pipeline::owners::Owners<'static, Vec<Inst>>;

/// The folds of a sequential run of `batches` on a table `F` of `entries` with `owners`
/// owners: each batch through its owner's saver (batch `b`: owner `b % owners`), in batch
/// order.
pub fn sequential<F: FuncTable<Vec<Inst>>>(
    entries: usize,
    owners: usize,
    batches: &[Vec<(u32, Inst)>],
) -> Vec<Vec<Vec<Inst>>> {
    let table = F::new(entries, owners);
    let mut savers: Vec<_> = (0..owners as Owner).map(|o| table.saver(o)).collect();
    for (b, batch) in batches.iter().enumerate() {
        for &(entry, instance) in batch {
            savers[b % owners].save(entry, instance);
        }
    }
    drop(savers);
    table.finish()
}

/// Checks a concurrent run's folds with [`check_folds`] and against a sequential run's.
pub fn check_against_sequential(folds: Vec<Vec<Vec<Inst>>>, sequential: Vec<Vec<Vec<Inst>>>) {
    let want: Vec<Vec<Inst>> = sequential.iter().map(|folds| folds.concat()).collect();
    check_folds(folds.clone(), &want);
    assert_eq!(
        folds, sequential,
        "the folds differ from a sequential run's"
    );
}

/// Type 3 is the FWD of the dedup hand-over models.
fn is_fwd(id: u32) -> bool {
    id == 3
}

/// The dedup hand-over model "published mappings are seen": the struct phase maps 2 → 1 (1
/// canonical), publishes past them and finishes; the classifier must read type 2's final
/// canonical id, 1.
pub fn published_mappings_are_seen() {
    use dwarf2btf::sync::Ordering;
    let (map, progress, writer) = spawn_struct_phase(4, |map, progress| {
        map[1].store(1, Ordering::Relaxed);
        map[2].store(1, Ordering::Relaxed);
        progress.publish(3);
        progress.finish();
    });
    let seen = dwarf2btf::dedup::handover::final_id(&map, &progress, 2, is_fwd);
    assert_eq!(seen, Some(1), "a published mapping was not seen");
    writer.join().unwrap();
}

/// The dedup hand-over model "a FWD is final only at the end": the struct phase maps the FWD 3
/// to itself, publishes past it, then resolves it to 0 and finishes. The classifier must get
/// `None` or, once it sees the phases over, what the FWD was resolved to — never the FWD.
pub fn a_fwd_is_final_only_at_the_end() {
    use dwarf2btf::sync::Ordering;
    let (map, progress, writer) = spawn_struct_phase(4, |map, progress| {
        map[3].store(3, Ordering::Relaxed);
        progress.publish(4);
        map[0].store(0, Ordering::Relaxed);
        map[3].store(0, Ordering::Relaxed);
        progress.finish();
    });
    let seen = dwarf2btf::dedup::handover::final_id(&map, &progress, 3, is_fwd);
    assert!(
        seen.is_none() || seen == Some(0),
        "a FWD was read as final before the end: {seen:?}"
    );
    writer.join().unwrap();
}
