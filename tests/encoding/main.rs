//! Encoding the C fixtures (compiled at test time by gcc and clang): types, functions,
//! variables, cross-unit references, and what pahole would encode from the same DWARF.
//!
//! One test binary per theme (tests/*/main.rs), each module one concern; they share
//! tests/common.

#[path = "../common/mod.rs"]
pub mod common;

mod atomic;
mod attributes;
mod bad_references;
mod cross_unit;
mod dwarf_functions;
mod elf_vars;
mod fixtures;
mod functions;
mod optimized_parms;
