//! The crate's error type: one variant per way an input or a request can be wrong.
//!
//! Every variant renders as one line a user can act on; `main` prints it after `dwarf2btf: `
//! and exits non-zero.

use std::path::PathBuf;

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
    /// BTF data is malformed, or a BTF operation was given invalid input; the text says how.
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
