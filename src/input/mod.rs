//! Reading the input file: the ELF container and its debug sections.

pub mod elf;
pub mod kfuncs;
pub mod symbols;
