//! Ordering mutant `handover::mutants::RELAXED_FINISH`: `StructFrontier::finish`'s Release
//! store weakened to `Relaxed`. The classifier can then see the phases over without the FWD's
//! resolution that came before, read the FWD's stale mapping to itself as final, and the model
//! "a FWD is final only at the end" must fail. Its own test binary, because the switch is
//! process-global.

#![cfg(dwarf2btf_loom)]

use dwarf2btf::dedup::handover::mutants::RELAXED_FINISH;
use loom_tests::{a_fwd_is_final_only_at_the_end, expect_failure};

#[test]
fn loom_catches_a_relaxed_finish() {
    RELAXED_FINISH.store(true, std::sync::atomic::Ordering::Relaxed);
    expect_failure(
        "relaxed finish",
        "a FWD was read as final before the end",
        a_fwd_is_final_only_at_the_end,
    );
    RELAXED_FINISH.store(false, std::sync::atomic::Ordering::Relaxed);
}
