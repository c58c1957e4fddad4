//! The crate's error type: one variant per way an input or a request can be wrong.
//!
//! Every variant renders as one line a user can act on; `main` prints it after `dwarf2btf: `
//! and exits non-zero. The BTF failures are closed, typed enums, one per stage that finds
//! them, gimli's way: [`BtfError`] (reading), [`JoinError`] (joining split BTF to its base),
//! [`RecordError`] (one record), [`BuildError`] (`Btf::add_*`), [`LimitError`] (format
//! limits), [`DedupError`], [`DistillError`] and [`ConcatError`] (the encoder's chunks); a
//! DWARF failure keeps gimli's own error in its [`DwarfCause`].

use std::path::PathBuf;

pub use crate::btf::error::{
    BtfError, BuildError, DistillError, JoinError, LimitError, RecordError,
};
pub use crate::dedup::error::DedupError;
pub use crate::dwarf::error::DwarfCause;
pub use crate::encode::error::ConcatError;

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
    #[error("{path}: invalid DWARF at .debug_info+{offset:#x}: {cause}")]
    BadDwarf {
        /// The ELF file.
        path: PathBuf,
        /// Where in `.debug_info` (bytes): the failing DIE when known, else the CU header.
        offset: u64,
        /// What is wrong with it: gimli's error, or what the encoder cannot take.
        #[source]
        cause: DwarfCause,
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
    /// Split BTF cannot be joined to its base (`toolbox::kernel::join_split`).
    #[error("invalid BTF: {0}")]
    Join(#[from] JoinError),
    /// A type record is malformed, or refers to a type or string that is not there.
    #[error("invalid BTF: {0}")]
    Record(#[from] RecordError),
    /// A `Btf::add_*` call was given something BTF cannot hold.
    #[error("invalid BTF: {0}")]
    Build(#[from] BuildError),
    /// The deduplication found the type graph broken.
    #[error("invalid BTF: {0}")]
    Dedup(#[from] DedupError),
    /// A base cannot be distilled from split BTF.
    #[error("invalid BTF: {0}")]
    Distill(#[from] DistillError),
    /// The encoded chunks do not fit together: a dwarf2btf bug, not bad input.
    #[error("cannot concatenate the encoded chunks: {0}")]
    Concat(#[from] ConcatError),
    /// BTF would exceed a format limit: what [`LimitError`] names.
    #[error("BTF limit exceeded: {0}")]
    BtfLimit(#[from] LimitError),
    /// The command line asks for something invalid; the text is the message shown.
    #[error("{0}")]
    Usage(String),
    /// A base BTF (`--btf_base`, alias `--base` in the subcommands) that cannot be read or
    /// that breaks the kernel's rules: split BTF built on it would be as broken.
    #[error("--btf_base {path}: not usable as base BTF: {reason}")]
    BadBase {
        /// The base file.
        path: PathBuf,
        /// What is wrong with it (the first problem, and how many more).
        reason: String,
    },
    /// The BTF encoded from an input breaks the kernel's rules (`verify`'s checks): writing
    /// it would give a file every kernel refuses, so nothing is written.
    #[error(
        "{path}: the BTF encoded from it breaks the kernel's rules, nothing written: {reason}"
    )]
    RejectedOutput {
        /// The input.
        path: PathBuf,
        /// The first problem, and how many more.
        reason: String,
    },
    /// An encoding worker ended without sending the chunk of a batch it had claimed (it
    /// panicked, or the merge stopped listening).
    #[error("an encoding worker stopped before batch {batch} was done")]
    WorkerStopped {
        /// The first batch that never arrived.
        batch: usize,
    },
}

impl Error {
    /// What a `Btf::add_*` call refused (a [`BuildError`], or a format limit) as an
    /// [`Error::Encode`] of `what` at `die_offset`; any other error is returned as it is.
    pub(crate) fn while_encoding(self, what: impl FnOnce() -> String, die_offset: u64) -> Error {
        let reason = match self {
            Error::Build(e) => e.to_string(),
            Error::BtfLimit(e) => e.to_string(),
            e => return e,
        };
        Error::Encode {
            what: what(),
            die_offset,
            reason,
        }
    }

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
