//! DWARF decoding: compile units and the per-CU type model pahole's loader builds.

pub mod functions;
pub mod types;
pub mod units;
pub mod variables;
