//! Header and section layout: `btf_parse_hdr`, `btf_check_sec_info`, the string-section
//! rules of `btf_parse_str_sec` and (from 7.1 on) `btf_parse_layout_sec` (rules `H1`..`H6`,
//! `H8`), as the kernels of a [`HeaderRules`] apply them, and the split of the type section
//! into records that the meta checks then look at one by one.

use super::problem::Sink;
use super::target::{HeaderRules, CLASSIC_HDR_LEN, LAYOUT_HDR_LEN, LAYOUT_KERNEL};
use crate::btf::kinds::{self, Kind};
use crate::btf::read;
use crate::btf::Endian;

/// `sizeof(struct btf_layout)`: `info_sz` (u8), `elem_sz` (u8), `flags` (u16).
const LAYOUT_ENTRY_LEN: u32 = 4;

/// The header fields the later checks need.
pub(super) struct Header {
    pub(super) endian: Endian,
    pub(super) hdr_len: usize,
    pub(super) type_off: u32,
    pub(super) type_len: u32,
    pub(super) str_off: u32,
    pub(super) str_len: u32,
}

/// A section as the header places it: name, offset and length (after the header).
type Section = (&'static str, u64, u64);

pub(super) fn section(body: &[u8], off: u32, len: u32) -> &[u8] {
    let start = off as usize;
    body.get(start..start.saturating_add(len as usize))
        .unwrap_or(&[])
}

/// The rules for `data` judged on its own header ([`HeaderRules::for_hdr_len`]).
pub(super) fn own_rules(data: &[u8]) -> HeaderRules {
    let hdr_len = read::byte_order(data).and_then(|e| e.u32_at(data, 4));
    HeaderRules::for_hdr_len(hdr_len)
}

/// `btf_parse_hdr` + `btf_check_sec_info` + the placement part of `btf_parse_str_sec` +
/// `btf_parse_layout_sec`, as the kernels of `rules` run them. Returns `None` when the
/// sections cannot be located.
pub(super) fn check_header(
    data: &[u8],
    split: bool,
    rules: HeaderRules,
    sink: &mut Sink,
) -> Option<Header> {
    let (endian, hdr_len) = check_prefix(data, split, rules, sink)?;
    let word_at = |off| endian.u32_at(data, off).unwrap_or(0);
    let h = Header {
        endian,
        hdr_len,
        type_off: word_at(8),
        type_len: word_at(12),
        str_off: word_at(16),
        str_len: word_at(20),
    };
    // 7.1's btf_check_sec_info: the layout section joins the tiling only when a header of
    // sizeof(struct btf_header) gives it a length; otherwise its fields are not looked at.
    let layout = (rules.reads_layout(hdr_len) && word_at(28) != 0)
        .then(|| ("layout", word_at(24) as u64, word_at(28) as u64));
    let mut secs = vec![
        ("type", h.type_off as u64, h.type_len as u64),
        ("string", h.str_off as u64, h.str_len as u64),
    ];
    secs.extend(layout);
    check_sections(&mut secs, (data.len() - hdr_len) as u64, sink)?;
    // btf_parse_str_sec: the strings come last unless the header is a layout-aware one.
    if !rules.reads_layout(hdr_len)
        && h.str_off as u64 + h.str_len as u64 != (data.len() - hdr_len) as u64
    {
        sink.push(
            None,
            "H4-str-not-last",
            "the string section is not at the end of the data".into(),
        );
    }
    if let Some((_, off, len)) = layout {
        check_layout(off, len, sink);
    }
    if !h.type_off.is_multiple_of(4) {
        sink.push(
            None,
            "H3-type-align",
            format!("type_off {} is not 4-byte aligned", h.type_off),
        );
    }
    Some(h)
}

/// The start of `btf_parse_hdr`: data to hold `hdr_len`, the magic, a header that fits, no
/// unknown non-zero header bytes, version, flags, data after a base BTF's header. Returns the
/// byte order and `hdr_len` when the section fields can be read.
fn check_prefix(
    data: &[u8],
    split: bool,
    rules: HeaderRules,
    sink: &mut Sink,
) -> Option<(Endian, usize)> {
    if data.len() < 8 {
        sink.push(
            None,
            "H2-hdr-len",
            format!("{} bytes is too short to hold a BTF header", data.len()),
        );
        return None;
    }
    let Some(endian) = read::byte_order(data) else {
        sink.push(
            None,
            "H1-magic",
            format!(
                "bad magic {:02x} {:02x} (expected 0xeb9f)",
                data[0], data[1]
            ),
        );
        return None;
    };
    let hdr_len = endian.u32_at(data, 4).unwrap_or(0) as usize;
    if hdr_len > data.len() {
        sink.push(
            None,
            "H2-hdr-len",
            format!(
                "hdr_len {hdr_len} is larger than the {} bytes of data",
                data.len()
            ),
        );
        return None;
    }
    if hdr_len < CLASSIC_HDR_LEN {
        sink.push(
            None,
            "H2-hdr-len",
            format!("hdr_len {hdr_len} is shorter than the {CLASSIC_HDR_LEN}-byte header"),
        );
        return None;
    }
    let known = rules.known_hdr_len();
    if let Some(pos) = data[known.min(hdr_len)..hdr_len]
        .iter()
        .position(|&b| b != 0)
    {
        sink.push(None, "H2-hdr-extra", hdr_extra(rules, known + pos, hdr_len));
        return None;
    }
    if data[2] != 1 {
        sink.push(
            None,
            "H1-version",
            format!("unsupported version {} (expected 1)", data[2]),
        );
    }
    if data[3] != 0 {
        sink.push(
            None,
            "H1-flags",
            format!("unsupported flags {:#04x} (expected 0)", data[3]),
        );
    }
    if !split && data.len() == hdr_len {
        sink.push(None, "H5-no-types", "no data after the header".into());
        return None;
    }
    Some((endian, hdr_len))
}

/// Why header byte `at` (non-zero, past what the kernel knows) makes it reject the BTF.
fn hdr_extra(rules: HeaderRules, at: usize, hdr_len: usize) -> String {
    let known = rules.known_hdr_len();
    let why = format!(
        "header byte {at} is non-zero, and a header longer than {known} bytes ({hdr_len} here) \
         is taken only when its bytes past {known} are zero"
    );
    match rules {
        HeaderRules::Classic => format!(
            "{why}: bytes {CLASSIC_HDR_LEN}..{LAYOUT_HDR_LEN} are layout_off and layout_len, \
             which kernels read from {LAYOUT_KERNEL} on"
        ),
        HeaderRules::Layout => why,
    }
}

/// `btf_check_sec_info`: the sections, sorted by offset, must tile the `expected` bytes after
/// the header exactly. Returns `None` (after saying why) when they do not.
fn check_sections(secs: &mut [Section], expected: u64, sink: &mut Sink) -> Option<()> {
    secs.sort_by_key(|&(_, off, len)| (off, len));
    let mut total = 0u64;
    for &(name, off, len) in secs.iter() {
        let why = if expected < off {
            format!("{name} section offset {off} is past the {expected} bytes after the header")
        } else if total < off {
            format!(
                "unsupported section found: gap of {} bytes before the {name} section",
                off - total
            )
        } else if total > off {
            format!("section overlap found: {name} section at {off} starts inside the previous one")
        } else if expected - total < len {
            format!("total section length too long: {name} section of {len} bytes at {off} runs past the {expected} bytes after the header")
        } else {
            total += len;
            continue;
        };
        sink.push(None, "H4-sections", why);
        return None;
    }
    if expected != total {
        sink.push(
            None,
            "H4-sections",
            format!(
                "unsupported section found: {} bytes after the header are in no section",
                expected - total
            ),
        );
        return None;
    }
    Some(())
}

/// `btf_parse_layout_sec` (7.1 and later, `BPF_BTF_LOAD`): the kind layout section is
/// 4-byte aligned and holds whole `struct btf_layout` entries, at least one. (Its "too big"
/// check cannot fail once the sections tile the data; the entries themselves are not read.)
fn check_layout(off: u64, len: u64, sink: &mut Sink) {
    if !off.is_multiple_of(4) {
        sink.push(
            None,
            "H8-layout-off",
            format!("layout_off {off} is not 4-byte aligned (unaligned layout_off)"),
        );
    }
    let entry = LAYOUT_ENTRY_LEN as u64;
    if len < entry {
        sink.push(
            None,
            "H8-layout-len",
            format!("the layout section is too small: {len} bytes, less than one {entry}-byte struct btf_layout"),
        );
    } else if !len.is_multiple_of(entry) {
        sink.push(
            None,
            "H8-layout-len",
            format!("layout_len {len} is not a multiple of {entry} (sizeof(struct btf_layout))"),
        );
    }
}

/// The string-section rules of `btf_parse_str_sec`.
pub(super) fn check_strings(s: &[u8], split: bool, sink: &mut Sink) {
    if split && s.is_empty() {
        return;
    }
    if s.is_empty() {
        sink.push(None, "H6-str-section", "the string section is empty".into());
        return;
    }
    if s.len() - 1 > kinds::MAX_NAME_OFFSET as usize {
        sink.push(
            None,
            "H6-str-section",
            format!(
                "the string section is {} bytes, more than offsets can address ({:#x})",
                s.len(),
                kinds::MAX_NAME_OFFSET
            ),
        );
    } else if s.last() != Some(&0) {
        sink.push(
            None,
            "H6-str-section",
            "the string section does not end with a NUL byte".into(),
        );
    }
    if !split && s[0] != 0 {
        sink.push(
            None,
            "H5-str-first",
            "the string section of base BTF must start with the empty string".into(),
        );
    }
}

/// Splits the type words into records. Stops at the first record whose size cannot be known
/// (unknown kind) or that does not fit; that record is still included so that the meta check
/// reports it. Returns the offsets and whether the section was cut short.
pub(super) fn scan_records(words: &[u32], start_id: u32, sink: &mut Sink) -> (Vec<u32>, bool) {
    let mut offs = Vec::new();
    let mut i = 0usize;
    while i < words.len() {
        let id = start_id + offs.len() as u32;
        if id >= kinds::MAX_TYPE_ID {
            sink.push(
                Some(id),
                "M2-too-many-types",
                format!(
                    "exceeded the maximum number of types (ids must stay below {:#x})",
                    kinds::MAX_TYPE_ID
                ),
            );
            return (offs, true);
        }
        offs.push(i as u32);
        let Some(&info) = words.get(i + 1) else {
            return (offs, true);
        };
        let Some(kind) = Kind::from_u32(kinds::info_kind(info)) else {
            return (offs, true);
        };
        let n = kind.record_words(kinds::info_vlen(info));
        if i + n > words.len() {
            return (offs, true);
        }
        i += n;
    }
    (offs, false)
}
