//! The `--stats` report of a run, above the pipeline whose [`Summary`] it reads: per-phase wall
//! and CPU time with memory, the workers' CPU split, the dedup phases, the large structures and
//! the function table's counters; as text for people, or one JSON object or a CSV header and
//! row for scripts sweeping `-j`. The probes behind the figures are in `measure`.

use std::fmt::Write as _;
use std::str::FromStr;

use crate::pipeline::Summary;

/// How `--stats` prints: text for people (`--stats`), or the same figures as one JSON object
/// (`--stats=json`) or a CSV header and row (`--stats=csv`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// The report as aligned text.
    Text,
    /// One JSON object, its keys those of [`figures`].
    Json,
    /// A header line of [`figures`]' keys and one line of values.
    Csv,
}

impl FromStr for Format {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "text" => Ok(Format::Text),
            "json" => Ok(Format::Json),
            "csv" => Ok(Format::Csv),
            _ => Err(format!("'{s}' is not a --stats format (text, json, csv)")),
        }
    }
}

/// The `--stats` report of a run whose function table was of design `design`, in `format`.
pub fn report(format: Format, summary: &Summary, design: &str) -> String {
    match format {
        Format::Text => text(summary, design),
        Format::Json => {
            let fields: Vec<String> = figures(summary, design)
                .iter()
                .map(|(key, value)| format!("{}: {}", json_string(key), value.json()))
                .collect();
            format!("{{{}}}\n", fields.join(", "))
        }
        Format::Csv => {
            let figures = figures(summary, design);
            let keys: Vec<String> = figures.iter().map(|(key, _)| csv_field(key)).collect();
            let values: Vec<String> = figures.iter().map(|(_, value)| value.csv()).collect();
            format!("{}\n{}\n", keys.join(","), values.join(","))
        }
    }
}

/// One figure of the machine-readable forms.
#[derive(Clone, Debug, PartialEq)]
pub enum Figure {
    /// Seconds, or MiB with a fraction.
    Real(f64),
    /// A count, or bytes, or whole MiB.
    Count(u64),
    /// A name.
    Name(String),
}

impl Figure {
    fn json(&self) -> String {
        match self {
            Figure::Real(x) => format!("{x:.6}"),
            Figure::Count(n) => n.to_string(),
            Figure::Name(s) => json_string(s),
        }
    }

    fn csv(&self) -> String {
        match self {
            Figure::Name(s) => csv_field(s),
            other => other.json(),
        }
    }
}

/// A JSON string literal.
fn json_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out + "\""
}

/// A CSV field, quoted when it must be.
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The figures of the text report, named: the run's totals (`wall_s`, `cpu_s`,
/// `peak_rss_mib`), each phase's own times and memory (`phase.NAME.wall_s`, ...), the
/// workers' CPU split, the dedup phases, the large structures, the function table's
/// counters and the run's counts (CUs, types, functions, bytes).
pub fn figures(summary: &Summary, design: &str) -> Vec<(String, Figure)> {
    use Figure::{Count, Name, Real};
    let mut out: Vec<(String, Figure)> = Vec::new();
    let mut put = |key: String, value: Figure| out.push((key, value));
    let last = summary.phases.last();
    put("design".into(), Name(design.to_string()));
    put("wall_s".into(), Real(last.map_or(0.0, |p| p.wall)));
    put("cpu_s".into(), Real(last.map_or(0.0, |p| p.cpu)));
    put("rss_mib".into(), Count(last.map_or(0, |p| p.rss_mib)));
    put("peak_rss_mib".into(), Count(last.map_or(0, |p| p.peak_mib)));
    let mut before = (0.0, 0.0);
    for p in &summary.phases {
        let key = |what: &str| format!("phase.{}.{what}", p.name);
        put(key("wall_s"), Real(p.wall - before.0));
        put(key("cpu_s"), Real(p.cpu - before.1));
        put(key("rss_mib"), Count(p.rss_mib));
        put(key("peak_mib"), Count(p.peak_mib));
        put(key("alloc_mib"), Count(p.alloc_mib));
        before = (p.wall, p.cpu);
    }
    let w = &summary.workers;
    put("workers.decode_cpu_s".into(), Real(w.decode.as_secs_f64()));
    put("workers.encode_cpu_s".into(), Real(w.encode.as_secs_f64()));
    put("workers.save_cpu_s".into(), Real(w.save.as_secs_f64()));
    for (name, secs) in &summary.dedup_phases {
        put(format!("dedup.{}.wall_s", slug(name)), Real(*secs));
    }
    for h in &summary.held {
        let name = slug(h.what.split(':').next().unwrap_or(&h.what));
        put(format!("held.{name}.bytes"), Count(h.bytes as u64));
    }
    let t = &summary.table;
    put("table.saves".into(), Count(t.saves));
    put(
        "table.per_owner_folds".into(),
        Count(t.nodes_per_owner.iter().sum()),
    );
    put(
        "table.cas_failures".into(),
        Count(t.contention.cas_failures),
    );
    put("table.lock_waits".into(), Count(t.contention.lock_waits));
    put("table.held_instances".into(), Count(t.held));
    put("table.held_bytes".into(), Count(t.held_bytes));
    put("table.finish_s".into(), Real(t.finish));
    put("table.memory_bytes".into(), Count(t.memory.total()));
    put("cus".into(), Count(summary.cus as u64));
    put("cus_skipped".into(), Count(summary.cus_skipped as u64));
    put(
        "types_before_dedup".into(),
        Count(summary.types_before_dedup.into()),
    );
    put("types".into(), Count(summary.types.into()));
    put("funcs".into(), Count(summary.funcs as u64));
    put("funcs_skipped".into(), Count(summary.funcs_skipped as u64));
    put("bytes".into(), Count(summary.bytes as u64));
    // Keys are unique: a name met again (the struct phase's several "resident" lines) is
    // numbered from its second appearance.
    let mut seen = std::collections::HashMap::new();
    for (key, _) in &mut out {
        let n: &mut u32 = seen.entry(key.clone()).or_default();
        *n += 1;
        if *n > 1 {
            let (name, unit) = key.rsplit_once('.').unwrap_or((key.as_str(), ""));
            *key = format!("{name}_{n}.{unit}");
        }
    }
    out
}

/// A name as a key: lower case letters, digits and `_`, words joined by one `_`.
fn slug(name: &str) -> String {
    let words: Vec<String> = name
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_ascii_lowercase)
        .collect();
    words.join("_")
}

/// The text report: per-phase wall and CPU time with memory, the workers' CPU split, the
/// dedup phases, and the function table's counters.
fn text(summary: &Summary, design: &str) -> String {
    let (phases, workers, dedup, held, table) = (
        &summary.phases,
        &summary.workers,
        &summary.dedup_phases,
        &summary.held,
        &summary.table,
    );
    let mut out = String::from("phase          wall s    cpu s  rss MiB  peak MiB alloc MiB\n");
    let mut before = (0.0, 0.0);
    for p in phases {
        out += &format!(
            "{:<12} {:>8.3} {:>8.3} {:>8} {:>9} {:>9}\n",
            p.name,
            p.wall - before.0,
            p.cpu - before.1,
            p.rss_mib,
            p.peak_mib,
            p.alloc_mib
        );
        before = (p.wall, p.cpu);
        if p.name == "cus" {
            out += &format!(
                "  workers' CPU: decode {:.3} s, encode {:.3} s, save functions {:.3} s\n",
                workers.decode.as_secs_f64(),
                workers.encode.as_secs_f64(),
                workers.save.as_secs_f64()
            );
        }
        if p.name == "dedup" && !dedup.is_empty() {
            let parts: Vec<String> = dedup
                .iter()
                .map(|(name, secs)| format!("{name} {secs:.3}"))
                .collect();
            out += &format!("  dedup phases (wall s): {}\n", parts.join(", "));
        }
    }
    if let Some(last) = phases.last() {
        out += &format!(
            "{:<12} {:>8.3} {:>8.3} {:>8} {:>9}\n",
            "total", last.wall, last.cpu, last.rss_mib, last.peak_mib
        );
    }
    for h in held {
        out += &format!(
            "held: {:>7.1} MiB  {}\n",
            h.bytes as f64 / (1 << 20) as f64,
            h.what
        );
    }
    let per_owner: Vec<String> = table.nodes_per_owner.iter().map(u64::to_string).collect();
    out += &format!(
        "function table ({design}): {} instances saved, {} per-owner folds (per owner: {}), \
         contention {} ({} failed CAS, {} shard lock waits), {} instances held for the final \
         pass, finish {:.3} s\n",
        table.saves,
        table.nodes_per_owner.iter().sum::<u64>(),
        per_owner.join(" "),
        table.contention.cas_failures + table.contention.lock_waits,
        table.contention.cas_failures,
        table.contention.lock_waits,
        table.held,
        table.finish
    );
    let m = &table.memory;
    let mib = |bytes: u64| bytes as f64 / (1 << 20) as f64;
    out += &format!(
        "function table memory ({design}): {:.2} MiB: shared index {:.2}, per-owner indexes \
         {:.2}, records {:.2}, slack {:.2}, per-owner bookkeeping {:.2}, fold heap {:.2}\n",
        mib(m.total()),
        mib(m.shared_index),
        mib(m.owner_index),
        mib(m.records),
        mib(m.slack),
        mib(m.per_owner),
        mib(m.heap)
    );
    out += &format!("owners per function: {}\n", histogram(&table.lengths));
    out += &format!("instances per function: {}\n", histogram(&table.instances));
    out
}

/// `1: n1, 2: n2, …` for the non-zero counts of `counts[1..]`.
fn histogram(counts: &[u64]) -> String {
    let parts: Vec<String> = (1..)
        .zip(counts.iter().skip(1))
        .filter(|&(_, &n)| n > 0)
        .map(|(len, n)| format!("{len}: {n}"))
        .collect();
    parts.join(", ")
}
