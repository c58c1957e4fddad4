//! `diff`: two BTFs compared independently of type ids.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use dwarf2btf::toolbox::canon;
use dwarf2btf::{Error, Result};

use super::{load_base, print_stdout, read_btf};

/// `diff`'s switches.
pub(crate) struct Flags {
    pub(crate) set: bool,
    pub(crate) fold_fwd: bool,
    pub(crate) all: bool,
    pub(crate) json: bool,
}

/// How many differing items `diff` lists without `--all`.
const DIFFERENCES_SHOWN: usize = 20;

/// `diff A B`: the report of their differences; exit 1 when they differ.
pub(crate) fn run(
    a: &Path,
    b: &Path,
    base: Option<PathBuf>,
    flags: Flags,
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
    if flags.json {
        print_stdout(&super::json::diff(a, b, &report))?;
    } else {
        let legend = format!(
            "A: {}\nB: {}\n(- an item only in A, + only in B)\n\n",
            a.display(),
            b.display()
        );
        print_stdout(&(legend + &report.to_string()))?;
    }
    Ok(if report.equal {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
