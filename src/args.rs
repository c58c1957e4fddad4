//! The command line's definition: pahole's flags for encoding and the subcommands (clap),
//! pahole's legacy feature flags added to both, `-j` read as pahole reads it, and the exit
//! status of trouble. `main.rs` parses with it; `commands/` runs what it parsed.

use std::path::PathBuf;

use clap::{Arg, ArgAction, ArgMatches, Args, CommandFactory, Parser, Subcommand};
use dwarf2btf::config::{FeatureArg, LEGACY_FLAGS};
use dwarf2btf::toolbox::verify::KernelVersion;

/// Exit status of every error (bad input, bad usage), as diff and cmp use 2: 0 and 1 are
/// answers (valid or not, same or different, encoded).
pub(crate) const EXIT_TROUBLE: u8 = 2;

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
pub(crate) struct Cli {
    /// Print the pahole version whose behaviour dwarf2btf implements (v1.32), as pahole prints
    /// its own: kernel builds read it. `dwarf2btf version` prints dwarf2btf's own version.
    #[arg(long = "version")]
    pub(crate) version: bool,
    /// Print that pahole version as a number (132), as pahole does.
    #[arg(long = "numeric_version")]
    pub(crate) numeric_version: bool,
    /// Print the BTF features dwarf2btf encodes, comma-separated.
    #[arg(long = "supported_btf_features")]
    pub(crate) supported_btf_features: bool,
    #[command(subcommand)]
    pub(crate) command: Option<Command>,
    #[command(flatten)]
    pub(crate) encode: EncodeArgs,
}

#[derive(Args)]
pub(crate) struct EncodeArgs {
    /// Encode BTF into the input's .BTF section (added, or replaced), as pahole -J does.
    #[arg(short = 'J', long = "btf_encode")]
    pub(crate) btf_encode: bool,
    /// Write the raw BTF to FILE instead of into the input (implies -J).
    #[arg(long = "btf_encode_detached", value_name = "FILE")]
    pub(crate) detached: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) run: RunArgs,
    /// Verbose output (pahole's -V).
    #[arg(short = 'V', long = "verbose")]
    pub(crate) verbose: bool,
    /// Encode standalone BTF even for a module without --btf_base, replacing split .BTF in
    /// place (refused without this flag).
    #[arg(long)]
    pub(crate) standalone: bool,
    /// Print nothing but errors: no progress line, no note when there is nothing to encode.
    #[arg(short = 'q', long = "quiet", conflicts_with = "verbose")]
    pub(crate) quiet: bool,
    /// Print per-phase wall and CPU time, memory, and the function table's counters to stderr;
    /// =json: as one JSON object, =csv: as a CSV header and row (for sweeping -j)
    #[arg(long, value_name = "FORMAT", num_args = 0..=1, require_equals = true,
          default_missing_value = "text")]
    pub(crate) stats: Option<dwarf2btf::stats::Format>,
    /// Record every save into the function table (owner, thread, CPU, function, time) and write
    /// them to FILE, for replaying the workload against each table design (format: docs/concurrency.md).
    #[arg(long = "trace-saves", value_name = "FILE")]
    pub(crate) trace_saves: Option<PathBuf>,
    /// Write the BTF without deduplication (debugging aid).
    #[arg(long = "no_dedup", hide = true)]
    pub(crate) no_dedup: bool,
    /// The ELF file to encode (vmlinux, a .ko or a .o).
    pub(crate) file: Option<PathBuf>,
}

/// The options that shape an encoding run, for encoding and for `why` alike.
#[derive(Args)]
pub(crate) struct RunArgs {
    /// Encode split BTF on top of this base: raw BTF (e.g. /sys/kernel/btf/vmlinux) or an ELF
    /// file with a .BTF section (vmlinux), as kernel module builds do.
    #[arg(long = "btf_base", value_name = "PATH")]
    pub(crate) btf_base: Option<PathBuf>,
    /// Encoders; as in pahole, only an attached value counts (-j4, --jobs=4), and -j alone
    /// means one per CPU. They run on at most one thread per CPU. The output is identical for
    /// every N.
    #[arg(short = 'j', long = "jobs", value_name = "N", num_args = 0..=1, default_missing_value = "0")]
    pub(crate) jobs: Option<usize>,
    /// BTF features to encode (pahole names; `default`, `+feature`; may be repeated;
    /// `--features` is pahole 1.32's other spelling).
    #[arg(long = "btf_features", visible_alias = "features", value_name = "LIST")]
    pub(crate) btf_features: Vec<String>,
    /// Fail on unknown --btf_features names instead of ignoring them.
    #[arg(long = "btf_features_strict", value_name = "LIST")]
    pub(crate) btf_features_strict: Vec<String>,
    /// Skip CUs of these DWARF languages (e.g. rust).
    #[arg(long = "lang_exclude", value_name = "LIST")]
    pub(crate) lang_exclude: Option<String>,
    /// How parallel encoders share function state: shared (lock-free per-owner lists),
    /// dashmap (sharded locks), save-merge (per-encoder lists, grouped at the end) or private
    /// (per-encoder indexes, folded while saving: the control). The output is byte-identical
    /// for all four.
    #[arg(long = "func-table", value_name = "DESIGN", default_value = "shared")]
    pub(crate) func_table: dwarf2btf::config::Design,
    /// A compressed debug section may expand to at most N times its compressed size, plus a
    /// 1 MiB slack all of the file's compressed sections share (real ones expand 3-7 times); a
    /// larger claim is an error before anything is allocated. 0 lifts the limit.
    #[arg(long = "max_decompress_ratio", value_name = "N", default_value_t = dwarf2btf::input::elf::DEFAULT_DECOMPRESS_RATIO)]
    pub(crate) max_decompress_ratio: u64,
}

#[derive(Subcommand)]
pub(crate) enum Command {
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
        /// Print one JSON document instead of the text (for scripts; the exit status is the
        /// same).
        #[arg(long, conflicts_with = "kernel")]
        json: bool,
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
        /// Print one JSON document instead of the text (for scripts; the exit status is the
        /// same).
        #[arg(long)]
        json: bool,
    },
    /// Print per-kind counts and a readable listing.
    Dump {
        /// Raw BTF or an ELF file with a .BTF section.
        file: PathBuf,
        /// Base BTF, when FILE is split BTF.
        #[arg(long = "btf_base", visible_alias = "base", value_name = "PATH")]
        base: Option<PathBuf>,
        /// Print one JSON document instead of the text (for scripts; the exit status is the
        /// same).
        #[arg(long)]
        json: bool,
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
        /// Print one JSON document instead of the text (for scripts; the exit status is the
        /// same).
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        run: RunArgs,
    },
}

/// The command with pahole's legacy feature flags added from [`LEGACY_FLAGS`] (defined once),
/// to encoding and to `why`.
pub(crate) fn command() -> clap::Command {
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
pub(crate) fn attach_jobs_values(
    args: impl Iterator<Item = std::ffi::OsString>,
) -> Vec<std::ffi::OsString> {
    args.map(|a| match a.to_str() {
        Some("-j") => "-j0".into(),
        Some("--jobs") => "--jobs=0".into(),
        _ => a,
    })
    .collect()
}

/// The feature options in command-line order (pahole applies them in that order).
pub(crate) fn feature_args<'m>(matches: &'m ArgMatches) -> Vec<FeatureArg<'m>> {
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
