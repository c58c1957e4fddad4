//! Encoding: CU type models to BTF records, with pahole's per-CU emission order.

pub mod encoder;
pub mod variables;
