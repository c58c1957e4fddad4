//! Debian's 6.1 kernel — the build of the reference vmlinux — accepts what dwarf2btf encodes:
//! scripts/kernel-check-6.1.sh boots its cloud image under qemu (TCG) once and loads every
//! file with `bpf(BPF_BTF_LOAD)`: the vmlinux BTF, a module's split BTF on it, every fixture's
//! BTF, and a corrupted copy of the vmlinux BTF, which it must reject with the kernel's reason.
//!
//! Skips, saying so, when the reference vmlinux is absent or the script can give no verdict
//! (exit 3: the image cannot be fetched, the boot does not finish) — both failures under
//! DWARF2BTF_REQUIRE_KERNEL=1 (scripts/test.sh, as root).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use common::*;

#[test]
fn kernel_61_accepts_dwarf2btf_btf_and_rejects_a_corrupted_copy() {
    let Some(vmlinux) = vmlinux_btf_file("kernel_61") else {
        return;
    };
    let module = module_btf_file("kernel_61", "drivers/block/loop.ko", &vmlinux);
    let corrupted = scratch("kernel_61").join("vmlinux.corrupted.btf");
    std::fs::write(
        &corrupted,
        corrupt_member_type(&std::fs::read(&vmlinux).unwrap()),
    )
    .unwrap();
    let mut accepted: Vec<PathBuf> = vec![vmlinux.clone()];
    accepted.extend(fixture_btf_files("kernel_61").into_iter().map(|(_, f)| f));

    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/kernel-check-6.1.sh");
    let mut cmd = Command::new(script);
    cmd.args(&accepted).arg(&corrupted);
    if let Some(module) = &module {
        cmd.arg("--base").arg(&vmlinux).arg(module);
    }
    let start = Instant::now();
    let out = run(&mut cmd);
    let all = text(&out);
    eprintln!("{all}(kernel-check-6.1.sh took {:.0?})", start.elapsed());
    if out.status.code() == Some(3) {
        skip("kernel-check-6.1.sh gave no verdict (see above)");
        return;
    }
    // The corrupted copy makes the run fail; everything else must pass.
    assert_eq!(out.status.code(), Some(1), "{all}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let verdict = |file: &Path| -> String {
        let prefix = format!("{}", file.display());
        stdout
            .lines()
            .find(|l| l.starts_with(&prefix) && l.contains(" by Linux "))
            .unwrap_or_else(|| panic!("no verdict for {prefix}:\n{all}"))
            .to_string()
    };
    for file in accepted.iter().chain(&module) {
        assert!(
            verdict(file).contains(": accepted by Linux 6.1."),
            "{}:\n{all}",
            file.display()
        );
    }
    assert!(
        verdict(&corrupted).contains(": rejected by Linux 6.1.")
            && stdout.contains("Invalid type_id"),
        "{all}"
    );
}
