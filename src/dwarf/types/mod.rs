//! DIE → type model: one CU's types table, in exactly the order pahole's `dwarf_loader` builds
//! its `types_table`, so that BTF id = `type_id_off + small_id` as in pahole.
//!
//! pahole adds a type DIE to the table after all of its children (nested types first), adds
//! `btf_type_tag` annotations of a pointer before the pointer, leaves top-level
//! `DW_TAG_unspecified_type` out (references to it become void) and keeps everything else in
//! DIE order. One DFS over the CU with an explicit frame stack reproduces that; DW_AT_type
//! references are collected as unit offsets and resolved to small ids once the walk is done.
//!
//! DIEs of other units that the CU references (LTO, dwz, type units: `foreign.rs`) are walked
//! after the CU, each subtree in its own unit, and their entries follow the CU's own; a
//! reference to one is an [`IMPORTED`] value instead of a unit offset. A declaration that
//! names a type unit's type with `DW_AT_signature` (gcc's skeletons) takes no slot and stands
//! for that type, as an atomic type does below.
//!
//! `DW_TAG_atomic_type` (C11 `_Atomic`) is where this differs from pahole, which rejects it:
//! BTF has no atomic qualifier, so, as LLVM's BPF backend does, the qualifier is dropped. An
//! atomic DIE takes no table slot; before references are resolved it is mapped to the small
//! id of the type it qualifies (through chains of atomics; a cycle of them is an error), so
//! every reference to it, including the lookups of `functions/` and `variables.rs` through
//! [`CuTypes::type_id_of`], sees the unqualified type. [`CuTypes::dropped_atomics`] lists them
//! for the `-V` notes.
//!
//! The decoder is split by concept: `walk.rs` walks the DIEs and builds the table's entries,
//! `attrs.rs` reads the attributes of one DIE, `imports.rs` brings in the DIEs of other units,
//! and `resolve.rs` turns the raw references into small ids once the walk is done;
//! `cdecl.rs` spells a type in C for messages and `why`.

use super::foreign::{UnitIndex, IMPORTED};
use super::units::{Cu, R};
use crate::config::Features;
pub use walk::TypesScratch;
use walker::Walker;

mod attrs;
mod cdecl;
mod imports;
mod model;
mod resolve;
mod walk;
mod walker;

pub use model::{Annot, CuTypes, DecodeError, Entry, Member};

/// Decodes the types of one CU, with those it imports from other units of `units`.
pub fn decode_cu_types<'a>(
    dwarf: &gimli::Dwarf<R<'a>>,
    units: &UnitIndex<'a>,
    cu: &Cu<'a>,
    features: &Features,
    scratch: &mut TypesScratch<'a>,
) -> Result<CuTypes<'a>, DecodeError> {
    if cu.header.length_including_self() >= IMPORTED as usize {
        return Err(DecodeError {
            die_offset: cu.offset as u64,
            cause: "the unit is larger than 1 GiB".into(),
        });
    }
    let mut w = Walker::new(dwarf, units, cu, features, scratch);
    w.walk()?;
    w.import_foreign()?;
    w.resolve_aliases()?;
    w.resolve()?;
    Ok(w.finish(scratch))
}
