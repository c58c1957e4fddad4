//! Reading the input file: the ELF container and its debug sections, and the target's
//! argument-passing ABI its ELF machine names (`arch`).

pub mod arch;
pub mod elf;
pub mod kfuncs;
pub mod relocations;
pub mod symbols;
