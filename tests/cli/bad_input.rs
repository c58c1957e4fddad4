//! Bad input gets one clear error line and a non-zero exit: never a panic, never an output
//! file (partial or not), never a modified input, and a peak RSS below the bound
//! docs/bad-input.md states (`tests/common/rss.rs`; the fuzz corpus is held to it in
//! `tests/cli/rss_bound.rs`).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::bad_dwarf::*;
use crate::common::*;
use dwarf2btf::rng::Rng;

fn fixture_bytes(name: &str) -> Vec<u8> {
    let fx = fixtures().iter().find(|f| f.name == name).unwrap();
    std::fs::read(&fx.path).unwrap()
}

#[test]
fn empty_file() {
    let p = scratch("bad_empty").join("empty");
    std::fs::write(&p, b"").unwrap();
    assert_clean_failure(&p, "not a valid ELF file");
}

#[test]
fn not_an_elf() {
    let p = scratch("bad_text").join("text");
    std::fs::write(&p, b"hello, this is not an ELF file\n").unwrap();
    assert_clean_failure(&p, "not a valid ELF file");
}

#[test]
fn truncated_elf() {
    let bytes = fixture_bytes("gcc-O2-g");
    let dir = scratch("bad_truncated");
    for cut in [16, 64, bytes.len() / 2, bytes.len() - 100] {
        let p = dir.join(format!("truncated-{cut}.o"));
        std::fs::write(&p, &bytes[..cut]).unwrap();
        assert_clean_failure(&p, &p.display().to_string());
    }
}

/// The file offset of the ELF64 section header of `name`.
fn section_header_at(path: &Path, bytes: &[u8], name: &str) -> usize {
    let out = run_ok(Command::new(tool("readelf")).args(["-S", "-W"]).arg(path));
    let text = String::from_utf8_lossy(&out.stdout);
    let index: usize = text
        .lines()
        .find(|l| l.split_whitespace().any(|w| w == name))
        .and_then(|l| l.split('[').nth(1)?.split(']').next()?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {name} in {}", path.display()));
    let shoff = u64::from_le_bytes(bytes[0x28..0x30].try_into().unwrap()) as usize;
    let shentsize = u16::from_le_bytes(bytes[0x3a..0x3c].try_into().unwrap()) as usize;
    shoff + index * shentsize
}

/// A section header claiming 4 GiB in a file of a few KiB.
#[test]
fn section_larger_than_the_file() {
    let fx = fixtures().iter().find(|f| f.name == "gcc-shared").unwrap();
    let mut bytes = std::fs::read(&fx.path).unwrap();
    let sh = section_header_at(&fx.path, &bytes, ".debug_info");
    bytes[sh + 32..sh + 40].copy_from_slice(&(1u64 << 32).to_le_bytes()); // sh_size
    let p = scratch("bad_bigsection").join("bigsection.so");
    std::fs::write(&p, &bytes).unwrap();
    assert_clean_failure(
        &p,
        "section .debug_info: its offset and size lie outside the file",
    );
}

/// A compressed `.debug_info` whose header promises 1 TiB: refused, not allocated.
#[test]
fn compressed_section_claiming_a_terabyte() {
    let p = with_claimed_size("bad_zbomb", 1 << 40);
    assert_clean_failure(&p, TERABYTE_REFUSAL);
}

/// A compression header claiming 0 bytes for a whole stream is named for what it is (it used
/// to be read as an empty section, then reported as "relocation at 0x8 is out of bounds").
#[test]
fn compressed_section_claiming_nothing() {
    let p = with_claimed_size("bad_zero_claim", 0);
    assert_clean_failure(
        &p,
        "section .debug_info: its compression header claims 0 bytes from",
    );
}

/// The gcc-shared fixture with its debug sections compressed (zlib) and `.debug_info`'s
/// compression header claiming `size` bytes, in a scratch directory `dir`.
fn with_claimed_size(dir: &str, size: u64) -> PathBuf {
    let fx = fixtures().iter().find(|f| f.name == "gcc-shared").unwrap();
    let dir = scratch(dir);
    let z = dir.join("compressed.so");
    run_ok(
        Command::new(tool("objcopy"))
            .arg("--compress-debug-sections=zlib")
            .arg(&fx.path)
            .arg(&z),
    );
    let mut bytes = std::fs::read(&z).unwrap();
    let (off, _) = section_range(&z, ".debug_info");
    // Elf64_Chdr: ch_type (1 = zlib), ch_reserved, then ch_size.
    assert_eq!(
        u32::from_le_bytes(bytes[off..off + 4].try_into().unwrap()),
        1
    );
    bytes[off + 8..off + 16].copy_from_slice(&size.to_le_bytes());
    let p = dir.join("claim.so");
    std::fs::write(&p, &bytes).unwrap();
    p
}

/// What the 1 TiB claim gets: refused by the decompression limit, from the header alone,
/// before any allocation (so the answer does not depend on how the machine overcommits
/// memory: the message names the claim, which an allocation failure would not).
const TERABYTE_REFUSAL: &str =
    "section .debug_info: its compression header claims 1099511627776 bytes";

/// A fixture with its `.debug_str` padded with zeros to `size` bytes and every debug section
/// compressed with `format` (objcopy's `zlib` or `zstd`).
fn zero_bomb(dir: &Path, format: &str, size: usize) -> PathBuf {
    let fx = fixtures().iter().find(|f| f.name == "gcc-O2-g").unwrap();
    // The real strings first, so that the file still encodes once decompressed.
    let zeros = dir.join("strings-and-zeros");
    run_ok(
        Command::new(tool("objcopy"))
            .arg(format!("--dump-section=.debug_str={}", zeros.display()))
            .arg(&fx.path)
            .arg(dir.join("dumped.o")),
    );
    let mut strings = std::fs::read(&zeros).unwrap();
    strings.resize(size, 0);
    std::fs::write(&zeros, strings).unwrap();
    let plain = dir.join(format!("zeros-{format}.o"));
    run_ok(
        Command::new(tool("objcopy"))
            .arg(format!("--update-section=.debug_str={}", zeros.display()))
            .arg(&fx.path)
            .arg(&plain),
    );
    let bomb = dir.join(format!("bomb-{format}.o"));
    run_ok(
        Command::new(tool("objcopy"))
            .arg(format!("--compress-debug-sections={format}"))
            .arg(&plain)
            .arg(&bomb),
    );
    for big in [&zeros, &plain] {
        std::fs::remove_file(big).unwrap();
    }
    bomb
}

/// Real decompression bombs, zlib and zstd: 128 MiB of zeros in `.debug_str`, a few KiB compressed.
/// Refused with the section named, in a small resident set; with the limit lifted
/// (`--max_decompress_ratio=0`) the same file is decompressed and encoded, which shows both that
/// the refusal is the limit's and that the limit is what kept the memory down — and, as that run is
/// above docs/bad-input.md's RSS bound for the file's size, that the bound's check (`rss::check`,
/// which every bad input passes) can fail.
#[test]
fn decompression_bombs_are_refused_in_little_memory() {
    const SIZE: usize = 128 << 20;
    let dir = scratch("bad_zbombs");
    for format in ["zlib", "zstd"] {
        let bomb = zero_bomb(&dir, format, SIZE);
        let packed = std::fs::metadata(&bomb).unwrap().len();
        assert!(packed < 1 << 20, "{format}: the bomb is {packed} bytes");
        assert_clean_failure(
            &bomb,
            "section .debug_str: its compression header claims 134217728 bytes",
        );
        let out = dir.join(format!("{format}.btf"));
        let (o, kib) = rss::peak_rss_kib(
            Command::new(bin())
                .arg("-J")
                .arg(format!("--btf_encode_detached={}", out.display()))
                .arg(&bomb),
        );
        assert_eq!(o.status.code(), Some(2), "{format}: {}", text(&o));
        assert!(
            kib < 32 << 10,
            "{format}: refused, but peak RSS was {kib} KiB"
        );
        let (o, kib) = rss::peak_rss_kib(
            Command::new(bin())
                .arg("-J")
                .arg("--max_decompress_ratio=0")
                .arg(format!("--btf_encode_detached={}", out.display()))
                .arg(&bomb),
        );
        assert!(o.status.success(), "{format}, no limit: {}", text(&o));
        assert!(
            kib > (SIZE as u64 >> 10),
            "{format}, no limit: peak RSS {kib} KiB, not the {SIZE} bytes decompressed"
        );
        assert!(
            rss::check(&[&bomb], kib).is_err(),
            "{format}, no limit: peak RSS {kib} KiB, within the bound the limit is there to keep"
        );
    }
}

/// An ET_REL (x86-64) of `n` `.debug_info` sections, each the same zlib stream of 1 MiB of
/// zeros (about 1 KiB), followed by zeros up to `size` bytes (which decompression ignores).
fn many_small_bombs(dir: &Path, n: usize, size: usize) -> PathBuf {
    let zlib = run_ok(Command::new(tool("python3")).args([
        "-c",
        "import sys, zlib; sys.stdout.buffer.write(zlib.compress(bytes(1 << 20), 9))",
    ]))
    .stdout;
    // Elf64_Chdr: ch_type 1 (zlib), ch_reserved, ch_size, ch_addralign.
    let mut payload = [1u32.to_le_bytes(), [0; 4]].concat();
    payload.extend((1u64 << 20).to_le_bytes());
    payload.extend(1u64.to_le_bytes());
    payload.extend(zlib);
    payload.resize(payload.len().max(size).next_multiple_of(8), 0);
    // SHT_PROGBITS, SHF_COMPRESSED
    let sections = vec![(".debug_info", 1, 0x800, payload); n];
    let file = crate::common::hand_made::elf(&sections);
    let p = dir.join(format!("bombs-{n}-{size}.o"));
    std::fs::write(&p, file).unwrap();
    p
}

/// Many small bombs: 500 `.debug_info` sections (an ET_REL's are concatenated) of 1 KiB, each
/// claiming 1 MiB, which is within 64 times its size plus 1 MiB. When each section had a MiB
/// of slack of its own, all were decompressed (500 MiB from half a MiB of file); the slack is
/// the file's, so the second is refused.
#[test]
fn many_small_compressed_sections_share_one_slack() {
    let p = many_small_bombs(&scratch("bad_many_bombs"), 500, 0);
    assert!(std::fs::metadata(&p).unwrap().len() < 1 << 20);
    assert_clean_failure(
        &p,
        "section .debug_info: its compression header claims 1048576 bytes",
    );
}

/// What the limit lets through, and the RSS bound has to allow: 200 `.debug_info` sections
/// that each expand exactly 64 times (16 KiB claiming 1 MiB), 200 MiB from 3.2 MiB of file,
/// decompressed and concatenated before the DWARF (zeros) is found invalid. The peak is about
/// 65 times the input's size, within the bound, which counts the sections decompressed
/// (`tests/common/rss.rs`).
#[test]
fn sections_at_the_decompression_limit_stay_within_the_rss_bound() {
    let p = many_small_bombs(&scratch("bad_limit_bombs"), 200, (1 << 20) / 64 + 24);
    assert_clean_failure(&p, "invalid DWARF at .debug_info+0x0");
}

#[test]
fn garbage_in_debug_info() {
    let fx = fixtures().iter().find(|f| f.name == "gcc-shared").unwrap();
    let mut bytes = std::fs::read(&fx.path).unwrap();
    let (off, size) = section_range(&fx.path, ".debug_info");
    let mut rng = Rng::with_state(0x2545_f491_4f6c_dd1d);
    for b in &mut bytes[off + 11..off + size] {
        *b = rng.next() as u8;
    }
    let p = scratch("bad_garbage").join("garbage.so");
    std::fs::write(&p, &bytes).unwrap();
    assert_clean_failure(&p, "DWARF");
}

#[test]
fn unsupported_dwarf_tag_is_named() {
    let src = "int counter;\nint &ref = counter;\n";
    let obj = compile("reference.cc", src, "g++", &["-g"]);
    assert_clean_failure(&obj, "DW_TAG_reference_type at DIE .debug_info+0x");
}

/// `_Atomic` is dropped (tests/encoding/atomic.rs), but an atomic type that qualifies itself has no
/// type to end on: the `DW_AT_type` of the atomic DIE (the offset the `-V` note gives) is
/// pointed back at the DIE.
#[test]
fn cycle_of_atomic_types() {
    let src = "_Atomic int counter;\nint get(void) { return counter; }\n";
    let obj = compile("atomic.c", src, "gcc", &["-gdwarf-5"]);
    let dir = obj.parent().unwrap();
    let out = encode(&obj, &dir.join("atomic.btf"), &["-V"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let die = stdout
        .lines()
        .find_map(|l| l.strip_prefix("atomic qualifier of int dropped (DIE .debug_info+0x"))
        .and_then(|hex| usize::from_str_radix(hex.strip_suffix(')')?, 16).ok())
        .unwrap_or_else(|| panic!("no atomic note: {}", text(&out)));
    // One CU at .debug_info+0: unit offsets are section offsets. The DIE is a one-byte
    // abbreviation code and a DW_FORM_ref4 to the int.
    let mut bytes = std::fs::read(&obj).unwrap();
    let (off, _) = section_range(&obj, ".debug_info");
    let at = off + die + 1;
    let target = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
    assert!(
        target != 0 && target < die,
        "not a ref4 to the int: {target:#x}"
    );
    bytes[at..at + 4].copy_from_slice(&(die as u32).to_le_bytes());
    let p = dir.join("atomic-cycle.o");
    std::fs::write(&p, &bytes).unwrap();
    assert_clean_failure(&p, "cycle of atomic types");
}

/// A typedef chain whose first typedef's `DW_AT_type` is pointed at the last: a cycle no C
/// type can form, which would be BTF every kernel rejects (and a walk along it would not end).
#[test]
fn typedef_cycle() {
    let mut src = String::from("typedef int t0;\n");
    for i in 1..8 {
        src += &format!("typedef t{} t{i};\n", i - 1);
    }
    src += "int f(t7 a) { return (int)a; }\n";
    let obj = compile("typedefs.c", &src, "gcc", &["-g", "-O2", "-gdwarf-4"]);
    let info = run_ok(
        Command::new(tool("readelf"))
            .arg("--debug-dump=info")
            .arg(&obj),
    );
    let info = String::from_utf8_lossy(&info.stdout);
    // `<1><39>: Abbrev Number: 3 (DW_TAG_typedef)`, then `<3f>   DW_AT_type : <0x32>`.
    let mut typedefs = Vec::new();
    let mut die = None;
    for line in info.lines() {
        let hex = |s: &str| usize::from_str_radix(s.trim_start_matches("0x"), 16).unwrap();
        if line.contains("(DW_TAG_typedef)") {
            die = line.split(['<', '>']).nth(3).map(hex);
        } else if let (Some(d), true) = (die, line.contains("DW_AT_type")) {
            let attr = hex(line.split(['<', '>']).nth(1).unwrap());
            let target = hex(line.rsplit(['<', '>']).nth(1).unwrap());
            typedefs.push((d, attr, target));
            die = None;
        }
    }
    assert_eq!(typedefs.len(), 8, "typedef DIEs not found in:\n{info}");
    let (first, last) = (typedefs[0], typedefs[7]);
    let mut bytes = std::fs::read(&obj).unwrap();
    let (off, _) = section_range(&obj, ".debug_info");
    let at = off + first.1;
    assert_eq!(
        u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize,
        first.2,
        "t0's DW_AT_type is not a ref4 in a CU at .debug_info+0"
    );
    bytes[at..at + 4].copy_from_slice(&(last.0 as u32).to_le_bytes());
    let p = obj.with_file_name("typedef-cycle.o");
    std::fs::write(&p, &bytes).unwrap();
    assert_clean_failure(&p, "refers back to itself through typedefs");
}

#[test]
fn unknown_flag() {
    let out = run(Command::new(bin()).arg("--no-such-flag").arg("x"));
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--no-such-flag"), "{stderr}");
    assert!(!stderr.contains("panicked"));
}

#[test]
fn unknown_feature_is_fatal_only_when_strict() {
    let fx = &fixtures()[0];
    let dir = scratch("features");
    let out = encode(
        &fx.path,
        &dir.join("a.btf"),
        &["--btf_features=float,bogus"],
    );
    assert!(out.status.success(), "{}", text(&out));
    let out = encode(
        &fx.path,
        &dir.join("b.btf"),
        &["--btf_features_strict=float,bogus"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out).contains("unknown BTF feature 'bogus'"),
        "{}",
        text(&out)
    );
}

/// Without -J or --btf_encode_detached there is nothing to do (pahole would print types).
#[test]
fn nothing_to_do_without_j() {
    let fx = &fixtures()[0];
    let before = std::fs::read(&fx.path).unwrap();
    let out = run(Command::new(bin()).arg(&fx.path));
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("pass -J"), "{}", text(&out));
    assert_eq!(std::fs::read(&fx.path).unwrap(), before);
}

/// A valid ELF without DWARF is not an error (kernel builds rely on it): exit 0, one notice
/// line, nothing written.
#[test]
fn elf_without_dwarf_writes_nothing() {
    let dir = scratch("nodwarf");
    let obj = dir.join("nodwarf.o");
    run_ok(
        Command::new(tool("gcc"))
            .args(["-O2", "-c"])
            .arg(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/fixtures/nodwarf.c"
            ))
            .arg("-o")
            .arg(&obj),
    );
    let out_path = dir.join("out.btf");
    let out = encode(&obj, &out_path, &[]);
    assert!(out.status.success(), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("no DWARF"), "{stderr}");
    assert!(!out_path.exists());
}

#[test]
fn missing_input_file() {
    let dir = scratch("missing");
    let p = dir.join("does-not-exist");
    let out = encode(&p, &dir.join("out.btf"), &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("No such file"), "{}", text(&out));
}

/// An object whose `.gnu_debugaltlink` (dwz's supplementary file) names `target`, relative to
/// the object's directory.
fn with_altlink(name: &str, target: &str) -> PathBuf {
    let obj = compile(
        name,
        "int shared_counter;\nint get(void) { return shared_counter; }\n",
        "gcc",
        &["-g"],
    );
    let link = obj.with_extension("altlink");
    let mut content = target.as_bytes().to_vec();
    content.push(0);
    content.extend_from_slice(&[0xab; 20]); // a build ID
    std::fs::write(&link, content).unwrap();
    run_ok(
        Command::new(tool("objcopy"))
            .arg(format!(
                "--add-section=.gnu_debugaltlink={}",
                link.display()
            ))
            .arg(&obj),
    );
    std::fs::remove_file(link).unwrap();
    obj
}

/// A supplementary file is never followed further: an object naming itself (whose own
/// `.gnu_debugaltlink` names itself again) is read once, not recursed into until the stack
/// overflows, and encodes as the object it is.
#[test]
fn supplementary_file_naming_itself() {
    let obj = with_altlink("selflink.c", "selflink.o");
    let out = obj.with_extension("btf");
    let o = encode(&obj, &out, &[KERNEL_FEATURES]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v = run(Command::new(bin()).arg("verify").arg(&out));
    assert!(v.status.success(), "{}", text(&v));
}

/// A supplementary file must be a regular file: a FIFO there is refused at once, with one
/// line naming it, instead of hanging the run on a read that never ends.
#[test]
fn supplementary_file_that_is_a_fifo() {
    let obj = with_altlink("fifolink.c", "fifo.debug");
    mkfifo(&obj.with_file_name("fifo.debug"));
    assert_clean_failure(&obj, "is not a regular file");
}

/// What is not a regular file is refused with one line saying what it is, by the encoder and
/// by the subcommands that read BTF: a directory, a FIFO (which would block the read) and a
/// device (`/dev/zero` would be read until memory runs out).
#[test]
fn inputs_that_are_not_regular_files() {
    let dir = scratch("bad_not_regular");
    let fifo = mkfifo(&dir.join("fifo"));
    let out = dir.join("out.btf");
    let cases = [
        (dir.as_path(), "is a directory"),
        (fifo.as_path(), "is not a regular file"),
        (Path::new("/dev/zero"), "is not a regular file"),
    ];
    for (input, expect) in cases {
        let encoder = encode_command(input, &out, &[]);
        let mut verify = Command::new(bin());
        verify.arg("verify").arg(input);
        let mut dump = Command::new(bin());
        dump.arg("dump").arg(input);
        for mut cmd in [encoder, verify, dump] {
            let o = run(&mut cmd);
            let stderr = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(2), "{cmd:?}: {stderr}");
            assert_eq!(stderr.trim_end().lines().count(), 1, "{cmd:?}: {stderr}");
            assert!(stderr.contains(expect), "{cmd:?}: {stderr}");
        }
        assert!(!out.exists());
    }
}

/// Raw BTF with a 24-byte header around `types` (words) and `strings`.
fn raw_btf(types: &[u32], strings: &[u8]) -> Vec<u8> {
    let type_len = (types.len() * 4) as u32;
    let mut out = vec![0x9f, 0xeb, 1, 0];
    for word in [24, 0, type_len, type_len, strings.len() as u32] {
        out.extend_from_slice(&word.to_le_bytes());
    }
    types
        .iter()
        .for_each(|w| out.extend_from_slice(&w.to_le_bytes()));
    out.extend_from_slice(strings);
    out
}

/// A base BTF is validated like any BTF before split BTF is built on it: string offsets past
/// the strings, an unterminated string section and a loop of typedefs are each refused with
/// one line naming the base, by the encoder (`--btf_base`) and by `verify --base`, which
/// said "valid BTF" of split BTF on such a base.
#[test]
fn broken_bases_are_refused() {
    const INT: u32 = 1 << 24; // BTF_KIND_INT, vlen 0
    const TYPEDEF: u32 = 8 << 24;
    let int = |name: u32| [name, INT, 4, 32];
    let dir = scratch("bad_base");
    let good = raw_btf(&int(1), b"\0int\0");
    let bases = [
        ("offset", raw_btf(&int(400), b"\0int\0")),
        ("unterminated", raw_btf(&int(1), b"\0int")),
        ("loop", raw_btf(&[1, TYPEDEF, 2, 1, TYPEDEF, 1], b"\0t\0")),
    ];
    let obj = compile(
        "on_base.c",
        "int on_base(int x) { return x + 1; }\n",
        "gcc",
        &["-g"],
    );
    let good_path = dir.join("good.btf");
    std::fs::write(&good_path, &good).unwrap();
    let split = dir.join("split.btf");
    let base_flag = |p: &Path| format!("--btf_base={}", p.display());
    let o = encode(&obj, &split, &[&base_flag(&good_path)]);
    assert!(o.status.success(), "{}", text(&o));
    for (name, bytes) in bases {
        let base = dir.join(format!("{name}.btf"));
        std::fs::write(&base, bytes).unwrap();
        let out = dir.join(format!("{name}.out.btf"));
        let encoder = encode_command(&obj, &out, &[&base_flag(&base)]);
        let mut verify = Command::new(bin());
        verify.arg("verify").arg("--base").arg(&base).arg(&split);
        for mut cmd in [encoder, verify] {
            let o = run(&mut cmd);
            let stderr = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(2), "{name}: {}", text(&o));
            assert_eq!(stderr.trim_end().lines().count(), 1, "{name}: {stderr}");
            assert!(
                stderr.contains("not usable as base BTF"),
                "{name}: {stderr}"
            );
        }
        assert!(!out.exists(), "{name}: an output was written");
    }
}

/// A compressed `.BTF` whose header claims far more than its size allows (256 MiB from a few
/// bytes) is refused before anything is allocated, wherever BTF is read from an ELF file:
/// `verify`, `dump`, and a base given to the encoder (a 265 KB file peaked at 260 MiB).
#[test]
fn compressed_btf_claiming_too_much() {
    const SHF_COMPRESSED: u64 = 0x800;
    let mut packed = [1u32.to_le_bytes(), [0; 4]].concat(); // ch_type zlib, ch_reserved
    packed.extend((256u64 << 20).to_le_bytes()); // ch_size
    packed.extend(1u64.to_le_bytes()); // ch_addralign
    packed.extend([0x78, 0x9c, 3, 0]); // the start of a zlib stream
    let file = crate::common::hand_made::elf(&[(".BTF", 1, SHF_COMPRESSED, packed)]);
    let dir = scratch("bad_btf_bomb");
    let bomb = dir.join("bomb.o");
    std::fs::write(&bomb, file).unwrap();
    let obj = compile(
        "on_bomb.c",
        "int on_bomb(int x) { return x; }\n",
        "gcc",
        &["-g"],
    );
    let out = dir.join("out.btf");
    let mut verify = Command::new(bin());
    verify.arg("verify").arg(&bomb);
    let mut dump = Command::new(bin());
    dump.arg("dump").arg(&bomb);
    let base = encode_command(&obj, &out, &[&format!("--btf_base={}", bomb.display())]);
    for mut cmd in [verify, dump, base] {
        let (o, _) = rss::within_bound(&[&bomb], &mut cmd);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{cmd:?}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{cmd:?}: {stderr}");
        assert!(
            stderr.contains("claims 268435456 bytes"),
            "{cmd:?}: {stderr}"
        );
    }
    assert!(!out.exists());
}

/// What BTF's 32-bit fields cannot hold is refused with one line naming the DIE, where it
/// used to wrap into BTF that verify accepts with the wrong layout: a struct of 4 GiB and
/// more, an array dimension of 2^32 elements and more, a member 2^32 bits or more into its
/// struct. (gcc's `DW_AT_upper_bound` of -1 for a zero-length array still counts 0.)
#[test]
fn sizes_beyond_32_bits_are_refused() {
    let cases = [
        (
            "big_struct.c",
            "struct big { char a[1UL << 32]; int tail; };\nstruct big *p;\n",
            "its size in bytes (4294967300)",
        ),
        (
            "big_dim.c",
            "char (*p)[1UL << 33];\n",
            "the element count of its dimension (8589934592)",
        ),
        (
            "far_member.c",
            "struct far { char a[1UL << 29]; int tail; };\nstruct far *p;\n",
            "the member's offset in bits (4294967296)",
        ),
    ];
    for (name, src, expect) in cases {
        let obj = compile(name, src, "gcc", &["-g"]);
        assert_clean_failure(&obj, expect);
    }
    let obj = compile(
        "zero_len.c",
        "struct z { int n; int a[0]; };\nstruct z *p;\n",
        "gcc",
        &["-g"],
    );
    let o = encode(&obj, &obj.with_extension("btf"), &[]);
    assert!(o.status.success(), "{}", text(&o));
}
