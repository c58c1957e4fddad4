//! The pahole-style run: `-J` / `--btf_encode_detached` encode FILE's DWARF as BTF, with
//! the run's configuration from the command line and the binary's allocator policy.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use dwarf2btf::btf::read;
use dwarf2btf::config::{parse_langs, Config, FeatureArg, Features, Output};
use dwarf2btf::{pipeline, Error, Result};

use super::looks_split;
use crate::args::{EncodeArgs, RunArgs};

/// Encodes FILE as the flags say.
pub(crate) fn run(args: EncodeArgs, feature_args: &[FeatureArg<'_>]) -> Result<ExitCode> {
    let Some(input) = args.file else {
        return Err(Error::Usage(
            "no input file (usage: dwarf2btf -J [--btf_encode_detached=OUT] FILE)".into(),
        ));
    };
    let output = match (args.detached, args.btf_encode) {
        (Some(path), _) => Output::Detached(path),
        (None, true) => Output::InPlace,
        (None, false) => {
            return Err(Error::Usage(
                "nothing to do: pass -J to encode .BTF into FILE, or --btf_encode_detached=OUT"
                    .into(),
            ))
        }
    };
    if args.run.btf_base.is_none() {
        guard_module_without_base(&input, &output, args.standalone, args.quiet)?;
    }
    let config = Config {
        no_dedup: args.no_dedup,
        stats: args.stats.is_some(),
        trace_saves: args.trace_saves.is_some(),
        quiet: args.quiet,
        ..config(input, output, args.run, feature_args, args.verbose)?
    };
    bound_malloc_arenas(config.jobs);
    let host = pipeline::Host {
        out: Box::new(std::io::stdout()),
        freed: return_free_heap,
    };
    let summary = pipeline::run(&config, host)?;
    if let (Some(path), Some(trace)) = (&args.trace_saves, &summary.saves) {
        let file = std::fs::File::create(path).map_err(|e| Error::io(path, e))?;
        trace
            .write_to(std::io::BufWriter::new(file))
            .map_err(|e| Error::io(path, e))?;
    }
    if let (Some(why), false) = (&summary.nothing_written, args.quiet) {
        eprintln!(
            "dwarf2btf: {}: {why}; nothing written",
            config.input.display()
        );
    } else if args.verbose {
        eprintln!(
            "dwarf2btf: {} CUs ({} skipped), {} functions ({} skipped), {} types ({} before dedup), {} bytes, {:.2}s",
            summary.cus,
            summary.cus_skipped,
            summary.funcs,
            summary.funcs_skipped,
            summary.types,
            summary.types_before_dedup,
            summary.bytes,
            summary.seconds
        );
        let phases: Vec<String> = summary
            .phases
            .iter()
            .map(|p| format!("{} {:.2}s {}/{} MiB", p.name, p.wall, p.rss_mib, p.peak_mib))
            .collect();
        eprintln!(
            "dwarf2btf: phases (end time, resident/peak so far): {}",
            phases.join(", ")
        );
        if !summary.dedup_phases.is_empty() {
            let phases: Vec<String> = summary
                .dedup_phases
                .iter()
                .map(|(name, secs)| format!("{name} {secs:.3}s"))
                .collect();
            eprintln!("dwarf2btf: dedup phases: {}", phases.join(", "));
        }
    }
    if let Some(format) = args.stats.filter(|_| summary.nothing_written.is_none()) {
        let design = config.func_table.name();
        eprint!("{}", dwarf2btf::stats::report(format, &summary, design));
    }
    Ok(ExitCode::SUCCESS)
}

/// The run's configuration from the command line.
pub(super) fn config(
    input: PathBuf,
    output: Output,
    args: RunArgs,
    feature_args: &[FeatureArg<'_>],
    verbose: bool,
) -> Result<Config> {
    let (features, unknown) = Features::from_args(feature_args)?;
    if verbose && !unknown.is_empty() {
        eprintln!("dwarf2btf: ignoring BTF features: {}", unknown.join(", "));
    }
    let lang_exclude = match args
        .lang_exclude
        .or_else(|| std::env::var("PAHOLE_LANG_EXCLUDE").ok())
    {
        Some(list) => parse_langs(&list)?,
        None => Vec::new(),
    };
    let jobs = match args.jobs {
        None => 1,
        Some(0) => std::thread::available_parallelism().map_or(1, |n| n.get()),
        Some(n) => n,
    };
    Ok(Config {
        input,
        output,
        base: args.btf_base,
        jobs,
        features,
        lang_exclude,
        verbose,
        no_dedup: false,
        func_table: args.func_table,
        max_decompress_ratio: args.max_decompress_ratio,
        stats: false,
        trace_saves: false,
        quiet: false,
    })
}

/// A module encoded without `--btf_base` gets standalone BTF, which the kernel does not load
/// for a module: refused in place when the file already carries split BTF (unless
/// `--standalone`), warned about for any other `.ko`.
fn guard_module_without_base(
    input: &Path,
    output: &Output,
    standalone: bool,
    quiet: bool,
) -> Result<()> {
    let carries_split = read::file_btf_bytes(input).is_ok_and(|b| looks_split(&b));
    if carries_split && matches!(output, Output::InPlace) && !standalone {
        return Err(Error::Usage(format!(
            "{}: its .BTF is split BTF (a module's, on a base); without --btf_base it would be \
             replaced by standalone BTF, which the kernel does not load for a module: give the \
             base with --btf_base (e.g. vmlinux), or --standalone to replace it anyway",
            input.display()
        )));
    }
    let module = input.extension().is_some_and(|e| e == "ko");
    if (module || carries_split) && !standalone && !quiet {
        eprintln!(
            "dwarf2btf: warning: {} looks like a kernel module and no --btf_base was given: its \
             BTF is standalone, which the kernel does not load for a module",
            input.display()
        );
    }
    Ok(())
}

/// Returns the free memory at the top of glibc's heaps to the system (the arenas keep what
/// the workers freed otherwise), so the next phase's peak does not stand on it: the run calls
/// it where it has just freed much ([`pipeline::Host::freed`]).
fn return_free_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases memory that no allocation holds; it takes no pointer.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// The size from which glibc maps each block on its own (see [`bound_malloc_arenas`]).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const MMAP_THRESHOLD: libc::c_int = 1 << 20;

/// Bounds what glibc's malloc keeps of freed memory while the workers run (the binary's
/// allocator policy; the library leaves the process's allocator alone):
/// - arenas: at most one per thread that can run at once. glibc gives every new thread its
///   own arena (up to 8 per core), and each arena keeps the chunks its thread freed, so peak
///   memory grew with -j while the extra threads added no speed. With the cap it stays flat
///   from -j2 to -j64;
/// - blocks of [`MMAP_THRESHOLD`] and more are mapped and unmapped on their own. glibc's
///   default threshold rises to the largest block freed (up to 32 MiB), after which a worker's
///   per-batch buffers come from the arena and, freed, stay resident between the long-lived
///   function instances saved beside them;
/// - an arena gives memory back from its top only when more than that much is free there.
///   With the default 128 KiB, each CU's decoding grew and shrank the heaps in turn: 1,900
///   `brk` and 900 `madvise` calls and the page faults that refilled them, 0.2 s of system
///   time on a kernel.
fn bound_malloc_arenas(jobs: usize) {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let arenas = jobs.clamp(1, cpus.max(1)) as libc::c_int;
        // SAFETY: mallopt only sets allocator tunables; M_ARENA_MAX takes any positive count
        // and affects arenas created after the call (the workers' ones), M_MMAP_THRESHOLD any
        // size up to 32 MiB, M_TRIM_THRESHOLD any size.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, arenas);
            libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD);
            libc::mallopt(libc::M_TRIM_THRESHOLD, MMAP_THRESHOLD);
        }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    let _ = jobs;
}
