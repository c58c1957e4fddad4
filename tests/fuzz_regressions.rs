//! Replays every input the fuzz targets (fuzz/, docs/fuzzing.md) once failed on, through the
//! same target code: tests/data/fuzz/TARGET-WHAT, where TARGET names the target. Each must now
//! run to its end: a clear error or a result, never a panic. The committed seed corpus
//! (fuzz/corpus/TARGET/) is replayed the same way.
//!
//! Some findings were arithmetic overflows, which only debug builds check (the fuzz targets are
//! built with debug assertions): `cargo test --test fuzz_regressions` catches their return,
//! while the release run checks that the input is handled.

#[allow(dead_code)] // the targets' helpers are only reached through the four entry points
#[path = "../fuzz/src/lib.rs"]
mod fuzz;

use std::path::Path;

/// A fuzz target's name and body.
type Target = (&'static str, fn(&[u8]));

const TARGETS: [Target; 4] = [
    ("elf_pipeline", fuzz::elf_pipeline),
    ("btf_read_verify", fuzz::btf_read_verify),
    ("dedup_generated", fuzz::dedup_generated),
    ("split_btf", fuzz::split_btf),
];

#[test]
fn fuzz_findings_replay() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/fuzz");
    let mut replayed = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let Some((_, run)) = TARGETS
            .iter()
            .find(|(t, _)| name.starts_with(&format!("{t}-")))
        else {
            panic!("{name}: the name does not start with a fuzz target's name and '-'");
        };
        eprintln!("replaying {name}");
        run(&std::fs::read(&path).unwrap());
        replayed += 1;
    }
    assert!(replayed > 0, "no input in {}", dir.display());
}

/// Every input of the committed corpus, through its target: the seeds the campaigns started
/// from (real fixtures, kernel-like objects, BTF) must run to their end too.
#[test]
fn fuzz_corpus_replays() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus");
    for (target, run) in TARGETS {
        let dir = corpus.join(target);
        let mut replayed = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            eprintln!("replaying {}", path.display());
            run(&std::fs::read(&path).unwrap());
            replayed += 1;
        }
        assert!(replayed > 0, "no input in {}", dir.display());
    }
}
