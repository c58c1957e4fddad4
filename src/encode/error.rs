//! What the encode stage finds wrong while it concatenates the workers' chunks
//! ([`ConcatError`]), beside the stage; the crate's [`crate::error::Error`] wraps it.

/// What is wrong with the encoder's own chunks when they are concatenated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConcatError {
    /// A chunk's record has a kind none the format defines.
    #[error("type [{id}] of a chunk has unknown kind {kind}")]
    UnknownKind {
        /// The record's id in its chunk.
        id: u32,
        /// The kind number found.
        kind: u32,
    },
    /// An ARRAY's chunk comes before the CU that establishes the array index type.
    #[error("an array precedes the CU that establishes the index type")]
    ArrayBeforeIndexType,
}
