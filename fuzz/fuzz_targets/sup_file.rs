//! Fuzz target `sup_file`: see [`dwarf2btf_fuzz::sup_file`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| dwarf2btf_fuzz::sup_file(data));
