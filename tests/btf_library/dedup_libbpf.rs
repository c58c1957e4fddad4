//! Differential tests of `dwarf2btf::dedup` against libbpf v1.7.0 `btf__dedup` (through
//! `libbpf-sys`): kernel-selftest-style cases, split BTF, randomly generated BTF, and the kernel.
//!
//! Every case runs in two modes — raw bytes parsed by both sides (string dedup runs) and BTF
//! built through the add API (strings already deduplicated, string phase skipped) — and each
//! with and without `force_collisions`. Outputs must be byte-identical.

use crate::common::libbpf_oracle;
#[allow(unreachable_pub)] // public in the fuzz crate, which shares it
use crate::common::random_btf;

use std::sync::Arc;

use crate::common::compare::{self, btf_sections as sections};
use dwarf2btf::btf::kinds::{self, Kind};
use dwarf2btf::btf::{read, types, write, Btf};
use dwarf2btf::dedup::{dedup, DedupOptions};
use dwarf2btf::rng::Rng;
use libbpf_oracle::Op;

// ---------------------------------------------------------------------------------------------
// dwarf2btf side

fn parse_base(base: Option<&[u8]>) -> Option<Arc<Btf>> {
    base.map(|b| {
        let mut btf = read::parse(b, None).expect("base parses");
        btf.index_strings();
        Arc::new(btf)
    })
}

/// Our options for a case: with colliding hashes the single-threaded path runs, otherwise
/// the threaded one, so that both are compared with libbpf on every case.
fn opts(force: bool) -> DedupOptions {
    DedupOptions {
        force_collisions: force,
        threads: if force { 1 } else { 0 },
        ..DedupOptions::default()
    }
}

/// Parse, dedup, serialise; `Err` as text.
fn ours_bytes(data: &[u8], base: Option<&[u8]>, force: bool) -> Result<Vec<u8>, String> {
    let mut btf = read::parse(data, parse_base(base)).map_err(|e| e.to_string())?;
    dedup(&mut btf, &opts(force)).map_err(|e| e.to_string())?;
    Ok(write::to_bytes(&btf))
}

/// Re-adds every type of `src` to a fresh builder (libbpf `btf__add_btf` into an empty BTF).
fn rebuild(src: &Btf, base: Option<Arc<Btf>>) -> Btf {
    let mut dst = match base {
        Some(b) => Btf::new_split(b),
        None => Btf::new(),
    };
    for t in src.own_types() {
        let mut words = t.words.to_vec();
        let mut strs = Vec::new();
        types::for_each_str_off_mut(t.k(), &mut words, |s| strs.push(*s));
        let mapped: Vec<u32> = strs
            .iter()
            .map(|&s| {
                if s == 0 || s < src.start_str_off() {
                    s
                } else {
                    dst.add_str(src.str_at(s).expect("valid string"))
                }
            })
            .collect();
        let mut it = mapped.into_iter();
        types::for_each_str_off_mut(t.k(), &mut words, |s| *s = it.next().unwrap());
        dst.push_record(&words).unwrap();
    }
    dst
}

fn ours_built(data: &[u8], base: Option<&[u8]>, force: bool) -> (Vec<u8>, Result<Vec<u8>, String>) {
    let base = parse_base(base);
    let src = read::parse(data, base.clone()).expect("parses");
    let mut btf = rebuild(&src, base);
    let pre = write::to_bytes(&btf);
    let r = dedup(&mut btf, &opts(force))
        .map(|()| write::to_bytes(&btf))
        .map_err(|e| e.to_string());
    (pre, r)
}

// ---------------------------------------------------------------------------------------------
// comparison

/// Panics with [`compare::dedup_mismatch`]'s account when our output is not libbpf's.
fn assert_same(name: &str, lib: &Result<Vec<u8>, i32>, ours: &Result<Vec<u8>, String>) {
    if let Some(m) = compare::dedup_mismatch(name, lib, ours) {
        panic!("{m}");
    }
}

/// Parsed and built modes, with and without forced collisions.
fn check_bytes(name: &str, data: &[u8], base: Option<&[u8]>) {
    for force in [false, true] {
        let name = format!("{name} (parsed, force_collisions={force})");
        let lib = libbpf_oracle::dedup_bytes(data, base, force);
        let ours = ours_bytes(data, base, force);
        assert_same(&name, &lib, &ours);

        let name = name.replace("parsed", "built");
        let lib = libbpf_oracle::dedup_built(data, base, force);
        let (pre, ours) = ours_built(data, base, force);
        if let Ok((lpre, _)) = &lib {
            assert_eq!(sections(lpre), sections(&pre), "{name}: inputs differ");
        }
        assert_same(&name, &lib.map(|(_, post)| post), &ours);
    }
}

/// The same add-API sequence through libbpf and through our builder, then both modes.
fn check_ops(name: &str, ops: &[Op], base: Option<&[u8]>) {
    let mut ours = match parse_base(base) {
        Some(b) => Btf::new_split(b),
        None => Btf::new(),
    };
    for op in ops {
        op.add_to(&mut ours)
            .unwrap_or_else(|e| panic!("{name}: {op:?}: {e}"));
    }
    let pre = write::to_bytes(&ours);
    for force in [false, true] {
        let lib = libbpf_oracle::dedup_ops(ops, base, force);
        let (lpre, _) = lib
            .as_ref()
            .unwrap_or_else(|e| panic!("{name}: libbpf error {e}"));
        assert_eq!(
            sections(lpre),
            sections(&pre),
            "{name}: built inputs differ"
        );
        let mut mine = ours.clone();
        let r = dedup(&mut mine, &opts(force))
            .map(|()| write::to_bytes(&mine))
            .map_err(|e| e.to_string());
        let lib = lib.map(|(_, post)| post);
        if let Err(e) = &r {
            eprintln!("{name}: ours: {e}; libbpf: {:?}", lib.as_ref().err());
        }
        assert_same(&format!("{name} (add API, force={force})"), &lib, &r);
    }
    check_bytes(name, &pre, base);
}

/// Raw BTF from explicit records and an explicit string section.
fn raw(records: &[&[u32]], strs: &[u8]) -> Vec<u8> {
    let types: Vec<u8> = records
        .iter()
        .flat_map(|r| r.iter())
        .flat_map(|w| w.to_le_bytes())
        .collect();
    let mut out = Vec::new();
    out.extend_from_slice(&0xeb9fu16.to_le_bytes());
    out.extend_from_slice(&[1, 0]);
    for v in [
        24u32,
        0,
        types.len() as u32,
        types.len() as u32,
        strs.len() as u32,
    ] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.extend_from_slice(&types);
    out.extend_from_slice(strs);
    out
}

fn info(k: Kind, vlen: u32, kflag: bool) -> u32 {
    kinds::info(k, vlen, kflag)
}

// ---------------------------------------------------------------------------------------------
// selftest-style cases (tools/testing/selftests/bpf/prog_tests/btf.c dedup_tests[])

const SIGNED: u32 = kinds::INT_SIGNED as u32;

#[test]
fn unused_strings_filtering() {
    // "\0unused\0int\0foo\0bar\0long\0" with INT 'int' and INT 'long' referencing it.
    let strs = b"\0unused\0int\0foo\0bar\0long\0";
    let int = [8, info(Kind::Int, 0, false), 4, kinds::int_data(1, 0, 32)];
    let long = [20, info(Kind::Int, 0, false), 8, kinds::int_data(1, 0, 64)];
    check_bytes("unused strings", &raw(&[&int, &long], strs), None);
}

#[test]
fn duplicate_and_suffix_strings() {
    // Duplicated strings, a suffix reference ("nt" inside "int") and an empty string at a
    // non-zero offset.
    let strs = b"\0int\0x\0int\0\0long\0";
    let a = [1, info(Kind::Int, 0, false), 4, kinds::int_data(1, 0, 32)];
    let b = [9, info(Kind::Int, 0, false), 4, kinds::int_data(1, 0, 32)];
    let c = [2, info(Kind::Int, 0, false), 2, kinds::int_data(0, 0, 16)];
    let s = [7, info(Kind::Struct, 2, false), 8, 5, 1, 0, 13, 2, 32];
    let t = [14, info(Kind::Typedef, 0, false), 4];
    check_bytes("suffix strings", &raw(&[&a, &b, &c, &s, &t], strs), None);
}

#[test]
fn struct_example_1() {
    use Op::*;
    let ops = [
        Int("int", 4, SIGNED),        // [1]
        Array(1, 1, 16),              // [2] int[16]
        Struct(Some("s"), 88),        // [3]
        Field(Some("next"), 4, 0, 0), //   struct s *next
        Field(Some("a"), 5, 64, 0),   //   const int *a
        Field(Some("b"), 2, 128, 0),  //   int b[16]
        Field(Some("c"), 1, 640, 0),  //   int c
        Field(Some("d"), 15, 672, 0), //   float d
        Ptr(3),                       // [4]
        Ptr(6),                       // [5]
        Const(1),                     // [6]
        DeclTag("tag", 3, -1),        // [7]
        DeclTag("tag", 3, 1),         // [8]
        // full copy, references in a different order
        Int("int", 4, SIGNED),         // [9]
        Array(9, 9, 16),               // [10]
        Struct(Some("s"), 88),         // [11]
        Field(Some("next"), 12, 0, 0), //
        Field(Some("a"), 13, 64, 0),   //
        Field(Some("b"), 10, 128, 0),  //
        Field(Some("c"), 9, 640, 0),   //
        Field(Some("d"), 15, 672, 0),  //
        Ptr(11),                       // [12]
        Ptr(14),                       // [13]
        Const(9),                      // [14]
        Float("float", 4),             // [15]
        DeclTag("tag", 11, -1),        // [16]
        DeclTag("tag", 11, 1),         // [17]
        DeclTag("tag", 11, 1),         // [18]
    ];
    check_ops("struct example #1", &ops, None);
}

#[test]
fn struct_example_2() {
    use Op::*;
    // Two CUs; in the second, members go through FWDs and typedefs.
    let ops = [
        Int("int", 4, SIGNED),        // [1]
        Struct(Some("s"), 16),        // [2]
        Field(Some("x"), 3, 0, 0),    //   struct t *x
        Field(Some("y"), 1, 64, 0),   //   int y
        Ptr(4),                       // [3]
        Struct(Some("t"), 8),         // [4]
        Field(Some("back"), 5, 0, 0), //   struct s *back
        Ptr(2),                       // [5]
        // CU 2
        Int("int", 4, SIGNED),      // [6]
        Fwd("t", false),            // [7]
        Ptr(7),                     // [8]
        Struct(Some("s"), 16),      // [9]
        Field(Some("x"), 8, 0, 0),  //
        Field(Some("y"), 6, 64, 0), //
        Typedef("s_t", 9),          // [10]
        Ptr(10),                    // [11]
        Struct(Some("u"), 8),       // [12]
        Field(Some("p"), 11, 0, 0), //
        Fwd("s", false),            // [13]
        Struct(Some("v"), 8),       // [14]
        Field(Some("q"), 15, 0, 0), //
        Ptr(13),                    // [15]
        Typedef("s_t", 2),          // [16]
    ];
    check_ops("struct example #2", &ops, None);
}

#[test]
fn standalone_fwd_declarations() {
    use Op::*;
    let ops = [
        Fwd("s1", false),          // [1]
        Fwd("u1", true),           // [2]
        Ptr(1),                    // [3]
        Ptr(2),                    // [4]
        Int("int", 4, SIGNED),     // [5]
        Struct(Some("s1"), 4),     // [6]
        Field(Some("x"), 5, 0, 0), //
        Union(Some("u1"), 4),      // [7]
        Field(Some("x"), 5, 0, 0), //
        Fwd("s2", true),           // [8] wrong kind for struct s2 below
        Struct(Some("s2"), 4),     // [9]
        Field(Some("x"), 5, 0, 0), //
        Fwd("u2", false),          // [10] wrong kind for union u2
        Union(Some("u2"), 4),      // [11]
        Field(Some("x"), 5, 0, 0), //
    ];
    check_ops("standalone fwd", &ops, None);
}

#[test]
fn ambiguous_fwd() {
    use Op::*;
    let ops = [
        Int("int", 4, SIGNED),     // [1]
        Fwd("s", false),           // [2] two structs named s: stays a FWD
        Ptr(2),                    // [3]
        Struct(Some("s"), 4),      // [4]
        Field(Some("a"), 1, 0, 0), //
        Struct(Some("s"), 4),      // [5]
        Field(Some("b"), 1, 0, 0), //
        Fwd("t", false),           // [6] struct t and union t: also ambiguous
        Struct(Some("t"), 4),      // [7]
        Field(Some("a"), 1, 0, 0), //
        Union(Some("t"), 4),       // [8]
        Field(Some("a"), 1, 0, 0), //
    ];
    check_ops("ambiguous fwd", &ops, None);
}

#[test]
fn recursive_typedef() {
    use Op::*;
    // Go-style: typedef T *T, twice, plus a struct through typedefs.
    let ops = [
        Typedef("T", 2),            // [1]
        Ptr(1),                     // [2]
        Typedef("T", 4),            // [3]
        Ptr(3),                     // [4]
        Int("int", 4, SIGNED),      // [5]
        Struct(Some("s"), 16),      // [6]
        Field(Some("t"), 1, 0, 0),  //
        Field(Some("i"), 5, 64, 0), //
        Struct(Some("s"), 16),      // [7]
        Field(Some("t"), 3, 0, 0),  //
        Field(Some("i"), 5, 64, 0), //
        Typedef("U", 9),            // [8] typedef U -> const U (through a modifier)
        Const(8),                   // [9]
        Typedef("U", 11),           // [10]
        Const(10),                  // [11]
        Ptr(10),                    // [12]
        Ptr(8),                     // [13]
    ];
    check_ops("recursive typedef", &ops, None);
}

#[test]
fn typedef_tricks() {
    use Op::*;
    let ops = [
        Int("int", 4, SIGNED),     // [1]
        Int("long", 8, SIGNED),    // [2]
        Typedef("t", 1),           // [3] typedef int t
        Typedef("t", 2),           // [4] typedef long t (different)
        Typedef("t", 1),           // [5] dup of [3]
        Struct(Some("s"), 8),      // [6] struct s { t a; } using [3]
        Field(Some("a"), 3, 0, 0), //
        Struct(Some("s"), 8),      // [7] same through [5]
        Field(Some("a"), 5, 0, 0), //
        Struct(Some("s"), 8),      // [8] through [4]: different
        Field(Some("a"), 4, 0, 0), //
        Typedef("st", 6),          // [9]
        Typedef("st", 8),          // [10]
        Ptr(9),                    // [11]
        Ptr(10),                   // [12]
        Typedef("v", 0),           // [13] typedef void v
        Typedef("v", 0),           // [14]
    ];
    check_ops("typedef tricks", &ops, None);
}

#[test]
fn enum_fwd_resolution() {
    use Op::*;
    let ops = [
        Enum(Some("e1"), 4), // [1] fwd
        Enum(Some("e1"), 4), // [2] full
        EnumVal("A", 1),
        EnumVal("B", 2),
        Enum(Some("e1"), 4), // [3] fwd again
        Enum(Some("e1"), 4), // [4] different full enum e1
        EnumVal("A", 1),
        EnumVal("C", 3),
        Enum(None, 4), // [5] anonymous
        EnumVal("X", -1),
        Enum(None, 4), // [6] anonymous fwd-like (vlen 0)
        Enum(None, 4), // [7] anonymous dup of [5]
        EnumVal("X", -1),
        Ptr(3), // [8]
        Ptr(1), // [9]
    ];
    check_ops("enum fwd", &ops, None);
}

#[test]
fn enum_fwd_enum64() {
    use Op::*;
    let ops = [
        Enum(Some("e"), 4),          // [1] fwd
        Enum64(Some("e"), 8, false), // [2] full enum64
        Enum64Val("BIG", 1 << 40),
        Enum64(Some("e"), 8, true), // [3] enum64 fwd
        Enum(Some("f"), 4),         // [4] full enum f
        EnumVal("F", 7),
        Enum64(Some("f"), 8, false), // [5] enum64 fwd f
        Enum64(Some("e"), 8, false), // [6] dup of [2]
        Enum64Val("BIG", 1 << 40),
        Enum(Some("e"), 4), // [7] fwd after
    ];
    check_ops("enum fwd <-> enum64", &ops, None);
}

#[test]
fn int_float_dedup() {
    use Op::*;
    let ops = [
        Int("int", 4, SIGNED),
        Int("int", 4, 0),
        Int("int", 4, SIGNED),
        Int("char", 1, kinds::INT_CHAR as u32),
        Int("_Bool", 1, kinds::INT_BOOL as u32),
        Int("char", 1, kinds::INT_CHAR as u32),
        Float("float", 4),
        Float("double", 8),
        Float("float", 4),
        Float("float", 8),
        Int("unsigned __int128", 16, 0),
        Int("unsigned __int128", 16, 0),
    ];
    check_ops("int/float", &ops, None);
}

#[test]
fn func_proto_decl_tag() {
    use Op::*;
    let ops = [
        Int("int", 4, SIGNED), // [1]
        FuncProto(1),          // [2] int (int a, int b)
        Param(Some("a"), 1),
        Param(Some("b"), 1),
        Func("f", kinds::FUNC_GLOBAL, 2), // [3]
        FuncProto(1),                     // [4] dup
        Param(Some("a"), 1),
        Param(Some("b"), 1),
        Func("f", kinds::FUNC_GLOBAL, 4), // [5] dup
        Func("f", kinds::FUNC_STATIC, 4), // [6] different linkage
        DeclTag("t1", 3, -1),             // [7]
        DeclTag("t1", 5, -1),             // [8] dup
        DeclTag("t1", 5, 1),              // [9] param tag
        FuncProto(0),                     // [10] void (void)
        FuncProto(0),                     // [11] void (...)
        Param(None, 0),
        FuncProto(1), // [12] int (int x) - different name
        Param(Some("x"), 1),
        Var("v", kinds::VAR_GLOBAL_ALLOCATED, 1), // [13]
        Var("v", kinds::VAR_GLOBAL_ALLOCATED, 1), // [14] VARs never dedup
        Datasec(".data", 8),                      // [15]
        SecVar(13, 0, 4),
        SecVar(14, 4, 4),
        DeclTag("vt", 13, -1), // [16]
        DeclTag("vt", 14, -1), // [17]
        Typedef("td", 1),      // [18]
        DeclTag("tt", 18, -1), // [19]
        Typedef("td", 1),      // [20]
        DeclTag("tt", 20, -1), // [21]
    ];
    check_ops("func/proto/decl_tag", &ops, None);
}

/// FUNCs whose name and linkage no other FUNC has (the dedup files no class for them) among
/// FUNCs that share theirs, with the DECL_TAGs and pointers that reference both kinds.
#[test]
fn lone_funcs_beside_shared_ones() {
    use Op::*;
    let ops = [
        Int("int", 4, SIGNED), // [1]
        FuncProto(1),          // [2] int (int a)
        Param(Some("a"), 1),
        Func("lone", kinds::FUNC_GLOBAL, 2), // [3] alone in its class
        Func("twice", kinds::FUNC_GLOBAL, 2), // [4]
        FuncProto(1),                        // [5] dup of [2]
        Param(Some("a"), 1),
        Func("twice", kinds::FUNC_GLOBAL, 5), // [6] dup of [4]
        Func("lone", kinds::FUNC_STATIC, 5),  // [7] alone: other linkage
        DeclTag("t", 3, -1),                  // [8]
        DeclTag("t", 3, -1),                  // [9] dup of [8]
        DeclTag("t", 3, 0),                   // [10] param tag
        DeclTag("t", 7, -1),                  // [11] same tag, other FUNC
        DeclTag("t", 6, -1),                  // [12]
        DeclTag("t", 4, -1),                  // [13] dup of [12]
        Ptr(3),                               // [14]
        Ptr(3),                               // [15] dup of [14]
        Ptr(7),                               // [16]
    ];
    check_ops("lone FUNCs", &ops, None);
}

#[test]
fn type_tags() {
    use Op::*;
    let ops = [
        Int("int", 4, SIGNED), // [1]
        TypeTag("tag1", 1),    // [2]
        TypeTag("tag2", 2),    // [3]
        Ptr(3),                // [4]
        TypeTag("tag1", 1),    // [5]
        TypeTag("tag2", 5),    // [6]
        Ptr(6),                // [7]
        TypeTag("tag2", 1),    // [8] different order
        TypeTag("tag1", 8),    // [9]
        Ptr(9),                // [10]
        Struct(Some("s"), 8),  // [11]
        Field(Some("p"), 4, 0, 0),
        Struct(Some("s"), 8), // [12]
        Field(Some("p"), 7, 0, 0),
        Struct(Some("s"), 8), // [13]
        Field(Some("p"), 10, 0, 0),
    ];
    check_ops("type tags", &ops, None);
}

#[test]
fn array_quirk_identical_types() {
    use Op::*;
    // Canonical struct s uses one array type for both members; the candidate's members use
    // two distinct array types, once identical (char[4] twice) and once not (char[4] vs int[4]),
    // which libbpf >= 1.6 accepts because of its ARRAY bug.
    let ops = [
        Int("char", 1, kinds::INT_CHAR as u32), // [1]
        Int("int", 4, SIGNED),                  // [2]
        Array(2, 1, 4),                         // [3] char[4]
        Struct(Some("s"), 8),                   // [4]
        Field(Some("a"), 3, 0, 0),
        Field(Some("b"), 3, 32, 0),
        // CU 2: identical duplicates
        Array(2, 1, 4),       // [5]
        Array(2, 1, 4),       // [6]
        Struct(Some("s"), 8), // [7]
        Field(Some("a"), 5, 0, 0),
        Field(Some("b"), 6, 32, 0),
        // CU 3: different element types, same count
        Array(2, 1, 4),       // [8] char[4]
        Array(2, 2, 4),       // [9] int[4]
        Struct(Some("s"), 8), // [10]
        Field(Some("a"), 8, 0, 0),
        Field(Some("b"), 9, 32, 0),
        // CU 4: struct pointers duplicated
        Struct(Some("n"), 16), // [11]
        Field(Some("x"), 12, 0, 0),
        Field(Some("y"), 12, 64, 0),
        Ptr(4),                // [12]
        Struct(Some("n"), 16), // [13]
        Field(Some("x"), 14, 0, 0),
        Field(Some("y"), 15, 64, 0),
        Ptr(7),  // [14]
        Ptr(10), // [15]
    ];
    check_ops("array quirk", &ops, None);
}

/// Base: int, struct s (full), FWD t, PTR to s; deduplicated already.
fn split_base() -> Vec<u8> {
    use Op::*;
    let ops = [
        Int("int", 4, SIGNED), // [1]
        Struct(Some("s"), 16), // [2]
        Field(Some("a"), 1, 0, 0),
        Field(Some("p"), 3, 64, 0),
        Ptr(2),                    // [3]
        Fwd("t", false),           // [4]
        Ptr(4),                    // [5]
        Typedef("td", 1),          // [6]
        Enum(Some("e"), 4),        // [7] enum fwd in base
        Struct(Some("w"), 8),      // [8]
        Field(Some("q"), 5, 0, 0), //   struct t *q (base FWD)
    ];
    let mut b = Btf::new();
    for op in &ops {
        op.add_to(&mut b).unwrap();
    }
    write::to_bytes(&b)
}

#[test]
fn split_maps_to_base() {
    use Op::*;
    let base = split_base();
    let ops = [
        Int("int", 4, SIGNED), // [9]
        Struct(Some("s"), 16), // [10] = base [2]
        Field(Some("a"), 9, 0, 0),
        Field(Some("p"), 11, 64, 0),
        Ptr(10),                // [11]
        Typedef("td", 9),       // [12] (v1.7.0: base typedefs never match)
        Ptr(12),                // [13]
        Struct(Some("new"), 8), // [14] split only
        Field(Some("s"), 11, 0, 0),
        Ptr(3),             // [15] = base ptr
        Enum(Some("e"), 4), // [16] full enum e
        EnumVal("E", 1),
    ];
    check_ops("split: maps to base", &ops, Some(&base));
}

#[test]
fn split_base_fwd_and_split_struct() {
    use Op::*;
    let base = split_base();
    let ops = [
        Int("int", 4, SIGNED), // [9]
        Struct(Some("t"), 4),  // [10] full t; base has only FWD t
        Field(Some("x"), 9, 0, 0),
        Ptr(10),              // [11]
        Struct(Some("w"), 8), // [12] w with full t: not equal to base w (adjust_canon)
        Field(Some("q"), 11, 0, 0),
        Fwd("t", false),      // [13] split fwd t
        Ptr(13),              // [14]
        Struct(Some("w"), 8), // [15] w with fwd t: maps to base w
        Field(Some("q"), 14, 0, 0),
        Ptr(4), // [16] ptr to base FWD
    ];
    check_ops("split: base fwd + split struct", &ops, Some(&base));
}

// ---------------------------------------------------------------------------------------------
// corrupted input

#[test]
fn bad_input_is_an_error() {
    let strs = b"\0int\0";
    let int = [1, info(Kind::Int, 0, false), 4, kinds::int_data(1, 0, 32)];
    let dangling = [0, info(Kind::Ptr, 0, false), 99];
    let self_ptr = [0, info(Kind::Ptr, 0, false), 3];
    let bad_str = [500, info(Kind::Int, 0, false), 4, kinds::int_data(1, 0, 32)];
    let st = [0, info(Kind::Struct, 1, false), 4, 1, 5, 0];
    let tag = [1, info(Kind::DeclTag, 0, false), 1, u32::MAX];
    let error = |text: &str| Some(format!("invalid BTF: {text}"));
    for (name, recs, expected) in [
        (
            "dangling",
            vec![&int[..], &dangling[..]],
            error("type [2] (PTR) references type [99], past the last type [2]"),
        ),
        (
            "ptr cycle",
            vec![&int[..], &int[..], &self_ptr[..]],
            error("type [3] is part of a reference type cycle"),
        ),
        (
            "bad string",
            vec![&bad_str[..]],
            error("type [1] references string offset 500, past the string section"),
        ),
        (
            "struct -> decl_tag",
            vec![&int[..], &st[..], &st[..], &tag[..], &tag[..]],
            None,
        ),
    ] {
        let data = raw(&recs, strs);
        for force in [false, true] {
            let r = ours_bytes(&data, None, force);
            match &expected {
                None => assert_same(name, &libbpf_oracle::dedup_bytes(&data, None, force), &r),
                Some(e) => assert_eq!(r.as_ref().err(), Some(e), "{name}"),
            }
        }
    }
}

/// A reference past the end is an error anywhere in a BTF of more than 2^16 types, where the
/// dedup's store holds most ids as 16-bit distances: a far PTR and a FWD's `type` word in the
/// middle.
#[test]
fn a_bad_reference_in_the_middle_of_a_large_btf_is_an_error() {
    const COUNT: u32 = 70_000;
    const AT: u32 = 35_000;
    let strs = b"\0int\0";
    let int = [1, info(Kind::Int, 0, false), 4, kinds::int_data(1, 0, 32)];
    let far_ptr = [0, info(Kind::Ptr, 0, false), COUNT + 5];
    let fwd = [1, info(Kind::Fwd, 0, false), COUNT + 5];
    for (name, bad, kind) in [("PTR", &far_ptr[..], "PTR"), ("FWD", &fwd[..], "FWD")] {
        let mut recs = vec![&int[..]; COUNT as usize];
        recs[AT as usize - 1] = bad;
        let expected = format!(
            "invalid BTF: type [{AT}] ({kind}) references type [{}], past the last type [{COUNT}]",
            COUNT + 5
        );
        let r = ours_bytes(&raw(&recs, strs), None, false);
        assert_eq!(r.err(), Some(expected), "{name}");
    }
}

// ---------------------------------------------------------------------------------------------
// random BTF (tests/common/random_btf.rs)

impl random_btf::Source for Rng {
    fn next(&mut self) -> u64 {
        Rng::next(self)
    }
}

/// One random case: `(base bytes if split, data bytes)`; libbpf deduplicates the base.
fn random_case(seed: u64) -> (Option<Vec<u8>>, Vec<u8>) {
    let mut r = Rng::new(seed);
    random_btf::random_case(&mut r, None, |raw| {
        libbpf_oracle::dedup_bytes(raw, None, false).expect("base dedups")
    })
}

#[test]
fn random_btf_matches_libbpf() {
    let cases = crate::common::cases_from_env("DEDUP_RANDOM_CASES", 400);
    let (mut failed, mut shrunk) = (0, 0);
    for seed in 0..cases {
        let (base, data) = random_case(seed);
        check_bytes(&format!("random seed {seed}"), &data, base.as_deref());
        match libbpf_oracle::dedup_bytes(&data, base.as_deref(), false) {
            Ok(out) => shrunk += usize::from(sections(&out).0.len() < sections(&data).0.len()),
            Err(_) => failed += 1,
        }
    }
    // The generator must produce mostly valid, mostly deduplicable BTF to be worth anything.
    assert!(
        failed * 20 <= cases,
        "{failed} of {cases} random cases rejected by libbpf"
    );
    assert!(
        shrunk as u64 * 2 >= cases,
        "only {shrunk} of {cases} random cases shrank"
    );
}

// ---------------------------------------------------------------------------------------------
// large inputs

fn compare_large(name: &str, data: &[u8]) -> (usize, usize) {
    let t = std::time::Instant::now();
    let lib = libbpf_oracle::dedup_bytes(data, None, false);
    let lib_time = t.elapsed();
    let t = std::time::Instant::now();
    let ours = ours_bytes(data, None, false);
    let our_time = t.elapsed();
    eprintln!("{name}: libbpf {lib_time:?}, dwarf2btf {our_time:?}");
    assert_same(name, &lib, &ours);
    let out = read::parse(&ours.unwrap(), None).unwrap();
    (out.own_len(), out.strings().len())
}

/// Three copies of the deduplicated 6.1 kernel BTF (with FWDs in the later copies), deduplicated
/// by both: identical bytes, and back to the original's size.
#[test]
fn kernel_btf_concatenated_matches_libbpf() {
    let data = std::fs::read(crate::common::oracle_btf()).unwrap();
    let src = read::parse(&data, None).unwrap();
    let big = write::to_bytes(&libbpf_oracle::concat_copies(&src, 3));
    let (types, _) = compare_large("3 x vmlinux", &big);
    let orig = src.own_len();
    assert!(
        types.abs_diff(orig) * 100 <= orig,
        "{types} types after dedup vs {orig} in the original"
    );
}

/// The encoder's pre-dedup output for the Debian 6.1 vmlinux (kernel flags, `--no_dedup`),
/// deduplicated by libbpf v1.7.0 and by dwarf2btf: identical bytes.
#[test]
fn kernel_prededup_matches_libbpf() {
    let Some(vmlinux) = crate::common::vmlinux() else {
        return;
    };
    let out = crate::common::scratch("dedup_kernel").join("vmlinux.prededup.btf");
    let o = crate::common::encode(
        &vmlinux,
        &out,
        &[
            crate::common::KERNEL_FEATURES,
            "--lang_exclude=rust",
            "-j2",
            "--no_dedup",
        ],
    );
    assert!(o.status.success(), "{}", crate::common::text(&o));
    let data = std::fs::read(&out).unwrap();
    std::fs::remove_file(&out).unwrap();
    compare_large("kernel pre-dedup", &data);
}

/// Every C fixture's pre-dedup encoding, deduplicated by libbpf v1.7.0 and by dwarf2btf:
/// identical bytes.
#[test]
fn fixture_prededup_matches_libbpf() {
    let dir = crate::common::scratch("dedup_fixtures");
    for fx in crate::common::fixtures() {
        let out = dir.join(format!("{}.prededup.btf", fx.name));
        let o = crate::common::encode(
            &fx.path,
            &out,
            &[crate::common::KERNEL_FEATURES, "--no_dedup"],
        );
        assert!(o.status.success(), "{}", crate::common::text(&o));
        compare_large(fx.name, &std::fs::read(&out).unwrap());
    }
}

/// Negative control of [`compare::dedup_mismatch`], the comparison every test here makes: a
/// fixture's dedup output equals libbpf's, and the same output with one type byte changed,
/// two type records swapped, one string byte changed, one header byte changed, or an error
/// instead of an output, is reported as different.
#[test]
fn dedup_comparison_detects_a_mutated_output() {
    let fx = &crate::common::fixtures()[0];
    let out = crate::common::scratch("dedup_negative").join("prededup.btf");
    let o = crate::common::encode(
        &fx.path,
        &out,
        &[crate::common::KERNEL_FEATURES, "--no_dedup"],
    );
    assert!(o.status.success(), "{}", crate::common::text(&o));
    let data = std::fs::read(&out).unwrap();
    let lib = libbpf_oracle::dedup_bytes(&data, None, false);
    let ours = ours_bytes(&data, None, false);
    assert_eq!(compare::dedup_mismatch("control", &lib, &ours), None);
    let good = ours.unwrap();
    let h = read::parse_header(&good).unwrap();
    let (types_at, strs_at) = (
        (h.hdr_len + h.type_off) as usize,
        (h.hdr_len + h.str_off) as usize,
    );
    let report = |bytes: Vec<u8>| compare::dedup_mismatch("mutated", &lib, &Ok(bytes));

    let mut one_type_byte = good.clone();
    one_type_byte[types_at + 8] ^= 1; // the first record's size or type word
    assert!(
        report(one_type_byte).is_some(),
        "a changed type byte passed"
    );
    assert!(
        report(compare::swapped_records(&good)).is_some(),
        "swapped types passed"
    );
    let mut one_string_byte = good.clone();
    one_string_byte[strs_at + 1] ^= 0x20;
    assert!(report(one_string_byte).is_some(), "a changed string passed");
    let mut header_byte = good.clone();
    header_byte[3] ^= 1; // flags
    let m = report(header_byte).expect("a changed header byte passed");
    assert!(m.contains("full bytes differ"), "{m}");
    assert!(compare::dedup_mismatch("ours failed", &lib, &Err("refused".into())).is_some());
    assert!(compare::dedup_mismatch("libbpf failed", &Err(-22), &Ok(good)).is_some());
}
