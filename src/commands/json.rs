//! `--json`: what `verify`, `diff`, `dump` and `why` print, as one JSON document for scripts.
//! Each function returns the document's text (pretty-printed, ending in a newline); the
//! exit status stays the subcommand's.

use std::path::Path;

use dwarf2btf::btf::{Btf, Kind};
use dwarf2btf::toolbox::canon::DiffReport;
use dwarf2btf::toolbox::verify::{Problem, Target, Verdict};
use dwarf2btf::why::Report;
use serde_json::{json, Value};

/// The document's text.
fn text(doc: Value) -> String {
    let mut out = serde_json::to_string_pretty(&doc).expect("a JSON value always serializes");
    out.push('\n');
    out
}

fn problems(list: &[Problem]) -> Value {
    list.iter()
        .map(|p| json!({ "rule": p.rule, "type_id": p.type_id, "message": p.message }))
        .collect()
}

/// `verify --json`: the verdict (`valid`, `invalid` or `no verdict`), for which release, and
/// every problem with its rule and type id.
pub(crate) fn verdict(file: &str, v: &Verdict) -> String {
    let answer = match (v.valid(), v.undecided) {
        (true, _) => "valid",
        (false, true) => "no verdict",
        (false, false) => "invalid",
    };
    let release = match v.target {
        Target::Kernel(version) => Some(version.to_string()),
        Target::OwnHeader => None,
    };
    text(json!({
        "file": file,
        "kernel_version": release,
        "verdict": answer,
        "problems": problems(&v.problems),
        "problems_before_7_1": problems(&v.before_layout),
        "problems_before_6_15": problems(&v.before_tag_kflag),
    }))
}

/// `diff --json`: the sides, whether they are equal, the counts per category and every
/// difference listed (as many as the text shows: `--all` for every one).
pub(crate) fn diff(a: &Path, b: &Path, report: &DiffReport) -> String {
    let differences: Vec<Value> = report
        .differences
        .iter()
        .map(|d| {
            json!({
                "category": d.category.to_string(),
                "item": d.item,
                "count_a": d.count_a,
                "count_b": d.count_b,
            })
        })
        .collect();
    let per_category: serde_json::Map<String, Value> = report
        .categories
        .iter()
        .map(|&c| {
            let n = report.differing_per_category[c as usize];
            (c.to_string(), json!(n))
        })
        .collect();
    text(json!({
        "a": a.display().to_string(),
        "b": b.display().to_string(),
        "equal": report.equal,
        "set": report.set,
        "differing_items": report.distinct_differences,
        "differing_per_category": per_category,
        "only_in_a": report.only_in_a,
        "only_in_b": report.only_in_b,
        "differences": differences,
    }))
}

/// `dump --json`: the per-kind counts of the file's own types, and each type's id, kind and
/// name.
pub(crate) fn dump(file: &str, btf: &Btf) -> String {
    let counts: serde_json::Map<String, Value> = btf
        .kind_counts()
        .iter()
        .enumerate()
        .filter(|&(_, &n)| n > 0)
        .map(|(k, &n)| (kind_name(k as u32).to_owned(), json!(n)))
        .collect();
    let types: Vec<Value> = (btf.start_id()..)
        .zip(btf.own_types())
        .map(|(id, t)| {
            let kind = t.kind().map_or("UNKN", Kind::name);
            json!({ "id": id, "kind": kind, "name": btf.name(t.name_off()) })
        })
        .collect();
    text(json!({ "file": file, "counts": counts, "types": types }))
}

fn kind_name(k: u32) -> &'static str {
    Kind::from_u32(k).map_or("UNKN", Kind::name)
}

/// `why --json`: per name, the one-line answer, whether it is encoded, the skip reason, the
/// ELF symbols and every DWARF definition with its prototype in C.
pub(crate) fn why(file: &str, reports: &[Report]) -> String {
    let reports: Vec<Value> = reports.iter().map(report).collect();
    text(json!({ "file": file, "functions": reports }))
}

fn report(r: &Report) -> Value {
    let symbols: Vec<Value> = r
        .symbols
        .iter()
        .map(|s| json!({ "name": s.name, "address": s.addr, "size": s.size, "function": s.counts }))
        .collect();
    let definitions: Vec<Value> = r
        .dwarf
        .iter()
        .map(|d| {
            json!({
                "cu": d.cu_name,
                "die": d.die,
                "address": d.addr,
                "external": d.external,
                "prototype": d.prototype,
                "saved": d.saved.is_ok(),
                "not_saved": d.saved.err().map(|why| format!("{why:?}")),
            })
        })
        .collect();
    let decision = r.decision.as_ref().map(|d| {
        json!({
            "func_name": d.func_name,
            "instances": d.instances,
            "skip": d.skip().map(|s| s.describe()),
            "reasons": d.reasons.iter().map(|s| s.describe()).collect::<Vec<_>>(),
            "pahole_log": d.log_lines,
        })
    });
    json!({
        "asked": r.asked,
        "name": r.name,
        "answer": r.headline(),
        "encoded": r.encoded(),
        "unknown": r.unknown(),
        "symbols": symbols,
        "definitions": definitions,
        "declarations": r.declarations,
        "decision": decision,
    })
}
