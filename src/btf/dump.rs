//! Human-readable listing of BTF (`dwarf2btf dump`).
