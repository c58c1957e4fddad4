//! Id-independent canonical rendering of BTF types, used by `dwarf2btf diff`.
