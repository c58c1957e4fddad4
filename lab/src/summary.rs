//! The summary of a replay CSV: per (fold, threads, design), the median of the wall time, of
//! `finish`'s time and of the per-save p50 and p99 latencies, each with a percentile-bootstrap 95 %
//! confidence interval (resampling the runs with replacement, seeded: the same CSV and seed
//! give the same table), as Markdown. Pinned runs (a CSV's `pinned` column, absent in older
//! CSVs) are their own cells, the design named `DESIGN-pinned`.

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

/// The percentile-bootstrap 95 % interval of the median of `values` from `resamples`
/// resamples drawn with `rng`.
fn median_ci(values: &[f64], resamples: usize, rng: &mut Rng) -> (f64, f64) {
    let mut medians = Vec::with_capacity(resamples);
    let mut sample = vec![0.0; values.len()];
    for _ in 0..resamples {
        for s in sample.iter_mut() {
            *s = values[rng.below(values.len())];
        }
        medians.push(median(&mut sample));
    }
    medians.sort_by(f64::total_cmp);
    let at = |q: f64| medians[((resamples - 1) as f64 * q).round() as usize];
    (at(0.025), at(0.975))
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

/// The summary of a replay CSV: a Markdown table, and the same figures as whitespace-separated
/// columns for gnuplot (fold, threads, design, then median, low and high of the wall time and
/// of `finish`, in ms).
pub struct Summary {
    pub markdown: String,
    pub plot_data: String,
}

/// The summary of `csv` (as `replay` writes it).
pub fn summarize(csv: &str, resamples: usize, seed: u64) -> Result<Summary, String> {
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().ok_or("empty CSV")?.split(',').collect();
    let column = |name: &str| {
        header
            .iter()
            .position(|&h| h == name)
            .ok_or(format!("no column {name}"))
    };
    let [design, fold, threads, wall, finish, p50, p99, cas, waits] = [
        "design",
        "fold",
        "threads",
        "wall_ns",
        "finish_ns",
        "p50_ns",
        "p99_ns",
        "cas_failures",
        "lock_waits",
    ]
    .map(column);
    let (design, fold, threads) = (design?, fold?, threads?);
    let [wall, finish, p50, p99, cas, waits] = [wall?, finish?, p50?, p99?, cas?, waits?];
    let pinned = header.iter().position(|&h| h == "pinned");
    // (fold, threads, design) → the columns' values over the runs.
    let mut groups: BTreeMap<(String, usize, String), [Vec<f64>; 6]> = BTreeMap::new();
    for line in lines.filter(|l| !l.is_empty()) {
        let cells: Vec<&str> = line.split(',').collect();
        let n: usize = cells[threads]
            .parse()
            .map_err(|_| format!("bad row {line}"))?;
        let design = match pinned.and_then(|at| cells.get(at)) {
            Some(&"1") => format!("{}-pinned", cells[design]),
            _ => cells[design].to_string(),
        };
        let group = groups
            .entry((cells[fold].to_string(), n, design))
            .or_default();
        for (values, at) in group.iter_mut().zip([wall, finish, p50, p99, cas, waits]) {
            if let Ok(v) = cells[at].parse::<f64>() {
                values.push(v);
            }
        }
    }
    let memory = memory_table(&header, csv)?;
    let mut rng = Rng::new(seed);
    let mut out = format!(
        "Medians over the runs with bootstrap 95 % confidence intervals ({resamples} \
         resamples, seed {seed}).\n\n\
         | fold | threads | design | runs | wall ms | finish ms | p50 save ns | p99 save ns | \
         failed CAS | shard lock waits |\n|---|---:|---|---:|---|---|---|---|---:|---:|\n"
    );
    let mut plot_data = String::from("# fold threads design wall_ms lo hi finish_ms lo hi\n");
    for ((fold, threads, design), [wall, finish, p50, p99, cas, waits]) in &groups {
        let [wall_e, finish_e, p50_e, p99_e] =
            [wall, finish, p50, p99].map(|values| estimate(values, resamples, &mut rng));
        out += &format!(
            "| {fold} | {threads} | {design} | {} | {} | {} | {} | {} | {} | {} |\n",
            wall.len(),
            cell(wall_e, 1e6, 2),
            cell(finish_e, 1e6, 2),
            cell(p50_e, 1.0, 0),
            cell(p99_e, 1.0, 0),
            median(&mut cas.clone()),
            median(&mut waits.clone()),
        );
        if let (Some(w), Some(f)) = (wall_e, finish_e) {
            plot_data += &format!(
                "{fold} {threads} {design} {:.4} {:.4} {:.4} {:.4} {:.4} {:.4}\n",
                w[0] / 1e6,
                w[1] / 1e6,
                w[2] / 1e6,
                f[0] / 1e6,
                f[1] / 1e6,
                f[2] / 1e6
            );
        }
    }
    Ok(Summary {
        markdown: out + &memory,
        plot_data,
    })
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
    let mut rows: BTreeMap<(String, usize, String), Vec<String>> = BTreeMap::new();
    for line in csv.lines().skip(1).filter(|l| !l.is_empty()) {
        let cells: Vec<&str> = line.split(',').collect();
        let n: usize = cells[threads]
            .parse()
            .map_err(|_| format!("bad row {line}"))?;
        let key = (cells[fold].to_string(), n, cells[design].to_string());
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
         | fold | threads | design | total | shared index | per-owner indexes | records | \
         slack | per-owner bookkeeping | fold heap |\n\
         |---|---:|---|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for ((fold, threads, design), kib) in rows {
        out += &format!("| {fold} | {threads} | {design} | {} |\n", kib.join(" | "));
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
            table
                .ends_with("| trivial | 2 | shared | 10.0 | 2.0 | 0.0 | 4.0 | 1.0 | 1.0 | 2.0 |\n"),
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
        let table = summarize(csv, 100, 1).unwrap().markdown;
        assert!(
            table.contains("| trivial | 2 | shared | 1 | 1.00 [1.00, 1.00] |"),
            "{table}"
        );
        assert!(
            table.contains("| trivial | 2 | shared-pinned | 1 | 3.00 [3.00, 3.00] |"),
            "{table}"
        );
    }

    #[test]
    fn summary_groups_rows_and_skips_empty_latency() {
        let csv = "design,fold,threads,run,saves,work_ns,wall_ns,finish_ns,p50_ns,p99_ns,\
                   max_ns,cas_failures,lock_waits,folds\n\
                   shared,trivial,2,1,10,0,1000000,500000,,,,3,0,4\n\
                   shared,trivial,2,2,10,0,3000000,500000,,,,1,0,4\n";
        let summary = summarize(csv, 100, 1).unwrap();
        let table = summary.markdown;
        assert!(
            !table.contains("Memory"),
            "no memory columns, no memory table"
        );
        assert!(
            table.contains(
                "| trivial | 2 | shared | 2 | 2.00 [1.00, 3.00] | 0.50 [0.50, 0.50] | – | – | 2 | 0 |"
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
}
