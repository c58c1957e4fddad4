//! The running kernel accepts the deduplicated vmlinux BTF, byte for byte, through
//! `bpf(BPF_BTF_LOAD)` (the kernel's full checks, resolve pass included). Skips, saying so,
//! only when the kernel refuses the call for lack of privilege — and fails even then under
//! DWARF2BTF_REQUIRE_KERNEL=1 (scripts/test.sh, as root).

mod common;

use common::*;

#[test]
fn kernel_accepts_deduplicated_vmlinux_btf() {
    let Some(data) = vmlinux_btf("btf_load") else {
        return;
    };
    match btf_load(&data) {
        Ok(fd) => close_fd(fd),
        Err((errno, _)) if kernel_refused(errno, "vmlinux BTF") => {}
        Err((errno, log)) => {
            let tail: String = log.lines().rev().take(20).collect::<Vec<_>>().join("\n");
            panic!("BPF_BTF_LOAD rejected the BTF (errno {errno}); log tail:\n{tail}");
        }
    }
}

/// The check can fail: a BTF with a struct member pointing at a nonexistent type is refused.
#[test]
fn kernel_rejects_corrupted_btf() {
    use dwarf2btf::btf::{kinds, write, Btf, Kind};
    let mut btf = Btf::new();
    let int = btf.add_int(b"int", 4, kinds::INT_SIGNED).unwrap();
    btf.add_composite(Kind::Struct, Some(b"s"), 4).unwrap();
    btf.add_field(Some(b"a"), int + 41, 0, 0).unwrap();
    let data = write::to_bytes(&btf);
    match btf_load(&data) {
        Ok(_) => panic!("the kernel accepted a member of a nonexistent type"),
        Err((errno, _)) if kernel_refused(errno, "corrupted BTF") => {}
        Err((errno, log)) => assert!(errno == 22, "errno {errno}: {log}"),
    }
}
