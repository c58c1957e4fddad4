//! One timed replay run of one table design: the pipeline's owner/batch semantics
//! (`schedule.rs`) at T threads. Threads are spawned (and pinned), savers taken and every
//! burst's instances built before a start barrier; the clock runs from the barrier to the end
//! of `finish`, joins and the savers' hand-over included. Work before a burst and between its
//! saves is a calibrated busy loop (a fixed number of iterations per ns, so it costs the same
//! instructions in every design). Beside the wall time the run counts each thread's CPU time
//! (`CLOCK_THREAD_CPUTIME_ID`) and, with latency timing, each save's time into a per-thread
//! histogram.

use std::collections::BTreeSet;
use std::hint::black_box;
use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Barrier, Mutex, OnceLock};
use std::time::{Duration, Instant};

use dwarf2btf::functions::table::{Contended, Fold, FuncSaver, FuncTable, TableMemory};
use dwarf2btf::functions::trace::SaveRecord;
use dwarf2btf::measure::thread_cpu;
use hdrhistogram::Histogram;

use crate::pin::pin_thread;
use crate::schedule::Plan;

/// What a run is asked to measure.
#[derive(Clone, Copy)]
pub struct Measure {
    /// Time each save into the latency histogram.
    pub latency: bool,
    /// Keep every save's timeline record (needs `latency`).
    pub timeline: bool,
    /// Pin replay thread *i* to CPU *i* mod the CPU count.
    pub pin: bool,
    /// Count the table's memory before `finish` (outside the clock).
    pub memory: bool,
}

/// One timed run.
pub struct Run {
    /// From the first thread leaving the start barrier to the end of `finish`, memory
    /// counting left out.
    pub wall_ns: u64,
    /// `finish` alone.
    pub finish_ns: u64,
    /// CPU time of the replay threads from the barrier on, and of the hand-over and `finish`.
    pub cpu_ns: u64,
    /// Per-save latency, every thread's (empty without latency timing).
    pub latency: Histogram<u64>,
    pub contended: Contended,
    /// Per-owner folds `finish` returned.
    pub folds: usize,
    /// What the table held before `finish`, when asked for.
    pub memory: Option<TableMemory>,
    /// Every save (start, duration, entry, owner, thread), when asked for.
    pub timeline: Vec<SaveRecord>,
    /// Every thread pinned itself to its CPU.
    pub pinned: bool,
}

/// Busy-loop iterations per ns on this machine, measured once per process.
pub fn spin_per_ns() -> f64 {
    static RATE: OnceLock<f64> = OnceLock::new();
    *RATE.get_or_init(|| {
        const ITERS: u64 = 2_000_000;
        let fastest = (0..5)
            .map(|_| {
                let t = Instant::now();
                spin(ITERS);
                t.elapsed().as_nanos().max(1) as f64
            })
            .fold(f64::MAX, f64::min);
        ITERS as f64 / fastest
    })
}

/// `iters` iterations of a loop the compiler cannot remove.
#[inline(never)]
fn spin(iters: u64) {
    let mut x = 0u64;
    for i in 0..iters {
        x = black_box(x.wrapping_mul(31).wrapping_add(i));
    }
    black_box(x);
}

/// Busy work of about `ns` ns.
fn work(ns: u64) {
    if ns > 0 {
        spin((ns as f64 * spin_per_ns()) as u64);
    }
}

/// A new histogram of nanoseconds (1 ns to an hour, 3 significant digits).
pub fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid bounds")
}

/// One owner's saver and where it is in its units (as the pipeline's `OwnerSaves`).
struct OwnerState<S> {
    saver: S,
    /// Index into the owner's units of the next one to save.
    next: usize,
    /// Units done before their turn.
    waiting: BTreeSet<usize>,
}

/// A replay thread's own counts.
struct ThreadLog {
    latency: Histogram<u64>,
    timeline: Vec<SaveRecord>,
    thread: u32,
    epoch: Instant,
    measure: Measure,
}

/// Saves one burst: each save after its gap's work. The callgrind script counts the
/// instructions of this function and of [`measured_finish`] (`--toggle-collect`).
#[inline(never)]
fn measured_burst<S: FuncSaver<F>, F: Fold>(
    saver: &mut S,
    burst: Vec<(u32, F::Instance)>,
    gaps: &[u64],
    owner: usize,
    log: &mut ThreadLog,
) {
    for ((entry, instance), &gap) in burst.into_iter().zip(gaps) {
        work(gap);
        if !log.measure.latency {
            saver.save(entry, instance);
            continue;
        }
        let t = Instant::now();
        saver.save(entry, instance);
        let ns = t.elapsed().as_nanos() as u64;
        log.latency.saturating_record(ns);
        if log.measure.timeline {
            log.timeline.push(SaveRecord {
                start_ns: t.duration_since(log.epoch).as_nanos() as u64,
                duration_ns: ns.min(u64::from(u32::MAX)) as u32,
                entry,
                owner: owner as u16,
                thread: log.thread,
                ..SaveRecord::default()
            });
        }
    }
}

/// `finish`, on its own for the callgrind script.
#[inline(never)]
fn measured_finish<T: FuncTable<F>, F: Fold>(table: T) -> Vec<Vec<F>> {
    table.finish()
}

/// The state the replay threads share.
struct Shared<'p, S, I> {
    plan: &'p Plan,
    next: AtomicUsize,
    owners: Vec<Mutex<OwnerState<S>>>,
    bursts: Vec<Mutex<Vec<(u32, I)>>>,
}

impl<S, I> Shared<'_, S, I> {
    /// Unit `u` is done: saves it if it is its owner's turn, and every waiting unit of the
    /// owner whose turn follows; else leaves it waiting.
    fn done<F: Fold<Instance = I>>(&self, u: usize, log: &mut ThreadLog)
    where
        S: FuncSaver<F>,
    {
        let owner = self.plan.units[u].owner;
        let units = &self.plan.by_owner[owner];
        let mut state = self.owners[owner].lock().expect("an owner's lock");
        if units[state.next] != u {
            state.waiting.insert(u);
            return;
        }
        let mut turn = u;
        loop {
            let burst = std::mem::take(&mut *self.bursts[turn].lock().expect("a burst"));
            let gaps = &self.plan.units[turn].gaps;
            measured_burst::<S, F>(&mut state.saver, burst, gaps, owner, log);
            state.next += 1;
            match units.get(state.next) {
                Some(&n) if state.waiting.remove(&n) => turn = n,
                _ => return,
            }
        }
    }
}

/// One run of table `T` with fold `F` over `plan` at `threads` threads; `bursts` holds each
/// unit's instances, built by the caller.
pub fn run<T: FuncTable<F>, F: Fold>(
    entries: usize,
    plan: &Plan,
    bursts: Vec<Vec<(u32, F::Instance)>>,
    threads: usize,
    measure: Measure,
) -> Run
where
    F::Instance: Send,
{
    let mut table = T::new(entries, plan.by_owner.len());
    let barrier = Barrier::new(threads + 1);
    let cpus = std::thread::available_parallelism().unwrap_or(NonZeroUsize::MIN);
    let epoch = Instant::now();
    let shared = Shared {
        plan,
        next: AtomicUsize::new(0),
        owners: (0..plan.by_owner.len())
            .map(|o| {
                Mutex::new(OwnerState {
                    saver: table.saver(o as _),
                    next: 0,
                    waiting: BTreeSet::new(),
                })
            })
            .collect(),
        bursts: bursts.into_iter().map(Mutex::new).collect(),
    };
    let (start, logs) = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|thread| {
                let (shared, barrier) = (&shared, &barrier);
                s.spawn(move || {
                    let pinned = measure.pin && pin_thread(thread, cpus);
                    let mut log = ThreadLog {
                        latency: histogram(),
                        timeline: Vec::new(),
                        thread: thread as u32,
                        epoch,
                        measure,
                    };
                    barrier.wait();
                    let (started, cpu) = (Instant::now(), thread_cpu());
                    loop {
                        let u = shared.next.fetch_add(1, Ordering::Relaxed);
                        let Some(unit) = shared.plan.units.get(u) else {
                            break;
                        };
                        work(unit.work_ns);
                        shared.done::<F>(u, &mut log);
                    }
                    (log, pinned, thread_cpu().saturating_sub(cpu), started)
                })
            })
            .collect();
        barrier.wait();
        let released = Instant::now();
        let logs: Vec<(ThreadLog, bool, Duration, Instant)> = handles
            .into_iter()
            .map(|h| h.join().expect("a replay thread panicked"))
            .collect();
        // The clock starts when the first thread leaves the barrier: with more threads than
        // CPUs this thread may run only after others have done much of the work.
        let start = logs.iter().map(|l| l.3).fold(released, Instant::min);
        (start, logs)
    });
    // Inside the timed region: save-merge and private hand their lists over here.
    let handover_cpu = thread_cpu();
    drop(shared);
    let handover_cpu = thread_cpu().saturating_sub(handover_cpu);
    let joined = Instant::now();
    let memory = measure.memory.then(|| table.memory());
    let contended = table.contention();
    let (finish_start, finish_cpu) = (Instant::now(), thread_cpu());
    let folds = black_box(measured_finish(table));
    let (end, finish_cpu) = (Instant::now(), thread_cpu().saturating_sub(finish_cpu));
    let mut all = histogram();
    let mut timeline = Vec::new();
    let mut pinned = measure.pin;
    let mut cpu = handover_cpu + finish_cpu;
    for (log, thread_pinned, thread_cpu, _) in logs {
        all.add(&log.latency).expect("same bounds");
        timeline.extend(log.timeline);
        pinned &= thread_pinned;
        cpu += thread_cpu;
    }
    Run {
        wall_ns: (joined.duration_since(start) + end.duration_since(finish_start)).as_nanos()
            as u64,
        finish_ns: end.duration_since(finish_start).as_nanos() as u64,
        cpu_ns: cpu.as_nanos() as u64,
        latency: all,
        contended,
        folds: folds.iter().map(Vec::len).sum(),
        memory,
        timeline,
        pinned,
    }
}
