//! The encoding run: threads, CU scheduling, merge order, dedup, output.
//!
//! ```text
//! ELF ──► ElfFunctions (immutable, shared) ──┐
//!  │                                          ▼
//!  └► CUs ─ batches in DWARF order ─► N workers ─ chunk per batch ─► main thread appends
//!                                      │  function instances          chunks in batch order
//!                                      ▼                                      │
//!                    FuncTable (shared │ dashmap │ save-merge │ private)     ▼
//!                                      └──── after join: final pass (FUNC_PROTO/FUNC, name order)
//!                                                      + DATASECs ─► dedup ─► file (atomic rename)
//! ```
//!
//! Batches are claimed from an atomic counter by at most one worker thread per CPU; batch `b`
//! is encoded as owner `b % N` (N from -j). The main thread appends finished chunks strictly
//! in batch order and frees them, so the output bytes never depend on N, on scheduling, or on
//! the function table design. Workers stay at most a few
//! batches ahead of the merge, which bounds memory. A function watcher given to [`encode`]
//! (`dwarf2btf why`) is shown the functions it watches on their way through.

use std::collections::BTreeMap;
use std::io::Write;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};

use parking_lot::{Condvar, Mutex};
use std::time::Instant;

use crate::btf::distill::distill_base;
use crate::btf::store::Store;
use crate::btf::write::HeaderForm;
use crate::btf::{write, Btf};
use crate::config::Design;
use crate::config::{Config, Output};
use crate::dedup::{dedup_store, store_with_base, DedupOptions};
use crate::dwarf::foreign::UnitIndex;
use crate::dwarf::types::TypesScratch;
use crate::dwarf::units::{unit_headers_releasing, DebugSections};
use crate::encode::chunk::{Chunk, EncodeContext, EncodeWatch, FoundFunction};
use crate::encode::concat::Concat;
use crate::encode::variables::{PendingSecinfo, VarEncoder};
use crate::error::{Error, Result};
use crate::functions::final_pass::{FinalPass, FuncStats};
use crate::functions::fold::FuncSummary;
use crate::functions::instance::{save_instance, FuncInstance};
use crate::functions::table::{self, FuncSaver, FuncTable, Owner, TableMemory};
use crate::functions::trace::{Recorder, SaveTrace};
use crate::functions::watch::FuncWatch;
use crate::input::arch::Arch;
use crate::input::elf::{Elf, Mapped};
use crate::input::kfuncs::collect_kfuncs;
use crate::input::symbols::ElfFunctions;
use crate::output::{elf::write_sections, write_atomic};
use crate::progress::Progress;
use crate::stats::{self, bump, Held, PhaseEnd, RunClock, TableStats, WorkerTimes};

/// CUs per batch: small enough to balance 2–64 workers over the kernel's ~2,200 CUs, large
/// enough that the per-chunk overhead stays negligible.
const BATCH_CUS: usize = 16;

/// What a run did, for the closing line, `--stats` and tests.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    /// The end of each phase, in order: wall and CPU time since the start, memory.
    pub phases: Vec<PhaseEnd>,
    /// The workers' CPU time by activity (zero unless [`Config::stats`]).
    pub workers: WorkerTimes,
    /// The function table's counters.
    pub table: TableStats,
    /// How long each phase of the dedup took, in seconds, in order.
    pub dedup_phases: Vec<(&'static str, f64)>,
    /// The run's large structures and their bytes at their largest.
    pub held: Vec<Held>,
    /// Compile units in `.debug_info`, skipped ones included.
    pub cus: usize,
    /// Compile units skipped for their language (`--lang_exclude`).
    pub cus_skipped: usize,
    /// Types encoded (this BTF's own, base types not counted), before deduplication.
    pub types_before_dedup: u32,
    /// Types written (this BTF's own, base types not counted), after deduplication.
    pub types: u32,
    /// ELF functions encoded as FUNC.
    pub funcs: usize,
    /// ELF functions with DWARF instances that were not encoded (a skip reason applied).
    pub funcs_skipped: usize,
    /// Size of the BTF written, in bytes (the `.BTF` section's, for ELF output).
    pub bytes: usize,
    /// Nothing was written: the input has no DWARF, or no CU produced a type.
    pub nothing_written: Option<String>,
    /// Wall-clock seconds the run took.
    pub seconds: f64,
    /// Every save into the function table, when `config.trace_saves` asked for them.
    pub saves: Option<SaveTrace>,
}

/// What a run does to the process around it, chosen by its caller (the binary): the library
/// opens no output stream and sets no allocator policy of its own accord, as ripgrep keeps
/// both in its binary.
pub struct Host<'h> {
    /// Where the run's lines go: the final pass's `-V` skip lines (with [`Config::verbose`])
    /// and the encoder's notes.
    pub out: Box<dyn Write + 'h>,
    /// Called where the run has just freed much memory (after the encoding, after the
    /// dedup), before the next phase's peak: the binary's allocator policy goes here.
    pub freed: Box<dyn Fn() + 'h>,
}

impl Host<'_> {
    /// A host that discards the run's lines and leaves the allocator alone (tests,
    /// benchmarks, fuzzing).
    pub fn quiet() -> Self {
        Host {
            out: Box::new(std::io::sink()),
            freed: Box::new(|| ()),
        }
    }
}

/// A run's input opened, the opening that [`run`] and `why` share: the base BTF read (when
/// `--btf_base` names one) and the ELF file mapped.
pub struct Input {
    /// The base BTF the encoding is split on.
    pub base: Option<Arc<Btf>>,
    /// The ELF file.
    pub mapped: Mapped,
}

impl Input {
    /// Reads `config.base` and maps `config.input`.
    pub fn open(config: &Config) -> Result<Self> {
        let base = config
            .base
            .as_deref()
            .map(crate::btf::verify::read_base)
            .transpose()?;
        // SAFETY: the input is not modified during the run, a precondition the project
        // accepts (pahole's libelf reads the same file under the same exposure); the in-place
        // output (`output::elf`) writes a temporary file and renames it over the input, so
        // the mapped inode itself is never written, and `why` writes nothing.
        let mapped = unsafe { Mapped::open(&config.input) }?;
        Ok(Input { base, mapped })
    }

    /// The mapped file read as ELF, with `config`'s limit on decompressed sections.
    pub fn elf(&self, config: &Config) -> Result<Elf<'_>> {
        let mut elf = Elf::parse(&self.mapped)?;
        elf.limit_decompression(config.max_decompress_ratio);
        Ok(elf)
    }
}

/// Encodes `config.input` and writes the BTF to `config.output`; `host` takes the run's
/// lines and its moments of freed memory.
pub fn run(config: &Config, mut host: Host<'_>) -> Result<Summary> {
    let start = RunClock::start();
    let input = Input::open(config)?;
    let elf = input.elf(config)?;
    let mut summary = Summary::default();
    summary.phases.push(start.end("read"));
    let progress = Progress::new(config.quiet);
    let run = RunContext {
        config,
        progress: &progress,
        clock: &start,
        summary: &mut summary,
        out: &mut *host.out,
    };
    let Some((mut btf, store)) = encode(&elf, &input, run, None)? else {
        summary.seconds = start.elapsed();
        return Ok(summary);
    };
    // The DWARF is done with: drop its pages from the resident set before dedup's peak, and
    // let the host give the heap the workers freed back to the system.
    input.mapped.release(0..input.mapped.bytes().len());
    (host.freed)();
    summary.phases.push(start.end("datasecs"));
    summary.types_before_dedup = btf.type_cnt() - btf.start_id();
    if config.no_dedup {
        btf.take_back_held(&store);
    } else {
        progress.phase("deduplicating");
        let opts = DedupOptions {
            threads: config.jobs,
            ..DedupOptions::default()
        };
        let run = dedup_store(&mut btf, store, &opts)?;
        summary.dedup_phases = run
            .phases
            .into_iter()
            .map(|(phase, took)| (phase, took.as_secs_f64()))
            .collect();
        summary.held.extend(run.held);
        summary.phases.push(start.end("dedup"));
        (host.freed)();
    }
    summary.types = btf.type_cnt() - btf.start_id();
    drop(elf);
    drop(input);
    // The last guard: BTF the kernel would refuse is never written. (What the DWARF can
    // make BTF refuse is refused earlier, naming the DIE; this catches the rest.) Without
    // dedup the output is the encoder's raw material, for a dedup elsewhere (libbpf's, in
    // tests/dedup_libbpf.rs): a kernel's is over BTF's type limit before dedup.
    let guarded = !config.no_dedup;
    if let Some(reason) = guarded
        .then(|| crate::btf::verify::first_problem(&btf))
        .flatten()
    {
        return Err(Error::RejectedOutput {
            path: config.input.clone(),
            reason,
        });
    }
    progress.phase("writing");
    summary.bytes = write_output(btf, config)?;
    summary.phases.push(start.end("write"));
    summary.seconds = start.elapsed();
    Ok(summary)
}

/// Writes the BTF where `config.output` says; returns the size of the `.BTF` data written.
///
/// Split BTF written into an ELF with `distilled_base` becomes libbpf's distilled pair, as in
/// pahole: the split BTF relative to a minimal base in `.BTF`, that base in `.BTF.base` (a raw
/// output file gets the plain split BTF, as pahole's does).
fn write_output(btf: Btf, config: &Config) -> Result<usize> {
    // pahole HEAD (libbpf 1.8) with `layout`: the 32-byte header, and the kind layout section
    // in base BTF only.
    let form = |btf: &Btf| match config.features.layout {
        false => HeaderForm::Classic,
        true => HeaderForm::Extended {
            layout: btf.base().is_none(),
        },
    };
    if let Output::Detached(path) = &config.output {
        let bytes = write::to_bytes_as(&btf, form(&btf));
        write_atomic(path, &bytes)?;
        return Ok(bytes.len());
    }
    let sections = if config.features.distilled_base && btf.base().is_some() {
        let (base, split) = distill_base(&btf)?;
        vec![
            (".BTF", write::to_bytes_as(&split, form(&split))),
            (".BTF.base", write::to_bytes_as(&base, form(&base))),
        ]
    } else {
        vec![(".BTF", write::to_bytes_as(&btf, form(&btf)))]
    };
    let refs: Vec<(&str, &[u8])> = sections.iter().map(|(n, b)| (*n, &b[..])).collect();
    write_sections(&config.input, &refs)?;
    Ok(sections[0].1.len())
}

/// The run an encoding is part of: what it was asked to do, and what it reports to.
pub struct RunContext<'r> {
    /// The run's configuration.
    pub config: &'r Config,
    /// The progress display, told the phase and the CUs done.
    pub progress: &'r Progress,
    /// The run's clock, which the encoding's phase ends are measured on.
    pub clock: &'r RunClock,
    /// What the run did, which the encoding adds to.
    pub summary: &'r mut Summary,
    /// Where the final pass's `-V` lines and the encoder's notes go.
    pub out: &'r mut dyn Write,
}

/// Encodes every CU of `elf` (read from `input`), functions and variables, as split BTF on
/// `input.base` when there is one; `None` when there is nothing to write. `watch` is shown the functions it watches.
///
/// The CUs' records are held compact in the returned store (every id from `void` on, the
/// base's included), the rest (functions, DATASECs) raw in the BTF: see
/// [`Btf::hold_in_store`].
pub fn encode(
    elf: &Elf<'_>,
    input: &Input,
    RunContext {
        config,
        progress,
        clock,
        summary,
        out,
    }: RunContext<'_>,
    watch: Option<&dyn FuncWatch>,
) -> Result<Option<(Btf, Store)>> {
    let (path, mapped) = (elf.path(), &input.mapped);
    let Some(sections) = DebugSections::load(elf)? else {
        summary.nothing_written = Some("no DWARF (.debug_info) in the input".into());
        return Ok(None);
    };
    let dwarf = sections.dwarf();
    let info = sections.info_bytes();
    let release = |range: Range<usize>| release_info_pages(mapped, info, range);
    let headers = unit_headers_releasing(&dwarf, path, &release)?;
    let units = UnitIndex::new(&dwarf, headers).map_err(|e| Error::BadDwarf {
        path: path.to_path_buf(),
        offset: 0,
        reason: format!("bad .debug_types unit header: {e}"),
    })?;
    let headers = units.headers();
    progress.cus(headers.len());
    // Reading 2,000 unit headers faults in their pages (and the kernel's fault-around, 64 KiB
    // each): give them back; each CU's pages come back while a worker reads it.
    mapped.release(0..mapped.bytes().len());
    let mut funcs = ElfFunctions::collect(elf)?;
    let mut messages = Vec::new();
    if config.features.decl_tag_kfuncs {
        messages.extend(collect_kfuncs(elf, &mut funcs)?);
    }
    let vars = VarEncoder::new(elf, &config.features)?;
    let arch = Arch::from_elf_machine(elf.machine);
    let mut ctx = EncodeContext {
        path,
        dwarf: &dwarf,
        headers,
        units: &units,
        features: &config.features,
        lang_exclude: &config.lang_exclude,
        endian: elf.endian,
        funcs: &funcs,
        vars: &vars,
        arch: &arch,
        index_cu: None,
        prescanned: Default::default(),
        verbose: config.verbose,
        release: &release,
        watch: watch.map(|w| w as &dyn EncodeWatch),
        time_workers: config.stats,
    };
    if let Some((index, types)) = ctx.find_index_cu()? {
        ctx.index_cu = Some(index);
        ctx.prescanned = Mutex::new(Some(types));
    }
    summary.phases.push(clock.end("elf"));
    let mut dst = match &input.base {
        Some(base) => Btf::new_split(base.clone()),
        None => Btf::new(),
    };
    dst.endian = elf.endian;
    let store = store_with_base(&dst)?;
    let dwarf_peak = std::sync::atomic::AtomicU64::new(0);
    let release_dwarf = || {
        if config.stats {
            dwarf_peak.fetch_max(stats::file_resident_mib(path), Ordering::Relaxed);
        }
        mapped.release(0..mapped.bytes().len());
    };
    let merge = Merge {
        progress,
        release_dwarf: &release_dwarf,
    };
    let run = match config.func_table {
        Design::Shared => encode_with::<table::shared::SharedTable<FuncSummary>>(
            &ctx,
            config,
            (dst, store),
            &merge,
            watch,
        ),
        Design::Dashmap => encode_with::<table::dashmap::DashmapTable<FuncSummary>>(
            &ctx,
            config,
            (dst, store),
            &merge,
            watch,
        ),
        Design::SaveMerge => encode_with::<table::save_merge::SaveMergeTable<FuncSummary>>(
            &ctx,
            config,
            (dst, store),
            &merge,
            watch,
        ),
        Design::Private => encode_with::<table::private::PrivateTable<FuncSummary>>(
            &ctx,
            config,
            (dst, store),
            &merge,
            watch,
        ),
    }?;
    let Merged {
        mut btf,
        mut store,
        chunk_offsets,
        mut secinfos,
        groups,
        cus,
        cus_skipped,
        chunk_messages,
        workers,
        table,
        saves,
    } = run;
    summary.cus = cus;
    summary.cus_skipped = cus_skipped;
    summary.workers = workers;
    summary.table = table;
    summary.saves = saves;
    summary.phases.push(clock.end("cus"));
    summary.held.extend(encoding_held(
        &store,
        &btf,
        &funcs,
        &summary.table,
        dwarf_peak.into_inner(),
    ));
    messages.extend(chunk_messages);
    store.shrink_to_fit();
    let stats: FuncStats = FinalPass {
        btf: &mut btf,
        store: &store,
        chunk_offsets: &chunk_offsets,
        features: &config.features,
        log: config.verbose.then_some(&mut *out),
        watch,
    }
    .run(&funcs, groups)?;
    summary.funcs = stats.emitted;
    summary.funcs_skipped = stats.skipped;
    summary.phases.push(clock.end("functions"));
    vars.add_datasecs(&mut btf, &mut secinfos)?;
    for m in &messages {
        let _ = writeln!(out, "{m}");
    }
    if btf.own_len() == 0 {
        summary.nothing_written = Some("no types were encoded".into());
        return Ok(None);
    }
    Ok(Some((btf, store)))
}

/// The encoding's large structures at its end, when they are largest.
fn encoding_held(
    store: &Store,
    btf: &Btf,
    funcs: &ElfFunctions<'_>,
    table: &TableStats,
    dwarf_peak_mib: u64,
) -> Vec<Held> {
    vec![
        Held {
            what: format!(
                "record store: {} records, {} distinct templates",
                store.len(),
                store.templates()
            ),
            bytes: store.bytes(),
        },
        Held {
            what: "strings".into(),
            bytes: btf.strings().len(),
        },
        Held {
            what: format!(
                "ELF functions table: {} names, {} symbols",
                funcs.len(),
                funcs.entries().map(|f| f.syms.len()).sum::<usize>()
            ),
            bytes: funcs.heap_bytes(),
        },
        Held {
            what: format!(
                "resident DWARF: the input's mapped pages, before the main thread drops them \
                 every {RELEASE_DWARF_EVERY} batches (workers drop each CU's as they finish)"
            ),
            bytes: (dwarf_peak_mib << 20) as usize,
        },
        Held {
            what: format!(
                "function table: {} instances held for the final pass, in their per-owner summaries",
                table.held
            ),
            bytes: table.held_bytes as usize,
        },
    ]
}

/// The concatenated chunks and what the final pass needs.
struct Merged {
    btf: Btf,
    /// The CUs' records, which `btf` holds (see [`Btf::hold_in_store`]).
    store: Store,
    chunk_offsets: Vec<u32>,
    secinfos: Vec<PendingSecinfo>,
    groups: Vec<Vec<FuncSummary>>,
    cus: usize,
    cus_skipped: usize,
    chunk_messages: Vec<String>,
    workers: WorkerTimes,
    table: TableStats,
    /// Every save, when the run records them (`--trace-saves`).
    saves: Option<SaveTrace>,
}

/// What the main thread does beside appending chunks.
struct Merge<'m> {
    progress: &'m Progress,
    /// Drops every resident page of the input's DWARF. The workers release each CU's
    /// `.debug_info` range when they are done with it, but the sections that CUs share
    /// (abbreviations, strings, location and range lists) are read all along; their pages
    /// would stay resident until the end (~40 MiB on a kernel).
    release_dwarf: &'m dyn Fn(),
}

/// Batches merged between two [`Merge::release_dwarf`] calls: the pages that CUs in flight
/// still need come back as minor faults from the page cache, a few milliseconds a release.
const RELEASE_DWARF_EVERY: usize = 8;

/// Runs the workers with table design `T` and appends their chunks in order to `dst` (empty,
/// or split on a base; its records go into the store beside it, which holds the base's).
fn encode_with<'a, T: FuncTable<FuncSummary>>(
    ctx: &EncodeContext<'a, '_>,
    config: &Config,
    (dst, store): (Btf, Store),
    merge: &Merge<'_>,
    watch: Option<&dyn FuncWatch>,
) -> Result<Merged> {
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
    // 2×threads+2 batches ahead of the merge wait.
    let window = Gate::new(2 * threads + 2);
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
    let savers: Vec<Mutex<OwnerSaves<'_>>> = (0..jobs)
        .map(|o| {
            let (owner, saver) = (o as Owner, table.saver(o as Owner));
            Mutex::new(OwnerSaves {
                saver: match &recorder {
                    None => Box::new(saver) as Box<dyn FuncSaver<FuncSummary> + Send>,
                    Some(r) => Box::new(r.traced(saver, owner)),
                },
                next: o,
                waiting: BTreeMap::new(),
            })
        })
        .collect();
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
                merge.progress.cus_done(merged.cus + merged.cus_skipped);
                if expected.is_multiple_of(RELEASE_DWARF_EVERY) {
                    (merge.release_dwarf)();
                }
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

/// One owner's saver, and the instances of the owner's batches that were encoded before an
/// earlier batch of the same owner: an owner saves its batches in batch order (`o`, `o +
/// owners`, `o + 2 × owners` …), whichever threads encoded them and in whatever order they
/// finished. The lock is held only while saving, so a thread never waits for another's
/// encoding: with as many owners as threads, holding it over a whole batch stalled the thread
/// that finished first on every batch of the busy owner.
struct OwnerSaves<'s> {
    saver: Box<dyn FuncSaver<FuncSummary> + Send + 's>,
    /// The owner's next batch to save.
    next: usize,
    /// Encoded batches waiting for `next`, with their instances in DWARF order.
    waiting: BTreeMap<usize, BatchInstances>,
}

/// A batch's function instances, each with its ELF functions table entry, in DWARF order.
type BatchInstances = Vec<(u32, FuncInstance)>;

impl OwnerSaves<'_> {
    /// Saves batch `b`'s instances, and then every waiting batch whose turn that makes, in
    /// batch order; `owners` is the step between an owner's batches.
    fn save_in_order(&mut self, b: usize, instances: BatchInstances, owners: usize) {
        self.waiting.insert(b, instances);
        while let Some(instances) = self.waiting.remove(&self.next) {
            for (entry, instance) in instances {
                self.saver.save(entry, instance);
            }
            self.next += owners;
        }
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
    savers: &'w [Mutex<OwnerSaves<'s>>],
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
                let owners = self.savers.len();
                let save = || {
                    self.savers[b % owners]
                        .lock()
                        .save_in_order(b, instances, owners)
                };
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
        let instance = save_instance(found);
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

/// Drops the resident pages of a finished CU's `.debug_info` range when the section is
/// mapped straight from the file (not decompressed or relocated into memory). The 64 KiB
/// before the CU go too: the kernel's fault-around maps them in with the CU's first page.
fn release_info_pages(mapped: &Mapped, info: &[u8], range: Range<usize>) {
    let map = mapped.bytes().as_ptr_range();
    let info_start = info.as_ptr();
    if !map.contains(&info_start) {
        return;
    }
    let base = info_start as usize - map.start as usize;
    mapped.release(base + range.start.saturating_sub(64 * 1024)..base + range.end);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::functions::instance::InstanceHead;

    /// A saver that notes the batch (the instance's chunk) and entry of each save.
    struct Noting<'n>(&'n Mutex<Vec<(u32, u32)>>);

    impl FuncSaver<FuncSummary> for Noting<'_> {
        fn save(&mut self, entry: u32, instance: FuncInstance) {
            self.0.lock().push((instance.head.chunk, entry));
        }
    }

    fn batch(b: u32) -> BatchInstances {
        let head = InstanceHead {
            chunk: b,
            ..InstanceHead::default()
        };
        (0..2)
            .map(|entry| (entry, FuncInstance::new(head, &[], &[], &[1, 0])))
            .collect()
    }

    #[test]
    fn an_owner_saves_its_batches_in_batch_order_whatever_order_they_finish_in() {
        let saved = Mutex::new(Vec::new());
        // Owner 1 of 3: its batches are 1, 4, 7, 10.
        let mut owner = OwnerSaves {
            saver: Box::new(Noting(&saved)),
            next: 1,
            waiting: BTreeMap::new(),
        };
        owner.save_in_order(7, batch(7), 3);
        owner.save_in_order(4, batch(4), 3);
        assert!(saved.lock().is_empty(), "batch 1 has not been saved yet");
        owner.save_in_order(1, batch(1), 3);
        owner.save_in_order(10, batch(10), 3);
        let expected: Vec<(u32, u32)> = [1, 4, 7, 10]
            .into_iter()
            .flat_map(|b| [(b, 0), (b, 1)])
            .collect();
        assert_eq!(*saved.lock(), expected);
        assert!(owner.waiting.is_empty());
    }
}
