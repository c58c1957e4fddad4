//! The crate's error type: one variant per way an input or a request can be wrong.
//!
//! Every variant renders as one line a user can act on; `main` prints it after `dwarf2btf: `
//! and exits non-zero.

use std::path::PathBuf;

use crate::btf::Kind;

/// Everything that can go wrong in dwarf2btf.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file concerned.
        path: PathBuf,
        /// The underlying I/O error.
        source: std::io::Error,
    },
    /// A file is not an ELF file `object` can parse, or its headers cannot be rewritten.
    #[error("{path}: not a valid ELF file: {reason}")]
    BadElf {
        /// The file concerned.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// An ELF section is missing, cannot be decompressed or holds bad data.
    #[error("{path}: section {section}: {reason}")]
    BadSection {
        /// The ELF file.
        path: PathBuf,
        /// The section's name.
        section: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A compile unit's DWARF cannot be decoded.
    #[error("{path}: invalid DWARF in CU at .debug_info+{cu_offset:#x}: {reason}")]
    BadDwarf {
        /// The ELF file.
        path: PathBuf,
        /// Where in `.debug_info` (bytes): the failing DIE when known, else the CU header.
        cu_offset: u64,
        /// What is wrong with it.
        reason: String,
    },
    /// A DIE, variable or kfunc cannot be turned into BTF.
    #[error("cannot encode {what} at DIE .debug_info+{die_offset:#x}: {reason}")]
    Encode {
        /// What was being encoded (a DWARF tag, a type description, a variable, a kfunc).
        what: String,
        /// The DIE's offset in `.debug_info`, in bytes (0 when there is no DIE).
        die_offset: u64,
        /// Why it cannot be encoded.
        reason: String,
    },
    /// BTF data cannot be read: what [`BtfError`] names.
    #[error("invalid BTF: {0}")]
    Btf(#[from] BtfError),
    /// BTF data is malformed, or a BTF operation was given invalid input; the text says how.
    /// The failures [`BtfError`] does not name yet (the builder, the dedup, distill, kernel
    /// joins) still say it in text; each moves to a variant of its own there.
    #[error("invalid BTF: {0}")]
    BadBtf(String),
    /// BTF would exceed a format limit (the number of types, a vlen); the text says which.
    #[error("BTF limit exceeded: {0}")]
    BtfLimit(String),
    /// The command line asks for something invalid; the text is the message shown.
    #[error("{0}")]
    Usage(String),
    /// An encoding worker ended without sending the chunk of a batch it had claimed (it
    /// panicked, or the merge stopped listening).
    #[error("an encoding worker stopped before batch {batch} was done")]
    WorkerStopped {
        /// The first batch that never arrived.
        batch: usize,
    },
}

/// What is wrong with BTF bytes being read (`btf::read`): one variant per failure, with its
/// data, gimli's way.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BtfError {
    /// Fewer bytes than the 24 of a header.
    #[error("{len} bytes is too short for a BTF header")]
    TooShort {
        /// The bytes there are.
        len: usize,
    },
    /// The first two bytes are not the BTF magic in either byte order.
    #[error("bad magic {magic:#06x} (expected 0xeb9f)")]
    BadMagic {
        /// The first two bytes, little-endian.
        magic: u16,
    },
    /// The header length is under 24 or beyond the data.
    #[error("bad header length {hdr_len}")]
    BadHeaderLength {
        /// The header's `hdr_len`.
        hdr_len: u32,
    },
    /// The type or string section ends past the data.
    #[error("a section runs past the end of the data")]
    SectionPastEnd,
    /// The type section's offset or length is not a multiple of 4.
    #[error("type section is not 4-byte aligned")]
    TypesUnaligned,
    /// Fewer words are left than a record's first three.
    #[error("type #{index} is truncated")]
    TypeTruncated {
        /// The record's position in the type section, from 1.
        index: usize,
    },
    /// A record's kind is none the format defines.
    #[error("type #{index} has unknown kind {kind}")]
    UnknownKind {
        /// The record's position in the type section, from 1.
        index: usize,
        /// The kind number found.
        kind: u32,
    },
    /// A record's members run past the type section.
    #[error("type #{index} ({kind}) runs past the type section")]
    TypePastEnd {
        /// The record's position in the type section, from 1.
        index: usize,
        /// The record's kind.
        kind: Kind,
    },
}

impl Error {
    /// Wraps an I/O error with the path it concerns.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
