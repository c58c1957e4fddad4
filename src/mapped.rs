//! Files as bytes, memory-mapped: the encoder's ELF input and the BTF files the `btf` readers
//! take (a base vmlinux is hundreds of MiB, of which only `.BTF` is read). The one place that
//! maps files. Mapping is sound only while the file does not change, which no function can
//! promise on its own, so [`Mapped::open`] is `unsafe` (as ripgrep's `MmapChoice::auto`): each
//! caller states why its file holds still.

use std::fs::File;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use memmap2::Mmap;

use crate::error::{Error, Result};

/// A read-only memory map of a file.
pub struct Mapped {
    path: PathBuf,
    map: Mmap,
    /// The file itself, for [`Mapped::read_from_file`].
    file: File,
}

impl Mapped {
    /// Maps `path` read-only.
    ///
    /// # Safety
    ///
    /// The file must not be modified or truncated (by this process or any other) while the
    /// returned map, or any slice borrowed from it, is alive: the slices are plain `&[u8]`, and
    /// bytes changing under them, or a `SIGBUS` from a truncated file, is undefined behaviour
    /// Rust cannot guard against. The map is private and read-only, so dwarf2btf itself never
    /// writes through it; the caller answers for everyone else.
    ///
    /// Only a regular file is mapped: it is opened without blocking (a FIFO would otherwise
    /// wait for a writer) and a directory, FIFO, socket or device is refused with an error
    /// saying so.
    pub unsafe fn open(path: &Path) -> Result<Self> {
        let file = File::options()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)
            .map_err(|e| Error::io(path, e))?;
        let kind = file.metadata().map_err(|e| Error::io(path, e))?.file_type();
        if !kind.is_file() {
            let e = if kind.is_dir() {
                std::io::Error::from(std::io::ErrorKind::IsADirectory)
            } else {
                std::io::Error::other("is not a regular file (a FIFO, socket or device)")
            };
            return Err(Error::io(path, e));
        }
        // SAFETY: the caller promises the file is not changed while the map lives (this
        // function's contract); the map is read-only, so nothing here writes through it.
        let map = unsafe { Mmap::map(&file) }.map_err(|e| Error::io(path, e))?;
        Ok(Mapped {
            path: path.to_path_buf(),
            map,
            file,
        })
    }

    /// The mapped bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.map
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Where `bytes` lie in the file, when they are a slice of the mapped bytes (not of a
    /// decompressed section's copy, say).
    fn range_of(&self, bytes: &[u8]) -> Option<std::ops::Range<usize>> {
        let start = (bytes.as_ptr() as usize).checked_sub(self.map.as_ptr() as usize)?;
        let end = start.checked_add(bytes.len())?;
        (end <= self.map.len()).then_some(start..end)
    }

    /// [`Mapped::release`] for a slice of the mapped bytes (nothing when `bytes` lies
    /// elsewhere, as a decompressed section's copy does).
    pub fn release_slice(&self, bytes: &[u8]) {
        if let Some(range) = self.range_of(bytes) {
            self.release(range);
        }
    }

    /// Copies `bytes`, a slice of the mapped bytes, into `out` (as long) by reading the file,
    /// so that no page of the mapping becomes resident.
    pub fn read_from_file(&self, bytes: &[u8], out: &mut [u8]) -> std::io::Result<()> {
        match self.range_of(bytes) {
            Some(range) if out.len() == range.len() => {
                self.file.read_exact_at(out, range.start as u64)
            }
            _ => Err(std::io::Error::other(
                "the bytes to read are not of the mapped file",
            )),
        }
    }

    /// Tells the kernel a byte range will not be read again, so its page-cache pages can leave
    /// this process's resident set (the file stays intact).
    pub fn release(&self, range: std::ops::Range<usize>) {
        let end = range.end.min(self.map.len());
        if end <= range.start {
            return;
        }
        // The pages partly in the range go too: memmap2 moves the start down to its page
        // (whatever the page size), and the kernel rounds the length up to whole pages.
        // SAFETY: MADV_DONTNEED on a private read-only file mapping only drops this process's
        // page references; the next access re-reads the unchanged file, so no slice handed out
        // from this map can observe different bytes. A failure changes memory use, never results.
        let _ = unsafe {
            self.map.unchecked_advise_range(
                memmap2::UncheckedAdvice::DontNeed,
                range.start,
                end - range.start,
            )
        };
    }
}
