//! `verify`: BTF judged by the kernel's rules (`--kernel-version`), or by the running kernel
//! itself (`--kernel`, through `BPF_BTF_LOAD`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use dwarf2btf::btf::read;
use dwarf2btf::toolbox::{kernel, verify};
use dwarf2btf::Result;

use super::{load_base, looks_split, print_stdout, refuse_split};
use crate::args::EXIT_TROUBLE;

/// `verify FILE`: the verdict by the rules of the file's header or of a kernel release.
pub(crate) fn run(
    file: &Path,
    base: Option<PathBuf>,
    version: Option<verify::KernelVersion>,
    json: bool,
) -> Result<ExitCode> {
    let data = read::file_btf_bytes(file)?;
    let base = load_base(base)?;
    if base.is_none() {
        refuse_split(file, &data)?;
    }
    let target = version.map_or(verify::Target::OwnHeader, verify::Target::Kernel);
    let verdict = verify::judge(&data, base.as_ref(), target);
    let name = file.display().to_string();
    print_stdout(&match json {
        true => super::json::verdict(&name, &verdict),
        false => verdict.report(&name),
    })?;
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
pub(crate) fn run_kernel(file: &Path, base: Option<&Path>) -> Result<ExitCode> {
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
