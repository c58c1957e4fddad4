//! Peak resident set of the binary under test, and the bound the README states for it: on any
//! input, `dwarf2btf` stays below [`bound_kib`] of the input's size (the base's included, with
//! `--btf_base` or `verify --base`).

use std::process::{Command, Output};

/// The README's bound ("Bad input"): peak RSS at most `RSS_CONSTANT_MIB` MiB plus
/// `RSS_PER_INPUT_BYTE` times the input's size. The factor follows from the decompression
/// limit (`--max_decompress_ratio`, default 64): a compressed section may expand 64 times, and
/// the encoder holds the decompressed bytes while it works on them (sections at the limit:
/// 65 times the input's size, `tests/bad_input.rs`). The constant is about six times the
/// largest peak of the bad-input set and the fuzz corpus (under 6 MiB). Hand-made DWARF can
/// exceed it (the README says how): the bound holds for these sets, not for every input.
pub(crate) const RSS_CONSTANT_MIB: u64 = 32;
/// See [`RSS_CONSTANT_MIB`].
pub(crate) const RSS_PER_INPUT_BYTE: u64 = 128;

/// The bound in KiB for an input of `input_bytes` bytes.
pub(crate) fn bound_kib(input_bytes: u64) -> u64 {
    (RSS_CONSTANT_MIB << 10) + RSS_PER_INPUT_BYTE * input_bytes.div_ceil(1024)
}

/// Runs `cmd` (as [`super::run`] does) and returns its output with its peak RSS in KiB, as
/// GNU time measures it. Not `wait4` on a child of the test process: the kernel carries the
/// high-water mark of the process that spawned a command over its exec (std spawns with
/// `CLONE_VM`), so the peak would include the test process's own (after building a 128 MiB
/// bomb, every later run "peaked" at 130 MiB); GNU time is a small process that forks.
pub(crate) fn peak_rss_kib(cmd: &mut Command) -> (Output, u64) {
    let report = tempfile::NamedTempFile::new().unwrap();
    let mut timed = Command::new(super::tool("time"));
    timed
        .args(["-f", "%M", "-o"])
        .arg(report.path())
        .arg(cmd.get_program())
        .args(cmd.get_args());
    let out = super::run(&mut timed);
    let text = std::fs::read_to_string(report.path()).unwrap();
    // A command killed by a signal gets a "Command terminated by signal" line first.
    let kib = text
        .lines()
        .last()
        .and_then(|l| l.trim().parse().ok())
        .unwrap_or_else(|| panic!("no RSS from time for {cmd:?}: {text}"));
    (out, kib)
}

/// Runs `cmd` on `inputs` (the input and its base, if any) and fails the test when its peak
/// RSS is above [`bound_kib`] of their size; returns the output and the peak in KiB.
pub(crate) fn within_bound(inputs: &[&std::path::Path], cmd: &mut Command) -> (Output, u64) {
    let (out, kib) = peak_rss_kib(cmd);
    if let Err(e) = check(inputs, kib) {
        panic!("{cmd:?}: {e}");
    }
    (out, kib)
}

/// Whether a peak of `kib` KiB is within [`bound_kib`] of the size of `inputs`.
pub(crate) fn check(inputs: &[&std::path::Path], kib: u64) -> Result<(), String> {
    let size = inputs
        .iter()
        .map(|p| std::fs::metadata(p).map_or(0, |m| m.len()))
        .sum();
    let bound = bound_kib(size);
    if kib <= bound {
        return Ok(());
    }
    Err(format!(
        "peak RSS {kib} KiB, above the README's bound of {bound} KiB for {size} bytes of input"
    ))
}
