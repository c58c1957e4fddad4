//! Records the commit the binary is built from (`dwarf2btf version`): `git describe` of the
//! source tree when it is a git checkout, else nothing (a crates.io or tarball build); and the
//! compiler's version, for the provenance of measurements.

use std::process::Command;

fn main() {
    let commit = Command::new("git")
        .args(["describe", "--always", "--dirty", "--abbrev=12"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    println!("cargo:rustc-env=DWARF2BTF_COMMIT={commit}");
    // The compiler, for the provenance of measurements (`dwarf2btf-lab provenance`).
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let rustc = Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    println!("cargo:rustc-env=DWARF2BTF_RUSTC={rustc}");
    // Run again when the checkout moves: a commit or checkout writes the reflog, an add or
    // a file changed the index (or, with no git, when any file of the package changes).
    for path in ["HEAD", "logs/HEAD", "index"] {
        let out = Command::new("git")
            .args(["rev-parse", "--git-path", path])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .ok()
            .filter(|o| o.status.success());
        if let Some(out) = out {
            let file = String::from_utf8_lossy(&out.stdout).trim().to_string();
            let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
            println!("cargo:rerun-if-changed={}", file.display());
        }
    }
}
