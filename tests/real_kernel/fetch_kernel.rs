//! scripts/setup/fetch-kernel.sh: the image it pins is the one the tests recognise as pinned, and
//! when the pinned package cannot be fetched it falls back to the newest cloud debug kernel apt
//! knows, saying so (tried with a package name that does not exist, fetching nothing).

use std::path::Path;
use std::process::Command;

use crate::common::*;

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/setup/fetch-kernel.sh");

#[test]
fn pinned_build_id_is_the_one_the_tests_check() {
    let o = run_ok(Command::new(SCRIPT).arg("--build-id"));
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), PINNED_BUILD_ID);
    // And the cached reference vmlinux, when there, has a build ID to recognise it by: the
    // pinned image's, or a fallback kernel's (whose comparisons with the pinned image's
    // oracles skip, each saying so).
    if let Some(v) = vmlinux() {
        let id = build_id(&v).expect("the reference vmlinux has a build ID");
        println!("reference vmlinux {}: build ID {id}", v.display());
    }
}

#[test]
fn unavailable_pinned_package_falls_back_to_the_newest() {
    let what = "unavailable_pinned_package_falls_back_to_the_newest";
    if !Path::new("/usr/bin/apt-cache").exists() {
        record_skip(&format!("{what}: no apt-cache on this machine"));
        return;
    }
    // The script refreshes apt's lists for an unknown package (with sudo when not root).
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        record_skip(&format!("{what}: not root"));
        return;
    }
    let cache = scratch("fetch_kernel_cache");
    let fake = "linux-image-0.0.0-0-cloud-amd64-dbg";
    let o = run(Command::new(SCRIPT)
        .arg("--which")
        .env("DWARF2BTF_KERNEL_PKG", fake)
        .env("DWARF2BTF_CACHE", &cache));
    assert!(o.status.success(), "{}", text(&o));
    let pkg = String::from_utf8_lossy(&o.stdout).trim().to_string();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        pkg.starts_with("linux-image-") && pkg.ends_with("-cloud-amd64-dbg") && pkg != fake,
        "{pkg}"
    );
    assert!(
        stderr.contains(&format!("{fake} cannot be fetched"))
            && stderr.contains(&format!("falling back to {pkg}")),
        "{stderr}"
    );
    // A versioned package (6.1.0-57, 6.12.117+deb12), not a major.minor meta-package.
    let version = pkg
        .trim_start_matches("linux-image-")
        .trim_end_matches("-cloud-amd64-dbg");
    assert!(
        version.split('.').count() > 2 || version.contains('-'),
        "{pkg}"
    );
    let files: Vec<_> = std::fs::read_dir(&cache).unwrap().collect();
    assert!(files.is_empty(), "--which fetched something: {files:?}");
}
