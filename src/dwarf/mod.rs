//! DWARF decoding: compile units and the per-CU type model pahole's loader builds.
//!
//! `units` finds the compile units (whose `.debug_info` bytes `unit_copies` reads from the
//! file, a unit at a time, as the workers take them: relocated for a module); per CU, `types`
//! builds the type model (walking every DIE with `dies`' cursor), `variables` the variables
//! and `functions` the function model. `functions` reads parameter locations with
//! `locations` (over `expr`, the DWARF expression decoder) and asks `layout` whether a struct
//! is packed. `cycles` finds the types no C type can be, `die_starts` where the DIEs a
//! reference may lead to start.

use gimli::{DwAt, DwTag};

use crate::btf::kinds::KSYM_NAME_LEN;

/// `DW_TAG_LLVM_annotation` (clang's `btf_type_tag` / `btf_decl_tag`).
const DW_TAG_LLVM_ANNOTATION: DwTag = DwTag(0x6000);
/// `DW_TAG_GNU_annotation` (GCC 16+).
const DW_TAG_GNU_ANNOTATION: DwTag = DwTag(0x6001);
/// `DW_AT_GNU_annotation`: GCC's link from a DIE to its annotations.
const DW_AT_GNU_ANNOTATION: DwAt = DwAt(0x2139);
/// The longest typedef/modifier/array chain (or struct nesting) followed: malformed DWARF can
/// make cycles.
const MAX_CHAIN: usize = 64;

/// Why a `DW_AT_name` cannot name anything in BTF, if it cannot: the kernel rejects names
/// longer than its `KSYM_NAME_LEN` (no C identifier in a kernel is that long; hostile DWARF
/// may have one).
fn name_too_long(name: &[u8]) -> Option<String> {
    (name.len() > KSYM_NAME_LEN).then(|| {
        format!(
            "DW_AT_name is {} bytes long; the kernel takes BTF names of at most \
             {KSYM_NAME_LEN} bytes (KSYM_NAME_LEN)",
            name.len()
        )
    })
}

pub mod cycles;
pub mod die_starts;
mod dies;
pub mod error;
mod expr;
pub mod foreign;
pub mod functions;
mod layout;
mod locations;
pub mod types;
pub mod unit_copies;
pub mod units;
pub mod variables;
