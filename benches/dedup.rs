//! Benchmark: dwarf2btf's dedup against libbpf v1.7.0's `btf__dedup` on the same kernel-size
//! input, in the same run, in two modes:
//!
//! * `dedup`: from the pre-dedup BTF's bytes (parse + dedup, libbpf's string dedup included),
//! * `dedup-built`: the dedup call alone on BTF built in memory, as an encoder runs it (pahole
//!   calls `btf__dedup` on BTF it built with the add API, whose strings are already unique).
//!
//! Before criterion's samples it prints one Markdown table of both modes: wall time and CPU time
//! (all threads), the median of three runs, and the peak RSS of a process that reads the input
//! and deduplicates it from its bytes (a child per side, so that neither inherits the other's
//! heap), with dwarf2btf/libbpf ratios.
//!
//! Input: the encoder's pre-dedup BTF of the Debian 6.1 vmlinux when present
//! (`/root/.cache/dwarf2btf/vmlinux-6.1.0-57.prededup.btf`), otherwise three concatenated
//! copies of the deduplicated kernel BTF from `/work/shared/oracles`.

#[path = "../tests/common/libbpf_oracle.rs"]
mod libbpf_oracle;

use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use dwarf2btf::btf::{read, write};
use dwarf2btf::dedup::{dedup, DedupOptions};

const KERNEL_PREDEDUP: &str = "/root/.cache/dwarf2btf/vmlinux-6.1.0-57.prededup.btf";
const PAHOLE_HEAD: &str = "/work/shared/oracles/vmlinux-6.1.0-57-cloud-amd64.pahole-head.btf";

fn input() -> Option<(&'static str, Vec<u8>)> {
    if let Ok(d) = std::fs::read(KERNEL_PREDEDUP) {
        return Some(("kernel-prededup", d));
    }
    let d = std::fs::read(PAHOLE_HEAD).ok()?;
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

/// Runs `step` on the result of `setup` (untimed); returns wall and CPU seconds.
fn measure<T, R>(setup: impl Fn() -> T, step: impl Fn(T) -> R) -> [f64; 2] {
    let input = setup();
    let (cpu, t) = (cpu_seconds(), Instant::now());
    let out = step(input);
    let wall = t.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - cpu;
    drop(out);
    [wall, cpu]
}

/// Median of three runs of [`measure`], component by component.
fn median3<T, R>(setup: impl Fn() -> T, step: impl Fn(T) -> R) -> [f64; 2] {
    let runs: Vec<[f64; 2]> = (0..3).map(|_| measure(&setup, &step)).collect();
    std::array::from_fn(|i| {
        let mut v: Vec<f64> = runs.iter().map(|r| r[i]).collect();
        v.sort_by(f64::total_cmp);
        v[1]
    })
}

/// Set in a child that deduplicates the input once (`dwarf2btf` or `libbpf`) and prints its
/// peak RSS in KiB.
const PEAK_CHILD: &str = "DWARF2BTF_DEDUP_PEAK_CHILD";

/// In a peak-measuring child: does its one job and exits.
fn peak_child(data: &[u8]) {
    let Ok(side) = std::env::var(PEAK_CHILD) else {
        return;
    };
    if side == "libbpf" {
        libbpf_oracle::dedup_bytes(data, None, false).expect("libbpf dedup");
    } else {
        let mut btf = read::parse(data, None).expect("input parses");
        dedup(&mut btf, &DedupOptions::default()).expect("dedup");
    }
    println!("{}", status_kib("VmHWM"));
    std::process::exit(0);
}

/// Peak RSS in MiB of a child deduplicating the input from its bytes with `side`.
fn child_peak(side: &str) -> f64 {
    let out = std::process::Command::new(std::env::current_exe().expect("own path"))
        .env(PEAK_CHILD, side)
        .args(["--bench", "peak-child"])
        .output()
        .expect("child runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let kib: f64 = text
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .next_back()
        .unwrap_or(f64::NAN);
    kib / 1024.0
}

/// Prints the side-by-side table of both modes.
fn side_by_side(name: &str, data: &[u8]) {
    let parse = || read::parse(data, None).expect("input parses");
    let ours_parsed = median3(
        || (),
        |()| {
            let mut btf = parse();
            dedup(&mut btf, &DedupOptions::default()).expect("dedup");
            btf
        },
    );
    let lib_parsed = median3(
        || (),
        |()| libbpf_oracle::dedup_bytes(data, None, false).expect("libbpf dedup"),
    );
    let ours_built = median3(
        || {
            let mut btf = parse();
            btf.strs_deduped = true;
            btf
        },
        |mut btf| {
            dedup(&mut btf, &DedupOptions::default()).expect("dedup");
            btf
        },
    );
    let lib_built = median3(
        || {
            let src = libbpf_oracle::LibBtf::parse(data, None).expect("libbpf parse");
            let mut built = libbpf_oracle::LibBtf::empty(None);
            built.add_btf(&src).expect("btf__add_btf");
            built
        },
        |mut built| {
            built.dedup(false).expect("libbpf dedup");
            built
        },
    );
    println!(
        "\n{name} ({} MiB), wall and CPU: median of 3\n",
        data.len() >> 20
    );
    println!("| mode | dwarf2btf wall / CPU | libbpf wall / CPU | ratio wall / CPU |");
    println!("|---|---|---|---|");
    for (mode, o, l) in [
        ("bytes", ours_parsed, lib_parsed),
        ("built", ours_built, lib_built),
    ] {
        println!(
            "| {mode} | {:.2} s / {:.2} s | {:.2} s / {:.2} s | {:.2} / {:.2} |",
            o[0],
            o[1],
            l[0],
            l[1],
            o[0] / l[0],
            o[1] / l[1]
        );
    }
    let (ours, lib) = (child_peak("dwarf2btf"), child_peak("libbpf"));
    println!(
        "\npeak RSS, read + dedup from bytes: dwarf2btf {ours:.0} MiB, libbpf {lib:.0} MiB \
         (ratio {:.2}); the input itself is {} MiB of it\n",
        ours / lib,
        data.len() >> 20
    );
}

fn bench(c: &mut Criterion) {
    let Some((name, data)) = input() else {
        eprintln!("no benchmark input found");
        return;
    };
    peak_child(&data);
    side_by_side(name, &data);
    let mut g = c.benchmark_group(format!("dedup/{name}"));
    g.sample_size(10).measurement_time(Duration::from_secs(30));
    g.bench_function("dwarf2btf", |b| {
        b.iter(|| {
            let mut btf = read::parse(&data, None).expect("input parses");
            dedup(&mut btf, &DedupOptions::default()).expect("dedup");
            btf
        })
    });
    g.bench_function("libbpf", |b| {
        b.iter(|| libbpf_oracle::dedup_bytes(&data, None, false).expect("libbpf dedup"))
    });
    g.finish();

    // As inside an encoder (pahole, dwarf2btf): the BTF was built with the add API, its
    // strings are already unique, so only the dedup call is timed (setup excluded).
    let mut g = c.benchmark_group(format!("dedup-built/{name}"));
    g.sample_size(10).measurement_time(Duration::from_secs(30));
    g.bench_function("dwarf2btf", |b| {
        b.iter_batched(
            || {
                let mut btf = read::parse(&data, None).expect("input parses");
                btf.strs_deduped = true;
                btf
            },
            |mut btf| {
                dedup(&mut btf, &DedupOptions::default()).expect("dedup");
                btf
            },
            BatchSize::LargeInput,
        )
    });
    g.bench_function("libbpf", |b| {
        b.iter_batched(
            || {
                let src = libbpf_oracle::LibBtf::parse(&data, None).expect("libbpf parse");
                let mut built = libbpf_oracle::LibBtf::empty(None);
                built.add_btf(&src).expect("btf__add_btf");
                built
            },
            |mut built| {
                built.dedup(false).expect("libbpf dedup");
                built
            },
            BatchSize::LargeInput,
        )
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
