//! The crate's error type: one variant per way an input or a request can be wrong.
//!
//! Every variant renders as one line a user can act on; `main` prints it after `dwarf2btf: `
//! and exits non-zero.

use std::path::PathBuf;

/// Everything that can go wrong in dwarf2btf.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: not a valid ELF file: {reason}")]
    BadElf { path: PathBuf, reason: String },
    #[error("{path}: section {section}: {reason}")]
    BadSection {
        path: PathBuf,
        section: String,
        reason: String,
    },
    #[error("{path}: invalid DWARF in CU at .debug_info+{cu_offset:#x}: {reason}")]
    BadDwarf {
        path: PathBuf,
        cu_offset: u64,
        reason: String,
    },
    #[error("{path}: unsupported DWARF tag {tag} at DIE .debug_info+{die_offset:#x}: BTF has no equivalent")]
    UnsupportedTag {
        path: PathBuf,
        tag: String,
        die_offset: u64,
    },
    #[error("cannot encode {what} at DIE .debug_info+{die_offset:#x}: {reason}")]
    Encode {
        what: String,
        die_offset: u64,
        reason: String,
    },
    #[error("invalid BTF: {0}")]
    BadBtf(String),
    #[error("BTF limit exceeded: {0}")]
    BtfLimit(String),
    #[error("{0}")]
    Usage(String),
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
