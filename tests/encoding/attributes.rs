//! The `attributes` BTF feature against pahole HEAD: `tests/fixtures/arena_kfuncs.c`, a
//! `.BTF_ids` set8 of arena-like kfuncs with the kernel's `KF_ARENA_RET`/`ARG1`/`ARG2` flags,
//! compiled once by clang into the committed `tests/data/attributes/arena_kfuncs.o` (so the
//! input does not follow the installed compiler), is encoded with the kernel's features and
//! `attributes`, and compared with pahole HEAD's output for the same object
//! (`tests/data/README.md`): each flagged pointer becomes `PTR → TYPE_TAG(kind_flag 1,
//! "address_space(1)") → pointee`. Without `layout` the type and string sections are compared
//! (the header is 24 bytes here, 32 in libbpf 1.8's output, by design); with `layout`, the whole
//! file. Then `verify` by release: the attribute tags need 6.15's type rules.

use std::path::{Path, PathBuf};

use crate::common::*;
use dwarf2btf::btf::{read, Kind};
use dwarf2btf::toolbox::verify::{self, Target};

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/attributes");

fn data(name: &str) -> PathBuf {
    Path::new(DATA).join(name)
}

/// Encodes the committed object with the kernel's features plus `extra`, at `-j{jobs}`.
fn encode_fixture(name: &str, extra: &str, jobs: u32) -> Vec<u8> {
    let out = scratch("attributes").join(format!("{name}-j{jobs}.btf"));
    let features = format!("{KERNEL_FEATURES}{extra}");
    let jobs = format!("-j{jobs}");
    let o = encode(
        &data("arena_kfuncs.o"),
        &out,
        &[&features, "--lang_exclude=rust", &jobs],
    );
    assert!(o.status.success() && o.stderr.is_empty(), "{}", text(&o));
    std::fs::read(&out).unwrap()
}

/// The TYPE_TAGs of raw BTF: (value, kind_flag).
fn type_tags(data: &[u8]) -> Vec<(String, bool)> {
    let btf = read::parse(data, None).unwrap();
    (1..btf.type_cnt())
        .map(|id| btf.type_by_id(id).unwrap())
        .filter(|t| t.kind() == Some(Kind::TypeTag))
        .map(|t| (btf.name(t.name_off()).to_string(), t.kflag()))
        .collect()
}

/// Against pahole 1.32's output (and pahole HEAD's, whose sections are the same bytes).
#[test]
fn arena_kfuncs_equal_paholes_output() {
    let oracle = std::fs::read(data("arena_kfuncs.pahole-1.32.btf")).unwrap();
    let head = std::fs::read(data("arena_kfuncs.pahole-head.btf")).unwrap();
    assert!(compare::btf_sections(&oracle) == compare::btf_sections(&head));
    for jobs in [1, 2] {
        let ours = encode_fixture("attributes", ",attributes", jobs);
        let (a, b) = (compare::btf_sections(&oracle), compare::btf_sections(&ours));
        assert!(
            a == b,
            "-j{jobs}: types {:?}, strings {:?}",
            compare::first_difference(a.0, b.0),
            compare::first_difference(a.1, b.1)
        );
    }
    let tag = ("address_space(1)".to_string(), true);
    assert_eq!(
        type_tags(&oracle),
        [tag.clone(), tag],
        "two pointees tagged"
    );
}

#[test]
fn arena_kfuncs_with_layout_equal_pahole_heads_file() {
    let oracle = std::fs::read(data("arena_kfuncs.pahole-head-layout.btf")).unwrap();
    for jobs in [1, 2] {
        let ours = encode_fixture("attributes-layout", ",attributes,layout", jobs);
        if let Some(d) = compare::first_difference(&oracle, &ours) {
            panic!("-j{jobs}: differs from pahole HEAD's file: {d}");
        }
    }
}

/// Without `attributes` the same kfuncs keep plain pointers: no type tag at all (the
/// fixture's own `address_space(1)` does not reach the DWARF as a tag).
#[test]
fn without_the_feature_no_attribute_tags() {
    let ours = encode_fixture("plain", "", 1);
    assert!(type_tags(&ours).is_empty());
    let with = encode_fixture("attributes", ",attributes", 1);
    let types = |d: &[u8]| read::parse(d, None).unwrap().type_cnt();
    // Two TYPE_TAGs and the two PTRs to them.
    assert_eq!(types(&with), types(&ours) + 4);
}

/// The attribute tags verify from 6.15 on (the running 6.18 kernel took pahole HEAD's file
/// when the oracle was made), and kernels before 6.15 reject exactly those two.
#[test]
fn attribute_tags_verify_from_6_15_on() {
    let oracle = std::fs::read(data("arena_kfuncs.pahole-head.btf")).unwrap();
    let judge = |v: &str| verify::judge(&oracle, None, Target::Kernel(v.parse().unwrap()));
    for v in ["6.15", "6.18", "7.2"] {
        assert!(judge(v).valid(), "{v}: {:#?}", judge(v).problems);
    }
    for v in ["6.1", "6.14"] {
        let p = judge(v).problems;
        let rules: Vec<_> = p.iter().map(|p| p.rule).collect();
        assert_eq!(rules, ["M6-kflag", "M6-kflag"], "{v}: {p:#?}");
    }
    let layout = std::fs::read(data("arena_kfuncs.pahole-head-layout.btf")).unwrap();
    assert!(verify::judge(&layout, None, Target::OwnHeader).valid());
}
