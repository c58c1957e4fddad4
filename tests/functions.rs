//! Function rules end to end, on a two-CU fixture with known answers (pahole HEAD's rules),
//! and output identity across worker counts and function-table designs.

mod common;

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use common::*;

/// funcs_a.c + funcs_b.c linked into one shared object with gcc -O2 -g.
fn funcs_so() -> &'static PathBuf {
    static SO: OnceLock<PathBuf> = OnceLock::new();
    SO.get_or_init(|| {
        let out = scratch("funcs").join("funcs.so");
        let src = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");
        run_ok(
            Command::new(tool("gcc"))
                .args(["-O2", "-g", "-shared", "-fPIC"])
                .arg(format!("{src}/funcs_a.c"))
                .arg(format!("{src}/funcs_b.c"))
                .arg("-o")
                .arg(&out),
        );
        out
    })
}

/// Encodes with -V and returns (skip lines, bpftool listing).
fn encode_verbose(input: &std::path::Path, name: &str) -> (Vec<String>, String) {
    let out = scratch("funcs_out").join(format!("{name}.btf"));
    let o = encode(input, &out, &[KERNEL_FEATURES, "-V"]);
    assert!(o.status.success(), "{}", text(&o));
    let skips = String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| l.contains("skipping BTF encoding of function"))
        .map(str::to_string)
        .collect();
    let dump = run_ok(
        Command::new(tool("bpftool"))
            .args(["btf", "dump", "file"])
            .arg(&out),
    );
    (skips, String::from_utf8_lossy(&dump.stdout).into_owned())
}

fn has_func(listing: &str, name: &str) -> bool {
    listing.contains(&format!("FUNC '{name}' "))
}

#[test]
fn static_clone_with_dropped_parameter_is_skipped() {
    let (skips, listing) = encode_verbose(funcs_so(), "clone");
    assert!(
        skips.contains(
            &"foo : skipping BTF encoding of function due to optimized parameters".into()
        ),
        "{skips:?}"
    );
    assert!(!has_func(&listing, "foo"));
}

#[test]
fn global_with_unused_parameter_is_kept() {
    let (skips, listing) = encode_verbose(funcs_so(), "global");
    assert!(has_func(&listing, "bar"), "{listing}");
    assert!(!skips.iter().any(|s| s.starts_with("bar ")), "{skips:?}");
}

#[test]
fn conflicting_prototypes_are_inconsistent() {
    let (skips, listing) = encode_verbose(funcs_so(), "inconsistent");
    assert!(
        skips.contains(
            &"helper : skipping BTF encoding of function due to inconsistet prototype".into()
        ),
        "{skips:?}"
    );
    assert!(
        skips.contains(
            &"helper : skipping BTF encoding of function due to param count mismatch; 1 params != 2 params"
                .into()
        ),
        "{skips:?}"
    );
    assert!(!has_func(&listing, "helper"));
}

#[test]
fn packed_struct_on_the_stack_is_uncertain() {
    let (skips, listing) = encode_verbose(funcs_so(), "uncertain");
    assert!(
        skips.contains(
            &"on_stack : skipping BTF encoding of function due to uncertain parameter location"
                .into()
        ),
        "{skips:?}"
    );
    assert!(!has_func(&listing, "on_stack"));
    assert!(has_func(&listing, "entry_a") && has_func(&listing, "entry_b"));
}

/// Where Debian's pahole (1.24) applies the same rules — fixtures without clones or
/// conflicting prototypes — the FUNC sets agree.
#[test]
fn function_sets_match_debian_pahole_on_simple_fixtures() {
    let dir = scratch("funcs_pahole");
    for fx in fixtures() {
        if fx.name.contains("shared") {
            continue; // linked objects carry crt functions pahole 1.24 treats differently
        }
        let ours = dir.join(format!("{}.ours.btf", fx.name));
        let theirs = dir.join(format!("{}.pahole.btf", fx.name));
        assert!(encode(&fx.path, &ours, &[]).status.success());
        let _ = std::fs::remove_file(&theirs);
        run_ok(
            Command::new(oracle_pahole())
                .arg("-J")
                .arg(format!("--btf_encode_detached={}", theirs.display()))
                .arg(&fx.path),
        );
        let d = run(Command::new(bin())
            .args(["diff", "--set", "--only", "funcs"])
            .arg(&ours)
            .arg(&theirs));
        assert!(d.status.success(), "{}: {}", fx.name, text(&d));
    }
}

/// Same input and flags → same bytes, for every -j and every function table design.
#[test]
fn output_identical_for_every_jobs_count_and_table_design() {
    let dir = scratch("matrix");
    let mut inputs: Vec<PathBuf> = fixtures().iter().map(|f| f.path.clone()).collect();
    inputs.push(funcs_so().clone());
    for (n, input) in inputs.iter().enumerate() {
        let mut reference: Option<Vec<u8>> = None;
        for jobs in ["-j1", "-j2", "-j8", "-j64"] {
            for design in ["shared", "dashmap", "save-merge"] {
                let out = dir.join(format!("{n}{jobs}{design}.btf"));
                let o = encode(
                    input,
                    &out,
                    &[KERNEL_FEATURES, jobs, "--func-table", design],
                );
                assert!(o.status.success(), "{}", text(&o));
                let bytes = std::fs::read(&out).unwrap();
                match &reference {
                    None => reference = Some(bytes),
                    Some(r) => assert!(
                        *r == bytes,
                        "{}: {jobs} --func-table={design} differs",
                        input.display()
                    ),
                }
            }
        }
    }
}

/// `-V` reports every dedup phase, in order, with its time; which reference-type phase is
/// reported depends on whether a second thread ordered the reference types.
#[test]
fn verbose_run_reports_the_dedup_phases() {
    for (jobs, reference_phase) in [("-j1", "reference order"), ("-j2", "reference wait")] {
        let out = scratch("funcs_out").join(format!("phases{jobs}.btf"));
        let o = encode(funcs_so(), &out, &[KERNEL_FEATURES, "-V", jobs]);
        assert!(o.status.success(), "{}", text(&o));
        let stderr = String::from_utf8_lossy(&o.stderr);
        let line = stderr
            .lines()
            .find_map(|l| l.strip_prefix("dwarf2btf: dedup phases: "))
            .unwrap_or_else(|| panic!("no dedup phases line in {stderr}"));
        let phases: Vec<(&str, f64)> = line
            .split(", ")
            .map(|p| {
                let (name, secs) = p.rsplit_once(' ').expect("name and time");
                let secs = secs.strip_suffix('s').expect("seconds").parse();
                (name, secs.unwrap_or_else(|e| panic!("{p}: {e}")))
            })
            .collect();
        let names: Vec<&str> = phases.iter().map(|&(n, _)| n).collect();
        assert_eq!(
            names,
            [
                "records",
                "setup",
                "primitives",
                "structs",
                "forward declarations",
                reference_phase,
                "reference classes",
                "compaction"
            ],
            "{line}"
        );
        assert!(phases.iter().all(|&(_, s)| s >= 0.0), "{line}");
    }
}
