//! Type encoding on C fixtures, compared with pahole 1.32 (Debian unstable's, the release
//! whose output dwarf2btf reproduces) and checked by bpftool and by `dwarf2btf verify`: with
//! the same flags on both sides, the type and string sections are byte-identical, and the
//! whole BTF is also compared as bpftool reads it (`tests/common/judge.rs`, independent of
//! dwarf2btf's own `diff`), as multisets.

use std::process::Command;

use crate::common::*;

/// Feature sets both encoders are run with: pahole's defaults, the kernel's flags, the 6.1
/// kernel's legacy flags, and the defaults without tags or enum64.
const CONFIGS: [(&str, &[&str]); 5] = [
    ("defaults", &[]),
    ("kernel-flags", &[KERNEL_FEATURES, "--lang_exclude=rust"]),
    (
        "6.1-kernel-flags",
        &[
            "--btf_gen_floats",
            "-j",
            "--lang_exclude=rust",
            "--skip_encoding_btf_inconsistent_proto",
            "--btf_gen_optimized",
        ],
    ),
    (
        "no-tags",
        &[
            "--skip_encoding_btf_type_tag",
            "--skip_encoding_btf_decl_tag",
        ],
    ),
    (
        "no-enum64",
        &["--skip_encoding_btf_enum64", "--btf_gen_floats"],
    ),
];

/// The judge: the named types (and what they reach), as sets.
fn types() -> judge::Judge<'static> {
    judge::Judge::only("types").as_sets()
}

#[test]
fn types_match_pahole_1_32_on_every_fixture() {
    let dir = scratch("types_match");
    let pahole = pahole_1_32();
    for fx in fixtures() {
        for (config, flags) in CONFIGS {
            let ours = dir.join(format!("{}.{config}.ours.btf", fx.name));
            let theirs = dir.join(format!("{}.{config}.pahole.btf", fx.name));
            let out = encode(&fx.path, &ours, flags);
            assert!(out.status.success(), "{} {config}: {}", fx.name, text(&out));
            let _ = std::fs::remove_file(&theirs);
            run_ok(
                Command::new(&pahole)
                    .arg("-J")
                    .args(flags)
                    .arg(format!("--btf_encode_detached={}", theirs.display()))
                    .arg(&fx.path),
            );
            if let Some(d) = judge::Judge::all().difference(&theirs, &ours) {
                panic!("{} ({config}): types differ from pahole's:\n{d}", fx.name);
            }
            let (theirs, ours) = (
                std::fs::read(&theirs).unwrap(),
                std::fs::read(&ours).unwrap(),
            );
            assert!(
                compare::btf_sections(&theirs) == compare::btf_sections(&ours),
                "{} ({config}): the type and string sections differ from pahole's",
                fx.name
            );
        }
    }
}

#[test]
fn output_is_accepted_by_verify_and_bpftool() {
    let dir = scratch("accepted");
    let bpftool = tool("bpftool");
    for fx in fixtures() {
        let ours = dir.join(format!("{}.btf", fx.name));
        let out = encode(&fx.path, &ours, &[KERNEL_FEATURES]);
        assert!(out.status.success(), "{}: {}", fx.name, text(&out));
        let v = run(Command::new(bin()).arg("verify").arg(&ours));
        assert!(
            v.status.success(),
            "{}: verify rejected: {}",
            fx.name,
            text(&v)
        );
        let dump = run_ok(
            Command::new(&bpftool)
                .args(["btf", "dump", "file"])
                .arg(&ours),
        );
        assert!(
            String::from_utf8_lossy(&dump.stdout).contains("STRUCT 'bits'")
                || fx.name == "clang-tags",
            "{}: bpftool listing lacks struct bits",
            fx.name
        );
    }
}

/// The comparisons themselves must be able to fail: two different programs differ, and a
/// fixture's BTF differs from itself with one struct member renamed or retyped, for the whole
/// BTF and for its types as sets.
#[test]
fn judge_detects_different_types() {
    let dir = scratch("negative");
    let all = fixtures();
    let plain = all.iter().find(|f| f.name == "gcc-O2-g").unwrap();
    let tags = all.iter().find(|f| f.name == "clang-tags").unwrap();
    let a = dir.join("a.btf");
    let b = dir.join("b.btf");
    assert!(encode(&plain.path, &a, &[]).status.success());
    assert!(encode(&tags.path, &b, &[]).status.success());
    for (what, judge) in [("all", judge::Judge::all()), ("types", types())] {
        assert!(
            judge.difference(&a, &b).is_some(),
            "{what}: the judge must report a difference"
        );
        judge::judge_detects_a_changed_member(judge, &a, &dir.join(format!("changed-{what}")));
    }
}

/// Bitfield offsets from DWARF 4 (DW_AT_bit_offset) and DWARF 5 (DW_AT_data_bit_offset)
/// agree with each other (and, through the test above, with pahole).
#[test]
fn dwarf4_and_dwarf5_bitfields_agree() {
    let dir = scratch("bitfields");
    let all = fixtures();
    let v5 = all.iter().find(|f| f.name == "gcc-O2-g").unwrap();
    let v4 = all.iter().find(|f| f.name == "gcc-O2-gdwarf-4").unwrap();
    let (a, b) = (dir.join("v5.btf"), dir.join("v4.btf"));
    assert!(encode(&v5.path, &a, &[]).status.success());
    assert!(encode(&v4.path, &b, &[]).status.success());
    types().assert_same(&a, &b);
    let dump = run_ok(Command::new(bin()).arg("dump").arg(&b));
    let listing = String::from_utf8_lossy(&dump.stdout);
    // struct bits: c is a 5-bit field after 3+7 bits; d (33 bits) starts a new 8-byte unit.
    assert!(listing.contains("'c' type_id="), "{listing}");
    assert!(
        listing.contains("bits_offset=10 bitfield_size=5"),
        "{listing}"
    );
}

/// Output bytes do not depend on the run (the comparison's negative control is
/// `jobs_comparison_detects_a_changed_output` in tests/encoding/functions.rs).
#[test]
fn encoding_is_deterministic() {
    let dir = scratch("determinism");
    for fx in fixtures() {
        let a = dir.join(format!("{}.1.btf", fx.name));
        let b = dir.join(format!("{}.2.btf", fx.name));
        assert!(encode(&fx.path, &a, &[KERNEL_FEATURES]).status.success());
        assert!(encode(&fx.path, &b, &[KERNEL_FEATURES, "-j4"])
            .status
            .success());
        let (a, b) = (std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
        if let Some(d) = compare::first_difference(&a, &b) {
            panic!("{}: -j1 and -j4 differ: {d}", fx.name);
        }
    }
}
