//! The `dwarf2btf` command line: pahole's flag spelling for encoding, plus `verify`, `diff`,
//! `dump` and `why` subcommands. It only parses flags and wires them to the library.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Arg, ArgAction, ArgMatches, Args, CommandFactory, FromArgMatches, Parser, Subcommand};

use dwarf2btf::btf::verify::KernelVersion;
use dwarf2btf::config::{supported_features, FeatureArg, LEGACY_FLAGS, PAHOLE_VERSION};
use dwarf2btf::Result;

mod commands;
mod slips;

use commands::{about, diff, dump, encode, verify, why};

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
    /// Print per-phase wall and CPU time, memory, and the function table's counters to stderr
    #[arg(long)]
    stats: bool,
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
        kernel_version: Option<KernelVersion>,
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
        Some(Command::Version) => Ok(about::version()),
        Some(Command::Completions { shell }) => about::completions(shell),
        Some(Command::Man) => about::man(),
        Some(Command::Verify {
            file,
            base,
            kernel: false,
            kernel_version,
        }) => verify::run(&file, base, kernel_version),
        Some(Command::Verify {
            file,
            base,
            kernel: true,
            ..
        }) => verify::run_kernel(&file, base.as_deref()),
        Some(Command::Diff {
            a,
            b,
            base,
            set,
            only,
            fold_fwd,
            all,
        }) => diff::run(
            &a,
            &b,
            base,
            diff::Flags { set, fold_fwd, all },
            only.as_deref(),
        ),
        Some(Command::Dump { file, base }) => dump::run(&file, base),
        Some(Command::Why {
            names,
            file,
            all,
            run,
        }) => {
            let sub = matches.subcommand_matches("why").unwrap_or(matches);
            why::run(&names, file, all, run, &feature_args(sub))
        }
        None => encode::run(cli.encode, &feature_args(matches)),
    }
}
