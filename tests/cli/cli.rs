//! pahole's command line as kernel builds use it: `--version` as Kconfig reads it, the
//! feature listing, and the order rule between legacy flags and `--btf_features`.

use std::process::Command;

use crate::common::*;

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
    // The release whose output the tests compare with (tests/data/*pahole-1.32*).
    assert_eq!(number, 132);
    assert_eq!(stdout_of(&["--numeric_version"]).trim(), number.to_string());
    assert!(stdout_of(&["version"]).starts_with("dwarf2btf "));
}

/// `--supported_btf_features` prints what pahole 1.32 prints (tests/data) and `layout`, which
/// Debian's pahole 1.32 lacks only because it is built against libbpf 1.7.0, and every listed
/// feature is accepted by --btf_features_strict.
#[test]
fn supported_features_are_accepted_strictly() {
    let list = stdout_of(&["--supported_btf_features"]);
    let list = list.trim();
    let pahole = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/pahole-1.32.supported_btf_features.txt"
    );
    let expected = format!("{},layout", std::fs::read_to_string(pahole).unwrap().trim());
    assert_eq!(list, expected);
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
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}

/// The first fixture encoded with `flags` into `NAME.btf` in the CLI scratch directory, which
/// must succeed; its bytes.
fn build(name: &str, flags: &[&str]) -> Vec<u8> {
    let out = scratch("cli").join(format!("{name}.btf"));
    let o = encode(&fixtures()[0].path, &out, flags);
    assert!(o.status.success(), "{}", text(&o));
    std::fs::read(out).unwrap()
}

/// `--features` is pahole 1.32's other spelling of `--btf_features`, and `force_cu_merging`
/// (one CU for the whole input, in pahole) leaves the output as it is.
#[test]
fn features_spelling_and_force_cu_merging() {
    let plain = build("btf-features", &["--btf_features=var,float"]);
    assert_ne!(plain, build("var-only", &["--btf_features=var"]));
    assert_eq!(build("features", &["--features=var,float"]), plain);
    assert_eq!(
        build(
            "merging",
            &["--btf_features_strict=var,float,force_cu_merging"]
        ),
        plain
    );
}

/// pahole applies feature options in order: the first --btf_features resets every feature,
/// so a legacy flag before it is lost and one after it counts; later lists add to it.
#[test]
fn legacy_flags_before_the_first_feature_list_are_reset() {
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

/// `layout`, as pahole HEAD writes it through libbpf 1.8: base BTF gets the 32-byte header and
/// the 80-byte kind layout section between the types and the strings, split BTF the 32-byte
/// header with zero layout fields; the type and string sections are those written without it
/// (the 24-byte header), and nothing is said on stderr. The kernel's own check is
/// `kernel_layout_matches_pahole`, against pahole's output.
#[test]
fn layout_writes_libbpf_1_8s_header_and_kind_layouts() {
    use dwarf2btf::btf::read;
    let fixture = &fixtures()[0];
    let dir = scratch("cli");
    let run_with = |name: &str, flags: &[&str]| {
        let out = dir.join(format!("{name}.btf"));
        let o = encode(&fixture.path, &out, flags);
        assert!(
            o.status.success() && o.stderr.is_empty(),
            "{name}: {}",
            text(&o)
        );
        std::fs::read(out).unwrap()
    };
    // (hdr_len, layout_off, layout_len) and the type + string sections.
    let parts = |data: &[u8]| {
        let h = read::parse_header(data).unwrap();
        let word = |at: usize| u32::from_le_bytes(data[at..at + 4].try_into().unwrap());
        let layout = if h.hdr_len >= 32 {
            (word(24), word(28))
        } else {
            (0, 0)
        };
        let body = &data[h.hdr_len as usize..];
        let section = |off: u32, len: u32| body[off as usize..(off + len) as usize].to_vec();
        (
            (h.hdr_len, layout.0, layout.1),
            section(h.type_off, h.type_len),
            section(h.str_off, h.str_len),
        )
    };
    let plain = run_with("no-layout", &["--btf_features=default"]);
    let (head, types, strings) = parts(&plain);
    assert_eq!(head, (24, 0, 0));
    for (name, flags) in [
        ("layout", &["--btf_features=default,layout"][..]),
        ("layout-strict", &["--btf_features_strict=default,layout"]),
        (
            "layout-twice",
            &["--btf_features=+layout", "--btf_features=layout"],
        ),
    ] {
        let data = run_with(name, flags);
        let (head, t, s) = parts(&data);
        let type_len = types.len() as u32;
        assert_eq!(head, (32, type_len, 80), "{name}");
        assert_eq!((t, s), (types.clone(), strings.clone()), "{name}");
        // INT: 4 bytes after the record; STRUCT: 12 per member (libbpf's layouts[]).
        let layouts = &data[32 + type_len as usize..][..80];
        assert_eq!(
            (&layouts[4..6], &layouts[16..18]),
            (&[4, 0][..], &[0, 12][..])
        );
    }
    let base = dir.join("no-layout.btf");
    let base = format!("--btf_base={}", base.display());
    let split = run_with("layout-split", &["--btf_features=default,layout", &base]);
    let split_plain = run_with("split", &["--btf_features=default", &base]);
    let ((head, t, s), (plain_head, pt, ps)) = (parts(&split), parts(&split_plain));
    assert_eq!((head, plain_head), ((32, 0, 0), (24, 0, 0)));
    assert_eq!((t, s), (pt, ps));
}

/// scripts/check/skip-verdict.sh, which ends scripts/test.sh: under CI=true a check that did not
/// run fails the run (the negative control of "CI cannot pass by skipping"), except the
/// pinned-image comparisons on a fallback kernel; outside CI the list is only printed.
#[test]
fn ci_fails_when_a_required_check_skipped() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/check/skip-verdict.sh");
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
    let pinned = "kernel: needs pahole's output for the pinned image (build ID 01d2), and x has build ID none\n";
    assert_eq!(verdict(required, true), Some(1));
    assert_eq!(verdict(&format!("{pinned}{required}"), true), Some(1));
    assert_eq!(verdict(required, false), Some(0));
    assert_eq!(verdict(pinned, true), Some(0));
    assert_eq!(verdict("", true), Some(0));
    // A kernel build's comparison with pahole no longer skips when its oracle's inputs
    // differ (pahole 1.32 runs on the build): a skip of it is a failure like any other.
    let build = "kernel-build.sh 7.2: vmlinux BTF vs pahole skipped: needs pahole's output for these inputs\n";
    assert_eq!(verdict(build, true), Some(1));
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
