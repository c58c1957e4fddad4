//! Benchmark: dwarf2btf's dedup against libbpf v1.7.0's `btf__dedup` on the same kernel-size
//! input, in the same run. Both sides start from raw bytes (parse + dedup).
//!
//! Input: the encoder's pre-dedup BTF of the Debian 6.1 vmlinux when present
//! (`/root/.cache/dwarf2btf/vmlinux-6.1.0-57.prededup.btf`), otherwise three concatenated
//! copies of the deduplicated kernel BTF from `/work/shared/oracles`.

#[path = "../tests/common/libbpf_oracle.rs"]
mod libbpf_oracle;

use std::time::Duration;

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

fn bench(c: &mut Criterion) {
    let Some((name, data)) = input() else {
        eprintln!("no benchmark input found");
        return;
    };
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
