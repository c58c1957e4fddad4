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

mod memory;
pub mod owners;
mod workers;

pub use workers::BATCH_CUS;

use std::io::Write;
use std::ops::Range;
use std::sync::Arc;

use parking_lot::Mutex;

use self::memory::{encoding_held, release_info_pages, DwarfPages};
use self::workers::{Batches, Merged};
use crate::btf::distill::distill_base;
use crate::btf::store::Store;
use crate::btf::write::HeaderForm;
use crate::btf::{write, Btf};
use crate::config::{Config, Features, Output};
use crate::dedup::{dedup_store, store_with_base, DedupOptions};
use crate::dwarf::error::DwarfCause;
use crate::dwarf::foreign::UnitIndex;
use crate::dwarf::units::{unit_headers_releasing, DebugSections};
use crate::encode::chunk::{EncodeContext, EncodeWatch};
use crate::encode::variables::VarEncoder;
use crate::error::{Error, Result};
use crate::functions::final_pass::{FinalPass, FuncStats};
use crate::functions::table::dispatch::with_design;
use crate::functions::table::TableStats;
use crate::functions::trace::SaveTrace;
use crate::functions::watch::FuncWatch;
use crate::input::arch::Arch;
use crate::input::elf::{Elf, Mapped};
use crate::input::kfuncs::collect_kfuncs;
use crate::input::symbols::ElfFunctions;
use crate::measure::{Held, PhaseEnd, RunClock, WorkerTimes};
use crate::output::{elf::write_sections, write_atomic};
use crate::progress::Progress;

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
    /// Called where the run has just freed much memory (after the encoding, between the
    /// dedup's phases, after the dedup), before the next phase's peak: the binary's allocator
    /// policy goes here.
    pub freed: fn(),
}

impl Host<'_> {
    /// A host that discards the run's lines and leaves the allocator alone (tests,
    /// benchmarks, fuzzing).
    pub fn quiet() -> Self {
        Host {
            out: Box::new(std::io::sink()),
            freed: || (),
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
            .map(crate::toolbox::verify::read_base)
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
        // The dedup adds no string: the index of the strings need not stand under its peak.
        btf.release_string_index();
        let opts = DedupOptions {
            // The threads the encoding ran: its workers and the main thread that merged
            // their chunks (the dedup takes at most one per CPU). At -j1 the reference
            // types are then ordered beside the struct phase, as at -j2.
            threads: config.jobs + 1,
            freed: Some(host.freed),
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
    // tests/btf_library/dedup_libbpf.rs): a kernel's is over BTF's type limit before dedup.
    let guarded = !config.no_dedup;
    if let Some(reason) = guarded
        .then(|| crate::toolbox::verify::first_problem(&btf))
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

/// The ELF's functions table, with the kfuncs' flags when `decl_tag_kfuncs` is on, and the
/// messages that finding them printed.
fn elf_functions(elf: &Elf<'_>, features: &Features) -> Result<(ElfFunctions, Vec<String>)> {
    let mut funcs = ElfFunctions::collect(elf)?;
    let mut messages = Vec::new();
    if features.decl_tag_kfuncs {
        messages.extend(collect_kfuncs(elf, &mut funcs)?);
    }
    Ok((funcs, messages))
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
    let Some(sections) = DebugSections::load_by_unit(elf)? else {
        summary.nothing_written = Some("no DWARF (.debug_info) in the input".into());
        return Ok(None);
    };
    let dwarf = sections.dwarf();
    let info = sections.info_bytes();
    let release_headers = |range: Range<usize>| release_info_pages(mapped, info, range);
    // A CU read from the file left no mapped page behind.
    let copies_units = sections.copies_units();
    let release = |range: Range<usize>| {
        if !copies_units {
            release_info_pages(mapped, info, range.clone());
        }
        sections.release_units(range);
    };
    // The ELF functions table is built beside the unit headers and the variables' symbol
    // index (on the reference vmlinux 20 ms against 21 + 5, on 7.3 44 against 33 + 10);
    // errors are reported in the order the steps would run one after the other.
    let (units, funcs, vars) = std::thread::scope(|s| {
        let funcs = s.spawn(|| elf_functions(elf, &config.features));
        let units = unit_headers_releasing(&dwarf, path, &release_headers).and_then(|headers| {
            UnitIndex::new(&dwarf, headers).map_err(|e| Error::BadDwarf {
                path: path.to_path_buf(),
                offset: 0,
                cause: DwarfCause::Read(e),
            })
        });
        let vars = VarEncoder::new(elf, &config.features);
        let funcs = funcs
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p));
        (units, funcs, vars)
    });
    let units = units?;
    let headers = units.headers();
    progress.cus(headers.len());
    let (funcs, mut messages) = funcs?;
    let vars = vars?;
    // Reading 2,000 unit headers faults in their pages (and the kernel's fault-around, 64 KiB
    // each), and the variables' index reads every relocation of a module's `.debug_info`:
    // give them back; each CU's pages come back while a worker reads it.
    mapped.release(0..mapped.bytes().len());
    let arch = Arch::from_elf_machine(elf.machine);
    let mut ctx = EncodeContext {
        path,
        dwarf: &dwarf,
        sections: &sections,
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
    let mut store = store_with_base(&dst)?;
    store.defer_positions();
    let dwarf = DwarfPages::new(mapped, path, config.stats);
    let batches = Batches {
        ctx: &ctx,
        config,
        dst: (dst, store),
        progress,
        dwarf: &dwarf,
        watch,
    };
    let run = with_design(config.func_table, batches)?;
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
        dwarf.peak_mib(),
    ));
    messages.extend(chunk_messages);
    store.shrink_to_fit();
    let stats: FuncStats = FinalPass {
        btf: &mut btf,
        store: &mut store,
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
