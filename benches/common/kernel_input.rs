//! The kernel inputs the benchmarks share: the reference vmlinux and its pre-dedup BTF.

use std::path::PathBuf;

use dwarf2btf::config::{Config, Design, Features, Output};
use dwarf2btf::pipeline;

/// The input: `$DWARF2BTF_VMLINUX`, else the reference vmlinux scripts/setup/fetch-kernel.sh caches.
pub(crate) fn vmlinux() -> PathBuf {
    std::env::var_os("DWARF2BTF_VMLINUX")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let home = std::env::var_os("HOME").unwrap_or_default();
            PathBuf::from(home).join(".cache/dwarf2btf/vmlinux-6.1.0-57-cloud-amd64")
        })
}

/// The pre-dedup BTF of `input` with the kernel's flags, as bytes.
pub(crate) fn prededup(input: PathBuf) -> Vec<u8> {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let out = dir.path().join("prededup.btf");
    let (features, _) = Features::from_lists(
        &["encode_force,var,float,enum64,decl_tag,type_tag,optimized_func,consistent_func,decl_tag_kfuncs".to_string()],
        false,
    )
    .expect("the kernel's features");
    let config = Config {
        input,
        output: Output::Detached(out.clone()),
        base: None,
        jobs: 2,
        features,
        lang_exclude: dwarf2btf::config::parse_langs("rust").expect("a language"),
        verbose: false,
        no_dedup: true,
        func_table: Design::Shared,
        max_decompress_ratio: dwarf2btf::input::elf::DEFAULT_DECOMPRESS_RATIO,
        stats: false,
        trace_saves: false,
        quiet: false,
    };
    pipeline::run(&config, pipeline::Host::quiet()).expect("the input encodes");
    std::fs::read(&out).expect("the output is there")
}
