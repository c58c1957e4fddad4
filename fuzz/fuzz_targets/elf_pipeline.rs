//! Fuzz target `elf_pipeline`: see [`dwarf2btf_fuzz::elf_pipeline`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| dwarf2btf_fuzz::elf_pipeline(data));
