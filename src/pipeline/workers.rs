//! The encoding's threads: at most one worker per CPU claims batches of CUs, encodes each as
//! its owner (`b % N`), saves the functions' instances through that owner's saver in batch
//! order, and sends the chunk to the main thread, which appends the chunks strictly in batch
//! order. A gate keeps the workers a few batches ahead of the merge, which bounds memory.

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Instant;

use parking_lot::{Condvar, Mutex};

use super::memory::DwarfPages;
use super::owners::{BoxedSaver, Owners};
use crate::btf::store::Store;
use crate::btf::Btf;
use crate::config::Config;
use crate::dwarf::types::TypesScratch;
use crate::encode::chunk::{Chunk, EncodeContext, FoundFunction};
use crate::encode::concat::Concat;
use crate::encode::variables::PendingSecinfo;
use crate::error::{Error, Result};
use crate::functions::fold::FuncSummary;
use crate::functions::instance::{save_instance, FuncInstance};
use crate::functions::signature::SignatureParts;
use crate::functions::table::dispatch::WithTable;
use crate::functions::table::TableStats;
use crate::functions::table::{self, FuncTable, Owner, TableMemory};
use crate::functions::trace::{Recorder, SaveTrace};
use crate::functions::watch::FuncWatch;
use crate::measure::{bump, WorkerTimes};
use crate::progress::Progress;

/// CUs per batch: small enough to balance 2–64 workers over the kernel's ~2,200 CUs and to
/// keep the batches in flight small (their raw records and the DWARF pages they touch stand
/// under the encoding's peak: 8 rather than 16 took the reference's -j2 peak from 58–60 to
/// 54–55 MiB at the same time), large enough that the per-chunk overhead stays negligible.
pub const BATCH_CUS: usize = 8;

/// The concatenated chunks and what the final pass needs.
pub(super) struct Merged {
    pub(super) btf: Btf,
    /// The CUs' records, which `btf` holds (see [`Btf::hold_in_store`]).
    pub(super) store: Store,
    pub(super) chunk_offsets: Vec<u32>,
    pub(super) secinfos: Vec<PendingSecinfo>,
    pub(super) groups: Vec<Vec<FuncSummary>>,
    pub(super) cus: usize,
    pub(super) cus_skipped: usize,
    pub(super) chunk_messages: Vec<String>,
    pub(super) workers: WorkerTimes,
    pub(super) table: TableStats,
    /// Every save, when the run records them (`--trace-saves`).
    pub(super) saves: Option<SaveTrace>,
}

/// The encoding of every batch with the run's table design ([`with_design`] picks it): the
/// workers, and the main thread appending their chunks in batch order to `dst` (empty, or
/// split on a base; its records go into the store beside it, which holds the base's).
pub(super) struct Batches<'b, 'a, 'c> {
    pub(super) ctx: &'b EncodeContext<'a, 'c>,
    pub(super) config: &'b Config,
    pub(super) dst: (Btf, Store),
    /// Told the CUs done.
    pub(super) progress: &'b Progress,
    /// Told the batches merged.
    pub(super) dwarf: &'b DwarfPages<'b>,
    pub(super) watch: Option<&'b dyn FuncWatch>,
}

impl<'a> WithTable<FuncSummary> for Batches<'_, 'a, '_> {
    type Output = Result<Merged>;

    fn run<T: FuncTable<FuncSummary>>(self) -> Result<Merged> {
        let Batches {
            ctx,
            config,
            dst: (dst, store),
            progress,
            dwarf,
            watch,
        } = self;
        let n_cus = ctx.headers.len();
        let batches: Vec<Range<usize>> = (0..n_cus)
            .step_by(BATCH_CUS)
            .map(|s| s..(s + BATCH_CUS).min(n_cus))
            .collect();
        let jobs = config.jobs.clamp(1, batches.len().max(1));
        let mut table = T::new(ctx.funcs.len(), jobs);
        let next = AtomicUsize::new(0);
        let failed = AtomicBool::new(false);
        // More threads than CPUs would only interleave more batches' working sets (and keep more
        // thread stacks and allocator caches resident): -j sets the owners, the table's dimension,
        // and batch `b` is encoded as owner `b % jobs` by whichever of at most one thread per CPU
        // claims it, so which owner saved what does not depend on scheduling either.
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let threads = jobs.min(cpus);
        // Batches in flight beyond what the CPUs can run add memory, not speed: workers past
        // threads+1 batches ahead of the merge wait (one batch per thread, and the one being
        // merged). On the 7.3 kernel at -j2 that is 1.5 MiB lower than 2×threads+2, in the
        // same wall time.
        let window = Gate::new(threads + 1);
        let (tx, rx) = mpsc::channel::<(usize, Result<Chunk>)>();
        let mut merged = Merged {
            btf: dst,
            store,
            chunk_offsets: vec![0; batches.len()],
            secinfos: Vec::new(),
            groups: Vec::new(),
            cus: 0,
            cus_skipped: 0,
            chunk_messages: Vec::new(),
            workers: WorkerTimes::default(),
            table: TableStats::default(),
            saves: None,
        };
        let recorder = config
            .trace_saves
            .then(|| Recorder::new(ctx.funcs.len(), jobs));
        // Each owner's saver, with the owner's batches in batch order. Whether to record is
        // decided here, once per owner.
        let savers = Owners::new((0..jobs as Owner).map(|owner| {
            let saver = table.saver(owner);
            match &recorder {
                None => Box::new(saver) as BoxedSaver<'_, FuncSummary>,
                Some(r) => Box::new(r.traced(saver, owner)),
            }
        }));
        let signature_parts = SignatureParts::default();
        let outcome = std::thread::scope(|s| -> Result<()> {
            for _ in 0..threads {
                let worker = Worker {
                    ctx,
                    watch,
                    next: &next,
                    failed: &failed,
                    window: &window,
                    batches: &batches,
                    savers: &savers,
                    signature_parts: &signature_parts,
                    tx: tx.clone(),
                };
                s.spawn(move || worker.run());
            }
            drop(tx);
            let mut pending = BTreeMap::new();
            let mut concat = Concat::default();
            let mut expected = 0usize;
            for (b, chunk) in rx {
                pending.insert(b, chunk);
                while let Some(chunk) = pending.remove(&expected) {
                    let chunk = match chunk {
                        Ok(c) => c,
                        Err(e) => {
                            failed.store(true, Ordering::Relaxed);
                            window.release_all();
                            return Err(e);
                        }
                    };
                    let offset = concat.append(
                        &mut merged.btf,
                        &mut merged.store,
                        &chunk.btf,
                        chunk.index_local,
                    )?;
                    merged.chunk_offsets[expected] = offset;
                    merged
                        .secinfos
                        .extend(chunk.secinfos.iter().map(|p| PendingSecinfo {
                            var_id: p.var_id + offset,
                            ..*p
                        }));
                    merged.cus += chunk.cus;
                    merged.cus_skipped += chunk.cus_skipped;
                    merged.workers += chunk.times;
                    merged.chunk_messages.extend(chunk.messages);
                    expected += 1;
                    window.advance(expected);
                    progress.cus_done(merged.cus + merged.cus_skipped);
                    dwarf.batches_merged(expected, batches.len());
                }
            }
            if expected != batches.len() {
                return Err(Error::WorkerStopped { batch: expected });
            }
            Ok(())
        });
        outcome?;
        drop(savers);
        let contention = table.contention();
        let memory = if config.stats {
            table.memory()
        } else {
            TableMemory::default()
        };
        let finish = Instant::now();
        merged.groups = table.finish();
        merged.table = table_stats(&merged.groups, jobs, contention);
        merged.table.memory = memory;
        merged.table.finish = finish.elapsed().as_secs_f64();
        merged.saves = recorder.map(Recorder::into_trace);
        Ok(merged)
    }
}

/// What one worker thread needs: it claims batches, encodes them as their owners, saving
/// their functions' instances through the owner's saver, and sends the chunks to the merge.
struct Worker<'w, 'a, 'c, 's> {
    ctx: &'w EncodeContext<'a, 'c>,
    watch: Option<&'w dyn FuncWatch>,
    next: &'w AtomicUsize,
    failed: &'w AtomicBool,
    window: &'w Gate,
    batches: &'w [Range<usize>],
    savers: &'w Owners<'s, FuncSummary>,
    /// Where the saved instances' signature forms are numbered.
    signature_parts: &'w SignatureParts,
    tx: mpsc::Sender<(usize, Result<Chunk>)>,
}

impl<'a> Worker<'_, 'a, '_, '_> {
    /// Encodes batches until none is left, batch `b` as owner `b % owners`.
    fn run(self) {
        let mut scratch = TypesScratch::default();
        loop {
            let b = self.next.fetch_add(1, Ordering::Relaxed);
            if b >= self.batches.len() || self.failed.load(Ordering::Relaxed) {
                break;
            }
            self.window.wait_for(b);
            let mut instances = Vec::new();
            let mut found = |found: FoundFunction<'_, 'a>| instances.push(self.instance(found));
            let mut chunk =
                self.ctx
                    .encode_batch(self.batches[b].clone(), b as u32, &mut scratch, &mut found);
            if let Ok(chunk) = &mut chunk {
                let save = || self.savers.save(b, instances);
                self.ctx.timed(&mut chunk.times.save, save);
            }
            if self.tx.send((b, chunk)).is_err() {
                break;
            }
        }
    }

    /// The instance to save for `found`, with its entry in the ELF functions table.
    fn instance(&self, found: FoundFunction<'_, 'a>) -> (u32, FuncInstance) {
        let entry = found.entry;
        let watch = self.watch.filter(|w| w.watches(found.elf.name.as_bytes()));
        let instance = save_instance(found, self.signature_parts);
        if let Some(watch) = watch {
            watch.saved(&instance);
        }
        (entry, instance)
    }
}

/// The function table's counters, read from the per-owner folds `finish` returned.
fn table_stats(
    groups: &[Vec<FuncSummary>],
    owners: usize,
    contention: table::Contended,
) -> TableStats {
    let mut stats = TableStats {
        nodes_per_owner: vec![0; owners],
        contention,
        ..TableStats::default()
    };
    for folds in groups {
        stats.held_bytes += (std::mem::size_of_val(folds)
            + folds.capacity() * std::mem::size_of::<FuncSummary>())
            as u64;
        bump(&mut stats.lengths, folds.len());
        let instances: u32 = folds.iter().map(FuncSummary::count).sum();
        bump(&mut stats.instances, instances as usize);
        for fold in folds {
            stats.nodes_per_owner[fold.first().head.chunk as usize % owners] += 1;
            stats.saves += u64::from(fold.count());
            stats.held += fold.held() as u64;
            stats.held_bytes += fold.heap_bytes() as u64;
        }
    }
    stats
}

/// Lets batch `b` through once `b < passed + size`, `passed` only growing (the batch window:
/// passed = batches merged).
/// A waiter sleeps on its batch's slot, so an advance wakes only the batches it lets through:
/// with 64 workers on 2 CPUs, waking every waiter at every step burnt a tenth of the CPU.
struct Gate {
    size: usize,
    passed: Mutex<usize>,
    slots: Box<[Condvar]>,
}

/// Condition variables of a [`Gate`]; batch `b` waits on slot `b % GATE_SLOTS`.
const GATE_SLOTS: usize = 64;

impl Gate {
    fn new(size: usize) -> Self {
        Gate {
            size,
            passed: Mutex::new(0),
            slots: (0..GATE_SLOTS).map(|_| Condvar::new()).collect(),
        }
    }

    fn wait_for(&self, batch: usize) {
        let mut passed = self.passed.lock();
        while batch >= *passed + self.size {
            self.slots[batch % GATE_SLOTS].wait(&mut passed);
        }
    }

    /// Raises `passed` to `to` (if higher) and wakes the batches that lets through.
    fn advance(&self, to: usize) {
        let from = {
            let mut passed = self.passed.lock();
            if to <= *passed {
                return;
            }
            std::mem::replace(&mut *passed, to)
        };
        let through = from.saturating_add(self.size)..to.saturating_add(self.size);
        if through.len() >= GATE_SLOTS {
            self.slots.iter().for_each(|c| {
                c.notify_all();
            });
        } else {
            through.for_each(|b| {
                self.slots[b % GATE_SLOTS].notify_all();
            });
        }
    }

    fn release_all(&self) {
        self.advance(usize::MAX / 2);
    }
}
