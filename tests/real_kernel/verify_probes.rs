//! The probe BTF (tests/common/probes.rs: a minimal valid BTF, and copies that each add one
//! kind, flag or header form a release may lack) judged per release: `verify --kernel-version`
//! must say what the table of releases (`dwarf2btf::toolbox::verify::INTRODUCED`) says on each
//! side of the probe's boundary, and what the running kernel's `bpf(BPF_BTF_LOAD)` says for
//! its own release. The committed copies in tests/data/probes/ (which scripts/check/kernel-build.sh
//! loads in the kernels it boots, and tests/real_kernel/kernel_61.rs in Debian's 6.1) must be the
//! builder's bytes; `DWARF2BTF_BLESS=1` rewrites them.
//!
//! The kernel check skips, saying so, when the kernel refuses the call for lack of privilege
//! — a failure under DWARF2BTF_REQUIRE_KERNEL=1 (scripts/test.sh, as root).

use crate::common::probes::{committed, probes, verify_valid};
use crate::common::*;
use dwarf2btf::toolbox::kernel;
use dwarf2btf::toolbox::verify::{introduced, KernelVersion};

#[test]
fn committed_probes_are_the_builders() {
    let bless = std::env::var("DWARF2BTF_BLESS").as_deref() == Ok("1");
    for p in probes() {
        let path = committed(p.name);
        if bless {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &p.data).unwrap();
        }
        let on_disk = std::fs::read(&path)
            .unwrap_or_else(|e| panic!("{}: {e} (DWARF2BTF_BLESS=1 writes it)", path.display()));
        assert!(
            on_disk == p.data,
            "{} differs from tests/common/probes.rs's {} (DWARF2BTF_BLESS=1 rewrites it)",
            path.display(),
            p.name
        );
    }
}

/// The last release before `v` (the 4.x series ended with 4.20, 5.x and 6.x with .19).
fn release_before(v: KernelVersion) -> KernelVersion {
    match (v.major, v.minor) {
        (major, 0) => KernelVersion {
            major: major - 1,
            minor: if major == 5 { 20 } else { 19 },
        },
        (major, minor) => KernelVersion {
            major,
            minor: minor - 1,
        },
    }
}

/// Each probe is rejected by the release before the one the table names for its feature and
/// not rejected by that release (exit 0, or 2 — no verdict — before 6.1).
#[test]
fn probes_follow_the_table() {
    for p in probes() {
        let since = introduced(p.feature).since;
        let before = release_before(since);
        let file = committed(p.name);
        let exit = |release: KernelVersion| {
            let o = run(std::process::Command::new(bin())
                .args(["verify", "--kernel-version", &release.to_string()])
                .arg(&file));
            o.status.code()
        };
        assert_eq!(exit(before), Some(1), "{}: Linux {before}", p.name);
        assert!(
            matches!(exit(since), Some(0 | 2)),
            "{}: Linux {since} rejects it",
            p.name
        );
    }
}

/// The running kernel's verdict on each probe is verify's for its release.
#[test]
fn running_kernel_agrees_on_probes() {
    let what = "running_kernel_agrees_on_probes";
    let version = kernel::version().expect("the running kernel's release");
    let release = version.to_string();
    let mut bad = Vec::new();
    for p in probes() {
        let kernel = match btf_load(&p.data) {
            Ok(_fd) => Ok(()),
            Err((errno, _)) if kernel_refused(errno, what) => return,
            Err((errno, log)) => Err(format!(
                "errno {errno}: {}",
                log.lines().last().unwrap_or_default()
            )),
        };
        let valid = verify_valid(&committed(p.name), &release);
        eprintln!(
            "{:<16} Linux {release}: {:<40} verify: {}",
            p.name,
            match &kernel {
                Ok(()) => "accepted".to_string(),
                Err(e) => format!("rejected ({e})"),
            },
            if valid { "valid" } else { "invalid" }
        );
        if valid != kernel.is_ok() {
            bad.push(format!(
                "  {}: kernel {kernel:?}, verify valid={valid}",
                p.name
            ));
        }
    }
    assert!(
        bad.is_empty(),
        "verify --kernel-version {release} and BPF_BTF_LOAD disagree:\n{}",
        bad.join("\n")
    );
}
