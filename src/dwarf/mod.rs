//! DWARF decoding: compile units and the per-CU type model pahole's loader builds.
//!
//! `units` finds the compile units; per CU, `types` builds the type model (walking every DIE
//! with `dies`' cursor), `variables` the variables and `functions` the function model. `functions` reads parameter locations with
//! `locations` (over `expr`, the DWARF expression decoder) and asks `layout` whether a struct
//! is packed.

use gimli::{DwAt, DwTag};

/// `DW_TAG_LLVM_annotation` (clang's `btf_type_tag` / `btf_decl_tag`).
const DW_TAG_LLVM_ANNOTATION: DwTag = DwTag(0x6000);
/// `DW_TAG_GNU_annotation` (GCC 16+).
const DW_TAG_GNU_ANNOTATION: DwTag = DwTag(0x6001);
/// `DW_AT_GNU_annotation`: GCC's link from a DIE to its annotations.
const DW_AT_GNU_ANNOTATION: DwAt = DwAt(0x2139);
/// The longest typedef/modifier/array chain (or struct nesting) followed: malformed DWARF can
/// make cycles.
const MAX_CHAIN: usize = 64;

pub mod cycles;
mod dies;
mod expr;
pub mod foreign;
pub mod functions;
mod layout;
mod locations;
pub mod types;
pub mod units;
pub mod variables;
