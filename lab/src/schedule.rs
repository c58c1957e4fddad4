//! The pipeline's save schedule, rebuilt from a trace: which owner saves which records, in
//! which bursts, and how much work comes before each save.
//!
//! - **Units and owners.** With `N` owners (`-jN`) a unit is a batch and batch `b` belongs to
//!   owner `b mod N`; in the one-owner-per-CU regime a unit is a compile unit and each CU is
//!   an owner of its own (the CU index). Units are claimed in order by whichever replay thread
//!   is free; a unit's saves are one burst, made once its work is done, and each owner saves
//!   its units in unit order (a unit done before its owner's earlier one waits for it,
//!   without blocking its thread), as the pipeline does (`src/pipeline/workers.rs`).
//! - **Work.** Each record's gap is the time from the end of the previous save of the same
//!   OS thread (or from the workers' start) to the start of this one, as recorded: for a
//!   burst's first save that is the encoding before it, for the others the loop between two
//!   saves. A unit's work is its first save's gap, spun before the unit is saved; the other
//!   gaps are spun inside the burst. `scale` multiplies every gap (0: saves back to back).

use dwarf2btf::functions::trace::SaveTrace;

/// How saves map to owners.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mapping {
    /// `-jN`: a unit is a batch, owner = batch mod N.
    Batches(usize),
    /// One owner per compile unit: a unit is a CU, its own owner.
    PerCu,
}

impl Mapping {
    /// The CSV's name of the mapping: `batch` or `cu`.
    pub fn name(self) -> &'static str {
        match self {
            Mapping::Batches(_) => "batch",
            Mapping::PerCu => "cu",
        }
    }
}

/// One unit: a burst of saves by one owner.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Unit {
    /// The owner that saves it.
    pub owner: usize,
    /// Work before the burst, ns.
    pub work_ns: u64,
    /// The trace's records it saves, in recorded order.
    pub saves: Vec<u32>,
    /// Work before each save of the burst, ns (the first is 0: that is `work_ns`).
    pub gaps: Vec<u64>,
}

/// A trace's units, in claim order, and their owners' units.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// The units, in the order threads claim them.
    pub units: Vec<Unit>,
    /// Per owner, its units' indexes, ascending (the order it saves them in).
    pub by_owner: Vec<Vec<usize>>,
}

/// Per record, its recorded gap (see the module docs), ns.
fn gaps(trace: &SaveTrace) -> Vec<u64> {
    let mut last_end: std::collections::HashMap<u32, u64> = Default::default();
    trace
        .records
        .iter()
        .map(|r| {
            let end = r.start_ns + u64::from(r.duration_ns);
            let before = last_end.insert(r.thread, end).unwrap_or(0);
            r.start_ns.saturating_sub(before)
        })
        .collect()
}

/// The plan of `trace` under `mapping`, gaps multiplied by `scale`.
pub fn plan(trace: &SaveTrace, mapping: Mapping, scale: f64) -> Plan {
    let gap = gaps(trace);
    let key = |i: usize| match mapping {
        Mapping::Batches(_) => trace.records[i].batch,
        Mapping::PerCu => trace.records[i].order.0,
    };
    let count = (0..trace.records.len())
        .map(|i| key(i) + 1)
        .max()
        .unwrap_or(0) as usize;
    let owners = match mapping {
        Mapping::Batches(n) => n.max(1),
        Mapping::PerCu => count.max(1),
    };
    let mut units: Vec<Unit> = (0..count)
        .map(|u| Unit {
            owner: u % owners,
            ..Unit::default()
        })
        .collect();
    let scaled = |ns: u64| (ns as f64 * scale).round() as u64;
    for (i, &g) in gap.iter().enumerate() {
        let unit = &mut units[key(i) as usize];
        if unit.saves.is_empty() {
            unit.work_ns = scaled(g);
            unit.gaps.push(0);
        } else {
            unit.gaps.push(scaled(g));
        }
        unit.saves.push(i as u32);
    }
    let mut by_owner = vec![Vec::new(); owners];
    for (u, unit) in units.iter().enumerate() {
        by_owner[unit.owner].push(u);
    }
    Plan { units, by_owner }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dwarf2btf::functions::trace::SaveRecord;

    fn record(start_ns: u64, batch: u32, cu: u32, thread: u32) -> SaveRecord {
        SaveRecord {
            start_ns,
            duration_ns: 10,
            batch,
            order: (cu, 0),
            thread,
            ..SaveRecord::default()
        }
    }

    fn trace() -> SaveTrace {
        SaveTrace {
            records: vec![
                record(100, 0, 0, 1),
                record(120, 0, 1, 1),
                record(150, 1, 2, 2),
                record(400, 2, 3, 1),
                record(420, 2, 3, 1),
            ],
            ..SaveTrace::default()
        }
    }

    #[test]
    fn batches_go_to_owner_batch_mod_n_with_the_recorded_gaps() {
        let plan = plan(&trace(), Mapping::Batches(2), 1.0);
        let owners: Vec<usize> = plan.units.iter().map(|u| u.owner).collect();
        assert_eq!(owners, [0, 1, 0]);
        assert_eq!(plan.by_owner, [vec![0, 2], vec![1]]);
        // Thread 1: 100 from the start, 10 after its first save, 270 after its second.
        assert_eq!(plan.units[0].work_ns, 100);
        assert_eq!(plan.units[0].gaps, [0, 10]);
        assert_eq!(plan.units[1].work_ns, 150);
        assert_eq!(plan.units[2].work_ns, 270);
        assert_eq!(plan.units[2].saves, [3, 4]);
        let half = super::plan(&trace(), Mapping::Batches(2), 0.5);
        assert_eq!(half.units[2].work_ns, 135);
        assert_eq!(half.units[2].gaps, [0, 5]);
    }

    #[test]
    fn per_cu_gives_each_cu_an_owner_of_its_own() {
        let plan = plan(&trace(), Mapping::PerCu, 1.0);
        assert_eq!(plan.units.len(), 4);
        assert_eq!(plan.by_owner, [vec![0], vec![1], vec![2], vec![3]]);
        assert_eq!(plan.units[1].work_ns, 10);
        assert_eq!(plan.units[3].saves, [3, 4]);
    }
}
