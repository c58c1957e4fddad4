//! Benchmark: contention in the four function-table designs (`shared`, `dashmap`,
//! `save-merge`, `private`). `lab/` replays recorded traces with a start barrier, latency
//! histograms and confidence intervals; this is the quick criterion view.
//! - `kernel`: the reference kernel's workload (54,619 instances of 42,264 ELF functions, with
//!   the kernel's instances-per-function distribution) dealt to 1…64 threads in batches, as
//!   the pipeline deals CU batches to workers;
//! - `high-overlap` / `low-overlap`: N threads each save M instances into K entries, K small
//!   (every thread hits every entry) or large.
//!
//! One iteration = `new`, every thread's saves, and `finish` (save-merge does its work there,
//! so it must be counted).

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use dwarf2btf::functions::table::{
    dashmap::DashmapTable, private::PrivateTable, save_merge::SaveMergeTable, shared::SharedTable,
    Fold, FuncSaver, FuncTable,
};
use dwarf2btf::rng::Rng;

/// Saves per thread.
const SAVES: usize = 50_000;
/// An instance about the size of the pipeline's `FuncInstance`.
type Inst = [u64; 7];

/// A fold of constant size, like the pipeline's summary: the first instance and a count.
struct Folded {
    first: Inst,
    count: u32,
}

impl Fold for Folded {
    type Instance = Inst;
    fn new(first: Inst) -> Self {
        Folded { first, count: 1 }
    }
    fn add(&mut self, instance: Inst) {
        self.first = self.first.min(instance);
        self.count += 1;
    }
}

/// Thread `owner`'s entries, pseudo-random in `0..entries`, computed before timing.
fn plan(threads: usize, entries: u32) -> Vec<Vec<u32>> {
    (0..threads as u64)
        .map(|owner| {
            let mut rng = Rng::with_state(0x9e37_79b9_7f4a_7c15 ^ (owner + 1));
            (0..SAVES)
                .map(|_| rng.below(entries as usize) as u32)
                .collect()
        })
        .collect()
}

/// `(instances, functions)`: how many ELF functions of the Debian 6.1.0-57 cloud vmlinux have
/// that many DWARF instances (`dwarf2btf --stats`, "instances per function").
const KERNEL_INSTANCES: &[(u32, u32)] = &[
    (1, 36043),
    (2, 5791),
    (3, 219),
    (4, 47),
    (5, 29),
    (6, 17),
    (7, 9),
    (8, 5),
    (9, 4),
    (10, 8),
    (11, 1),
    (12, 6),
    (13, 4),
    (14, 5),
    (15, 2),
    (16, 3),
    (17, 3),
    (19, 5),
    (20, 1),
    (21, 2),
    (22, 4),
    (23, 1),
    (24, 1),
    (25, 2),
    (26, 3),
    (27, 2),
    (29, 1),
    (30, 3),
    (31, 1),
    (33, 2),
    (34, 3),
    (35, 3),
    (37, 1),
    (39, 1),
    (40, 1),
    (42, 1),
    (43, 1),
    (45, 1),
    (46, 2),
    (49, 1),
    (51, 1),
    (52, 1),
    (58, 1),
    (60, 2),
    (64, 2),
    (71, 1),
    (76, 1),
    (79, 1),
    (82, 1),
    (86, 1),
    (92, 1),
    (119, 1),
    (176, 1),
    (186, 1),
    (192, 1),
    (212, 1),
    (233, 1),
    (238, 1),
    (253, 1),
    (291, 1),
    (335, 1),
    (392, 1),
    (543, 1),
];

/// Saves per batch: the kernel's 2,172 CUs in batches of 16 save about 400 instances each.
const KERNEL_BATCH: usize = 400;

/// The kernel workload for `threads` threads: every instance once, in a shuffled order (CU
/// order), dealt to the threads batch by batch in turn.
fn kernel_plan(threads: usize) -> (u32, Vec<Vec<u32>>) {
    let mut saves = Vec::new();
    let mut entry = 0u32;
    for &(instances, functions) in KERNEL_INSTANCES {
        for _ in 0..functions {
            saves.extend(std::iter::repeat_n(entry, instances as usize));
            entry += 1;
        }
    }
    Rng::with_state(0x2545_f491_4f6c_dd1d).shuffle(&mut saves);
    let mut plan = vec![Vec::new(); threads];
    for (b, batch) in saves.chunks(KERNEL_BATCH).enumerate() {
        plan[b % threads].extend_from_slice(batch);
    }
    (entry, plan)
}

/// One iteration: every thread saves its plan through its own saver, then `finish`.
fn run<F: FuncTable<Folded>>(entries: u32, plan: &[Vec<u32>]) -> Vec<Vec<Folded>> {
    let table = F::new(entries as usize, plan.len());
    std::thread::scope(|s| {
        for (owner, saves) in (0..).zip(plan) {
            let mut saver = table.saver(owner);
            s.spawn(move || {
                for (i, &entry) in (0..).zip(saves) {
                    saver.save(entry, [u64::from(owner), i, 0, 0, 0, 0, 0]);
                }
            });
        }
    });
    table.finish()
}

/// Times the four designs on `plan` under `name`.
fn bench_designs(c: &mut Criterion, name: String, entries: u32, plan: &[Vec<u32>]) {
    let mut g = c.benchmark_group(name);
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1));
    g.bench_function("shared", |b| {
        b.iter(|| run::<SharedTable<Folded>>(entries, black_box(plan)))
    });
    g.bench_function("dashmap", |b| {
        b.iter(|| run::<DashmapTable<Folded>>(entries, black_box(plan)))
    });
    g.bench_function("save-merge", |b| {
        b.iter(|| run::<SaveMergeTable<Folded>>(entries, black_box(plan)))
    });
    g.bench_function("private", |b| {
        b.iter(|| run::<PrivateTable<Folded>>(entries, black_box(plan)))
    });
    g.finish();
}

fn bench(c: &mut Criterion) {
    for threads in [1, 2, 4, 8, 16, 32, 64] {
        let (entries, plan) = kernel_plan(threads);
        bench_designs(
            c,
            format!("functable/kernel/{threads}-threads"),
            entries,
            &plan,
        );
    }
    for (overlap, entries) in [("high", 64), ("low", 65_536)] {
        for threads in [2, 8, 64] {
            let plan = plan(threads, entries);
            let name = format!("functable/{overlap}-overlap/{threads}x{SAVES}-into-{entries}");
            bench_designs(c, name, entries, &plan);
        }
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
