//! Fuzz target `btf_read_verify`: see [`dwarf2btf_fuzz::btf_read_verify`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| dwarf2btf_fuzz::btf_read_verify(data));
