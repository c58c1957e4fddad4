//! Peak resident set of the binary under test, and the bound docs/bad-input.md states for it: on
//! any input, `dwarf2btf` stays below [`bound_kib`] of the input's counted size ([`counted_size`]:
//! each compressed section at the size it decompresses to; the base's included, with `--btf_base`
//! or `verify --base`).

use std::process::{Command, Output};

use object::{Object, ObjectSection};

/// The bound docs/bad-input.md states: peak RSS at most `RSS_CONSTANT_MIB` MiB plus
/// `RSS_PER_INPUT_BYTE` times the input's counted size ([`counted_size`]). The encoder's memory
/// follows the DWARF it decodes, decompressed: the worst shape measured is one struct of a
/// million one-byte member DIEs, about 175 bytes of RSS per byte of DWARF
/// (`tests/cli/rss_bound.rs`'s hand-made cases; base types of seven bytes cost 13). Counting
/// the input's size alone, a compressed section 64 times smaller than its DWARF (what
/// `--max_decompress_ratio` allows by default) peaks hundreds of times above it. The constant
/// is about six times the largest peak of the bad-input set and the fuzz corpus (under 6 MiB).
pub const RSS_CONSTANT_MIB: u64 = 32;
/// See [`RSS_CONSTANT_MIB`].
pub const RSS_PER_INPUT_BYTE: u64 = 256;

/// The bound in KiB for an input whose counted size ([`counted_size`]) is `input_bytes`.
pub fn bound_kib(input_bytes: u64) -> u64 {
    (RSS_CONSTANT_MIB << 10) + RSS_PER_INPUT_BYTE * input_bytes.div_ceil(1024)
}

/// The size the bound counts for the file at `path`: its size, plus what its compressed
/// sections decompress to, as their compression headers claim, as far as the default
/// decompression limit lets them through: each at most `DEFAULT_DECOMPRESS_RATIO` times its
/// compressed size plus what is left of the file's `DECOMPRESS_SLACK`, in section order; the
/// first section refused ends the count (the run ends there, before allocating it). A file
/// that does not parse as ELF counts its size.
pub fn counted_size(path: &std::path::Path) -> u64 {
    use dwarf2btf::input::elf::{DECOMPRESS_SLACK, DEFAULT_DECOMPRESS_RATIO};
    let Ok(bytes) = std::fs::read(path) else {
        return 0;
    };
    let mut size = bytes.len() as u64;
    let Ok(file) = object::File::parse(&*bytes) else {
        return size;
    };
    let mut slack = DECOMPRESS_SLACK;
    for section in file.sections() {
        let Ok(range) = section.compressed_file_range() else {
            continue;
        };
        if range.format == object::CompressionFormat::None {
            continue;
        }
        let excess = range.uncompressed_size.saturating_sub(
            range
                .compressed_size
                .saturating_mul(DEFAULT_DECOMPRESS_RATIO),
        );
        if excess > slack {
            break;
        }
        slack -= excess;
        size = size.saturating_add(range.uncompressed_size);
    }
    size
}

/// Runs `cmd` (as [`super::run`] does) and returns its output with its peak RSS in KiB, as
/// GNU time measures it. Not `wait4` on a child of the test process: the kernel carries the
/// high-water mark of the process that spawned a command over its exec (std spawns with
/// `CLONE_VM`), so the peak would include the test process's own (after building a 128 MiB
/// bomb, every later run "peaked" at 130 MiB); GNU time is a small process that forks.
pub fn peak_rss_kib(cmd: &mut Command) -> (Output, u64) {
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
/// RSS is above [`bound_kib`] of their counted size; returns the output and the peak in KiB.
pub fn within_bound(inputs: &[&std::path::Path], cmd: &mut Command) -> (Output, u64) {
    let (out, kib) = peak_rss_kib(cmd);
    if let Err(e) = check(inputs, kib) {
        panic!("{cmd:?}: {e}");
    }
    (out, kib)
}

/// Whether a peak of `kib` KiB is within [`bound_kib`] of the counted size of `inputs`.
pub fn check(inputs: &[&std::path::Path], kib: u64) -> Result<(), String> {
    let size = inputs.iter().map(|p| counted_size(p)).sum();
    let bound = bound_kib(size);
    if kib <= bound {
        return Ok(());
    }
    Err(format!(
        "peak RSS {kib} KiB, above docs/bad-input.md's bound of {bound} KiB for {size} bytes of input \
         (compressed sections counted decompressed)"
    ))
}
