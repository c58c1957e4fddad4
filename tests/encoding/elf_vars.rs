//! The ELF functions table, kfunc discovery and variable encoding on small C programs compiled
//! at test time (and on the reference kernel when it is there).
//!
//! Oracles:
//! - the symbol table as `readelf -sW` prints it, for the functions table and for where every
//!   variable lives (section, offset, size, binding);
//! - Debian's pahole 1.24 for per-CPU variables. Its rules differ from pahole 1.32's (it
//!   starts from `STT_OBJECT` symbols of `.data..percpu` and uses the symbol's name and size,
//!   and its DATASEC size is the section size), so the programs are written where both give
//!   the same answer: every per-CPU variable has a symbol, a DWARF size equal to the symbol
//!   size, and the last one ends the section. Global variables (`global_var`) did not exist
//!   in 1.24 and are checked against the symbol table only;
//! - `bpftool btf dump file` parses both outputs (so it also accepts ours);
//! - for the kernel, pahole 1.32's output and `-V` log in `tests/data`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::common::*;
use dwarf2btf::btf::store::Store;
use dwarf2btf::btf::{write, Btf, Kind};
use dwarf2btf::config::Features;
use dwarf2btf::dwarf::foreign::UnitIndex;
use dwarf2btf::dwarf::types::decode_cu_types;
use dwarf2btf::dwarf::units::{unit_headers, Cu, DebugSections};
use dwarf2btf::dwarf::variables::decode_cu_variables;
use dwarf2btf::encode::concat::Concat;
use dwarf2btf::encode::types::{encode_cu_types, establishes_index, IndexRole};
use dwarf2btf::encode::variables::{PendingSecinfo, VarEncoder};
use dwarf2btf::input::elf::Elf;
use dwarf2btf::input::kfuncs::collect_kfuncs;
use dwarf2btf::input::symbols::ElfFunctions;

const VARS_C: &str = r#"
#define PCPU __attribute__((section(".data..percpu")))
struct pair { int a; long b; };
typedef unsigned long ulong_t;

PCPU int pcpu_int = 1;
PCPU static long pcpu_static __attribute__((used)) = 2;
PCPU struct pair pcpu_pair;
PCPU char pcpu_arr[13];
PCPU ulong_t pcpu_td = 5;
PCPU const int *pcpu_ptr;

int g_data = 3;
static int s_data __attribute__((used)) = 4;
int g_bss;
static int s_bss[4] __attribute__((used));
const int g_rodata = 7;
static const char s_ro[] __attribute__((used)) = "hello";
extern int g_decl_then_def;
int g_decl_then_def = 9;
extern int g_ext;

int use(int i) { return g_data + s_bss[i & 3] + g_ext + pcpu_int; }
"#;

/// The variables of `VARS_C` that have storage (all but `g_ext`).
const VAR_NAMES: [&str; 13] = [
    "pcpu_int",
    "pcpu_static",
    "pcpu_pair",
    "pcpu_arr",
    "pcpu_td",
    "pcpu_ptr",
    "g_data",
    "s_data",
    "g_bss",
    "s_bss",
    "g_rodata",
    "s_ro",
    "g_decl_then_def",
];

const MAIN_C: &str =
    "int use(int);\nint g_ext;\nint g_ext_def;\nint main(void) { return use(1); }\n";

/// Keeps `.data..percpu` out of `.data` when linking.
const PERCPU_LD: &str = "SECTIONS { .data..percpu : { *(.data..percpu) } } INSERT AFTER .data;\n";

const TAGS_C: &str = r#"
#define PCPU __attribute__((section(".data..percpu")))
#define TAG(x) __attribute__((btf_decl_tag(x)))
PCPU int tagged TAG("first") TAG("second") = 1;
PCPU long plain = 2;
int g_tagged TAG("global_tag") = 3;
"#;

const FA_C: &str = r#"
static __attribute__((noinline, used)) int helper(int x) { return x * 3; }
static __attribute__((noinline, used)) int zzz_last(int x) { return x * 7; }
int fa(int x) { return helper(x) + zzz_last(x) + 1; }
extern void slow_path(int) __attribute__((cold));
__attribute__((noinline)) int hot(int x)
{
	if (__builtin_expect(x > 1000, 0)) {
		slow_path(x);
		slow_path(x + 1);
		return -x;
	}
	return x * 2;
}
int multi(int x) { return x + 11; }
asm(".text\n"
    ".globl multi.isra.0\n.type multi.isra.0, @function\nmulti.isra.0:\n ret\n.size multi.isra.0, .-multi.isra.0\n"
    ".type multi.part.1, @function\nmulti.part.1:\n ret\n.size multi.part.1, .-multi.part.1\n"
    ".globl fa.localalias\n.type fa.localalias, @function\n.set fa.localalias, fa\n");
"#;

const FB_C: &str = r#"
static __attribute__((noinline, used)) int helper(int x) { return x * 5; }
static __attribute__((noinline, used)) int zzz_last(int x) { return x * 9; }
int fb(int x) { return helper(x) + zzz_last(x) + 2; }
__attribute__((cold, noinline)) void slow_path(int x) { asm volatile("" :: "r"(x)); }
"#;

/// Two BTF_SET8s as the kernel's macros lay them out: one with the KFUNCS flag, one without.
const KFUNCS_C: &str = r#"
#define ID(sym) ".local " sym "\n.type " sym ", STT_OBJECT\n.size " sym ", 4\n" sym ":\n.zero 4\n"
asm(".pushsection .BTF_ids,\"a\"\n"
    "__BTF_ID__set8__my_kfuncs:\n.zero 4\n.long 1\n"
    ID("__BTF_ID__func__kf_one__1") ".long 0x2011\n"
    ID("__BTF_ID__func__kf_two__2") ".long 0x1001\n"
    ID("__BTF_ID__func__kf_missing__3") ".long 0x5\n"
    ".size __BTF_ID__set8__my_kfuncs, .-__BTF_ID__set8__my_kfuncs\n"
    "__BTF_ID__set8__other:\n.zero 4\n.long 0\n"
    ID("__BTF_ID__func__not_kf__4") ".long 0x7\n"
    ".size __BTF_ID__set8__other, .-__BTF_ID__set8__other\n"
    ID("__BTF_ID__func__kf_two__5")
    ".popsection\n");
int kf_one(int x) { return x + 1; }
int kf_two(int x) { return x + 2; }
int not_kf(int x) { return x + 3; }
"#;

/// The compiled test programs.
struct Built {
    dir: PathBuf,
}

impl Built {
    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

fn compile(dir: &Path, cc: &str, args: &[&str]) {
    run_ok(Command::new(tool(cc)).current_dir(dir).args(args));
}

fn built() -> &'static Built {
    static BUILT: OnceLock<Built> = OnceLock::new();
    BUILT.get_or_init(|| {
        let dir = scratch("elf_vars");
        for (name, text) in [
            ("vars.c", VARS_C),
            ("main.c", MAIN_C),
            ("percpu.ld", PERCPU_LD),
            ("tags.c", TAGS_C),
            ("fa.c", FA_C),
            ("fb.c", FB_C),
            ("kfuncs.c", KFUNCS_C),
        ] {
            std::fs::write(dir.join(name), text).unwrap();
        }
        let ld = "-Wl,-T,percpu.ld";
        let builds: [(&str, &[&str]); 14] = [
            ("gcc", &["-O2", "-g", "-c", "vars.c", "-o", "vars-gcc.o"]),
            (
                "gcc",
                &["-O2", "-gdwarf-4", "-c", "vars.c", "-o", "vars-gcc-dw4.o"],
            ),
            (
                "clang",
                &["-O2", "-gdwarf-5", "-c", "vars.c", "-o", "vars-clang.o"],
            ),
            (
                "gcc",
                &[
                    "-O2",
                    "-g",
                    "-shared",
                    "-fPIC",
                    ld,
                    "vars.c",
                    "-o",
                    "vars-gcc.so",
                ],
            ),
            (
                "clang",
                &[
                    "-O2",
                    "-gdwarf-5",
                    "-shared",
                    "-fPIC",
                    ld,
                    "vars.c",
                    "-o",
                    "vars-clang.so",
                ],
            ),
            (
                "gcc",
                &[
                    "-O2",
                    "-g",
                    "-no-pie",
                    ld,
                    "vars.c",
                    "main.c",
                    "-o",
                    "vars-gcc.exe",
                ],
            ),
            (
                "clang",
                &["-O2", "-g", "-c", "tags.c", "-o", "tags-clang.o"],
            ),
            (
                "clang",
                &[
                    "--target=aarch64-linux-gnu",
                    "-O2",
                    "-g",
                    "-c",
                    "vars.c",
                    "-o",
                    "vars-aarch64.o",
                ],
            ),
            ("gcc", &["-O2", "-g", "-c", "fa.c", "-o", "fa.o"]),
            ("gcc", &["-O2", "-g", "-c", "fb.c", "-o", "fb.o"]),
            ("gcc", &["-r", "fa.o", "fb.o", "-o", "funcs-r.o"]),
            (
                "gcc",
                &[
                    "-O2", "-g", "-shared", "-fPIC", "fa.c", "fb.c", "-o", "funcs.so",
                ],
            ),
            ("gcc", &["-O2", "-g", "-c", "kfuncs.c", "-o", "kfuncs.o"]),
            (
                "gcc",
                &[
                    "-O2",
                    "-g",
                    "-shared",
                    "-fPIC",
                    "kfuncs.c",
                    "-o",
                    "kfuncs.so",
                ],
            ),
        ];
        for (cc, args) in builds {
            compile(&dir, cc, args);
        }
        // An ELF with no .symtab.
        std::fs::copy(dir.join("funcs.so"), dir.join("funcs-stripped.so")).unwrap();
        run_ok(
            Command::new("strip")
                .arg("--strip-all")
                .arg(dir.join("funcs-stripped.so")),
        );
        Built { dir }
    })
}

/// Encodes the types, then the variables, of every CU of `path`, then the DATASECs, as
/// pahole does (functions aside), and writes the raw BTF next to it. Returns that file and
/// the messages the variable encoder gave.
fn encode_vars(path: &Path, features: &Features, out: &Path) -> (PathBuf, Vec<String>) {
    let mapped = crate::common::map(path);
    let elf = Elf::parse(&mapped).unwrap();
    let sections = DebugSections::load(&elf).unwrap().expect("has DWARF");
    let dwarf = sections.dwarf();
    let venc = VarEncoder::new(&elf, features).unwrap();
    // One chunk for the whole file: arrays get the index placeholder, which the
    // concatenation into `btf` resolves.
    let mut chunk = Btf::new();
    let mut index_local = None;
    let mut pending = Vec::new();
    let mut msgs = Vec::new();
    let little = elf.endian == dwarf2btf::btf::Endian::Little;
    let units = UnitIndex::new(&dwarf, unit_headers(&dwarf, path).unwrap()).unwrap();
    for &header in units.headers() {
        let cu = Cu::new(&dwarf, header, little).unwrap();
        let types =
            decode_cu_types(&dwarf, &units, &cu, features, &mut Default::default()).unwrap();
        let role = match index_local {
            Some(_) => IndexRole::After,
            None if establishes_index(&types) => IndexRole::Establish,
            None => IndexRole::Before,
        };
        let off = chunk.type_cnt() - 1;
        let index = encode_cu_types(&mut chunk, &types, features, cu.offset as u64, role).unwrap();
        index_local = index_local.or(index);
        let vars = decode_cu_variables(&dwarf, &cu, &types, features).unwrap();
        let m = venc
            .encode_cu(&mut chunk, &vars, off, &mut pending)
            .unwrap();
        msgs.extend(m.into_iter().map(|m| m.text));
    }
    let mut btf = Btf::new();
    btf.endian = elf.endian;
    let mut store = Store::new();
    let shift = Concat::default()
        .append(&mut btf, &mut store, &chunk, index_local)
        .unwrap();
    for p in &mut pending {
        p.var_id += shift;
    }
    btf.take_back_held(&store);
    venc.add_datasecs(&mut btf, &mut pending).unwrap();
    std::fs::write(out, write::to_bytes(&btf)).unwrap();
    (out.to_path_buf(), msgs)
}

/// One DATASEC entry as compared: variable name, linkage, type, offset, size, decl tags.
type VarRow = (String, String, String, u32, u32, Vec<String>);

/// A DATASEC as bpftool prints it: name, size, `(VAR id, offset, size)` entries.
type RawDatasec = (String, u32, Vec<(u32, u32, u32)>);

/// DATASEC name → (size, entries), from `bpftool btf dump file`.
fn datasecs(btf_file: &Path) -> BTreeMap<String, (u32, Vec<VarRow>)> {
    let out = run_ok(
        Command::new(tool("bpftool"))
            .args(["btf", "dump", "file"])
            .arg(btf_file),
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let mut types: BTreeMap<u32, (String, String, String)> = BTreeMap::new();
    let mut secs: Vec<RawDatasec> = Vec::new();
    let mut tags: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix('\t') {
            if let Some(sec) = secs.last_mut().filter(|_| rest.contains(" offset=")) {
                let id = field(rest, "type_id=").parse().unwrap();
                let off = field(rest, "offset=").parse().unwrap();
                let size = field(rest, "size=").parse().unwrap();
                sec.2.push((id, off, size));
            }
            continue;
        }
        let Some((id, rest)) = line.strip_prefix('[').and_then(|l| l.split_once("] ")) else {
            continue;
        };
        let id: u32 = id.parse().unwrap();
        let (kind, rest) = rest.split_once(' ').unwrap();
        let name = rest.split('\'').nth(1).unwrap_or("").to_string();
        match kind {
            "DATASEC" => secs.push((name.clone(), field(rest, "size=").parse().unwrap(), vec![])),
            "DECL_TAG" => tags
                .entry(field(rest, "type_id=").parse().unwrap())
                .or_default()
                .push(name.clone()),
            _ => {}
        }
        types.insert(id, (kind.to_string(), name, rest.to_string()));
    }
    let mut out = BTreeMap::new();
    for (name, size, entries) in secs {
        let rows = entries
            .into_iter()
            .map(|(id, off, size)| {
                let (kind, vname, rest) = &types[&id];
                assert_eq!(kind, "VAR");
                let linkage = field(rest, "linkage=").to_string();
                let ty = describe(&types, field(rest, "type_id=").parse().unwrap(), 0);
                let t = tags.get(&id).cloned().unwrap_or_default();
                (vname.clone(), linkage, ty, off, size, t)
            })
            .collect();
        out.insert(name, (size, rows));
    }
    out
}

/// The value after `key` in a bpftool line, up to the next space or comma.
fn field<'t>(line: &'t str, key: &str) -> &'t str {
    let at = line
        .find(&format!(" {key}"))
        .map(|i| i + 1)
        .or_else(|| line.starts_with(key).then_some(0))
        .unwrap_or_else(|| panic!("no {key} in {line}"));
    line[at + key.len()..].split([' ', ',']).next().unwrap()
}

/// A C-like spelling of type `id`, independent of type ids.
fn describe(types: &BTreeMap<u32, (String, String, String)>, id: u32, depth: usize) -> String {
    if id == 0 {
        return "void".into();
    }
    assert!(depth < 32, "type loop");
    let (kind, name, rest) = &types[&id];
    let inner = |key: &str| describe(types, field(rest, key).parse().unwrap(), depth + 1);
    match kind.as_str() {
        "PTR" => format!("{} *", inner("type_id=")),
        "CONST" | "VOLATILE" | "RESTRICT" => {
            format!("{} {}", kind.to_lowercase(), inner("type_id="))
        }
        "ARRAY" => format!("{}[{}]", inner("type_id="), field(rest, "nr_elems=")),
        "STRUCT" | "UNION" | "ENUM" => format!("{} {name}", kind.to_lowercase()),
        // pahole's output is deduplicated, ours here is not: a forward declaration may stand
        // for the full type.
        "FWD" if rest.contains("fwd_kind=union") => format!("union {name}"),
        "FWD" => format!("struct {name}"),
        _ => name.clone(),
    }
}

fn features(list: &str) -> Features {
    Features::from_lists(&[list.to_string()], true).unwrap().0
}

#[test]
fn percpu_vars_match_debian_pahole() {
    let b = built();
    let inputs = [
        "vars-gcc.o",
        "vars-gcc-dw4.o",
        "vars-clang.o",
        "vars-gcc.so",
        "vars-clang.so",
        "vars-gcc.exe",
        "tags-clang.o",
    ];
    for input in inputs {
        let src = b.path(input);
        let (ours, msgs) = encode_vars(
            &src,
            &Features::default(),
            &b.path(&format!("{input}.ours.btf")),
        );
        let theirs = b.path(&format!("{input}.pahole.btf"));
        let _ = std::fs::remove_file(&theirs);
        run_ok(
            Command::new(oracle_pahole())
                .arg("-J")
                .arg(format!("--btf_encode_detached={}", theirs.display()))
                .arg(&src),
        );
        let ours_secs = datasecs(&ours);
        assert_eq!(
            ours_secs,
            datasecs(&theirs),
            "{input}: VAR/DATASEC differ from pahole 1.24"
        );
        let (size, rows) = &ours_secs[".data..percpu"];
        assert!(*size > 0 && rows.len() >= 2, "{input}: {rows:?}");
        assert!(
            msgs.iter().any(|m| m.contains("encoded")),
            "{input}: no -V message: {msgs:?}"
        );
    }
}

#[test]
fn percpu_vars_are_typed_and_tagged() {
    let b = built();
    let (ours, _) = encode_vars(
        &b.path("vars-gcc.o"),
        &Features::default(),
        &b.path("typed.btf"),
    );
    let secs = datasecs(&ours);
    let rows: BTreeMap<&str, (&str, &str, u32)> = secs[".data..percpu"]
        .1
        .iter()
        .map(|r| (r.0.as_str(), (r.1.as_str(), r.2.as_str(), r.4)))
        .collect();
    assert_eq!(rows["pcpu_static"], ("static", "long int", 8));
    assert_eq!(rows["pcpu_pair"], ("global", "struct pair", 16));
    assert_eq!(rows["pcpu_arr"], ("global", "char[13]", 13));
    assert_eq!(rows["pcpu_td"], ("global", "ulong_t", 8));
    assert_eq!(rows["pcpu_ptr"], ("global", "const int *", 8));
    assert_eq!(secs.len(), 1, "only .data..percpu without global_var");

    // Clang's decl tags, and none without the decl_tag feature.
    let (tagged, _) = encode_vars(
        &b.path("tags-clang.o"),
        &Features::default(),
        &b.path("tags.btf"),
    );
    let secs = datasecs(&tagged);
    assert_eq!(secs[".data..percpu"].1[0].5, ["first", "second"]);
    let (untagged, _) = encode_vars(
        &b.path("tags-clang.o"),
        &features("var"),
        &b.path("untagged.btf"),
    );
    assert!(datasecs(&untagged)[".data..percpu"].1[0].5.is_empty());
}

/// Section index → (name, `sh_addr`), from `readelf -SW`.
type Sections = BTreeMap<u32, (String, u64)>;
/// OBJECT symbol name → (section index, value, size, binding), from `readelf -sW`.
type Objects = BTreeMap<String, (u32, u64, u64, String)>;

/// The section table and the OBJECT symbols of `.symtab`, from readelf.
fn readelf_objects(path: &Path) -> (Sections, Objects) {
    let out = run_ok(Command::new("readelf").arg("-SW").arg(path));
    let mut secs = BTreeMap::new();
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        let Some((idx, rest)) = line
            .trim_start()
            .strip_prefix('[')
            .and_then(|l| l.split_once(']'))
        else {
            continue;
        };
        let Ok(idx) = idx.trim().parse::<u32>() else {
            continue;
        };
        let cols: Vec<&str> = rest.split_whitespace().collect();
        if cols.len() >= 3 {
            secs.insert(
                idx,
                (
                    cols[0].to_string(),
                    u64::from_str_radix(cols[2], 16).unwrap(),
                ),
            );
        }
    }
    let mut objs = BTreeMap::new();
    for (_, cols) in readelf_symtab(path) {
        if cols[3] == "OBJECT" {
            if let Ok(ndx) = cols[6].parse::<u32>() {
                let value = u64::from_str_radix(&cols[1], 16).unwrap();
                let size = match cols[2].strip_prefix("0x") {
                    Some(hex) => u64::from_str_radix(hex, 16).unwrap(),
                    None => cols[2].parse().unwrap(),
                };
                objs.insert(cols[7].to_string(), (ndx, value, size, cols[4].to_string()));
            }
        }
    }
    (secs, objs)
}

/// The `.symtab` lines of `readelf -sW`, split in columns (index, value, size, type, bind,
/// vis, ndx, name), with the line number.
fn readelf_symtab(path: &Path) -> Vec<(usize, Vec<String>)> {
    let out = run_ok(Command::new("readelf").arg("-sW").arg(path));
    let text = String::from_utf8(out.stdout).unwrap();
    let mut in_symtab = false;
    let mut rows = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.starts_with("Symbol table") {
            in_symtab = line.contains("'.symtab'");
            continue;
        }
        let cols: Vec<String> = line.split_whitespace().map(String::from).collect();
        if in_symtab && cols.len() == 8 && cols[0].ends_with(':') {
            rows.push((n, cols));
        }
    }
    rows
}

#[test]
fn global_vars_match_the_symbol_table() {
    let b = built();
    let f = features("+global_var");
    for input in [
        "vars-gcc.o",
        "vars-gcc-dw4.o",
        "vars-clang.o",
        "vars-gcc.so",
        "vars-clang.so",
        "vars-gcc.exe",
    ] {
        let path = b.path(input);
        let (ours, _) = encode_vars(&path, &f, &b.path(&format!("{input}.global.btf")));
        let secs = datasecs(&ours);
        let (sections, objects) = readelf_objects(&path);
        let mut seen = BTreeSet::new();
        for (sec, (_, rows)) in &secs {
            for (name, linkage, _, off, size, _) in rows {
                let (ndx, value, sym_size, bind) = objects
                    .get(name)
                    .unwrap_or_else(|| panic!("{input}: {name} is not an OBJECT symbol"));
                let (sec_name, sh_addr) = &sections[ndx];
                assert_eq!(sec_name, sec, "{input}: {name}");
                assert_eq!(u64::from(*off), value - sh_addr, "{input}: {name}");
                assert_eq!(u64::from(*size), *sym_size, "{input}: {name}");
                let expect = if bind == "LOCAL" { "static" } else { "global" };
                assert_eq!(linkage, expect, "{input}: {name}");
                assert!(seen.insert(name.clone()), "{input}: {name} twice");
            }
        }
        let mut expected: BTreeSet<String> = VAR_NAMES.iter().map(|s| s.to_string()).collect();
        if input.ends_with(".exe") {
            expected.insert("g_ext".into());
            expected.insert("g_ext_def".into());
        }
        assert_eq!(seen, expected, "{input}");
        // Entries sorted by offset; size = end of the last one.
        for (sec, (size, rows)) in &secs {
            assert!(rows.windows(2).all(|w| w[0].3 <= w[1].3), "{input} {sec}");
            let last = rows.last().unwrap();
            assert_eq!(*size, last.3 + last.4, "{input} {sec}");
        }
    }
}

/// The functions table built independently from `readelf -sW`: base name → symbols.
fn expected_functions(path: &Path) -> BTreeMap<Vec<u8>, Vec<(String, u64)>> {
    let mut map: BTreeMap<Vec<u8>, Vec<(String, u64)>> = BTreeMap::new();
    for (_, cols) in readelf_symtab(path) {
        if cols[3] != "FUNC" {
            continue;
        }
        let name = cols[7].clone();
        if let Some(dot) = name.find('.') {
            if name[dot..].contains(".cold") || name[dot..].contains(".part") {
                continue;
            }
        }
        let base = name.split('.').next().unwrap().as_bytes().to_vec();
        map.entry(base)
            .or_default()
            .push((name, u64::from_str_radix(&cols[1], 16).unwrap()));
    }
    map
}

fn check_functions_against_readelf(path: &Path) -> ElfFunctions {
    let mapped = crate::common::map(path);
    let elf = Elf::parse(&mapped).unwrap();
    let funcs = ElfFunctions::collect(&elf).unwrap();
    let expected = expected_functions(path);
    assert_eq!(funcs.len(), expected.len(), "{}", path.display());
    for (e, (base, syms)) in funcs.entries().zip(&expected) {
        assert_eq!(e.name.as_bytes(), &base[..]);
        let got: Vec<(String, u64)> = e
            .syms
            .iter()
            .map(|s| (s.name.to_string(), s.addr))
            .collect();
        assert_eq!(&got, syms, "{}", e.name);
        let distinct: BTreeSet<u64> = syms.iter().map(|s| s.1).collect();
        assert_eq!(e.ambiguous_addr, distinct.len() > 1, "{}", e.name);
        assert_eq!(
            funcs.find(base),
            funcs
                .entries()
                .position(|x| x.name == e.name)
                .map(|i| i as u32)
        );
    }
    funcs
}

#[test]
fn elf_functions_group_like_the_symbol_table() {
    let b = built();
    for input in ["funcs.so", "funcs-r.o", "fa.o"] {
        let funcs = check_functions_against_readelf(&b.path(input));
        let get = |n: &str| funcs.get(funcs.find(n.as_bytes()).unwrap()).unwrap();
        // `hot.cold` is a fragment: dropped. `multi.part.1` likewise.
        assert_eq!(get("hot").syms.len(), 1, "{input}");
        assert!(funcs
            .entries()
            .all(|e| e.syms.iter().all(|s| !s.name.contains(".cold"))));
        let multi: Vec<&str> = get("multi").syms.iter().map(|s| s.name).collect();
        assert_eq!(multi, ["multi.isra.0", "multi"], "{input}");
        // An alias at the same address is not ambiguous.
        assert!(
            !get("fa").ambiguous_addr && get("fa").syms.len() == 2,
            "{input}"
        );
        if input != "fa.o" {
            // Two static `helper`s from two objects: ambiguous, and so is `zzz_last`, the
            // alphabetically last entry that pahole 1.32 would leave unflagged.
            assert!(get("helper").ambiguous_addr, "{input}");
            assert_eq!(funcs.entries().last().unwrap().name, "zzz_last", "{input}");
            assert!(get("zzz_last").ambiguous_addr, "{input}");
        }
        assert!(get("multi").ambiguous_addr, "{input}");
        assert_eq!(funcs.find(b"multi.isra.0"), None);
    }
}

/// Relocatable objects are relocated unit by unit, each unit the same bytes as the whole
/// relocated section's: two compile units (`gcc -r`), DWARF 4 and 5 from gcc, DWARF 5 from
/// clang, and arm64's relocation types.
#[test]
fn units_of_a_relocatable_object_relocate_on_their_own() {
    for (object, units) in [
        ("funcs-r.o", 2),
        ("vars-gcc.o", 1),
        ("vars-gcc-dw4.o", 1),
        ("tags-clang.o", 1),
        ("vars-aarch64.o", 1),
    ] {
        let path = built().dir.join(object);
        assert_eq!(
            crate::common::assert_units_relocate_as_the_whole_section(&path),
            units,
            "{object}"
        );
    }
}

#[test]
fn missing_symtab_is_distinguishable() {
    let path = built().path("funcs-stripped.so");
    let mapped = crate::common::map(&path);
    let elf = Elf::parse(&mapped).unwrap();
    assert!(ElfFunctions::collect_opt(&elf).unwrap().is_none());
    match ElfFunctions::collect(&elf) {
        Err(dwarf2btf::Error::BadSection { section, .. }) => assert_eq!(section, ".symtab"),
        other => panic!("expected a .symtab error, got {other:?}"),
    }
}

#[test]
fn kfuncs_come_from_btf_ids_set8_pairs() {
    for input in ["kfuncs.o", "kfuncs.so"] {
        let path = built().path(input);
        let mapped = crate::common::map(&path);
        let elf = Elf::parse(&mapped).unwrap();
        let mut funcs = ElfFunctions::collect(&elf).unwrap();
        let warnings = collect_kfuncs(&elf, &mut funcs).unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        let marked: Vec<(&str, u32)> = funcs
            .entries()
            .filter(|e| e.kfunc)
            .map(|e| (e.name, e.kfunc_flags))
            .collect();
        // kf_two's second id lies outside every set; not_kf's set lacks BTF_SET8_KFUNCS.
        assert_eq!(marked, [("kf_one", 0x2011), ("kf_two", 0x1001)], "{input}");
    }
    // No .BTF_ids: nothing to do.
    let path = built().path("funcs.so");
    assert_no_kfuncs(&path);
}

/// `path` has no kfunc set: nothing is collected and no function is marked.
fn assert_no_kfuncs(path: &Path) {
    let mapped = crate::common::map(path);
    let elf = Elf::parse(&mapped).unwrap();
    let mut funcs = ElfFunctions::collect(&elf).unwrap();
    assert!(collect_kfuncs(&elf, &mut funcs).unwrap().is_empty());
    assert!(funcs.entries().all(|e| !e.kfunc));
}

#[test]
fn kernel_functions_table_and_ambiguous_names() {
    let Some(vmlinux) = vmlinux() else { return };
    let funcs = check_functions_against_readelf(&vmlinux);
    eprintln!("vmlinux: {} ELF function entries", funcs.len());
    // The rest holds for the pinned image, whose skip log tests/data has.
    if pinned_vmlinux("kernel_functions_table_and_ambiguous_names (ambiguous names)").is_none() {
        return;
    }
    assert!(funcs.len() > 40_000, "{}", funcs.len());
    let log = std::fs::read_to_string(oracle_skipped()).unwrap();
    let last = funcs.entries().last().unwrap().name;
    let mut checked = 0;
    for line in log.lines().filter(|l| l.ends_with("ambiguous address")) {
        let name = line.split(" : ").next().unwrap();
        let e = funcs
            .get(
                funcs
                    .find(name.as_bytes())
                    .unwrap_or_else(|| panic!("{name} not found")),
            )
            .unwrap();
        assert!(
            e.ambiguous_addr || name == last,
            "{name} should be ambiguous"
        );
        checked += 1;
    }
    assert_eq!(checked, 297);
    // This 6.1 kernel's .BTF_ids has no set8 with BTF_SET8_KFUNCS (pahole 1.32 adds no
    // "bpf_kfunc" decl tag for it).
    assert_no_kfuncs(&vmlinux);
}

#[test]
fn kernel_percpu_vars_match_pahole_1_32() {
    let Some(vmlinux) = pinned_vmlinux("kernel_percpu_vars_match_pahole_1_32") else {
        return;
    };
    let features = features(KERNEL_FEATURES.trim_start_matches("--btf_features="));
    let mapped = crate::common::map(&vmlinux);
    let elf = Elf::parse(&mapped).unwrap();
    let sections = DebugSections::load(&elf).unwrap().unwrap();
    let dwarf = sections.dwarf();
    let venc = VarEncoder::new(&elf, &features).unwrap();
    assert!(venc.has_percpu_section());
    let mut btf = Btf::new();
    let mut pending: Vec<PendingSecinfo> = Vec::new();
    // Type ids are not compared: only their count matters, to keep VAR ids plausible.
    let mut type_id_off = 0;
    let units = UnitIndex::new(&dwarf, unit_headers(&dwarf, &vmlinux).unwrap()).unwrap();
    for &header in units.headers() {
        let cu = Cu::new(&dwarf, header, true).unwrap();
        if cu.language.is_some_and(|l| l.0 == 0x1c) {
            continue; // --lang_exclude=rust
        }
        let types =
            decode_cu_types(&dwarf, &units, &cu, &features, &mut Default::default()).unwrap();
        let vars = decode_cu_variables(&dwarf, &cu, &types, &features).unwrap();
        venc.encode_cu(&mut btf, &vars, type_id_off, &mut pending)
            .unwrap();
        type_id_off += types.entries.len() as u32;
    }
    venc.add_datasecs(&mut btf, &mut pending).unwrap();
    let rows = |btf: &Btf| -> Vec<(String, u32, u32, u32, Vec<String>)> {
        let mut tags: BTreeMap<u32, Vec<String>> = BTreeMap::new();
        for t in btf.own_types().filter(|t| t.k() == Kind::DeclTag) {
            tags.entry(t.size_or_type())
                .or_default()
                .push(btf.name(t.name_off()).into_owned());
        }
        let secs: Vec<_> = btf.own_types().filter(|t| t.k() == Kind::Datasec).collect();
        assert_eq!(secs.len(), 1);
        assert_eq!(btf.name(secs[0].name_off()), ".data..percpu");
        secs[0]
            .secinfos()
            .map(|s| {
                let v = btf.type_by_id(s.type_id).unwrap();
                let name = btf.name(v.name_off()).into_owned();
                let t = tags.get(&s.type_id).cloned().unwrap_or_default();
                (name, v.extra(), s.offset, s.size, t)
            })
            .collect()
    };
    let ours = rows(&btf);
    let oracle = dwarf2btf::btf::read::read_file(&oracle_btf(), None).unwrap();
    let theirs = rows(&oracle);
    assert_eq!(ours.len(), 357);
    assert_eq!(ours, theirs);
    let size = |b: &Btf| {
        b.own_types()
            .find(|t| t.k() == Kind::Datasec)
            .unwrap()
            .size_or_type()
    };
    assert_eq!(size(&btf), size(&oracle));
}
