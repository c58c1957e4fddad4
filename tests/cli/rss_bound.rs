//! Peak RSS on hostile input stays below the bound docs/bad-input.md states (`tests/common/rss.rs`:
//! 32 MiB plus 256 times the size of the input and its base, compressed sections counted
//! decompressed). Every file of the committed fuzz corpus
//! (`fuzz/corpus/TARGET/`) and every past fuzz finding (`tests/data/fuzz/`) is given to the
//! binary as an encoder input (pahole's default features; the kernel's flags;
//! in place on a copy, split on `fuzz/base.btf` with a distilled base) and to `verify` (alone
//! and on `fuzz/base.btf`); each run must end without a panic, in a resident set below the
//! bound. The bad-input set (`tests/cli/bad_input.rs`) checks the same bound on each of its runs,
//! and shows that the check fails on a run above it. The worst cases are printed. Hand-made
//! DWARF of a million tiny DIEs (`tests/common/hand_made.rs`), plain and compressed to the
//! decompression limit, shows why the bound counts compressed sections at their decompressed
//! size: counted at its size in the file, it peaks far above.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::hand_made::{tiny_dies, Shape};
use crate::common::*;

/// The committed corpus of every fuzz target and the past findings.
fn inputs() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root.join("fuzz/corpus"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    dirs.push(root.join("tests/data/fuzz"));
    let mut files: Vec<PathBuf> = dirs
        .iter()
        .flat_map(|d| std::fs::read_dir(d).unwrap().map(|e| e.unwrap().path()))
        .collect();
    files.sort();
    files
}

#[test]
fn fuzz_corpus_and_findings_stay_below_the_rss_bound() {
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/base.btf");
    let dir = scratch("runs");
    let (out, copy) = (dir.join("out.btf"), dir.join("copy"));
    let kernel = [KERNEL_FEATURES, "--lang_exclude=rust"];
    let split = format!("{KERNEL_FEATURES},distilled_base");
    let mut runs: Vec<(u64, u64, String)> = Vec::new();
    let files = inputs();
    assert!(files.len() > 100, "only {} inputs", files.len());
    for input in &files {
        std::fs::copy(input, &copy).unwrap();
        let detached = |flags: &[&str]| encode_command(input, &out, flags);
        let mut in_place = Command::new(bin());
        in_place
            .args(["-J", &split])
            .arg(format!("--btf_base={}", base.display()))
            .arg(&copy);
        let mut verify = Command::new(bin());
        verify.arg("verify").arg(input);
        let mut verify_split = Command::new(bin());
        verify_split
            .args(["verify", "--base"])
            .arg(&base)
            .arg(input);
        let (alone, on_base) = ([input.as_path()], [input.as_path(), base.as_path()]);
        for (what, mut cmd, inputs) in [
            ("default", detached(&[]), &alone[..]),
            ("kernel flags", detached(&kernel), &alone),
            ("in place, split", in_place, &on_base),
            ("verify", verify, &alone),
            ("verify --base", verify_split, &on_base),
        ] {
            let (o, kib) = rss::within_bound(inputs, &mut cmd);
            let stderr = String::from_utf8_lossy(&o.stderr);
            assert!(
                matches!(o.status.code(), Some(0..=2)) && !stderr.contains("panicked"),
                "{} ({what}): {}",
                input.display(),
                text(&o)
            );
            let name = input.file_name().unwrap().to_string_lossy();
            let size: u64 = inputs.iter().map(|p| rss::counted_size(p)).sum();
            runs.push((
                kib,
                rss::bound_kib(size),
                format!("{name} ({what}, {size} bytes)"),
            ));
        }
    }
    runs.sort();
    println!(
        "{} runs on {} inputs; the highest peaks:",
        runs.len(),
        files.len()
    );
    for (kib, bound, what) in runs.iter().rev().take(8) {
        println!("  {kib} KiB of {bound} KiB allowed: {what}");
    }
}

/// The shapes that cost the most memory per byte of DWARF: a million base-type DIEs of seven
/// bytes (about 13 bytes of RSS per byte of DWARF), and one struct of a million one-byte
/// members (about 175). Each stays below the bound counting compressed sections decompressed,
/// and (the reason for counting so) above it counting the file's size alone when compressed
/// at the limit's 64 times; the plain members are above what the bound allowed before it
/// took 256 bytes per byte (128). With a lower `--max_decompress_ratio` the compressed base
/// types are refused, naming the section.
#[test]
fn hand_made_dwarf_stays_below_the_bound_counting_decompressed_sizes() {
    let dir = scratch("hand_made");
    let out = dir.join("out.btf");
    for (shape, compress) in [
        (Shape::BaseTypes, true),
        (Shape::Members, false),
        (Shape::Members, true),
    ] {
        let (input, dwarf) = tiny_dies(&dir, shape, 1 << 20, compress);
        let name = input.file_name().unwrap().to_string_lossy().into_owned();
        let file = input.metadata().unwrap().len();
        let counted = rss::counted_size(&input);
        assert_eq!(counted, file + if compress { dwarf } else { 0 }, "{name}");
        let (o, kib) = rss::within_bound(&[&input], &mut encode_command(&input, &out, &[]));
        assert!(o.status.success(), "{name}: {}", text(&o));
        println!(
            "{name}: {file} bytes, {dwarf} bytes of DWARF: peak {kib} KiB, {} bytes per byte \
             of DWARF; bound {} KiB",
            (kib << 10) / dwarf,
            rss::bound_kib(counted)
        );
        if compress {
            assert!(
                kib > rss::bound_kib(file),
                "{name}: peak {kib} KiB, within the bound counted on the file's size"
            );
        }
        // Refused at half the ratio (the members' MiB of DWARF fits the file's slack).
        if compress && matches!(shape, Shape::BaseTypes) {
            let o = run(Command::new(bin())
                .args(["-J", "--max_decompress_ratio=32"])
                .arg(format!("--btf_encode_detached={}", out.display()))
                .arg(&input));
            let stderr = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(2), "{name}: {stderr}");
            assert_eq!(stderr.lines().count(), 1, "{name}: {stderr}");
            assert!(
                stderr.contains("section .debug_info: its compression header claims"),
                "{name}: {stderr}"
            );
        }
        if !compress {
            let before = (rss::RSS_CONSTANT_MIB << 10) + 128 * file.div_ceil(1024);
            assert!(
                kib > before,
                "{name}: peak {kib} KiB, within 32 MiB plus 128 times the file"
            );
        }
    }
}
