//! The kernel's BTF checks (`dwarf2btf verify`).
