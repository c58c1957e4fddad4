//! Debian's 6.1 kernel — the build of the reference vmlinux — accepts what dwarf2btf encodes:
//! scripts/check/kernel-check-6.1.sh boots its cloud image under qemu (TCG) once and loads every
//! file with `bpf(BPF_BTF_LOAD)`: the vmlinux BTF, a module's split BTF on it, every fixture's
//! BTF, and two corrupted copies of the vmlinux BTF (one caught by the meta checks, one by the
//! resolve pass after the log of every type), which it must reject with the kernel's reason.
//! The same boot loads the probes of tests/data/probes (tests/common/probes.rs): 6.1's verdict
//! on each must be `dwarf2btf verify --kernel-version 6.1`'s.
//!
//! Skips, saying so, when the reference vmlinux is absent or the script can give no verdict
//! (exit 3: the image cannot be fetched, the boot does not finish) — both failures under
//! DWARF2BTF_REQUIRE_KERNEL=1 (scripts/test.sh, as root).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use crate::common::*;

#[test]
fn kernel_61_accepts_dwarf2btf_btf_and_rejects_a_corrupted_copy() {
    let Some(vmlinux) = vmlinux_btf_file("kernel_61") else {
        return;
    };
    let module = module_btf_file("kernel_61", "drivers/block/loop.ko", &vmlinux);
    let data = std::fs::read(&vmlinux).unwrap();
    let corrupted = scratch("kernel_61").join("vmlinux.corrupted.btf");
    std::fs::write(&corrupted, corrupt_member_type(&data, false)).unwrap();
    let late = scratch("kernel_61").join("vmlinux.late.btf");
    std::fs::write(&late, corrupt_member_type(&data, true)).unwrap();
    let mut accepted: Vec<PathBuf> = vec![vmlinux.clone()];
    accepted.extend(fixture_btf_files("kernel_61").into_iter().map(|(_, f)| f));

    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/check/kernel-check-6.1.sh");
    let probes: Vec<(&str, PathBuf)> = probes::probes()
        .iter()
        .map(|p| (p.name, probes::committed(p.name)))
        .collect();
    let mut cmd = Command::new(script);
    cmd.args(&accepted).arg(&corrupted).arg(&late);
    cmd.args(probes.iter().map(|p| &p.1));
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
    // A file's verdict line and the log lines under it.
    let verdict = |file: &Path| -> String {
        let prefix = format!("{}", file.display());
        let mut lines = stdout
            .lines()
            .skip_while(|l| !(l.starts_with(&prefix) && l.contains(" by Linux ")));
        let first = lines
            .next()
            .unwrap_or_else(|| panic!("no verdict for {prefix}:\n{all}"));
        let rest = lines.take_while(|l| l.starts_with("  "));
        std::iter::once(first)
            .chain(rest)
            .collect::<Vec<_>>()
            .join("\n")
    };
    for file in accepted.iter().chain(&module) {
        assert!(
            verdict(file).contains(": accepted by Linux 6.1."),
            "{}:\n{all}",
            file.display()
        );
    }
    let mut disagree = Vec::new();
    for (name, file) in &probes {
        let kernel = verdict(file);
        let accepted = kernel.contains(": accepted by Linux 6.1.");
        assert!(
            accepted || kernel.contains(": rejected by Linux 6.1."),
            "{name}: {kernel}"
        );
        let valid = probes::verify_valid(file, "6.1");
        eprintln!(
            "probe {name:<16} Linux 6.1: {:<9} verify --kernel-version 6.1: {}",
            if accepted { "accepted" } else { "rejected" },
            if valid { "valid" } else { "invalid" }
        );
        if valid != accepted {
            disagree.push(format!("{kernel}\n  verify valid={valid}"));
        }
    }
    assert!(
        disagree.is_empty(),
        "verify --kernel-version 6.1 and Linux 6.1 disagree on probes:\n{}",
        disagree.join("\n")
    );
    for (file, reason) in [(&corrupted, "Invalid type_id"), (&late, "Invalid member")] {
        assert!(
            verdict(file).contains(": rejected by Linux 6.1.") && verdict(file).contains(reason),
            "{}:\n{all}",
            file.display()
        );
    }
}
