//! `verify --kernel-version` before 6.1 judges a release by the kinds and flags it lacks: for
//! every release at a boundary of the table (`dwarf2btf::toolbox::verify::INTRODUCED`), on the
//! reference vmlinux's BTF and the clang tags fixture's, the lines and exit status must be what
//! bpftool's listing of the same file implies. bpftool, not dwarf2btf, says which kinds,
//! global linkages, signed enums, bitfield members and union forwards each type has; the
//! table says when each came. Before 4.18 there is no BTF; a release that lacks nothing the
//! file uses gets no verdict (exit 2), never "valid".

use std::path::Path;

use dwarf2btf::toolbox::verify::{introduced, Feature, KernelVersion, BTF_KERNEL, INTRODUCED};

/// The releases checked: each side of every boundary in the table before 6.1, and releases
/// without BTF.
const RELEASES: [&str; 15] = [
    "2.6", "4.17", "4.18", "4.20", "5.0", "5.1", "5.2", "5.5", "5.6", "5.12", "5.13", "5.15",
    "5.16", "5.17", "5.19",
];

/// The features a type of bpftool's listing uses, from its type line and member lines.
fn features_of(kind: &str, line: &str, members: &[&str]) -> Vec<Feature> {
    let flagged = |needle: &str| members.iter().any(|m| m.contains(needle));
    match kind {
        "FUNC" if line.contains("linkage=global") => vec![Feature::FuncKinds, Feature::FuncLinkage],
        "FUNC" | "FUNC_PROTO" => vec![Feature::FuncKinds],
        "VAR" | "DATASEC" => vec![Feature::VarDatasec],
        "FLOAT" => vec![Feature::Float],
        "DECL_TAG" => vec![Feature::DeclTag],
        "TYPE_TAG" => vec![Feature::TypeTag],
        "ENUM64" => vec![Feature::Enum64],
        "ENUM" if line.contains("encoding=SIGNED") => vec![Feature::Enum64],
        "STRUCT" | "UNION" if flagged("bitfield_size=") => vec![Feature::AggregateKindFlag],
        "FWD" if line.contains("fwd_kind=union") => vec![Feature::AggregateKindFlag],
        _ => Vec::new(),
    }
}

/// Every feature the file uses, with the id of the first type using it (bpftool's listing).
fn used_features(file: &Path) -> Vec<(Feature, u32)> {
    let o = crate::common::run_ok(
        std::process::Command::new(crate::common::tool("bpftool"))
            .args(["btf", "dump", "file"])
            .arg(file),
    );
    let listing = String::from_utf8(o.stdout).unwrap();
    let lines: Vec<&str> = listing.lines().collect();
    let mut used: Vec<(Feature, u32)> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let members = lines[i + 1..]
            .iter()
            .take_while(|l| l.starts_with('\t'))
            .copied()
            .collect::<Vec<_>>();
        i += 1 + members.len();
        let Some((id, rest)) = line.strip_prefix('[').and_then(|l| l.split_once("] ")) else {
            continue;
        };
        let kind = rest.split(' ').next().unwrap();
        for f in features_of(kind, line, &members) {
            if !used.iter().any(|u| u.0 == f) {
                used.push((f, id.parse().unwrap()));
            }
        }
    }
    used
}

/// Runs `verify --kernel-version RELEASE FILE`: exit code and stdout lines.
fn verify_for(file: &Path, release: &str) -> (Option<i32>, Vec<String>) {
    let o = crate::common::run(
        std::process::Command::new(crate::common::bin())
            .args(["verify", "--kernel-version", release])
            .arg(file),
    );
    assert!(o.stderr.is_empty(), "{}", crate::common::text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    (o.status.code(), out.lines().map(String::from).collect())
}

/// What verify must say of `file` for every release in [`RELEASES`], given what it uses.
fn check_releases(file: &Path, used: &[(Feature, u32)]) {
    let name = file.display().to_string();
    for release in RELEASES {
        let version: KernelVersion = release.parse().unwrap();
        let (code, lines) = verify_for(file, release);
        let at = format!("{name} for {release}: {lines:#?}");
        if version < BTF_KERNEL {
            assert_eq!(code, Some(1), "{at}");
            assert_eq!(lines.len(), 1, "{at}");
            assert!(
                lines[0].contains(&format!("Linux {release} has no BTF")),
                "{at}"
            );
            continue;
        }
        let mut lacking: Vec<(Feature, u32)> = used
            .iter()
            .copied()
            .filter(|(f, _)| introduced(*f).since > version)
            .collect();
        lacking.sort_by_key(|(f, _)| INTRODUCED.iter().position(|i| i.feature == *f));
        if lacking.is_empty() {
            assert_eq!(code, Some(2), "{at}");
            assert_eq!(lines.len(), 1, "{at}");
            assert!(
                lines[0].starts_with(&format!("{name}: no verdict for Linux {release}")),
                "{at}"
            );
            continue;
        }
        assert_eq!(code, Some(1), "{at}");
        assert_eq!(lines.len(), lacking.len(), "{at}");
        for (line, (feature, id)) in lines.iter().zip(&lacking) {
            let i = introduced(*feature);
            let prefix = format!("{name}: [{id}] V1-release: ");
            let came = format!("Linux {release} lacks it (it came with {}, ", i.since);
            assert!(
                line.starts_with(&prefix) && line.contains(i.what) && line.contains(&came),
                "{at}\nexpected {feature:?} first used by [{id}]"
            );
        }
    }
}

#[test]
fn releases_before_6_1_are_judged_by_what_they_lack_on_the_tags_fixture() {
    let files = crate::common::fixture_btf_files("verify_releases_fixtures");
    let (_, tags) = files.iter().find(|(n, _)| *n == "clang-tags").unwrap();
    let used = used_features(tags);
    for needed in [Feature::FuncKinds, Feature::DeclTag, Feature::TypeTag] {
        assert!(
            used.iter().any(|u| u.0 == needed),
            "{needed:?} not in {used:?}"
        );
    }
    check_releases(tags, &used);
}

#[test]
fn releases_before_6_1_are_judged_by_what_they_lack_on_vmlinux() {
    let Some(btf) = crate::common::vmlinux_btf_file("verify_releases_vmlinux") else {
        return;
    };
    let used = used_features(&btf);
    // pahole (and so dwarf2btf) gives every FUNC static linkage (vlen 0).
    for needed in [
        Feature::FuncKinds,
        Feature::VarDatasec,
        Feature::AggregateKindFlag,
        Feature::Enum64,
        Feature::Float,
    ] {
        assert!(
            used.iter().any(|u| u.0 == needed),
            "{needed:?} not in {used:?}"
        );
    }
    check_releases(&btf, &used);
}

/// LLVM's own BTF (`clang -target bpf`): global linkage on FUNCs, which pahole never writes.
#[test]
fn releases_before_6_1_are_judged_by_what_they_lack_on_llvm_btf() {
    let obj = crate::common::scratch("verify_releases_llvm").join("tags.bpf.o");
    let src = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/tags.c");
    crate::common::run_ok(
        std::process::Command::new(crate::common::tool("clang"))
            .args(["-target", "bpf", "-O2", "-g", "-c", src, "-o"])
            .arg(&obj),
    );
    let used = used_features(&obj);
    assert!(
        used.iter().any(|u| u.0 == Feature::FuncLinkage),
        "no global FUNC in {used:?}"
    );
    check_releases(&obj, &used);
}
