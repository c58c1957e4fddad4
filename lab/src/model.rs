//! The contention model (`dwarf2btf-lab model`): what a trace's saves would meet on N cores.
//!
//! A trace is laid out on N cores, one worker per core, and its saves are replayed in time
//! order against a model of each shared structure:
//!
//! - **timing.** `recorded`: the pipeline's schedule: batches are claimed in order by the
//!   first free core, each batch takes as long as it took in the recorded run (from its
//!   first save to the same OS thread's next batch's first save), and its saves keep their
//!   recorded offsets within it; cores run at the recorded speed. `--save-ns D`: the replay's
//!   schedule: batch `b` to core `b mod N`, saves back to back, one every `D` ns.
//! - **CAS conflicts (shared).** A push by core `c` onto an entry's list fails once for each
//!   push by another core onto the same list in the `window` ns before it (the time from
//!   loading the head to the compare-and-swap: the walk, the node's allocation and writing).
//! - **Cache-line transfers (shared).** A save reads the entry's head (8 heads to a 64-byte
//!   line), reads the link of every node before its own, then writes its node's fold, or
//!   writes a new node, its owner's arena metadata and the head. A line moves between cores
//!   when a core reads a line it does not hold that another core holds, or writes a line
//!   other cores hold (invalidations counted once per write). Caches are unbounded (no
//!   evictions), so only coherence transfers are counted, never capacity misses. Nodes of an
//!   owner are contiguous in its arena (`node_bytes` each: a 16-byte link, then the fold).
//!   `packed` is today's layout (a node's link and fold share lines; arena metadata 32 bytes
//!   per owner, two owners to a line); `padded` gives each fold and each owner's arena
//!   metadata lines of their own (`CachePadded`).
//! - **Shard lock waits (dashmap).** A save holds its entry's shard (dashmap's own shard
//!   function over the Fx hash) for `hold` ns; a save that finds its shard held by another
//!   core waits (counted) and queues behind it. Counted for 4 × cores shards (the table's
//!   rule with one saver per core) and for 8 (dashmap's default on this 2-CPU machine).
//!
//! One CSV row per (cores, window, layout). The model is a model: no caches evict, no core
//! slows down when others share its memory bandwidth, a preempted thread never holds a lock.

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::io::{self, Write};

use dwarf2btf::functions::fold::FuncSummary;
use dwarf2btf::functions::trace::SaveTrace;
use rustc_hash::FxBuildHasher;

use crate::workload::deal;

/// What the model varies.
pub struct ModelSettings {
    /// Core counts (1 to 64).
    pub cores: Vec<usize>,
    /// CAS vulnerability windows, ns.
    pub windows: Vec<u64>,
    /// `None`: the recorded schedule; `Some(d)`: back to back, one save every `d` ns.
    pub save_ns: Option<u64>,
    /// How long a dashmap save holds its shard, ns.
    pub hold_ns: u64,
    /// Take the trace's times, threads and durations as they are (see `main.rs`).
    pub as_recorded: bool,
}

/// The CSV's header; [`model_all`] writes one row per (cores, window, layout).
pub const MODEL_HEADER: &str = "cores,timing,window_ns,layout,saves,pushes,owners_mean,\
                                owners_max,walk_mean,cas_failures,head_transfers,\
                                node_transfers,arena_transfers,transfers_per_save,\
                                lock_waits_4x,lock_waits_8,shards_4x";

/// Bytes of a shared-table node holding a [`FuncSummary`]: a 16-byte link (`next`, `owner`,
/// `entry`) and the fold, 8-byte aligned.
fn node_bytes() -> u64 {
    (16 + std::mem::size_of::<FuncSummary>()).next_multiple_of(8) as u64
}

/// One save laid out on a core: when, which core (= owner), which entry.
#[derive(Clone, Copy)]
struct Event {
    time: u64,
    core: usize,
    entry: u32,
    /// How long the save holds a dashmap shard (and, as recorded, its CAS window).
    hold: u64,
}

/// The trace's saves on `cores` cores, in time order (see the module docs).
fn schedule(trace: &SaveTrace, cores: usize, save_ns: Option<u64>, hold: u64) -> Vec<Event> {
    let mut events = Vec::with_capacity(trace.records.len());
    match save_ns {
        Some(d) => {
            for (core, saves) in deal(trace, cores).iter().enumerate() {
                for (k, &i) in (0..).zip(saves) {
                    let entry = trace.records[i as usize].entry;
                    events.push(Event {
                        time: k * d,
                        core,
                        entry,
                        hold,
                    });
                }
            }
        }
        None => {
            let batches = trace.records.iter().map(|r| r.batch + 1).max().unwrap_or(0);
            let mut by_batch = vec![Vec::new(); batches as usize];
            for r in &trace.records {
                by_batch[r.batch as usize].push(r);
            }
            // Each batch's length: to the same thread's next batch's first save (its last
            // batch: its own span, which leaves out the encoding after its last save).
            let first = |b: &[&dwarf2btf::functions::trace::SaveRecord]| {
                b.iter().map(|r| r.start_ns).min().unwrap_or(0)
            };
            let mut length = vec![0u64; batches as usize];
            let mut last_of_thread: HashMap<u32, usize> = HashMap::new();
            let mut order: Vec<usize> = (0..batches as usize).collect();
            order.sort_by_key(|&b| first(&by_batch[b]));
            for &b in &order {
                let Some(r) = by_batch[b].first() else {
                    continue;
                };
                let span =
                    by_batch[b].iter().map(|r| r.start_ns).max().unwrap_or(0) - first(&by_batch[b]);
                length[b] = span;
                if let Some(prev) = last_of_thread.insert(r.thread, b) {
                    length[prev] = first(&by_batch[b]) - first(&by_batch[prev]);
                }
            }
            let mut free = vec![0u64; cores];
            for (b, saves) in by_batch.iter().enumerate() {
                let core = (0..cores).min_by_key(|&c| (free[c], c)).unwrap_or(0);
                let start = free[core];
                let base = first(saves);
                for r in saves {
                    events.push(Event {
                        time: start + (r.start_ns - base),
                        core,
                        entry: r.entry,
                        hold,
                    });
                }
                free[core] = start + length[b].max(1);
            }
        }
    }
    events.sort_by_key(|e| (e.time, e.core));
    events
}

/// The OS threads of `trace`'s saves, each with the core it gets as recorded (in order of
/// thread id).
fn thread_cores(trace: &SaveTrace) -> HashMap<u32, usize> {
    let mut threads: Vec<u32> = trace.records.iter().map(|r| r.thread).collect();
    threads.sort_unstable();
    threads.dedup();
    threads.into_iter().zip(0..).collect()
}

/// The trace's saves as they were recorded: its thread is the core, its duration the hold.
fn as_recorded(trace: &SaveTrace) -> Vec<Event> {
    let cores = thread_cores(trace);
    let mut events: Vec<Event> = trace
        .records
        .iter()
        .map(|r| Event {
            time: r.start_ns,
            core: cores[&r.thread].min(63),
            entry: r.entry,
            hold: u64::from(r.duration_ns),
        })
        .collect();
    events.sort_by_key(|e| (e.time, e.core));
    events
}

/// Which cores hold each cache line; counts transfers (see the module docs).
#[derive(Default)]
struct Lines {
    holders: HashMap<(u32, u64), u64>,
}

impl Lines {
    /// Core `core` reads `line`: 1 if the line comes from another core's cache.
    fn read(&mut self, line: (u32, u64), core: usize) -> u64 {
        let held = self.holders.entry(line).or_default();
        let bit = 1u64 << core;
        let transfer = u64::from(*held & bit == 0 && *held != 0);
        *held |= bit;
        transfer
    }

    /// Core `core` writes `line`: 1 if other cores held it (they are invalidated).
    fn write(&mut self, line: (u32, u64), core: usize) -> u64 {
        let held = self.holders.entry(line).or_default();
        let bit = 1u64 << core;
        let transfer = u64::from(*held & !bit != 0);
        *held = bit;
        transfer
    }
}

/// Line regions: heads, an owner's nodes (links, and folds when packed), an owner's padded
/// folds, the arena metadata.
const HEADS: u32 = 0;
const ARENA_META: u32 = 1;
const NODES: u32 = 2;
const PADDED_FOLDS: u32 = 2 + 64;

/// What the shared table's model counts for one (cores, window, layout).
#[derive(Default)]
struct SharedCounts {
    pushes: u64,
    walked: u64,
    cas_failures: u64,
    head: u64,
    node: u64,
    arena: u64,
}

/// The shared table's model over `events` (see the module docs); `window` `None` takes each
/// save's own hold as its CAS window.
fn shared(events: &[Event], entries: usize, window: Option<u64>, padded: bool) -> SharedCounts {
    let node = node_bytes();
    let mut counts = SharedCounts::default();
    let mut lines = Lines::default();
    // Per entry: its nodes, newest first: (owner, slot in the owner's arena, push time).
    let mut lists: Vec<Vec<(usize, u64, u64)>> = vec![Vec::new(); entries];
    let mut allocated = [0u64; 64];
    let fold_line = |owner: usize, slot: u64| {
        if padded {
            (PADDED_FOLDS + owner as u32, slot)
        } else {
            (NODES + owner as u32, (slot * node + 16) / 64)
        }
    };
    let link_line = |owner: usize, slot: u64| (NODES + owner as u32, slot * node / 64);
    for e in events {
        let c = e.core;
        let list = &mut lists[e.entry as usize];
        let head = (HEADS, u64::from(e.entry) / 8);
        counts.head += lines.read(head, c);
        let mut own = None;
        for &(owner, slot, _) in list.iter() {
            counts.walked += 1;
            counts.node += lines.read(link_line(owner, slot), c);
            if owner == c {
                own = Some(slot);
                break;
            }
        }
        match own {
            Some(slot) => counts.node += lines.write(fold_line(c, slot), c),
            None => {
                counts.pushes += 1;
                let window = window.unwrap_or(e.hold);
                counts.cas_failures += list
                    .iter()
                    .filter(|&&(owner, _, t)| owner != c && t + window > e.time)
                    .count() as u64;
                let slot = allocated[c];
                allocated[c] += 1;
                counts.node += lines.write(link_line(c, slot), c);
                counts.node += lines.write(fold_line(c, slot), c);
                let meta = if padded {
                    (ARENA_META, c as u64)
                } else {
                    (ARENA_META, c as u64 / 2)
                };
                counts.arena += lines.write(meta, c);
                counts.head += lines.write(head, c);
                list.insert(0, (c, slot, e.time));
            }
        }
    }
    counts
}

/// Saves that find their dashmap shard held by another core, with `shards` shards.
fn lock_waits(events: &[Event], shards: usize) -> u64 {
    let shift = usize::BITS - shards.trailing_zeros();
    let mut busy: Vec<(u64, usize)> = vec![(0, usize::MAX); shards];
    let mut waits = 0;
    for e in events {
        let hash = FxBuildHasher.hash_one(e.entry) as usize;
        let shard = (hash << 7) >> shift;
        let (until, holder) = busy[shard];
        let start = if until > e.time && holder != e.core {
            waits += 1;
            until
        } else {
            e.time
        };
        busy[shard] = (start + e.hold, e.core);
    }
    waits
}

/// Every (cores, window, layout) row for `trace`, as CSV, to `out`.
pub fn model_all(
    trace: &SaveTrace,
    settings: &ModelSettings,
    mut out: impl Write,
) -> io::Result<()> {
    writeln!(out, "{MODEL_HEADER}")?;
    let timing = match (settings.as_recorded, settings.save_ns) {
        (true, _) => "as-recorded".to_string(),
        (false, Some(d)) => format!("back-to-back-{d}ns"),
        (false, None) => "recorded".into(),
    };
    let (cores_list, windows) = if settings.as_recorded {
        (vec![thread_cores(trace).len().max(1)], vec![None])
    } else {
        (
            settings.cores.clone(),
            settings.windows.iter().map(|&w| Some(w)).collect(),
        )
    };
    for cores in cores_list {
        let cores = cores.clamp(1, 64);
        let events = if settings.as_recorded {
            as_recorded(trace)
        } else {
            schedule(trace, cores, settings.save_ns, settings.hold_ns)
        };
        let mut owners: HashMap<u32, u64> = HashMap::new();
        let mut seen = std::collections::HashSet::new();
        for e in &events {
            if seen.insert((e.entry, e.core)) {
                *owners.entry(e.entry).or_default() += 1;
            }
        }
        let owners_mean = seen.len() as f64 / owners.len().max(1) as f64;
        let owners_max = owners.values().max().copied().unwrap_or(0);
        let shards = (4 * cores).next_power_of_two().max(4);
        let waits_4x = lock_waits(&events, shards);
        let waits_8 = lock_waits(&events, 8);
        for &window in &windows {
            for (layout, padded) in [("packed", false), ("padded", true)] {
                let n = shared(&events, trace.entries as usize, window, padded);
                let transfers = n.head + n.node + n.arena;
                let window = window.map_or("own".into(), |w| w.to_string());
                writeln!(
                    out,
                    "{cores},{timing},{window},{layout},{},{},{owners_mean:.3},{owners_max},\
                     {:.3},{},{},{},{},{:.4},{waits_4x},{waits_8},{shards}",
                    events.len(),
                    n.pushes,
                    n.walked as f64 / events.len().max(1) as f64,
                    n.cas_failures,
                    n.head,
                    n.node,
                    n.arena,
                    transfers as f64 / events.len().max(1) as f64,
                )?;
            }
        }
    }
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(time: u64, core: usize, entry: u32) -> Event {
        Event {
            time,
            core,
            entry,
            hold: 100,
        }
    }

    #[test]
    fn pushes_close_in_time_conflict_and_lines_move() {
        // Cores 0 and 1 push onto entry 0 50 ns apart, then core 0 folds into its node.
        let events = [at(0, 0, 0), at(50, 1, 0), at(500, 0, 0)];
        let wide = shared(&events, 1, Some(100), false);
        assert_eq!((wide.pushes, wide.cas_failures), (2, 1));
        assert_eq!(shared(&events, 1, Some(10), false).cas_failures, 0);
        // Core 1 reads the head core 0 wrote (1), writes it (1); core 0 reads it back (1).
        assert_eq!(wide.head, 3);
        // Core 1 reads core 0's link (1); core 0 reads core 1's link (1), then its own (held),
        // then writes its fold, on the line core 1 read with the link (packed: 1).
        assert_eq!(wide.node, 3);
        assert_eq!(
            shared(&events, 1, Some(100), true).node,
            2,
            "padded: the fold's line is apart"
        );
        // Arena metadata: owners 0 and 1 share a line when packed, not when padded.
        assert_eq!(wide.arena, 1);
        assert_eq!(shared(&events, 1, Some(100), true).arena, 0);
    }

    #[test]
    fn one_core_transfers_nothing() {
        let events = [at(0, 0, 0), at(1, 0, 1), at(2, 0, 0), at(3, 0, 9)];
        let n = shared(&events, 10, None, false);
        assert_eq!((n.cas_failures, n.head + n.node + n.arena), (0, 0));
        assert_eq!(lock_waits(&events, 8), 0);
    }

    #[test]
    fn a_held_shard_makes_another_core_wait() {
        // Entries 0 and 0 on different cores, overlapping: one wait; far apart: none.
        assert_eq!(lock_waits(&[at(0, 0, 0), at(10, 1, 0)], 8), 1);
        assert_eq!(lock_waits(&[at(0, 0, 0), at(200, 1, 0)], 8), 0);
        // As recorded, each save's own duration is its window: 50 ns apart, 60 ns long.
        let mut pushes = [at(0, 0, 3), at(50, 1, 3)];
        pushes[1].hold = 60;
        assert_eq!(shared(&pushes, 4, None, false).cas_failures, 1);
        pushes[1].hold = 40;
        assert_eq!(shared(&pushes, 4, None, false).cas_failures, 0);
    }
}
