//! Encoding: CU type models to BTF records with pahole's per-CU emission order, variables,
//! and the concatenation of worker chunks. Functions found on the way are handed on to the
//! caller (the functions stage saves them).

pub mod chunk;
pub mod concat;
pub mod error;
pub mod types;
pub mod variables;
