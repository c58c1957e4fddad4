//! Replaying a trace's saves at N threads against one table design and one fold, timed: the
//! threads are spawned and their saves built before a start barrier, so only the saves, the
//! joins and `finish` are in the timed region; `finish` is also timed on its own. Each save
//! can be timed into a per-thread latency histogram (hdrhistogram), merged per run.

use std::hint::black_box;
use std::io::{self, Write};
use std::sync::Barrier;
use std::time::Instant;

use dwarf2btf::config::Design;
use dwarf2btf::functions::fold::FuncSummary;
use dwarf2btf::functions::instance::{FuncInstance, InstanceHead};
use dwarf2btf::functions::table::{
    dashmap::DashmapTable, private::PrivateTable, save_merge::SaveMergeTable, shared::SharedTable,
    Contended, Fold, FuncSaver, FuncTable,
};
use dwarf2btf::functions::trace::{SaveRecord, SaveTrace};
use hdrhistogram::Histogram;

use crate::workload::deal;

/// What each thread folds per (entry, owner).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FoldKind {
    /// The pipeline's [`FuncSummary`] over instances rebuilt from the trace (order, batch,
    /// flags, parameter count; one-byte parameter types and names, equal prototypes).
    Summary,
    /// [`Count`]: the earliest DWARF position and a count; never allocates.
    Trivial,
}

impl std::str::FromStr for FoldKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "summary" => Ok(FoldKind::Summary),
            "trivial" => Ok(FoldKind::Trivial),
            _ => Err(format!("unknown fold '{s}' (summary, trivial)")),
        }
    }
}

impl FoldKind {
    fn name(self) -> &'static str {
        match self {
            FoldKind::Summary => "summary",
            FoldKind::Trivial => "trivial",
        }
    }
}

/// The trivial fold: the earliest DWARF position of an owner's instances, and their count.
pub struct Count {
    first: (u32, u32),
    count: u32,
}

impl Fold for Count {
    type Instance = (u32, u32);
    fn new(first: (u32, u32)) -> Self {
        Count { first, count: 1 }
    }
    fn add(&mut self, order: (u32, u32)) {
        self.first = self.first.min(order);
        self.count += 1;
    }
}

/// A fold whose instances the replay builds from trace records.
trait Replayable: Fold {
    fn instance(record: &SaveRecord) -> Self::Instance;
}

impl Replayable for Count {
    fn instance(record: &SaveRecord) -> (u32, u32) {
        record.order
    }
}

impl Replayable for FuncSummary {
    fn instance(record: &SaveRecord) -> FuncInstance {
        let params: Vec<(&[u8], u32)> = (1..=u32::from(record.params))
            .map(|ty| (&b"p"[..], ty))
            .collect();
        // A signature of `params + 1` parts (return type, parameters), each the one-byte form
        // `0x01`: every instance of a function has the same prototype.
        let parts = usize::from(record.params) + 1;
        let mut signature = Vec::with_capacity(2 + 2 * parts);
        let mut n = parts;
        while n >= 0x80 {
            signature.push((n & 0x7f) as u8 | 0x80);
            n >>= 7;
        }
        signature.push(n as u8);
        for _ in 0..parts {
            signature.extend_from_slice(&[1, 1]);
        }
        let head = InstanceHead {
            order: record.order,
            chunk: record.batch,
            addr: 0,
            ret: 0,
            flags: record.flags,
        };
        FuncInstance::new(head, &params, &[], &signature)
    }
}

/// What the replay varies.
pub struct Settings {
    pub threads: Vec<usize>,
    pub designs: Vec<Design>,
    pub folds: Vec<FoldKind>,
    pub runs: usize,
    pub work_ns: u64,
    pub latency: bool,
}

/// One timed run.
struct Run {
    /// From the start barrier to the end of `finish`.
    wall_ns: u64,
    /// `finish` alone.
    finish_ns: u64,
    /// Per-save latency, every thread's (empty without latency timing).
    latency: Histogram<u64>,
    contended: Contended,
    /// Per-owner folds `finish` returned.
    folds: usize,
}

/// The CSV's header; [`replay_all`] writes one row per timed run.
pub const CSV_HEADER: &str = "design,fold,threads,run,saves,work_ns,wall_ns,finish_ns,\
                              p50_ns,p99_ns,max_ns,cas_failures,lock_waits,folds";

/// Every (threads, fold, design) combination, `settings.runs` times, interleaved (run index
/// outermost, so drift over time spreads over every design alike), each after one untimed
/// warm-up run of its own; one CSV row per timed run to `out`.
pub fn replay_all(trace: &SaveTrace, settings: &Settings, mut out: impl Write) -> io::Result<()> {
    writeln!(out, "{CSV_HEADER}")?;
    let saves = trace.records.len();
    for run in 0..=settings.runs {
        for &threads in &settings.threads {
            let plan = deal(trace, threads);
            for &fold in &settings.folds {
                for &design in &settings.designs {
                    let r = match fold {
                        FoldKind::Summary => timed::<FuncSummary>(design, trace, &plan, settings),
                        FoldKind::Trivial => timed::<Count>(design, trace, &plan, settings),
                    };
                    if run == 0 {
                        continue;
                    }
                    let q = |p: f64| {
                        if r.latency.is_empty() {
                            String::new()
                        } else {
                            r.latency.value_at_quantile(p).to_string()
                        }
                    };
                    writeln!(
                        out,
                        "{},{},{threads},{run},{saves},{},{},{},{},{},{},{},{},{}",
                        design.name(),
                        fold.name(),
                        settings.work_ns,
                        r.wall_ns,
                        r.finish_ns,
                        q(0.5),
                        q(0.99),
                        q(1.0),
                        r.contended.cas_failures,
                        r.contended.lock_waits,
                        r.folds
                    )?;
                }
            }
            eprintln!("run {run}/{}: {threads} threads done", settings.runs);
        }
    }
    out.flush()
}

/// One run of `design` with fold `F` on `plan` (per thread, the indexes of its records).
fn timed<F: Replayable>(
    design: Design,
    trace: &SaveTrace,
    plan: &[Vec<u32>],
    settings: &Settings,
) -> Run {
    let entries = trace.entries as usize;
    let saves: Vec<Vec<(u32, F::Instance)>> = plan
        .iter()
        .map(|indexes| {
            indexes
                .iter()
                .map(|&i| {
                    let r = &trace.records[i as usize];
                    (r.entry, F::instance(r))
                })
                .collect()
        })
        .collect();
    match design {
        Design::Shared => run::<SharedTable<F>, F>(entries, saves, settings),
        Design::Dashmap => run::<DashmapTable<F>, F>(entries, saves, settings),
        Design::SaveMerge => run::<SaveMergeTable<F>, F>(entries, saves, settings),
        Design::Private => run::<PrivateTable<F>, F>(entries, saves, settings),
    }
}

/// A new histogram of nanoseconds (1 ns to an hour, 3 significant digits).
fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid bounds")
}

/// Spins for about `ns` nanoseconds.
fn work(ns: u64) {
    let start = Instant::now();
    while (start.elapsed().as_nanos() as u64) < ns {
        std::hint::spin_loop();
    }
}

/// Threads spawned, savers taken and saves built, then a barrier; timed from the barrier to
/// the end of `finish` (joins included). The folds are dropped after the clock stops.
fn run<T: FuncTable<F>, F: Fold>(
    entries: usize,
    saves: Vec<Vec<(u32, F::Instance)>>,
    settings: &Settings,
) -> Run {
    let table = T::new(entries, saves.len());
    let barrier = Barrier::new(saves.len() + 1);
    let (latency, work_ns) = (settings.latency, settings.work_ns);
    let (start, histograms) = std::thread::scope(|s| {
        let handles: Vec<_> = (0..)
            .zip(saves)
            .map(|(owner, saves)| {
                let mut saver = table.saver(owner);
                let barrier = &barrier;
                s.spawn(move || {
                    let mut h = histogram();
                    barrier.wait();
                    for (entry, instance) in saves {
                        if work_ns > 0 {
                            work(work_ns);
                        }
                        if latency {
                            let t = Instant::now();
                            saver.save(entry, instance);
                            h.saturating_record(t.elapsed().as_nanos() as u64);
                        } else {
                            saver.save(entry, instance);
                        }
                    }
                    // Inside the timed region: save-merge and private hand their lists over here.
                    drop(saver);
                    h
                })
            })
            .collect();
        barrier.wait();
        let start = Instant::now();
        let histograms: Vec<Histogram<u64>> = handles
            .into_iter()
            .map(|h| h.join().expect("a replay thread panicked"))
            .collect();
        (start, histograms)
    });
    let contended = table.contention();
    let finish_start = Instant::now();
    let folds = black_box(table.finish());
    let end = Instant::now();
    let mut all = histogram();
    for h in &histograms {
        all.add(h).expect("same bounds");
    }
    Run {
        wall_ns: end.duration_since(start).as_nanos() as u64,
        finish_ns: end.duration_since(finish_start).as_nanos() as u64,
        latency: all,
        contended,
        folds: folds.iter().map(Vec::len).sum(),
    }
}
