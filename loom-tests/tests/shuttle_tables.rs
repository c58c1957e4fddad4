//! The shared function table and the pipeline's owner hand-over at production's sizes, under
//! shuttle's randomized schedulers (PCT and uniform random), where loom's exhaustive search
//! cannot go: 8, 16 and 64 owners, every owner saving into one entry (a list of up to 64
//! nodes, as long as production's at -j64), coming back to it after saving elsewhere. Each
//! run checks what the loom models check: `finish`'s folds — one per (entry, owner), owners
//! ascending, each owner's instances in save order, every save exactly once — equal to a
//! sequential run's, and the failed compare-and-swaps within owners × (owners − 1) / 2 per
//! list. Fixed seeds and iteration counts (below) keep the run reproducible and short;
//! `SHUTTLE_RANDOM_SEED` overrides a seed to replay a failure. (shuttle checks atomicity and
//! interleavings, not memory ordering: the orderings are loom's and TSan's to check.)
//!
//! Run: `RUSTFLAGS="--cfg dwarf2btf_shuttle" CARGO_TARGET_DIR=target/shuttle cargo nextest
//! run --profile shuttle --cargo-profile checks -p loom-tests --no-capture -E
//! 'binary(shuttle_tables)'`. With `DWARF2BTF_MUTANT` set to `racy_push` or `unordered_saves`,
//! the tests plant that bug (the switches exist in shuttle builds) and must fail
//! (scripts/test.sh checks they do).
#![cfg(dwarf2btf_shuttle)]

use std::sync::atomic::Ordering::Relaxed;

use dwarf2btf::functions::table::shared::SharedTable;
use dwarf2btf::functions::table::{FuncTable, Owner};
use dwarf2btf::sync::{thread, Arc};
use loom_tests::{
    check_against_sequential, join_and_check, sequential, spawn_savers, through_owners, Inst, Plan,
};
use shuttle::scheduler::{PctScheduler, RandomScheduler};
use shuttle::sync::atomic::AtomicUsize;
use shuttle::{Config, Runner};

/// The seeds, each run once with PCT (depth [`PCT_DEPTH`]) and once with the random scheduler.
const SEEDS: [u64; 2] = [0x5eed_0001, 0x5eed_0002];
/// PCT's bug depth: it finds with good probability any bug needing up to this many ordering
/// constraints (the lost node needs 2: a push between another's load and store).
const PCT_DEPTH: usize = 3;
/// Entries of the table models: entry 0 gets every owner, 1–3 a pseudo-random part of them.
const ENTRIES: u32 = 4;

/// Runs `model` `iterations` times per seed and scheduler.
fn run(name: &str, iterations: usize, model: impl Fn() + Send + Sync + Clone + 'static) {
    plant_the_mutant_in_the_environment();
    for seed in SEEDS {
        let pct = PctScheduler::new_from_seed(seed, PCT_DEPTH, iterations);
        Runner::new(pct, Config::new()).run(model.clone());
        let random = RandomScheduler::new_from_seed(seed, iterations);
        Runner::new(random, Config::new()).run(model.clone());
    }
    eprintln!(
        "shuttle {name}: {} seeds × (PCT depth {PCT_DEPTH} + random) × {iterations} iterations",
        SEEDS.len()
    );
}

/// `DWARF2BTF_MUTANT=racy_push|unordered_saves` switches that bug on (scripts/test.sh's
/// negative control).
fn plant_the_mutant_in_the_environment() {
    match std::env::var("DWARF2BTF_MUTANT").as_deref() {
        Ok("racy_push") => {
            use dwarf2btf::functions::table::shared::mutants::RACY_PUSH;
            RACY_PUSH.store(true, Relaxed);
        }
        Ok("unordered_saves") => {
            use dwarf2btf::pipeline::owners::mutants::UNORDERED_SAVES;
            UNORDERED_SAVES.store(true, Relaxed);
        }
        Ok(other) => panic!("DWARF2BTF_MUTANT={other}: no such mutant"),
        Err(_) => {}
    }
}

/// A pseudo-random step (splitmix64), so that the plans are fixed.
fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Owner `o` saves into entry 0, then two of entries 1–3, then entry 0 again (finding its node
/// anywhere in a list of up to `owners` nodes while others still push).
fn plan(owners: usize) -> Plan {
    let plan: Vec<&'static [u32]> = (0..owners as u64)
        .map(|o| {
            let (a, b) = (mix(o), mix(o + 1000));
            let saves = vec![0, 1 + (a % 3) as u32, 1 + (b % 3) as u32, 0];
            &*Box::leak(saves.into_boxed_slice())
        })
        .collect();
    Box::leak(plan.into_boxed_slice())
}

/// Each of `owners` threads saves its part of [`plan`] into one shared table; checks the folds
/// and the contention bound.
fn shared_table(owners: usize, iterations: usize) {
    let plan = plan(owners);
    let lists: u64 = (0..ENTRIES)
        .map(|e| {
            let n = plan.iter().filter(|saves| saves.contains(&e)).count() as u64;
            n * n.saturating_sub(1) / 2
        })
        .sum();
    let name = format!("shared table, {owners} owners");
    run(&name, iterations, move || {
        let table = Arc::new(SharedTable::<Vec<Inst>>::new(ENTRIES as usize, owners));
        let savers = spawn_savers(&table, plan);
        let contended = join_and_check(table, savers, ENTRIES, plan);
        assert!(
            contended.cas_failures <= lists,
            "{contended:?} over {lists}"
        );
    });
}

#[test]
fn shared_table_8_owners() {
    shared_table(8, 20_000);
}

#[test]
fn shared_table_16_owners() {
    shared_table(16, 10_000);
}

#[test]
fn shared_table_64_owners() {
    shared_table(64, 3_000);
}

/// Batch `b` of the pipeline model: entry 0 and one of 1–3, as `(entry, (owner, id))`.
fn batch(b: usize, owners: usize) -> Vec<(u32, Inst)> {
    let owner = (b % owners) as Owner;
    let other = 1 + (mix(b as u64) % 3) as u32;
    vec![
        (0, (owner, 10 * b as u32)),
        (other, (owner, 10 * b as u32 + 1)),
    ]
}

/// What production does: `threads` workers claim batches from a counter, batch `b` belongs to
/// owner `b % owners`, and each saves through its owner's locked saver ([`Owners`]), which
/// keeps each owner's batches in batch order. Two batches per owner, so every owner's saver is
/// handed between threads ([`Owners`](dwarf2btf::pipeline::owners::Owners)).
fn pipeline(owners: usize, threads: usize, iterations: usize) {
    let batches: Vec<Vec<(u32, Inst)>> = (0..2 * owners).map(|b| batch(b, owners)).collect();
    let batches: &'static [Vec<(u32, Inst)>] = Box::leak(batches.into_boxed_slice());
    let name = format!("pipeline, {owners} owners, {threads} threads");
    run(&name, iterations, move || {
        let want = sequential::<SharedTable<Vec<Inst>>>(ENTRIES as usize, owners, batches);
        let next = Arc::new(AtomicUsize::new(0));
        let folds = through_owners::<SharedTable<Vec<Inst>>>(ENTRIES as usize, owners, |savers| {
            (0..threads)
                .map(|_| {
                    let (savers, next) = (Arc::clone(savers), Arc::clone(&next));
                    thread::spawn(move || loop {
                        let b = next.fetch_add(1, Relaxed);
                        let Some(batch) = batches.get(b) else { break };
                        savers.save(b, batch.clone());
                    })
                })
                .collect()
        });
        check_against_sequential(folds, want);
    });
}

#[test]
fn pipeline_8_owners() {
    pipeline(8, 4, 20_000);
}

#[test]
fn pipeline_16_owners() {
    pipeline(16, 4, 10_000);
}

#[test]
fn pipeline_64_owners() {
    pipeline(64, 8, 3_000);
}
