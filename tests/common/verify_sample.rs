//! The sample BTF of the `toolbox::verify` rule tests (tests/btf_library/verify_header.rs, the header and
//! section rules; tests/btf_library/verify_types.rs, the rules for type records): a valid BTF using every
//! kind, the ways to corrupt it (append a record, patch a word of its bytes) and the
//! assertions on the problems found.

use dwarf2btf::btf::{kinds, write, Btf, Kind};
use dwarf2btf::toolbox::verify::{self, Problem};

/// Ids of the sample's types.
pub struct Ids {
    /// `int`.
    pub int: u32,
    /// `unsigned int`.
    pub uint: u32,
    /// `long`.
    pub long: u32,
    /// The struct.
    pub s: u32,
    /// The union.
    pub u: u32,
    /// The forward declaration.
    pub fwd: u32,
    /// `double`.
    pub float: u32,
    /// The function prototype.
    pub proto: u32,
    /// The function.
    pub func: u32,
    /// The variable `v`.
    pub var_v: u32,
    /// The variable `w`.
    pub var_w: u32,
    /// The data section.
    pub datasec: u32,
}

/// A valid BTF using every kind.
pub fn sample() -> (Btf, Ids) {
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

/// The problems, one indented line each, for assertion messages.
pub fn show(p: &[Problem]) -> String {
    p.iter().map(|p| format!("  {p}\n")).collect()
}

/// Fails unless some problem breaks `rule`.
#[track_caller]
pub fn assert_rule(p: &[Problem], rule: &str) {
    assert!(
        p.iter().any(|x| x.rule == rule),
        "expected rule {rule}, got:\n{}",
        show(p)
    );
}

/// Fails unless there are problems and every one breaks `rule`.
#[track_caller]
pub fn assert_only_rule(p: &[Problem], rule: &str) {
    assert!(
        !p.is_empty() && p.iter().all(|x| x.rule == rule),
        "expected only rule {rule}, got:\n{}",
        show(p)
    );
}

/// Fails unless `btf` verifies, in memory and as bytes.
#[track_caller]
pub fn assert_valid(btf: &Btf) {
    let p = verify::verify(btf);
    assert!(p.is_empty(), "in-memory BTF rejected:\n{}", show(&p));
    let p = verify::verify_bytes(&write::to_bytes(btf), btf.base());
    assert!(p.is_empty(), "raw BTF rejected:\n{}", show(&p));
}

/// Verifies in memory and as bytes; both must agree. Returns the problems.
#[track_caller]
pub fn check(btf: &Btf) -> Vec<Problem> {
    let mem = verify::verify(btf);
    let raw = verify::verify_bytes(&write::to_bytes(btf), btf.base());
    assert_eq!(mem, raw, "in-memory and raw verification differ");
    mem
}

/// Appends a raw record to the sample and verifies.
#[track_caller]
pub fn with_record(f: impl FnOnce(&mut Btf, &Ids) -> Vec<u32>) -> Vec<Problem> {
    let (mut b, ids) = sample();
    let rec = f(&mut b, &ids);
    b.push_record(&rec).unwrap();
    check(&b)
}

/// Builds with the sample as a starting point and verifies.
#[track_caller]
pub fn with(f: impl FnOnce(&mut Btf, &Ids)) -> Vec<Problem> {
    let (mut b, ids) = sample();
    f(&mut b, &ids);
    check(&b)
}

/// A type's `info` word.
pub fn info(kind: Kind, vlen: u32, kflag: bool) -> u32 {
    kinds::info(kind, vlen, kflag)
}

/// Byte position (in `write::to_bytes` output) of word `word` of type `id`.
pub fn word_pos(btf: &Btf, id: u32, word: usize) -> usize {
    let before: usize = (btf.start_id()..id)
        .map(|i| btf.type_by_id(i).unwrap().words.len())
        .sum();
    write::HEADER_LEN as usize + 4 * (before + word)
}

/// The little-endian word at byte `pos`.
pub fn get32(b: &[u8], pos: usize) -> u32 {
    u32::from_le_bytes(b[pos..pos + 4].try_into().unwrap())
}

/// Writes the little-endian word `v` at byte `pos`.
pub fn set32(b: &mut [u8], pos: usize, v: u32) {
    b[pos..pos + 4].copy_from_slice(&v.to_le_bytes());
}

/// Serialises the sample, rewrites word `word` of type `id` with `f`, verifies the bytes.
#[track_caller]
pub fn patched(
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

/// Header fields of `write::to_bytes` output: the type section's offset,
pub const TYPE_OFF: usize = 8;
/// its length,
pub const TYPE_LEN: usize = 12;
/// the string section's offset,
pub const STR_OFF: usize = 16;
/// and its length.
pub const STR_LEN: usize = 20;
