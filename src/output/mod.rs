//! Writing outputs so that no data can be lost: a temporary file in the target's directory,
//! written, given the target's mode and owner ([`Keep`]), flushed to disk, renamed over the
//! target, and the directory flushed too — raw BTF files here, sections of an ELF file in
//! [`elf`]. Until the rename the target is untouched; after it, the new contents are on disk.
//! A process killed on the way leaves at most its temporary file (`.NAME.tmp.PID` or
//! `.NAME.btf.PID`).
//!
//! A target reached through symlinks is written where they lead (a dangling one creates its
//! target); a target with other hard links is refused, since the rename would leave the
//! other names with the old contents. A target that is a device, FIFO or socket is written
//! in place (nothing could be renamed over it without replacing the node). The temporary
//! file is readable by its owner alone until it is complete and given its mode.

pub mod elf;
pub mod signals;

use std::fs::{File, Metadata, OpenOptions, Permissions};
use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Writes `bytes` to `path` through a temporary file and a rename, so that a failure never
/// leaves a partial file behind and a reader never sees one. An existing `path` keeps its
/// mode and owner ([`Keep`]); a symlink is written through, not replaced.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    // A device, FIFO or socket (/dev/null, /dev/stdout into a pipe) is written in place, as
    // pahole writes it: renaming a file over it would replace the node. The kernel resolves
    // the symlinks here (/dev/stdout leads through /proc/self/fd/1, no path).
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => {
            let e = std::io::Error::from(std::io::ErrorKind::IsADirectory);
            return Err(Error::io(path, e));
        }
        Ok(m) if !m.is_file() => return write_in_place(path, bytes),
        _ => {}
    }
    let path = through_symlinks(path).map_err(|e| Error::io(path, e))?;
    let keep = match std::fs::metadata(&path) {
        Ok(meta) => {
            may_write(&path).map_err(|e| Error::io(&path, e))?;
            Some(Keep::of(&meta).map_err(|e| Error::io(&path, e))?)
        }
        Err(_) => None,
    };
    let tmp = temp_path(&path, "tmp");
    let _cleanup = signals::remove_on_signal(&tmp);
    let result = create_temp(&tmp).and_then(|mut f| {
        f.write_all(bytes)?;
        commit(f, &tmp, &path, keep.as_ref())
    });
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(Error::io(&path, e));
    }
    Ok(())
}

/// Writes `bytes` into the existing node at `path`, which is not a regular file.
fn write_in_place(path: &Path, bytes: &[u8]) -> Result<()> {
    OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(path)
        .and_then(|mut f| f.write_all(bytes))
        .map_err(|e| Error::io(path, e))
}

/// Whether this process may write the existing file at `path`, as `open(O_WRONLY)` decides
/// (pahole writes its outputs so): the rename would replace a file its permissions protect,
/// a read-only one or someone else's in a directory this user may write.
pub(crate) fn may_write(path: &Path) -> std::io::Result<()> {
    OpenOptions::new().write(true).open(path).map(drop)
}

/// Where `path` leads through any symlinks, the last of which may dangle (its target is
/// then the file to create). Relative link targets are taken from the link's directory.
pub(crate) fn through_symlinks(path: &Path) -> std::io::Result<PathBuf> {
    /// Linux's limit on links followed in one lookup.
    const MAX_LINKS: usize = 40;
    let mut path = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let target = std::fs::read_link(&path)?;
                path = parent(&path).join(target);
            }
            _ => return Ok(path),
        }
    }
    Err(std::io::Error::from_raw_os_error(libc::ELOOP))
}

/// What a rewritten file keeps of the file it replaces: its mode and, where this process may
/// give it away (as root), its owner and group. A set-user-ID or set-group-ID bit is kept
/// only with the owner or group it was for: otherwise the new file would run with this
/// user's rights and contents of someone else's choosing (`install` and objcopy drop the
/// bits likewise).
pub(crate) struct Keep {
    mode: u32,
    uid: u32,
    gid: u32,
}

impl Keep {
    /// What to keep of the file `meta` describes; an error when it has other hard links
    /// (the rename would split them).
    pub(crate) fn of(meta: &Metadata) -> std::io::Result<Self> {
        if meta.nlink() > 1 {
            return Err(std::io::Error::other(format!(
                "has {} hard links, and replacing it would leave the other names with the old \
                 contents: write to a file of its own (or break the links) instead",
                meta.nlink()
            )));
        }
        Ok(Keep {
            mode: meta.mode() & 0o7777,
            uid: meta.uid(),
            gid: meta.gid(),
        })
    }

    /// Gives `file` the owner and group (when allowed) and then the mode (chown clears the
    /// set-ID bits, so the mode comes last).
    fn apply(&self, file: &File) -> std::io::Result<()> {
        // Only root may give a file away; anyone else keeps the file as created, and the
        // check below drops the bits that were for someone else.
        let _ = std::os::unix::fs::fchown(file, Some(self.uid), Some(self.gid));
        let now = file.metadata()?;
        let mut mode = self.mode;
        if now.uid() != self.uid {
            mode &= !0o4000;
        }
        if now.gid() != self.gid {
            mode &= !0o2000;
        }
        file.set_permissions(Permissions::from_mode(mode))
    }
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
/// first, and the file is created exclusively (never through a symlink someone put there)
/// and readable by its owner alone until [`commit`] gives it its final mode: it may hold a
/// copy of a file others may not read.
pub(crate) fn create_temp(tmp: &Path) -> std::io::Result<File> {
    let _ = std::fs::remove_file(tmp);
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(tmp)
        .map_err(|e| {
            // The directory is what refused (read-only, not writable by this user, full).
            let dir = parent(tmp).display();
            std::io::Error::new(e.kind(), format!("cannot create a file in {dir}: {e}"))
        })
}

/// The mode a new file gets from `open(O_CREAT, 0666)`: 0666 less the process's umask
/// (read from /proc; 022 where it cannot be).
fn new_file_mode() -> u32 {
    let umask = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("Umask:"))?;
            u32::from_str_radix(line["Umask:".len()..].trim(), 8).ok()
        })
        .unwrap_or(0o022);
    0o666 & !umask
}

/// Finishes a temporary file: gives it what `keep` says, flushes it to disk, renames it over
/// `path`, and flushes the directory, so that the rename itself survives a crash.
pub(crate) fn commit(
    file: File,
    tmp: &Path,
    path: &Path,
    keep: Option<&Keep>,
) -> std::io::Result<()> {
    match keep {
        Some(keep) => keep.apply(&file)?,
        None => file.set_permissions(Permissions::from_mode(new_file_mode()))?,
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
