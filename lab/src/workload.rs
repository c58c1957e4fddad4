//! Workloads: dealing a trace's saves to N replay threads the way the pipeline deals batches
//! to workers, and generating parametric traces (functions, skew, spread over batches, batch
//! size) when a real trace does not cover the case to study.

use std::path::PathBuf;

use dwarf2btf::functions::trace::{SaveRecord, SaveTrace};

use dwarf2btf::rng::Rng;

/// Per thread, the indexes of the trace records it saves, in order: batch `b` goes to thread
/// `b % threads` (as workers claim batches in turn when they take equally long), each batch's
/// saves in their recorded order, a thread's batches ascending. A batch is one CU range, so
/// the CU locality of the recorded run is kept; which functions get several owners follows
/// from it, as in the pipeline at `-j threads`.
pub fn deal(trace: &SaveTrace, threads: usize) -> Vec<Vec<u32>> {
    let threads = threads.max(1);
    let batches = trace.records.iter().map(|r| r.batch + 1).max().unwrap_or(0);
    let mut by_batch = vec![Vec::new(); batches as usize];
    for (i, r) in (0..).zip(&trace.records) {
        by_batch[r.batch as usize].push(i);
    }
    let mut plan = vec![Vec::new(); threads];
    for (b, saves) in by_batch.into_iter().enumerate() {
        plan[b % threads].extend(saves);
    }
    plan
}

/// A parametric workload (`dwarf2btf-lab generate`).
#[derive(clap::Args)]
pub struct Params {
    /// Where to write the trace.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// ELF functions (table entries).
    #[arg(long, default_value_t = 42_264)]
    pub functions: u32,
    /// Saves in all.
    #[arg(long, default_value_t = 54_619)]
    pub saves: u32,
    /// Zipf exponent of the functions' popularity: 0 spreads the saves evenly over the
    /// functions; larger values give a few functions many instances (more owners per list).
    #[arg(long, default_value_t = 0.0)]
    pub skew: f64,
    /// Batches a function's instances may land in (CU locality): 1 keeps every instance of a
    /// function in one batch (one owner), larger values spread them over up to that many
    /// random batches (up to that many owners).
    #[arg(long, default_value_t = 1)]
    pub spread: u32,
    /// Saves per batch (a batch is what one thread saves in a row).
    #[arg(long, default_value_t = 400)]
    pub batch_saves: u32,
    /// Random seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

/// The trace of `params`' workload: each save picks a function by Zipf rank, and a batch among
/// the function's `spread` batches (drawn once per function); each batch's saves are then
/// shuffled, and the DWARF order of an instance is (its batch, its position in the batch).
/// Times are the save's position; no durations (they are the replay's to measure). Each
/// function has one prototype (its hash is its entry), two parameters of 4-byte names.
pub fn generate(params: &Params) -> SaveTrace {
    let mut rng = Rng::new(params.seed);
    let functions = params.functions.max(1);
    let batches = params.saves.div_ceil(params.batch_saves.max(1)).max(1);
    // Cumulative Zipf weights, for sampling by binary search.
    let mut cumulative = Vec::with_capacity(functions as usize);
    let mut total = 0.0;
    for rank in 1..=functions {
        total += 1.0 / f64::from(rank).powf(params.skew);
        cumulative.push(total);
    }
    // Function ranks are scattered over the entries (popular functions are not neighbours).
    let mut entry_of: Vec<u32> = (0..functions).collect();
    rng.shuffle(&mut entry_of);
    let mut homes: Vec<Vec<u32>> = vec![Vec::new(); functions as usize];
    let mut by_batch: Vec<Vec<u32>> = vec![Vec::new(); batches as usize];
    for _ in 0..params.saves {
        let x = rng.unit() * total;
        let rank = cumulative
            .partition_point(|&c| c <= x)
            .min(functions as usize - 1);
        let home = &mut homes[rank];
        let batch = if (home.len() as u32) < params.spread.max(1) {
            let b = rng.below(batches as usize) as u32;
            home.push(b);
            b
        } else {
            home[rng.below(home.len())]
        };
        by_batch[batch as usize].push(entry_of[rank]);
    }
    let mut records = Vec::with_capacity(params.saves as usize);
    for (batch, mut entries) in (0..).zip(by_batch) {
        rng.shuffle(&mut entries);
        for (pos, entry) in (0..).zip(entries) {
            records.push(SaveRecord {
                start_ns: records.len() as u64,
                entry,
                order: (batch, pos),
                batch,
                params: 2,
                name_bytes: 8,
                sig_bytes: 7,
                proto: u64::from(entry),
                ..SaveRecord::default()
            });
        }
    }
    SaveTrace {
        records,
        ..SaveTrace::new(functions, 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(batch: u32, entry: u32) -> SaveRecord {
        SaveRecord {
            entry,
            order: (batch, entry),
            batch,
            ..SaveRecord::default()
        }
    }

    #[test]
    fn deal_keeps_batches_whole_and_in_order() {
        let trace = SaveTrace {
            entries: 10,
            owners: 2,
            records: vec![
                record(1, 5),
                record(0, 1),
                record(2, 7),
                record(1, 6),
                record(0, 2),
            ],
            ..SaveTrace::default()
        };
        assert_eq!(deal(&trace, 2), [vec![1, 4, 2], vec![0, 3]]);
        assert_eq!(deal(&trace, 1), [vec![1, 4, 0, 3, 2]]);
        assert_eq!(deal(&trace, 4), [vec![1, 4], vec![0, 3], vec![2], vec![]]);
    }

    fn params(skew: f64, spread: u32) -> Params {
        Params {
            out: PathBuf::new(),
            functions: 1000,
            saves: 20_000,
            skew,
            spread,
            batch_saves: 100,
            seed: 7,
        }
    }

    /// The most owners any function gets when the trace is dealt to `threads` threads.
    fn max_owners(trace: &SaveTrace, threads: usize) -> usize {
        let mut owners = vec![std::collections::BTreeSet::new(); trace.entries as usize];
        for (thread, saves) in deal(trace, threads).iter().enumerate() {
            for &i in saves {
                owners[trace.records[i as usize].entry as usize].insert(thread);
            }
        }
        owners.iter().map(|o| o.len()).max().unwrap_or(0)
    }

    #[test]
    fn generated_workloads_follow_their_parameters() {
        let local = generate(&params(0.0, 1));
        assert_eq!(local.records.len(), 20_000);
        assert!(local.records.iter().all(|r| r.entry < 1000));
        assert_eq!(max_owners(&local, 8), 1, "spread 1: one batch per function");
        let spread = generate(&params(0.0, 8));
        assert!(max_owners(&spread, 8) > 1);
        // Skew concentrates the saves: the most saved function gets far more than 20,000/1000.
        let skewed = generate(&params(1.2, 1));
        let mut counts = vec![0u32; 1000];
        skewed
            .records
            .iter()
            .for_each(|r| counts[r.entry as usize] += 1);
        assert!(
            *counts.iter().max().unwrap() > 1000,
            "{:?}",
            counts.iter().max()
        );
        // Deterministic in the seed.
        assert_eq!(generate(&params(1.2, 4)), generate(&params(1.2, 4)));
    }
}
