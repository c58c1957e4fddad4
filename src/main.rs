//! The `dwarf2btf` command line: pahole's flag spelling for encoding, plus `verify`, `diff`,
//! `dump` and `why` subcommands. It only parses flags and wires them to the library.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Arg, ArgAction, ArgMatches, Args, CommandFactory, FromArgMatches, Parser, Subcommand};

use dwarf2btf::btf::{canon, dump, kernel, read, verify, Btf};
use dwarf2btf::config::{
    parse_langs, supported_features, Config, FeatureArg, Features, Output, LEGACY_FLAGS,
    PAHOLE_VERSION,
};
use dwarf2btf::{pipeline, Error, Result};

mod slips;

#[derive(Parser)]
#[command(
    name = "dwarf2btf",
    about = "Encode the DWARF of a Linux kernel image or module as BTF (a faster pahole -J)",
    args_conflicts_with_subcommands = true,
    args_override_self = true,
    disable_version_flag = true,
    after_help = "Exit status: 0 done (valid, same); 1 the answer is no (verify: invalid, diff: \
                  different, why: a name not found); 2 trouble (bad input, bad usage, no \
                  verdict); 3 verify --kernel could not ask the kernel."
)]
struct Cli {
    /// Print the pahole version whose behaviour dwarf2btf implements (v1.32), as pahole prints
    /// its own: kernel builds read it. `dwarf2btf version` prints dwarf2btf's own version.
    #[arg(long = "version")]
    version: bool,
    /// Print that pahole version as a number (132), as pahole does.
    #[arg(long = "numeric_version")]
    numeric_version: bool,
    /// Print the BTF features dwarf2btf encodes, comma-separated.
    #[arg(long = "supported_btf_features")]
    supported_btf_features: bool,
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    encode: EncodeArgs,
}

#[derive(Args)]
struct EncodeArgs {
    /// Encode BTF into the input's .BTF section (added, or replaced), as pahole -J does.
    #[arg(short = 'J', long = "btf_encode")]
    btf_encode: bool,
    /// Write the raw BTF to FILE instead of into the input (implies -J).
    #[arg(long = "btf_encode_detached", value_name = "FILE")]
    detached: Option<PathBuf>,
    #[command(flatten)]
    run: RunArgs,
    /// Verbose output (pahole's -V).
    #[arg(short = 'V', long = "verbose")]
    verbose: bool,
    /// Encode standalone BTF even for a module without --btf_base, replacing split .BTF in
    /// place (refused without this flag).
    #[arg(long)]
    standalone: bool,
    /// Print nothing but errors: no progress line, no note when there is nothing to encode.
    #[arg(short = 'q', long = "quiet", conflicts_with = "verbose")]
    quiet: bool,
    /// Print per-phase wall and CPU time, memory, and the function table's counters to stderr;
    /// =json: as one JSON object, =csv: as a CSV header and row (for sweeping -j)
    #[arg(long, value_name = "FORMAT", num_args = 0..=1, require_equals = true,
          default_missing_value = "text")]
    stats: Option<dwarf2btf::stats::Format>,
    /// Record every save into the function table (worker, function, time) and write them to
    /// FILE, for replaying the workload against each table design (format: docs/concurrency.md).
    #[arg(long = "trace-saves", value_name = "FILE")]
    trace_saves: Option<PathBuf>,
    /// Write the BTF without deduplication (debugging aid).
    #[arg(long = "no_dedup", hide = true)]
    no_dedup: bool,
    /// The ELF file to encode (vmlinux, a .ko or a .o).
    file: Option<PathBuf>,
}

/// The options that shape an encoding run, for encoding and for `why` alike.
#[derive(Args)]
struct RunArgs {
    /// Encode split BTF on top of this base: raw BTF (e.g. /sys/kernel/btf/vmlinux) or an ELF
    /// file with a .BTF section (vmlinux), as kernel module builds do.
    #[arg(long = "btf_base", value_name = "PATH")]
    btf_base: Option<PathBuf>,
    /// Encoders; as in pahole, only an attached value counts (-j4, --jobs=4), and -j alone
    /// means one per CPU. They run on at most one thread per CPU. The output is identical for
    /// every N.
    #[arg(short = 'j', long = "jobs", value_name = "N", num_args = 0..=1, default_missing_value = "0")]
    jobs: Option<usize>,
    /// BTF features to encode (pahole names; `default`, `+feature`; may be repeated;
    /// `--features` is pahole 1.32's other spelling).
    #[arg(long = "btf_features", visible_alias = "features", value_name = "LIST")]
    btf_features: Vec<String>,
    /// Fail on unknown --btf_features names instead of ignoring them.
    #[arg(long = "btf_features_strict", value_name = "LIST")]
    btf_features_strict: Vec<String>,
    /// Skip CUs of these DWARF languages (e.g. rust).
    #[arg(long = "lang_exclude", value_name = "LIST")]
    lang_exclude: Option<String>,
    /// How parallel encoders share function state: shared (lock-free per-owner lists),
    /// dashmap (sharded locks), save-merge (per-encoder lists, grouped at the end) or private
    /// (per-encoder indexes, folded while saving: the control). The output is byte-identical
    /// for all four.
    #[arg(long = "func-table", value_name = "DESIGN", default_value = "shared")]
    func_table: dwarf2btf::config::Design,
    /// A compressed debug section may expand to at most N times its compressed size, plus a
    /// 1 MiB slack all of the file's compressed sections share (real ones expand 3-7 times); a
    /// larger claim is an error before anything is allocated. 0 lifts the limit.
    #[arg(long = "max_decompress_ratio", value_name = "N", default_value_t = dwarf2btf::input::elf::DEFAULT_DECOMPRESS_RATIO)]
    max_decompress_ratio: u64,
}

#[derive(Subcommand)]
enum Command {
    /// Print dwarf2btf's own version (`--version` prints the pahole version it implements).
    Version,
    /// Print a shell completion script (e.g. `dwarf2btf completions bash >
    /// /etc/bash_completion.d/dwarf2btf`).
    Completions {
        /// The shell: bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
    /// Print the man page, in roff (`dwarf2btf man > dwarf2btf.1`; `man -l dwarf2btf.1`).
    Man,
    /// Check BTF against the kernel's rules: exit 0 when valid, 1 when not, 2 when there is no
    /// verdict (a release before 6.1 that lacks nothing the file uses).
    Verify {
        /// Raw BTF or an ELF file with a .BTF section.
        file: PathBuf,
        /// Base BTF, when FILE is split BTF (with --kernel, loaded as one BTF with FILE: the
        /// kernel's BPF_BTF_LOAD takes no base).
        #[arg(long = "btf_base", visible_alias = "base", value_name = "PATH")]
        base: Option<PathBuf>,
        /// Ask the running kernel instead: load the BTF with bpf(BPF_BTF_LOAD) (needs root).
        /// Exit 0 when accepted, 1 when rejected, 3 when the kernel cannot be asked.
        #[arg(long, conflicts_with = "kernel_version")]
        kernel: bool,
        /// Judge by the rules of this kernel release (e.g. 6.18, 7.2) instead of those the
        /// file's header asks for: before 7.1 the 24-byte header, from 7.1 on the 32-byte one
        /// with the kind layout section. Before 6.1 only the kinds and flags the release lacks
        /// are known (FLOAT came with 5.13, DECL_TAG 5.16, TYPE_TAG 5.17, ENUM64 6.0, ...);
        /// before 4.18 there is no BTF.
        #[arg(
            long = "kernel-version",
            alias = "kernel_version",
            value_name = "MAJOR.MINOR"
        )]
        kernel_version: Option<verify::KernelVersion>,
    },
    /// Compare two BTFs independently of type ids; exit 1 when they differ.
    Diff {
        /// The first BTF, side A of the report (raw BTF or an ELF file with a .BTF section).
        a: PathBuf,
        /// The second BTF, side B of the report.
        b: PathBuf,
        /// Base BTF, when A and B are split BTF.
        #[arg(long = "btf_base", visible_alias = "base", value_name = "PATH")]
        base: Option<PathBuf>,
        /// Compare as sets (ignore how often an item occurs).
        #[arg(long)]
        set: bool,
        /// Only these categories (comma-separated: types,funcs,vars,datasecs).
        #[arg(long, value_name = "LIST")]
        only: Option<String>,
        /// Treat forward declarations as the types they declare (to compare BTF before
        /// deduplication with BTF after it).
        #[arg(long = "fold-fwd")]
        fold_fwd: bool,
        /// List every differing item (without it, the first 20).
        #[arg(long)]
        all: bool,
    },
    /// Print per-kind counts and a readable listing.
    Dump {
        /// Raw BTF or an ELF file with a .BTF section.
        file: PathBuf,
        /// Base BTF, when FILE is split BTF.
        #[arg(long = "btf_base", visible_alias = "base", value_name = "PATH")]
        base: Option<PathBuf>,
    },
    /// Explain why functions are or are not in the BTF.
    ///
    /// Prints their ELF symbols, their DWARF instances and the encoder's decision. Encodes
    /// FILE with the flags given (as for -J) and writes nothing; exit 1 when a name is neither
    /// an ELF function nor a DWARF one.
    Why {
        /// Function names (an ELF name such as foo.isra.0 stands for foo).
        #[arg(required = true, num_args = 1..)]
        names: Vec<String>,
        /// The ELF file (vmlinux, a .ko or a .o).
        file: PathBuf,
        /// List every DWARF definition (without it, the first 8).
        #[arg(long)]
        all: bool,
        #[command(flatten)]
        run: RunArgs,
    },
}

/// The command with pahole's legacy feature flags added from [`LEGACY_FLAGS`] (defined once),
/// to encoding and to `why`.
fn command() -> clap::Command {
    with_legacy_flags(Cli::command()).mut_subcommand("why", with_legacy_flags)
}

fn with_legacy_flags(cmd: clap::Command) -> clap::Command {
    LEGACY_FLAGS.iter().fold(cmd, |cmd, (name, _, help)| {
        cmd.arg(
            Arg::new(*name)
                .long(*name)
                .action(ArgAction::SetTrue)
                .help(*help)
                .help_heading("pahole's legacy feature flags"),
        )
    })
}

/// pahole reads `-j` with getopt's optional argument: only an attached value counts, so in
/// `-j vmlinux` the file is the input. Spell a bare `-j`/`--jobs` as "one per CPU" so the
/// parser cannot take the next word as its value.
fn attach_jobs_values(args: impl Iterator<Item = std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    args.map(|a| match a.to_str() {
        Some("-j") => "-j0".into(),
        Some("--jobs") => "--jobs=0".into(),
        _ => a,
    })
    .collect()
}

/// The feature options in command-line order (pahole applies them in that order).
fn feature_args<'m>(matches: &'m ArgMatches) -> Vec<FeatureArg<'m>> {
    let mut args: Vec<(usize, FeatureArg<'m>)> = Vec::new();
    for (id, strict) in [("btf_features", false), ("btf_features_strict", true)] {
        if let (Some(idx), Some(lists)) = (matches.indices_of(id), matches.get_many::<String>(id)) {
            args.extend(
                idx.zip(lists)
                    .map(|(i, list)| (i, FeatureArg::List { list, strict })),
            );
        }
    }
    for (name, _, _) in LEGACY_FLAGS {
        if matches.get_flag(name) {
            let i = matches.index_of(name).unwrap_or(0);
            args.push((i, FeatureArg::Legacy(name)));
        }
    }
    args.sort_by_key(|(i, _)| *i);
    args.into_iter().map(|(_, a)| a).collect()
}

fn main() -> ExitCode {
    // A fatal signal removes an output's temporary file; a truncated input gets one line.
    dwarf2btf::output::signals::install();
    let args: Vec<OsString> = std::env::args_os().collect();
    let matches = match command().try_get_matches_from(attach_jobs_values(args.clone().into_iter()))
    {
        Ok(m) => m,
        Err(e) if !e.use_stderr() => {
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) => return usage_error(&e, &args),
    };
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => return usage_error(&e, &args),
    };
    match run(cli, &matches) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("dwarf2btf: {e}");
            ExitCode::from(EXIT_TROUBLE)
        }
    }
}

/// Exit status of every error (bad input, bad usage), as diff and cmp use 2: 0 and 1 are
/// answers (valid or not, same or different, encoded).
const EXIT_TROUBLE: u8 = 2;

/// A command line clap refused: the common slips explained in one line, else clap's message.
fn usage_error(e: &clap::Error, args: &[OsString]) -> ExitCode {
    match slips::explain(e.kind(), args) {
        Some(line) => eprintln!("dwarf2btf: {line}"),
        None => {
            let _ = e.print();
        }
    }
    ExitCode::from(EXIT_TROUBLE)
}

fn run(cli: Cli, matches: &ArgMatches) -> Result<ExitCode> {
    let (major, minor) = PAHOLE_VERSION;
    if cli.version {
        println!("v{major}.{minor}");
        return Ok(ExitCode::SUCCESS);
    }
    if cli.numeric_version {
        println!("{major}{minor:02}");
        return Ok(ExitCode::SUCCESS);
    }
    if cli.supported_btf_features {
        println!("{}", supported_features());
        return Ok(ExitCode::SUCCESS);
    }
    match cli.command {
        Some(Command::Version) => {
            let commit = match env!("DWARF2BTF_COMMIT") {
                "" => String::new(),
                c => format!(", commit {c}"),
            };
            println!(
                "dwarf2btf {}{commit} (pahole v{major}.{minor} command line and encoding)",
                env!("CARGO_PKG_VERSION")
            );
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Completions { shell }) => {
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut command(), "dwarf2btf", &mut script);
            print_stdout(&String::from_utf8_lossy(&script))?;
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Man) => {
            let mut page = Vec::new();
            clap_mangen::Man::new(command())
                .render(&mut page)
                .map_err(|e| Error::io("<stdout>", e))?;
            print_stdout(&String::from_utf8_lossy(&page))?;
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Verify {
            file,
            base,
            kernel: false,
            kernel_version,
        }) => run_verify(&file, base, kernel_version),
        Some(Command::Verify {
            file,
            base,
            kernel: true,
            ..
        }) => run_verify_kernel(&file, base.as_deref()),
        Some(Command::Diff {
            a,
            b,
            base,
            set,
            only,
            fold_fwd,
            all,
        }) => run_diff(
            &a,
            &b,
            base,
            DiffFlags { set, fold_fwd, all },
            only.as_deref(),
        ),
        Some(Command::Dump { file, base }) => {
            let btf = read_btf(&file, load_base(base)?)?;
            let mut listing = Vec::new();
            dump::dump(&btf, &mut listing).map_err(|e| Error::io("<stdout>", e))?;
            print_stdout(&String::from_utf8_lossy(&listing))?;
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Why {
            names,
            file,
            all,
            run,
        }) => {
            let sub = matches.subcommand_matches("why").unwrap_or(matches);
            run_why(&names, file, all, run, &feature_args(sub))
        }
        None => run_encode(cli.encode, &feature_args(matches)),
    }
}

/// Reads a base BTF, its strings indexed so that split BTF reuses them.
fn load_base(base: Option<PathBuf>) -> Result<Option<Arc<Btf>>> {
    base.as_deref().map(verify::read_base).transpose()
}

/// Writes to stdout; a reader that went away (`| head`) ends the output quietly.
fn print_stdout(text: &str) -> Result<()> {
    match std::io::stdout().lock().write_all(text.as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(Error::io("<stdout>", e)),
        _ => Ok(()),
    }
}

fn run_verify(
    file: &Path,
    base: Option<PathBuf>,
    version: Option<verify::KernelVersion>,
) -> Result<ExitCode> {
    let data = read::file_btf_bytes(file)?;
    let base = load_base(base)?;
    if base.is_none() {
        refuse_split(file, &data)?;
    }
    let target = version.map_or(verify::Target::OwnHeader, verify::Target::Kernel);
    let verdict = verify::judge(&data, base.as_ref(), target);
    print_stdout(&verdict.report(&file.display().to_string()))?;
    Ok(if verdict.valid() {
        ExitCode::SUCCESS
    } else if verdict.undecided {
        ExitCode::from(EXIT_TROUBLE)
    } else {
        ExitCode::FAILURE
    })
}

/// Exit status of `verify --kernel` when the kernel cannot be asked (no privilege, no bpf()).
const EXIT_NO_KERNEL: u8 = 3;
/// How many of the verifier log's last lines a rejection shows.
const LOG_TAIL_LINES: usize = 8;
/// Said after a rejection of what looks like split BTF given without its base.
const SPLIT_HINT: &str = "  (its string section does not start with an empty string, as split \
                          BTF's does not: pass its base with --base)\n";

/// `verify --kernel`: the running kernel's verdict through `BPF_BTF_LOAD` (split BTF joined
/// with its base, as the call takes no base).
fn run_verify_kernel(file: &Path, base: Option<&Path>) -> Result<ExitCode> {
    let bytes = read::file_btf_bytes;
    let data = bytes(file)?;
    let data = match base {
        Some(base) => kernel::join_split(&bytes(base)?, &data)?,
        None => data,
    };
    let release = kernel::release().unwrap_or_else(|| "unknown release".into());
    match kernel::load(&data) {
        Ok(_fd) => {
            print_stdout(&format!(
                "{}: accepted by the running kernel ({release})\n",
                file.display()
            ))?;
            Ok(ExitCode::SUCCESS)
        }
        Err(kernel::LoadError::Rejected(r)) => {
            let mut text = format!(
                "{}: rejected by the running kernel ({release}): {}\n",
                file.display(),
                kernel::errno_text(r.errno)
            );
            let tail = r.log_tail(LOG_TAIL_LINES);
            if tail.is_empty() {
                text.push_str("  (the verifier log is empty)\n");
            } else {
                let truncated = if r.log_truncated {
                    ", the log overflowed its buffer"
                } else {
                    ""
                };
                text.push_str(&format!("  verifier log, last lines{truncated}:\n"));
                for line in tail {
                    text.push_str(&format!("    {}\n", line.replace('\t', "  ")));
                }
            }
            if base.is_none() && looks_split(&data) {
                text.push_str(SPLIT_HINT);
            }
            text.push_str(&header_hint(&data));
            print_stdout(&text)?;
            Ok(ExitCode::FAILURE)
        }
        Err(e) => {
            eprintln!(
                "dwarf2btf: {}: cannot ask the running kernel: {e}",
                file.display()
            );
            Ok(ExitCode::from(EXIT_NO_KERNEL))
        }
    }
}

/// After a rejection: the header problem `verify` finds by the running kernel's rules (a
/// 32-byte layout header on a kernel before 7.1, say), if there is one.
fn header_hint(data: &[u8]) -> String {
    let Some(version) = kernel::version() else {
        return String::new();
    };
    let rules = verify::HeaderRules::of(version);
    match verify::header_problems(data, false, rules).first() {
        Some(p) => format!("  dwarf2btf verify --kernel-version {version} agrees: {p}\n"),
        None => String::new(),
    }
}

/// Whether raw BTF looks split: its string section does not start with the empty string.
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

/// Reads the BTF of `path` for `dump` and `diff`, refusing split BTF given without its base.
fn read_btf(path: &Path, base: Option<Arc<Btf>>) -> Result<Btf> {
    let data = read::file_btf_bytes(path)?;
    if base.is_none() {
        refuse_split(path, &data)?;
    }
    read::parse(&data, base)
}

/// Split BTF without its base cannot be read: its type ids and string offsets continue the
/// base's. One line asking for the base, rather than a listing of wrong names or a hundred
/// rule violations.
fn refuse_split(path: &Path, data: &[u8]) -> Result<()> {
    if !looks_split(data) {
        return Ok(());
    }
    Err(Error::Usage(format!(
        "{}: this looks like split BTF (its strings do not start with an empty string): \
         give its base with --btf_base (e.g. the vmlinux it was built against)",
        path.display()
    )))
}

fn looks_split(data: &[u8]) -> bool {
    read::parse_header(data).is_ok_and(|h| {
        let at = h.hdr_len as usize + h.str_off as usize;
        h.str_len > 0 && data.get(at) != Some(&0)
    })
}

/// `diff`'s switches.
struct DiffFlags {
    set: bool,
    fold_fwd: bool,
    all: bool,
}

/// How many differing items `diff` lists without `--all`.
const DIFFERENCES_SHOWN: usize = 20;

fn run_diff(
    a: &Path,
    b: &Path,
    base: Option<PathBuf>,
    flags: DiffFlags,
    only: Option<&str>,
) -> Result<ExitCode> {
    let base = load_base(base)?;
    let btf_a = read_btf(a, base.clone())?;
    let btf_b = read_btf(b, base)?;
    let categories = match only {
        Some(list) => list
            .split(',')
            .map(|c| c.trim().parse::<canon::Category>().map_err(Error::Usage))
            .collect::<Result<Vec<_>>>()?,
        None => canon::Category::ALL.to_vec(),
    };
    let report = canon::diff(
        &btf_a,
        &btf_b,
        &canon::DiffOptions {
            set: flags.set,
            categories,
            max_shown: if flags.all {
                usize::MAX
            } else {
                DIFFERENCES_SHOWN
            },
            fold_fwd: flags.fold_fwd,
        },
    );
    let legend = format!(
        "A: {}\nB: {}\n(- an item only in A, + only in B)\n\n",
        a.display(),
        b.display()
    );
    print_stdout(&(legend + &report.to_string()))?;
    Ok(if report.equal {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn run_encode(args: EncodeArgs, feature_args: &[FeatureArg<'_>]) -> Result<ExitCode> {
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
        freed: Box::new(return_free_heap),
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
fn config(
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

fn run_why(
    names: &[String],
    input: PathBuf,
    all: bool,
    args: RunArgs,
    feature_args: &[FeatureArg<'_>],
) -> Result<ExitCode> {
    if feature_args.is_empty() {
        eprintln!(
            "dwarf2btf: note: no --btf_features given: the answers are for pahole's defaults; \
             give the build's flags for its answers (kernels pass --btf_features=...)"
        );
    }
    // Nothing is written: the output is never used.
    let config = config(input, Output::InPlace, args, feature_args, false)?;
    // stdout is the report: the encoder's notes go to stderr.
    let answer = dwarf2btf::why::why(&config, names, &mut std::io::stderr())?;
    if let Some(why) = &answer.nothing_encoded {
        eprintln!("dwarf2btf: {}: {why}", config.input.display());
    }
    let text: Vec<String> = answer
        .reports
        .iter()
        .map(|r| if all { format!("{r:#}") } else { r.to_string() })
        .collect();
    print_stdout(&text.join("\n"))?;
    Ok(if answer.reports.iter().any(|r| r.unknown()) {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
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
