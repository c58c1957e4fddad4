//! Benchmark: contention in the three function-table designs (`shared`, `dashmap`,
//! `save-merge`). N threads (2, 4, 8) each save M instances into K entries, with high overlap
//! (K small: every thread hits every entry, as with static inline functions from headers) and
//! low overlap (K large, like the kernel's ~60k ELF functions). One iteration = `new`, every
//! thread's saves, and `finish` (save-merge does its work there, so it must be counted).

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use dwarf2btf::functable::{
    dashmap::DashmapTable, save_merge::SaveMergeTable, shared::SharedTable, Fold, FuncSaver,
    FuncTable,
};

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

/// Thread `owner`'s entries, pseudo-random (xorshift) in `0..entries`, computed before timing.
fn plan(threads: usize, entries: u32) -> Vec<Vec<u32>> {
    (0..threads as u64)
        .map(|owner| {
            let mut x = 0x9e37_79b9_7f4a_7c15 ^ (owner + 1);
            (0..SAVES)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    (x % u64::from(entries)) as u32
                })
                .collect()
        })
        .collect()
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

fn bench(c: &mut Criterion) {
    for (overlap, entries) in [("high", 64), ("low", 65_536)] {
        for threads in [2, 4, 8] {
            let plan = plan(threads, entries);
            let mut g = c.benchmark_group(format!(
                "functable/{overlap}-overlap/{threads}x{SAVES}-into-{entries}"
            ));
            g.sample_size(10)
                .warm_up_time(Duration::from_millis(500))
                .measurement_time(Duration::from_secs(2));
            g.bench_function("shared", |b| {
                b.iter(|| run::<SharedTable<Folded>>(entries, black_box(&plan)))
            });
            g.bench_function("dashmap", |b| {
                b.iter(|| run::<DashmapTable<Folded>>(entries, black_box(&plan)))
            });
            g.bench_function("save-merge", |b| {
                b.iter(|| run::<SaveMergeTable<Folded>>(entries, black_box(&plan)))
            });
            g.finish();
        }
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
