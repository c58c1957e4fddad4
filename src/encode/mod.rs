//! Encoding: CU type models to BTF records with pahole's per-CU emission order, the state
//! saved per function instance, variables, and the concatenation of worker chunks.

pub mod chunk;
pub mod concat;
pub mod encoder;
pub mod func_state;
pub mod variables;
