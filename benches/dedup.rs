//! Benchmark: dwarf2btf's dedup against libbpf v1.7.0's `btf__dedup` on the same kernel-size
//! input, in the same run, in two modes:
//!
//! * `dedup`: from the pre-dedup BTF's bytes (parse + dedup, libbpf's string dedup included),
//! * `dedup-built`: the dedup call alone on BTF built in memory, as an encoder runs it (pahole
//!   calls `btf__dedup` on BTF it built with the add API, whose strings are already unique).
//!
//! Before criterion's samples it prints one Markdown table of both modes: wall time, CPU time
//! (all threads) and peak RSS, each the median of runs in fresh child processes (so that
//! neither side inherits the other's heap; three each, or `DWARF2BTF_DEDUP_BENCH_RUNS`, the
//! two sides alternating), with dwarf2btf/libbpf ratios. The peak is the whole
//! child's: the input it read, plus for `built` the in-memory BTF it built first.
//!
//! Input: the encoder's pre-dedup BTF of `$DWARF2BTF_VMLINUX`, else of the reference vmlinux
//! that scripts/setup/fetch-kernel.sh caches; without either, three concatenated copies of pahole
//! HEAD's deduplicated BTF of it (the committed oracle, through scripts/setup/oracle.sh).

#[path = "common/kernel_input.rs"]
mod kernel_input;
#[path = "../tests/common/libbpf_oracle.rs"]
pub mod libbpf_oracle;

use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use dwarf2btf::btf::{read, write, Btf};
use dwarf2btf::dedup::{dedup, DedupOptions};

fn input() -> Option<(&'static str, Vec<u8>)> {
    let vmlinux = kernel_input::vmlinux();
    if vmlinux.exists() {
        return Some(("kernel-prededup", kernel_input::prededup(vmlinux)));
    }
    let oracle = std::process::Command::new("scripts/setup/oracle.sh")
        .arg("vmlinux-6.1.0-57-cloud-amd64.pahole-head.btf")
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    let path = String::from_utf8(oracle.stdout).ok()?;
    let d = std::fs::read(path.trim()).ok()?;
    let src = read::parse(&d, None).ok()?;
    Some((
        "3x-vmlinux",
        write::to_bytes(&libbpf_oracle::concat_copies(&src, 3)),
    ))
}

/// CPU time of the whole process so far (user + system, all threads), from /proc.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the parenthesised command name: state is field 3, utime 14, stime 15.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<f64> = rest
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0.0))
        .collect();
    // Kernel clock ticks; 100 per second on every Linux this runs on.
    (f.get(11).copied().unwrap_or(0.0) + f.get(12).copied().unwrap_or(0.0)) / 100.0
}

/// A `/proc/self/status` line's value in KiB (`VmRSS`, `VmHWM`).
fn status_kib(key: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Set in a child process that runs one job (`<side>-<mode>`: `dwarf2btf` or `libbpf`,
/// `bytes` or `built`) once and prints its wall seconds, CPU seconds and peak RSS in KiB.
const CHILD: &str = "DWARF2BTF_DEDUP_BENCH_CHILD";

/// Runs `step` on the result of `setup` (untimed); returns wall and CPU seconds.
fn timed<T, R>(setup: impl FnOnce() -> T, step: impl FnOnce(T) -> R) -> [f64; 2] {
    let input = setup();
    let (cpu, t) = (cpu_seconds(), Instant::now());
    let out = step(input);
    let wall = t.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - cpu;
    drop(out);
    [wall, cpu]
}

/// Our side: the input parsed (strings marked unique for the built mode), then deduplicated.
fn ours_parse(data: &[u8], built: bool) -> Btf {
    let mut btf = read::parse(data, None).expect("input parses");
    btf.strs_deduped = built;
    btf
}

fn ours_dedup(mut btf: Btf) -> Btf {
    dedup(&mut btf, &DedupOptions::default()).expect("dedup");
    btf
}

/// libbpf's side in the built mode: the input added to an empty BTF with `btf__add_btf`,
/// then `btf__dedup`.
fn libbpf_built(data: &[u8]) -> libbpf_oracle::LibBtf {
    let src = libbpf_oracle::LibBtf::parse(data, None).expect("libbpf parse");
    let mut built = libbpf_oracle::LibBtf::empty(None);
    built.add_btf(&src).expect("btf__add_btf");
    built
}

fn libbpf_dedup(mut built: libbpf_oracle::LibBtf) -> libbpf_oracle::LibBtf {
    built.dedup(false).expect("libbpf dedup");
    built
}

fn libbpf_bytes(data: &[u8]) -> Vec<u8> {
    libbpf_oracle::dedup_bytes(data, None, false).expect("libbpf dedup")
}

/// In a child: runs its job and exits.
fn child(data: &[u8]) {
    let Ok(job) = std::env::var(CHILD) else {
        return;
    };
    let [wall, cpu] = match job.as_str() {
        "dwarf2btf-bytes" => timed(|| (), |()| ours_dedup(ours_parse(data, false))),
        "libbpf-bytes" => timed(|| (), |()| libbpf_bytes(data)),
        "dwarf2btf-built" => timed(|| ours_parse(data, true), ours_dedup),
        _ => timed(|| libbpf_built(data), libbpf_dedup),
    };
    println!("{wall} {cpu} {}", status_kib("VmHWM"));
    std::process::exit(0);
}

/// How many child runs each side gets in the table: `DWARF2BTF_DEDUP_BENCH_RUNS`, default 3.
/// On a noisy machine, more runs (7 and up) give medians that hold still.
fn child_runs() -> usize {
    std::env::var("DWARF2BTF_DEDUP_BENCH_RUNS")
        .ok()
        .and_then(|n| n.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(3)
}

/// One child run of `job`: wall s, CPU s, peak RSS MiB.
fn run_child(job: &str) -> [f64; 3] {
    let out = std::process::Command::new(std::env::current_exe().expect("own path"))
        .env(CHILD, job)
        .args(["--bench", "child"])
        .output()
        .expect("child runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let last = text.lines().next_back().unwrap_or_default();
    let v: Vec<f64> = last
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(f64::NAN))
        .collect();
    match v[..] {
        [wall, cpu, peak_kib] => [wall, cpu, peak_kib / 1024.0],
        _ => panic!("child {job} printed {last:?}"),
    }
}

/// Runs both jobs `runs` times, alternating (so that a slow spell of the machine hits both
/// sides alike), and returns each job's runs in order.
fn interleaved_runs(jobs: [&str; 2], runs: usize) -> [Vec<[f64; 3]>; 2] {
    let mut samples = [Vec::new(), Vec::new()];
    for _ in 0..runs {
        for (job, out) in jobs.iter().zip(&mut samples) {
            out.push(run_child(job));
        }
    }
    samples
}

/// The per-column medians of `runs`.
fn medians(runs: &[[f64; 3]]) -> [f64; 3] {
    std::array::from_fn(|i| median(runs.iter().map(|r| r[i]).collect()))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The lowest and highest wall-time ratio of runs made back to back (ours / libbpf's): how far
/// the machine's drift moves the ratio within one table.
fn paired_wall_ratio_range(ours: &[[f64; 3]], libbpf: &[[f64; 3]]) -> (f64, f64) {
    ours.iter()
        .zip(libbpf)
        .map(|(o, l)| o[0] / l[0])
        .fold((f64::INFINITY, 0.0), |(lo, hi), r| (lo.min(r), hi.max(r)))
}

/// Prints the side-by-side table of both modes, each number from fresh processes so that
/// neither side runs on a heap the other has shaped.
fn side_by_side(name: &str, data: &[u8]) {
    let runs = child_runs();
    println!(
        "\n{name} ({} MiB): one process per run, sides alternating, median of {runs}; \
         peak = the whole process's (input included); the range is that of the wall ratios of \
         runs made back to back\n",
        data.len() >> 20
    );
    println!(
        "| mode | dwarf2btf wall / CPU / peak | libbpf wall / CPU / peak | ratio wall / CPU / peak \
         | wall ratio range |"
    );
    println!("|---|---|---|---|---|");
    for mode in ["bytes", "built"] {
        let [ours, libbpf] = interleaved_runs(
            [&format!("dwarf2btf-{mode}"), &format!("libbpf-{mode}")],
            runs,
        );
        let (o, l) = (medians(&ours), medians(&libbpf));
        let (lo, hi) = paired_wall_ratio_range(&ours, &libbpf);
        println!(
            "| {mode} | {:.2} s / {:.2} s / {:.0} MiB | {:.2} s / {:.2} s / {:.0} MiB | \
             {:.2} / {:.2} / {:.2} | {lo:.2}–{hi:.2} |",
            o[0],
            o[1],
            o[2],
            l[0],
            l[1],
            l[2],
            o[0] / l[0],
            o[1] / l[1],
            o[2] / l[2]
        );
    }
    println!();
}

fn bench(c: &mut Criterion) {
    let Some((name, data)) = input() else {
        eprintln!("no benchmark input found");
        return;
    };
    child(&data);
    side_by_side(name, &data);
    let mut g = c.benchmark_group(format!("dedup/{name}"));
    g.sample_size(10).measurement_time(Duration::from_secs(30));
    g.bench_function("dwarf2btf", |b| {
        b.iter(|| ours_dedup(ours_parse(&data, false)))
    });
    g.bench_function("libbpf", |b| b.iter(|| libbpf_bytes(&data)));
    g.finish();

    // As inside an encoder (pahole, dwarf2btf): the BTF was built with the add API, its
    // strings are already unique, so only the dedup call is timed (setup excluded).
    let mut g = c.benchmark_group(format!("dedup-built/{name}"));
    g.sample_size(10).measurement_time(Duration::from_secs(30));
    g.bench_function("dwarf2btf", |b| {
        b.iter_batched(
            || ours_parse(&data, true),
            ours_dedup,
            BatchSize::LargeInput,
        )
    });
    g.bench_function("libbpf", |b| {
        b.iter_batched(|| libbpf_built(&data), libbpf_dedup, BatchSize::LargeInput)
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
