//! What a trace says about its own run (`dwarf2btf-lab inspect`): how long the saves took in
//! the recorded run, and how close in time two owners came to saving into the same function,
//! which bounds the contention the shared table could have met; and, for thread counts to
//! replay at, how many owners its functions get when it is dealt to that many threads.

use std::collections::BTreeMap;

use dwarf2btf::functions::trace::SaveTrace;

use crate::workload::deal;

/// Windows, in ns, within which two saves of one function by different workers are counted.
const WINDOWS_NS: [u64; 4] = [1_000, 10_000, 100_000, 1_000_000];

/// Per thread count in `threads`: the mean and the largest number of owners of a saved
/// function when `trace` is dealt to that many threads (the length of its shared list).
pub fn owners(trace: &SaveTrace, threads: &[usize]) -> String {
    let mut out = String::new();
    for &n in threads {
        let mut owners: BTreeMap<u32, u64> = BTreeMap::new();
        let mut last = vec![usize::MAX; trace.entries as usize];
        for (thread, saves) in deal(trace, n).iter().enumerate() {
            for &i in saves {
                let entry = trace.records[i as usize].entry;
                if last[entry as usize] != thread {
                    last[entry as usize] = thread;
                    *owners.entry(entry).or_default() += 1;
                }
            }
        }
        let total: u64 = owners.values().sum();
        out += &format!(
            "dealt to {n} threads: {:.2} owners per saved function on average, at most {}\n",
            total as f64 / owners.len().max(1) as f64,
            owners.values().max().unwrap_or(&0)
        );
    }
    out
}

/// The report on `trace`, as text.
pub fn inspect(trace: &SaveTrace) -> String {
    let records = &trace.records;
    let mut durations: Vec<u32> = records.iter().map(|r| r.duration_ns).collect();
    durations.sort_unstable();
    let q = |p: f64| durations[((durations.len() - 1) as f64 * p) as usize];
    let span = match (records.first(), records.last()) {
        (Some(a), Some(b)) => b.start_ns - a.start_ns,
        _ => return "empty trace\n".into(),
    };
    let mut per_worker = vec![0u64; trace.owners as usize];
    let mut threads = std::collections::BTreeSet::new();
    let mut cpus = std::collections::BTreeSet::new();
    // Per entry, its saves' (start, end, worker), in start order (the trace's order).
    let mut by_entry: BTreeMap<u32, Vec<(u64, u64, u16)>> = BTreeMap::new();
    for r in records {
        if let Some(n) = per_worker.get_mut(usize::from(r.owner)) {
            *n += 1;
        }
        threads.insert(r.thread);
        cpus.insert(r.cpu);
        let end = r.start_ns + u64::from(r.duration_ns);
        by_entry
            .entry(r.entry)
            .or_default()
            .push((r.start_ns, end, r.owner));
    }
    let shared = by_entry
        .values()
        .filter(|saves| saves.iter().any(|s| s.2 != saves[0].2))
        .count();
    let (mut near, mut overlapping) = ([0u64; WINDOWS_NS.len()], 0u64);
    for saves in by_entry.values() {
        for (i, a) in saves.iter().enumerate() {
            for b in &saves[i + 1..] {
                let gap = b.0 - a.0;
                if gap > WINDOWS_NS[WINDOWS_NS.len() - 1] {
                    break;
                }
                if a.2 == b.2 {
                    continue;
                }
                for (n, &w) in near.iter_mut().zip(&WINDOWS_NS) {
                    *n += u64::from(gap <= w);
                }
                overlapping += u64::from(b.0 <= a.1);
            }
        }
    }
    let near: Vec<String> = near
        .iter()
        .zip(WINDOWS_NS)
        .map(|(n, w)| format!("{n} within {} µs", w / 1000))
        .collect();
    format!(
        "recorded by commit {}, pipeline version {}, on {} CPUs; saves ran on {} OS threads \
         and CPUs {:?}\n\
         {} saves into {} of {} functions by {} owners {:?}, over {:.3} s\n\
         save duration in the recorded run (ns): p50 {}, p90 {}, p99 {}, max {}\n\
         functions saved by more than one owner: {shared}\n\
         pairs of saves of one function by different owners: {}; overlapping in time: \
         {overlapping}\n",
        if trace.commit.is_empty() {
            "unknown"
        } else {
            &trace.commit
        },
        trace.pipeline,
        trace.cpus,
        threads.len(),
        cpus,
        records.len(),
        by_entry.len(),
        trace.entries,
        trace.owners,
        per_worker,
        span as f64 / 1e9,
        q(0.5),
        q(0.9),
        q(0.99),
        q(1.0),
        near.join(", "),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use dwarf2btf::functions::trace::SaveRecord;

    fn save(start_ns: u64, duration_ns: u32, entry: u32, owner: u16) -> SaveRecord {
        SaveRecord {
            start_ns,
            duration_ns,
            entry,
            owner,
            thread: u32::from(owner),
            ..SaveRecord::default()
        }
    }

    #[test]
    fn counts_near_and_overlapping_saves_of_different_workers() {
        let trace = SaveTrace {
            entries: 3,
            owners: 2,
            records: vec![
                save(0, 600, 0, 0),
                save(500, 10, 0, 1),
                save(600, 10, 1, 0),
                save(700, 10, 1, 0),
                save(5_000, 10, 0, 1),
                save(2_000_000, 10, 2, 1),
            ],
            ..SaveTrace::default()
        };
        let report = inspect(&trace);
        assert!(
            report.contains("6 saves into 3 of 3 functions by 2 owners [3, 3]"),
            "{report}"
        );
        assert!(report.contains("more than one owner: 1\n"), "{report}");
        assert!(
            report.contains("owners: 1 within 1 µs, 2 within 10 µs, 2 within 100 µs, 2 within 1000 µs; overlapping in time: 1\n"),
            "{report}"
        );
        assert_eq!(
            owners(&trace, &[1, 2]),
            "dealt to 1 threads: 1.00 owners per saved function on average, at most 1\n\
             dealt to 2 threads: 1.00 owners per saved function on average, at most 1\n"
        );
    }
}
