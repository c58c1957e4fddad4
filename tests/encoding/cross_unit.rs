//! Inputs whose DIEs reference other units (`src/dwarf/foreign.rs`): type units, dwz (with and
//! without a supplementary file) and LTO (clang and gcc), built from one two-file program
//! (`tests/fixtures/xunit`). Type units and dwz must give the BTF of the same program built
//! plainly, by two judges: dwarf2btf's own `diff` against its BTF of the plain build, and —
//! independent of dwarf2btf — Debian pahole's BTF of the plain build, both rendered by bpftool
//! and `scripts/check/btf-canon.py` (`tests/common/judge.rs`); dwz output, which pahole 1.32 reads by
//! merging every CU into one, must also give pahole 1.32's BTF of it, by that judge. LTO (linked
//! as a shared library, and relocatable as a clang-LTO kernel module is), which pahole reads by
//! merging every CU into one, must give Debian pahole's BTF, by that judge.
//! Every test first checks that the input
//! really has what it is about, so that a compiler which ignores a flag cannot make it pass.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;

const SRC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/xunit");

/// Compiles and links the two-file program with `cc` and `flags` into `dir/name`.
fn build(dir: &Path, name: &str, cc: &str, flags: &[&str]) -> PathBuf {
    let out = dir.join(name);
    run_ok(
        Command::new(tool(cc))
            .args(flags)
            .arg(format!("{SRC}/xunit_a.c"))
            .arg(format!("{SRC}/xunit_b.c"))
            .arg("-o")
            .arg(&out),
    );
    out
}

/// Compiles `xunit_b.c` alone into the object `dir/name`.
fn compile(dir: &Path, name: &str, flags: &[&str]) -> PathBuf {
    let out = dir.join(name);
    run_ok(
        Command::new(tool("gcc"))
            .args(flags)
            .args(["-c", &format!("{SRC}/xunit_b.c"), "-o"])
            .arg(&out),
    );
    out
}

/// dwarf2btf's BTF of `input` (kernel flags), as `INPUT.btf`.
fn btf_of(input: &Path) -> PathBuf {
    let out = PathBuf::from(format!("{}.btf", input.display()));
    let o = encode(input, &out, &[KERNEL_FEATURES]);
    assert!(o.status.success(), "{}: {}", input.display(), text(&o));
    out
}

/// `dwarf2btf diff`: every type, function, variable and datasec, as multisets.
fn assert_same_btf(expected: &Path, got: &Path) {
    let o = run(Command::new(bin()).arg("diff").arg(expected).arg(got));
    assert!(
        o.status.success(),
        "{} and {} differ:\n{}",
        expected.display(),
        got.display(),
        text(&o)
    );
}

/// Debian pahole's BTF of `input` (with floats, as the kernel flags have them), as
/// `INPUT.pahole.btf`.
fn pahole_btf_of(input: &Path) -> PathBuf {
    let out = PathBuf::from(format!("{}.pahole.btf", input.display()));
    run_ok(
        Command::new(oracle_pahole())
            .arg("--btf_gen_floats")
            .arg(format!("--btf_encode_detached={}", out.display()))
            .arg(input),
    );
    out
}

/// pahole 1.32's BTF of `input` with the kernel flags, as `INPUT.pahole-1.32.btf`. pahole
/// 1.32 reads dwz output (`DW_FORM_GNU_ref_alt`, imported partial units) by merging every CU
/// into one, so its types come in another order than dwarf2btf's per-CU one.
fn pahole_1_32_btf_of(input: &Path) -> PathBuf {
    let out = PathBuf::from(format!("{}.pahole-1.32.btf", input.display()));
    run_ok(
        Command::new(pahole_1_32())
            .arg("-J")
            .arg(KERNEL_FEATURES)
            .arg(format!("--btf_encode_detached={}", out.display()))
            .arg(input),
    );
    out
}

/// The independent judge: `theirs` (pahole's) and `ours` describe the same types, as bpftool
/// reads them (`tests/common/judge.rs`).
fn assert_same_by_bpftool(theirs: &Path, ours: &Path) {
    judge::Judge::all().assert_same(theirs, ours);
}

/// What readelf prints about `path` with `args`.
fn readelf(path: &Path, args: &[&str]) -> String {
    text(&run_ok(Command::new(tool("readelf")).args(args).arg(path)))
}

#[test]
fn gcc_type_units_give_the_btf_of_the_plain_build() {
    let dir = scratch("cross_unit_type_units");
    for version in ["4", "5"] {
        let dwarf = format!("-gdwarf-{version}");
        let plain = build(&dir, &format!("plain{version}"), "gcc", &["-O2", &dwarf]);
        let units = build(
            &dir,
            &format!("type-units{version}"),
            "gcc",
            &["-O2", &dwarf, "-fdebug-types-section"],
        );
        let has_type_units = if version == "4" {
            readelf(&units, &["-S"]).contains(".debug_types")
        } else {
            readelf(&units, &["--debug-dump=info"]).contains("DW_UT_type")
        };
        assert!(has_type_units, "DWARF {version}: gcc wrote no type units");
        assert_same_btf(&btf_of(&plain), &btf_of(&units));
        assert_same_by_bpftool(&pahole_btf_of(&plain), &btf_of(&units));

        // In an object, each type unit has a section of its own (a COMDAT group).
        let plain = compile(&dir, &format!("plain{version}.o"), &["-O2", &dwarf]);
        let units = compile(
            &dir,
            &format!("type-units{version}.o"),
            &["-O2", &dwarf, "-fdebug-types-section"],
        );
        let section = if version == "4" {
            ".debug_types"
        } else {
            ".debug_info"
        };
        let sections = readelf(&units, &["-SW"]);
        let count = sections
            .lines()
            .filter(|l| l.contains(&format!(" {section} ")))
            .count();
        assert!(
            count > 1,
            "DWARF {version}: one {section} section in the object"
        );
        assert_same_btf(&btf_of(&plain), &btf_of(&units));
        assert_same_by_bpftool(&pahole_btf_of(&plain), &btf_of(&units));
    }
}

/// gcc with DWARF 4 and 5, clang with DWARF 4 (dwz 0.15 rejects clang's DWARF 5: "Unknown
/// debugging section .debug_addr").
#[test]
fn dwz_gives_the_btf_of_the_input_before_dwz() {
    let dir = scratch("cross_unit_dwz");
    for (cc, v) in [("gcc", "4"), ("gcc", "5"), ("clang", "4")] {
        let dwarf = format!("-gdwarf-{v}");
        let version = format!("{cc}-{v}");
        let first = build(&dir, &format!("first-{version}"), cc, &["-O2", &dwarf]);
        let second = build(&dir, &format!("second-{version}"), cc, &["-O1", &dwarf]);
        let (first_btf, second_btf) = (btf_of(&first), btf_of(&second));

        // One file: partial units in the file itself, DW_TAG_imported_unit, DW_FORM_ref_addr.
        let single = dir.join(format!("single{version}"));
        std::fs::copy(&first, &single).unwrap();
        run_ok(Command::new(tool("dwz")).arg(&single));
        assert!(
            readelf(&single, &["--debug-dump=info"]).contains("DW_TAG_partial_unit"),
            "DWARF {version}: dwz made no partial unit"
        );
        assert_same_btf(&first_btf, &btf_of(&single));
        assert_same_by_bpftool(&pahole_btf_of(&first), &btf_of(&single));
        assert_same_by_bpftool(&pahole_1_32_btf_of(&single), &btf_of(&single));

        // Two files and a supplementary one (-m), named relative to them (-M).
        let common = format!("common{version}.debug");
        let (m1, m2) = (
            dir.join(format!("m1-{version}")),
            dir.join(format!("m2-{version}")),
        );
        std::fs::copy(&first, &m1).unwrap();
        std::fs::copy(&second, &m2).unwrap();
        run_ok(
            Command::new(tool("dwz"))
                .current_dir(&dir)
                .args(["-m", &common, "-M", &common])
                .arg(&m1)
                .arg(&m2),
        );
        assert!(
            readelf(&m1, &["-S"]).contains(".gnu_debugaltlink"),
            "DWARF {version}: dwz -m wrote no .gnu_debugaltlink"
        );
        assert_same_btf(&first_btf, &btf_of(&m1));
        assert_same_btf(&second_btf, &btf_of(&m2));
        assert_same_by_bpftool(&pahole_btf_of(&first), &btf_of(&m1));
        assert_same_by_bpftool(&pahole_btf_of(&second), &btf_of(&m2));
        assert_same_by_bpftool(&pahole_1_32_btf_of(&m1), &btf_of(&m1));
        assert_same_by_bpftool(&pahole_1_32_btf_of(&m2), &btf_of(&m2));

        // Without the supplementary file: one clear error, nothing written.
        let moved = dir.join(format!("{common}.away"));
        std::fs::rename(dir.join(&common), &moved).unwrap();
        let out = dir.join(format!("m1-{version}-without.btf"));
        let o = encode(&m1, &out, &[KERNEL_FEATURES]);
        std::fs::rename(&moved, dir.join(&common)).unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(
            !o.status.success(),
            "encoded without the supplementary file"
        );
        assert!(
            stderr.contains(".gnu_debugaltlink") && stderr.contains(&common),
            "{stderr}"
        );
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(!out.exists(), "an output was written");
    }
}

/// clang and gcc LTO, as shared libraries so that every function stays: clang shares types
/// between CUs, gcc's concrete functions name their abstract origins in the early-debug CUs.
#[test]
fn lto_matches_debian_pahole() {
    let dir = scratch("cross_unit_lto");
    let builds: [(&str, &[&str]); 2] = [("clang", &["-fuse-ld=lld"]), ("gcc", &[])];
    for ((cc, linker), version) in builds.into_iter().flat_map(|b| ["4", "5"].map(|v| (b, v))) {
        let dwarf = format!("-gdwarf-{version}");
        let mut flags = vec!["-O2", &dwarf, "-flto", "-shared", "-fPIC"];
        flags.extend(linker);
        let lto = build(&dir, &format!("{cc}-lto{version}.so"), cc, &flags);
        assert_cross_unit_refs(&lto, &format!("{cc}, DWARF {version}"));
        assert_same_by_bpftool(&pahole_btf_of(&lto), &btf_of(&lto));
    }
}

/// clang LTO linked relocatable (`ld.lld -r`), as a clang-LTO kernel module is: the
/// cross-CU references are `DW_FORM_ref_addr` fields that only a relocation against
/// `.debug_info` fills in (RELA: the field itself holds 0), and the referenced DIEs' names
/// are relocated too, so a reader of the unrelocated section would name every imported type
/// after the string at offset 0.
#[test]
fn relocatable_lto_matches_debian_pahole() {
    let dir = scratch("cross_unit_lto_relocatable");
    for version in ["4", "5"] {
        let dwarf = format!("-gdwarf-{version}");
        let objects: Vec<PathBuf> = ["a", "b"]
            .into_iter()
            .map(|unit| {
                let out = dir.join(format!("xunit_{unit}-lto{version}.o"));
                run_ok(
                    Command::new(tool("clang"))
                        .args(["-O2", &dwarf, "-flto", "-c"])
                        .arg(format!("{SRC}/xunit_{unit}.c"))
                        .arg("-o")
                        .arg(&out),
                );
                out
            })
            .collect();
        let linked = dir.join(format!("xunit-lto{version}.o"));
        run_ok(
            Command::new(tool("ld.lld"))
                .arg("-r")
                .args(&objects)
                .arg("-o")
                .arg(&linked),
        );
        assert_cross_unit_refs(&linked, &format!("clang -r, DWARF {version}"));
        let relocs = run_ok(Command::new(tool("readelf")).arg("-rW").arg(&linked));
        let relocs = text(&relocs);
        let in_info = relocs
            .split("Relocation section")
            .find(|s| s.contains("'.rela.debug_info'"))
            .unwrap_or_default();
        assert!(
            in_info.lines().any(|l| l.contains(" .debug_info + ")),
            "DWARF {version}: no relocation against .debug_info:\n{relocs}"
        );
        assert_same_by_bpftool(&pahole_btf_of(&linked), &btf_of(&linked));
    }
}

/// Fails unless `input`'s DWARF has a cross-CU reference (`DW_FORM_ref_addr`), so that a
/// compiler ignoring `-flto` cannot make an LTO test pass; `what` names the build.
fn assert_cross_unit_refs(input: &Path, what: &str) {
    let forms = run_ok(
        Command::new(tool("llvm-dwarfdump"))
            .args(["-v", "--debug-info"])
            .arg(input),
    );
    assert!(
        text(&forms).contains("DW_FORM_ref_addr"),
        "{what}: -flto made no cross-CU reference"
    );
}

/// Negative control of the independent judge: a BTF file against itself passes, and with one
/// struct member renamed, or its type changed (to the first FUNC's id), it fails.
#[test]
fn bpftool_judge_detects_a_changed_member() {
    let dir = scratch("cross_unit_judge");
    let plain = build(&dir, "plain", "gcc", &["-O2", "-gdwarf-5"]);
    judge::judge_detects_a_changed_member(
        judge::Judge::all(),
        &btf_of(&plain),
        &dir.join("changed"),
    );
}
