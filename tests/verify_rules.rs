//! The kernel BTF rules of `btf::verify`: a valid BTF built with the builder is accepted, and
//! hand-corrupted bytes or records are rejected with the expected rule, one test per family.

mod common;

use std::sync::Arc;

use dwarf2btf::btf::verify::{self, Problem};
use dwarf2btf::btf::{kinds, read, write, Btf, Endian, Kind};

/// Ids of the sample's types.
struct Ids {
    int: u32,
    uint: u32,
    long: u32,
    s: u32,
    u: u32,
    fwd: u32,
    float: u32,
    proto: u32,
    func: u32,
    var_v: u32,
    var_w: u32,
    datasec: u32,
}

/// A valid BTF using every kind.
fn sample() -> (Btf, Ids) {
    let mut b = Btf::new();
    let int = b.add_int(b"int", 4, kinds::INT_SIGNED).unwrap();
    let uint = b.add_int(b"unsigned int", 4, 0).unwrap();
    let long = b.add_int(b"long int", 8, kinds::INT_SIGNED).unwrap();
    b.add_int(b"char", 1, kinds::INT_CHAR).unwrap();
    let ptr_s = b.add_ref(Kind::Ptr, None, 6).unwrap(); // forward reference to `s`
    let s = b.add_composite(Kind::Struct, Some(b"s"), 16).unwrap();
    assert_eq!(s, 6);
    b.add_field(Some(b"a"), int, 0, 0).unwrap();
    b.add_field(Some(b"b"), int, 32, 3).unwrap(); // bitfield: kind_flag
    b.add_field(Some(b"next"), ptr_s, 64, 0).unwrap();
    let u = b.add_composite(Kind::Union, Some(b"u"), 8).unwrap();
    b.add_field(Some(b"x"), int, 0, 0).unwrap();
    b.add_field(Some(b"y"), long, 0, 0).unwrap();
    b.add_enum(Kind::Enum, Some(b"e"), 4, false).unwrap();
    b.add_enum_value(b"A", 0).unwrap();
    b.add_enum_value(b"B", -1).unwrap();
    b.add_enum(Kind::Enum64, Some(b"e64"), 8, false).unwrap();
    b.add_enum64_value(b"X", 1 << 40).unwrap();
    let arr = b.add_array(uint, int, 4).unwrap();
    let td = b.add_ref(Kind::Typedef, Some(b"s_t"), s).unwrap();
    b.add_ref(Kind::Const, None, td).unwrap();
    b.add_ref(Kind::Volatile, None, int).unwrap();
    let fwd = b.add_fwd(b"opaque", false).unwrap();
    let ptr_fwd = b.add_ref(Kind::Ptr, None, fwd).unwrap();
    b.add_fwd(b"uopaque", true).unwrap();
    let float = b.add_float(b"double", 8).unwrap();
    let proto = b.add_func_proto(int).unwrap();
    b.add_func_param(Some(b"a"), int).unwrap();
    b.add_func_param(Some(b"p"), ptr_fwd).unwrap();
    b.add_func_param(None, 0).unwrap(); // vararg
    let func = b.add_func(b"f", kinds::FUNC_GLOBAL, proto).unwrap();
    let void_proto = b.add_func_proto(0).unwrap();
    let ptr_proto = b.add_ref(Kind::Ptr, None, void_proto).unwrap();
    b.add_composite(Kind::Struct, Some(b"ops"), 16).unwrap();
    b.add_field(Some(b"cb"), ptr_proto, 0, 0).unwrap();
    b.add_field(Some(b"d"), float, 64, 0).unwrap();
    let var_v = b.add_var(b"v", kinds::VAR_GLOBAL_ALLOCATED, arr).unwrap();
    let var_w = b.add_var(b"w.1", kinds::VAR_STATIC, int).unwrap();
    let datasec = b.add_datasec(b".data", 24).unwrap();
    b.add_datasec_var(var_v, 0, 16).unwrap();
    b.add_datasec_var(var_w, 16, 4).unwrap();
    b.add_decl_tag(b"tag", s, 0).unwrap();
    b.add_decl_tag(b"tag2", func, -1).unwrap();
    b.add_decl_tag(b"arg", func, 1).unwrap();
    // `int const __user *restrict`: PTR -> TYPE_TAG -> CONST -> int (tags first).
    let cv = b.add_ref(Kind::Const, None, int).unwrap();
    let tag = b.add_ref(Kind::TypeTag, Some(b"user"), cv).unwrap();
    let p = b.add_ref(Kind::Ptr, None, tag).unwrap();
    b.add_ref(Kind::Restrict, None, p).unwrap();
    let ids = Ids {
        int,
        uint,
        long,
        s,
        u,
        fwd,
        float,
        proto,
        func,
        var_v,
        var_w,
        datasec,
    };
    (b, ids)
}

fn show(p: &[Problem]) -> String {
    p.iter().map(|p| format!("  {p}\n")).collect()
}

#[track_caller]
fn assert_rule(p: &[Problem], rule: &str) {
    assert!(
        p.iter().any(|x| x.rule == rule),
        "expected rule {rule}, got:\n{}",
        show(p)
    );
}

#[track_caller]
fn assert_only_rule(p: &[Problem], rule: &str) {
    assert!(
        !p.is_empty() && p.iter().all(|x| x.rule == rule),
        "expected only rule {rule}, got:\n{}",
        show(p)
    );
}

#[track_caller]
fn assert_valid(btf: &Btf) {
    let p = verify::verify(btf);
    assert!(p.is_empty(), "in-memory BTF rejected:\n{}", show(&p));
    let p = verify::verify_bytes(&write::to_bytes(btf), btf.base());
    assert!(p.is_empty(), "raw BTF rejected:\n{}", show(&p));
}

/// Verifies in memory and as bytes; both must agree. Returns the problems.
#[track_caller]
fn check(btf: &Btf) -> Vec<Problem> {
    let mem = verify::verify(btf);
    let raw = verify::verify_bytes(&write::to_bytes(btf), btf.base());
    assert_eq!(mem, raw, "in-memory and raw verification differ");
    mem
}

/// Appends a raw record to the sample and verifies.
#[track_caller]
fn with_record(f: impl FnOnce(&mut Btf, &Ids) -> Vec<u32>) -> Vec<Problem> {
    let (mut b, ids) = sample();
    let rec = f(&mut b, &ids);
    b.push_record(&rec).unwrap();
    check(&b)
}

/// Builds with the sample as a starting point and verifies.
#[track_caller]
fn with(f: impl FnOnce(&mut Btf, &Ids)) -> Vec<Problem> {
    let (mut b, ids) = sample();
    f(&mut b, &ids);
    check(&b)
}

fn info(kind: Kind, vlen: u32, kflag: bool) -> u32 {
    kinds::info(kind, vlen, kflag)
}

/// Byte position (in `write::to_bytes` output) of word `word` of type `id`.
fn word_pos(btf: &Btf, id: u32, word: usize) -> usize {
    let before: usize = (btf.start_id()..id)
        .map(|i| btf.type_by_id(i).unwrap().words.len())
        .sum();
    write::HEADER_LEN as usize + 4 * (before + word)
}

fn get32(b: &[u8], pos: usize) -> u32 {
    u32::from_le_bytes(b[pos..pos + 4].try_into().unwrap())
}

fn set32(b: &mut [u8], pos: usize, v: u32) {
    b[pos..pos + 4].copy_from_slice(&v.to_le_bytes());
}

/// Serialises the sample, rewrites word `word` of type `id` with `f`, verifies the bytes.
#[track_caller]
fn patched(
    id_of: impl FnOnce(&Ids) -> u32,
    word: usize,
    f: impl FnOnce(u32) -> u32,
) -> Vec<Problem> {
    let (b, ids) = sample();
    let id = id_of(&ids);
    let mut bytes = write::to_bytes(&b);
    let pos = word_pos(&b, id, word);
    let v = f(get32(&bytes, pos));
    set32(&mut bytes, pos, v);
    verify::verify_bytes(&bytes, None)
}

/// Header fields of `write::to_bytes` output.
const TYPE_OFF: usize = 8;
const TYPE_LEN: usize = 12;
const STR_OFF: usize = 16;
const STR_LEN: usize = 20;

#[test]
fn valid_sample_is_accepted() {
    let (b, _) = sample();
    assert_valid(&b);
    // Parsing the bytes back gives the same verdict.
    let parsed = read::parse(&write::to_bytes(&b), None).unwrap();
    assert!(verify::verify(&parsed).is_empty());
    // Either byte order.
    let mut be = b.clone();
    be.endian = Endian::Big;
    let bytes = write::to_bytes(&be);
    assert_eq!(&bytes[..2], &[0xeb, 0x9f]);
    let p = verify::verify_bytes(&bytes, None);
    assert!(p.is_empty(), "{}", show(&p));
}

#[test]
fn header_magic_version_flags_hdr_len() {
    let (b, _) = sample();
    let good = write::to_bytes(&b);

    let mut bytes = good.clone();
    bytes[0] = 0x42;
    assert_only_rule(&verify::verify_bytes(&bytes, None), "H1-magic");

    let mut bytes = good.clone();
    bytes[2] = 2;
    assert_only_rule(&verify::verify_bytes(&bytes, None), "H1-version");

    let mut bytes = good.clone();
    bytes[3] = 1;
    assert_only_rule(&verify::verify_bytes(&bytes, None), "H1-flags");

    let mut bytes = good.clone();
    set32(&mut bytes, 4, 16);
    assert_only_rule(&verify::verify_bytes(&bytes, None), "H2-hdr-len");

    let mut bytes = good.clone();
    set32(&mut bytes, 4, good.len() as u32 + 4);
    assert_only_rule(&verify::verify_bytes(&bytes, None), "H2-hdr-len");

    assert_only_rule(&verify::verify_bytes(&good[..5], None), "H2-hdr-len");
    assert_only_rule(&verify::verify_bytes(&[], None), "H2-hdr-len");

    // A 32-byte header (libbpf >= 1.8) is fine while its extra (layout) fields are zero; with
    // layout_len set, 6.x rejects it (tests/verify_layout.rs has the layout-aware rules).
    let mut long_hdr = good[..24].to_vec();
    set32(&mut long_hdr, 4, 32);
    long_hdr.extend_from_slice(&[0; 8]);
    long_hdr.extend_from_slice(&good[24..]);
    let p = verify::verify_bytes(&long_hdr, None);
    assert!(p.is_empty(), "{}", show(&p));
    long_hdr[28] = 80;
    let linux_6_1 = verify::Target::Kernel("6.1".parse().unwrap());
    let p = verify::judge(&long_hdr, None, linux_6_1).problems;
    assert_only_rule(&p, "H2-hdr-extra");
}

#[test]
fn section_layout() {
    let (b, _) = sample();
    let good = write::to_bytes(&b);
    let type_len = get32(&good, TYPE_LEN);
    let str_len = get32(&good, STR_LEN);

    // Overlap: the string section starts inside the type section.
    let mut bytes = good.clone();
    set32(&mut bytes, STR_OFF, type_len - 4);
    assert_only_rule(&verify::verify_bytes(&bytes, None), "H4-sections");

    // A section running past the end.
    let mut bytes = good.clone();
    set32(&mut bytes, STR_LEN, str_len + 4);
    assert_only_rule(&verify::verify_bytes(&bytes, None), "H4-sections");

    // Trailing bytes in no section.
    let mut bytes = good.clone();
    bytes.extend_from_slice(&[0; 4]);
    assert_only_rule(&verify::verify_bytes(&bytes, None), "H4-sections");

    // A gap between the sections.
    let mut bytes = good[..24 + type_len as usize].to_vec();
    bytes.extend_from_slice(&[0; 4]);
    bytes.extend_from_slice(&good[24 + type_len as usize..]);
    set32(&mut bytes, STR_OFF, type_len + 4);
    assert_only_rule(&verify::verify_bytes(&bytes, None), "H4-sections");

    // Strings first, then an unaligned type section: both rules, and the types still check.
    let mut strs = b.strings().as_bytes().to_vec();
    if strs.len().is_multiple_of(4) {
        strs.push(0);
    }
    let mut bytes = good[..24].to_vec();
    set32(&mut bytes, TYPE_OFF, strs.len() as u32);
    set32(&mut bytes, STR_OFF, 0);
    set32(&mut bytes, STR_LEN, strs.len() as u32);
    bytes.extend_from_slice(&strs);
    bytes.extend_from_slice(&good[24..24 + type_len as usize]);
    let p = verify::verify_bytes(&bytes, None);
    assert_rule(&p, "H3-type-align");
    assert_rule(&p, "H4-str-not-last");
    assert_eq!(p.len(), 2, "{}", show(&p));
}

#[test]
fn string_section() {
    let (b, _) = sample();
    let good = write::to_bytes(&b);
    let type_len = get32(&good, TYPE_LEN) as usize;

    let mut bytes = good.clone();
    bytes[24 + type_len] = b'x';
    assert_rule(&verify::verify_bytes(&bytes, None), "H5-str-first");

    let mut bytes = good.clone();
    *bytes.last_mut().unwrap() = b'x';
    assert_rule(&verify::verify_bytes(&bytes, None), "H6-str-section");

    // Base BTF without strings at all.
    let mut bytes = good[..24 + type_len].to_vec();
    set32(&mut bytes, STR_LEN, 0);
    let p = verify::verify_bytes(&bytes, None);
    assert_rule(&p, "H6-str-section");
    assert_rule(&p, "M3-name-offset");

    // Base BTF without types.
    let mut bytes = good[..24].to_vec();
    set32(&mut bytes, TYPE_LEN, 0);
    set32(&mut bytes, STR_OFF, 0);
    set32(&mut bytes, STR_LEN, 1);
    bytes.push(0);
    assert_only_rule(&verify::verify_bytes(&bytes, None), "H5-no-types");
    // Header only.
    assert_only_rule(&verify::verify_bytes(&bytes[..24], None), "H5-no-types");
    assert_only_rule(&verify::verify(&Btf::new()), "H5-no-types");
}

#[test]
fn unknown_kind_and_info_bits() {
    let p = with_record(|_, _| vec![0, 20 << 24, 0]);
    assert_only_rule(&p, "M1-kind");
    let p = with_record(|_, _| vec![0, 0, 0]);
    assert_only_rule(&p, "M1-kind");
    let p = with_record(|_, ids| vec![0, info(Kind::Ptr, 0, false) | 1 << 16, ids.int]);
    assert_only_rule(&p, "M1-info-bits");
    let p = with_record(|_, ids| vec![0, info(Kind::Ptr, 0, false) | 1 << 30, ids.int]);
    assert_only_rule(&p, "M1-info-bits");

    // An unknown kind in the middle of raw bytes: the rest cannot be sized, so it is reported
    // once and nothing after it is checked.
    let p = patched(|ids| ids.s, 1, |_| 25 << 24);
    assert_eq!(p.len(), 1, "{}", show(&p));
    assert_eq!(p[0].rule, "M1-kind");
    assert_eq!(p[0].type_id, Some(6));

    // A record whose vlen runs past the type section.
    let (mut b, ids) = sample();
    b.push_record(&[0, info(Kind::Struct, 5, false), 4, 0, ids.int, 0])
        .unwrap();
    let p = verify::verify_bytes(&write::to_bytes(&b), None);
    assert_only_rule(&p, "M2-truncated");
    assert_only_rule(&verify::verify(&b), "M2-truncated");
}

#[test]
fn name_rules() {
    let p = with(|b, ids| {
        b.add_composite(Kind::Struct, Some(b"1abc"), 4).unwrap();
        b.add_field(Some(b"a"), ids.int, 0, 0).unwrap();
    });
    assert_only_rule(&p, "M4-name");
    let p = with(|b, ids| {
        b.add_composite(Kind::Struct, Some(b"ok"), 4).unwrap();
        b.add_field(Some(b"a-b"), ids.int, 0, 0).unwrap();
    });
    assert_only_rule(&p, "M4-name");
    // PTR, CONST, ARRAY and FUNC_PROTO must be anonymous.
    let p = with_record(|b, ids| vec![b.add_str(b"p"), info(Kind::Ptr, 0, false), ids.int]);
    assert_only_rule(&p, "M4-name");
    let p = with_record(|b, ids| vec![b.add_str(b"c"), info(Kind::Const, 0, false), ids.int]);
    assert_only_rule(&p, "M4-name");
    let p = with_record(|b, ids| {
        vec![
            b.add_str(b"a"),
            info(Kind::Array, 0, false),
            0,
            ids.int,
            ids.int,
            1,
        ]
    });
    assert_only_rule(&p, "M4-name");
    let p = with_record(|b, ids| vec![b.add_str(b"fp"), info(Kind::FuncProto, 0, false), ids.int]);
    assert_only_rule(&p, "M4-name");
    // TYPEDEF, FWD, FUNC, VAR, DATASEC must be named; TYPE_TAG / DECL_TAG non-empty.
    let p = with_record(|_, ids| vec![0, info(Kind::Typedef, 0, false), ids.int]);
    assert_only_rule(&p, "M4-name");
    let p = with_record(|_, ids| vec![0, info(Kind::TypeTag, 0, false), ids.int]);
    assert_only_rule(&p, "M4-name");
    let p = with_record(|_, ids| vec![0, info(Kind::DeclTag, 0, false), ids.s, u32::MAX]);
    assert_only_rule(&p, "M4-name");
    let p = with_record(|_, ids| vec![0, info(Kind::Var, 0, false), ids.int, 0]);
    assert_only_rule(&p, "M4-name");
    // Dots: fine in every identifier since 6.1.y ("bpf: Accept function names that contain
    // dots"); other punctuation is not.
    let p = with(|b, ids| {
        b.add_func(b"f-cold", 0, ids.proto).unwrap();
    });
    assert_only_rule(&p, "M4-name");
    assert!(with(|b, ids| {
        b.add_func(b"f.cold", 0, ids.proto).unwrap();
        b.add_ref(Kind::Typedef, Some(b"a.b"), ids.int).unwrap();
        b.add_var(b".L.str", 0, ids.int).unwrap();
        b.add_datasec(b".data..percpu", 4).unwrap();
    })
    .is_empty());
    // Enumerators must be named.
    let p = with_record(|b, _| vec![0, info(Kind::Enum, 1, false), 4, b.add_str(b"9"), 0]);
    assert_only_rule(&p, "M4-name");
    let p = with_record(|_, _| vec![0, info(Kind::Enum, 1, false), 4, 0, 0]);
    assert_only_rule(&p, "M4-name");
    // KSYM_NAME_LEN (512 in 6.1) bounds identifiers.
    let long = vec![b'a'; 512];
    assert!(with(|b, ids| {
        b.add_ref(Kind::Typedef, Some(&long), ids.int).unwrap();
    })
    .is_empty());
    let longer = vec![b'a'; 513];
    let p = with(|b, ids| {
        b.add_ref(Kind::Typedef, Some(&longer), ids.int).unwrap();
    });
    assert_only_rule(&p, "M4-name");
    // Name offsets past the string section.
    let p = with_record(|b, ids| vec![b.str_end() + 10, info(Kind::Typedef, 0, false), ids.int]);
    assert_only_rule(&p, "M3-name-offset");
    let p = with_record(|b, ids| vec![0, info(Kind::Struct, 1, false), 4, b.str_end(), ids.int, 0]);
    assert_only_rule(&p, "M3-name-offset");
}

#[test]
fn vlen_and_kflag_rules() {
    let p = with_record(|_, ids| vec![0, info(Kind::Ptr, 1, false), ids.int]);
    assert_only_rule(&p, "M5-vlen");
    let p = with_record(|b, _| vec![b.add_str(b"fl"), info(Kind::Float, 2, false), 4]);
    assert_only_rule(&p, "M5-vlen");
    let p = with_record(|b, _| vec![b.add_str(b"fw"), info(Kind::Fwd, 1, false), 0]);
    assert_only_rule(&p, "M5-vlen");
    let p = with_record(|b, _| {
        vec![
            b.add_str(b"i"),
            info(Kind::Int, 0, true),
            4,
            kinds::int_data(0, 0, 32),
        ]
    });
    assert_only_rule(&p, "M6-kflag");
    let p = with_record(|_, ids| vec![0, info(Kind::Const, 0, true), ids.int]);
    assert_only_rule(&p, "M6-kflag");
    let p = with_record(|_, ids| vec![0, info(Kind::Array, 0, true), 0, ids.int, ids.int, 1]);
    assert_only_rule(&p, "M6-kflag");
    // 6.1 rejects kind_flag on TYPE_TAG and DECL_TAG (attributes came later).
    let p = with_record(|b, ids| vec![b.add_str(b"t"), info(Kind::TypeTag, 0, true), ids.int]);
    assert_only_rule(&p, "M6-kflag");
    let p = with_record(|b, ids| {
        vec![
            b.add_str(b"t"),
            info(Kind::DeclTag, 0, true),
            ids.s,
            u32::MAX,
        ]
    });
    assert_only_rule(&p, "M6-kflag");
    let p = with_record(|b, ids| vec![b.add_str(b"g"), info(Kind::Var, 0, true), ids.int, 0]);
    assert_only_rule(&p, "M6-kflag");
    // kind_flag is meaningful on STRUCT/UNION (bitfields), FWD (union) and ENUM (signed).
    assert!(with(|b, _| {
        b.add_fwd(b"x", true).unwrap();
        b.add_enum(Kind::Enum, None, 4, true).unwrap();
        b.add_enum_value(b"Z", -5).unwrap();
    })
    .is_empty());
}

#[test]
fn referenced_ids() {
    // Past BTF_MAX_TYPE: a meta error.
    let p = with_record(|_, _| vec![0, info(Kind::Ptr, 0, false), 0x10_0000]);
    assert_only_rule(&p, "M7-type-id");
    // Zero where a type is required.
    let p = with_record(|_, ids| vec![0, info(Kind::Array, 0, false), 0, 0, ids.int, 1]);
    assert_only_rule(&p, "M7-type-id");
    let p = with_record(|_, ids| vec![0, info(Kind::Array, 0, false), 0, ids.int, 0, 1]);
    assert_only_rule(&p, "M7-type-id");
    let p = with_record(|_, _| vec![0, info(Kind::Struct, 1, false), 4, 0, 0, 0]);
    assert_only_rule(&p, "M7-type-id");
    let p = with_record(|b, _| vec![b.add_str(b"z"), info(Kind::Var, 0, false), 0, 0]);
    assert_only_rule(&p, "M7-type-id");
    let p = with_record(|b, _| vec![b.add_str(b".z"), info(Kind::Datasec, 1, false), 4, 0, 0, 4]);
    assert_only_rule(&p, "M7-type-id");
    // Valid but nonexistent ids: a resolve error.
    let p = with_record(|b, _| vec![0, info(Kind::Ptr, 0, false), b.type_cnt() + 10]);
    assert_only_rule(&p, "R1-type-id");
    let p = with_record(|b, _| vec![0, info(Kind::Struct, 1, false), 8, 0, b.type_cnt() + 1, 0]);
    assert_only_rule(&p, "R1-type-id");
    let p = with_record(|b, _| vec![b.add_str(b"g"), info(Kind::Func, 0, false), 77777]);
    assert_only_rule(&p, "R1-type-id");
    let p = with_record(|_, _| vec![0, info(Kind::FuncProto, 0, false), 99999]);
    assert_only_rule(&p, "R1-type-id");
}

#[test]
fn int_rules() {
    let int = |size: u32, data: u32| {
        move |b: &mut Btf, _: &Ids| vec![b.add_str(b"i"), info(Kind::Int, 0, false), size, data]
    };
    assert_only_rule(&with_record(int(16, kinds::int_data(0, 0, 129))), "M8-int");
    assert_only_rule(&with_record(int(16, kinds::int_data(0, 100, 29))), "M8-int");
    assert_only_rule(&with_record(int(4, kinds::int_data(0, 0, 64))), "M8-int");
    assert_only_rule(&with_record(int(4, kinds::int_data(3, 0, 32))), "M8-int");
    assert_only_rule(&with_record(int(4, 1 << 28 | 32)), "M8-int");
    // The kernel allows bit offsets and odd sizes in INT itself (only members care).
    assert!(with_record(int(4, kinds::int_data(kinds::INT_BOOL, 3, 5))).is_empty());
    assert!(with_record(int(16, kinds::int_data(0, 0, 128))).is_empty());
}

#[test]
fn struct_and_union_member_offsets() {
    // Offsets must not decrease.
    let p = with(|b, ids| {
        b.add_composite(Kind::Struct, Some(b"d"), 8).unwrap();
        b.add_field(Some(b"a"), ids.int, 32, 0).unwrap();
        b.add_field(Some(b"b"), ids.int, 0, 0).unwrap();
    });
    assert_only_rule(&p, "M10-member-offset");
    // Equal offsets are fine (zero-size members).
    assert!(with(|b, ids| {
        b.add_composite(Kind::Struct, Some(b"z"), 4).unwrap();
        b.add_field(Some(b"a"), ids.int, 0, 0).unwrap();
        b.add_field(Some(b"b"), ids.int, 0, 0).unwrap();
    })
    .is_empty());
    // Union members sit at offset 0.
    let p = with_record(|b, ids| {
        vec![
            b.add_str(b"uu"),
            info(Kind::Union, 1, false),
            8,
            b.add_str(b"m"),
            ids.int,
            32,
        ]
    });
    assert_only_rule(&p, "M10-member-offset");
    // An offset past the size.
    let p = with(|b, ids| {
        b.add_composite(Kind::Struct, Some(b"small"), 4).unwrap();
        b.add_field(Some(b"a"), ids.int, 40, 0).unwrap();
    });
    assert_only_rule(&p, "M10-member-offset");
    // A member that starts inside but ends outside: found when resolving.
    let p = with(|b, ids| {
        b.add_composite(Kind::Struct, Some(b"small"), 4).unwrap();
        b.add_field(Some(b"l"), ids.long, 0, 0).unwrap();
    });
    assert_only_rule(&p, "R5-member");
    // A bitfield wider than its int.
    let p = with(|b, ids| {
        b.add_composite(Kind::Struct, Some(b"bf"), 8).unwrap();
        b.add_field(Some(b"w"), ids.int, 0, 40).unwrap();
    });
    assert_only_rule(&p, "R5-member");
    // A struct member by value of an incomplete type.
    let p = with(|b, ids| {
        b.add_composite(Kind::Struct, Some(b"inc"), 8).unwrap();
        b.add_field(Some(b"o"), ids.fwd, 0, 0).unwrap();
    });
    assert_only_rule(&p, "R5-member");
    // A pointer member that is not byte aligned (old-style, kind_flag 0).
    let p = with_record(|b, _| {
        let ptr = b.add_ref(Kind::Ptr, None, 0).unwrap();
        vec![
            b.add_str(b"pp"),
            info(Kind::Struct, 1, false),
            16,
            b.add_str(b"p"),
            ptr,
            4,
        ]
    });
    assert_only_rule(&p, "R5-member");
    // A misaligned FLOAT.
    let p = with_record(|b, ids| {
        vec![
            b.add_str(b"ff"),
            info(Kind::Struct, 1, false),
            16,
            b.add_str(b"f"),
            ids.float,
            32,
        ]
    });
    assert_only_rule(&p, "R5-member");
    // A union member by value.
    assert!(with(|b, ids| {
        b.add_composite(Kind::Struct, Some(b"wrap"), 8).unwrap();
        b.add_field(Some(b"u"), ids.u, 0, 0).unwrap();
    })
    .is_empty());
}

#[test]
fn enum_size() {
    for size in [0, 3, 16] {
        let p = with_record(move |b, _| {
            vec![
                b.add_str(b"en"),
                info(Kind::Enum, 1, false),
                size,
                b.add_str(b"V"),
                1,
            ]
        });
        assert_only_rule(&p, "M11-enum-size");
    }
    let p = with_record(|b, _| {
        vec![
            b.add_str(b"en"),
            info(Kind::Enum64, 1, false),
            16,
            b.add_str(b"V"),
            1,
            0,
        ]
    });
    assert_only_rule(&p, "M11-enum-size");
    // A forward-declared enum (vlen 0) of every legal size.
    for size in [1, 2, 4, 8] {
        assert!(
            with_record(move |b, _| vec![b.add_str(b"en"), info(Kind::Enum, 0, false), size])
                .is_empty()
        );
    }
}

#[test]
fn fwd_rules() {
    let p = with_record(|b, _| vec![b.add_str(b"fw"), info(Kind::Fwd, 0, false), 4]);
    assert_only_rule(&p, "M12-fwd");
    let p = with_record(|_, _| vec![0, info(Kind::Fwd, 0, false), 0]);
    assert_only_rule(&p, "M4-name");
}

#[test]
fn float_size() {
    for size in [0, 1, 3, 10, 32] {
        let p = with_record(move |b, _| vec![b.add_str(b"fl"), info(Kind::Float, 0, false), size]);
        assert_only_rule(&p, "M13-float-size");
    }
}

#[test]
fn func_linkage_and_proto() {
    // BTF_FUNC_EXTERN (2) is not accepted by the kernel.
    let p = with(|b, ids| {
        b.add_func(b"g", 2, ids.proto).unwrap();
    });
    assert_only_rule(&p, "M5-func-linkage");
    let p = with(|b, ids| {
        b.add_func(b"g", 0, ids.int).unwrap();
    });
    assert_only_rule(&p, "R6-func-proto");
    let p = with(|b, _| {
        b.add_func(b"g", 0, 0).unwrap();
    });
    assert_only_rule(&p, "R6-func-proto");
    // A FUNC's parameters must be named (an anonymous FUNC_PROTO's need not be).
    let p = with(|b, ids| {
        let proto = b.add_func_proto(0).unwrap();
        b.add_func_param(None, ids.int).unwrap();
        b.add_func(b"g", 0, proto).unwrap();
    });
    assert_only_rule(&p, "R6-func-param-name");
    assert!(with(|b, ids| {
        b.add_func_proto(0).unwrap();
        b.add_func_param(None, ids.int).unwrap();
    })
    .is_empty());
}

#[test]
fn func_proto_vararg_and_params() {
    // A vararg (type 0) that is not the last parameter.
    let p = with(|b, ids| {
        b.add_func_proto(0).unwrap();
        b.add_func_param(None, 0).unwrap();
        b.add_func_param(Some(b"a"), ids.int).unwrap();
    });
    assert_only_rule(&p, "R7-vararg");
    // A named vararg.
    let p = with(|b, _| {
        b.add_func_proto(0).unwrap();
        b.add_func_param(Some(b"rest"), 0).unwrap();
    });
    assert_only_rule(&p, "R7-vararg");
    // A lone vararg is fine.
    assert!(with(|b, _| {
        b.add_func_proto(0).unwrap();
        b.add_func_param(None, 0).unwrap();
    })
    .is_empty());
    // Return and parameter types need a size.
    let p = with(|b, ids| {
        b.add_func_proto(ids.fwd).unwrap();
    });
    assert_only_rule(&p, "R7-proto-return");
    let p = with(|b, ids| {
        b.add_func_proto(ids.var_v).unwrap();
    });
    assert_only_rule(&p, "R7-proto-return");
    let p = with(|b, ids| {
        b.add_func_proto(0).unwrap();
        b.add_func_param(Some(b"o"), ids.fwd).unwrap();
    });
    assert_only_rule(&p, "R7-proto-param");
    let p = with(|b, ids| {
        b.add_func_proto(0).unwrap();
        b.add_func_param(Some(b"1x"), ids.int).unwrap();
    });
    assert_only_rule(&p, "R7-param-name");
}

#[test]
fn var_linkage_and_type() {
    let p = with_record(|b, ids| vec![b.add_str(b"x"), info(Kind::Var, 0, false), ids.int, 2]);
    assert_only_rule(&p, "M15-var-linkage");
    let p = with(|b, ids| {
        b.add_var(b"x", 0, ids.fwd).unwrap();
    });
    assert_only_rule(&p, "R10-var-type");
    let p = with(|b, ids| {
        b.add_var(b"x", 0, ids.proto).unwrap();
    });
    assert_only_rule(&p, "R10-var-type");
    let p = with(|b, ids| {
        b.add_var(b"x", 0, ids.var_w).unwrap();
    });
    assert_only_rule(&p, "R2-ref-target");
}

#[test]
fn datasec_ordering_and_entries() {
    // Overlapping entries.
    let p = with(|b, ids| {
        b.add_datasec(b".bss", 32).unwrap();
        b.add_datasec_var(ids.var_v, 0, 16).unwrap();
        b.add_datasec_var(ids.var_w, 8, 4).unwrap();
    });
    assert_only_rule(&p, "M14-datasec");
    // Unsorted entries.
    let p = with(|b, ids| {
        b.add_datasec(b".bss", 32).unwrap();
        b.add_datasec_var(ids.var_w, 16, 4).unwrap();
        b.add_datasec_var(ids.var_v, 0, 16).unwrap();
    });
    assert_only_rule(&p, "M14-datasec");
    // Past the section size, size 0 entry, size 0 section.
    let p = with(|b, ids| {
        b.add_datasec(b".bss", 16).unwrap();
        b.add_datasec_var(ids.var_w, 14, 4).unwrap();
    });
    assert_only_rule(&p, "M14-datasec");
    let p = with(|b, ids| {
        b.add_datasec(b".bss", 16).unwrap();
        b.add_datasec_var(ids.var_w, 0, 0).unwrap();
    });
    assert_only_rule(&p, "M14-datasec");
    let p = with_record(|b, _| vec![b.add_str(b".bss"), info(Kind::Datasec, 0, false), 0]);
    assert_only_rule(&p, "M14-datasec");
    // Entries must be VARs, as big as their type.
    let p = with(|b, ids| {
        b.add_datasec(b".bss", 16).unwrap();
        b.add_datasec_var(ids.int, 0, 4).unwrap();
    });
    assert_only_rule(&p, "R8-datasec-var");
    let p = with(|b, ids| {
        b.add_datasec(b".bss", 16).unwrap();
        b.add_datasec_var(ids.var_v, 0, 8).unwrap();
    });
    assert_only_rule(&p, "R8-datasec-size");
    // A DATASEC before its VARs still gets every entry checked.
    let p = with(|b, ids| {
        let ds = b.type_cnt();
        b.add_datasec(b".bss", 16).unwrap();
        b.add_datasec_var(ds + 1, 0, 2).unwrap();
        b.add_var(b"late", 0, ids.int).unwrap();
    });
    assert_only_rule(&p, "R8-datasec-size");
}

#[test]
fn decl_tag_component() {
    let p = with(|b, ids| {
        let name = b.add_str(b"t");
        b.push_record(&[name, info(Kind::DeclTag, 0, false), ids.s, -2i32 as u32])
            .unwrap();
    });
    assert_only_rule(&p, "M16-decl-tag-component");
    // Component past the members of the struct / the parameters of the FUNC.
    let p = with(|b, ids| {
        b.add_decl_tag(b"t", ids.s, 3).unwrap();
    });
    assert_only_rule(&p, "R9-decl-tag-component");
    let p = with(|b, ids| {
        b.add_decl_tag(b"t", ids.func, 3).unwrap();
    });
    assert_only_rule(&p, "R9-decl-tag-component");
    // VAR and TYPEDEF tags take no component.
    let p = with(|b, ids| {
        b.add_decl_tag(b"t", ids.var_v, 0).unwrap();
    });
    assert_only_rule(&p, "R9-decl-tag-component");
    // Only STRUCT, UNION, FUNC, VAR, TYPEDEF can be tagged.
    let p = with(|b, ids| {
        b.add_decl_tag(b"t", ids.int, -1).unwrap();
    });
    assert_only_rule(&p, "R9-decl-tag-target");
    assert!(with(|b, ids| {
        b.add_decl_tag(b"t", ids.u, 1).unwrap();
        b.add_decl_tag(b"t", ids.var_v, -1).unwrap();
    })
    .is_empty());
}

#[test]
fn type_tag_ordering() {
    // PTR -> CONST -> TYPE_TAG -> int: the tag comes after a modifier.
    let p = with(|b, ids| {
        let tag = b.add_ref(Kind::TypeTag, Some(b"user"), ids.int).unwrap();
        let c = b.add_ref(Kind::Const, None, tag).unwrap();
        b.add_ref(Kind::Ptr, None, c).unwrap();
    });
    assert_only_rule(&p, "M17-type-tag-order");
    // A chain through already-checked types is still checked.
    let p = with(|b, ids| {
        let tag = b.add_ref(Kind::TypeTag, Some(b"user"), ids.int).unwrap();
        let v = b.add_ref(Kind::Volatile, None, tag).unwrap();
        b.add_ref(Kind::Const, None, v).unwrap();
    });
    assert_eq!(p.len(), 1, "{}", show(&p));
    assert_eq!(p[0].rule, "M17-type-tag-order");
    // More than 32 modifiers in a row (declared outermost first: the kernel only walks the
    // links it has not checked yet).
    let p = with(|b, ids| {
        let first = b.type_cnt();
        for i in 0..40 {
            let next = if i == 39 { ids.int } else { first + i + 1 };
            b.add_ref(Kind::Const, None, next).unwrap();
        }
    });
    assert_rule(&p, "M17-type-tag-chain");
}

#[test]
fn resolve_loops_and_depth() {
    // A struct containing itself by value.
    let p = with(|b, ids| {
        let me = b.type_cnt();
        b.add_composite(Kind::Struct, Some(b"me"), 8).unwrap();
        b.add_field(Some(b"a"), ids.int, 0, 0).unwrap();
        b.add_field(Some(b"self"), me, 32, 0).unwrap();
    });
    assert_eq!(p.len(), 1, "{}", show(&p));
    assert_eq!(p[0].rule, "R3-loop");
    // Two structs containing each other, through a typedef: reported once.
    let p = with(|b, ids| {
        let a = b.type_cnt();
        b.add_composite(Kind::Struct, Some(b"A"), 8).unwrap();
        b.add_field(Some(b"b"), a + 1, 0, 0).unwrap();
        b.add_composite(Kind::Struct, Some(b"B"), 8).unwrap();
        b.add_field(Some(b"x"), ids.int, 0, 0).unwrap();
        b.add_field(Some(b"a"), a + 2, 32, 0).unwrap();
        b.add_ref(Kind::Typedef, Some(b"A_t"), a).unwrap();
    });
    assert_eq!(p.len(), 1, "{}", show(&p));
    assert_eq!(p[0].rule, "R3-loop");
    // A cycle through a pointer is fine (the sample's `s` has one); a pointer cycle is not.
    let p = with(|b, _| {
        let p = b.type_cnt();
        b.add_ref(Kind::Ptr, None, p + 1).unwrap();
        b.add_ref(Kind::Const, None, p).unwrap();
    });
    assert_rule(&p, "R3-loop");
    // Deeper than MAX_RESOLVE_DEPTH (32) nested structs.
    let p = with(|b, ids| {
        let first = b.type_cnt();
        for i in 0..40 {
            b.add_composite(Kind::Struct, Some(format!("n{i}").as_bytes()), 4)
                .unwrap();
            let inner = if i == 39 { ids.int } else { first + i + 1 };
            b.add_field(Some(b"x"), inner, 0, 0).unwrap();
        }
    });
    assert_rule(&p, "R3-depth");
    // The same nesting declared innermost-first resolves one level at a time.
    assert!(with(|b, ids| {
        for i in 0..40 {
            let inner = b
                .add_composite(Kind::Struct, Some(format!("m{i}").as_bytes()), 4)
                .unwrap();
            let prev = if i == 0 { ids.int } else { inner - 1 };
            b.add_field(Some(b"x"), prev, 0, 0).unwrap();
        }
    })
    .is_empty());
}

#[test]
fn array_index_and_element() {
    let p = with(|b, ids| {
        b.add_array(ids.s, ids.int, 2).unwrap();
    });
    assert_only_rule(&p, "R4-array-index");
    let p = with(|b, ids| {
        b.add_array(ids.float, ids.int, 2).unwrap();
    });
    assert_only_rule(&p, "R4-array-index");
    let p = with(|b, ids| {
        let odd = b.type_cnt();
        let name = b.add_str(b"u3");
        b.push_record(&[name, info(Kind::Int, 0, false), 1, 3])
            .unwrap();
        b.add_array(odd, ids.int, 2).unwrap();
    });
    assert_only_rule(&p, "R4-array-index");
    let p = with(|b, ids| {
        b.add_array(ids.uint, ids.proto, 2).unwrap();
    });
    assert_only_rule(&p, "R4-array-elem");
    let p = with(|b, ids| {
        b.add_array(ids.uint, ids.fwd, 2).unwrap();
    });
    assert_only_rule(&p, "R4-array-elem");
    let p = with(|b, ids| {
        b.add_array(ids.uint, ids.int, 0x4000_0001).unwrap();
    });
    assert_only_rule(&p, "R4-array-overflow");
    // Arrays of arrays, of structs, of pointers, and flexible arrays are fine.
    assert!(with(|b, ids| {
        let a = b.add_array(ids.uint, ids.int, 3).unwrap();
        b.add_array(ids.uint, a, 2).unwrap();
        b.add_array(ids.uint, ids.s, 0).unwrap();
        let p = b.add_ref(Kind::Ptr, None, ids.s).unwrap();
        b.add_array(ids.uint, p, 8).unwrap();
    })
    .is_empty());
}

#[test]
fn ref_targets() {
    let p = with(|b, ids| {
        b.add_ref(Kind::Ptr, None, ids.datasec).unwrap();
    });
    assert_only_rule(&p, "R2-ref-target");
    let p = with(|b, ids| {
        b.add_ref(Kind::Const, None, ids.var_v).unwrap();
    });
    assert_only_rule(&p, "R2-ref-target");
    // `typedef void`, `const struct fwd`, pointers to functions are fine.
    assert!(with(|b, ids| {
        b.add_ref(Kind::Typedef, Some(b"void_t"), 0).unwrap();
        b.add_ref(Kind::Const, None, ids.fwd).unwrap();
        b.add_ref(Kind::Ptr, None, ids.proto).unwrap();
    })
    .is_empty());
}

#[test]
fn broken_types_do_not_cascade() {
    // A member of a broken INT: only the INT is reported.
    let p = with(|b, _| {
        let bad = b.type_cnt();
        let name = b.add_str(b"bad");
        b.push_record(&[name, info(Kind::Int, 0, false), 4, 200])
            .unwrap();
        b.add_composite(Kind::Struct, Some(b"user"), 4).unwrap();
        b.add_field(Some(b"x"), bad, 0, 0).unwrap();
        b.add_ref(Kind::Typedef, Some(b"user_t"), bad + 1).unwrap();
    });
    assert_eq!(p.len(), 1, "{}", show(&p));
    assert_eq!(p[0].rule, "M8-int");
    // One problem per type even when several of its members are wrong.
    let p = with(|b, _| {
        b.add_composite(Kind::Struct, Some(b"two"), 4).unwrap();
        b.add_field(Some(b"1"), 1, 0, 0).unwrap();
        b.add_field(Some(b"2"), 1, 0, 0).unwrap();
    });
    assert_eq!(p.len(), 1, "{}", show(&p));
}

#[test]
fn split_btf() {
    let (base, ids) = sample();
    let base = Arc::new(base);
    let mut split = Btf::new_split(base.clone());
    // Only base strings and types: an empty split string section.
    let p = split.add_ref(Kind::Ptr, None, ids.s).unwrap();
    assert_valid(&split);
    assert!(split.strings().is_empty());
    let name = split.add_str(b"mod_struct");
    assert!(name >= base.str_end());
    split
        .add_composite(Kind::Struct, Some(b"mod_struct"), 24)
        .unwrap();
    split.add_field(Some(b"s"), ids.s, 0, 0).unwrap();
    split.add_field(Some(b"p"), p, 128, 0).unwrap();
    split.add_func(b"mod_f", 0, ids.proto).unwrap();
    assert_valid(&split);
    // The split string section does not start with the empty string, and need not.
    assert_ne!(split.strings().as_bytes()[0], 0);

    let bytes = write::to_bytes(&split);
    // Without its base the same bytes are broken.
    assert!(!verify::verify_bytes(&bytes, None).is_empty());
    // A split type looping through a base struct by value is impossible; a bad split type is
    // reported with its split id.
    let mut bad = Btf::new_split(base.clone());
    bad.push_record(&[0, info(Kind::Ptr, 0, false), 500_000])
        .unwrap();
    let p = check(&bad);
    assert_eq!(p.len(), 1, "{}", show(&p));
    assert_eq!(p[0].rule, "R1-type-id");
    assert_eq!(p[0].type_id, Some(base.type_cnt()));
    let _ = (ids.func, ids.datasec);
}

#[test]
fn problem_limit() {
    let (mut b, ids) = sample();
    for _ in 0..300 {
        b.push_record(&[0, info(Kind::Ptr, 1, false), ids.int])
            .unwrap();
    }
    let p = check(&b);
    assert_eq!(p.len(), verify::MAX_PROBLEMS + 1);
    assert_eq!(p.last().unwrap().rule, verify::RULE_LIMIT);
    assert!(p.last().unwrap().to_string().starts_with("..."));
    assert_eq!(
        p[0].to_string().split(':').next().unwrap(),
        format!("[{}] M5-vlen", b.type_cnt() - 300)
    );
}

/// xorshift64*: deterministic pseudo-random numbers without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

#[test]
fn garbage_never_panics() {
    let (b, ids) = sample();
    let good = write::to_bytes(&b);
    let base = Arc::new(b.clone());
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);

    // Every truncation.
    for len in 0..good.len() {
        let p = verify::verify_bytes(&good[..len], None);
        assert!(!p.is_empty(), "truncated to {len} bytes but accepted");
    }
    // Every single-bit flip in the header and types, and random words in the type section.
    let type_end = 24 + get32(&good, TYPE_LEN) as usize;
    for pos in 0..type_end {
        for bit in 0..8 {
            let mut bytes = good.clone();
            bytes[pos] ^= 1 << bit;
            let _ = verify::verify_bytes(&bytes, None);
            let _ = verify::verify_bytes(&bytes, Some(&base));
        }
    }
    for _ in 0..2000 {
        let mut bytes = good.clone();
        for _ in 0..1 + rng.next() % 4 {
            let w = 24 + 4 * (rng.next() as usize % ((type_end - 24) / 4));
            let v = match rng.next() % 4 {
                0 => rng.next() as u32,
                1 => (rng.next() % 64) as u32,
                2 => ((rng.next() % 32) << 24) as u32 | (rng.next() % 8) as u32,
                _ => get32(&bytes, w) ^ 1 << (rng.next() % 32),
            };
            set32(&mut bytes, w, v);
        }
        let _ = verify::verify_bytes(&bytes, None);
    }
    // Pure noise, with and without a valid header.
    for _ in 0..500 {
        let len = (rng.next() % 400) as usize;
        let mut bytes: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        let _ = verify::verify_bytes(&bytes, None);
        if len >= 24 {
            bytes[..24].copy_from_slice(&good[..24]);
            let body = (len - 24) as u32;
            let tl = (rng.next() as u32 % (body + 1)) & !3;
            set32(&mut bytes, TYPE_LEN, tl);
            set32(&mut bytes, STR_OFF, tl);
            set32(&mut bytes, STR_LEN, body - tl);
            let _ = verify::verify_bytes(&bytes, None);
            let _ = verify::verify_bytes(&bytes, Some(&base));
        }
    }
    // Random records pushed in memory, including ones with the wrong length.
    for _ in 0..300 {
        let mut m = b.clone();
        for _ in 0..1 + rng.next() % 5 {
            let n = (rng.next() % 8) as usize;
            let rec: Vec<u32> = (0..n)
                .map(|i| match (i, rng.next() % 3) {
                    (1, 0) => info(
                        Kind::ALL[(rng.next() % 19) as usize],
                        (rng.next() % 4) as u32,
                        rng.next() & 1 == 0,
                    ),
                    (_, 0) => (rng.next() % 64) as u32,
                    (_, 1) => ids.s,
                    _ => rng.next() as u32,
                })
                .collect();
            m.push_record(&rec).unwrap();
        }
        let _ = verify::verify(&m);
        let _ = verify::verify_bytes(&write::to_bytes(&m), None);
    }
}

/// The reference pahole output for the Debian 6.1 kernel must be accepted as is.
#[test]
fn pahole_oracle_is_accepted() {
    let data = std::fs::read(common::oracle_btf()).unwrap();
    assert_eq!(
        u32::from_le_bytes(data[4..8].try_into().unwrap()),
        32,
        "expected a 32-byte header"
    );
    let t = std::time::Instant::now();
    let p = verify::verify_bytes(&data, None);
    let elapsed = t.elapsed();
    assert!(p.is_empty(), "pahole output rejected:\n{}", show(&p));
    println!("verified {} bytes in {elapsed:?}", data.len());
    // The in-memory path agrees.
    let btf = read::parse(&data, None).unwrap();
    assert!(btf.own_len() > 90_000);
    assert!(verify::verify(&btf).is_empty());
}
