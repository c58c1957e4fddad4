//! DWARF decoding: compile units and the per-CU type model pahole's loader builds.
//!
//! `units` finds the compile units; per CU, `types` builds the type model, `variables` the
//! variables and `functions` the function model. `functions` reads parameter locations with
//! `locations` (over `expr`, the DWARF expression decoder) and asks `layout` whether a struct
//! is packed.

pub mod cycles;
mod expr;
pub mod foreign;
pub mod functions;
mod layout;
mod locations;
pub mod types;
pub mod units;
pub mod variables;
