//! `dwarf2btf-lab`: the function-table laboratory (`docs/concurrency.md`). It replays the saves
//! a real run recorded (`dwarf2btf --trace-saves`), or a generated workload, at N threads
//! against each table design, summarizes the runs with bootstrap confidence intervals, and
//! describes what a trace says about its own run.
//! A separate binary, so that its dependencies and flags stay out of `dwarf2btf`'s.

mod inspect;
mod model;
mod replay;
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
    /// Replay a save trace at each thread count against each design and fold; one CSV row per
    /// run. A trace's batches are dealt to the threads in turn, as the pipeline's workers
    /// claim them, each batch's saves in their recorded order.
    Replay {
        /// The trace (`dwarf2btf --trace-saves`, or `dwarf2btf-lab generate`).
        trace: PathBuf,
        /// The raw CSV to write.
        #[arg(long, value_name = "FILE")]
        csv: PathBuf,
        /// Thread counts.
        #[arg(long, value_delimiter = ',', default_value = "1,2,4")]
        threads: Vec<usize>,
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
        /// Timed runs per (threads, fold, design), interleaved; one untimed warm-up each first.
        #[arg(long, default_value_t = 20)]
        runs: usize,
        /// Busy work between two saves of a thread, in ns (lowers the save rate).
        #[arg(long, default_value_t = 0)]
        work_ns: u64,
        /// Do not time each save (no latency columns; the two clock reads per save leave the
        /// wall time).
        #[arg(long)]
        no_latency: bool,
        /// Pin replay thread i to CPU i mod the CPU count (Linux), before the start barrier;
        /// a run where a thread could not be pinned warns once, runs unpinned and is marked
        /// so in the CSV's last column, `pinned`.
        #[arg(long)]
        pin: bool,
        /// Also write each combination's last run as a trace, `PREFIX-design-fold-threads.saves`
        /// (start, duration, entry and thread of every save), for `model --as-recorded`.
        #[arg(long, value_name = "PREFIX")]
        timeline: Option<PathBuf>,
    },
    /// Print the median of each column of a replay CSV per (fold, threads, design), with its
    /// bootstrap 95 % confidence interval, as a Markdown table.
    Summary {
        /// The CSV `replay` wrote.
        csv: PathBuf,
        /// Bootstrap resamples.
        #[arg(long, default_value_t = 10_000)]
        resamples: usize,
        /// The bootstrap's random seed (the output is a function of the CSV and the seed).
        #[arg(long, default_value_t = 1)]
        seed: u64,
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

fn run(command: Command) -> Result<(), String> {
    let read = |path: &PathBuf| std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()));
    match command {
        Command::Replay {
            trace,
            csv,
            threads,
            designs,
            folds,
            runs,
            work_ns,
            no_latency,
            pin,
            timeline,
        } => {
            let trace = SaveTrace::read(&read(&trace)?)?;
            let settings = Settings {
                threads,
                designs,
                folds,
                runs,
                work_ns,
                latency: !no_latency,
                pin,
                timeline,
            };
            let file =
                std::fs::File::create(&csv).map_err(|e| format!("{}: {e}", csv.display()))?;
            replay::replay_all(&trace, &settings, std::io::BufWriter::new(file))
                .map_err(|e| format!("{}: {e}", csv.display()))
        }
        Command::Summary {
            csv,
            resamples,
            seed,
            plot_data,
        } => {
            let text = String::from_utf8(read(&csv)?).map_err(|e| e.to_string())?;
            let summary = summary::summarize(&text, resamples, seed)?;
            print!("{}", summary.markdown);
            match plot_data {
                Some(path) => std::fs::write(&path, summary.plot_data)
                    .map_err(|e| format!("{}: {e}", path.display())),
                None => Ok(()),
            }
        }
        Command::Inspect { trace, threads } => {
            let trace = SaveTrace::read(&read(&trace)?)?;
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
            let trace = SaveTrace::read(&read(&trace)?)?;
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
