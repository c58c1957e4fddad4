//! pahole's command line as kernel builds use it: `--version` as Kconfig reads it, the
//! feature listing, and the order rule between legacy flags and `--btf_features`.

mod common;

use std::process::Command;

use common::*;

fn stdout_of(args: &[&str]) -> String {
    String::from_utf8(run_ok(Command::new(bin()).args(args)).stdout).unwrap()
}

/// scripts/pahole-version.sh: `$(PAHOLE) --version | sed -E 's/v([0-9]+)\.([0-9]+)/\1\2/'`,
/// which Kconfig needs to be a number of at least 116 (DEBUG_INFO_BTF) and 119 (split BTF
/// for modules); from 126 on, Makefile.btf passes --btf_features.
#[test]
fn version_is_what_kconfig_can_read() {
    let script = format!(
        r"{} --version | sed -E 's/v([0-9]+)\.([0-9]+)/\1\2/'",
        bin().display()
    );
    let out = run_ok(Command::new("sh").args(["-c", &script]));
    let number: u32 = String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .expect("pahole-version.sh must yield a number");
    assert!(number >= 126, "{number}");
    assert_eq!(stdout_of(&["--numeric_version"]).trim(), number.to_string());
    assert!(stdout_of(&["version"]).starts_with("dwarf2btf "));
}

/// Every listed feature is accepted by --btf_features_strict, and the features dwarf2btf does
/// not encode are not listed.
#[test]
fn supported_features_are_accepted_strictly() {
    let list = stdout_of(&["--supported_btf_features"]);
    let list = list.trim();
    assert!(list.contains("decl_tag_kfuncs") && list.contains("true_signature"));
    assert!(!list.contains("layout"), "{list}");
    let fixture = &fixtures()[0];
    let out = scratch("cli").join("strict.btf");
    let o = encode(
        &fixture.path,
        &out,
        &[&format!("--btf_features_strict={list}")],
    );
    assert!(o.status.success(), "{}", text(&o));
    let o = encode(
        &fixture.path,
        &out,
        &["--btf_features_strict=float,no_such_feature"],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
}

/// pahole applies feature options in order: the first --btf_features resets every feature,
/// so a legacy flag before it is lost and one after it counts; later lists add to it.
#[test]
fn legacy_flags_before_the_first_feature_list_are_reset() {
    let fixture = &fixtures()[0];
    let dir = scratch("cli");
    let build = |name: &str, flags: &[&str]| {
        let out = dir.join(format!("{name}.btf"));
        let o = encode(&fixture.path, &out, flags);
        assert!(o.status.success(), "{}", text(&o));
        std::fs::read(out).unwrap()
    };
    let plain = build("plain", &["--btf_features=var"]);
    let floats = build("floats", &["--btf_features=var,float"]);
    assert_ne!(plain, floats, "the fixture must have floating-point types");
    assert_eq!(
        build("before", &["--btf_gen_floats", "--btf_features=var"]),
        plain
    );
    assert_eq!(
        build("after", &["--btf_features=var", "--btf_gen_floats"]),
        floats
    );
}

/// `layout` (pahole HEAD: libbpf's kind layout section in base BTF) is not implemented: a run
/// asked for it says so in one stderr line and writes what it writes without it; a strict list
/// naming it fails; split BTF, which pahole writes without the section too, gets no notice.
#[test]
fn layout_is_announced_as_not_implemented() {
    const NOTICE: &str = "dwarf2btf: feature 'layout' is not implemented; encoding without it\n";
    let fixture = &fixtures()[0];
    let dir = scratch("cli");
    let run_with = |name: &str, flags: &[&str]| {
        let out = dir.join(format!("{name}.btf"));
        (encode(&fixture.path, &out, flags), out)
    };
    let (o, plain) = run_with("no-layout", &["--btf_features=default"]);
    assert!(o.status.success() && o.stderr.is_empty(), "{}", text(&o));
    for (name, flags) in [
        ("layout", &["--btf_features=default,layout"][..]),
        (
            "layout-twice",
            &["--btf_features=+layout", "--btf_features=layout"],
        ),
    ] {
        let (o, out) = run_with(name, flags);
        assert!(o.status.success(), "{name}: {}", text(&o));
        assert_eq!(String::from_utf8_lossy(&o.stderr), NOTICE, "{name}");
        assert!(o.stdout.is_empty(), "{name}: {}", text(&o));
        assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&plain).unwrap());
    }
    let (o, out) = run_with("layout-strict", &["--btf_features_strict=default,layout"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "dwarf2btf: feature 'layout' is not implemented; \
         --btf_features_strict refuses to encode without it\n"
    );
    assert!(!out.exists());
    let base = format!("--btf_base={}", plain.display());
    let (o, _) = run_with("layout-split", &["--btf_features=default,layout", &base]);
    assert!(o.status.success() && o.stderr.is_empty(), "{}", text(&o));
}

/// scripts/skip-verdict.sh, which ends scripts/test.sh: under CI=true a check that did not
/// run fails the run (the negative control of "CI cannot pass by skipping"), except the
/// pinned-image comparisons on a fallback kernel; outside CI the list is only printed.
#[test]
fn ci_fails_when_a_required_check_skipped() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/skip-verdict.sh");
    let list = scratch("skip_verdict").join("skipped.txt");
    let verdict = |lines: &str, ci: bool| -> Option<i32> {
        std::fs::write(&list, lines).unwrap();
        let mut cmd = Command::new(script);
        cmd.arg(&list).env_remove("CI");
        if ci {
            cmd.env("CI", "true");
        }
        run(&mut cmd).status.code()
    };
    let required = "btf_load: kernel_accepts_deduplicated_vmlinux_btf: not root\n";
    let pinned = "kernel: needs pahole HEAD's output for the pinned image (build ID 01d2), and x has build ID none\n";
    assert_eq!(verdict(required, true), Some(1));
    assert_eq!(verdict(&format!("{pinned}{required}"), true), Some(1));
    assert_eq!(verdict(required, false), Some(0));
    assert_eq!(verdict(pinned, true), Some(0));
    assert_eq!(verdict("", true), Some(0));
}

/// The tests' command runner (tests/common's `run`) kills a command that outlives its limit
/// and fails the test, instead of letting a hang stall the suite.
#[test]
fn a_hung_command_fails_its_test() {
    let start = std::time::Instant::now();
    let outcome = std::panic::catch_unwind(|| {
        run_within(
            Command::new("sleep").arg("30"),
            std::time::Duration::from_millis(300),
        )
    });
    let message = outcome.expect_err("the command outlived its limit and still passed");
    let message = message
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_default();
    assert!(message.contains("was killed"), "{message}");
    assert!(start.elapsed() < std::time::Duration::from_secs(10));
}
