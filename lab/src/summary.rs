//! The summary of a replay CSV, as Markdown:
//!
//! - per cell (mapping, owners, threads, gap scale, fold, design), the median of the wall
//!   time, the CPU time, `finish`'s time and the per-save p50 and p99 latencies, each with a
//!   percentile-bootstrap 95 % interval (resampling the rounds with replacement, seeded: the
//!   same CSV and seed give the same tables);
//! - per block, shared minus each other design, paired by round (each round runs every
//!   design once, in a random order): the median difference of wall and of CPU time with
//!   bootstrap 95 % and 90 % intervals (resampling the pairs), and a TOST equivalence verdict
//!   against a declared margin, a fraction of save-merge's median in the same block.
//!
//! Pinned runs (a CSV's `pinned` column) are their own cells, the design named
//! `DESIGN-pinned`.

use std::collections::BTreeMap;

use dwarf2btf::rng::Rng;

/// The median of `values` (the mean of the middle two for an even count); sorts them.
pub fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

/// The sorted medians of `resamples` bootstrap resamples of `values`, drawn with `rng`.
fn boot_medians(values: &[f64], resamples: usize, rng: &mut Rng) -> Vec<f64> {
    let mut medians = Vec::with_capacity(resamples);
    let mut sample = vec![0.0; values.len()];
    for _ in 0..resamples {
        for s in sample.iter_mut() {
            *s = values[rng.below(values.len())];
        }
        medians.push(median(&mut sample));
    }
    medians.sort_by(f64::total_cmp);
    medians
}

/// The two-sided percentile interval of `level` (0.95: the 2.5th to the 97.5th percentile)
/// of sorted bootstrap medians.
fn interval(medians: &[f64], level: f64) -> (f64, f64) {
    let at = |q: f64| medians[((medians.len() - 1) as f64 * q).round() as usize];
    let tail = (1.0 - level) / 2.0;
    (at(tail), at(1.0 - tail))
}

/// The percentile-bootstrap 95 % interval of the median of `values` from `resamples`
/// resamples drawn with `rng`.
fn median_ci(values: &[f64], resamples: usize, rng: &mut Rng) -> (f64, f64) {
    interval(&boot_medians(values, resamples, rng), 0.95)
}

/// The median of `values` and its bootstrap 95 % interval, `None` for no values.
fn estimate(values: &[f64], resamples: usize, rng: &mut Rng) -> Option<[f64; 3]> {
    if values.is_empty() {
        return None;
    }
    let (low, high) = median_ci(values, resamples, rng);
    Some([median(&mut values.to_vec()), low, high])
}

/// `median [low, high]`, scaled by `scale`, with `digits` decimals.
fn cell(estimate: Option<[f64; 3]>, scale: f64, digits: usize) -> String {
    match estimate {
        None => "–".into(),
        Some([mid, low, high]) => format!(
            "{:.digits$} [{:.digits$}, {:.digits$}]",
            mid / scale,
            low / scale,
            high / scale
        ),
    }
}

/// The fewest pairs a verdict is given for: below it a bootstrap interval says little.
const MIN_PAIRS: usize = 5;

/// A paired comparison: the median of per-round differences, its bootstrap 95 % and 90 %
/// intervals, and the equivalence margin it is tested against.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Paired {
    pub pairs: usize,
    pub median: f64,
    pub ci95: (f64, f64),
    pub ci90: (f64, f64),
    pub margin: f64,
}

impl Paired {
    /// The differences `a[r] - b[r]` over the rounds both have, bootstrapped; `None` without
    /// pairs.
    pub fn of(
        a: &BTreeMap<usize, f64>,
        b: &BTreeMap<usize, f64>,
        margin: f64,
        resamples: usize,
        rng: &mut Rng,
    ) -> Option<Paired> {
        let diffs: Vec<f64> = a
            .iter()
            .filter_map(|(round, x)| b.get(round).map(|y| x - y))
            .collect();
        if diffs.is_empty() {
            return None;
        }
        let medians = boot_medians(&diffs, resamples, rng);
        Some(Paired {
            pairs: diffs.len(),
            median: median(&mut diffs.clone()),
            ci95: interval(&medians, 0.95),
            ci90: interval(&medians, 0.90),
            margin,
        })
    }

    /// The verdict (with at least [`MIN_PAIRS`] pairs): TOST at α = 0.05 (the 90 % interval inside ±margin: "equivalent"),
    /// else the 95 % interval's side of 0 ("shared slower" / "shared faster"), else
    /// "inconclusive".
    pub fn verdict(&self) -> &'static str {
        if self.pairs < MIN_PAIRS {
            return "too few pairs";
        }
        let (m, (lo90, hi90), (lo95, hi95)) = (self.margin, self.ci90, self.ci95);
        let apart = lo95 > 0.0 || hi95 < 0.0;
        match (-m < lo90 && hi90 < m, apart) {
            (true, false) => "equivalent",
            (true, true) => "equivalent (a difference inside the margin)",
            (false, true) if lo95 > 0.0 => "shared slower",
            (false, true) => "shared faster",
            (false, false) => "inconclusive",
        }
    }

    /// `median [low, high]` of the 95 % interval, in ms.
    fn ms(&self) -> String {
        format!(
            "{:+.2} [{:+.2}, {:+.2}]",
            self.median / 1e6,
            self.ci95.0 / 1e6,
            self.ci95.1 / 1e6
        )
    }
}

/// The summary of a replay CSV: Markdown tables, and the medians as whitespace-separated
/// columns for gnuplot (fold, owners, design, then median, low and high of the wall time and
/// of `finish`, in ms; `batch` mapping only).
pub struct Summary {
    pub markdown: String,
    pub plot_data: String,
}

/// A block of cells that differ only in the design: mapping, owners, threads, gap scale, fold.
type Block = (String, usize, usize, String, String);

/// The measured columns, in the order [`Cells`] keeps them.
const MEASURED: [&str; 7] = [
    "wall_ns",
    "cpu_ns",
    "finish_ns",
    "p50_ns",
    "p99_ns",
    "cas_failures",
    "lock_waits",
];

/// Per block and design, per measured column, the value of each round.
type Cells = BTreeMap<(Block, String), [BTreeMap<usize, f64>; 7]>;

/// The rows of `csv` by cell. Columns an older CSV lacks take their old meaning: mapping
/// `batch`, owners = threads, gap scale 0, round = `run`.
fn cells(csv: &str) -> Result<Cells, String> {
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().ok_or("empty CSV")?.split(',').collect();
    let at = |name: &str| header.iter().position(|&h| h == name);
    let need = |name: &str| at(name).ok_or(format!("no column {name}"));
    let (design, fold, threads) = (need("design")?, need("fold")?, need("threads")?);
    let round = at("round").or(at("run"));
    let measured = MEASURED.map(at);
    if measured[0].is_none() {
        return Err("no column wall_ns".into());
    }
    let (mapping, owners) = (at("mapping"), at("owners"));
    let (gap, pinned) = (at("gap_scale"), at("pinned"));
    let mut cells = Cells::new();
    for (row, line) in lines.filter(|l| !l.is_empty()).enumerate() {
        let c: Vec<&str> = line.split(',').collect();
        let number = |i: usize| c[i].parse::<usize>().map_err(|_| format!("bad row {line}"));
        let t = number(threads)?;
        let block = (
            mapping.map_or("batch", |i| c[i]).to_string(),
            owners.map_or(Ok(t), number)?,
            t,
            gap.map_or("0", |i| c[i]).to_string(),
            c[fold].to_string(),
        );
        let design = match pinned.and_then(|i| c.get(i)) {
            Some(&"1") => format!("{}-pinned", c[design]),
            _ => c[design].to_string(),
        };
        let r = round.map_or(Ok(row), number)?;
        let cell = cells.entry((block, design)).or_default();
        for (values, i) in cell.iter_mut().zip(measured) {
            if let Some(v) = i.and_then(|i| c[i].parse::<f64>().ok()) {
                values.insert(r, v);
            }
        }
    }
    Ok(cells)
}

/// The summary of `csv` (as `replay` writes it): per-cell medians, then shared's paired
/// differences with each other design against a margin of `margin` × save-merge's median.
pub fn summarize(csv: &str, resamples: usize, seed: u64, margin: f64) -> Result<Summary, String> {
    let cells = cells(csv)?;
    let header: Vec<&str> = csv.lines().next().unwrap_or("").split(',').collect();
    let memory = memory_table(&header, csv)?;
    let mut rng = Rng::new(seed);
    let mut out = format!(
        "Medians over the rounds with bootstrap 95 % intervals ({resamples} resamples, seed \
         {seed}). CPU: the replay threads' CPU time and the hand-over's and `finish`'s.\n\n\
         | mapping | owners | threads | gap | fold | design | runs | wall ms | CPU ms | \
         finish ms | p50 save ns | p99 save ns | failed CAS | shard lock waits |\n\
         |---|---:|---:|---:|---|---|---:|---|---|---|---|---|---:|---:|\n"
    );
    let mut plot_data = String::from("# fold owners design wall_ms lo hi finish_ms lo hi\n");
    for ((block, design), columns) in &cells {
        let values: Vec<Vec<f64>> = columns
            .iter()
            .map(|c| c.values().copied().collect())
            .collect();
        let e: Vec<Option<[f64; 3]>> = values[..5]
            .iter()
            .map(|v| estimate(v, resamples, &mut rng))
            .collect();
        let (mapping, owners, threads, gap, fold) = block;
        out += &format!(
            "| {mapping} | {owners} | {threads} | {gap} | {fold} | {design} | {} | {} | {} | {} \
             | {} | {} | {} | {} |\n",
            values[0].len(),
            cell(e[0], 1e6, 2),
            cell(e[1], 1e6, 2),
            cell(e[2], 1e6, 2),
            cell(e[3], 1.0, 0),
            cell(e[4], 1.0, 0),
            median_or_dash(&values[5]),
            median_or_dash(&values[6]),
        );
        if let (Some(w), Some(f), "batch") = (e[0], e[2], mapping.as_str()) {
            plot_data += &format!(
                "{fold} {owners} {design} {:.4} {:.4} {:.4} {:.4} {:.4} {:.4}\n",
                w[0] / 1e6,
                w[1] / 1e6,
                w[2] / 1e6,
                f[0] / 1e6,
                f[1] / 1e6,
                f[2] / 1e6
            );
        }
    }
    out += &paired_table(&cells, margin, resamples, &mut rng);
    Ok(Summary {
        markdown: out + &memory,
        plot_data,
    })
}

/// The median of `values` as a number, or "–".
fn median_or_dash(values: &[f64]) -> String {
    if values.is_empty() {
        "–".into()
    } else {
        format!("{}", median(&mut values.to_vec()))
    }
}

/// Shared minus each other design, per round, in every block that has shared and save-merge.
fn paired_table(cells: &Cells, margin: f64, resamples: usize, rng: &mut Rng) -> String {
    let mut out = format!(
        "\nPaired differences, shared minus each other design, one pair per round (the designs \
         ran in a random order within each round); median with bootstrap 95 % interval, ms. \
         Equivalence margin: ±{:.0} % of save-merge's median in the same cell; TOST at \
         α = 0.05 (the 90 % interval inside the margin).\n\n\
         | mapping | owners | threads | gap | fold | shared − | pairs | Δ wall ms | ± margin ms \
         | wall verdict | Δ CPU ms | ± margin ms | CPU verdict |\n\
         |---|---:|---:|---:|---|---|---:|---|---:|---|---|---:|---|\n",
        margin * 100.0
    );
    let blocks: std::collections::BTreeSet<&Block> = cells.keys().map(|(b, _)| b).collect();
    for block in blocks {
        let get = |d: &str| cells.get(&(block.clone(), d.to_string()));
        let (Some(shared), Some(base)) = (get("shared"), get("save-merge")) else {
            continue;
        };
        let m = |col: usize| {
            let mut v: Vec<f64> = base[col].values().copied().collect();
            if v.is_empty() {
                0.0
            } else {
                margin * median(&mut v)
            }
        };
        let (m_wall, m_cpu) = (m(0), m(1));
        for ((b, design), other) in cells.range((block.clone(), String::new())..) {
            if b != block {
                break;
            }
            if design == "shared" {
                continue;
            }
            let wall = Paired::of(&shared[0], &other[0], m_wall, resamples, rng);
            let cpu = Paired::of(&shared[1], &other[1], m_cpu, resamples, rng);
            let show = |p: Option<Paired>| {
                p.map_or(["–".into(), "–".into(), "–".into()], |p| {
                    [p.ms(), format!("{:.2}", p.margin / 1e6), p.verdict().into()]
                })
            };
            let (mapping, owners, threads, gap, fold) = block;
            let [w, wm, wv] = show(wall);
            let [c, cm, cv] = show(cpu);
            out += &format!(
                "| {mapping} | {owners} | {threads} | {gap} | {fold} | {design} | {} | {w} | {wm} \
                 | {wv} | {c} | {cm} | {cv} |\n",
                wall.map_or(0, |p| p.pairs)
            );
        }
    }
    out
}

/// The memory columns (`mem_*`, counted by the tables in the warm-up runs), in KiB per
/// (fold, threads, design), as a Markdown table; empty for a CSV without them.
fn memory_table(header: &[&str], csv: &str) -> Result<String, String> {
    const PARTS: [&str; 7] = [
        "mem_bytes",
        "mem_shared_index",
        "mem_owner_index",
        "mem_records",
        "mem_slack",
        "mem_per_owner",
        "mem_heap",
    ];
    let at = |name: &str| header.iter().position(|&h| h == name);
    let Some(columns) = PARTS.iter().map(|p| at(p)).collect::<Option<Vec<usize>>>() else {
        return Ok(String::new());
    };
    let [design, fold, threads] = ["design", "fold", "threads"].map(|c| at(c).unwrap_or(0));
    let (mapping, owners) = (at("mapping"), at("owners"));
    let mut rows: BTreeMap<(String, String, usize, String), Vec<String>> = BTreeMap::new();
    for line in csv.lines().skip(1).filter(|l| !l.is_empty()) {
        let cells: Vec<&str> = line.split(',').collect();
        let n: usize = cells[owners.unwrap_or(threads)]
            .parse()
            .map_err(|_| format!("bad row {line}"))?;
        let key = (
            mapping.map_or("batch", |i| cells[i]).to_string(),
            cells[fold].to_string(),
            n,
            cells[design].to_string(),
        );
        rows.entry(key).or_insert_with(|| {
            columns
                .iter()
                .map(|&c| {
                    let bytes: f64 = cells[c].parse().unwrap_or(0.0);
                    format!("{:.1}", bytes / 1024.0)
                })
                .collect()
        });
    }
    let mut out = String::from(
        "\nMemory the tables counted before `finish`, KiB (the same in every run of a cell).\n\n\
         | mapping | fold | owners | design | total | shared index | per-owner indexes | records | \
         slack | per-owner bookkeeping | fold heap |\n\
         |---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for ((mapping, fold, owners, design), kib) in rows {
        out += &format!(
            "| {mapping} | {fold} | {owners} | {design} | {} |\n",
            kib.join(" | ")
        );
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_table_takes_each_cells_first_row() {
        let csv = "design,fold,threads,mem_bytes,mem_shared_index,mem_owner_index,mem_records,\
                   mem_slack,mem_per_owner,mem_heap\n\
                   shared,trivial,2,10240,2048,0,4096,1024,1024,2048\n\
                   shared,trivial,2,0,0,0,0,0,0,0\n";
        let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
        let table = memory_table(&header, csv).unwrap();
        assert!(
            table.ends_with(
                "| batch | trivial | 2 | shared | 10.0 | 2.0 | 0.0 | 4.0 | 1.0 | 1.0 | 2.0 |\n"
            ),
            "{table}"
        );
    }

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), 2.5);
    }

    #[test]
    fn bootstrap_interval_holds_the_median_and_is_reproducible() {
        let values: Vec<f64> = (0..41).map(|i| f64::from((i * 37) % 41)).collect();
        let (low, high) = median_ci(&values, 2000, &mut Rng::new(9));
        assert!(low < 20.0 && 20.0 < high, "[{low}, {high}]");
        assert!(low >= 10.0 && high <= 30.0, "[{low}, {high}]");
        assert_eq!(median_ci(&values, 2000, &mut Rng::new(9)), (low, high));
        // Constant data: a point interval.
        assert_eq!(median_ci(&[5.0; 7], 100, &mut Rng::new(1)), (5.0, 5.0));
    }

    #[test]
    fn pinned_runs_are_their_own_cells() {
        let csv = "design,fold,threads,wall_ns,finish_ns,p50_ns,p99_ns,cas_failures,lock_waits,\
                   pinned\n\
                   shared,trivial,2,1000000,0,,,0,0,0\n\
                   shared,trivial,2,3000000,0,,,0,0,1\n";
        let table = summarize(csv, 100, 1, 0.05).unwrap().markdown;
        assert!(
            table.contains("| batch | 2 | 2 | 0 | trivial | shared | 1 | 1.00 [1.00, 1.00] |"),
            "{table}"
        );
        assert!(
            table.contains(
                "| batch | 2 | 2 | 0 | trivial | shared-pinned | 1 | 3.00 [3.00, 3.00] |"
            ),
            "{table}"
        );
    }

    #[test]
    fn summary_groups_rows_and_skips_empty_latency() {
        let csv = "design,fold,threads,run,saves,work_ns,wall_ns,finish_ns,p50_ns,p99_ns,\
                   max_ns,cas_failures,lock_waits,folds\n\
                   shared,trivial,2,1,10,0,1000000,500000,,,,3,0,4\n\
                   shared,trivial,2,2,10,0,3000000,500000,,,,1,0,4\n";
        let summary = summarize(csv, 100, 1, 0.05).unwrap();
        let table = summary.markdown;
        assert!(
            !table.contains("Memory"),
            "no memory columns, no memory table"
        );
        assert!(
            table.contains(
                "| batch | 2 | 2 | 0 | trivial | shared | 2 | 2.00 [1.00, 3.00] | – | 0.50 [0.50, 0.50] | – | – | 2 | 0 |"
            ),
            "{table}"
        );
        assert!(
            summary
                .plot_data
                .ends_with("\ntrivial 2 shared 2.0000 1.0000 3.0000 0.5000 0.5000 0.5000\n"),
            "{}",
            summary.plot_data
        );
    }

    /// A CSV of `rounds` rounds of three designs whose wall times are `f(design, round)` ms.
    fn rounds(rounds: usize, f: impl Fn(&str, usize) -> f64) -> String {
        let mut csv =
            String::from("design,fold,mapping,owners,threads,gap_scale,round,wall_ns,cpu_ns\n");
        for r in 1..=rounds {
            for d in ["shared", "dashmap", "save-merge"] {
                let ns = f(d, r) * 1e6;
                csv += &format!("{d},summary,batch,2,2,0,{r},{ns},{ns}\n");
            }
        }
        csv
    }

    /// The paired table's row for `design`.
    fn paired_row(table: &str, design: &str) -> String {
        let prefix = format!("| batch | 2 | 2 | 0 | summary | {design} |");
        let tail = table.split("Paired differences").nth(1).unwrap();
        tail.lines()
            .find(|l| l.starts_with(&prefix))
            .unwrap()
            .to_string()
    }

    #[test]
    fn paired_differences_follow_the_rounds_and_give_verdicts() {
        // Round-to-round drift of ±30 % that hits every design of a round alike: unpaired
        // intervals would overlap, the paired differences are exact.
        let drift = |r: usize| 1.0 + 0.3 * ((r * 7 % 5) as f64 - 2.0) / 2.0;
        let csv = rounds(12, |d, r| {
            drift(r)
                * match d {
                    "shared" => 10.1,
                    "save-merge" => 10.0,
                    _ => 20.0,
                }
        });
        let table = summarize(&csv, 2000, 3, 0.05).unwrap().markdown;
        let row = paired_row(&table, "save-merge");
        assert!(row.contains("| 12 |"), "{row}");
        assert!(row.contains("| equivalent"), "{row}");
        let row = paired_row(&table, "dashmap");
        assert!(row.contains("| shared faster |"), "{row}");
        // A 20 % difference is outside a 5 % margin: not equivalent.
        let csv = rounds(12, |d, r| {
            drift(r) * if d == "shared" { 12.0 } else { 10.0 }
        });
        let table = summarize(&csv, 2000, 3, 0.05).unwrap().markdown;
        assert!(
            paired_row(&table, "save-merge").contains("| shared slower |"),
            "{table}"
        );
    }

    #[test]
    fn verdicts() {
        let p = |lo: f64, hi: f64| Paired {
            pairs: 10,
            median: (lo + hi) / 2.0,
            ci95: (lo, hi),
            ci90: (lo * 0.9, hi * 0.9),
            margin: 1.0,
        };
        assert_eq!(p(-0.5, 0.5).verdict(), "equivalent");
        let few = Paired {
            pairs: 4,
            ..p(-0.5, 0.5)
        };
        assert_eq!(few.verdict(), "too few pairs");
        assert_eq!(
            p(0.1, 0.5).verdict(),
            "equivalent (a difference inside the margin)"
        );
        assert_eq!(p(-3.0, 3.0).verdict(), "inconclusive");
        assert_eq!(p(2.0, 3.0).verdict(), "shared slower");
        assert_eq!(p(-3.0, -2.0).verdict(), "shared faster");
    }
}
