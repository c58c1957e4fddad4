//! The kernel's BTF checks (`dwarf2btf verify`): would a Linux 6.1 kernel accept this BTF?
//!
//! This module owns the port of `kernel/bpf/btf.c` (6.1) validation: the header and section
//! checks of `btf_parse_hdr` / `btf_check_sec_info` / `btf_parse_str_sec`, every kind's
//! `check_meta`, `btf_check_type_tags`, and the resolve pass of `BPF_BTF_LOAD`
//! (`btf_resolve`, the per-kind `resolve` and `check_member` callbacks, `btf_func_proto_check`).
//! Each problem carries a short, stable rule name (`H*` header, `M*` meta, `R*` resolve; see
//! the checklist in the format reference, §1.7) so callers and tests can match on it.
//!
//! Rules (`Problem::rule`):
//! - header: `H1-magic`, `H1-version`, `H1-flags`, `H2-hdr-len`, `H2-hdr-extra`,
//!   `H3-type-align`, `H4-sections`, `H4-str-not-last`, `H5-no-types`, `H5-str-first`,
//!   `H6-str-section`;
//! - meta (what the kernel checks on vmlinux and module BTF too): `M1-info-bits`, `M1-kind`,
//!   `M2-truncated`, `M2-too-many-types`, `M3-name-offset`, `M4-name`, `M5-vlen`,
//!   `M5-func-linkage`, `M6-kflag`, `M7-type-id`, `M8-int`, `M9-array-size`,
//!   `M10-member-offset`, `M11-enum-size`, `M12-fwd`, `M13-float-size`, `M14-datasec`,
//!   `M15-var-linkage`, `M16-decl-tag-component`, `M17-type-tag-order`, `M17-type-tag-chain`;
//! - resolve (`BPF_BTF_LOAD` only in the kernel): `R1-type-id`, `R2-ref-target`, `R3-loop`,
//!   `R3-depth`, `R4-array-index`, `R4-array-elem`, `R4-array-overflow`, `R5-member`,
//!   `R6-func-proto`, `R6-func-param-name`, `R7-proto-return`, `R7-proto-param`,
//!   `R7-param-name`, `R7-vararg`, `R8-datasec-var`, `R8-datasec-size`, `R9-decl-tag-target`,
//!   `R9-decl-tag-component`, `R10-var-type` (and `R0-internal`, which should never appear);
//! - [`RULE_LIMIT`] ends a list cut at [`MAX_PROBLEMS`].
//!
//! Differences from the kernel, all deliberate:
//! - the kernel stops at the first error; we report the first problem of every type (up to
//!   [`MAX_PROBLEMS`]), and types that depend on an already-reported broken type are skipped
//!   silently instead of producing follow-on errors;
//! - either byte order is accepted (the kernel only takes its native one; the encoder writes the
//!   byte order of its ELF input, i.e. of the target kernel);
//! - the 16 MiB `BPF_BTF_LOAD` size limit (H7) is not enforced: it does not apply to vmlinux or
//!   module BTF;
//! - a DATASEC entry whose VAR had to be resolved first is still size-checked (the kernel skips
//!   that one entry);
//! - identifiers are ASCII `[A-Za-z_][A-Za-z0-9_]*` (the kernel's `isalpha` also takes Latin-1
//!   letters 0xC0..=0xFF).
//!
//! Split BTF: ids below `start_id` and string offsets below `start_str_off` refer to the base,
//! which is trusted (not re-verified); base types count as resolved, as in the kernel.
//! The resolve pass is iterative with an explicit stack bounded by `MAX_RESOLVE_DEPTH` (32), like
//! the kernel's, so a deep type graph cannot overflow the native stack.

use std::fmt;
use std::sync::Arc;

use super::kinds::{self, Kind};
use super::strings::StringTable;
use super::write::MAGIC;
use super::{Btf, Endian};

/// At most this many problems are reported; one more entry (rule [`RULE_LIMIT`]) says so.
pub const MAX_PROBLEMS: usize = 100;
/// Rule name of the final entry added when more than [`MAX_PROBLEMS`] problems were found.
pub const RULE_LIMIT: &str = "LIMIT";

/// `KSYM_NAME_LEN` of Linux 6.1: identifiers may be at most this many bytes long.
const KSYM_NAME_LEN: usize = 512;
/// `MAX_RESOLVE_DEPTH` of the kernel's resolver.
const MAX_RESOLVE_DEPTH: usize = 32;
/// Length of the header fields a 6.1 kernel knows; extra header bytes must be zero.
const KNOWN_HDR_LEN: usize = 24;
/// `BTF_INT_MASK`: bits of the INT data word that may be set.
const INT_MASK: u32 = 0x0fff_ffff;

/// One reason the kernel would reject the BTF.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// The type concerned; `None` for header and string-section problems.
    pub type_id: Option<u32>,
    /// Stable rule identifier, e.g. `"H1-magic"`, `"M10-member-offset"`, `"R3-loop"`.
    pub rule: &'static str,
    /// What is wrong, for a human.
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.type_id {
            _ if self.rule == RULE_LIMIT => write!(f, "... {}", self.message),
            Some(id) => write!(f, "[{id}] {}: {}", self.rule, self.message),
            None => write!(f, "header {}: {}", self.rule, self.message),
        }
    }
}

/// Checks raw BTF bytes: header, sections, then every type (meta and resolve checks).
///
/// `base` must be given for split BTF. An empty result means the BTF is valid.
pub fn verify_bytes(data: &[u8], base: Option<&Arc<Btf>>) -> Vec<Problem> {
    let mut sink = Sink::default();
    let Some(h) = check_header(data, base.is_some(), &mut sink) else {
        return sink.problems;
    };
    let body = data.get(h.hdr_len..).unwrap_or(&[]);
    let tsec = section(body, h.type_off, h.type_len);
    let ssec = section(body, h.str_off, h.str_len);
    check_strings(ssec, base.is_some(), &mut sink);
    if base.is_none() && tsec.is_empty() {
        sink.push(None, "H5-no-types", "base BTF without any type".into());
    }

    let words: Vec<u32> = tsec
        .chunks_exact(4)
        .map(|c| {
            let b = [c[0], c[1], c[2], c[3]];
            match h.endian {
                Endian::Little => u32::from_le_bytes(b),
                Endian::Big => u32::from_be_bytes(b),
            }
        })
        .collect();
    let start_id = base.map_or(1, |b| b.type_cnt());
    let (offs, mut truncated) = scan_records(&words, start_id, &mut sink);
    if !truncated && !tsec.len().is_multiple_of(4) {
        sink.push(
            Some(start_id + offs.len() as u32),
            "M2-truncated",
            format!(
                "type section ends with {} stray byte(s) (meta_left < 12)",
                tsec.len() % 4
            ),
        );
        truncated = true;
    }
    let btf = Btf::from_parts(
        base.cloned(),
        words,
        offs,
        StringTable::from_bytes(ssec.to_vec()),
        h.endian,
    );
    check_types(&btf, &mut sink, truncated);
    sink.problems
}

/// Checks an in-memory BTF: string section, then every own type (meta and resolve checks).
///
/// An empty result means the BTF is valid.
pub fn verify(btf: &Btf) -> Vec<Problem> {
    let mut sink = Sink::default();
    check_strings(btf.strings().as_bytes(), btf.base().is_some(), &mut sink);
    if btf.base().is_none() && btf.own_len() == 0 {
        sink.push(None, "H5-no-types", "base BTF without any type".into());
    }
    check_types(btf, &mut sink, false);
    sink.problems
}

/// Collects problems, stopping after [`MAX_PROBLEMS`].
#[derive(Default)]
struct Sink {
    problems: Vec<Problem>,
    full: bool,
}

impl Sink {
    fn push(&mut self, type_id: Option<u32>, rule: &'static str, message: String) {
        if self.full {
            return;
        }
        if self.problems.len() == MAX_PROBLEMS {
            self.full = true;
            self.problems.push(Problem {
                type_id: None,
                rule: RULE_LIMIT,
                message: format!("more problems not shown (stopped after {MAX_PROBLEMS})"),
            });
            return;
        }
        self.problems.push(Problem {
            type_id,
            rule,
            message,
        });
    }
}

// ---------------------------------------------------------------------------------------------
// Header and sections
// ---------------------------------------------------------------------------------------------

struct Header {
    endian: Endian,
    hdr_len: usize,
    type_off: u32,
    type_len: u32,
    str_off: u32,
    str_len: u32,
}

fn rd32(data: &[u8], off: usize, endian: Endian) -> u32 {
    let mut b = [0u8; 4];
    if let Some(s) = data.get(off..off + 4) {
        b.copy_from_slice(s);
    }
    match endian {
        Endian::Little => u32::from_le_bytes(b),
        Endian::Big => u32::from_be_bytes(b),
    }
}

fn section(body: &[u8], off: u32, len: u32) -> &[u8] {
    let start = off as usize;
    body.get(start..start.saturating_add(len as usize))
        .unwrap_or(&[])
}

/// `btf_parse_hdr` + `btf_check_sec_info` + the placement part of `btf_parse_str_sec`.
/// Returns `None` when the sections cannot be located.
fn check_header(data: &[u8], split: bool, sink: &mut Sink) -> Option<Header> {
    if data.len() < 8 {
        sink.push(
            None,
            "H2-hdr-len",
            format!("{} bytes is too short to hold a BTF header", data.len()),
        );
        return None;
    }
    let endian = if data[..2] == MAGIC.to_le_bytes() {
        Endian::Little
    } else if data[..2] == MAGIC.to_be_bytes() {
        Endian::Big
    } else {
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
    let hdr_len = rd32(data, 4, endian) as usize;
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
        type_off: rd32(data, 8, endian),
        type_len: rd32(data, 12, endian),
        str_off: rd32(data, 16, endian),
        str_len: rd32(data, 20, endian),
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
fn check_strings(s: &[u8], split: bool, sink: &mut Sink) {
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
fn scan_records(words: &[u32], start_id: u32, sink: &mut Sink) -> (Vec<u32>, bool) {
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

// ---------------------------------------------------------------------------------------------
// Names
// ---------------------------------------------------------------------------------------------

/// `__btf_name_valid` of Linux 6.1: a C identifier of at most `KSYM_NAME_LEN` bytes; with
/// `dot_ok` (VAR and DATASEC names) `.` is allowed anywhere, including first.
fn name_valid(s: &[u8], dot_ok: bool) -> bool {
    let ok = |c: u8, first: bool| {
        (if first {
            c.is_ascii_alphabetic()
        } else {
            c.is_ascii_alphanumeric()
        }) || c == b'_'
            || (dot_ok && c == b'.')
    };
    match s.split_first() {
        Some((&c, rest)) => {
            s.len() <= KSYM_NAME_LEN && ok(c, true) && rest.iter().all(|&c| ok(c, false))
        }
        None => false,
    }
}

// ---------------------------------------------------------------------------------------------
// Type records
// ---------------------------------------------------------------------------------------------

/// A type record with bounds-checked field access (missing words read as 0). Id 0 is `void`.
#[derive(Clone, Copy)]
struct T<'a> {
    id: u32,
    w: &'a [u32],
}

#[derive(Clone, Copy)]
struct Member {
    name_off: u32,
    type_id: u32,
    offset: u32,
}

impl<'a> T<'a> {
    fn word(&self, i: usize) -> u32 {
        self.w.get(i).copied().unwrap_or(0)
    }
    fn name_off(&self) -> u32 {
        self.word(0)
    }
    fn info(&self) -> u32 {
        self.word(1)
    }
    /// The kind; `None` for void and for unknown kind numbers.
    fn kind(&self) -> Option<Kind> {
        if self.id == 0 {
            None
        } else {
            Kind::from_u32(kinds::info_kind(self.info()))
        }
    }
    fn is(&self, k: Kind) -> bool {
        self.kind() == Some(k)
    }
    fn vlen(&self) -> u32 {
        kinds::info_vlen(self.info())
    }
    fn kflag(&self) -> bool {
        kinds::info_kflag(self.info())
    }
    /// `size` or `type`.
    fn st(&self) -> u32 {
        self.word(2)
    }
    fn is_void(&self) -> bool {
        self.id == 0
    }
    fn is_modifier(&self) -> bool {
        matches!(
            self.kind(),
            Some(Kind::Typedef | Kind::Volatile | Kind::Const | Kind::Restrict | Kind::TypeTag)
        )
    }
    fn is_struct(&self) -> bool {
        matches!(self.kind(), Some(Kind::Struct | Kind::Union))
    }
    /// `btf_type_nosize`.
    fn nosize(&self) -> bool {
        self.is_void() || matches!(self.kind(), Some(Kind::Fwd | Kind::Func | Kind::FuncProto))
    }
    /// `btf_type_is_resolve_source_only`.
    fn source_only(&self) -> bool {
        matches!(self.kind(), Some(Kind::Var | Kind::DeclTag | Kind::Datasec))
    }
    /// `btf_type_needs_resolve`.
    fn needs_resolve(&self) -> bool {
        self.is_modifier()
            || matches!(
                self.kind(),
                Some(
                    Kind::Ptr
                        | Kind::Struct
                        | Kind::Union
                        | Kind::Array
                        | Kind::Var
                        | Kind::Func
                        | Kind::DeclTag
                        | Kind::Datasec
                )
            )
    }
    /// `btf_type_has_size`.
    fn has_size(&self) -> bool {
        matches!(
            self.kind(),
            Some(
                Kind::Int
                    | Kind::Struct
                    | Kind::Union
                    | Kind::Enum
                    | Kind::Datasec
                    | Kind::Float
                    | Kind::Enum64
            )
        )
    }
    fn int_bits(&self) -> u32 {
        self.word(3) & 0xff
    }
    fn int_offset(&self) -> u32 {
        (self.word(3) >> 16) & 0xff
    }
    /// `btf_type_int_is_regular`: no bit offset, whole bytes, 1/2/4/8/16 bytes.
    fn int_is_regular(&self) -> bool {
        let bits = self.int_bits();
        bits.is_multiple_of(8) && self.int_offset() == 0 && matches!(bits / 8, 1 | 2 | 4 | 8 | 16)
    }
    /// Entry `i` of a vlen section with `per` words per entry (after `extra` kind words).
    fn entry(&self, extra: usize, per: usize, i: u32, field: usize) -> u32 {
        self.word(3 + extra + per * i as usize + field)
    }
    fn member(&self, i: u32) -> Member {
        Member {
            name_off: self.entry(0, 3, i, 0),
            type_id: self.entry(0, 3, i, 1),
            offset: self.entry(0, 3, i, 2),
        }
    }
}

fn roundup_bytes(bits: u32) -> u32 {
    (bits >> 3) + u32::from(bits & 7 != 0)
}

/// Why a resolve step failed.
enum Fail {
    /// A problem to report, at the given type.
    Report(u32, &'static str, String),
    /// `-EEXIST`: the given id is already on the resolve stack.
    Loop(u32),
    /// `-E2BIG`: the stack is full.
    Depth,
    /// Depends on a type whose problem was already reported.
    Silent,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Visit {
    NotVisited,
    Visited,
    Resolved,
    Failed,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Tbd,
    Ptr,
    StructOrArray,
}

#[derive(Clone, Copy)]
struct Vertex {
    id: u32,
    next_member: u32,
}

struct Verifier<'a> {
    btf: &'a Btf,
    start_id: u32,
    type_cnt: u32,
    ptr_size: u32,
    /// Own types that failed their meta check: never resolved, never looked into.
    meta_bad: Vec<bool>,
    visit: Vec<Visit>,
    res_id: Vec<u32>,
    res_size: Vec<u32>,
    stack: Vec<Vertex>,
    mode: Mode,
}

/// Meta checks, type-tag chains and (unless the type section is cut short) the resolve pass.
fn check_types(btf: &Btf, sink: &mut Sink, truncated: bool) {
    let n = btf.own_len();
    let mut v = Verifier {
        btf,
        start_id: btf.start_id(),
        type_cnt: btf.type_cnt(),
        ptr_size: 8,
        meta_bad: vec![false; n],
        visit: vec![Visit::NotVisited; n],
        res_id: vec![0; n],
        res_size: vec![0; n],
        stack: Vec::with_capacity(MAX_RESOLVE_DEPTH),
        mode: Mode::Tbd,
    };
    if v.type_cnt > kinds::MAX_TYPE_ID {
        sink.push(
            Some(kinds::MAX_TYPE_ID),
            "M2-too-many-types",
            format!(
                "exceeded the maximum number of types (ids must stay below {:#x})",
                kinds::MAX_TYPE_ID
            ),
        );
    }
    v.ptr_size = v.guess_ptr_size();
    for i in 0..n {
        if sink.full {
            return;
        }
        let id = v.start_id + i as u32;
        let Some(t) = v.ty(id) else { continue };
        if let Some((rule, msg)) = v.check_meta(t) {
            v.meta_bad[i] = true;
            v.visit[i] = Visit::Failed;
            sink.push(Some(id), rule, msg);
        }
    }
    if truncated {
        return;
    }
    v.check_type_tags(sink);
    v.check_all_types(sink);
}

impl<'a> Verifier<'a> {
    fn ty(&self, id: u32) -> Option<T<'a>> {
        if id == 0 {
            return Some(T { id: 0, w: &[] });
        }
        self.btf.type_by_id(id).map(|t| T { id, w: t.words })
    }

    fn own_idx(&self, id: u32) -> Option<usize> {
        (id >= self.start_id && id < self.type_cnt).then(|| (id - self.start_id) as usize)
    }

    /// The type, or `Silent` when it is an own type that already failed its meta check.
    fn get(&self, id: u32) -> Result<Option<T<'a>>, Fail> {
        match self.own_idx(id) {
            Some(i) if self.meta_bad[i] => Err(Fail::Silent),
            _ => Ok(self.ty(id)),
        }
    }

    fn name_bytes(&self, off: u32) -> Option<&'a [u8]> {
        if off > kinds::MAX_NAME_OFFSET {
            return None;
        }
        self.btf.str_at(off)
    }

    fn off_ok(&self, off: u32) -> bool {
        self.name_bytes(off).is_some()
    }

    fn ident_ok(&self, off: u32, dot_ok: bool) -> bool {
        self.name_bytes(off).is_some_and(|s| name_valid(s, dot_ok))
    }

    fn quoted(&self, off: u32) -> String {
        match self.name_bytes(off) {
            None => format!("<bad name offset {off:#x}>"),
            Some([]) => "(anon)".into(),
            Some(s) => {
                let s = &s[..s.len().min(80)];
                format!("'{}'", String::from_utf8_lossy(s))
            }
        }
    }

    /// "STRUCT 'foo'", "PTR", "void": a type for messages.
    fn desc(&self, t: T<'_>) -> String {
        if t.is_void() {
            return "void".into();
        }
        let kind = match t.kind() {
            Some(k) => k.name().to_string(),
            None => format!("kind {}", kinds::info_kind(t.info())),
        };
        if t.name_off() == 0 {
            kind
        } else {
            format!("{kind} {}", self.quoted(t.name_off()))
        }
    }

    fn desc_id(&self, id: u32) -> String {
        match self.ty(id) {
            Some(t) => format!("[{id}] {}", self.desc(t)),
            None => format!("[{id}] <nonexistent>"),
        }
    }

    fn member_desc(&self, m: Member, i: u32) -> String {
        format!("member #{i} {}", self.quoted(m.name_off))
    }

    /// libbpf's `determine_ptr_size`: the size of `long`, else 8.
    fn guess_ptr_size(&self) -> u32 {
        const LONGS: [&[u8]; 5] = [
            b"long int",
            b"long unsigned int",
            b"long",
            b"unsigned long",
            b"unsigned long int",
        ];
        for id in 1..self.type_cnt {
            let Some(t) = self.ty(id) else { break };
            if t.is(Kind::Int)
                && matches!(t.st(), 4 | 8)
                && self
                    .name_bytes(t.name_off())
                    .is_some_and(|n| LONGS.contains(&n))
            {
                return t.st();
            }
        }
        8
    }

    // -----------------------------------------------------------------------------------------
    // Meta phase (btf_check_meta and the kinds' check_meta)
    // -----------------------------------------------------------------------------------------

    fn check_meta(&self, t: T<'_>) -> Option<(&'static str, String)> {
        let w = t.w;
        if w.len() < 3 {
            return Some((
                "M2-truncated",
                format!(
                    "only {} bytes left in the type section, a type needs at least 12",
                    w.len() * 4
                ),
            ));
        }
        let info = t.info();
        if info & !kinds::INFO_MASK != 0 {
            return Some((
                "M1-info-bits",
                format!(
                    "info {info:#010x} has bits outside {:#010x} set",
                    kinds::INFO_MASK
                ),
            ));
        }
        let Some(kind) = t.kind() else {
            return Some((
                "M1-kind",
                format!("invalid kind {}", kinds::info_kind(info)),
            ));
        };
        if !self.off_ok(t.name_off()) {
            return Some((
                "M3-name-offset",
                format!("{kind}: invalid name offset {:#x}", t.name_off()),
            ));
        }
        let meta_left = w.len() - 3;
        let needed = kind.record_words(t.vlen()) - 3;
        if meta_left < needed {
            return Some((
                "M2-truncated",
                format!(
                    "{kind} with vlen {} needs {} more bytes, only {} left in the type section",
                    t.vlen(),
                    needed * 4,
                    meta_left * 4
                ),
            ));
        }
        if meta_left > needed {
            return Some((
                "M2-truncated",
                format!(
                    "{kind} record has {} bytes more than its kind and vlen account for",
                    (meta_left - needed) * 4
                ),
            ));
        }
        let d = || self.desc(t);
        let err = |rule: &'static str, msg: String| Some((rule, format!("{}: {msg}", d())));
        let vlen0 =
            || (t.vlen() != 0).then(|| ("M5-vlen", format!("{}: vlen {} != 0", d(), t.vlen())));
        let kflag0 = || {
            t.kflag()
                .then(|| ("M6-kflag", format!("{}: kind_flag must be 0", d())))
        };
        let id_ok = |id: u32| id <= kinds::MAX_TYPE_ID;
        match kind {
            Kind::Int => {
                if let Some(p) = vlen0().or_else(kflag0) {
                    return Some(p);
                }
                let data = t.word(3);
                if data & !INT_MASK != 0 {
                    return err("M8-int", format!("invalid int data {data:#010x}"));
                }
                let nr_bits = t.int_bits() + t.int_offset();
                if nr_bits > 128 {
                    return err("M8-int", format!("bits + offset = {nr_bits} exceeds 128"));
                }
                if roundup_bytes(nr_bits) > t.st() {
                    return err(
                        "M8-int",
                        format!(
                            "bits + offset = {nr_bits} exceed the size of {} bytes",
                            t.st()
                        ),
                    );
                }
                let enc = data >> 24;
                if !matches!(enc, 0 | 1 | 2 | 4) {
                    return err(
                        "M8-int",
                        format!("unsupported encoding {enc:#x} (0, SIGNED, CHAR or BOOL)"),
                    );
                }
            }
            Kind::Ptr
            | Kind::Typedef
            | Kind::Volatile
            | Kind::Const
            | Kind::Restrict
            | Kind::TypeTag => {
                if let Some(p) = vlen0().or_else(kflag0) {
                    return Some(p);
                }
                if !id_ok(t.st()) {
                    return err("M7-type-id", format!("invalid type id {:#x}", t.st()));
                }
                let bad_name = match kind {
                    Kind::Typedef => !self.ident_ok(t.name_off(), false),
                    Kind::TypeTag => self.name_bytes(t.name_off()).is_none_or(|s| s.is_empty()),
                    _ => t.name_off() != 0,
                };
                if bad_name {
                    let want = match kind {
                        Kind::Typedef => "a C identifier",
                        Kind::TypeTag => "a non-empty tag value",
                        _ => "no name",
                    };
                    return err("M4-name", format!("invalid name: must have {want}"));
                }
            }
            Kind::Array => {
                if t.name_off() != 0 {
                    return err("M4-name", "invalid name: an ARRAY has no name".into());
                }
                if let Some(p) = vlen0().or_else(kflag0) {
                    return Some(p);
                }
                if t.st() != 0 {
                    return err(
                        "M9-array-size",
                        format!("size field is {}, must be 0", t.st()),
                    );
                }
                let (elem, index) = (t.word(3), t.word(4));
                if elem == 0 || !id_ok(elem) {
                    return err("M7-type-id", format!("invalid element type id {elem}"));
                }
                if index == 0 || !id_ok(index) {
                    return err("M7-type-id", format!("invalid index type id {index}"));
                }
            }
            Kind::Struct | Kind::Union => {
                if t.name_off() != 0 && !self.ident_ok(t.name_off(), false) {
                    return err(
                        "M4-name",
                        "invalid name: must be empty or a C identifier".into(),
                    );
                }
                let is_union = kind == Kind::Union;
                let mut last = 0u32;
                for i in 0..t.vlen() {
                    let m = t.member(i);
                    if !self.off_ok(m.name_off) {
                        return err(
                            "M3-name-offset",
                            format!("member #{i}: invalid name offset {:#x}", m.name_off),
                        );
                    }
                    let md = || self.member_desc(m, i);
                    if m.name_off != 0 && !self.ident_ok(m.name_off, false) {
                        return err(
                            "M4-name",
                            format!("{}: invalid name: must be empty or a C identifier", md()),
                        );
                    }
                    if m.type_id == 0 || !id_ok(m.type_id) {
                        return err(
                            "M7-type-id",
                            format!("{}: invalid type id {}", md(), m.type_id),
                        );
                    }
                    let off = if t.kflag() {
                        m.offset & 0x00ff_ffff
                    } else {
                        m.offset
                    };
                    if is_union && off != 0 {
                        return err(
                            "M10-member-offset",
                            format!("{}: union member at bit offset {off}, must be 0", md()),
                        );
                    }
                    if last > off {
                        return err(
                            "M10-member-offset",
                            format!(
                                "{}: bit offset {off} is below the previous member's {last}",
                                md()
                            ),
                        );
                    }
                    if roundup_bytes(off) > t.st() {
                        return err(
                            "M10-member-offset",
                            format!(
                                "{}: bit offset {off} is past the size of {} bytes",
                                md(),
                                t.st()
                            ),
                        );
                    }
                    last = off;
                }
            }
            Kind::Enum | Kind::Enum64 => {
                if t.st() > 8 || !t.st().is_power_of_two() {
                    return err(
                        "M11-enum-size",
                        format!("size {} (must be 1, 2, 4 or 8)", t.st()),
                    );
                }
                if t.name_off() != 0 && !self.ident_ok(t.name_off(), false) {
                    return err(
                        "M4-name",
                        "invalid name: must be empty or a C identifier".into(),
                    );
                }
                let per = if kind == Kind::Enum { 2 } else { 3 };
                for i in 0..t.vlen() {
                    let off = t.entry(0, per, i, 0);
                    if !self.off_ok(off) {
                        return err(
                            "M3-name-offset",
                            format!("enumerator #{i}: invalid name offset {off:#x}"),
                        );
                    }
                    if off == 0 || !self.ident_ok(off, false) {
                        return err(
                            "M4-name",
                            format!(
                                "enumerator #{i} {}: invalid name: must be a C identifier",
                                self.quoted(off)
                            ),
                        );
                    }
                }
            }
            Kind::Fwd => {
                if let Some(p) = vlen0() {
                    return Some(p);
                }
                if t.st() != 0 {
                    return err("M12-fwd", format!("type field is {}, must be 0", t.st()));
                }
                if !self.ident_ok(t.name_off(), false) {
                    return err("M4-name", "invalid name: must be a C identifier".into());
                }
            }
            Kind::Func => {
                if !self.ident_ok(t.name_off(), false) {
                    return err("M4-name", "invalid name: must be a C identifier".into());
                }
                if t.vlen() > kinds::FUNC_GLOBAL {
                    return err(
                        "M5-func-linkage",
                        format!(
                            "linkage (vlen) {} is not supported (0 static, 1 global)",
                            t.vlen()
                        ),
                    );
                }
                if let Some(p) = kflag0() {
                    return Some(p);
                }
            }
            Kind::FuncProto => {
                if t.name_off() != 0 {
                    return err("M4-name", "invalid name: a FUNC_PROTO has no name".into());
                }
                if let Some(p) = kflag0() {
                    return Some(p);
                }
            }
            Kind::Var => {
                if let Some(p) = vlen0().or_else(kflag0) {
                    return Some(p);
                }
                if !self.ident_ok(t.name_off(), true) {
                    return err(
                        "M4-name",
                        "invalid name: must be a C identifier (dots allowed)".into(),
                    );
                }
                if t.st() == 0 || !id_ok(t.st()) {
                    return err("M7-type-id", format!("invalid type id {}", t.st()));
                }
                let linkage = t.word(3);
                if linkage != kinds::VAR_STATIC && linkage != kinds::VAR_GLOBAL_ALLOCATED {
                    return err(
                        "M15-var-linkage",
                        format!(
                            "linkage {linkage} is not supported (0 static, 1 global allocated)"
                        ),
                    );
                }
            }
            Kind::Datasec => {
                let size = t.st();
                if size == 0 {
                    return err("M14-datasec", "size is 0".into());
                }
                if let Some(p) = kflag0() {
                    return Some(p);
                }
                if !self.ident_ok(t.name_off(), true) {
                    return err(
                        "M4-name",
                        "invalid name: must be an identifier (dots allowed)".into(),
                    );
                }
                let (mut last_end, mut sum) = (0u64, 0u64);
                for i in 0..t.vlen() {
                    let (vt, off, sz) = (
                        t.entry(0, 3, i, 0),
                        t.entry(0, 3, i, 1),
                        t.entry(0, 3, i, 2),
                    );
                    let e = || format!("entry #{i} (type {vt}, offset {off}, size {sz})");
                    if vt == 0 || !id_ok(vt) {
                        return err("M7-type-id", format!("{}: invalid type id", e()));
                    }
                    if (off as u64) < last_end || off >= size {
                        return err(
                            "M14-datasec",
                            format!(
                                "{}: invalid offset (entries must be sorted, not overlap \
                                 and lie within the size {size})",
                                e()
                            ),
                        );
                    }
                    if sz == 0 || sz > size {
                        return err("M14-datasec", format!("{}: invalid size", e()));
                    }
                    last_end = off as u64 + sz as u64;
                    if last_end > size as u64 {
                        return err("M14-datasec", format!("{}: ends past the size {size}", e()));
                    }
                    sum += sz as u64;
                }
                if (size as u64) < sum {
                    return err(
                        "M14-datasec",
                        format!("entries total {sum} bytes, more than the size {size}"),
                    );
                }
            }
            Kind::Float => {
                if let Some(p) = vlen0().or_else(kflag0) {
                    return Some(p);
                }
                if !matches!(t.st(), 2 | 4 | 8 | 12 | 16) {
                    return err(
                        "M13-float-size",
                        format!("size {} (must be 2, 4, 8, 12 or 16)", t.st()),
                    );
                }
            }
            Kind::DeclTag => {
                if self.name_bytes(t.name_off()).is_none_or(|s| s.is_empty()) {
                    return err("M4-name", "invalid value: must be non-empty".into());
                }
                if let Some(p) = vlen0().or_else(kflag0) {
                    return Some(p);
                }
                let comp = t.word(3) as i32;
                if comp < -1 {
                    return err(
                        "M16-decl-tag-component",
                        format!("component_idx {comp} (must be >= -1)"),
                    );
                }
            }
        }
        None
    }

    // -----------------------------------------------------------------------------------------
    // Type-tag chains (btf_check_type_tags)
    // -----------------------------------------------------------------------------------------

    /// Along every modifier chain, TYPE_TAGs must come first, and a chain has at most 32 links.
    /// A chain into a nonexistent id stops silently (the resolve pass reports it as R1).
    fn check_type_tags(&self, sink: &mut Sink) {
        // 0 unchecked, 1 good, 2 bad (own types, by index).
        let mut state = vec![0u8; self.meta_bad.len()];
        for i in 0..self.meta_bad.len() {
            if sink.full {
                return;
            }
            let id = self.start_id + i as u32;
            let Some(t) = self.ty(id) else { continue };
            if self.meta_bad[i] || !t.is_modifier() || state[i] == 2 {
                continue;
            }
            let mut in_tags = t.is(Kind::TypeTag);
            let mut limit = 32;
            let mut cur = id;
            let mut path = Vec::new();
            let mut good = true;
            while let Some(ct) = self.ty(cur) {
                if !ct.is_modifier() {
                    break;
                }
                path.push(cur);
                if limit == 0 {
                    sink.push(
                        Some(id),
                        "M17-type-tag-chain",
                        format!("{}: modifier chain longer than 32 or cyclic", self.desc(t)),
                    );
                    // Every link of this chain leads into the same chain: report it once.
                    for &p in &path {
                        if let Some(c) = self.own_idx(p) {
                            state[c] = 2;
                        }
                    }
                    good = false;
                    break;
                }
                limit -= 1;
                if ct.is(Kind::TypeTag) {
                    if !in_tags {
                        let chain: Vec<String> = path.iter().map(|&p| self.desc_id(p)).collect();
                        sink.push(
                            Some(id),
                            "M17-type-tag-order",
                            format!(
                                "type tags must precede other modifiers: {}",
                                chain.join(" -> ")
                            ),
                        );
                        good = false;
                        break;
                    }
                } else {
                    in_tags = false;
                }
                if cur != id && cur < id {
                    // Already checked (own, lower id) or base.
                    if self.own_idx(cur).is_some_and(|c| state[c] == 2) {
                        good = false;
                    }
                    break;
                }
                cur = ct.st();
            }
            state[i] = if good { 1 } else { 2 };
        }
    }

    // -----------------------------------------------------------------------------------------
    // Resolve phase (btf_check_all_types)
    // -----------------------------------------------------------------------------------------

    fn check_all_types(&mut self, sink: &mut Sink) {
        for i in 0..self.meta_bad.len() {
            if sink.full {
                return;
            }
            if self.meta_bad[i] {
                continue;
            }
            let id = self.start_id + i as u32;
            let Some(t) = self.ty(id) else { continue };
            if t.needs_resolve() && self.visit[i] == Visit::NotVisited {
                self.resolve(id, sink);
            }
            if t.is(Kind::FuncProto) {
                self.func_proto_check(t, sink);
            }
        }
    }

    fn resolved(&self, id: u32) -> bool {
        if id == 0 {
            return false;
        }
        match self.own_idx(id) {
            Some(i) => self.visit[i] == Visit::Resolved,
            None => id < self.start_id,
        }
    }

    /// Follows modifiers (at most `MAX_RESOLVE_DEPTH` links).
    fn skip_modifiers(&self, mut id: u32) -> u32 {
        for _ in 0..MAX_RESOLVE_DEPTH {
            match self.ty(id) {
                Some(t) if t.is_modifier() => id = t.st(),
                _ => break,
            }
        }
        id
    }

    fn resolved_id(&self, id: u32) -> u32 {
        if let Some(i) = self.own_idx(id) {
            return self.res_id[i];
        }
        if id == 0 || id >= self.start_id {
            return 0;
        }
        // Base types count as resolved: compute what their resolve would have stored.
        let Some(t) = self.ty(id) else { return 0 };
        match t.kind() {
            _ if t.is_modifier() => self.skip_modifiers(t.st()),
            Some(Kind::Var | Kind::Ptr) => self.skip_modifiers(t.st()),
            Some(Kind::Array) => self.skip_modifiers(t.word(3)),
            Some(Kind::Func | Kind::DeclTag) => t.st(),
            _ => id,
        }
    }

    fn resolved_size(&self, id: u32) -> u32 {
        if let Some(i) = self.own_idx(id) {
            return self.res_size[i];
        }
        if id == 0 || id >= self.start_id {
            return 0;
        }
        // __btf_resolve_size for a base array.
        let (mut cur, mut nelems) = (id, 1u32);
        for _ in 0..MAX_RESOLVE_DEPTH {
            let Some(t) = self.ty(cur) else { return 0 };
            let size = match t.kind() {
                Some(
                    Kind::Int
                    | Kind::Struct
                    | Kind::Union
                    | Kind::Enum
                    | Kind::Float
                    | Kind::Enum64,
                ) => t.st(),
                Some(Kind::Ptr) => self.ptr_size,
                _ if t.is_modifier() => {
                    cur = t.st();
                    continue;
                }
                Some(Kind::Array) => {
                    let Some(n) = nelems.checked_mul(t.word(5)) else {
                        return 0;
                    };
                    nelems = n;
                    cur = t.word(3);
                    continue;
                }
                _ => return 0,
            };
            return size.checked_mul(nelems).unwrap_or(0);
        }
        0
    }

    /// `btf_type_id_size`: the sized type behind `id` and its size, following a resolved
    /// modifier or VAR once.
    fn type_id_size(&self, id: u32) -> Option<(u32, u32)> {
        let sized = |t: T<'_>, id: u32| -> Option<u32> {
            if t.nosize() {
                None
            } else if t.has_size() {
                Some(t.st())
            } else if t.is(Kind::Array) {
                Some(self.resolved_size(id))
            } else if t.is(Kind::Ptr) {
                Some(self.ptr_size)
            } else {
                None
            }
        };
        let t = self.ty(id)?;
        if t.nosize() {
            return None;
        }
        if let Some(size) = sized(t, id) {
            return Some((id, size));
        }
        if !t.is_modifier() && !t.is(Kind::Var) {
            return None;
        }
        let rid = self.resolved_id(id);
        let rt = self.ty(rid)?;
        sized(rt, rid).map(|size| (rid, size))
    }

    fn is_sink(&self, t: T<'_>) -> bool {
        match self.mode {
            Mode::Tbd => !t.needs_resolve(),
            Mode::Ptr => !t.is_modifier() && !t.is(Kind::Ptr),
            Mode::StructOrArray => !t.is_modifier() && !t.is(Kind::Array) && !t.is_struct(),
        }
    }

    fn push(&mut self, id: u32) -> Result<(), Fail> {
        if self.stack.len() >= MAX_RESOLVE_DEPTH {
            return Err(Fail::Depth);
        }
        let Some(i) = self.own_idx(id) else {
            return Err(Fail::Loop(id));
        };
        match self.visit[i] {
            Visit::NotVisited => {}
            Visit::Failed => return Err(Fail::Silent),
            Visit::Visited | Visit::Resolved => return Err(Fail::Loop(id)),
        }
        let Some(t) = self.ty(id) else {
            return Err(Fail::Silent);
        };
        self.visit[i] = Visit::Visited;
        self.stack.push(Vertex { id, next_member: 0 });
        if self.mode == Mode::Tbd {
            if t.is(Kind::Ptr) {
                self.mode = Mode::Ptr;
            } else if t.is_struct() || t.is(Kind::Array) {
                self.mode = Mode::StructOrArray;
            }
        }
        Ok(())
    }

    fn pop_resolved(&mut self, res_id: u32, res_size: u32) {
        if let Some(v) = self.stack.pop() {
            if let Some(i) = self.own_idx(v.id) {
                self.res_id[i] = res_id;
                self.res_size[i] = res_size;
                self.visit[i] = Visit::Resolved;
            }
        }
    }

    fn set_next_member(&mut self, next: u32) {
        if let Some(v) = self.stack.last_mut() {
            v.next_member = next;
        }
    }

    /// `btf_resolve`: resolves `root` and everything it needs, reporting the first problem.
    /// Returns whether it succeeded.
    fn resolve(&mut self, root: u32, sink: &mut Sink) -> bool {
        match self.own_idx(root).map(|i| self.visit[i]) {
            Some(Visit::NotVisited) => {}
            Some(Visit::Resolved) => return true,
            _ => return false,
        }
        self.mode = Mode::Tbd;
        self.stack.clear();
        let mut result = self.push(root);
        // Every step pushes a not yet visited type, pops one, or fails: bounded by 2 per type.
        let mut budget = 2 * self.meta_bad.len() + 4;
        while result.is_ok() {
            let Some(&v) = self.stack.last() else { break };
            if budget == 0 {
                result = Err(Fail::Report(
                    v.id,
                    "R0-internal",
                    "resolver made no progress (internal error)".into(),
                ));
                break;
            }
            budget -= 1;
            result = self.step(v);
        }
        let Err(fail) = result else { return true };
        let chain = || {
            self.stack
                .iter()
                .map(|v| self.desc_id(v.id))
                .collect::<Vec<_>>()
                .join(" -> ")
        };
        match fail {
            Fail::Report(id, rule, msg) => sink.push(Some(id), rule, msg),
            Fail::Loop(id) => sink.push(
                Some(root),
                "R3-loop",
                format!(
                    "loop detected: {} -> {} (only a PTR may close a cycle)",
                    chain(),
                    self.desc_id(id)
                ),
            ),
            Fail::Depth => sink.push(
                Some(root),
                "R3-depth",
                format!(
                    "exceeded max resolving depth {MAX_RESOLVE_DEPTH}: {}",
                    chain()
                ),
            ),
            Fail::Silent => {}
        }
        for k in 0..self.stack.len() {
            if let Some(i) = self.own_idx(self.stack[k].id) {
                self.visit[i] = Visit::Failed;
            }
        }
        self.stack.clear();
        false
    }

    fn step(&mut self, v: Vertex) -> Result<(), Fail> {
        let Some(t) = self.ty(v.id) else {
            return Err(Fail::Silent);
        };
        match t.kind() {
            _ if t.is_modifier() => self.ref_resolve(v, t),
            Some(Kind::Ptr | Kind::Var) => self.ref_resolve(v, t),
            Some(Kind::Struct | Kind::Union) => self.struct_resolve(v, t),
            Some(Kind::Array) => self.array_resolve(v, t),
            Some(Kind::Func) => self.func_resolve(t),
            Some(Kind::DeclTag) => self.decl_tag_resolve(v, t),
            Some(Kind::Datasec) => self.datasec_resolve(v, t),
            _ => Err(Fail::Report(
                v.id,
                "R0-internal",
                format!("{} cannot be resolved (internal error)", self.desc(t)),
            )),
        }
    }

    fn nonexistent(&self, at: u32, what: &str, id: u32) -> Fail {
        Fail::Report(
            at,
            "R1-type-id",
            format!(
                "{}: {what} refers to type {id}, which does not exist (last id is {})",
                self.ty(at).map_or_else(String::new, |t| self.desc(t)),
                self.type_cnt.saturating_sub(1)
            ),
        )
    }

    /// `btf_modifier_resolve`, `btf_ptr_resolve` and `btf_var_resolve`.
    fn ref_resolve(&mut self, v: Vertex, t: T<'a>) -> Result<(), Fail> {
        let is_ptr = t.is(Kind::Ptr);
        let is_var = t.is(Kind::Var);
        let mut next_id = t.st();
        let Some(next) = self.get(next_id)? else {
            return Err(self.nonexistent(v.id, "its type", next_id));
        };
        if next.source_only() {
            return Err(Fail::Report(
                v.id,
                "R2-ref-target",
                format!(
                    "{} refers to {}, which cannot be referenced",
                    self.desc(t),
                    self.desc_id(next_id)
                ),
            ));
        }
        if !self.is_sink(next) && !self.resolved(next_id) {
            return self.push(next_id);
        }
        if (is_ptr || is_var) && next.is_modifier() {
            // Continue from the last-resolved PTR so it cannot point back at us.
            let rid = self.resolved_id(next_id);
            if let Some(rt) = self.ty(rid) {
                if rt.is(Kind::Ptr) && !self.is_sink(rt) && !self.resolved(rid) {
                    return self.push(rid);
                }
            }
        }
        match self.type_id_size(next_id) {
            Some((rid, _)) => next_id = rid,
            None if is_var => {
                return Err(Fail::Report(
                    v.id,
                    "R10-var-type",
                    format!(
                        "{}: its type {} has no size",
                        self.desc(t),
                        self.desc_id(next_id)
                    ),
                ));
            }
            None => {
                let mut nt = Some(next);
                if self.resolved(next_id) {
                    next_id = self.resolved_id(next_id);
                    nt = self.ty(next_id);
                }
                let ok =
                    nt.is_some_and(|n| n.is_void() || n.is(Kind::Fwd) || n.is(Kind::FuncProto));
                if !ok {
                    return Err(Fail::Report(
                        v.id,
                        "R2-ref-target",
                        format!(
                            "{} refers to {}, which has no size and is not void, FWD or FUNC_PROTO",
                            self.desc(t),
                            self.desc_id(next_id)
                        ),
                    ));
                }
            }
        }
        self.pop_resolved(next_id, 0);
        Ok(())
    }

    /// `btf_array_resolve`.
    fn array_resolve(&mut self, v: Vertex, t: T<'a>) -> Result<(), Fail> {
        let (elem_id, index_id, nelems) = (t.word(3), t.word(4), t.word(5));
        let Some(index) = self.get(index_id)? else {
            return Err(self.nonexistent(v.id, "its index type", index_id));
        };
        let bad_index = |s: &Self, why: &str| {
            Fail::Report(
                v.id,
                "R4-array-index",
                format!("ARRAY: index type {} {why}", s.desc_id(index_id)),
            )
        };
        if index.nosize() || index.source_only() {
            return Err(bad_index(self, "is not an integer"));
        }
        if !self.is_sink(index) && !self.resolved(index_id) {
            return self.push(index_id);
        }
        match self.type_id_size(index_id).and_then(|(id, _)| self.ty(id)) {
            Some(it) if it.is(Kind::Int) && it.int_is_regular() => {}
            _ => return Err(bad_index(self, "is not a regular integer")),
        }
        let Some(elem) = self.get(elem_id)? else {
            return Err(self.nonexistent(v.id, "its element type", elem_id));
        };
        let bad_elem = |s: &Self, why: &str| {
            Fail::Report(
                v.id,
                "R4-array-elem",
                format!("ARRAY: element type {} {why}", s.desc_id(elem_id)),
            )
        };
        if elem.nosize() || elem.source_only() {
            return Err(bad_elem(self, "has no size"));
        }
        if !self.is_sink(elem) && !self.resolved(elem_id) {
            return self.push(elem_id);
        }
        let Some((rid, elem_size)) = self.type_id_size(elem_id) else {
            return Err(bad_elem(self, "has no size"));
        };
        if self
            .ty(rid)
            .is_some_and(|e| e.is(Kind::Int) && !e.int_is_regular())
        {
            return Err(bad_elem(
                self,
                "is an int that is not regular (array of bitfields)",
            ));
        }
        if nelems != 0 && elem_size > u32::MAX / nelems {
            return Err(Fail::Report(
                v.id,
                "R4-array-overflow",
                format!("ARRAY: {nelems} elements of {elem_size} bytes overflow 32 bits"),
            ));
        }
        self.pop_resolved(rid, elem_size.wrapping_mul(nelems));
        Ok(())
    }

    /// `btf_struct_resolve`.
    fn struct_resolve(&mut self, v: Vertex, t: T<'a>) -> Result<(), Fail> {
        let kflag = t.kflag();
        if v.next_member > 0 {
            let i = v.next_member - 1;
            let m = t.member(i);
            let Some(mt) = self.ty(m.type_id).filter(|_| self.resolved(m.type_id)) else {
                return Err(Fail::Silent);
            };
            self.check_member(v.id, t, m, i, mt, kflag)?;
        }
        for i in v.next_member..t.vlen() {
            let m = t.member(i);
            let Some(mt) = self.get(m.type_id)? else {
                return Err(self.nonexistent(v.id, &self.member_desc(m, i), m.type_id));
            };
            if mt.nosize() || mt.source_only() {
                return Err(Fail::Report(
                    v.id,
                    "R5-member",
                    format!(
                        "{} {}: type {} cannot be a member (no size)",
                        self.desc(t),
                        self.member_desc(m, i),
                        self.desc_id(m.type_id)
                    ),
                ));
            }
            if !self.is_sink(mt) && !self.resolved(m.type_id) {
                self.set_next_member(i + 1);
                return self.push(m.type_id);
            }
            self.check_member(v.id, t, m, i, mt, kflag)?;
        }
        self.pop_resolved(0, 0);
        Ok(())
    }

    /// The kinds' `check_member` / `check_kflag_member` callbacks.
    fn check_member(
        &self,
        sid: u32,
        st: T<'_>,
        mut m: Member,
        idx: u32,
        mut mt: T<'a>,
        kflag: bool,
    ) -> Result<(), Fail> {
        let m0 = m;
        let fail = |msg: String| {
            Fail::Report(
                sid,
                "R5-member",
                format!("{} {}: {msg}", self.desc(st), self.member_desc(m0, idx)),
            )
        };
        if mt.is_modifier() {
            let resolved = self
                .type_id_size(m.type_id)
                .and_then(|(rid, _)| self.ty(rid));
            let Some(rt) = resolved else {
                return Err(fail(format!(
                    "type {} does not resolve to a sized type",
                    self.desc_id(m.type_id)
                )));
            };
            m.type_id = rt.id;
            mt = rt;
        }
        let size = st.st();
        let kind = mt.kind();
        let (bit_off, bf_size) = if kflag {
            (m.offset & 0x00ff_ffff, m.offset >> 24)
        } else {
            (m.offset, 0)
        };
        match kind {
            Some(Kind::Int) if kflag => {
                if !mt.int_is_regular() {
                    return Err(fail("a bitfield's base type must be a regular int".into()));
                }
                let int_bits = mt.int_bits();
                let nr_bits = if bf_size == 0 {
                    if !bit_off.is_multiple_of(8) {
                        return Err(fail(format!("bit offset {bit_off} is not byte aligned")));
                    }
                    int_bits
                } else if bf_size > int_bits {
                    return Err(fail(format!(
                        "bitfield size {bf_size} exceeds the {int_bits} bits of its int"
                    )));
                } else {
                    bf_size
                };
                let copy_bits = nr_bits + bit_off % 8;
                if copy_bits > 128 {
                    return Err(fail("nr_copy_bits exceeds 128".into()));
                }
                let bytes_off = bit_off / 8;
                if size < bytes_off || size - bytes_off < roundup_bytes(copy_bits) {
                    return Err(fail(format!("member exceeds the size of {size} bytes")));
                }
            }
            Some(Kind::Int) => {
                let int_off = mt.int_offset();
                let Some(off) = m.offset.checked_add(int_off) else {
                    return Err(fail("bit offset exceeds U32_MAX".into()));
                };
                let copy_bits = mt.int_bits() + off % 8;
                if copy_bits > 128 {
                    return Err(fail("nr_copy_bits exceeds 128".into()));
                }
                let bytes_off = off / 8;
                if size < bytes_off || size - bytes_off < roundup_bytes(copy_bits) {
                    return Err(fail(format!("member exceeds the size of {size} bytes")));
                }
            }
            Some(Kind::Enum | Kind::Enum64) if kflag => {
                let nr_bits = if bf_size == 0 {
                    if !bit_off.is_multiple_of(8) {
                        return Err(fail(format!("bit offset {bit_off} is not byte aligned")));
                    }
                    32
                } else if bf_size > 32 {
                    return Err(fail(format!("bitfield size {bf_size} exceeds 32")));
                } else {
                    bf_size
                };
                if size < roundup_bytes(bit_off + nr_bits) {
                    return Err(fail(format!("member exceeds the size of {size} bytes")));
                }
            }
            Some(
                Kind::Ptr
                | Kind::Array
                | Kind::Struct
                | Kind::Union
                | Kind::Enum
                | Kind::Enum64
                | Kind::Float,
            ) => {
                // btf_generic_check_kflag_member, then the plain check_member.
                if bf_size != 0 {
                    return Err(fail(format!(
                        "bitfield size {bf_size} on a member of kind {}",
                        mt.desc_kind()
                    )));
                }
                let off = bit_off;
                if mt.is(Kind::Float) {
                    let align_bits = u64::from(self.ptr_size.min(mt.st())) * 8;
                    if align_bits != 0 && !u64::from(off).is_multiple_of(align_bits) {
                        return Err(fail(format!(
                            "FLOAT member at bit offset {off} is not aligned to {} bytes",
                            align_bits / 8
                        )));
                    }
                    if u64::from(off / 8) + u64::from(mt.st()) > u64::from(size) {
                        return Err(fail(format!("member exceeds the size of {size} bytes")));
                    }
                    return Ok(());
                }
                if !off.is_multiple_of(8) {
                    return Err(fail(format!("bit offset {off} is not byte aligned")));
                }
                let msize = match kind {
                    Some(Kind::Ptr) => self.ptr_size,
                    Some(Kind::Array) => self.type_id_size(m.type_id).map_or(0, |(_, s)| s),
                    _ => mt.st(),
                };
                if size.wrapping_sub(off / 8) < msize {
                    return Err(fail(format!("member exceeds the size of {size} bytes")));
                }
            }
            _ => {
                return Err(fail(format!(
                    "type {} cannot be a member",
                    self.desc_id(m.type_id)
                )));
            }
        }
        Ok(())
    }

    /// `btf_func_resolve` (`btf_func_check`).
    fn func_resolve(&mut self, t: T<'a>) -> Result<(), Fail> {
        let proto_id = t.st();
        let Some(proto) = self.get(proto_id)? else {
            return Err(self.nonexistent(t.id, "its prototype", proto_id));
        };
        if !proto.is(Kind::FuncProto) {
            return Err(Fail::Report(
                t.id,
                "R6-func-proto",
                format!(
                    "{}: type {} is not a FUNC_PROTO",
                    self.desc(t),
                    self.desc_id(proto_id)
                ),
            ));
        }
        for i in 0..proto.vlen() {
            let (name_off, ty) = (proto.entry(0, 2, i, 0), proto.entry(0, 2, i, 1));
            if name_off == 0 && ty != 0 {
                return Err(Fail::Report(
                    t.id,
                    "R6-func-param-name",
                    format!(
                        "{}: parameter #{} of {} has no name",
                        self.desc(t),
                        i + 1,
                        self.desc_id(proto_id)
                    ),
                ));
            }
        }
        self.pop_resolved(proto_id, 0);
        Ok(())
    }

    /// `btf_decl_tag_resolve`.
    fn decl_tag_resolve(&mut self, v: Vertex, t: T<'a>) -> Result<(), Fail> {
        let next_id = t.st();
        let Some(next) = self.get(next_id)? else {
            return Err(self.nonexistent(v.id, "its target", next_id));
        };
        let target_ok =
            next.is_struct() || matches!(next.kind(), Some(Kind::Func | Kind::Var | Kind::Typedef));
        if !target_ok {
            return Err(Fail::Report(
                v.id,
                "R9-decl-tag-target",
                format!(
                    "{}: target {} is not a STRUCT, UNION, FUNC, VAR or TYPEDEF",
                    self.desc(t),
                    self.desc_id(next_id)
                ),
            ));
        }
        if !self.is_sink(next) && !self.resolved(next_id) {
            return self.push(next_id);
        }
        let comp = t.word(3) as i32;
        if comp != -1 {
            let vlen = if next.is(Kind::Var) || next.is(Kind::Typedef) {
                None
            } else if next.is_struct() {
                Some(next.vlen())
            } else {
                Some(self.ty(next.st()).map_or(0, |p| p.vlen()))
            };
            if vlen.is_none_or(|n| comp as u32 >= n) {
                return Err(Fail::Report(
                    v.id,
                    "R9-decl-tag-component",
                    format!(
                        "{}: component_idx {comp} is out of range for {}",
                        self.desc(t),
                        self.desc_id(next_id)
                    ),
                ));
            }
        }
        self.pop_resolved(next_id, 0);
        Ok(())
    }

    /// `btf_datasec_resolve`.
    fn datasec_resolve(&mut self, v: Vertex, t: T<'a>) -> Result<(), Fail> {
        self.mode = Mode::Tbd;
        // Unlike the kernel, re-check the entry whose VAR was just resolved.
        for i in v.next_member.saturating_sub(1)..t.vlen() {
            let (var_id, size) = (t.entry(0, 3, i, 0), t.entry(0, 3, i, 2));
            let Some(var) = self.get(var_id)? else {
                return Err(self.nonexistent(v.id, &format!("entry #{i}"), var_id));
            };
            if !var.is(Kind::Var) {
                return Err(Fail::Report(
                    v.id,
                    "R8-datasec-var",
                    format!(
                        "{}: entry #{i} is {}, not a VAR",
                        self.desc(t),
                        self.desc_id(var_id)
                    ),
                ));
            }
            if !self.is_sink(var) && !self.resolved(var_id) {
                self.set_next_member(i + 1);
                return self.push(var_id);
            }
            let Some((_, type_size)) = self.type_id_size(var.st()) else {
                return Err(Fail::Report(
                    v.id,
                    "R8-datasec-var",
                    format!(
                        "{}: entry #{i} {}: its type has no size",
                        self.desc(t),
                        self.desc_id(var_id)
                    ),
                ));
            };
            if size < type_size {
                return Err(Fail::Report(
                    v.id,
                    "R8-datasec-size",
                    format!(
                        "{}: entry #{i} {} has size {size}, less than its type's {type_size}",
                        self.desc(t),
                        self.desc_id(var_id)
                    ),
                ));
            }
        }
        self.pop_resolved(0, 0);
        Ok(())
    }

    /// `btf_func_proto_check`: return and parameter types, varargs, parameter names.
    fn func_proto_check(&mut self, t: T<'a>, sink: &mut Sink) {
        let id = t.id;
        let report = |s: &Self, sink: &mut Sink, rule: &'static str, msg: String| {
            sink.push(Some(id), rule, format!("{}: {msg}", s.desc(t)));
        };
        let ret_id = t.st();
        if ret_id != 0 {
            let ret = match self.get(ret_id) {
                Err(_) => return,
                Ok(None) => {
                    let msg = format!("return type {ret_id} does not exist");
                    return report(self, sink, "R1-type-id", msg);
                }
                Ok(Some(r)) => r,
            };
            if ret.source_only() {
                let msg = format!("invalid return type {}", self.desc_id(ret_id));
                return report(self, sink, "R7-proto-return", msg);
            }
            if ret.needs_resolve() && !self.resolved(ret_id) && !self.resolve(ret_id, sink) {
                return;
            }
            if self.type_id_size(ret_id).is_none() {
                let msg = format!("return type {} has no size", self.desc_id(ret_id));
                return report(self, sink, "R7-proto-return", msg);
            }
        }
        let vlen = t.vlen();
        if vlen == 0 {
            return;
        }
        let param = |i: u32| (t.entry(0, 2, i, 0), t.entry(0, 2, i, 1));
        let mut nr = vlen;
        let (last_name, last_type) = param(vlen - 1);
        if last_type == 0 {
            if last_name != 0 {
                let msg = format!("the vararg parameter #{vlen} has a name");
                return report(self, sink, "R7-vararg", msg);
            }
            nr -= 1;
        }
        for i in 0..nr {
            let (name_off, arg_id) = param(i);
            let n = i + 1;
            let arg = match self.get(arg_id) {
                Err(_) => return,
                Ok(None) => {
                    let msg = format!("parameter #{n}: type {arg_id} does not exist");
                    return report(self, sink, "R1-type-id", msg);
                }
                Ok(Some(a)) => a,
            };
            if arg.source_only() {
                let msg = format!("parameter #{n}: invalid type {}", self.desc_id(arg_id));
                return report(self, sink, "R7-proto-param", msg);
            }
            if name_off != 0 && !self.ident_ok(name_off, false) {
                let msg = format!(
                    "parameter #{n}: invalid name {} (must be a C identifier)",
                    self.quoted(name_off)
                );
                return report(self, sink, "R7-param-name", msg);
            }
            if arg_id == 0 {
                let msg = format!(
                    "parameter #{n} of {nr} has type void: only the last parameter may be a vararg"
                );
                return report(self, sink, "R7-vararg", msg);
            }
            if arg.needs_resolve() && !self.resolved(arg_id) && !self.resolve(arg_id, sink) {
                return;
            }
            if self.type_id_size(arg_id).is_none() {
                let msg = format!("parameter #{n}: type {} has no size", self.desc_id(arg_id));
                return report(self, sink, "R7-proto-param", msg);
            }
        }
    }
}

impl T<'_> {
    fn desc_kind(&self) -> String {
        match self.kind() {
            Some(k) => k.name().into(),
            None if self.is_void() => "void".into(),
            None => format!("{}", kinds::info_kind(self.info())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers() {
        for ok in [&b"a"[..], b"_", b"task_struct", b"_9", b"Z_z0"] {
            assert!(name_valid(ok, false), "{}", String::from_utf8_lossy(ok));
            assert!(name_valid(ok, true));
        }
        for bad in [
            &b""[..],
            b"9a",
            b"a-b",
            b"a b",
            b"a.b",
            b".data",
            b"\xc3\xa9",
            b"a$",
        ] {
            assert!(!name_valid(bad, false), "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn dotted_names_for_var_and_datasec() {
        assert!(name_valid(b".data", true));
        assert!(name_valid(b".data..percpu", true));
        assert!(name_valid(b"x.y", true));
        assert!(!name_valid(b".data-x", true));
        assert!(!name_valid(b"", true));
    }

    #[test]
    fn identifier_length_limit_is_ksym_name_len() {
        let max = vec![b'a'; KSYM_NAME_LEN];
        assert!(name_valid(&max, false));
        let long = vec![b'a'; KSYM_NAME_LEN + 1];
        assert!(!name_valid(&long, false));
    }

    #[test]
    fn problem_display() {
        let p = Problem {
            type_id: Some(7),
            rule: "R3-loop",
            message: "x".into(),
        };
        assert_eq!(p.to_string(), "[7] R3-loop: x");
        let h = Problem {
            type_id: None,
            rule: "H1-magic",
            message: "y".into(),
        };
        assert_eq!(h.to_string(), "header H1-magic: y");
    }

    #[test]
    fn roundup() {
        assert_eq!(roundup_bytes(0), 0);
        assert_eq!(roundup_bytes(1), 1);
        assert_eq!(roundup_bytes(8), 1);
        assert_eq!(roundup_bytes(9), 2);
        assert_eq!(roundup_bytes(u32::MAX), 0x2000_0000);
    }
}
