//! Hand-made BTF with libbpf 1.8's 32-byte header: a small valid BTF written with its kind
//! layout section, and variants of its header and section placement, each with the rule
//! that kernels from 7.1 on and kernels before 7.1 break (tests/btf_library/verify_layout.rs checks the
//! rule ids, tests/real_kernel/verify_kernel.rs the verdicts against the running kernel).

use dwarf2btf::btf::write::{self, HeaderForm};
use dwarf2btf::btf::{kinds, Btf, Kind};

/// One variant and what each kind of kernel says of it (`None`: it accepts it).
pub struct Case {
    /// What the variant changes, for messages.
    pub name: &'static str,
    /// The BTF bytes.
    pub data: Vec<u8>,
    /// The rule Linux 7.1 and later break.
    pub layout_rule: Option<&'static str>,
    /// The rule kernels before 7.1 break.
    pub classic_rule: Option<&'static str>,
}

const HDR_LEN: usize = 4;
const TYPE_OFF: usize = 8;
const TYPE_LEN: usize = 12;
const STR_OFF: usize = 16;
const STR_LEN: usize = 20;
const LAYOUT_OFF: usize = 24;
const LAYOUT_LEN: usize = 28;
/// 20 kinds of 4 bytes each, as libbpf 1.8 writes it.
const LAYOUT_BYTES: usize = 80;

fn get32(b: &[u8], pos: usize) -> usize {
    u32::from_ne_bytes(b[pos..pos + 4].try_into().unwrap()) as usize
}

fn set32(b: &mut [u8], pos: usize, v: usize) {
    b[pos..pos + 4].copy_from_slice(&(v as u32).to_ne_bytes());
}

/// A small valid BTF (an int, a struct using it, a pointer to the struct), in the host's byte
/// order as the kernel wants it.
pub fn small_btf() -> Btf {
    let mut b = Btf::new();
    let int = b.add_int(b"int", 4, kinds::INT_SIGNED).unwrap();
    let s = b.add_composite(Kind::Struct, Some(b"s"), 8).unwrap();
    b.add_field(Some(b"a"), int, 0, 0).unwrap();
    b.add_field(Some(b"b"), int, 32, 0).unwrap();
    b.add_ref(Kind::Ptr, None, s).unwrap();
    if cfg!(target_endian = "big") {
        b.endian = dwarf2btf::btf::Endian::Big;
    }
    b
}

/// [`small_btf`] as pahole HEAD writes base BTF with `layout`: header | types | layout |
/// strings.
pub fn with_layout() -> Vec<u8> {
    write::to_bytes_as(&small_btf(), HeaderForm::Extended { layout: true })
}

/// The sections of [`with_layout`]: (types, layout, strings).
fn parts() -> (Vec<u8>, Vec<u8>, Vec<u8>) {
    let b = with_layout();
    let t = 32 + get32(&b, TYPE_LEN);
    let l = t + LAYOUT_BYTES;
    (b[32..t].to_vec(), b[t..l].to_vec(), b[l..].to_vec())
}

/// A 32-byte header over `sections` (name, bytes) laid out in that order: each field points
/// at its section, the layout fields stay zero without a layout section.
fn assemble(sections: &[(&str, &[u8])]) -> Vec<u8> {
    let mut out = with_layout()[..32].to_vec();
    for pos in [TYPE_OFF, TYPE_LEN, STR_OFF, STR_LEN, LAYOUT_OFF, LAYOUT_LEN] {
        set32(&mut out, pos, 0);
    }
    let mut off = 0;
    for &(name, bytes) in sections {
        let field = match name {
            "type" => TYPE_OFF,
            "string" => STR_OFF,
            "layout" => LAYOUT_OFF,
            _ => panic!("no {name} section"),
        };
        set32(&mut out, field, off);
        set32(&mut out, field + 4, bytes.len());
        out.extend_from_slice(bytes);
        off += bytes.len();
    }
    out
}

/// Strings padded with NUL bytes (empty strings) to `len % 4 == rem`.
fn strings_padded(rem: usize) -> Vec<u8> {
    let mut s = parts().2;
    while s.len() % 4 != rem {
        s.push(0);
    }
    s
}

/// [`with_layout`] with header word `pos` set to `v`.
fn patched(pos: usize, v: usize) -> Vec<u8> {
    let mut b = with_layout();
    set32(&mut b, pos, v);
    b
}

/// [`with_layout`] with `n` zero bytes inserted before byte `at` of the data after the header.
fn inserted(at: usize, n: usize) -> Vec<u8> {
    let b = with_layout();
    let mut out = b[..32 + at].to_vec();
    out.extend(std::iter::repeat_n(0, n));
    out.extend_from_slice(&b[32 + at..]);
    out
}

/// [`with_layout`] with a longer header of `hdr_len` bytes whose bytes past 32 are `extra`.
fn longer_header(extra: u8, hdr_len: usize) -> Vec<u8> {
    let b = with_layout();
    let mut out = b[..32].to_vec();
    set32(&mut out, HDR_LEN, hdr_len);
    out.extend(std::iter::repeat_n(extra, hdr_len - 32));
    out.extend_from_slice(&b[32..]);
    out
}

/// The variants. Before 7.1 the header must be zero past byte 24, so a non-zero layout field
/// is the first thing those kernels see.
pub fn cases() -> Vec<Case> {
    let (types, layout, strs) = parts();
    let t = types.len();
    let hdr_extra = Some("H2-hdr-extra");
    let sections = Some("H4-sections");
    let case = |name, data, layout_rule, classic_rule| Case {
        name,
        data,
        layout_rule,
        classic_rule,
    };
    let mut gap = inserted(t, 4);
    for pos in [LAYOUT_OFF, STR_OFF] {
        let v = get32(&gap, pos) + 4;
        set32(&mut gap, pos, v);
    }
    let mut header_28 = with_layout()[..28].to_vec();
    set32(&mut header_28, HDR_LEN, 28);
    set32(&mut header_28, STR_OFF, t);
    header_28.extend_from_slice(&types);
    header_28.extend_from_slice(&strs);
    vec![
        case("as pahole HEAD writes it", with_layout(), None, hdr_extra),
        case(
            "strings between the types and an unaligned layout section",
            assemble(&[
                ("type", &types),
                ("string", &strings_padded(2)),
                ("layout", &layout),
            ]),
            Some("H8-layout-off"),
            hdr_extra,
        ),
        case(
            "strings between the types and the layout section",
            assemble(&[
                ("type", &types),
                ("string", &strings_padded(0)),
                ("layout", &layout),
            ]),
            None,
            hdr_extra,
        ),
        case(
            "layout_len not a multiple of 4",
            assemble(&[
                ("type", &types),
                ("layout", &layout[..78]),
                ("string", &strs),
            ]),
            Some("H8-layout-len"),
            hdr_extra,
        ),
        case(
            "a layout section of 2 bytes",
            assemble(&[
                ("type", &types),
                ("layout", &layout[..2]),
                ("string", &strs),
            ]),
            Some("H8-layout-len"),
            hdr_extra,
        ),
        case(
            "layout section overlapping the types",
            patched(LAYOUT_OFF, t - 4),
            sections,
            hdr_extra,
        ),
        case(
            "layout section running into the strings",
            patched(LAYOUT_LEN, LAYOUT_BYTES + 4),
            sections,
            hdr_extra,
        ),
        case("a gap before the layout section", gap, sections, hdr_extra),
        case(
            "bytes after the strings in no section",
            [with_layout(), vec![0; 4]].concat(),
            sections,
            hdr_extra,
        ),
        case(
            "a 36-byte header with a non-zero byte 32",
            longer_header(1, 36),
            hdr_extra,
            hdr_extra,
        ),
        case(
            "a 36-byte header, zero past 32",
            longer_header(0, 36),
            None,
            hdr_extra,
        ),
        case(
            "no layout section, layout fields zero",
            assemble(&[("type", &types), ("string", &strs)]),
            None,
            None,
        ),
        case(
            "no layout section, layout_off left non-zero",
            assemble(&[("type", &types), ("string", &strs)])
                .into_iter()
                .enumerate()
                .map(|(i, b)| if i == LAYOUT_OFF { 0x44 } else { b })
                .collect(),
            None,
            hdr_extra,
        ),
        case(
            "no layout section, strings before the types",
            assemble(&[("string", &strings_padded(0)), ("type", &types)]),
            None,
            Some("H4-str-not-last"),
        ),
        case(
            "a 28-byte header with layout_off non-zero",
            header_28,
            None,
            hdr_extra,
        ),
    ]
}
