//! DWARF decoding: compile units and the per-CU type model pahole's loader builds.

#![allow(missing_docs)] // TODO(issue 15): documented after the split of functions.rs lands

pub mod functions;
pub mod types;
pub mod units;
pub mod variables;
