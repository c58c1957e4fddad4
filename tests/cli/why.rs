//! `dwarf2btf why`: on the function-rule fixture (every skip reason it has, an encoded
//! function, an unknown name, a feature that changes the answer) and on the reference kernel
//! (one function of each kind of line in pahole 1.32's skip log, whose `-V` lines `why` must
//! print, and encoded functions), its answers cross-checked with the FUNCs of the BTF that the
//! same flags encode.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use crate::common::*;
use dwarf2btf::btf::{read, Kind};

/// The kernel's flags without `consistent_func`.
const FEATURES_WITHOUT_CONSISTENT: &str =
    "--btf_features=encode_force,var,float,enum64,decl_tag,type_tag,optimized_func,decl_tag_kfuncs";

/// funcs_a.c + funcs_b.c, one shared object (gcc -O2 -g).
fn funcs_so() -> &'static PathBuf {
    static SO: OnceLock<PathBuf> = OnceLock::new();
    SO.get_or_init(|| {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        let out = scratch("why").join("funcs.so");
        let mut gcc = Command::new(tool("gcc"));
        gcc.args(["-O2", "-g", "-shared", "-fPIC", "-o"]).arg(&out);
        run_ok(gcc.arg(src.join("funcs_a.c")).arg(src.join("funcs_b.c")));
        out
    })
}

/// Compiles the C file `src` into the object `obj` with gcc, optimized as `opt` says, with DWARF.
fn compile(src: &Path, obj: &Path, opt: &str) {
    run_ok(
        Command::new(tool("gcc"))
            .args([opt, "-g", "-c"])
            .arg(src)
            .arg("-o")
            .arg(obj),
    );
}

fn why(input: &Path, names: &[&str], flags: &[&str]) -> Output {
    run(Command::new(bin())
        .arg("why")
        .args(names)
        .arg(input)
        .args(flags))
}

/// One name's answer: its headline and the `-V` lines it shows.
#[derive(Debug)]
struct Answer {
    headline: String,
    log: BTreeSet<String>,
}

impl Answer {
    fn encoded(&self) -> bool {
        self.headline.ends_with(": encoded")
    }

    fn skipped(&self, reason: &str) -> bool {
        self.headline.ends_with(&format!(": skipped: {reason}"))
    }
}

/// The answers by name, from `why`'s output (one block per name, blank-line separated).
fn answers(out: &Output) -> BTreeMap<String, Answer> {
    String::from_utf8_lossy(&out.stdout)
        .split("\n\n")
        .filter(|block| !block.trim().is_empty())
        .map(|block| {
            let mut lines = block.lines();
            let headline = lines.next().unwrap().to_string();
            let name = headline.split(':').next().unwrap().to_string();
            let log = lines
                .filter_map(|l| l.trim().strip_prefix("-V: "))
                .map(str::to_string)
                .collect();
            (name, Answer { headline, log })
        })
        .collect()
}

/// The FUNC names of a BTF file (split BTF on `base`).
fn func_names(btf: &Path, base: Option<&Path>) -> BTreeSet<String> {
    let base = base.map(|b| read::read_base(b).unwrap());
    let btf = read::read_file(btf, base).unwrap();
    (btf.start_id()..btf.type_cnt())
        .filter_map(|id| btf.type_by_id(id))
        .filter(|t| t.kind() == Some(Kind::Func))
        .map(|t| String::from_utf8_lossy(btf.str_at(t.name_off()).unwrap()).into_owned())
        .collect()
}

/// Every name `why` calls encoded is a FUNC of `btf`, every one it calls skipped is not.
fn cross_check(answers: &BTreeMap<String, Answer>, btf: &Path, base: Option<&Path>) {
    let funcs = func_names(btf, base);
    for (name, a) in answers {
        assert_eq!(
            a.encoded(),
            funcs.contains(name),
            "why says `{}`, the BTF {} a FUNC {name}",
            a.headline,
            if funcs.contains(name) {
                "has"
            } else {
                "has no"
            }
        );
    }
}

/// Encodes `input` with `flags` and -V, asks `why` about every function it emitted or logged,
/// and checks the answers agree with it: encoded exactly when a FUNC, the `-V` lines the
/// encoding's own. Returns the answers.
fn agrees_with_encoding(
    input: &Path,
    flags: &[&str],
    base: Option<&Path>,
) -> BTreeMap<String, Answer> {
    let out = scratch("why").join(format!(
        "{}.btf",
        input.file_name().unwrap().to_string_lossy()
    ));
    let base_arg = base.map(|b| format!("--btf_base={}", b.display()));
    let flags: Vec<&str> = flags.iter().copied().chain(base_arg.as_deref()).collect();
    let v = encode(input, &out, &[&flags[..], &["-V"]].concat());
    assert!(v.status.success(), "{}", text(&v));
    let mut logged: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for line in String::from_utf8_lossy(&v.stdout).lines() {
        if let Some((name, _)) = line.split_once(" : skipping BTF encoding of function due to ") {
            logged.entry(name.into()).or_default().insert(line.into());
        }
    }
    let mut names = func_names(&out, base);
    names.extend(logged.keys().cloned());
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let o = why(input, &names, &flags);
    assert!(o.status.success(), "{}", text(&o));
    let answers = answers(&o);
    assert_eq!(answers.len(), names.len(), "{}", text(&o));
    for (name, answer) in &answers {
        let want = logged.get(name).cloned().unwrap_or_default();
        assert_eq!(answer.log, want, "{name}: -V lines");
    }
    cross_check(&answers, &out, base);
    assert!(!logged.is_empty(), "nothing skipped in {}", input.display());
    answers
}

#[test]
fn fixture_answers_agree_with_the_encoding() {
    let a = agrees_with_encoding(funcs_so(), &[KERNEL_FEATURES], None);
    assert!(a["foo"].skipped("optimized parameters"), "{a:?}");
    assert!(a["helper"].skipped("inconsistent prototype"));
    assert!(a["on_stack"].skipped("uncertain parameter location"));
    assert!(a["bar"].encoded() && a["entry_a"].encoded() && a["entry_b"].encoded());
}

/// What `why` says of the fixture's instances: the clone symbol, the flags, the lost
/// parameters and their locations, the prototype difference.
#[test]
fn fixture_details() {
    let o = why(
        funcs_so(),
        &["foo", "helper", "on_stack"],
        &[KERNEL_FEATURES],
    );
    assert!(o.status.success(), "{}", text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    for needle in [
        "foo.constprop.0",
        "optimized_symbol",
        "reordered_parm",
        "left out of the prototype",
        "no location, a constant value (optimized out)",
        "prototypes differ: [2] vs [1]: param count mismatch; 2 params != 1 params",
        "long int on_stack(long int a,",
        "on the stack",
    ] {
        assert!(stdout.contains(needle), "no `{needle}` in\n{stdout}");
    }
}

/// The features change the answer as they change the output: without `consistent_func`,
/// `helper`'s differing prototypes are logged but no reason to skip it.
#[test]
fn fixture_answer_follows_the_features() {
    let o = why(funcs_so(), &["helper"], &[FEATURES_WITHOUT_CONSISTENT]);
    assert!(o.status.success(), "{}", text(&o));
    let a = answers(&o);
    assert!(a["helper"].encoded(), "{}", text(&o));
    assert_eq!(a["helper"].log.len(), 1, "the mismatch line only: {a:?}");
    let out = scratch("why").join("funcs-inconsistent.btf");
    let e = encode(funcs_so(), &out, &[FEATURES_WITHOUT_CONSISTENT]);
    assert!(e.status.success(), "{}", text(&e));
    cross_check(&a, &out, None);
    // pahole's legacy flag for it, as a kernel 6.1 build passes it.
    let flags = [
        FEATURES_WITHOUT_CONSISTENT,
        "--skip_encoding_btf_inconsistent_proto",
    ];
    let o = why(funcs_so(), &["helper"], &flags);
    assert!(
        answers(&o)["helper"].skipped("inconsistent prototype"),
        "{}",
        text(&o)
    );
}

#[test]
fn unknown_name_fails_saying_so() {
    let o = why(funcs_so(), &["no_such_function", "bar"], &[KERNEL_FEATURES]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains(
            "no_such_function: unknown: no ELF function symbol and no DWARF function named no_such_function"
        ),
        "{stdout}"
    );
    assert!(stdout.contains("bar: encoded"), "{stdout}");
}

/// A suffixed ELF name stands for its function.
#[test]
fn clone_symbol_name_means_the_function() {
    let o = why(funcs_so(), &["foo.constprop.0"], &[KERNEL_FEATURES]);
    assert!(o.status.success(), "{}", text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.starts_with("foo: skipped: optimized parameters\n"),
        "{stdout}"
    );
    assert!(stdout.contains("(foo.constprop.0 is a symbol of the function foo)"));
}

/// The kind of a skip log line: its reason, or its mismatch without the details.
fn line_kind(line: &str) -> &str {
    let reason = line.split(" due to ").nth(1).unwrap_or(line);
    [
        "param count mismatch",
        "param type mismatch",
        "return type mismatch",
    ]
    .into_iter()
    .find(|m| reason.starts_with(m))
    .unwrap_or(reason)
}

#[test]
fn kernel_answers_match_pahole_skip_log_and_the_btf() {
    // pahole's skip log is the pinned image's: a fallback kernel has no oracle to match.
    let Some(vmlinux) = pinned_vmlinux("kernel_answers_match_pahole_skip_log_and_the_btf") else {
        return;
    };
    let flags = [KERNEL_FEATURES, "--lang_exclude=rust", "-j2"];
    let log = std::fs::read_to_string(oracle_skipped()).unwrap();
    let mut oracle: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for line in log.lines() {
        let name = line.split(" : ").next().unwrap();
        oracle.entry(name).or_default().insert(line.to_string());
    }
    // The first function (by name) logged with each kind of line, and every 40th function.
    let mut by_kind: BTreeMap<&str, &str> = BTreeMap::new();
    for (name, lines) in &oracle {
        for line in lines {
            by_kind.entry(line_kind(line)).or_insert(name);
        }
    }
    assert!(by_kind.len() >= 8, "kinds of skip lines: {by_kind:?}");
    let mut names: BTreeSet<&str> = by_kind.values().copied().collect();
    names.extend(oracle.keys().step_by(40));
    // Encoded functions: a sample of the BTF's FUNCs.
    let Some(btf_path) = kernel_btf() else {
        return;
    };
    let funcs: Vec<String> = func_names(btf_path, None).into_iter().collect();
    assert!(funcs.len() > 10_000);
    let encoded: Vec<&str> = funcs.iter().step_by(2000).map(String::as_str).collect();
    names.extend(&encoded);
    let names: Vec<&str> = names.into_iter().collect();
    let o = why(&vmlinux, &names, &flags);
    assert!(o.status.success(), "{}", text(&o));
    let a = answers(&o);
    assert_eq!(a.len(), names.len(), "{}", text(&o));
    for (kind, name) in &by_kind {
        let answer = &a[*name];
        assert_eq!(
            answer.log, oracle[name],
            "{name} ({kind}): why shows other -V lines than pahole 1.32's log"
        );
        let reason = oracle[name]
            .iter()
            .map(|l| line_kind(l))
            .find(|k| !k.contains("mismatch"))
            .expect("a reason line");
        // why's own prose spells right what pahole's log misspells ("inconsistet").
        let reason = reason.replace("inconsistet", "inconsistent");
        assert!(answer.skipped(&reason), "{name}: {}", answer.headline);
    }
    for name in &encoded {
        assert!(a[*name].encoded(), "{name}: {}", a[*name].headline);
    }
    cross_check(&a, btf_path, None);
}

/// The reference kernel's BTF with the kernel's flags, encoded once per test binary.
fn kernel_btf() -> Option<&'static PathBuf> {
    static BTF: OnceLock<Option<PathBuf>> = OnceLock::new();
    BTF.get_or_init(|| {
        vmlinux_btf("why_kernel")?;
        Some(scratch("why_kernel").join("vmlinux.btf"))
    })
    .as_ref()
}

/// A module as split BTF on the kernel's (`--btf_base`): every function's answer agrees with
/// the encoding.
#[test]
fn module_answers_agree_with_the_encoding() {
    let Some(modules) = modules() else {
        return;
    };
    let Some(base) = kernel_btf() else {
        return;
    };
    let ko = modules.join("kernel/fs/fuse/fuse.ko");
    let a = agrees_with_encoding(&ko, &[KERNEL_FEATURES, "--lang_exclude=rust"], Some(base));
    assert!(a.len() > 100, "{} functions", a.len());
}

/// A function inlined into ten compile units and never called: the answer says "inlined",
/// lists the first 8 definitions (`--all`: every one), ends with the verdict again, and, with
/// no `--btf_features`, notes on stderr that it answers for pahole's defaults.
#[test]
fn inlined_everywhere_is_said_and_the_list_is_capped() {
    let dir = scratch("why_inlined");
    let mut objects = Vec::new();
    for i in 1..=10 {
        let src = dir.join(format!("u{i}.c"));
        std::fs::write(
            &src,
            format!(
                "static inline __attribute__((always_inline)) int inl_helper(int x) \
                 {{ return x * {i} + 1; }}\nint user_{i}(int y) {{ return inl_helper(y); }}\n"
            ),
        )
        .unwrap();
        let obj = dir.join(format!("u{i}.o"));
        compile(&src, &obj, "-O2");
        objects.push(obj);
    }
    let all = dir.join("all.o");
    run_ok(
        Command::new(tool("ld"))
            .arg("-r")
            .args(&objects)
            .arg("-o")
            .arg(&all),
    );
    let listed = |o: &Output| {
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .filter(|l| l.starts_with("    [") && l.contains(".c  (DIE"))
            .count()
    };
    let o = why(&all, &["inl_helper"], &[]);
    assert!(o.status.success(), "{}", text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    let headline = "inl_helper: not encoded: inlined at every call site: nothing to attach to";
    assert_eq!(lines[0], headline, "{stdout}");
    assert_eq!(
        *lines.last().unwrap(),
        format!("  => {headline}"),
        "{stdout}"
    );
    assert_eq!(listed(&o), 8, "{stdout}");
    assert!(
        stdout.contains("... and 2 more (--all lists them)"),
        "{stdout}"
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("no --btf_features given"));
    let o = why(&all, &["--all", "inl_helper"], &[KERNEL_FEATURES]);
    assert_eq!(listed(&o), 10, "{}", text(&o));
    assert!(o.stderr.is_empty(), "{}", text(&o));
}

/// Prototypes are spelled as C declares them: function pointers, qualifiers, pointers to
/// arrays, typedefs, struct and anonymous union tags, a function returning a function pointer.
#[test]
fn prototypes_are_spelled_in_c() {
    let dir = scratch("why_cdecl");
    let src = dir.join("decl.c");
    std::fs::write(
        &src,
        "struct net; struct sock; struct sk_buff; struct foo { int x; };\n\
         typedef unsigned int u32;\n\
         static void nop(void) {}\n\
         int hook(int (*okfn)(struct net *, struct sock *, struct sk_buff *), const char *name,\n\
                  unsigned long (*flags)[4], struct foo *f, const u32 len, char *const *argv,\n\
                  union { int i; long l; } *any)\n\
         { return okfn(0, 0, 0) + name[0] + (int)(*flags)[1] + f->x + len + !!argv[0] + any->i; }\n\
         void (*pick(int which, ...))(void) { return which ? nop : 0; }\n",
    )
    .unwrap();
    let obj = dir.join("decl.o");
    compile(&src, &obj, "-O0");
    let o = why(&obj, &["hook", "pick"], &[KERNEL_FEATURES]);
    assert!(o.status.success(), "{}", text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    // Each definition's prototype is the line after its address.
    let lines: Vec<&str> = stdout.lines().map(str::trim).collect();
    let prototypes: Vec<&str> = lines
        .windows(2)
        .filter(|w| w[0].starts_with("low_pc "))
        .map(|w| w[1])
        .collect();
    assert_eq!(
        prototypes,
        [
            "int hook(int (*okfn)(struct net *, struct sock *, struct sk_buff *), \
             const char *name, long unsigned int (*flags)[4], struct foo *f, const u32 len, \
             char *const *argv, union {...} *any)",
            "void (*pick(int which, ...))(void)",
        ],
        "{stdout}"
    );
}
