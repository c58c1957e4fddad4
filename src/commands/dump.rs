//! `dump`: per-kind counts and a readable listing of a BTF file.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use dwarf2btf::toolbox::dump;
use dwarf2btf::{Error, Result};

use super::{load_base, print_stdout, read_btf};

/// `dump FILE`: the listing on stdout.
pub(crate) fn run(file: &Path, base: Option<PathBuf>, json: bool) -> Result<ExitCode> {
    let btf = read_btf(file, load_base(base)?)?;
    if json {
        print_stdout(&super::json::dump(&file.display().to_string(), &btf))?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut listing = Vec::new();
    dump::dump(&btf, &mut listing).map_err(|e| Error::io("<stdout>", e))?;
    print_stdout(&String::from_utf8_lossy(&listing))?;
    Ok(ExitCode::SUCCESS)
}
