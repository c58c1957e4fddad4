//! The subcommands that describe the tool itself: `version`, `completions`, `man`.

use std::process::ExitCode;

use dwarf2btf::config::PAHOLE_VERSION;
use dwarf2btf::{Error, Result};

use super::print_stdout;

/// `version`: dwarf2btf's own version, its commit, and the pahole version it implements.
pub(crate) fn version() -> ExitCode {
    let (major, minor) = PAHOLE_VERSION;
    let commit = match env!("DWARF2BTF_COMMIT") {
        "" => String::new(),
        c => format!(", commit {c}"),
    };
    println!(
        "dwarf2btf {}{commit} (pahole v{major}.{minor} command line and encoding)",
        env!("CARGO_PKG_VERSION")
    );
    ExitCode::SUCCESS
}

/// `completions SHELL`: the shell's completion script.
pub(crate) fn completions(shell: clap_complete::Shell) -> Result<ExitCode> {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut crate::args::command(), "dwarf2btf", &mut script);
    print_stdout(&String::from_utf8_lossy(&script))?;
    Ok(ExitCode::SUCCESS)
}

/// `man`: the man page, in roff.
pub(crate) fn man() -> Result<ExitCode> {
    let mut page = Vec::new();
    clap_mangen::Man::new(crate::args::command())
        .render(&mut page)
        .map_err(|e| Error::io("<stdout>", e))?;
    print_stdout(&String::from_utf8_lossy(&page))?;
    Ok(ExitCode::SUCCESS)
}
