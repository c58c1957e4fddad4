//! The messages and exit codes a user meets when a command line goes wrong: each common slip
//! gets one `dwarf2btf: ` line saying what happened and what to type, and every error exits 2
//! (as diff and cmp do), apart from the answers 0 and 1.

use std::process::{Command, Output};

use crate::common::*;

/// Runs dwarf2btf with `args`: the exit code and the one line on stderr (asserted to be the
/// only one, starting `dwarf2btf: `).
fn one_line(args: &[&str]) -> (Option<i32>, String) {
    let o: Output = run(Command::new(bin()).args(args));
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{args:?}: {stderr}");
    assert!(lines[0].starts_with("dwarf2btf: "), "{args:?}: {stderr}");
    assert!(o.stdout.is_empty(), "{args:?}: {}", text(&o));
    (o.status.code(), lines[0].to_string())
}

/// A fixture object and its BTF, for the commands to refer to.
fn inputs() -> (String, String) {
    let files = fixture_btf_files("cli_messages");
    let obj = fixtures()[0].path.display().to_string();
    (obj, files[0].1.display().to_string())
}

/// `-j 4 FILE`, the slip of anyone sweeping -j: pahole's -j takes its count attached.
#[test]
fn a_detached_job_count_is_explained() {
    let (obj, _) = inputs();
    for (args, attached) in [
        (vec!["-J", "-j", "4", &obj], "(-j4)"),
        (vec!["-J", "--jobs", "16", &obj], "(--jobs=16)"),
    ] {
        let (code, line) = one_line(&args);
        assert_eq!(code, Some(2), "{line}");
        assert!(
            line.contains("thread count must be attached") && line.contains(attached),
            "{line}"
        );
    }
}

/// A mistyped subcommand is named with the one meant.
#[test]
fn a_mistyped_subcommand_gets_did_you_mean() {
    let (_, btf) = inputs();
    for (typed, meant) in [("verfy", "verify"), ("dupm", "dump"), ("dif", "diff")] {
        let (code, line) = one_line(&[typed, &btf]);
        assert_eq!(code, Some(2), "{line}");
        assert!(line.contains(&format!("did you mean '{meant}'")), "{line}");
    }
}

/// `why NAME` without FILE says that FILE is missing (not the names).
#[test]
fn why_without_a_file_names_the_file() {
    let (code, line) = one_line(&["why", "vfs_read"]);
    assert_eq!(code, Some(2), "{line}");
    assert!(line.contains("FILE is missing"), "{line}");
}

/// A base that cannot be used names the flag, whichever spelling was typed and whichever
/// command took it.
#[test]
fn a_bad_base_names_the_flag() {
    let (obj, btf) = inputs();
    let missing = scratch("cli_messages_base").join("no-such-base");
    let missing = missing.display().to_string();
    let detached = format!(
        "--btf_encode_detached={}",
        scratch("cli_messages_base").join("out.btf").display()
    );
    for args in [
        vec!["verify", "--base", &missing, &btf],
        vec!["verify", "--btf_base", &missing, &btf],
        vec!["dump", "--base", &missing, &btf],
        vec!["diff", "--btf_base", &missing, &btf, &btf],
        vec!["-J", &detached, "--btf_base", &missing, &obj],
    ] {
        let (code, line) = one_line(&args);
        assert_eq!(code, Some(2), "{args:?}: {line}");
        assert!(
            line.contains(&format!("--btf_base {missing}: not usable as base BTF")),
            "{args:?}: {line}"
        );
    }
}

/// Answers exit 0 or 1, trouble exits 2: a missing input, a directory, an unknown option.
#[test]
fn trouble_exits_2() {
    let (_, btf) = inputs();
    let missing = scratch("cli_messages_exit").join("no-such-file");
    let missing = missing.display().to_string();
    for args in [
        vec!["-J", missing.as_str()],
        vec!["verify", missing.as_str()],
        vec!["dump", "/"],
    ] {
        let (code, line) = one_line(&args);
        assert_eq!(code, Some(2), "{args:?}: {line}");
    }
    let o = run(Command::new(bin()).args(["--no-such-option", &btf]));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let o = run(Command::new(bin()).args(["verify", &btf]));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = run(Command::new(bin()).args(["verify", "--kernel-version", "5.4", &btf]));
    assert!(matches!(o.status.code(), Some(1 | 2)), "{}", text(&o));
}

/// `--help` states the exit codes, and every argument of every subcommand has help text.
#[test]
fn help_lists_exit_codes_and_documents_every_argument() {
    let help = String::from_utf8(run_ok(Command::new(bin()).arg("--help")).stdout).unwrap();
    assert!(help.contains("Exit status: 0"), "{help}");
    for sub in ["verify", "diff", "dump", "why"] {
        let o = run_ok(Command::new(bin()).args([sub, "-h"]));
        let text = String::from_utf8(o.stdout).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let is_arg = |l: &str| {
            let t = l.trim_start();
            t.starts_with('<') || t.starts_with('-')
        };
        // Help beside the argument, or on the next line (clap's layout when names are long).
        let undocumented: Vec<&str> = lines
            .iter()
            .enumerate()
            .filter(|(i, l)| {
                let t = l.trim_start();
                is_arg(l)
                    && !t.starts_with("-h, --help")
                    && !t.contains("  ")
                    && !lines
                        .get(i + 1)
                        .is_some_and(|n| !n.trim().is_empty() && !is_arg(n))
            })
            .map(|(_, l)| *l)
            .collect();
        assert!(undocumented.is_empty(), "{sub}: {undocumented:?}\n{text}");
    }
}

/// `-q` prints nothing but errors: the note that an input without DWARF gives nothing to
/// encode is gone, the exit status is the same; `-q` with `-V` is a usage error.
#[test]
fn quiet_keeps_stderr_empty() {
    let dir = scratch("cli_messages_quiet");
    let obj = dir.join("nodwarf.o");
    let src = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/nodwarf.c");
    run_ok(Command::new(tool("gcc")).args(["-c", src, "-o"]).arg(&obj));
    let out = dir.join("out.btf");
    let noisy = encode(&obj, &out, &[]);
    assert!(!noisy.stderr.is_empty(), "{}", text(&noisy));
    let quiet = encode(&obj, &out, &["-q"]);
    assert_eq!(quiet.status.code(), noisy.status.code(), "{}", text(&quiet));
    assert!(quiet.stderr.is_empty(), "{}", text(&quiet));
    let both = encode(&obj, &out, &["-q", "-V"]);
    assert_eq!(both.status.code(), Some(2), "{}", text(&both));
}

/// `--help` of the command and of every subcommand fits 100 columns.
#[test]
fn help_fits_100_columns() {
    for args in [
        vec!["--help"],
        vec!["verify", "--help"],
        vec!["diff", "--help"],
        vec!["dump", "--help"],
        vec!["why", "--help"],
    ] {
        let o = run_ok(Command::new(bin()).args(&args).env_remove("COLUMNS"));
        let help = String::from_utf8(o.stdout).unwrap();
        let long: Vec<&str> = help.lines().filter(|l| l.chars().count() > 100).collect();
        assert!(long.is_empty(), "{args:?}: {long:#?}");
    }
}

/// `diff` names its sides and, with `--all`, lists every differing item.
#[test]
fn diff_names_its_sides_and_lists_all_on_request() {
    let files = fixture_btf_files("cli_messages_diff");
    let (a, b) = (&files[0].1, &files.last().unwrap().1);
    let diff = |extra: &[&str]| {
        let o = run(Command::new(bin()).arg("diff").args(extra).arg(a).arg(b));
        assert_eq!(o.status.code(), Some(1), "{}", text(&o));
        String::from_utf8(o.stdout).unwrap()
    };
    let capped = diff(&[]);
    assert!(
        capped.starts_with(&format!("A: {}\nB: {}\n", a.display(), b.display())),
        "{capped}"
    );
    let all = diff(&["--all"]);
    let items = |s: &str| {
        s.lines()
            .filter(|l| l.starts_with("- [") || l.starts_with("+ ["))
            .count()
    };
    assert!(
        capped.contains("more differing items (--all shows them)"),
        "{capped}"
    );
    assert!(!all.contains("more differing items"), "{all}");
    assert!(items(&all) > items(&capped), "{all}");
}

/// Split BTF given without its base: one line asking for it, for every command that reads BTF.
#[test]
fn split_btf_without_its_base_asks_for_it() {
    let dir = scratch("cli_messages_split");
    let fx = &fixtures()[0];
    let base = dir.join("base.btf");
    let o = encode(&fx.path, &base, &[]);
    assert!(o.status.success(), "{}", text(&o));
    let module = dir.join("module.o");
    let src = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/module.c");
    run_ok(
        Command::new(tool("gcc"))
            .args(["-g", "-c", src, "-o"])
            .arg(&module),
    );
    let split = dir.join("split.btf");
    let o = encode(
        &module,
        &split,
        &[&format!("--btf_base={}", base.display())],
    );
    assert!(o.status.success(), "{}", text(&o));
    let split = split.display().to_string();
    for args in [
        vec!["verify", &split],
        vec!["dump", &split],
        vec!["diff", &split, &split],
    ] {
        let (code, line) = one_line(&args);
        assert_eq!(code, Some(2), "{args:?}: {line}");
        assert!(
            line.contains("looks like split BTF") && line.contains("--btf_base"),
            "{line}"
        );
    }
}

/// The completion scripts are generated and name the subcommands (bash's parses with
/// `bash -n`); the man page renders with `man -l` and documents the options.
#[test]
fn completions_and_man_page() {
    let dir = scratch("cli_messages_man");
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let o = run_ok(Command::new(bin()).args(["completions", shell]));
        let script = String::from_utf8(o.stdout).unwrap();
        assert!(
            script.contains("verify") && script.contains("btf_encode_detached"),
            "{shell}"
        );
        if shell == "bash" {
            let file = dir.join("dwarf2btf.bash");
            std::fs::write(&file, &script).unwrap();
            run_ok(Command::new("bash").arg("-n").arg(&file));
        }
    }
    let page = run_ok(Command::new(bin()).arg("man")).stdout;
    let file = dir.join("dwarf2btf.1");
    std::fs::write(&file, page).unwrap();
    let o = run_ok(
        Command::new(tool("man"))
            .args(["-l", "-P", "cat"])
            .arg(&file)
            .env("MANWIDTH", "100"),
    );
    // man justifies lines with extra spaces: compare with single spaces.
    let rendered = String::from_utf8_lossy(&o.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    for needle in [
        "dwarf2btf",
        "btf_encode_detached",
        "btf_features",
        "verify",
        "Exit status",
    ] {
        assert!(rendered.contains(needle), "{needle} missing:\n{rendered}");
    }
}

/// A module's split .BTF is not replaced in place by standalone BTF when --btf_base is
/// forgotten (refused, the file untouched; `--standalone` does it anyway), and a `.ko`
/// encoded without a base is warned about.
#[test]
fn a_module_without_its_base_is_refused_in_place_and_warned_about() {
    let dir = scratch("cli_messages_module");
    let fx = &fixtures()[0];
    let base = dir.join("base.btf");
    assert!(encode(&fx.path, &base, &[]).status.success());
    let src = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/module.c");
    let module = dir.join("module.ko");
    run_ok(
        Command::new(tool("gcc"))
            .args(["-g", "-c", src, "-o"])
            .arg(&module),
    );
    let in_place = |flags: &[&str]| run(Command::new(bin()).arg("-J").args(flags).arg(&module));
    let o = in_place(&[&format!("--btf_base={}", base.display())]);
    assert!(o.status.success(), "{}", text(&o));
    let split = std::fs::read(&module).unwrap();
    let (code, line) = one_line(&["-J", &module.display().to_string()]);
    assert_eq!(code, Some(2), "{line}");
    assert!(
        line.contains("is split BTF") && line.contains("--standalone"),
        "{line}"
    );
    assert_eq!(
        std::fs::read(&module).unwrap(),
        split,
        "the module was changed"
    );
    let o = in_place(&["--standalone"]);
    assert!(o.status.success() && o.stderr.is_empty(), "{}", text(&o));
    let o = run(Command::new(bin()).arg("verify").arg(&module));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let detached = format!("--btf_encode_detached={}", dir.join("m.btf").display());
    let o = run(Command::new(bin()).arg(&detached).arg(&module));
    assert!(o.status.success(), "{}", text(&o));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains("warning") && stderr.contains("no --btf_base"),
        "{stderr}"
    );
}
