//! Replaying a trace's saves against each table design and fold, under the pipeline's
//! owner/batch semantics (`schedule.rs`), one timed run per cell (`run.rs`) and one CSV row
//! per run. A round runs every cell once; within a round, each (mapping, fold) block runs the
//! designs in an order drawn afresh from a seeded generator, recorded in the CSV (`round`,
//! `slot`, `seed`), so drift over a round does not favour a fixed position, and each round
//! gives one run of every design to pair (`summary.rs`).

use std::collections::HashMap;
use std::io::{self, Write};

use dwarf2btf::config::Design;
use dwarf2btf::functions::fold::FuncSummary;
use dwarf2btf::functions::table::dispatch::{with_design, WithTable};
use dwarf2btf::functions::table::{Fold, FuncTable, TableMemory};
use dwarf2btf::functions::trace::SaveTrace;
use dwarf2btf::rng::Rng;

use crate::rebuild::{Count, Replayable};
use crate::run::{run, spin_per_ns, Measure, Run};
use crate::schedule::{plan, Mapping, Plan};

/// What each thread folds per (entry, owner).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FoldKind {
    /// The pipeline's [`FuncSummary`] over instances rebuilt from the trace (`rebuild.rs`).
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

/// What the replay varies.
pub struct Settings {
    /// Owner counts (`-j`), owner = batch mod N; 0 is left out (`--owners 0 --per-cu`: the
    /// one-owner-per-CU regime alone).
    pub owners: Vec<usize>,
    /// Also the one-owner-per-CU regime.
    pub per_cu: bool,
    /// One replay thread per owner, instead of the pipeline's min(owners, CPUs).
    pub thread_per_owner: bool,
    pub designs: Vec<Design>,
    pub folds: Vec<FoldKind>,
    /// Rounds (timed runs per cell).
    pub runs: usize,
    /// Multiplies the recorded gaps (0: saves back to back).
    pub gap_scale: f64,
    /// Seed of the design order.
    pub seed: u64,
    pub latency: bool,
    pub pin: bool,
    /// Write each cell's last run as a trace to `PREFIX-design-fold-owners.saves`.
    pub timeline: Option<std::path::PathBuf>,
}

/// The CSV's header; [`replay_all`] writes one row per timed run.
pub const CSV_HEADER: &str = "design,fold,mapping,owners,threads,gap_scale,round,slot,seed,\
                              saves,wall_ns,finish_ns,cpu_ns,p50_ns,p99_ns,max_ns,\
                              cas_failures,lock_waits,folds,mem_bytes,mem_shared_index,\
                              mem_owner_index,mem_records,mem_slack,mem_per_owner,mem_heap,\
                              spin_per_ns,pinned";

/// One cell's fixed part: mapping, its plan and thread count.
struct Block {
    mapping: Mapping,
    plan: Plan,
    threads: usize,
}

/// The blocks `settings` asks for.
fn blocks(trace: &SaveTrace, settings: &Settings) -> Vec<Block> {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mappings = settings
        .owners
        .iter()
        .filter(|&&n| n > 0)
        .map(|&n| Mapping::Batches(n))
        .chain(settings.per_cu.then_some(Mapping::PerCu));
    mappings
        .map(|mapping| {
            let plan = plan(trace, mapping, settings.gap_scale);
            let owners = plan.by_owner.len();
            let threads = if settings.thread_per_owner {
                owners
            } else {
                owners.min(cpus)
            };
            Block {
                mapping,
                plan,
                threads,
            }
        })
        .collect()
}

/// Rounds 0 (the warm-up, which also counts each cell's memory: the same in every run, it
/// follows from what each owner saves) to `settings.runs`; one CSV row per timed run to `out`.
pub fn replay_all(trace: &SaveTrace, settings: &Settings, mut out: impl Write) -> io::Result<()> {
    writeln!(out, "{CSV_HEADER}")?;
    let blocks = blocks(trace, settings);
    let mut memory: HashMap<(usize, &str, &str), TableMemory> = HashMap::new();
    let mut rng = Rng::new(settings.seed);
    let spin = spin_per_ns();
    for round in 0..=settings.runs {
        for (b, block) in blocks.iter().enumerate() {
            for &fold in &settings.folds {
                let mut designs = settings.designs.clone();
                rng.shuffle(&mut designs);
                for (slot, &design) in designs.iter().enumerate() {
                    let measure = Measure {
                        latency: settings.latency,
                        timeline: settings.latency && settings.timeline.is_some(),
                        pin: settings.pin,
                        memory: round == 0,
                    };
                    let r = match fold {
                        FoldKind::Summary => cell::<FuncSummary>(design, trace, block, measure),
                        FoldKind::Trivial => cell::<Count>(design, trace, block, measure),
                    };
                    let key = (b, fold.name(), design.name());
                    if let Some(m) = r.memory {
                        memory.insert(key, m);
                        continue;
                    }
                    let m = memory.get(&key).copied().unwrap_or_default();
                    let row = Row {
                        design,
                        fold,
                        block,
                        round,
                        slot,
                        seed: settings.seed,
                        saves: trace.records.len(),
                        gap_scale: settings.gap_scale,
                        spin,
                    };
                    row.write(&mut out, &r, &m)?;
                    if let (Some(prefix), true) = (&settings.timeline, round == settings.runs) {
                        write_timeline(prefix, &r, trace.entries, block, key)?;
                    }
                }
            }
            eprintln!(
                "round {round}/{}: {} owners, {} threads done",
                settings.runs,
                block.plan.by_owner.len(),
                block.threads
            );
        }
    }
    out.flush()
}

/// The fixed columns of one CSV row.
struct Row<'b> {
    design: Design,
    fold: FoldKind,
    block: &'b Block,
    round: usize,
    slot: usize,
    seed: u64,
    saves: usize,
    gap_scale: f64,
    spin: f64,
}

impl Row<'_> {
    fn write(&self, out: &mut impl Write, r: &Run, m: &TableMemory) -> io::Result<()> {
        let q = |p: f64| {
            if r.latency.is_empty() {
                String::new()
            } else {
                r.latency.value_at_quantile(p).to_string()
            }
        };
        let b = self.block;
        writeln!(
            out,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{:.4},{}",
            self.design.name(),
            self.fold.name(),
            b.mapping.name(),
            b.plan.by_owner.len(),
            b.threads,
            self.gap_scale,
            self.round,
            self.slot,
            self.seed,
            self.saves,
            r.wall_ns,
            r.finish_ns,
            r.cpu_ns,
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
            self.spin,
            u8::from(r.pinned)
        )
    }
}

/// Writes `run`'s saves as a trace to `PREFIX-design-fold-owners.saves`.
fn write_timeline(
    prefix: &std::path::Path,
    run: &Run,
    entries: u32,
    block: &Block,
    (_, fold, design): (usize, &str, &str),
) -> io::Result<()> {
    let mut records = run.timeline.clone();
    records.sort_unstable_by_key(|r| (r.start_ns, r.owner));
    let owners = block.plan.by_owner.len();
    let trace = SaveTrace {
        records,
        threads: block.threads as u32,
        ..SaveTrace::new(entries, owners as u32)
    };
    let path = format!("{}-{design}-{fold}-{owners}.saves", prefix.display());
    trace.write_to(io::BufWriter::new(std::fs::File::create(path)?))
}

/// One run of `design` with fold `F` on `block`: builds every burst's instances, then runs.
fn cell<F: Replayable>(design: Design, trace: &SaveTrace, block: &Block, measure: Measure) -> Run
where
    F::Instance: Send,
{
    let bursts: Vec<Vec<(u32, F::Instance)>> = block
        .plan
        .units
        .iter()
        .map(|unit| {
            unit.saves
                .iter()
                .map(|&i| {
                    let r = &trace.records[i as usize];
                    (r.entry, F::instance(r))
                })
                .collect()
        })
        .collect();
    let replay = Replay::<F> {
        entries: trace.entries as usize,
        block,
        bursts,
        measure,
    };
    with_design(design, replay)
}

/// A replay's bursts and settings, run with the table design [`with_design`] picks.
struct Replay<'b, F: Fold> {
    entries: usize,
    block: &'b Block,
    bursts: Vec<Vec<(u32, F::Instance)>>,
    measure: Measure,
}

impl<F: Fold> WithTable<F> for Replay<'_, F>
where
    F::Instance: Send,
{
    type Output = Run;

    fn run<T: FuncTable<F>>(self) -> Run {
        run::<T, F>(
            self.entries,
            &self.block.plan,
            self.bursts,
            self.block.threads,
            self.measure,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pin::{cpu_for, pin_to};
    use crate::workload::{generate, Params};

    /// The values of column `name` of each row of a replay CSV.
    fn column(csv: &[u8], name: &str) -> Vec<String> {
        let text = std::str::from_utf8(csv).unwrap();
        let mut lines = text.lines();
        let at = lines
            .next()
            .unwrap()
            .split(',')
            .position(|h| h == name)
            .unwrap();
        lines
            .map(|l| l.split(',').nth(at).unwrap().to_string())
            .collect()
    }

    fn settings(pin: bool) -> Settings {
        Settings {
            owners: vec![2],
            per_cu: false,
            thread_per_owner: true,
            designs: vec![Design::Shared, Design::SaveMerge],
            folds: vec![FoldKind::Summary],
            runs: 2,
            gap_scale: 0.0,
            seed: 5,
            latency: true,
            pin,
            timeline: None,
        }
    }

    fn trace() -> SaveTrace {
        generate(&Params {
            out: std::path::PathBuf::new(),
            functions: 100,
            saves: 1000,
            skew: 0.5,
            spread: 2,
            batch_saves: 50,
            seed: 3,
        })
    }

    #[test]
    fn the_clock_covers_every_thread_when_threads_outnumber_cpus() {
        // The threads' CPU time, counted from when each leaves the start barrier, fits in the
        // wall time on the CPUs there are only if the clock starts no later than the first
        // of them: with 64 threads the thread that reads the clock may run last.
        let trace = generate(&Params {
            out: std::path::PathBuf::new(),
            functions: 1024,
            saves: 40_000,
            skew: 0.5,
            spread: 64,
            batch_saves: 100,
            seed: 7,
        });
        let mut s = settings(false);
        s.owners = vec![64];
        s.latency = false;
        s.runs = 3;
        let mut csv = Vec::new();
        replay_all(&trace, &s, &mut csv).unwrap();
        let cpus = std::thread::available_parallelism().unwrap().get() as u64;
        let ns = |name| -> Vec<u64> {
            column(&csv, name)
                .iter()
                .map(|v| v.parse().unwrap())
                .collect()
        };
        let (wall, cpu) = (ns("wall_ns"), ns("cpu_ns"));
        for (w, c) in wall.iter().zip(&cpu) {
            // A millisecond for the clocks' granularity.
            assert!(
                c <= &(w * cpus + 1_000_000),
                "cpu {c} ns in {w} ns of wall on {cpus} CPUs"
            );
        }
    }

    #[test]
    fn a_pinned_replay_runs_and_reports_pinned() {
        // Where this process may not run on CPUs 0 and 1 (a restricted cpuset, or not Linux),
        // the replay must still run, and report its runs unpinned.
        let cpus = std::thread::available_parallelism().unwrap();
        let pinnable = std::thread::spawn(move || (0..2).all(|i| pin_to(cpu_for(i, cpus)).is_ok()))
            .join()
            .unwrap();
        let expected = if pinnable { "1" } else { "0" };
        let mut csv = Vec::new();
        replay_all(&trace(), &settings(true), &mut csv).unwrap();
        assert_eq!(column(&csv, "pinned"), [expected; 4]);
        let mut csv = Vec::new();
        replay_all(&trace(), &settings(false), &mut csv).unwrap();
        assert_eq!(column(&csv, "pinned"), ["0"; 4]);
    }

    #[test]
    fn every_design_folds_alike_and_the_order_is_drawn_per_round() {
        let mut s = settings(false);
        s.designs = vec![
            Design::Shared,
            Design::Dashmap,
            Design::SaveMerge,
            Design::Private,
        ];
        s.runs = 6;
        s.per_cu = true;
        let mut csv = Vec::new();
        replay_all(&trace(), &s, &mut csv).unwrap();
        let folds = column(&csv, "folds");
        let mapping = column(&csv, "mapping");
        // The same folds per mapping, whatever the design.
        for m in ["batch", "cu"] {
            let mut f: Vec<&String> = folds
                .iter()
                .zip(&mapping)
                .filter(|(_, x)| *x == m)
                .map(|(f, _)| f)
                .collect();
            f.dedup();
            assert_eq!(f.len(), 1, "{m}: {f:?}");
        }
        // Rounds differ in their order of designs, and the same seed gives the same orders.
        let designs = column(&csv, "design");
        let orders: std::collections::BTreeSet<&[String]> = designs.chunks(4).collect();
        assert!(orders.len() > 1, "{orders:?}");
        let mut again = Vec::new();
        replay_all(&trace(), &s, &mut again).unwrap();
        assert_eq!(column(&again, "design"), designs);
    }
}
