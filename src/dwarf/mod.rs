//! DWARF decoding: compile units and the per-CU type model pahole's loader builds.

pub mod types;
pub mod units;
