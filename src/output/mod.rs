//! Writing outputs so that no data can be lost: a temporary file in the target's directory,
//! written, given the target's mode, flushed to disk, renamed over the target, and the
//! directory flushed too — raw BTF files here, sections of an ELF file in [`elf`]. Until the
//! rename the target is untouched; after it, the new contents are on disk. A process killed
//! on the way leaves at most its temporary file (`.NAME.tmp.PID` or `.NAME.btf.PID`).

pub mod elf;

use std::fs::{File, OpenOptions, Permissions};
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Writes `bytes` to `path` through a temporary file and a rename, so that a failure never
/// leaves a partial file behind and a reader never sees one. An existing `path` keeps its
/// mode (as when pahole rewrites it), and a symlink is written through, not replaced.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let mode = std::fs::metadata(&path).ok().map(|m| m.permissions());
    let tmp = temp_path(&path, "tmp");
    let result = create_temp(&tmp).and_then(|mut f| {
        f.write_all(bytes)?;
        commit(f, &tmp, &path, mode)
    });
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(Error::io(&path, e));
    }
    Ok(())
}

/// `.NAME.TAG.PID` beside `path`.
pub(crate) fn temp_path(path: &Path, tag: &str) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let dir = parent(path);
    dir.join(format!(".{name}.{tag}.{}", std::process::id()))
}

/// The directory `path` is in (`.` for a bare file name).
fn parent(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// A new temporary file at `tmp`: one left by a killed process of the same id is removed
/// first, and the file is created exclusively (never through a symlink someone put there).
pub(crate) fn create_temp(tmp: &Path) -> std::io::Result<File> {
    let _ = std::fs::remove_file(tmp);
    OpenOptions::new().write(true).create_new(true).open(tmp)
}

/// Finishes a temporary file: gives it `mode`, flushes it to disk, renames it over `path`,
/// and flushes the directory, so that the rename itself survives a crash.
pub(crate) fn commit(
    file: File,
    tmp: &Path,
    path: &Path,
    mode: Option<Permissions>,
) -> std::io::Result<()> {
    if let Some(mode) = mode {
        file.set_permissions(mode)?;
    }
    file.sync_all()?;
    drop(file);
    std::fs::rename(tmp, path)?;
    match File::open(parent(path)).and_then(|d| d.sync_all()) {
        // A file system that cannot flush a directory has nothing more to flush.
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => Ok(()),
        r => r,
    }
}
