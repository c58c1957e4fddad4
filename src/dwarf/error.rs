//! Why DWARF could not be decoded ([`DwarfCause`]): gimli's own error, kept as gimli reports
//! it, or DWARF that gimli reads but that describes something the encoder cannot take.

use std::fmt;

/// What is wrong with a piece of DWARF.
#[derive(Debug)]
pub enum DwarfCause {
    /// gimli could not read it (a truncated unit, a bad form, an offset out of range, ...).
    Read(gimli::Error),
    /// Readable, but not what the encoder can take: what is wrong, for a human.
    Malformed(String),
}

impl fmt::Display for DwarfCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DwarfCause::Read(e) => write!(f, "{e}"),
            DwarfCause::Malformed(reason) => f.write_str(reason),
        }
    }
}

impl std::error::Error for DwarfCause {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            DwarfCause::Read(e) => Some(e),
            DwarfCause::Malformed(_) => None,
        }
    }
}

impl From<gimli::Error> for DwarfCause {
    fn from(e: gimli::Error) -> Self {
        DwarfCause::Read(e)
    }
}

impl From<String> for DwarfCause {
    fn from(reason: String) -> Self {
        DwarfCause::Malformed(reason)
    }
}

impl From<&str> for DwarfCause {
    fn from(reason: &str) -> Self {
        DwarfCause::Malformed(reason.to_string())
    }
}
