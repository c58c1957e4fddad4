//! The reference kernel (Debian 6.1.0-57 cloud vmlinux, fetched by scripts/fetch-kernel.sh):
//! encoded with the kernel's flags, its types are compared with pahole HEAD's output in
//! ../shared/oracles, and the BTF must pass `dwarf2btf verify` and `bpftool btf dump`.

mod common;

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use common::*;

/// Encodes the kernel once per test binary (the kernel's pahole flags, -j2).
fn kernel_btf() -> Option<&'static PathBuf> {
    static OUT: OnceLock<Option<PathBuf>> = OnceLock::new();
    OUT.get_or_init(|| {
        let vmlinux = vmlinux()?;
        let out = scratch("kernel").join("vmlinux.btf");
        let o = encode(&vmlinux, &out, &[KERNEL_FEATURES, "--lang_exclude=rust", "-j2"]);
        assert!(o.status.success(), "encoding the kernel failed: {}", text(&o));
        Some(out)
    })
    .as_ref()
}

#[test]
fn kernel_types_match_pahole_head() {
    let Some(ours) = kernel_btf() else { return };
    let d = run(Command::new(bin())
        .args(["diff", "--set", "--fold-fwd", "--only", "types"])
        .arg(ours)
        .arg(oracle_btf()));
    assert!(d.status.success(), "kernel types differ from pahole's:\n{}", text(&d));
}

#[test]
fn kernel_btf_passes_verify_and_bpftool() {
    let Some(ours) = kernel_btf() else { return };
    let v = run(Command::new(bin()).arg("verify").arg(ours));
    assert!(v.status.success(), "verify rejected the kernel BTF:\n{}", text(&v));
    let dump = run_ok(Command::new(tool("bpftool")).args(["btf", "dump", "file"]).arg(ours));
    let listing = String::from_utf8_lossy(&dump.stdout);
    assert!(listing.contains("STRUCT 'task_struct'"), "bpftool listing lacks task_struct");
}

/// The oracle comparison can fail: pahole's output against itself with one struct member
/// retargeted must differ.
#[test]
fn oracle_comparison_detects_a_changed_member() {
    use dwarf2btf::btf::{read, write, Kind};
    let oracle = oracle_btf();
    let btf = read::read_file(&oracle, None).unwrap();
    let list_head = btf
        .own_types()
        .find(|t| t.kind() == Some(Kind::Struct) && btf.name(t.name_off()) == "list_head")
        .map(|t| t.id)
        .unwrap();
    let mut bytes = write::to_bytes(&btf);
    // Retarget list_head.next (first member's type word) to list_head itself (a struct, not a
    // pointer): header 24 bytes + the record's word offset.
    let word = btf.type_words().as_ptr_range();
    let rec = btf.type_by_id(list_head).unwrap().words.as_ptr();
    let idx = (rec as usize - word.start as usize) / 4 + 4;
    bytes[24 + idx * 4..24 + idx * 4 + 4].copy_from_slice(&list_head.to_le_bytes());
    let mutated = scratch("kernel_neg").join("mutated.btf");
    std::fs::write(&mutated, &bytes).unwrap();
    let d = run(Command::new(bin())
        .args(["diff", "--set", "--only", "types"])
        .arg(&mutated)
        .arg(&oracle));
    assert_eq!(d.status.code(), Some(1), "{}", text(&d));
}
