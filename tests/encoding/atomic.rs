//! `_Atomic` (`DW_TAG_atomic_type`): pahole rejects it, dwarf2btf drops the
//! qualifier (BTF has none), so `_Atomic T` encodes as `T`. `tests/fixtures/atomic.c` is
//! compiled as is and with `-D_Atomic=` by gcc and clang, DWARF 4 and 5; dwarf2btf's BTF of
//! the `_Atomic` build must equal Debian pahole's BTF of the plain build, and dwarf2btf's of
//! the plain build, both as bpftool reads them (`tests/common/judge.rs`, independent of type
//! ids and of dwarf2btf's own `diff`). Compilers write
//! `DW_TAG_atomic_type` in DWARF 5 only (DWARF 4 builds lose `_Atomic` in the compiler), so
//! the DWARF 5 builds are the ones that exercise the encoder, and they must print the `-V`
//! notes. The rejection of a cycle of atomics is in `tests/cli/bad_input.rs`.

use std::path::PathBuf;
use std::process::Command;

use crate::common::*;

const SRC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/atomic.c");

/// Compiles the fixture with `cc` and `-gdwarf-{dwarf}`, with or without `_Atomic`.
fn compile(cc: &str, dwarf: u8, atomic: bool) -> PathBuf {
    let name = format!(
        "{cc}-dwarf{dwarf}-{}",
        if atomic { "atomic" } else { "plain" }
    );
    let out = scratch("atomic").join(format!("{name}.o"));
    let mut cmd = Command::new(tool(cc));
    cmd.args(["-O2", &format!("-gdwarf-{dwarf}"), "-c"]);
    if cc == "gcc" && dwarf == 4 {
        // See the fixture: GCC turns a typedef of an _Atomic type into a base type there.
        cmd.arg("-DNO_ATOMIC_TYPEDEF");
    }
    if !atomic {
        cmd.arg("-D_Atomic=");
    }
    run_ok(cmd.arg(SRC).arg("-o").arg(&out));
    out
}

/// The `-V` notes of an encoder run.
fn notes(stdout: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(stdout)
        .lines()
        .filter(|l| l.starts_with("atomic qualifier of "))
        .map(str::to_string)
        .collect()
}

#[test]
fn atomic_encodes_as_the_unqualified_type() {
    let global_var = format!("{KERNEL_FEATURES},global_var");
    for cc in ["gcc", "clang"] {
        for dwarf in [4, 5] {
            let atomic = compile(cc, dwarf, true);
            let plain = compile(cc, dwarf, false);
            for (tag, features) in [("kernel", KERNEL_FEATURES), ("global_var", &global_var)] {
                let what = format!("{cc} DWARF {dwarf} {tag}");
                let a = atomic.with_extension(format!("{tag}.btf"));
                let b = plain.with_extension(format!("{tag}.btf"));
                let out = encode(&atomic, &a, &[features]);
                assert!(out.status.success(), "{what}: {}", text(&out));
                assert!(
                    out.stdout.is_empty(),
                    "{what}: stdout without -V: {}",
                    text(&out)
                );
                let out = encode(&plain, &b, &[features]);
                assert!(out.status.success(), "{what}, no _Atomic: {}", text(&out));
                judge::Judge::all().assert_same(&b, &a);
                if tag == "kernel" {
                    // pahole 1.24 reads the plain build; floats as the kernel flags have them.
                    let theirs = plain.with_extension("pahole.btf");
                    run_ok(
                        Command::new(oracle_pahole())
                            .args(["-J", "--btf_gen_floats"])
                            .arg(format!("--btf_encode_detached={}", theirs.display()))
                            .arg(&plain),
                    );
                    judge::Judge::all().assert_same(&theirs, &a);
                } else {
                    // The globals are there as VARs, so the comparison covered them.
                    let vars = judge::Judge::only("vars").canon(&a);
                    assert_eq!(vars.lines().count(), 8, "{what}: {vars}");
                }
            }
        }
    }
}

#[test]
fn verbose_notes_each_dropped_qualifier() {
    for cc in ["gcc", "clang"] {
        let obj = compile(cc, 5, true);
        let out_path = obj.with_extension("verbose.btf");
        let out = encode(&obj, &out_path, &[KERNEL_FEATURES, "-V"]);
        assert!(out.status.success(), "{cc}: {}", text(&out));
        let mut got: Vec<String> = notes(&out.stdout)
            .iter()
            .map(|l| {
                let (head, die) = l.split_once(" (DIE .debug_info+0x").expect(l);
                assert!(die.ends_with(')'), "{cc}: {l}");
                head.to_string()
            })
            .collect();
        got.sort();
        // One atomic DIE per qualified type: `long` is spelled `long int` by gcc; the
        // typedef atomic_int_t and the `const _Atomic volatile int` member share `_Atomic int`.
        let long = if cc == "gcc" { "long int" } else { "long" };
        let mut want = vec![
            "atomic qualifier of int dropped".to_string(),
            format!("atomic qualifier of {long} dropped"),
            "atomic qualifier of counter_t dropped".into(),
            "atomic qualifier of struct s dropped".into(),
            "atomic qualifier of struct s * dropped".into(),
        ];
        want.sort();
        assert_eq!(got, want, "{cc}: {}", text(&out));
        let dwarf = run_ok(
            Command::new(tool("llvm-dwarfdump"))
                .arg("--debug-info")
                .arg(&obj),
        );
        let dies = String::from_utf8_lossy(&dwarf.stdout)
            .matches("DW_TAG_atomic_type")
            .count();
        assert_eq!(dies, want.len(), "{cc}: one note per DW_TAG_atomic_type");
    }
}
