//! `verify` for the kernels a file is meant for: the layout-aware header rules of Linux 7.1 and
//! later (32-byte header, kind layout section) against the 24-byte header of the kernels
//! before, on pahole HEAD's BTF with `layout` and on hand-made variants of its header and
//! sections; the 7.2 build's BTF, whose attribute type tags need 6.15's type rules; and the
//! readers (`read`, `dump`, `diff`) on the 32-byte header.

use crate::common::layout_cases;

use dwarf2btf::btf::{read, write, Kind};
use dwarf2btf::toolbox::verify::{self, HeaderRules, Problem, Target};
use dwarf2btf::toolbox::{canon, dump};

fn linux(version: &str) -> Target {
    Target::Kernel(version.parse().unwrap())
}

fn rules_of(p: &[Problem]) -> Vec<&'static str> {
    p.iter().map(|p| p.rule).collect()
}

/// The problems of `data` for `target`: none, or exactly one of rule `rule`.
#[track_caller]
fn assert_verdict(what: &str, data: &[u8], target: Target, rule: Option<&str>) {
    let p = verify::judge(data, None, target).problems;
    let expected: Vec<&str> = rule.into_iter().collect();
    assert_eq!(rules_of(&p), expected, "{what}, {target:?}: {p:#?}");
}

/// pahole HEAD's BTF of the reference vmlinux with `layout`: valid for 7.1 and later, one
/// clear header problem for the kernels before, and on its own header judged by the newer
/// rules with the older kernels' problem beside the verdict.
#[test]
fn pahole_head_layout_file_is_valid_from_7_1_on() {
    let data = std::fs::read(crate::common::oracle_layout_btf()).unwrap();
    for version in ["7.1", "7.2", "8.0"] {
        assert_verdict("pahole HEAD layout", &data, linux(version), None);
    }
    for version in ["6.1", "6.18", "7.0"] {
        let p = verify::judge(&data, None, linux(version)).problems;
        assert_eq!(rules_of(&p), ["H2-hdr-extra"], "{version}: {p:#?}");
        assert!(
            p[0].message.starts_with("header byte 24 is non-zero"),
            "{}",
            p[0]
        );
    }
    let own = verify::judge(&data, None, Target::OwnHeader);
    assert_eq!(own.rules, HeaderRules::Layout);
    assert!(own.valid(), "{:#?}", own.problems);
    assert_eq!(rules_of(&own.before_layout), ["H2-hdr-extra"]);
    assert!(verify::verify_bytes(&data, None).is_empty());
}

/// pahole's BTF without `layout` (pahole 1.32's, with the 24-byte header) is taken by every
/// kernel, so no note about older kernels.
#[test]
fn pahole_file_without_layout_is_valid_everywhere() {
    let data = std::fs::read(crate::common::oracle_btf()).unwrap();
    for version in ["6.1", "7.2"] {
        assert_verdict("pahole 1.32", &data, linux(version), None);
    }
    let own = verify::judge(&data, None, Target::OwnHeader);
    assert!(own.valid() && own.before_layout.is_empty(), "{own:#?}");
}

/// The 7.2 build's BTF as pahole HEAD wrote it, with `attributes`: the arena kfuncs'
/// `address_space(1)` pointers give TYPE_TAGs with kind_flag 1. The booted 7.2 kernel took
/// both files, and so does verify for 7.2 and on their own (32-byte) headers. With the 24-byte
/// header instead, so that only the type rules differ, kernels before 6.15 reject exactly those
/// tags, and 6.15 and later take them.
#[test]
fn kernel_build_7_2_oracle_is_valid_for_7_2() {
    for which in ["vmlinux", "tmp_vmlinux1"] {
        let data = std::fs::read(crate::common::oracle_kernel_build_7_2(which)).unwrap();
        assert_verdict(which, &data, linux("7.2"), None);
        let own = verify::judge(&data, None, Target::OwnHeader);
        assert!(own.valid(), "{which}: {:#?}", own.problems);

        let btf = read::parse(&data, None).unwrap();
        let attribute_tags = (1..btf.type_cnt())
            .filter(|&id| {
                let t = btf.type_by_id(id).unwrap();
                t.kind() == Some(Kind::TypeTag) && t.kflag()
            })
            .count();
        assert!(attribute_tags > 0, "{which}: no TYPE_TAG with kind_flag 1");
        let classic = write::to_bytes(&btf);
        for version in ["6.1", "6.14"] {
            let p = verify::judge(&classic, None, linux(version)).problems;
            assert_eq!(p.len(), attribute_tags, "{which}, {version}: {p:#?}");
            assert!(p.iter().all(|p| p.rule == "M6-kflag"
                && p.message
                    .starts_with("TYPE_TAG 'address_space(1)': kind_flag must be 0")));
        }
        for version in ["6.15", "7.0", "7.2"] {
            assert_verdict(which, &classic, linux(version), None);
        }
    }
}

/// Each hand-made variant breaks the rule expected of it, and only that one, for 7.2 and for
/// 6.18 (whose header rules are 6.1's); the valid ones pass.
#[test]
fn header_and_section_variants_break_the_expected_rule() {
    let cases = layout_cases::cases();
    assert!(cases.iter().any(|c| c.layout_rule.is_none()));
    assert!(cases.iter().any(|c| c.classic_rule.is_none()));
    for c in &cases {
        assert_verdict(c.name, &c.data, linux("7.2"), c.layout_rule);
        assert_verdict(c.name, &c.data, linux("6.18"), c.classic_rule);
    }
}

/// Without a target, a 32-byte header is judged by 7.1's rules and a shorter one by 6.1's.
#[test]
fn own_header_picks_the_rules() {
    for c in layout_cases::cases() {
        let own = verify::judge(&c.data, None, Target::OwnHeader);
        let hdr_len = u32::from_ne_bytes(c.data[4..8].try_into().unwrap());
        let (rules, rule) = if hdr_len >= 32 {
            (HeaderRules::Layout, c.layout_rule)
        } else {
            (HeaderRules::Classic, c.classic_rule)
        };
        assert_eq!(own.rules, rules, "{}", c.name);
        let expected: Vec<&str> = rule.into_iter().collect();
        assert_eq!(rules_of(&own.problems), expected, "{}", c.name);
        let before: Vec<&str> = if rules == HeaderRules::Layout {
            c.classic_rule.into_iter().collect()
        } else {
            Vec::new()
        };
        assert_eq!(rules_of(&own.before_layout), before, "{}", c.name);
    }
}

/// The readers skip the layout section: pahole's BTF with and without `layout` (pahole 1.32's
/// sections in pahole HEAD's header and layout section, `compare::with_layout_of`) read as the
/// same types and strings, list the same, and `diff` finds them equal.
#[test]
fn readers_take_the_layout_header() {
    let plain = std::fs::read(crate::common::oracle_btf()).unwrap();
    let with_layout = crate::common::compare::with_layout_of(
        &std::fs::read(crate::common::oracle_layout_btf()).unwrap(),
        &plain,
    );
    let with = read::parse(&with_layout, None).unwrap();
    let without = read::parse(&plain, None).unwrap();
    assert_eq!(with.type_words(), without.type_words());
    assert_eq!(with.strings().as_bytes(), without.strings().as_bytes());
    let listing = |btf| {
        let mut out = Vec::new();
        dump::dump(btf, &mut out).unwrap();
        out
    };
    assert_eq!(listing(&with), listing(&without));
    let report = canon::diff(
        &with,
        &without,
        &canon::DiffOptions {
            set: false,
            categories: canon::Category::ALL.to_vec(),
            max_shown: 5,
            fold_fwd: false,
        },
    );
    assert!(report.equal, "{report}");
}

/// `dwarf2btf verify` on pahole HEAD's layout file: one problem line and exit 1 for 6.18,
/// valid for 7.2, and on its own header valid for 7.1 and later with the older kernels'
/// problem beside it; a bad release is a usage error.
#[test]
fn verify_command_says_for_which_kernels() {
    let file = crate::common::oracle_layout_btf();
    let verify = |args: &[&str]| {
        let o = crate::common::run(
            std::process::Command::new(crate::common::bin())
                .arg("verify")
                .args(args)
                .arg(&file),
        );
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        (
            o.status.code(),
            out.lines().map(String::from).collect::<Vec<_>>(),
        )
    };
    let name = file.display().to_string();
    let (code, lines) = verify(&["--kernel-version", "6.18"]);
    assert_eq!(code, Some(1), "{lines:?}");
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].starts_with(&format!("{name}: header H2-hdr-extra: header byte 24")));
    let (code, lines) = verify(&["--kernel-version", "7.2"]);
    assert_eq!(
        (code, lines),
        (Some(0), vec![format!("{name}: valid BTF for Linux 7.2")])
    );
    let (code, lines) = verify(&[]);
    assert_eq!(code, Some(0), "{lines:?}");
    assert_eq!(
        lines[0],
        format!("{name}: valid BTF for Linux 7.1 and later")
    );
    let before = format!("{name}: kernels before 7.1 reject it: header H2-hdr-extra: ");
    assert!(
        lines.len() == 2 && lines[1].starts_with(&before),
        "{lines:?}"
    );
    let (code, _) = verify(&["--kernel-version", "7"]);
    assert_eq!(code, Some(2));
}
