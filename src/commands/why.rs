//! `why NAME… FILE`: why functions are, or are not, in the BTF, answered by an encoding run
//! that writes nothing.

use std::path::PathBuf;
use std::process::ExitCode;

use dwarf2btf::config::{FeatureArg, Output};
use dwarf2btf::Result;

use super::encode::config;
use super::print_stdout;
use crate::args::RunArgs;

/// The reports on `names`; exit 1 when a name is unknown.
pub(crate) fn run(
    names: &[String],
    input: PathBuf,
    all: bool,
    json: bool,
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
    if json {
        print_stdout(&super::json::why(
            &config.input.display().to_string(),
            &answer.reports,
        ))?;
    } else {
        let text: Vec<String> = answer
            .reports
            .iter()
            .map(|r| if all { format!("{r:#}") } else { r.to_string() })
            .collect();
        print_stdout(&text.join("\n"))?;
    }
    Ok(if answer.reports.iter().any(|r| r.unknown()) {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
