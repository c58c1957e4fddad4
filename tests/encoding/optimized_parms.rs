//! pahole HEAD's "optimized parameters" rule in default BTF (dwarves fb8328e): a function is
//! skipped only when a parameter is optimized out *and* its ABI changed, i.e. clang marked it
//! `DW_AT_calling_convention(DW_CC_nocall)` (own DIE or abstract origin) or gcc emitted it as
//! a `.isra`/`.constprop` clone. `tests/fixtures/optimized_parms.c` has one function per
//! branch; it is compiled with gcc and clang at -O2, DWARF 4 and 5, and linked into shared
//! objects (in relocatable files pahole cannot match addresses, see
//! docs/differences-from-pahole.md).
//!
//! Debian's clang 14 never writes `DW_CC_nocall` (LLVM 15+ does, when dead-argument
//! elimination changes a signature), so the nocall builds take clang's optimized IR and give
//! the `nocall_*` functions' subroutine types `cc: DW_CC_nocall`, which is what newer LLVM
//! does to them, before code generation.
//!
//! The oracle is pahole HEAD's output for the same builds, committed under
//! `tests/data/optimized_parms/` (see tests/data/README.md) together with the compiler
//! versions it was made with: other compilers are a failure, not a skip. With
//! `DWARF2BTF_PAHOLE_HEAD=/path/to/pahole` the test rewrites that data first. The `ts132-*`
//! data, for `tests/fixtures/true_signature_1_32.c`, is pahole 1.32's, rewritten with
//! `DWARF2BTF_PAHOLE_1_32=/path/to/pahole-1.32`.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;

const SRC: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/optimized_parms.c"
);
const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/optimized_parms");
/// The functions the nocall builds mark `DW_CC_nocall`.
const NOCALL: [&str; 4] = [
    "nocall_unused",
    "nocall_const",
    "nocall_used",
    "nocall_origin",
];

/// One build of the fixture: name, compiler, DWARF flag, whether nocall is added.
const BUILDS: [(&str, &str, &str, bool); 6] = [
    ("gcc-dwarf4", "gcc", "-gdwarf-4", false),
    ("gcc-dwarf5", "gcc", "-gdwarf-5", false),
    ("clang-dwarf4", "clang", "-gdwarf-4", false),
    ("clang-dwarf5", "clang", "-gdwarf-5", false),
    ("clang-nocall-dwarf4", "clang", "-gdwarf-4", true),
    ("clang-nocall-dwarf5", "clang", "-gdwarf-5", true),
];

/// Gives each `DISubprogram` named in `names` a new subroutine type with
/// `cc: DW_CC_nocall` and the same type list; returns the IR and how many were marked.
fn mark_nocall(ir: &str, names: &[&str]) -> (String, usize) {
    let node = |l: &str| -> Option<u64> { l.strip_prefix('!')?.split(" = ").next()?.parse().ok() };
    let mut next = ir.lines().filter_map(node).max().unwrap_or(0) + 1;
    let types_of = |id: &str| -> Option<String> {
        let prefix = format!("!{id} = !DISubroutineType(types: ");
        ir.lines().find_map(|l| {
            l.strip_prefix(&prefix)?
                .strip_suffix(')')
                .map(str::to_string)
        })
    };
    let (mut out, mut extra) = (Vec::new(), Vec::new());
    for line in ir.lines() {
        let named = names
            .iter()
            .any(|n| line.contains(&format!("!DISubprogram(name: \"{n}\",")));
        let ty = line
            .split_once(" type: !")
            .and_then(|(_, rest)| rest.split_once(','))
            .map(|(id, _)| id);
        match (named, ty.and_then(|id| Some((id, types_of(id)?)))) {
            (true, Some((id, types))) => {
                out.push(line.replace(&format!(" type: !{id},"), &format!(" type: !{next},")));
                extra.push(format!(
                    "!{next} = !DISubroutineType(cc: DW_CC_nocall, types: {types})"
                ));
                next += 1;
            }
            _ => out.push(line.to_string()),
        }
    }
    let marked = extra.len();
    out.extend(extra);
    (out.join("\n") + "\n", marked)
}

/// Compiles one build into a shared object.
fn build(dir: &Path, name: &str, cc: &str, dwarf: &str, nocall: bool) -> PathBuf {
    let so = dir.join(format!("{name}.so"));
    let common = ["-O2", "-fPIC", dwarf];
    if !nocall {
        run_ok(
            Command::new(tool(cc))
                .args(common)
                .arg("-shared")
                .arg(SRC)
                .arg("-o")
                .arg(&so),
        );
        return so;
    }
    let ll = dir.join(format!("{name}.ll"));
    run_ok(
        Command::new(tool(cc))
            .args(common)
            .args(["-S", "-emit-llvm", SRC, "-o"])
            .arg(&ll),
    );
    let (ir, marked) = mark_nocall(&std::fs::read_to_string(&ll).unwrap(), &NOCALL);
    assert_eq!(
        marked,
        NOCALL.len(),
        "{name}: cannot mark {NOCALL:?} in {}",
        ll.display()
    );
    let patched = dir.join(format!("{name}.nocall.ll"));
    std::fs::write(&patched, ir).unwrap();
    run_ok(
        Command::new(tool(cc))
            .args(["-O2", "-fPIC", "-shared"])
            .arg(&patched)
            .arg("-o")
            .arg(&so),
    );
    so
}

/// The `-V` skip lines of a run, sorted.
fn skip_lines(stdout: &[u8]) -> String {
    let mut lines: Vec<&str> = std::str::from_utf8(stdout)
        .unwrap()
        .lines()
        .filter(|l| l.contains("skipping BTF encoding of function"))
        .collect();
    lines.sort_unstable();
    lines.iter().map(|l| format!("{l}\n")).collect()
}

/// First line of `cc --version`.
fn compiler_version(cc: &str) -> String {
    let out = run_ok(Command::new(tool(cc)).arg("--version"));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.lines().next().unwrap_or_default().to_string()
}

/// pahole HEAD (`DWARF2BTF_PAHOLE_HEAD`) rewrites the oracle data for `so` encoded with
/// `features`.
fn bless(pahole: &Path, name: &str, so: &Path, features: &str) {
    let btf = Path::new(DATA).join(format!("{name}.btf"));
    let _ = std::fs::remove_file(&btf);
    let out = run_ok(
        Command::new(pahole)
            .args(["-J", "-V", features])
            .arg(format!("--btf_encode_detached={}", btf.display()))
            .arg(so),
    );
    std::fs::write(
        Path::new(DATA).join(format!("{name}.skipped.txt")),
        skip_lines(&out.stdout),
    )
    .unwrap();
}

#[test]
fn optimized_parameters_skipped_only_when_the_abi_changed_as_in_pahole_head() {
    let dir = scratch("optimized_parms");
    let pahole = oracle_maker("DWARF2BTF_PAHOLE_HEAD", "compilers.txt", &["gcc", "clang"]);
    let mut skipped_somewhere = Vec::new();
    for (name, cc, dwarf, nocall) in BUILDS {
        let so = build(&dir, name, cc, dwarf, nocall);
        let got = compare_with_oracle(pahole.as_deref(), name, &so, KERNEL_FEATURES);
        skipped_somewhere.push((name, got));
    }
    // The fixture reaches every branch: nocall with an optimized parameter (own mark or the
    // abstract origin's) is skipped, nocall without one and no nocall at all are not; gcc's
    // clones are skipped, the global is not.
    let lines = |name: &str| {
        &skipped_somewhere
            .iter()
            .find(|(n, _)| *n == name)
            .unwrap()
            .1
    };
    let skipped = |name: &str, f: &str| {
        lines(name).contains(&format!(
            "{f} : skipping BTF encoding of function due to optimized parameters"
        ))
    };
    for name in ["clang-nocall-dwarf4", "clang-nocall-dwarf5"] {
        for f in ["nocall_unused", "nocall_const", "nocall_origin"] {
            assert!(skipped(name, f), "{name}: {f} not skipped");
        }
        for f in [
            "nocall_used",
            "plain_unused",
            "plain_const",
            "global_unused",
        ] {
            assert!(!skipped(name, f), "{name}: {f} skipped");
        }
    }
    for name in ["clang-dwarf4", "clang-dwarf5"] {
        assert!(lines(name).is_empty(), "{name}: {}", lines(name));
    }
    for name in ["gcc-dwarf4", "gcc-dwarf5"] {
        for f in [
            "nocall_unused",
            "nocall_const",
            "plain_unused",
            "plain_const",
        ] {
            assert!(skipped(name, f), "{name}: {f} not skipped");
        }
        assert!(!skipped(name, "global_unused"), "{name}");
    }
}

/// The pahole that rewrites the oracle (the environment variable `maker` names it), if any;
/// checks that the oracle was made with the installed `compilers` (recorded in
/// `DATA/record`).
fn oracle_maker(maker: &str, record: &str, compilers: &[&str]) -> Option<PathBuf> {
    let versions: String = compilers
        .iter()
        .map(|cc| compiler_version(cc) + "\n")
        .collect();
    let pahole = std::env::var_os(maker).map(PathBuf::from);
    let recorded = Path::new(DATA).join(record);
    if pahole.is_some() {
        std::fs::write(&recorded, &versions).unwrap();
    }
    assert_eq!(
        std::fs::read_to_string(&recorded).unwrap_or_default(),
        versions,
        "the oracle in {DATA} ({record}) was made with other compilers: rerun with \
         {maker}=/path/to/pahole (tests/data/README.md)"
    );
    pahole
}

/// Encodes `so` with `features` and `-V` and compares the BTF and the skip lines with the
/// oracle `DATA/name.*` (rewritten first by `pahole`, when given); returns the skip lines.
fn compare_with_oracle(pahole: Option<&Path>, name: &str, so: &Path, features: &str) -> String {
    if let Some(p) = pahole {
        bless(p, name, so, features);
    }
    let ours = so.with_extension("btf");
    let out = encode(so, &ours, &[features, "-V"]);
    assert!(out.status.success(), "{name}: {}", text(&out));
    let expected =
        std::fs::read_to_string(Path::new(DATA).join(format!("{name}.skipped.txt"))).unwrap();
    let got = skip_lines(&out.stdout);
    assert_eq!(
        got, expected,
        "{name}: skip lines differ from the oracle's (pahole's)"
    );
    let theirs = Path::new(DATA).join(format!("{name}.btf"));
    // As bpftool reads them (tests/common/judge.rs), not by dwarf2btf's own `diff`.
    if let Some(d) = judge::Judge::all().difference(&theirs, &ours) {
        panic!("{name}: BTF differs from the oracle's (pahole's):\n{d}");
    }
    got
}

/// [`compare_with_oracle`] for `so` with the kernel flags (oracle `base`) and with
/// `true_signature` too (oracle `base-true-signature`, encoded from a copy of `so` named so):
/// the skip lines of both, and dwarf2btf's BTF with `true_signature`.
fn compare_with_and_without_true_signature(
    pahole: Option<&Path>,
    base: &str,
    so: &Path,
) -> (String, String, PathBuf) {
    let plain = compare_with_oracle(pahole, base, so, KERNEL_FEATURES);
    let name = format!("{base}-true-signature");
    let copy = so.with_file_name(format!("{name}.so"));
    std::fs::copy(so, &copy).unwrap();
    let true_sig = format!("{KERNEL_FEATURES},true_signature");
    let with_ts = compare_with_oracle(pahole, &name, &copy, &true_sig);
    (plain, with_ts, copy.with_extension("btf"))
}

/// `true_signature` on `tests/fixtures/true_signature.c`, compiled with gcc (clones) and
/// clang 16 (`DW_CC_nocall`, which Debian's clang 14 never writes), DWARF 4 and 5: the BTF
/// and the skip lines equal pahole HEAD's, with the feature and without.
#[test]
fn true_signatures_as_in_pahole_head() {
    let dir = scratch("true_signature");
    let src = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/true_signature.c"
    );
    let pahole = oracle_maker(
        "DWARF2BTF_PAHOLE_HEAD",
        "true-signature-compilers.txt",
        &["gcc", "clang-16"],
    );
    let mut renamed = 0;
    for (cc, dwarf) in [
        ("gcc", "4"),
        ("gcc", "5"),
        ("clang-16", "4"),
        ("clang-16", "5"),
    ] {
        let base = format!("ts-{cc}-dwarf{dwarf}");
        let so = dir.join(format!("{base}.so"));
        run_ok(
            Command::new(tool(cc))
                .args([
                    "-O2",
                    "-fPIC",
                    "-shared",
                    &format!("-gdwarf-{dwarf}"),
                    src,
                    "-o",
                ])
                .arg(&so),
        );
        let (_, _, ours) = compare_with_and_without_true_signature(pahole.as_deref(), &base, &so);
        let listing = run_ok(
            Command::new(tool("bpftool"))
                .args(["btf", "dump", "file"])
                .arg(ours),
        );
        renamed += usize::from(String::from_utf8_lossy(&listing.stdout).contains("'p__hi'"));
    }
    // clang's builds pass pair_hi's aggregate as its one used member, renamed.
    assert_eq!(renamed, 2, "p__hi is not in both clang builds");
}

/// `true_signature` on `tests/fixtures/true_signature_1_32.c`, two units linked by gcc (DWARF
/// 4 and 5): the BTF and the skip lines equal pahole 1.32's, with the feature and without.
/// With it, `shared_name`'s inlined-only instance is not compared with its instance that has
/// an address, and `setup`'s clone, which walks first and carries the flags of every
/// instance, is not trusted.
#[test]
fn true_signature_rules_as_in_pahole_1_32() {
    let dir = scratch("true_signature_1_32");
    let src = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/true_signature_1_32.c"
    );
    let pahole = oracle_maker(
        "DWARF2BTF_PAHOLE_1_32",
        "true-signature-1.32-compilers.txt",
        &["gcc"],
    );
    for dwarf in ["4", "5"] {
        let base = format!("ts132-gcc-dwarf{dwarf}");
        let mut objects = Vec::new();
        for part in ["1", "2"] {
            let o = dir.join(format!("{base}-{part}.o"));
            run_ok(
                Command::new(tool("gcc"))
                    .args(["-O2", "-fPIC", &format!("-gdwarf-{dwarf}")])
                    .arg(format!("-DPART={part}"))
                    .args(["-c", src, "-o"])
                    .arg(&o),
            );
            objects.push(o);
        }
        let so = dir.join(format!("{base}.so"));
        run_ok(
            Command::new(tool("gcc"))
                .arg("-shared")
                .args(&objects)
                .arg("-o")
                .arg(&so),
        );
        let (plain, with_ts, _) =
            compare_with_and_without_true_signature(pahole.as_deref(), &base, &so);
        let line =
            |f: &str, why: &str| format!("{f} : skipping BTF encoding of function due to {why}");
        assert!(
            plain.contains(&line("shared_name", "inconsistet prototype")),
            "{plain}"
        );
        assert!(!with_ts.contains("shared_name"), "{with_ts}");
        assert!(
            with_ts.contains(&line("setup", "reordered parameters")),
            "{with_ts}"
        );
    }
}

#[test]
fn mark_nocall_gives_each_named_function_its_own_type() {
    let ir = "!1 = distinct !DISubprogram(name: \"f\", scope: !3, type: !4, unit: !2)\n\
              !4 = !DISubroutineType(types: !5)\n\
              !6 = distinct !DISubprogram(name: \"g\", scope: !3, type: !4, unit: !2)\n";
    let (out, marked) = mark_nocall(ir, &["f"]);
    assert_eq!(marked, 1);
    assert!(
        out.contains("!DISubprogram(name: \"f\", scope: !3, type: !7,"),
        "{out}"
    );
    assert!(
        out.contains("!DISubprogram(name: \"g\", scope: !3, type: !4,"),
        "{out}"
    );
    assert!(
        out.contains("!7 = !DISubroutineType(cc: DW_CC_nocall, types: !5)"),
        "{out}"
    );
}
