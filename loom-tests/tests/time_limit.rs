//! The negative control of the loom suite's time limit (`.config/nextest.toml`, profile
//! `loom`): with `DWARF2BTF_LOOM_HANG` set, this test never ends, and scripts/test.sh checks
//! that nextest kills it (TIMEOUT) under the same mechanism, with a limit of seconds. Without
//! the variable it passes at once.
#![cfg(dwarf2btf_loom)]

#[test]
fn hangs_when_asked() {
    if std::env::var_os("DWARF2BTF_LOOM_HANG").is_none() {
        return;
    }
    loop {
        std::thread::sleep(std::time::Duration::from_secs(1));
    }
}
