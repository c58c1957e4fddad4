//! `--json` of `verify`, `diff`, `dump` and `why`: one JSON document on stdout (parsed here
//! with serde_json), the exit status the text form's, and the content checked against an
//! independent answer: bpftool's listing for `dump`, the text output and exit status for
//! `verify`, `diff` and `why`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use crate::common::*;

/// Runs the binary with `args`, returning its output and stdout parsed as JSON.
fn json_of(args: &[&std::ffi::OsStr]) -> (Output, Value) {
    let o = run(Command::new(bin()).args(args));
    let doc = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("stdout is not one JSON document ({e}):\n{}", text(&o)));
    (o, doc)
}

/// The first fixture's BTF and a copy with one member's type corrupted.
fn sample_btfs() -> (PathBuf, PathBuf) {
    let (_, good) = fixture_btf_files("cli_json").swap_remove(0);
    let bad = good.with_extension("corrupted.btf");
    let data = std::fs::read(&good).unwrap();
    std::fs::write(&bad, corrupt_member_type(&data, false)).unwrap();
    (good, bad)
}

fn os(s: &str) -> &std::ffi::OsStr {
    s.as_ref()
}

#[test]
fn dump_json_counts_equal_bpftools_listing() {
    for (name, btf) in fixture_btf_files("cli_json") {
        let (o, doc) = json_of(&[os("dump"), os("--json"), btf.as_os_str()]);
        assert!(o.status.success(), "{name}: {}", text(&o));
        let listing = run_ok(
            Command::new(tool("bpftool"))
                .args(["btf", "dump", "file"])
                .arg(&btf),
        );
        let mut expected: BTreeMap<String, u64> = BTreeMap::new();
        for line in String::from_utf8_lossy(&listing.stdout).lines() {
            if let Some(kind) = line
                .strip_prefix('[')
                .and_then(|l| l.split_whitespace().nth(1))
            {
                *expected.entry(kind.to_owned()).or_default() += 1;
            }
        }
        let counts: BTreeMap<String, u64> = doc["counts"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v.as_u64().unwrap()))
            .collect();
        assert_eq!(
            counts, expected,
            "{name}: per-kind counts against bpftool's listing"
        );
        let types = doc["types"].as_array().unwrap();
        assert_eq!(types.len() as u64, expected.values().sum::<u64>(), "{name}");
        assert_eq!(types[0]["id"], 1, "{name}: the first type is id 1");
    }
}

#[test]
fn verify_json_says_what_the_text_and_the_exit_status_say() {
    let (good, bad) = sample_btfs();
    for (file, valid) in [(&good, true), (&bad, false)] {
        let (o, doc) = json_of(&[os("verify"), os("--json"), file.as_os_str()]);
        let plain = run(Command::new(bin()).arg("verify").arg(file));
        assert_eq!(o.status.code(), plain.status.code(), "{}", text(&o));
        assert_eq!(o.status.success(), valid, "{}", text(&o));
        assert_eq!(doc["verdict"], if valid { "valid" } else { "invalid" });
        let problems = doc["problems"].as_array().unwrap();
        assert_eq!(problems.is_empty(), valid);
        let plain = String::from_utf8_lossy(&plain.stdout).into_owned();
        for p in problems {
            let (rule, message) = (p["rule"].as_str().unwrap(), p["message"].as_str().unwrap());
            assert!(
                plain.contains(rule) && plain.contains(message),
                "{rule}: {message} is not in the text output:\n{plain}"
            );
        }
    }
    let release = [
        os("verify"),
        os("--json"),
        os("--kernel-version=4.17"),
        good.as_os_str(),
    ];
    let (o, doc) = json_of(&release);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert_eq!(doc["kernel_version"], "4.17");
}

fn diff_args<'p>(a: &'p Path, b: &'p Path) -> [&'p std::ffi::OsStr; 4] {
    [os("diff"), os("--json"), a.as_os_str(), b.as_os_str()]
}

#[test]
fn diff_json_lists_the_differences_the_text_lists() {
    let (good, bad) = sample_btfs();
    let (same, doc) = json_of(&diff_args(&good, &good));
    assert!(same.status.success(), "{}", text(&same));
    assert_eq!(doc["equal"], true);
    assert_eq!(doc["differences"].as_array().unwrap().len(), 0);

    let (o, doc) = json_of(&diff_args(&good, &bad));
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert_eq!(doc["equal"], false);
    assert_eq!(doc["a"], good.display().to_string());
    let plain = run(Command::new(bin()).arg("diff").arg(&good).arg(&bad));
    let plain = String::from_utf8_lossy(&plain.stdout).into_owned();
    let differences = doc["differences"].as_array().unwrap();
    assert!(!differences.is_empty());
    for d in differences {
        let item = d["item"].as_str().unwrap();
        let first_line = item.lines().next().unwrap();
        assert!(
            plain.contains(first_line),
            "{first_line} is not in the text diff:\n{plain}"
        );
    }
    assert_eq!(
        doc["differing_items"].as_u64().unwrap() as usize,
        differences.len()
    );
}

#[test]
fn why_json_answers_as_the_text_does() {
    let (good, _) = sample_btfs();
    let fixture = fixtures()
        .iter()
        .find(|f| good.file_stem().is_some_and(|s| s == f.name))
        .expect("the sample's fixture");
    let btf = std::fs::read(&good).unwrap();
    let btf = dwarf2btf::btf::read::parse(&btf, None).unwrap();
    let func = (btf.start_id()..)
        .zip(btf.own_types())
        .find(|(_, t)| t.kind() == Some(dwarf2btf::btf::Kind::Func))
        .map(|(_, t)| btf.name(t.name_off()).into_owned())
        .expect("a FUNC in the fixture's BTF");
    let names = [func.as_str(), "no_such_function"];
    let mut args = vec![os("why"), os("--json")];
    args.extend(names.iter().map(|n| os(n)));
    args.extend([fixture.path.as_os_str(), os(KERNEL_FEATURES)]);
    let (o, doc) = json_of(&args);
    let mut plain_args: Vec<&std::ffi::OsStr> = args.clone();
    plain_args.retain(|a| *a != "--json");
    let plain = run(Command::new(bin()).args(&plain_args));
    assert_eq!(o.status.code(), Some(1), "an unknown name: {}", text(&o));
    assert_eq!(o.status.code(), plain.status.code());
    let functions = doc["functions"].as_array().unwrap();
    assert_eq!(functions.len(), 2);
    let plain = String::from_utf8_lossy(&plain.stdout).into_owned();
    for f in functions {
        let answer = f["answer"].as_str().unwrap();
        assert!(
            plain.contains(answer),
            "{answer} is not in the text:\n{plain}"
        );
    }
    assert_eq!(functions[0]["encoded"], true, "{func} is a FUNC of the BTF");
    assert_eq!(functions[1]["unknown"], true);
}
