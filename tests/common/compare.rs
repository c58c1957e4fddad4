//! The comparisons the differential tests make, in one place so that their negative controls
//! (each beside the test it controls: `*_detects_a_*` in dedup_libbpf.rs, functions.rs,
//! kernel.rs and dwarf_functions.rs) feed deliberately wrong outputs to the very functions the
//! real tests call: dedup output against libbpf's, outputs across `-j` and table designs, and
//! the function skip log and skip reasons against pahole's.

use std::collections::BTreeMap;

use dwarf2btf::btf::read;

/// Type and string sections of raw BTF (headers may differ in length: libbpf keeps the input's).
pub fn btf_sections(data: &[u8]) -> (&[u8], &[u8]) {
    let h = read::parse_header(data).expect("valid output header");
    let body = &data[h.hdr_len as usize..];
    (
        &body[h.type_off as usize..(h.type_off + h.type_len) as usize],
        &body[h.str_off as usize..(h.str_off + h.str_len) as usize],
    )
}

/// How dwarf2btf's dedup output differs from libbpf's, `None` when it does not: both failed,
/// or both succeeded with the same type and string sections (and the same whole file when the
/// headers have the same length).
pub fn dedup_mismatch(
    name: &str,
    lib: &Result<Vec<u8>, i32>,
    ours: &Result<Vec<u8>, String>,
) -> Option<String> {
    match (lib, ours) {
        (Ok(l), Ok(o)) => {
            let (lt, ls) = btf_sections(l);
            let (ot, os) = btf_sections(o);
            if lt != ot || ls != os {
                let summary = |b: &[u8]| {
                    read::parse(b, None)
                        .map(|x| {
                            format!("{} types, {} string bytes", x.own_len(), x.strings().len())
                        })
                        .unwrap_or_else(|_| "split".into())
                };
                return Some(format!(
                    "{name}: output differs from libbpf\n  libbpf: {}\n  ours:   {}\n  types equal: {}, strings equal: {}",
                    summary(l),
                    summary(o),
                    lt == ot,
                    ls == os
                ));
            }
            if l[4..8] == o[4..8] && l != o {
                return Some(format!("{name}: full bytes differ"));
            }
            None
        }
        (Err(_), Err(_)) => None,
        (l, o) => Some(format!(
            "{name}: libbpf {:?} vs ours {:?}",
            l.as_ref().map(|v| v.len()),
            o.as_ref().map(|v| v.len())
        )),
    }
}

/// The file pahole would write with `layout` for the type and string sections of `plain`
/// (24-byte header, no layout): `with_layout`'s 32-byte header and kind layout section laid
/// out as libbpf 1.8 lays them (types, then the layout section, then the strings), around
/// `plain`'s sections. Panics when `with_layout` is not laid out so. pahole 1.32 as Debian
/// builds it (libbpf 1.7.0) has no `layout`; pahole HEAD's output with it is the reference
/// for the header and layout section, pahole 1.32's for the types and strings.
pub fn with_layout_of(with_layout: &[u8], plain: &[u8]) -> Vec<u8> {
    let word = |d: &[u8], i: usize| u32::from_le_bytes(d[4 * i..4 * i + 4].try_into().unwrap());
    let (hdr_len, type_off, type_len, str_off, _, layout_off, layout_len) = (
        word(with_layout, 1),
        word(with_layout, 2),
        word(with_layout, 3),
        word(with_layout, 4),
        word(with_layout, 5),
        word(with_layout, 6),
        word(with_layout, 7),
    );
    assert_eq!(
        (hdr_len, type_off, layout_off, str_off),
        (32, 0, type_len, type_len + layout_len),
        "the layout reference is not laid out as types, layout, strings"
    );
    let layout = &with_layout[(32 + layout_off) as usize..(32 + layout_off + layout_len) as usize];
    let (types, strings) = btf_sections(plain);
    let (t, s) = (types.len() as u32, strings.len() as u32);
    let mut out = with_layout[..8].to_vec();
    for field in [0, t, t + layout_len, s, t, layout_len] {
        out.extend_from_slice(&field.to_le_bytes());
    }
    out.extend_from_slice(types);
    out.extend_from_slice(layout);
    out.extend_from_slice(strings);
    out
}

/// Where two outputs that must be byte-identical differ: `None` when they are identical.
pub fn first_difference(expected: &[u8], got: &[u8]) -> Option<String> {
    if expected == got {
        return None;
    }
    let at = expected
        .iter()
        .zip(got)
        .position(|(a, b)| a != b)
        .unwrap_or(expected.len().min(got.len()));
    Some(format!(
        "{} bytes vs {} bytes, first difference at byte {at}",
        expected.len(),
        got.len()
    ))
}

/// How a `-V` function skip log differs from pahole HEAD's (`expected`), as multisets of
/// lines: `None` when it does not.
pub fn skip_log_mismatch(ours: &[String], expected: &[String]) -> Option<String> {
    fn count(lines: &[String]) -> BTreeMap<&str, usize> {
        let mut m: BTreeMap<&str, usize> = BTreeMap::new();
        for l in lines {
            *m.entry(l.as_str()).or_default() += 1;
        }
        m
    }
    /// Up to 10 lines `a` has more often than `b`.
    fn more<'a>(a: &BTreeMap<&'a str, usize>, b: &BTreeMap<&str, usize>) -> Vec<&'a str> {
        a.iter()
            .filter(|&(l, n)| b.get(l).copied().unwrap_or(0) < *n)
            .map(|(l, _)| *l)
            .take(10)
            .collect()
    }
    let (mine, theirs) = (count(ours), count(expected));
    let (missing, extra) = (more(&theirs, &mine), more(&mine, &theirs));
    if missing.is_empty() && extra.is_empty() {
        return None;
    }
    Some(format!(
        "{} lines vs pahole's {}\nmissing {missing:?}\nextra {extra:?}",
        ours.len(),
        expected.len()
    ))
}

/// The separator of pahole's `-V` function skip lines.
pub const SKIP_SEPARATOR: &str = " : skipping BTF encoding of function due to ";

/// The final skip reasons (not funcs__match's detail lines such as "param count mismatch").
pub const SKIP_REASONS: [&str; 6] = [
    "unexpected register usage for parameter",
    "inconsistet prototype",
    "uncertain parameter location",
    "reordered parameters",
    "optimized parameters",
    "ambiguous address",
];

/// Function name → final skip reason, from a `-V` skip log.
pub fn skip_reasons(log: &str) -> BTreeMap<&str, &str> {
    log.lines()
        .filter_map(|l| l.split_once(SKIP_SEPARATOR))
        .filter(|(_, r)| SKIP_REASONS.contains(r))
        .collect()
}

/// Compares the reason computed here for each function (`ours`: name → reason, `None` for
/// "encoded") with pahole HEAD's (`expected`): the functions whose reason differs, and those
/// pahole skipped that are not in `ours` at all. "Inconsistent prototype" needs BTF type
/// comparison, which `ours` cannot have: there, no reason or a register reason is accepted.
pub fn skip_reason_mismatches(
    expected: &BTreeMap<&str, &str>,
    ours: &BTreeMap<&str, Option<&str>>,
) -> (Vec<String>, Vec<String>) {
    let mut mismatches = Vec::new();
    for (&name, &reason) in ours {
        let oracle = expected.get(name).copied();
        let ok = match oracle {
            Some("inconsistet prototype") => {
                matches!(
                    reason,
                    None | Some("unexpected register usage for parameter")
                )
            }
            o => o == reason,
        };
        if !ok {
            mismatches.push(format!("{name}: pahole {oracle:?}, here {reason:?}"));
        }
    }
    let unseen = expected
        .keys()
        .filter(|n| !ours.contains_key(*n))
        .map(|n| n.to_string())
        .collect();
    (mismatches, unseen)
}

/// A mutation for the negative controls: raw BTF `data` with two different type records of
/// the same length swapped (same size, same bytes, another order).
pub fn swapped_records(data: &[u8]) -> Vec<u8> {
    let btf = read::parse(data, None).expect("valid BTF");
    let h = read::parse_header(data).expect("valid header");
    let mut at = (h.hdr_len + h.type_off) as usize;
    let mut records: Vec<(usize, &[u32])> = Vec::new();
    for t in btf.own_types() {
        records.push((at, t.words));
        at += t.words.len() * 4;
    }
    let (a, b) = records
        .iter()
        .enumerate()
        .find_map(|(i, (_, w))| {
            let j = records[i + 1..]
                .iter()
                .position(|(_, v)| v.len() == w.len() && v != w)?;
            Some((i, i + 1 + j))
        })
        .expect("two different records of the same length");
    let mut swapped = data.to_vec();
    let len = records[a].1.len() * 4;
    let (oa, ob) = (records[a].0, records[b].0);
    swapped[oa..oa + len].copy_from_slice(&data[ob..ob + len]);
    swapped[ob..ob + len].copy_from_slice(&data[oa..oa + len]);
    swapped
}
