//! The functions stage: what happens to functions between encoding and dedup — pahole's
//! saved-function machinery.
//!
//! Workers encoding CUs find each DWARF function that has an ELF symbol and save an
//! [`instance`] of it (prototype, flags, parameter locations' verdicts) into the function
//! [`table`], shared between the workers in one of four designs. Each owner's instances of a
//! function are [`fold`]ed into one summary (prototypes compared through their id-free
//! [`signature`]). After the workers have joined, the [`final_pass`] merges the owners'
//! summaries per function, applies pahole's skip rules and emits FUNC_PROTO + FUNC. A
//! [`watch`] sees chosen functions go through all of it (`dwarf2btf why`); a [`trace`] records
//! every save of a run (`--trace-saves`) for replaying it against each table design.

pub mod decision;
pub mod final_pass;
pub mod fold;
pub mod instance;
mod packing;
pub mod signature;
pub mod table;
pub mod trace;
pub mod watch;
