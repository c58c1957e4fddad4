//! Fuzz target `dedup_generated`: see [`dwarf2btf_fuzz::dedup_generated`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| dwarf2btf_fuzz::dedup_generated(data));
