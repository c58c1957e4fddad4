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
//! - `mod.rs` (this file): the public API;
//! - `problem.rs`: [`Problem`] and the sink that collects problems;
//! - `verifier.rs`: the state of one verification, the lookups and type descriptions every
//!   family uses, and the driver (`check_types`);
//! - `target.rs`: kernel releases, how far verify can judge each, and the header rules each
//!   applies;
//! - `releases.rs`: the table of which release brought each kind and flag, and the check of a
//!   release before 6.1 against it;
//! - `verdict.rs`: the [`Target`], the [`Verdict`] and its text for `dwarf2btf verify`;
//! - `header.rs`: the header, the section layout, the kind layout section and the string
//!   section (`H*`), and the splitting of the type section into records;
//! - `record.rs`: `T`, a type record with bounds-checked field access, and what the kernel
//!   derives from one record alone (`btf_type_is_modifier`, `btf_type_nosize`, ...);
//! - `meta.rs`: every kind's `check_meta` and type-tag chains (`M*`), over `names.rs`, the
//!   identifier rule;
//! - `resolve.rs`: the resolve pass, its explicit stack, every kind's `resolve` callback and
//!   `btf_func_proto_check` (`R*`);
//! - `member.rs`: the kinds' `check_member` callbacks for STRUCT and UNION members (`R5`).

mod header;
mod member;
mod meta;
mod names;
mod problem;
mod record;
mod releases;
mod resolve;
mod resolve_kinds;
mod target;
mod verdict;
mod verifier;

use std::sync::Arc;

use crate::btf::strings::StringTable;
use crate::btf::Btf;
use header::{check_header, check_strings, scan_records, section};
use problem::Sink;
pub use problem::{Problem, MAX_PROBLEMS, RULE_LIMIT};
pub use releases::{introduced, Feature, Introduced, INTRODUCED};
pub use target::{
    HeaderRules, Judgement, KernelVersion, TypeRules, BTF_KERNEL, FULL_RULES_SINCE, LAYOUT_KERNEL,
    TAG_KFLAG_KERNEL,
};
pub use verdict::{Target, Verdict};
use verifier::check_types;

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
