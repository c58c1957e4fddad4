//! Tests of the canonical rendering and comparison of BTF (`dwarf2btf diff`) and of the dump
//! (`dwarf2btf dump`), on small hand-built BTF and on the reference kernel's BTF.

use std::time::Instant;

use dwarf2btf::btf::{kinds, read, types, write, Btf, Kind};
use dwarf2btf::toolbox::canon::{self, Canon, Category, DiffOptions};
use dwarf2btf::toolbox::dump;

fn opts(set: bool, categories: &[Category]) -> DiffOptions {
    DiffOptions {
        set,
        categories: categories.to_vec(),
        max_shown: 50,
        fold_fwd: false,
    }
}

fn all(set: bool) -> DiffOptions {
    opts(set, &Category::ALL)
}

/// The reference BTF: a bit of every kind, in one id order.
fn build_a() -> Btf {
    let mut b = Btf::new();
    let int = b.add_int(b"int", 4, kinds::INT_SIGNED).unwrap(); // 1
    let foo_id = b.add_composite(Kind::Struct, Some(b"foo"), 16).unwrap(); // 2
    b.add_field(Some(b"a"), int, 0, 0).unwrap();
    b.add_field(Some(b"b"), int, 32, 4).unwrap();
    b.add_field(Some(b"next"), 3, 64, 0).unwrap();
    let ptr = b.add_ref(Kind::Ptr, None, foo_id).unwrap(); // 3
    assert_eq!(ptr, 3);
    b.add_enum(Kind::Enum, Some(b"e"), 4, false).unwrap(); // 4
    b.add_enum_value(b"X", 1).unwrap();
    b.add_enum_value(b"Y", -1).unwrap();
    let proto = b.add_func_proto(int).unwrap(); // 5
    b.add_func_param(Some(b"x"), int).unwrap();
    b.add_func_param(Some(b"p"), ptr).unwrap();
    let f = b.add_func(b"f", kinds::FUNC_GLOBAL, proto).unwrap(); // 6
    let v = b.add_var(b"v", kinds::VAR_GLOBAL_ALLOCATED, int).unwrap(); // 7
    b.add_datasec(b".data", 4).unwrap(); // 8
    b.add_datasec_var(v, 0, 4).unwrap();
    b.add_decl_tag(b"tag", f, -1).unwrap(); // 9
    b.add_fwd(b"bar", false).unwrap(); // 10
    b.add_ref(Kind::Typedef, Some(b"foo_t"), foo_id).unwrap(); // 11
    b.add_composite(Kind::Union, Some(b"u"), 4).unwrap(); // 12
    b.add_field(None, 13, 0, 0).unwrap();
    b.add_composite(Kind::Struct, None, 4).unwrap(); // 13
    b.add_field(Some(b"x"), int, 0, 0).unwrap();
    b
}

/// How [`build_b`] departs from [`build_a`].
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Tweak {
    None,
    MemberOffset,
    MemberType,
    EnumValue,
    ParamName,
    DupNamed,
}

/// The same types as [`build_a`] in another order, with duplicated anonymous types (and an
/// unreferenced anonymous FUNC_PROTO), optionally changed by `tweak`.
fn build_b(tweak: Tweak) -> Btf {
    let mut b = Btf::new();
    b.add_composite(Kind::Struct, None, 4).unwrap(); // 1
    b.add_field(Some(b"x"), 4, 0, 0).unwrap();
    b.add_composite(Kind::Union, Some(b"u"), 4).unwrap(); // 2
    b.add_field(None, 1, 0, 0).unwrap();
    b.add_ref(Kind::Ptr, None, 6).unwrap(); // 3
    let int = b.add_int(b"int", 4, kinds::INT_SIGNED).unwrap(); // 4
    b.add_ref(Kind::Ptr, None, 6).unwrap(); // 5: duplicate of 3
    let foo_id = b.add_composite(Kind::Struct, Some(b"foo"), 16).unwrap(); // 6
    let a_type = if tweak == Tweak::MemberType { 3 } else { int };
    b.add_field(Some(b"a"), a_type, 0, 0).unwrap();
    let b_off = if tweak == Tweak::MemberOffset { 40 } else { 32 };
    b.add_field(Some(b"b"), int, b_off, 4).unwrap();
    b.add_field(Some(b"next"), 5, 64, 0).unwrap();
    b.add_fwd(b"bar", false).unwrap(); // 7
    let proto = b.add_func_proto(int).unwrap(); // 8
    let x: &[u8] = if tweak == Tweak::ParamName {
        b"y"
    } else {
        b"x"
    };
    b.add_func_param(Some(x), int).unwrap();
    b.add_func_param(Some(b"p"), 3).unwrap();
    let f = b.add_func(b"f", kinds::FUNC_GLOBAL, proto).unwrap(); // 9
    b.add_enum(Kind::Enum, Some(b"e"), 4, false).unwrap(); // 10
    b.add_enum_value(b"X", 1).unwrap();
    let y = if tweak == Tweak::EnumValue { -2 } else { -1 };
    b.add_enum_value(b"Y", y).unwrap();
    b.add_ref(Kind::Typedef, Some(b"foo_t"), foo_id).unwrap(); // 11
    let v = b.add_var(b"v", kinds::VAR_GLOBAL_ALLOCATED, int).unwrap(); // 12
    b.add_datasec(b".data", 4).unwrap(); // 13
    b.add_datasec_var(v, 0, 4).unwrap();
    b.add_decl_tag(b"tag", f, -1).unwrap(); // 14
    b.add_func_proto(int).unwrap(); // 15: unreferenced duplicate prototype
    b.add_func_param(Some(b"x"), int).unwrap();
    b.add_func_param(Some(b"p"), 5).unwrap();
    if tweak == Tweak::DupNamed {
        b.add_composite(Kind::Struct, Some(b"foo"), 16).unwrap(); // 16
        b.add_field(Some(b"a"), int, 0, 0).unwrap();
        b.add_field(Some(b"b"), int, 32, 4).unwrap();
        b.add_field(Some(b"next"), 3, 64, 0).unwrap();
    }
    b
}

fn items_of(btf: &Btf) -> Vec<(Category, String)> {
    canon::canonical_items(btf)
}

#[test]
fn canonical_forms_of_every_kind() {
    let items = items_of(&build_a());
    let expect = [
        (Category::Type, "INT int size=4 bits=32 offset=0 enc=SIGNED"),
        (
            Category::Type,
            "struct foo size=16 { a: INT int @0; b: INT int @32:4; next: ptr(struct foo) @64 }",
        ),
        (Category::Type, "enum e size=4 signed { X = 1, Y = -1 }"),
        (
            Category::Func,
            "func f global fn(x: INT int, p: ptr(struct foo)) -> INT int",
        ),
        (Category::Var, "var v global INT int"),
        (
            Category::Datasec,
            "datasec .data size=4 { var v @0 size=4 }",
        ),
        (Category::Func, "decl_tag \"tag\" -> func f component -1"),
        (Category::Type, "FWD struct bar"),
        (Category::Type, "typedef foo_t = struct foo"),
        (
            Category::Type,
            "union u size=4 { (anon): struct size=4 { x: INT int @0 } @0 }",
        ),
    ];
    let got: Vec<(Category, &str)> = items.iter().map(|(c, s)| (*c, s.as_str())).collect();
    assert_eq!(got, expect);
}

#[test]
fn references_expand_anonymous_types_only() {
    let mut b = build_a();
    let arr = b.add_array(1, 3, 4).unwrap();
    let c = b.add_ref(Kind::Const, None, arr).unwrap();
    let tag = b.add_ref(Kind::TypeTag, Some(b"user"), c).unwrap();
    let proto = b.add_func_proto(0).unwrap();
    b.add_func_param(None, tag).unwrap();
    b.add_func_param(None, 0).unwrap();
    let mut canon = Canon::new(&b);
    assert_eq!(&*canon.reference(2), "struct foo");
    assert_eq!(&*canon.reference(10), "FWD struct bar");
    assert_eq!(&*canon.reference(11), "typedef foo_t");
    assert_eq!(
        &*canon.reference(proto),
        "fn(type_tag(\"user\", const(array(ptr(struct foo) x 4, index INT int))), ...) -> void"
    );
    assert_eq!(&*canon.reference(9999), "<bad id 9999>");
}

#[test]
fn reordered_with_duplicated_anonymous_types_is_equal() {
    let (a, b) = (build_a(), build_b(Tweak::None));
    for set in [true, false] {
        let r = canon::diff(&a, &b, &all(set));
        assert!(r.equal, "set={set}:\n{r}");
        assert!(r.differences.is_empty());
        assert!(r.to_string().ends_with("equal\n"));
    }
    // The kind counts still show the duplicated PTR and FUNC_PROTO.
    let r = canon::diff(&a, &b, &all(false));
    assert_eq!(r.kind_counts[0][Kind::Ptr as usize], 1);
    assert_eq!(r.kind_counts[1][Kind::Ptr as usize], 2);
    assert_eq!(r.item_counts[0], r.item_counts[1]);
    let text = r.to_string();
    assert!(text.contains("PTR"), "{text}");
    assert!(text.contains("compared types, funcs, vars, datasecs as multisets"));
}

#[test]
fn duplicated_named_type_differs_only_as_multiset() {
    let (a, b) = (build_a(), build_b(Tweak::DupNamed));
    let r = canon::diff(&a, &b, &all(true));
    assert!(r.equal, "{r}");
    let r = canon::diff(&a, &b, &all(false));
    assert!(!r.equal);
    assert_eq!(r.distinct_differences, 1);
    assert_eq!((r.only_in_a, r.only_in_b), (0, 1));
    let d = &r.differences[0];
    assert_eq!((d.count_a, d.count_b), (1, 2));
    assert!(d.item.starts_with("struct foo size=16"));
    let text = r.to_string();
    assert!(
        text.contains("+ [types] (A 1, B 2) struct foo size=16"),
        "{text}"
    );
    assert!(text.ends_with("different\n"));
}

/// Checks that `tweak` is detected, that both versions of `needle` are listed and that the
/// first difference is pointed at.
fn detects(tweak: Tweak, category: Category, needle: &str, b_text: &str) {
    let a = build_a();
    let b = build_b(tweak);
    for set in [true, false] {
        let r = canon::diff(&a, &b, &all(set));
        assert!(!r.equal, "{tweak:?} not detected");
        assert_eq!(r.distinct_differences, 2, "{tweak:?}:\n{r}");
        assert_eq!((r.only_in_a, r.only_in_b), (1, 1));
        let (d0, d1) = (&r.differences[0], &r.differences[1]);
        assert_eq!((d0.category, d1.category), (category, category));
        let (from_a, from_b) = if d0.count_a == 1 { (d0, d1) } else { (d1, d0) };
        assert!(from_a.item.starts_with(needle), "{}", from_a.item);
        assert!(from_b.item.starts_with(needle), "{}", from_b.item);
        assert!(from_b.item.contains(b_text), "{}", from_b.item);
        let text = r.to_string();
        assert!(text.contains(&format!("- [{category}] {needle}")), "{text}");
        assert!(text.contains(&format!("+ [{category}] {needle}")), "{text}");
        assert!(text.contains("first difference at byte"), "{text}");
    }
}

#[test]
fn changed_member_offset_is_detected() {
    detects(
        Tweak::MemberOffset,
        Category::Type,
        "struct foo",
        "b: INT int @40:4",
    );
}

#[test]
fn changed_member_type_is_detected() {
    detects(
        Tweak::MemberType,
        Category::Type,
        "struct foo",
        "a: ptr(struct foo) @0",
    );
}

#[test]
fn changed_enum_value_is_detected() {
    detects(Tweak::EnumValue, Category::Type, "enum e", "Y = -2");
}

#[test]
fn changed_param_name_is_detected() {
    detects(Tweak::ParamName, Category::Func, "func f", "fn(y: INT int");
}

#[test]
fn excluded_categories_are_not_compared() {
    let (a, b) = (build_a(), build_b(Tweak::ParamName));
    let r = canon::diff(&a, &b, &opts(false, &[Category::Type]));
    assert!(r.equal, "{r}");
    let text = r.to_string();
    assert!(text.contains("(not compared)"), "{text}");
    assert!(text.contains("compared types as multisets"), "{text}");
    let r = canon::diff(&a, &b, &opts(false, &[Category::Type, Category::Func]));
    assert!(!r.equal);
    // Only the categories asked for are rendered; a function's decl tag goes with it.
    let only_funcs = canon::canonical_items_of(&a, &[Category::Func]);
    assert_eq!(only_funcs.len(), 2);
    assert!(only_funcs.iter().all(|(c, _)| *c == Category::Func));
    assert!(only_funcs[1].1.starts_with("decl_tag"), "{only_funcs:?}");
}

#[test]
fn max_shown_limits_the_listing() {
    let (a, b) = (build_a(), build_b(Tweak::MemberOffset));
    let mut o = all(false);
    o.max_shown = 1;
    let r = canon::diff(&a, &b, &o);
    assert_eq!(r.differences.len(), 1);
    assert_eq!(r.distinct_differences, 2);
    assert!(r.to_string().contains("... and 1 more differing items"));
}

#[test]
fn survives_write_and_read() {
    let a = build_a();
    let bytes = write::to_bytes(&a);
    let back = read::parse(&bytes, None).unwrap();
    assert_eq!(items_of(&a), items_of(&back));
    assert!(canon::diff(&a, &back, &all(false)).equal);
}

#[test]
fn dump_lists_every_type() {
    let a = build_a();
    let mut out = Vec::new();
    dump::dump(&a, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(text.starts_with("# 13 types (ids 1..=13)"), "{text}");
    for line in [
        "[1] INT 'int' size=4 bits_offset=0 nr_bits=32 encoding=SIGNED\n",
        "[2] STRUCT 'foo' size=16 vlen=3\n\t'a' type_id=1 bits_offset=0\n\t'b' type_id=1 bits_offset=32 bitfield_size=4\n\t'next' type_id=3 bits_offset=64\n",
        "[3] PTR '(anon)' type_id=2\n",
        "[4] ENUM 'e' encoding=SIGNED size=4 vlen=2\n\t'X' val=1\n\t'Y' val=-1\n",
        "[5] FUNC_PROTO '(anon)' ret_type_id=1 vlen=2\n\t'x' type_id=1\n\t'p' type_id=3\n",
        "[6] FUNC 'f' type_id=5 linkage=global\n",
        "[7] VAR 'v' type_id=1, linkage=global\n",
        "[8] DATASEC '.data' size=4 vlen=1\n\ttype_id=7 offset=0 size=4 (VAR 'v')\n",
        "[9] DECL_TAG 'tag' type_id=6 component_idx=-1\n",
        "[10] FWD 'bar' fwd_kind=struct\n",
        "[11] TYPEDEF 'foo_t' type_id=2\n",
        "[12] UNION 'u' size=4 vlen=1\n\t'(anon)' type_id=13 bits_offset=0\n",
        "#   FUNC_PROTO   1\n",
    ] {
        assert!(text.contains(line), "missing {line:?} in\n{text}");
    }
}

/// pahole HEAD's BTF of the reference kernel (tests/data).
fn kernel() -> Option<Btf> {
    Some(read::read_file(&crate::common::oracle_btf(), None).expect("the oracle BTF parses"))
}

/// Rebuilds `btf` (base BTF) with its types in reverse id order.
fn reversed(btf: &Btf) -> Btf {
    let n = btf.type_cnt();
    let map = |id: u32| if id == 0 || id >= n { id } else { n - id };
    let mut words = Vec::with_capacity(btf.type_words().len());
    for old in (1..n).rev() {
        let t = btf.type_by_id(old).unwrap();
        let mut w = t.words.to_vec();
        types::for_each_type_id_mut(&mut w, |id| *id = map(*id));
        words.extend(w);
    }
    with_words(btf, &words)
}

/// `btf` with its type section replaced by `words` (same strings).
fn with_words(btf: &Btf, words: &[u32]) -> Btf {
    let strs = btf.strings().as_bytes();
    let type_len = words.len() as u32 * 4;
    let mut bytes = Vec::new();
    bytes.extend_from_slice(&write::MAGIC.to_le_bytes());
    bytes.extend_from_slice(&[1, 0]);
    for v in [24, 0, type_len, type_len, strs.len() as u32] {
        bytes.extend_from_slice(&u32::to_le_bytes(v));
    }
    for w in words {
        bytes.extend_from_slice(&w.to_le_bytes());
    }
    bytes.extend_from_slice(strs);
    read::parse(&bytes, None).unwrap()
}

#[test]
fn kernel_btf_compares_equal_to_itself_and_reordered_copies() {
    let Some(k) = kernel() else {
        return;
    };
    let t = Instant::now();
    let items = canon::canonical_items(&k);
    println!(
        "canonical items of the kernel BTF ({} types): {} items in {:?}",
        k.own_len(),
        items.len(),
        t.elapsed()
    );
    let longest = items.iter().map(|(_, s)| s.len()).max().unwrap_or(0);
    let hashed = items.iter().filter(|(_, s)| s.contains("fnv1a64")).count();
    println!("longest item: {longest} bytes; {hashed} items shortened by hashing");
    let counts = canon::item_counts(&k);
    assert_eq!(counts.iter().sum::<usize>(), items.len());
    assert_eq!(counts[Category::Func as usize], 41400);
    assert_eq!(counts[Category::Var as usize], 357);
    assert_eq!(counts[Category::Datasec as usize], 1);
    assert!(items
        .iter()
        .any(|(_, s)| s.starts_with("struct task_struct size=")));
    assert!(!items.iter().any(|(_, s)| s.contains("<bad id")
        || s.contains("<cycle>")
        || s.contains("<unresolved>")));

    let t = Instant::now();
    let r = canon::diff(&k, &k, &all(false));
    println!("kernel diff against itself: {:?}", t.elapsed());
    assert!(r.equal, "{r}");

    let rev = reversed(&k);
    let t = Instant::now();
    for set in [false, true] {
        let r = canon::diff(&k, &rev, &all(set));
        assert!(r.equal, "{r}");
    }
    println!(
        "kernel diff against its reversed copy (twice): {:?}",
        t.elapsed()
    );
}

#[test]
fn kernel_btf_with_a_changed_member_type_differs() {
    let Some(k) = kernel() else {
        return;
    };
    // The first named STRUCT with a member; retarget that member to another type.
    let mut canon = Canon::new(&k);
    let s = k
        .own_types()
        .find(|t| t.k() == Kind::Struct && t.name_off() != 0 && t.vlen() > 0)
        .unwrap();
    let old = s.members().next().unwrap().type_id;
    let new = (1..k.type_cnt())
        .find(|&id| canon.reference(id) != canon.reference(old))
        .unwrap();
    let word = (s.words.as_ptr() as usize - k.type_words().as_ptr() as usize) / 4 + 3 + 1;
    let mut words = k.type_words().to_vec();
    assert_eq!(words[word], old);
    words[word] = new;
    let patched = with_words(&k, &words);

    let t = Instant::now();
    let r = canon::diff(&k, &patched, &opts(false, &[Category::Type]));
    println!("kernel diff against a patched copy: {:?}", t.elapsed());
    assert!(!r.equal);
    assert_eq!((r.only_in_a, r.only_in_b), (1, 1), "{r}");
    let name = k.name(s.name_off());
    let head = format!("struct {name} size=");
    assert!(
        r.differences.iter().all(|d| d.item.starts_with(&head)),
        "{r}"
    );
    let text = r.to_string();
    println!("{text}");
    assert!(text.contains("first difference at byte"), "{text}");
    assert!(text.ends_with("different\n"));
}

#[test]
fn kernel_btf_dumps() {
    let Some(k) = kernel() else {
        return;
    };
    let t = Instant::now();
    let mut out = Vec::new();
    dump::dump(&k, &mut out).unwrap();
    println!(
        "dump of the kernel BTF: {} bytes in {:?}",
        out.len(),
        t.elapsed()
    );
    let text = String::from_utf8(out).unwrap();
    let listed = text.lines().filter(|l| l.starts_with('[')).count();
    assert_eq!(listed, k.own_len());
    assert!(
        text.contains("#   FUNC         41400\n"),
        "{}",
        &text[..600]
    );
}
