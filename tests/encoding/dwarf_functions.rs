//! Per-function DWARF analysis (`dwarf2btf::dwarf::functions`) on small C files compiled at
//! test time with gcc (DWARF 5 and 4) and clang, against the answers pahole 1.32 gives
//! (`/work/shared/reference/pahole-encoder.md` §2.1, §2.3, §2.4 and §7).

use std::path::{Path, PathBuf};
use std::process::Command;

use dwarf2btf::config::Features;
use dwarf2btf::dwarf::foreign::UnitIndex;
use dwarf2btf::dwarf::functions::decode_cu_functions;
use dwarf2btf::dwarf::types::{decode_cu_types, CuTypes, Entry};
use dwarf2btf::dwarf::units::{unit_headers, Cu, DebugSections};
use dwarf2btf::input::arch::Arch;
use dwarf2btf::input::elf::Elf;

/// A function as decoded, with owned strings and parameter types rendered as C-ish text.
#[derive(Clone, Debug)]
struct Func {
    name: String,
    declaration: bool,
    external: bool,
    addr: u64,
    ret: String,
    params: Vec<(String, String)>,
    has_arg_names: bool,
    optimized_parms: bool,
    unexpected_reg: bool,
    reordered_parm: bool,
    signature_changed: bool,
    uncertain_parm_loc: bool,
    annots: Vec<(String, i32)>,
}

fn type_name(types: &CuTypes<'_>, id: u32) -> String {
    let mut out = String::new();
    let mut id = id;
    for _ in 0..16 {
        let Some(e) = id
            .checked_sub(1)
            .and_then(|i| types.entries.get(i as usize))
        else {
            out.push_str("void");
            return out;
        };
        match e {
            Entry::Base { name, .. } | Entry::Typedef { name, .. } => {
                out.push_str(&String::from_utf8_lossy(name));
                return out;
            }
            Entry::Composite { union, name, .. } => {
                out.push_str(if *union { "union " } else { "struct " });
                out.push_str(&String::from_utf8_lossy(name));
                return out;
            }
            Entry::Enum { name, .. } => {
                out.push_str("enum ");
                out.push_str(&String::from_utf8_lossy(name));
                return out;
            }
            Entry::Modifier { kind, ty } => {
                out.push_str(&format!("{kind:?} "));
                id = *ty;
            }
            Entry::TypeTag { ty, .. } => id = *ty,
            Entry::Array { elem, .. } => {
                out.push_str("[] ");
                id = *elem;
            }
            Entry::FuncProto { .. } => {
                out.push_str("fn");
                return out;
            }
            Entry::Unsupported { tag } => {
                out.push_str(&format!("{tag}"));
                return out;
            }
        }
    }
    out
}

/// Decodes every function of every CU of `path`.
fn decode(path: &Path, features: &Features) -> Vec<Func> {
    let mapped = crate::common::map(path);
    let elf = Elf::parse(&mapped).unwrap();
    let arch = Arch::from_elf_machine(elf.machine);
    let sections = DebugSections::load(&elf).unwrap().expect("no DWARF");
    let dwarf = sections.dwarf();
    let little = elf.endian == dwarf2btf::btf::Endian::Little;
    let mut out = Vec::new();
    let units = UnitIndex::new(&dwarf, unit_headers(&dwarf, path).unwrap()).unwrap();
    for &header in units.headers() {
        let cu = Cu::new(&dwarf, header, little).unwrap();
        let types =
            decode_cu_types(&dwarf, &units, &cu, features, &mut Default::default()).unwrap();
        let funcs = decode_cu_functions(&dwarf, &cu, &types, &arch, features)
            .unwrap_or_else(|e| panic!("{}: {e:?}", path.display()));
        for f in funcs {
            out.push(Func {
                name: String::from_utf8_lossy(f.name).into_owned(),
                declaration: f.declaration,
                external: f.external,
                addr: f.addr,
                ret: type_name(&types, f.ret),
                params: f
                    .params
                    .iter()
                    .map(|p| {
                        (
                            String::from_utf8_lossy(p.name).into_owned(),
                            type_name(&types, p.ty),
                        )
                    })
                    .collect(),
                has_arg_names: f.has_arg_names,
                optimized_parms: f.optimized_parms,
                unexpected_reg: f.unexpected_reg,
                reordered_parm: f.reordered_parm,
                signature_changed: f.signature_changed,
                uncertain_parm_loc: f.uncertain_parm_loc,
                annots: f
                    .annots
                    .iter()
                    .map(|a| (String::from_utf8_lossy(a.value).into_owned(), a.component))
                    .collect(),
            });
        }
    }
    out
}

/// Compiles `src` with `cc` and `flags` into an object file named after `name`.
fn compile(name: &str, cc: &str, flags: &[&str], src: &str) -> PathBuf {
    let dir = crate::common::scratch("dwarf_functions");
    let c = dir.join(format!("{name}.c"));
    let o = dir.join(format!("{name}.o"));
    std::fs::write(&c, src).unwrap();
    let out = Command::new(cc)
        .args(flags)
        .arg("-c")
        .arg(&c)
        .arg("-o")
        .arg(&o)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cc}: {e}"));
    assert!(
        out.status.success(),
        "{cc} {flags:?} {name}.c failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    o
}

/// gcc with DWARF 5 and DWARF 4, clang with its default (DWARF 5) and DWARF 4.
const GCC: [(&str, &[&str]); 2] = [
    ("gcc-dwarf5", &["-O2", "-g"]),
    ("gcc-dwarf4", &["-O2", "-gdwarf-4"]),
];
const CLANG: [(&str, &[&str]); 2] = [
    ("clang-dwarf5", &["-O2", "-g"]),
    ("clang-dwarf4", &["-O2", "-gdwarf-4"]),
];

fn build_all(
    name: &str,
    cc: &str,
    builds: &[(&str, &[&str])],
    src: &str,
) -> Vec<(String, Vec<Func>)> {
    builds
        .iter()
        .map(|(flavour, flags)| {
            let tag = format!("{name}-{flavour}");
            let o = compile(&tag, cc, flags, src);
            (tag, decode(&o, &Features::default()))
        })
        .collect()
}

/// The non-declaration instances of `name` (abstract and concrete).
fn instances<'f>(funcs: &'f [Func], name: &str) -> Vec<&'f Func> {
    funcs
        .iter()
        .filter(|f| f.name == name && !f.declaration)
        .collect()
}

/// The out-of-line (addressed) instances of `name`.
fn concrete<'f>(funcs: &'f [Func], name: &str) -> Vec<&'f Func> {
    instances(funcs, name)
        .into_iter()
        .filter(|f| f.addr != 0 || f.external)
        .collect()
}

/// Prints what is decoded from a C file: `DUMP_SRC=x.c [DUMP_CC=clang] [DUMP_FLAGS="-O2 -g"]
/// cargo test --test dwarf_functions -- dump --nocapture`. `DUMP_OBJ=x.o` decodes an object
/// file instead. Without either it dumps [`GCC_OPTIMIZED`] and checks the listing names its
/// three functions, so the tool keeps working.
#[test]
fn dump() {
    let funcs = if let Ok(obj) = std::env::var("DUMP_OBJ") {
        decode(Path::new(&obj), &Features::default())
    } else {
        let src = std::env::var("DUMP_SRC").map_or_else(
            |_| GCC_OPTIMIZED.to_string(),
            |p| std::fs::read_to_string(p).unwrap(),
        );
        let cc = std::env::var("DUMP_CC").unwrap_or_else(|_| "gcc".into());
        let flags = std::env::var("DUMP_FLAGS").unwrap_or_else(|_| "-O2 -g".into());
        let flags: Vec<&str> = flags.split_whitespace().collect();
        let o = compile("dump", &cc, &flags, &src);
        decode(&o, &Features::default())
    };
    let listing: Vec<String> = funcs.iter().map(|f| format!("{f:?}")).collect();
    for line in &listing {
        eprintln!("{line}");
    }
    if std::env::var_os("DUMP_OBJ").is_none() && std::env::var_os("DUMP_SRC").is_none() {
        for name in ["bar", "foo", "main"] {
            let field = format!("name: \"{name}\"");
            assert!(
                listing.iter().any(|l| l.contains(&field)),
                "{name} missing from the dump: {listing:#?}"
            );
        }
    }
}

/// pahole's `gcc_optimized_default.sh`: the static `foo` whose clone loses `c` has optimized
/// parameters; the global `bar` with an unused `b` keeps its ABI and has none.
const GCC_OPTIMIZED: &str = r#"
__attribute__((noinline)) int bar(int a, int b)
{
	return a + 1;
}

__attribute__((noinline)) static int foo(int a, int b, int c)
{
	return a * b - a - b;
}

int a, b, c;
int main(void)
{
	return bar(a, c) + foo(a, b, c);
}
"#;

#[test]
fn gcc_static_clone_has_optimized_parms_global_does_not() {
    for (tag, funcs) in build_all("optimized", "gcc", &GCC, GCC_OPTIMIZED) {
        let foo = instances(&funcs, "foo");
        assert!(!foo.is_empty(), "{tag}: no foo in {funcs:#?}");
        for f in &foo {
            assert!(
                f.optimized_parms,
                "{tag}: foo instance without optimized_parms: {f:#?}"
            );
            assert!(!f.reordered_parm && !f.unexpected_reg, "{tag}: {f:#?}");
            assert_eq!(f.params.len(), 3, "{tag}: {f:#?}");
            assert_eq!(f.ret, "int", "{tag}: {f:#?}");
        }
        // The out-of-line clone is a concrete instance: nameless in DWARF, named through its
        // abstract origin, parameters named and typed through theirs.
        assert!(foo
            .iter()
            .any(|f| f.params.iter().map(|p| p.0.as_str()).eq(["a", "b", "c"])));
        let bar = instances(&funcs, "bar");
        assert_eq!(bar.len(), 1, "{tag}: {funcs:#?}");
        let bar = bar[0];
        assert!(
            bar.external && !bar.optimized_parms && !bar.unexpected_reg,
            "{tag}: {bar:#?}"
        );
        assert_eq!(
            bar.params,
            [
                ("a".to_string(), "int".to_string()),
                ("b".to_string(), "int".to_string())
            ],
            "{tag}"
        );
        assert!(bar.has_arg_names);
        let main = instances(&funcs, "main")[0];
        assert!(
            main.params.is_empty() && !main.optimized_parms,
            "{tag}: {main:#?}"
        );
    }
}

/// GCC's IPA-SRA turns `f(struct s *p, int x)` into `f.isra.0(int x, int p_a, ...)`: the
/// clone's first parameter has the origin index 1, which is pahole's `reordered_parm`; the
/// replaced pointer has no usable location and is dropped from the saved parameters.
const GCC_REORDERED: &str = r#"
struct s { int a; int b; long pad[8]; };
static __attribute__((noinline)) int f(struct s *p, int x)
{
	return p->a * x + p->b;
}
int g(struct s *p, int x) { return f(p, x) + f(p, x + 1); }
int h(struct s *q, int y) { return f(q, y * 3); }
"#;

#[test]
fn gcc_isra_clone_reorders_parameters() {
    for (tag, funcs) in build_all("reordered", "gcc", &GCC, GCC_REORDERED) {
        let f = instances(&funcs, "f");
        let clone: Vec<_> = f.iter().filter(|f| f.reordered_parm).collect();
        assert_eq!(clone.len(), 1, "{tag}: {f:#?}");
        let clone = clone[0];
        // Only the parameters with a register location survive, in clone order.
        assert_eq!(
            clone.params,
            [("x".to_string(), "int".to_string())],
            "{tag}: {clone:#?}"
        );
        assert!(clone.optimized_parms, "{tag}: {clone:#?}");
        // The abstract instance keeps the source signature and is not reordered itself.
        let abs: Vec<_> = f.iter().filter(|f| !f.reordered_parm).collect();
        assert_eq!(abs.len(), 1, "{tag}: {f:#?}");
        assert_eq!(abs[0].params.len(), 2, "{tag}");
        assert_eq!(abs[0].params[0].1, "Ptr struct s", "{tag}");
        for name in ["g", "h"] {
            let x = instances(&funcs, name)[0];
            assert!(
                !x.reordered_parm && !x.optimized_parms && !x.unexpected_reg,
                "{tag}: {x:#?}"
            );
        }
    }
}

/// Varargs, and packed structs passed by value on the stack (x86_64: beyond 6 registers).
const VARARGS_PACKED: &str = r#"
#include <stdarg.h>
int vsum(int n, ...)
{
	va_list ap; int s = 0;
	va_start(ap, n);
	for (int i = 0; i < n; i++) s += va_arg(ap, int);
	va_end(ap);
	return s;
}
struct pk { char a; int b; } __attribute__((packed));
struct np { char a; int b; };
typedef struct pk pk_t;
__attribute__((noinline)) int seven(long a, long b, long c, long d, long e, long f, struct pk g)
{
	return a + b + c + d + e + f + g.b;
}
__attribute__((noinline)) int seven_ok(long a, long b, long c, long d, long e, long f, struct np g)
{
	return a + b + c + d + e + f + g.b;
}
__attribute__((noinline)) int seven_typedef(long a, long b, long c, long d, long e, long f, pk_t g)
{
	return a + b + c + d + e + f + g.b;
}
__attribute__((noinline)) int sixth(long a, long b, long c, long d, long e, struct pk g)
{
	return a + b + c + d + e + g.b;
}
"#;

#[test]
fn varargs_and_packed_structs_on_the_stack() {
    let mut all = build_all("varargs", "gcc", &GCC, VARARGS_PACKED);
    all.extend(build_all("varargs", "clang", &CLANG, VARARGS_PACKED));
    for (tag, funcs) in all {
        let vsum = instances(&funcs, "vsum");
        assert_eq!(vsum.len(), 1, "{tag}: {funcs:#?}");
        assert_eq!(
            vsum[0].params,
            [
                ("n".to_string(), "int".to_string()),
                (String::new(), "void".to_string())
            ],
            "{tag}: the vararg is a trailing nameless void parameter"
        );
        assert!(vsum[0].has_arg_names, "{tag}");
        let get = |name: &str| concrete(&funcs, name)[0].clone();
        assert!(
            get("seven").uncertain_parm_loc,
            "{tag}: {:#?}",
            get("seven")
        );
        assert!(
            !get("seven_ok").uncertain_parm_loc,
            "{tag}: struct np is not packed"
        );
        // ftype__has_uncertain_arg_loc does not look through typedefs.
        assert!(!get("seven_typedef").uncertain_parm_loc, "{tag}");
        // The sixth parameter still has a register slot: not "uncertain" (pahole only looks
        // at parameters beyond nr_register_params).
        assert!(!get("sixth").uncertain_parm_loc, "{tag}");
        assert_eq!(get("seven").params.len(), 7, "{tag}");
        assert_eq!(
            get("seven").params[6],
            ("g".to_string(), "struct pk".to_string()),
            "{tag}"
        );
    }
}

/// clang's `btf_decl_tag` annotations on a function and on its parameters, in pahole's list
/// order (parameters' tags as the parameters are met, then the function's own children).
const CLANG_TAGS: &str = r#"
#define __tag(x) __attribute__((btf_decl_tag(x)))
__tag("a") __tag("b") int tagged(int x __tag("param_x"), int y __tag("param_y1") __tag("param_y2"))
{
	return x + y;
}
__tag("decl_only") int declared(int z);
int use(int q) { return tagged(q, q) + declared(q); }
"#;

#[test]
fn clang_decl_tags_on_functions_and_parameters() {
    for (tag, funcs) in build_all("tags", "clang", &CLANG, CLANG_TAGS) {
        let t = concrete(&funcs, "tagged")[0];
        let annots: Vec<(&str, i32)> = t.annots.iter().map(|(v, c)| (v.as_str(), *c)).collect();
        assert_eq!(
            annots,
            [
                ("param_x", 0),
                ("param_y1", 1),
                ("param_y2", 1),
                ("a", -1),
                ("b", -1)
            ],
            "{tag}"
        );
        assert!(
            !t.optimized_parms && !t.unexpected_reg && !t.signature_changed,
            "{tag}: {t:#?}"
        );
        // A declaration is reported (pahole skips it on `declaration`), with its tag.
        let d: Vec<_> = funcs.iter().filter(|f| f.name == "declared").collect();
        assert_eq!(d.len(), 1, "{tag}");
        assert!(d[0].declaration, "{tag}");
        assert_eq!(d[0].annots, [("decl_only".to_string(), -1)], "{tag}");
        // With decl_tag off, pahole's loader drops annotations.
        let o = compile(
            &format!("{tag}-notags"),
            "clang",
            &["-O2", "-g"],
            CLANG_TAGS,
        );
        let features = Features {
            decl_tag: false,
            ..Features::default()
        };
        assert!(decode(&o, &features).iter().all(|f| f.annots.is_empty()));
    }
}

/// clang (15+) marks a static function whose signature it changed with
/// `DW_AT_calling_convention(DW_CC_nocall)` (pahole's `signature_changed`); clang 14 does not.
/// Either way the unused parameter has no location (optimized) and `used` arrives in the first
/// argument register, not its own: `unexpected_reg`. The call to `ext` gives `used` a location
/// list (`DW_FORM_loclistx` in DWARF 5, `.debug_loc` in DWARF 4) whose first entry is rdi.
const CLANG_NOCALL: &str = r#"
extern void ext(void);
static __attribute__((noinline)) int dropped(int unused, int used)
{
	ext();
	return used * 3;
}
int caller(int v) { return dropped(1, v) + dropped(2, v + 1); }
"#;

#[test]
fn clang_changed_signature() {
    for (tag, funcs) in build_all("nocall", "clang", &CLANG, CLANG_NOCALL) {
        let o = crate::common::scratch("dwarf_functions").join(format!("{tag}.o"));
        let dump = Command::new("llvm-dwarfdump")
            .arg("--debug-info")
            .arg(&o)
            .output();
        let nocall =
            dump.is_ok_and(|d| String::from_utf8_lossy(&d.stdout).contains("DW_CC_nocall"));
        let d = concrete(&funcs, "dropped");
        assert_eq!(d.len(), 1, "{tag}: {funcs:#?}");
        let d = d[0];
        assert_eq!(d.signature_changed, nocall, "{tag}: {d:#?}");
        assert!(d.optimized_parms && d.unexpected_reg, "{tag}: {d:#?}");
        let caller = instances(&funcs, "caller")[0];
        assert!(
            !caller.signature_changed && !caller.unexpected_reg,
            "{tag}: {caller:#?}"
        );
    }
}

/// The reference kernel: every function pahole 1.32 skips for a reason decided from these
/// facts (unexpected register, uncertain location, reordered or optimized parameters, plus
/// the ELF table's ambiguous address) must get the same reason here, with pahole's grouping by
/// ELF function and canonical-state rules emulated. "Inconsistent prototype" needs BTF type
/// comparison and is only checked for not hiding a later reason. The comparison is
/// `compare::skip_reason_mismatches` (its negative control:
/// `skip_reason_comparison_detects_a_changed_reason`).
/// Decoding every CU of the kernel takes seconds in a release build (as scripts/test.sh and CI
/// run it) and minutes in a debug build.
#[test]
fn vmlinux_skip_reasons_match_pahole_1_32() {
    use std::collections::BTreeMap;

    use dwarf2btf::input::symbols::ElfFunctions;

    let Some(path) = crate::common::pinned_vmlinux("vmlinux_skip_reasons_match_pahole_1_32") else {
        return;
    };
    let oracle = crate::common::oracle_skipped();
    let oracle = std::fs::read_to_string(oracle).unwrap();
    let expected = crate::common::compare::skip_reasons(&oracle);

    let mapped = crate::common::map(&path);
    let elf = Elf::parse(&mapped).unwrap();
    let arch = Arch::from_elf_machine(elf.machine);
    let table = ElfFunctions::collect(&elf).unwrap();
    let sections = DebugSections::load(&elf).unwrap().unwrap();
    let dwarf = sections.dwarf();
    let features = Features::default();

    /// What `btf_encoder__save_func` keeps of one state, for the group rules.
    struct State {
        addr: u64,
        optimized_parms: bool,
        unexpected_reg: bool,
        reordered_parm: bool,
        signature_changed: bool,
        uncertain_parm_loc: bool,
    }
    let mut groups: BTreeMap<u32, Vec<State>> = BTreeMap::new();
    let start = std::time::Instant::now();
    let (mut nfuncs, mut ncus) = (0usize, 0usize);
    let mut in_functions = std::time::Duration::ZERO;
    let units = UnitIndex::new(&dwarf, unit_headers(&dwarf, &path).unwrap()).unwrap();
    for &header in units.headers() {
        let cu = Cu::new(&dwarf, header, true).unwrap();
        if cu.language.is_some_and(|l| l == gimli::DW_LANG_Rust) {
            continue;
        }
        ncus += 1;
        let types =
            decode_cu_types(&dwarf, &units, &cu, &features, &mut Default::default()).unwrap();
        let t = std::time::Instant::now();
        let funcs = decode_cu_functions(&dwarf, &cu, &types, &arch, &features).unwrap();
        in_functions += t.elapsed();
        nfuncs += funcs.len();
        for f in funcs {
            if f.declaration || !f.has_arg_names {
                continue;
            }
            let Some(entry) = table.find(f.name) else {
                continue;
            };
            groups.entry(entry).or_default().push(State {
                addr: f.addr,
                optimized_parms: f.optimized_parms,
                unexpected_reg: f.unexpected_reg,
                reordered_parm: f.reordered_parm,
                signature_changed: f.signature_changed,
                uncertain_parm_loc: f.uncertain_parm_loc,
            });
        }
    }
    eprintln!(
        "decoded {nfuncs} subprograms of {ncus} CUs in {:.2?}, {in_functions:.2?} of it in decode_cu_functions",
        start.elapsed()
    );

    let mut ours: BTreeMap<&str, Option<&str>> = BTreeMap::new();
    for (&entry, states) in &groups {
        let e = table.get(entry).unwrap();
        let optimized_symbol = |s: &State| {
            s.addr != 0
                && e.syms.iter().any(|sym| {
                    sym.addr == s.addr
                        && sym.name.find('.').is_some_and(|d| {
                            sym.name[d..].contains(".constprop") || sym.name[d..].contains(".isra")
                        })
                })
        };
        let skip_optimized =
            |s: &State| s.optimized_parms && (s.signature_changed || optimized_symbol(s));
        let canonical = if states.len() == 1 {
            &states[0]
        } else {
            let matching: Vec<&State> = states
                .iter()
                .filter(|s| e.syms.iter().any(|sym| sym.addr == s.addr))
                .collect();
            matching
                .iter()
                .find(|s| !skip_optimized(s))
                .or(matching.first())
                .copied()
                .unwrap_or(&states[0])
        };
        let mut reason = None;
        if states.iter().any(|s| s.unexpected_reg) {
            reason = Some("unexpected register usage for parameter");
        }
        if states.iter().any(|s| s.uncertain_parm_loc) {
            reason = Some("uncertain parameter location");
        }
        if states.iter().any(|s| s.reordered_parm) {
            reason = Some("reordered parameters");
        }
        if skip_optimized(canonical) {
            reason = Some("optimized parameters");
        }
        if e.ambiguous_addr {
            reason = Some("ambiguous address");
        }
        ours.insert(e.name, reason);
    }
    let (mismatches, unseen) = crate::common::compare::skip_reason_mismatches(&expected, &ours);
    eprintln!(
        "{} ELF functions checked, {} mismatches",
        ours.len(),
        mismatches.len()
    );
    for m in mismatches.iter().take(60) {
        eprintln!("  {m}");
    }
    assert!(
        unseen.is_empty(),
        "skipped by pahole but never saved here: {unseen:?}"
    );
    assert!(
        mismatches.is_empty(),
        "{} skip reasons differ from pahole 1.32's",
        mismatches.len()
    );
}

/// Negative control of `compare::skip_reason_mismatches`, the comparison
/// `vmlinux_skip_reasons_match_pahole_1_32` makes: pahole 1.32's reasons as "ours" pass; one
/// function with another reason, one skipped function encoded here, or one missing, fail.
#[test]
fn skip_reason_comparison_detects_a_changed_reason() {
    use std::collections::BTreeMap;
    let log = std::fs::read_to_string(crate::common::oracle_skipped()).unwrap();
    let expected = crate::common::compare::skip_reasons(&log);
    // "Inconsistent prototype" is never decided here (no BTF types): none is what matches it.
    let same: BTreeMap<&str, Option<&str>> = expected
        .iter()
        .map(|(&n, &r)| (n, (r != "inconsistet prototype").then_some(r)))
        .collect();
    let (m, unseen) = crate::common::compare::skip_reason_mismatches(&expected, &same);
    assert!(m.is_empty() && unseen.is_empty(), "{m:?} {unseen:?}");
    let (&name, _) = expected
        .iter()
        .find(|(_, &r)| r == "optimized parameters")
        .unwrap();
    let mut changed = same.clone();
    changed.insert(name, Some("reordered parameters"));
    let (m, _) = crate::common::compare::skip_reason_mismatches(&expected, &changed);
    assert_eq!(m.len(), 1, "{m:?}");
    assert!(m[0].starts_with(name), "{m:?}");
    changed.insert(name, None);
    let (m, _) = crate::common::compare::skip_reason_mismatches(&expected, &changed);
    assert_eq!(m.len(), 1, "an encoded function pahole skips passed: {m:?}");
    changed.remove(name);
    let (_, unseen) = crate::common::compare::skip_reason_mismatches(&expected, &changed);
    assert_eq!(unseen, [name.to_string()]);
}
