//! The `dwarf2btf` command line: pahole's flag spelling for encoding, plus `verify`, `diff`,
//! `dump` and `why` subcommands. It only parses flags and wires them to the library.

use std::ffi::OsString;
use std::process::ExitCode;

use clap::{ArgMatches, FromArgMatches};

use dwarf2btf::config::{supported_features, PAHOLE_VERSION};
use dwarf2btf::Result;

mod args;
mod commands;
mod slips;

use args::{attach_jobs_values, command, feature_args, Cli, Command, EXIT_TROUBLE};
use commands::{about, diff, dump, encode, verify, why};

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
            json,
        }) => verify::run(&file, base, kernel_version, json),
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
            json,
        }) => diff::run(
            &a,
            &b,
            base,
            diff::Flags {
                set,
                fold_fwd,
                all,
                json,
            },
            only.as_deref(),
        ),
        Some(Command::Dump { file, base, json }) => dump::run(&file, base, json),
        Some(Command::Why {
            names,
            file,
            all,
            json,
            run,
        }) => {
            let sub = matches.subcommand_matches("why").unwrap_or(matches);
            why::run(&names, file, all, json, run, &feature_args(sub))
        }
        None => encode::run(cli.encode, &feature_args(matches)),
    }
}
