//! Header and section layout: `btf_parse_hdr`, `btf_check_sec_info` and the string-section
//! rules of `btf_parse_str_sec` (rules `H1`..`H6`), and the split of the type section into
//! records that the meta checks then look at one by one.

use super::Sink;
use crate::btf::kinds::{self, Kind};
use crate::btf::read;
use crate::btf::Endian;

/// Length of the header fields a 6.1 kernel knows; extra header bytes must be zero.
const KNOWN_HDR_LEN: usize = 24;

/// The header fields the later checks need.
pub(super) struct Header {
    pub(super) endian: Endian,
    pub(super) hdr_len: usize,
    pub(super) type_off: u32,
    pub(super) type_len: u32,
    pub(super) str_off: u32,
    pub(super) str_len: u32,
}

pub(super) fn section(body: &[u8], off: u32, len: u32) -> &[u8] {
    let start = off as usize;
    body.get(start..start.saturating_add(len as usize))
        .unwrap_or(&[])
}

/// `btf_parse_hdr` + `btf_check_sec_info` + the placement part of `btf_parse_str_sec`.
/// Returns `None` when the sections cannot be located.
pub(super) fn check_header(data: &[u8], split: bool, sink: &mut Sink) -> Option<Header> {
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
    let word_at = |off| endian.u32_at(data, off).unwrap_or(0);
    let hdr_len = word_at(4) as usize;
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
    if hdr_len < KNOWN_HDR_LEN {
        sink.push(
            None,
            "H2-hdr-len",
            format!("hdr_len {hdr_len} is shorter than the {KNOWN_HDR_LEN}-byte header"),
        );
        return None;
    }
    if let Some(pos) = data[KNOWN_HDR_LEN..hdr_len].iter().position(|&b| b != 0) {
        sink.push(
            None,
            "H2-hdr-extra",
            format!(
                "header byte {} is non-zero: a 6.1 kernel only accepts a {hdr_len}-byte header \
                 whose bytes past {KNOWN_HDR_LEN} are zero",
                KNOWN_HDR_LEN + pos
            ),
        );
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
    let h = Header {
        endian,
        hdr_len,
        type_off: word_at(8),
        type_len: word_at(12),
        str_off: word_at(16),
        str_len: word_at(20),
    };

    // btf_check_sec_info: the sections, sorted by offset, must tile the body exactly.
    let expected = (data.len() - hdr_len) as u64;
    let mut secs = [
        ("type", h.type_off as u64, h.type_len as u64),
        ("string", h.str_off as u64, h.str_len as u64),
    ];
    secs.sort_by_key(|&(_, off, len)| (off, len));
    let mut total = 0u64;
    for (name, off, len) in secs {
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
    if h.str_off as u64 + h.str_len as u64 != expected {
        sink.push(
            None,
            "H4-str-not-last",
            "the string section is not at the end of the data".into(),
        );
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
