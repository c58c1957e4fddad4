//! The subcommands, one file each (`encode.rs` is the pahole-style run without one), and what
//! they share: reading BTF files and writing to stdout.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use dwarf2btf::btf::{read, Btf};
use dwarf2btf::{Error, Result};

pub(crate) mod about;
pub(crate) mod diff;
pub(crate) mod dump;
pub(crate) mod encode;
pub(crate) mod json;
pub(crate) mod verify;
pub(crate) mod why;

/// Reads a base BTF, its strings indexed so that split BTF reuses them.
pub(crate) fn load_base(base: Option<PathBuf>) -> Result<Option<Arc<Btf>>> {
    base.as_deref()
        .map(dwarf2btf::toolbox::verify::read_base)
        .transpose()
}

/// Writes to stdout; a reader that went away (`| head`) ends the output quietly.
pub(crate) fn print_stdout(text: &str) -> Result<()> {
    match std::io::stdout().lock().write_all(text.as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(Error::io("<stdout>", e)),
        _ => Ok(()),
    }
}

/// Reads the BTF of `path` for `dump` and `diff`, refusing split BTF given without its base.
pub(crate) fn read_btf(path: &Path, base: Option<Arc<Btf>>) -> Result<Btf> {
    let data = read::file_btf_bytes(path)?;
    if base.is_none() {
        refuse_split(path, &data)?;
    }
    read::parse(&data, base)
}

/// Split BTF without its base cannot be read: its type ids and string offsets continue the
/// base's. One line asking for the base, rather than a listing of wrong names or a hundred
/// rule violations.
pub(crate) fn refuse_split(path: &Path, data: &[u8]) -> Result<()> {
    if !looks_split(data) {
        return Ok(());
    }
    Err(Error::Usage(format!(
        "{}: this looks like split BTF (its strings do not start with an empty string): \
         give its base with --btf_base (e.g. the vmlinux it was built against)",
        path.display()
    )))
}

/// Whether raw BTF looks split: its string section does not start with the empty string.
pub(crate) fn looks_split(data: &[u8]) -> bool {
    read::parse_header(data).is_ok_and(|h| {
        let at = h.hdr_len as usize + h.str_off as usize;
        h.str_len > 0 && data.get(at) != Some(&0)
    })
}
