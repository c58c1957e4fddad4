//! `dwarf2btf-lab`: the function-table laboratory (`docs/concurrency.md`). It replays the saves
//! a real run recorded (`dwarf2btf --trace-saves`), or a generated workload, at N threads
//! against each table design, summarizes the runs with bootstrap confidence intervals, and
//! describes what a trace says about its own run.
//! A separate binary, so that its dependencies and flags stay out of `dwarf2btf`'s.

mod inspect;
mod model;
mod pin;
mod provenance;
mod rebuild;
mod replay;
mod run;
mod schedule;
mod summary;
mod workload;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use dwarf2btf::config::Design;
use dwarf2btf::functions::trace::SaveTrace;

use replay::{FoldKind, Settings};

#[derive(Parser)]
#[command(version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Replay a save trace against each design and fold under the pipeline's owner/batch
    /// semantics (owner = batch mod N, a batch's saves one burst once its recorded work is
    /// done, each owner's batches in order), at each owner count and, with `--per-cu`, with an
    /// owner per compile unit; one CSV row per run, and a provenance sidecar beside the CSV.
    Replay {
        /// The trace (`dwarf2btf --trace-saves`, or `dwarf2btf-lab generate`).
        trace: PathBuf,
        /// The raw CSV to write (and FILE.provenance.txt beside it).
        #[arg(long, value_name = "FILE")]
        csv: PathBuf,
        /// Owner counts (`-j`); 0 is left out (`--owners 0 --per-cu`: per-CU owners alone).
        #[arg(long, value_delimiter = ',', default_value = "1,2,4")]
        owners: Vec<usize>,
        /// Also replay with one owner per compile unit.
        #[arg(long)]
        per_cu: bool,
        /// One replay thread per owner (more threads than CPUs are preempted), instead of the
        /// pipeline's min(owners, CPUs).
        #[arg(long)]
        thread_per_owner: bool,
        /// Designs.
        #[arg(
            long,
            value_delimiter = ',',
            default_value = "shared,dashmap,save-merge,private"
        )]
        designs: Vec<Design>,
        /// Folds: `summary` (the pipeline's `FuncSummary`) and `trivial` (a count, no
        /// allocation).
        #[arg(long, value_delimiter = ',', default_value = "summary,trivial")]
        folds: Vec<FoldKind>,
        /// Rounds: timed runs per cell, each round every cell once, designs in a random order
        /// per round; one untimed warm-up round first.
        #[arg(long, default_value_t = 20)]
        runs: usize,
        /// Multiplies the recorded work between saves (1: as recorded; 0: back to back).
        #[arg(long, default_value_t = 1.0)]
        gap_scale: f64,
        /// Seed of the design order (recorded in the CSV).
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Do not time each save (no latency columns; the two clock reads per save leave the
        /// wall time).
        #[arg(long)]
        no_latency: bool,
        /// Pin replay thread i to CPU i mod the CPU count (Linux), before the start barrier;
        /// a run where a thread could not be pinned warns once, runs unpinned and is marked
        /// so in the CSV's last column, `pinned`.
        #[arg(long)]
        pin: bool,
        /// Also write each cell's last run as a trace, `PREFIX-design-fold-owners.saves`
        /// (start, duration, entry, owner and thread of every save), for `model --as-recorded`.
        #[arg(long, value_name = "PREFIX")]
        timeline: Option<PathBuf>,
    },
    /// Write FILE.provenance.txt beside FILE: commit, rustc, CPU model, cores, load, date and
    /// the command that made FILE.
    Provenance {
        /// The file the sidecar describes.
        file: PathBuf,
        /// The command that made it.
        #[arg(long)]
        command: String,
    },
    /// Print the median of each column of a replay CSV per cell, with its bootstrap 95 %
    /// interval, and shared's paired differences with each other design (per round), with
    /// bootstrap intervals and an equivalence verdict (TOST), as Markdown tables.
    Summary {
        /// The CSV `replay` wrote.
        csv: PathBuf,
        /// Bootstrap resamples.
        #[arg(long, default_value_t = 10_000)]
        resamples: usize,
        /// The bootstrap's random seed (the output is a function of the CSV and the seed).
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// The equivalence margin, as a fraction of save-merge's median in the same cell.
        #[arg(long, default_value_t = 0.05)]
        margin: f64,
        /// Also write the medians and intervals as columns for gnuplot to FILE.
        #[arg(long, value_name = "FILE")]
        plot_data: Option<PathBuf>,
    },
    /// Describe a trace's own run: save durations, and how close in time different workers
    /// came to saving into the same function.
    Inspect {
        /// The trace.
        trace: PathBuf,
        /// Also count the owners per function when the trace is dealt to these thread counts.
        #[arg(long, value_delimiter = ',')]
        threads: Vec<usize>,
    },
    /// Write a parametric workload as a trace `replay` reads.
    Generate(workload::Params),
    /// The contention model: the trace laid out on N cores, its expected CAS conflicts,
    /// cache-line transfers and shard lock waits, one CSV row per (cores, window, layout) on
    /// standard output (`docs/concurrency.md`, "The contention model").
    Model {
        /// The trace.
        trace: PathBuf,
        /// Core counts (at most 64).
        #[arg(long, value_delimiter = ',', default_value = "1,2,4,8,16,32,64")]
        cores: Vec<usize>,
        /// CAS vulnerability windows (head load to compare-and-swap), ns.
        #[arg(long, value_delimiter = ',', default_value = "100,1000")]
        window_ns: Vec<u64>,
        /// Lay the saves out back to back, one every this many ns, batches dealt in turn (the
        /// replay's schedule); without it, the recorded run's schedule.
        #[arg(long)]
        save_ns: Option<u64>,
        /// How long a dashmap save holds its shard's lock, ns.
        #[arg(long, default_value_t = 300)]
        hold_ns: u64,
        /// Take the trace's own times, workers and durations as they are (a replay's
        /// `--timeline`): one core per worker, each save's duration as its lock hold and CAS
        /// window; `--cores`, `--save-ns`, `--hold-ns` and `--window-ns` are ignored.
        #[arg(long)]
        as_recorded: bool,
    },
}

fn main() -> ExitCode {
    match run(Cli::parse().command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("dwarf2btf-lab: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The trace at `path`; an error names the file.
fn read_trace(path: &PathBuf) -> Result<SaveTrace, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    SaveTrace::read(&bytes).map_err(|e| format!("{}: {e}", path.display()))
}

fn run(command: Command) -> Result<(), String> {
    let read = |path: &PathBuf| std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()));
    match command {
        Command::Replay {
            trace,
            csv,
            owners,
            per_cu,
            thread_per_owner,
            designs,
            folds,
            runs,
            gap_scale,
            seed,
            no_latency,
            pin,
            timeline,
        } => {
            let trace = read_trace(&trace)?;
            let settings = Settings {
                owners,
                per_cu,
                thread_per_owner,
                designs,
                folds,
                runs,
                gap_scale,
                seed,
                latency: !no_latency,
                pin,
                timeline,
            };
            let command: Vec<String> = std::env::args().collect();
            provenance::write(&csv, &command.join(" "))?;
            let file =
                std::fs::File::create(&csv).map_err(|e| format!("{}: {e}", csv.display()))?;
            replay::replay_all(&trace, &settings, std::io::BufWriter::new(file))
                .map_err(|e| format!("{}: {e}", csv.display()))
        }
        Command::Provenance { file, command } => provenance::write(&file, &command),
        Command::Summary {
            csv,
            resamples,
            seed,
            margin,
            plot_data,
        } => {
            let text = String::from_utf8(read(&csv)?).map_err(|e| e.to_string())?;
            let summary = summary::summarize(&text, resamples, seed, margin)?;
            print!("{}", summary.markdown);
            match plot_data {
                Some(path) => std::fs::write(&path, summary.plot_data)
                    .map_err(|e| format!("{}: {e}", path.display())),
                None => Ok(()),
            }
        }
        Command::Inspect { trace, threads } => {
            let trace = read_trace(&trace)?;
            print!("{}", inspect::inspect(&trace));
            print!("{}", inspect::owners(&trace, &threads));
            Ok(())
        }
        Command::Model {
            trace,
            cores,
            window_ns,
            save_ns,
            hold_ns,
            as_recorded,
        } => {
            let trace = read_trace(&trace)?;
            let settings = model::ModelSettings {
                cores,
                windows: window_ns,
                save_ns,
                hold_ns,
                as_recorded,
            };
            model::model_all(&trace, &settings, std::io::stdout().lock()).map_err(|e| e.to_string())
        }
        Command::Generate(params) => {
            let out = params.out.clone();
            let trace = workload::generate(&params);
            let file =
                std::fs::File::create(&out).map_err(|e| format!("{}: {e}", out.display()))?;
            trace
                .write_to(std::io::BufWriter::new(file))
                .map_err(|e| format!("{}: {e}", out.display()))
        }
    }
}
