//! Replaying a trace's saves at N threads against one table design and one fold, timed: the
//! threads are spawned and their saves built before a start barrier, so only the saves, the
//! joins and `finish` are in the timed region; `finish` is also timed on its own. Each save
//! can be timed into a per-thread latency histogram (hdrhistogram), merged per run. With
//! pinning, replay thread *i* pins itself to CPU *i* mod the CPU count before the barrier.

use std::hint::black_box;
use std::io::{self, Write};
use std::num::NonZeroUsize;
use std::sync::{Barrier, Once};
use std::time::Instant;

use dwarf2btf::config::Design;
use dwarf2btf::functions::fold::FuncSummary;
use dwarf2btf::functions::instance::{FuncInstance, InstanceHead};
use dwarf2btf::functions::table::dispatch::{with_design, WithTable};
use dwarf2btf::functions::table::{Contended, Fold, FuncSaver, FuncTable, TableMemory};
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
    /// Pin replay thread *i* to CPU *i* mod the CPU count ([`cpu_for`]); a run where a thread
    /// could not be pinned is reported unpinned.
    pub pin: bool,
    /// Write each combination's last run's saves as a trace to `PREFIX-design-fold-threads.saves`
    /// (when, on which thread, how long: what `dwarf2btf-lab model --as-recorded` reads).
    pub timeline: Option<std::path::PathBuf>,
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
    /// What the table held before `finish` (counted in warm-up runs only, outside the clock).
    memory: Option<TableMemory>,
    /// Every save (start, duration, entry, thread), when asked for.
    timeline: Vec<SaveRecord>,
    /// Every thread pinned itself to its CPU.
    pinned: bool,
}

/// The CSV's header; [`replay_all`] writes one row per timed run.
pub const CSV_HEADER: &str = "design,fold,threads,run,saves,work_ns,wall_ns,finish_ns,\
                              p50_ns,p99_ns,max_ns,cas_failures,lock_waits,folds,\
                              mem_bytes,mem_shared_index,mem_owner_index,mem_records,\
                              mem_slack,mem_per_owner,mem_heap,pinned";

/// Every (threads, fold, design) combination, `settings.runs` times, interleaved (run index
/// outermost, so drift over time spreads over every design alike), each after one untimed
/// warm-up run of its own, which also counts the table's memory (the same in every run of a
/// combination: it follows from the saves each thread makes); one CSV row per timed run to
/// `out`.
pub fn replay_all(trace: &SaveTrace, settings: &Settings, mut out: impl Write) -> io::Result<()> {
    writeln!(out, "{CSV_HEADER}")?;
    let saves = trace.records.len();
    let mut memory: std::collections::HashMap<(usize, &str, &str), TableMemory> =
        std::collections::HashMap::new();
    for run in 0..=settings.runs {
        for &threads in &settings.threads {
            let plan = deal(trace, threads);
            for &fold in &settings.folds {
                for &design in &settings.designs {
                    let warm_up = run == 0;
                    let r = match fold {
                        FoldKind::Summary => {
                            timed::<FuncSummary>(design, trace, &plan, settings, warm_up)
                        }
                        FoldKind::Trivial => {
                            timed::<Count>(design, trace, &plan, settings, warm_up)
                        }
                    };
                    let key = (threads, fold.name(), design.name());
                    if let Some(m) = r.memory {
                        memory.insert(key, m);
                        continue;
                    }
                    let m = memory.get(&key).copied().unwrap_or_default();
                    let q = |p: f64| {
                        if r.latency.is_empty() {
                            String::new()
                        } else {
                            r.latency.value_at_quantile(p).to_string()
                        }
                    };
                    writeln!(
                        out,
                        "{},{},{threads},{run},{saves},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
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
                        r.folds,
                        m.total(),
                        m.shared_index,
                        m.owner_index,
                        m.records,
                        m.slack,
                        m.per_owner,
                        m.heap,
                        u8::from(r.pinned)
                    )?;
                    if let (Some(prefix), true) = (&settings.timeline, run == settings.runs) {
                        write_timeline(prefix, &r, trace.entries, threads, key)?;
                    }
                }
            }
            eprintln!("run {run}/{}: {threads} threads done", settings.runs);
        }
    }
    out.flush()
}

/// Writes `run`'s saves as a trace to `PREFIX-design-fold-threads.saves`.
fn write_timeline(
    prefix: &std::path::Path,
    run: &Run,
    entries: u32,
    threads: usize,
    (_, fold, design): (usize, &str, &str),
) -> io::Result<()> {
    let mut records = run.timeline.clone();
    records.sort_unstable_by_key(|r| (r.start_ns, r.worker));
    let trace = SaveTrace {
        entries,
        workers: threads as u32,
        records,
    };
    let path = format!("{}-{design}-{fold}-{threads}.saves", prefix.display());
    trace.write_to(io::BufWriter::new(std::fs::File::create(path)?))
}

/// One run of `design` with fold `F` on `plan` (per thread, the indexes of its records).
fn timed<F: Replayable>(
    design: Design,
    trace: &SaveTrace,
    plan: &[Vec<u32>],
    settings: &Settings,
    memory: bool,
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
    let replay = Replay::<F> {
        entries,
        saves,
        settings,
        memory,
    };
    with_design(design, replay)
}

/// A replay's saves and settings, run with the table design [`with_design`] picks.
struct Replay<'s, F: Fold> {
    entries: usize,
    saves: Vec<Vec<(u32, F::Instance)>>,
    settings: &'s Settings,
    memory: bool,
}

impl<F: Fold> WithTable<F> for Replay<'_, F> {
    type Output = Run;

    fn run<T: FuncTable<F>>(self) -> Run {
        run::<T, F>(self.entries, self.saves, self.settings, self.memory)
    }
}

/// The record of a save by thread `owner` into `entry` that started at `t` and took `ns`.
fn timeline_record(epoch: Instant, t: Instant, ns: u64, entry: u32, owner: u32) -> SaveRecord {
    SaveRecord {
        start_ns: t.duration_since(epoch).as_nanos() as u64,
        duration_ns: ns.min(u64::from(u32::MAX)) as u32,
        entry,
        order: (0, 0),
        batch: 0,
        worker: owner as u16,
        flags: 0,
        params: 0,
    }
}

/// The CPU replay thread `thread` pins itself to: `thread` mod `cpus`.
fn cpu_for(thread: usize, cpus: NonZeroUsize) -> usize {
    thread % cpus
}

/// Pins the calling thread to `cpu` (`sched_setaffinity`).
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn pin_to(cpu: usize) -> io::Result<()> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("CPU {cpu} is beyond CPU_SETSIZE"),
        ));
    }
    // SAFETY: `cpu_set_t` is a plain bit array; all zeroes is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid `cpu_set_t`, and `cpu` < `CPU_SETSIZE`, its bit count (checked
    // above).
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: pid 0 is the calling thread; `set` is an initialized `cpu_set_t` and the size
    // passed is its own, so the kernel reads only within it.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Pinning is implemented for Linux only.
#[cfg(not(target_os = "linux"))]
fn pin_to(_cpu: usize) -> io::Result<()> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "thread pinning is implemented for Linux only",
    ))
}

/// Pins replay thread `thread` to [`cpu_for`] it; on failure, warns (once per process) and
/// returns false: the thread runs unpinned and the run is reported unpinned.
fn pin_thread(thread: usize, cpus: NonZeroUsize) -> bool {
    static WARNED: Once = Once::new();
    let cpu = cpu_for(thread, cpus);
    match pin_to(cpu) {
        Ok(()) => true,
        Err(e) => {
            WARNED.call_once(|| {
                eprintln!(
                    "dwarf2btf-lab: warning: cannot pin replay thread {thread} to CPU {cpu} \
                     ({e}); running unpinned, and such runs are marked pinned=0 in the CSV"
                );
            });
            false
        }
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

/// Threads spawned (and pinned, with `settings.pin`), savers taken and saves built, then a
/// barrier; timed from the barrier to
/// the end of `finish` (joins included). The folds are dropped after the clock stops. With
/// `memory`, the table's memory is counted between the joins and `finish`, and that time is
/// left out of the wall time.
fn run<T: FuncTable<F>, F: Fold>(
    entries: usize,
    saves: Vec<Vec<(u32, F::Instance)>>,
    settings: &Settings,
    memory: bool,
) -> Run {
    let mut table = T::new(entries, saves.len());
    let barrier = Barrier::new(saves.len() + 1);
    let (latency, work_ns) = (settings.latency, settings.work_ns);
    let timeline = latency && settings.timeline.is_some();
    let (pin, cpus) = (
        settings.pin,
        std::thread::available_parallelism().unwrap_or(NonZeroUsize::MIN),
    );
    let epoch = Instant::now();
    let (start, threads) = std::thread::scope(|s| {
        let handles: Vec<_> = (0..)
            .zip(saves)
            .map(|(owner, saves)| {
                let mut saver = table.saver(owner);
                let barrier = &barrier;
                s.spawn(move || {
                    let mut h = histogram();
                    let mut records = Vec::with_capacity(if timeline { saves.len() } else { 0 });
                    let pinned = pin && pin_thread(owner as usize, cpus);
                    barrier.wait();
                    for (entry, instance) in saves {
                        if work_ns > 0 {
                            work(work_ns);
                        }
                        if latency {
                            let t = Instant::now();
                            saver.save(entry, instance);
                            let ns = t.elapsed().as_nanos() as u64;
                            h.saturating_record(ns);
                            if timeline {
                                records.push(timeline_record(epoch, t, ns, entry, owner));
                            }
                        } else {
                            saver.save(entry, instance);
                        }
                    }
                    // Inside the timed region: save-merge and private hand their lists over here.
                    drop(saver);
                    (h, records, pinned)
                })
            })
            .collect();
        barrier.wait();
        let start = Instant::now();
        let threads: Vec<(Histogram<u64>, Vec<SaveRecord>, bool)> = handles
            .into_iter()
            .map(|h| h.join().expect("a replay thread panicked"))
            .collect();
        (start, threads)
    });
    let joined = Instant::now();
    let memory = memory.then(|| table.memory());
    let contended = table.contention();
    let finish_start = Instant::now();
    let folds = black_box(table.finish());
    let end = Instant::now();
    let mut all = histogram();
    let mut timeline = Vec::new();
    let mut pinned = pin;
    for (h, records, thread_pinned) in threads {
        all.add(&h).expect("same bounds");
        timeline.extend(records);
        pinned &= thread_pinned;
    }
    Run {
        wall_ns: (joined.duration_since(start) + end.duration_since(finish_start)).as_nanos()
            as u64,
        finish_ns: end.duration_since(finish_start).as_nanos() as u64,
        latency: all,
        contended,
        folds: folds.iter().map(Vec::len).sum(),
        memory,
        timeline,
        pinned,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::{generate, Params};

    #[test]
    fn thread_i_goes_to_cpu_i_mod_the_cpu_count() {
        let two = NonZeroUsize::new(2).unwrap();
        let cpus: Vec<usize> = (0..5).map(|i| cpu_for(i, two)).collect();
        assert_eq!(cpus, [0, 1, 0, 1, 0]);
        assert_eq!(cpu_for(7, NonZeroUsize::MIN), 0);
        assert_eq!(cpu_for(3, NonZeroUsize::new(64).unwrap()), 3);
    }

    /// The `pinned` column of each row of a replay CSV.
    fn pinned_column(csv: &[u8]) -> Vec<String> {
        let text = std::str::from_utf8(csv).unwrap();
        let mut lines = text.lines();
        assert_eq!(lines.next().unwrap().rsplit(',').next(), Some("pinned"));
        lines
            .map(|l| l.rsplit(',').next().unwrap().to_string())
            .collect()
    }

    #[test]
    fn a_pinned_replay_runs_and_reports_pinned() {
        let trace = generate(&Params {
            out: std::path::PathBuf::new(),
            functions: 100,
            saves: 1000,
            skew: 0.5,
            spread: 2,
            batch_saves: 50,
            seed: 3,
        });
        let settings = |pin| Settings {
            threads: vec![2],
            designs: vec![Design::Shared, Design::SaveMerge],
            folds: vec![FoldKind::Summary],
            runs: 2,
            work_ns: 0,
            latency: true,
            pin,
            timeline: None,
        };
        // Where this process may not run on CPUs 0 and 1 (a restricted cpuset, or not Linux),
        // the replay must still run, and report its runs unpinned.
        let cpus = std::thread::available_parallelism().unwrap();
        let pinnable = std::thread::spawn(move || (0..2).all(|i| pin_to(cpu_for(i, cpus)).is_ok()))
            .join()
            .unwrap();
        let expected = if pinnable { "1" } else { "0" };
        let mut csv = Vec::new();
        replay_all(&trace, &settings(true), &mut csv).unwrap();
        assert_eq!(pinned_column(&csv), [expected; 4]);
        // Whatever the allowed set, on Linux some CPU in it can be pinned to.
        #[cfg(target_os = "linux")]
        assert!(std::thread::spawn(
            || (0..libc::CPU_SETSIZE as usize).any(|cpu| pin_to(cpu).is_ok())
        )
        .join()
        .unwrap());
        let mut csv = Vec::new();
        replay_all(&trace, &settings(false), &mut csv).unwrap();
        assert_eq!(pinned_column(&csv), ["0"; 4]);
    }
}
