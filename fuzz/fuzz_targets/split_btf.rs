//! Fuzz target `split_btf`: see [`dwarf2btf_fuzz::split_btf`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| dwarf2btf_fuzz::split_btf(data));
