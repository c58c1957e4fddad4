//! The kernel's BTF checks (`dwarf2btf verify`): would the kernels a file is meant for accept
//! this BTF?
//!
//! This module owns the port of `kernel/bpf/btf.c` validation: the header and section checks
//! of `btf_parse_hdr` / `btf_check_sec_info` / `btf_parse_str_sec` (and, from 7.1 on,
//! `btf_parse_layout_sec`), every kind's `check_meta`, `btf_check_type_tags`, and the resolve
//! pass of `BPF_BTF_LOAD` (`btf_resolve`, the per-kind `resolve` and `check_member`
//! callbacks, `btf_func_proto_check`). Each problem carries a short, stable rule name (`H*`
//! header, `M*` meta, `R*` resolve; see the checklist in the format reference, §1.7) so
//! callers and tests can match on it.
//!
//! Which kernels (a [`Target`]; `target.rs`): the header rules come in two sets. Kernels
//! before 7.1 ([`HeaderRules::Classic`], 6.1's code) know the 24-byte header: a longer one is
//! taken only when its bytes past 24 are zero, so libbpf 1.8's 32-byte header with a kind
//! layout section is rejected ("Unsupported btf_header"), and the strings must come last.
//! Linux 7.1 and later ([`HeaderRules::Layout`], read in 7.2's source; the layout series was
//! merged for 7.1) know the 32-byte header: a non-empty layout section is a third section in
//! the tiling, 4-byte aligned and a whole number of 4-byte `struct btf_layout` entries (its
//! contents are not read), bytes past 32 must be zero, and the strings need not come last.
//! [`judge`] takes a kernel release (`verify --kernel-version`), or judges a file on its own
//! header: 6.1's rules below 32 bytes, 7.1's from 32 on, with the header problems of the
//! kernels before 7.1 beside the verdict ([`Verdict::before_layout`]). The type checks (`M*`,
//! `R*`) are 6.1's, with what later releases relaxed applied for them ([`TypeRules`]): from
//! 6.15 on a TYPE_TAG or DECL_TAG may have kind_flag 1 (an arbitrary `__attribute__`, as
//! pahole's `attributes` writes for the arena kfuncs' `address_space(1)` pointers). A file
//! judged on its own header gets the newest type rules, and the kernels before 6.15 are named
//! beside the verdict when it has such tags ([`Verdict::before_tag_kflag`]). For a release
//! before 6.1 only the release table is known (`releases.rs`: which release brought each
//! kind and flag, with its commit): a kind or flag the release lacks is a certain no, and a
//! file using none of them gets no verdict ([`Verdict::undecided`]); before 4.18 there is no
//! BTF.
//!
//! Rules (`Problem::rule`):
//! - header: `H1-magic`, `H1-version`, `H1-flags`, `H2-hdr-len`, `H2-hdr-extra`,
//!   `H3-type-align`, `H4-sections`, `H4-str-not-last`, `H5-no-types`, `H5-str-first`,
//!   `H6-str-section`; from 7.1 on (`BPF_BTF_LOAD` only in the kernel) `H8-layout-off`,
//!   `H8-layout-len`;
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
//! - release (`--kernel-version` before 6.1): `V1-release`, one per kind or flag the release
//!   lacks, naming the first type that uses it;
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
//! - DATASEC names must be identifiers, as in 6.1; newer kernels' `btf_name_valid_section`
//!   takes any `isprint` name, so verify is stricter there than they are;
//! - likewise, but for the tags' kind_flag, the type checks stay 6.1's for every target,
//!   stricter than 7.2's where it relaxed them (read in 7.2's source; 6.12's still has both
//!   checks, and the release in between that dropped them is not pinned down): 7.2 takes the
//!   wider `info` fields (7-bit kind, 24-bit vlen: no `BTF_INFO_MASK` check,
//!   `M1-info-bits`) and type tags after modifiers (no `M17-type-tag-order`).
//!
//! Identifiers are checked exactly as 6.1's `__btf_name_valid`: `isalpha`/`isalnum` with the
//! kernel's lib/ctype.c classes (Latin-1 letters 0xC0..=0xFF bar 0xD7 and 0xF7 count, as does
//! `.`, anywhere); tests/real_kernel/verify_kernel.rs compares verify with the running kernel.
//!
//! Split BTF: ids below `start_id` and string offsets below `start_str_off` refer to the base,
//! which is trusted (not re-verified); base types count as resolved, as in the kernel.
//! The resolve pass is iterative with an explicit stack bounded by `MAX_RESOLVE_DEPTH` (32), like
//! the kernel's, so a deep type graph cannot overflow the native stack.
//!
//! Files, one per rule family, in the order the checks run:
//! - `mod.rs` (this file): the public API, [`Problem`], the sink that collects problems, and the
//!   driver (`check_types`) with the lookups and type descriptions every family uses;
//! - `target.rs`: kernel releases, how far verify can judge each, and the header rules each
//!   applies;
//! - `releases.rs`: the table of which release brought each kind and flag, and the check of a
//!   release before 6.1 against it;
//! - `verdict.rs`: the [`Target`], the [`Verdict`] and its text for `dwarf2btf verify`;
//! - `header.rs`: the header, the section layout, the kind layout section and the string
//!   section (`H*`), and the splitting of the type section into records;
//! - `record.rs`: `T`, a type record with bounds-checked field access, and what the kernel
//!   derives from one record alone (`btf_type_is_modifier`, `btf_type_nosize`, ...);
//! - `meta.rs`: every kind's `check_meta`, identifier rules and type-tag chains (`M*`);
//! - `resolve.rs`: the resolve pass, its explicit stack, every kind's `resolve` callback and
//!   `btf_func_proto_check` (`R*`);
//! - `member.rs`: the kinds' `check_member` callbacks for STRUCT and UNION members (`R5`).

mod header;
mod member;
mod meta;
mod record;
mod releases;
mod resolve;
mod resolve_kinds;
mod target;
mod verdict;

use std::fmt;
use std::sync::Arc;

use super::kinds::{self, Kind};
use super::strings::StringTable;
use super::Btf;
use header::{check_header, check_strings, scan_records, section};
use meta::name_valid;
use record::{Member, T};
pub use releases::{introduced, Feature, Introduced, INTRODUCED};
use resolve::{Fail, Mode, Vertex, Visit, MAX_RESOLVE_DEPTH};
pub use target::{
    HeaderRules, Judgement, KernelVersion, TypeRules, BTF_KERNEL, FULL_RULES_SINCE, LAYOUT_KERNEL,
    TAG_KFLAG_KERNEL,
};
pub use verdict::{Target, Verdict};

/// At most this many problems are reported; one more entry (rule [`RULE_LIMIT`]) says so.
pub const MAX_PROBLEMS: usize = 100;
/// Rule name of the final entry added when more than [`MAX_PROBLEMS`] problems were found.
pub const RULE_LIMIT: &str = "LIMIT";

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

/// Reads a base BTF (`--btf_base`, `--base`) and refuses it, with its first problem, unless
/// it passes the checks any BTF gets here: string offsets within the strings, a terminated
/// string section, no reference loops, ... (split BTF built on a broken base is broken too).
pub fn read_base(path: &std::path::Path) -> crate::error::Result<Arc<Btf>> {
    let bad = |reason: String| crate::error::Error::BadBase {
        path: path.to_path_buf(),
        reason,
    };
    let base = crate::btf::read::read_base(path).map_err(|e| match e {
        crate::error::Error::Io { source, .. } => bad(source.to_string()),
        other => bad(other.to_string()),
    })?;
    match first_problem(&base) {
        None => Ok(base),
        Some(reason) => Err(bad(reason)),
    }
}

/// [`verify`]'s first problem with `btf` and how many more there are; `None` when it is valid.
pub fn first_problem(btf: &Btf) -> Option<String> {
    let problems = verify(btf);
    let first = problems.first()?;
    Some(match problems.len() {
        1 => first.to_string(),
        n => format!("{first} (and {} more)", n - 1),
    })
}

/// Checks raw BTF bytes judged on their own header ([`Target::OwnHeader`]): header,
/// sections, then every type (meta and resolve checks).
///
/// `base` must be given for split BTF. An empty result means the BTF is valid.
pub fn verify_bytes(data: &[u8], base: Option<&Arc<Btf>>) -> Vec<Problem> {
    judge(data, base, Target::OwnHeader).problems
}

/// Checks raw BTF bytes for the kernels `target` names: header, sections, then every type.
///
/// `base` must be given for split BTF.
pub fn judge(data: &[u8], base: Option<&Arc<Btf>>, target: Target) -> Verdict {
    let (rules, types) = match target {
        Target::OwnHeader => (header::own_rules(data), TypeRules::NEWEST),
        Target::Kernel(version) => (HeaderRules::of(version), TypeRules::of(version)),
    };
    let before_layout = if target == Target::OwnHeader && rules == HeaderRules::Layout {
        header_problems(data, base.is_some(), HeaderRules::Classic)
    } else {
        Vec::new()
    };
    if let Target::Kernel(version) = target {
        if Judgement::of(version) == Judgement::NoBtf {
            return Verdict {
                problems: vec![releases::no_btf(version)],
                ..Verdict::empty(target, rules)
            };
        }
    }
    let sink = check_bytes(data, base, rules, types);
    let before_tag_kflag = match (target, sink.attribute_tags) {
        (Target::OwnHeader, Some((id, count, ref first))) => vec![Problem {
            type_id: Some(id),
            rule: "M6-kflag",
            message: match count {
                1 => format!("{first} has kind_flag 1 (an attribute)"),
                n => format!(
                    "{first} has kind_flag 1 (an attribute), as have {} more tag(s)",
                    n - 1
                ),
            },
        }],
        _ => Vec::new(),
    };
    let undecided = types.features_only.is_some() && sink.problems.is_empty();
    Verdict {
        problems: sink.problems,
        before_layout,
        before_tag_kflag,
        undecided,
        ..Verdict::empty(target, rules)
    }
}

/// The problems kernels of `rules` have with the header and section layout of `data` alone
/// (rules `H1`..`H4`, `H8`; nothing about strings or types).
pub fn header_problems(data: &[u8], split: bool, rules: HeaderRules) -> Vec<Problem> {
    let mut sink = Sink::default();
    check_header(data, split, rules, &mut sink);
    sink.problems
}

/// Every check of raw BTF under `rules` and `types`.
fn check_bytes(data: &[u8], base: Option<&Arc<Btf>>, rules: HeaderRules, types: TypeRules) -> Sink {
    let mut sink = Sink::default();
    let Some(h) = check_header(data, base.is_some(), rules, &mut sink) else {
        return sink;
    };
    let body = data.get(h.hdr_len..).unwrap_or(&[]);
    let tsec = section(body, h.type_off, h.type_len);
    let ssec = section(body, h.str_off, h.str_len);
    check_strings(ssec, base.is_some(), &mut sink);
    if base.is_none() && tsec.is_empty() {
        sink.push(None, "H5-no-types", "base BTF without any type".into());
    }

    let words = h.endian.words(tsec);
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
    check_types(&btf, &mut sink, truncated, types);
    sink
}

/// Checks an in-memory BTF as [`verify_bytes`] checks its bytes: string section, then every
/// own type (meta and resolve checks) by the newest type rules.
///
/// An empty result means the BTF is valid.
pub fn verify(btf: &Btf) -> Vec<Problem> {
    let mut sink = Sink::default();
    check_strings(btf.strings().as_bytes(), btf.base().is_some(), &mut sink);
    if btf.base().is_none() && btf.own_len() == 0 {
        sink.push(None, "H5-no-types", "base BTF without any type".into());
    }
    check_types(btf, &mut sink, false, TypeRules::NEWEST);
    sink.problems
}

/// Collects problems, stopping after [`MAX_PROBLEMS`], and the tags older kernels reject.
#[derive(Default)]
struct Sink {
    problems: Vec<Problem>,
    full: bool,
    /// TYPE_TAGs and DECL_TAGs with kind_flag 1 that the rules took: the first one's id and
    /// description, and how many there are.
    attribute_tags: Option<(u32, u32, String)>,
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
// The driver
// ---------------------------------------------------------------------------------------------

/// The state of one verification: lookups for every family, and the resolve pass's bookkeeping
/// (per own type, by index `id - start_id`).
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
    /// What the target kernels relaxed since 6.1.
    types: TypeRules,
}

/// Meta checks, type-tag chains and (unless the type section is cut short) the resolve pass.
fn check_types(btf: &Btf, sink: &mut Sink, truncated: bool, types: TypeRules) {
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
        types,
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
    if let Some(version) = types.features_only {
        v.check_features(sink, version);
        return;
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
        } else if t.is_attribute_tag() {
            match &mut sink.attribute_tags {
                Some((_, count, _)) => *count += 1,
                None => sink.attribute_tags = Some((id, 1, v.desc(t))),
            }
        }
    }
    if truncated {
        return;
    }
    v.check_type_tags(sink);
    v.check_all_types(sink);
}

impl<'a> Verifier<'a> {
    /// For a release before 6.1: the first use of each kind and flag `version` lacks.
    fn check_features(&self, sink: &mut Sink, version: KernelVersion) {
        let mut missing = releases::Missing::default();
        for id in self.start_id..self.type_cnt {
            let Some(t) = self.ty(id) else { continue };
            for feature in releases::features_of(t).into_iter().flatten() {
                if releases::introduced(feature).since > version {
                    missing.note(feature, id, || self.desc(t));
                }
            }
        }
        for p in missing.problems(version) {
            sink.push(p.type_id, p.rule, p.message);
        }
    }

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

    fn ident_ok(&self, off: u32) -> bool {
        self.name_bytes(off).is_some_and(name_valid)
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
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
