//! The running kernel accepts the deduplicated vmlinux BTF, byte for byte, through
//! `bpf(BPF_BTF_LOAD)` (the kernel's full checks, resolve pass included), and
//! `dwarf2btf verify --kernel` reports its verdict: accepted for the vmlinux BTF, a module's
//! split BTF on it and every fixture's BTF, rejected with the kernel's reason for corrupted
//! copies, and exit 3 with one message where it lacks the privilege to ask. Skips, saying so,
//! only when the kernel refuses the call for lack of privilege — and fails even then under
//! DWARF2BTF_REQUIRE_KERNEL=1 (scripts/test.sh, as root).

use std::path::Path;
use std::process::Command;

use crate::common::*;

#[test]
fn kernel_accepts_deduplicated_vmlinux_btf() {
    let Some(data) = vmlinux_btf("btf_load") else {
        return;
    };
    match btf_load(&data) {
        Ok(_fd) => {}
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

/// `verify --kernel` on `file`: the kernel accepts it (false when the kernel could not be asked).
fn assert_accepted(file: &Path, base: Option<&Path>) -> bool {
    let Some(out) = verify_kernel_cli(file, base) else {
        return false;
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("accepted by the running kernel ("),
        "{}: {}",
        file.display(),
        text(&out)
    );
    eprintln!("{}", stdout.trim());
    true
}

/// `verify --kernel` on a corrupted copy of `file` ([`corrupt_member_type`]): rejected, exit
/// 1, the kernel's reason shown.
fn assert_corrupted_copy_rejected(file: &Path, late: bool) {
    let bad = file.with_extension(if late { "late.btf" } else { "corrupted.btf" });
    std::fs::write(
        &bad,
        corrupt_member_type(&std::fs::read(file).unwrap(), late),
    )
    .unwrap();
    let Some(out) = verify_kernel_cli(&bad, None) else {
        return;
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    eprintln!("{}", stdout.trim());
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let reason = if late {
        "Invalid member"
    } else {
        "Invalid type_id"
    };
    assert!(
        stdout.contains("rejected by the running kernel (")
            && stdout.contains("Invalid argument")
            && stdout.contains("verifier log, last lines")
            && stdout.contains(reason),
        "{}",
        text(&out)
    );
}

#[test]
fn verify_kernel_accepts_vmlinux_and_module_btf() {
    let Some(vmlinux) = vmlinux_btf_file("btf_load_cli") else {
        return;
    };
    if !assert_accepted(&vmlinux, None) {
        return;
    }
    let Some(module) = module_btf_file("btf_load_cli", "drivers/block/loop.ko", &vmlinux) else {
        return;
    };
    assert_accepted(&module, Some(&vmlinux));
    // The late one's reason comes after several MiB of log: the log must grow to hold it.
    assert_corrupted_copy_rejected(&vmlinux, false);
    assert_corrupted_copy_rejected(&vmlinux, true);
}

#[test]
fn verify_kernel_accepts_fixture_btf_and_rejects_a_corrupted_copy() {
    let files = fixture_btf_files("btf_load_fixtures");
    for (_, file) in &files {
        if !assert_accepted(file, None) {
            return;
        }
    }
    assert_corrupted_copy_rejected(&files[0].1, false);
}

/// Without privilege the kernel cannot be asked: one message, exit 3 (not 1, a rejection).
/// As root the command runs without capabilities (setpriv empties the bounding set, so the
/// exec grants none; the files stay readable to uid 0).
#[test]
fn verify_kernel_without_privilege_says_so_with_exit_3() {
    let files = fixture_btf_files("btf_load_unprivileged");
    let mut cmd = if is_root() {
        let mut c = Command::new(tool("setpriv"));
        c.args(["--bounding-set=-all", "--inh-caps=-all"])
            .arg(bin());
        c
    } else {
        Command::new(bin())
    };
    let out = run(cmd.args(["verify", "--kernel"]).arg(&files[0].1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert!(
        stderr.contains("cannot ask the running kernel") && stderr.lines().count() == 1,
        "{stderr}"
    );
}

/// Whether this process runs as root (its real uid, from /proc/self/status).
fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("Uid:"))
            .and_then(|ids| ids.split_whitespace().next())
            == Some("0")
    })
}
