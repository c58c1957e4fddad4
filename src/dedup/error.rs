//! What the dedup finds wrong in the type graph it deduplicates ([`DedupError`]), beside the
//! dedup; the crate's [`crate::error::Error`] wraps it.

/// What the deduplication finds broken in the type graph, beyond a bad record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DedupError {
    /// An own type id has no raw record (it is held in a record store).
    #[error("type [{id}] is missing")]
    Missing {
        /// The type id.
        id: u32,
    },
    /// The records, laid end to end, are shorter than the type section.
    #[error("type records do not cover the type section")]
    NotCovered,
    /// A base type's kind is none the format defines.
    #[error("base type [{id}] has unknown kind {kind}")]
    UnknownBaseKind {
        /// The base type's id.
        id: u32,
        /// The kind number found.
        kind: u32,
    },
    /// Reference types (PTR, CONST, ARRAY, FUNC_PROTO ...) that reach themselves through
    /// reference types only (libbpf's `-ELOOP`), found while ordering them.
    #[error("type [{id}] is part of a reference type cycle")]
    RefCycle {
        /// A type on the cycle.
        id: u32,
    },
    /// A chain of reference types, followed while comparing two types, that never ends.
    #[error("reference type cycle through type [{id}]")]
    RefChainCycle {
        /// The type the chain had reached when it was given up.
        id: u32,
    },
    /// A type of a kind (VAR, DATASEC, DECL_TAG ...) that a struct's members cannot reach.
    #[error("type [{id}] of kind {kind} cannot take part in a struct type graph")]
    NotInStructGraph {
        /// The type id.
        id: u32,
        /// Its kind number.
        kind: u32,
    },
    /// More types than the dedup's per-id entries can number.
    #[error("{count} types are more than the {max} the deduplication takes")]
    TooManyTypes {
        /// The types given.
        count: u32,
        /// The most it takes.
        max: u32,
    },
    /// A surviving type references one that was given no new id.
    #[error("type [{id}] references type [{target}], which has no deduplicated id")]
    NoNewId {
        /// The referring type's id.
        id: u32,
        /// The referenced id.
        target: u32,
    },
}
