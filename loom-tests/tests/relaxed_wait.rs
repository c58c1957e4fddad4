//! Ordering mutant `handover::mutants::RELAXED_WAIT`: `StructFrontier::wait_past`'s Acquire
//! load weakened to `Relaxed`. The classifier can then see the published position without the
//! mappings below it, and the model "published mappings are seen" must fail. Its own test
//! binary, because the switch is process-global.

#![cfg(dwarf2btf_loom)]

use dwarf2btf::dedup::handover::mutants::RELAXED_WAIT;
use loom_tests::{expect_failure, published_mappings_are_seen};

#[test]
fn loom_catches_a_relaxed_wait() {
    RELAXED_WAIT.store(true, std::sync::atomic::Ordering::Relaxed);
    expect_failure(
        "relaxed wait",
        "a published mapping was not seen",
        published_mappings_are_seen,
    );
    RELAXED_WAIT.store(false, std::sync::atomic::Ordering::Relaxed);
}
