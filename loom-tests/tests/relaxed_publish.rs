//! Ordering mutant `mutants::RELAXED_PUBLISH`: a push's successful compare-and-swap weakened
//! from Release to `Relaxed`. A node is then published without its link: the next owner's
//! walk reads that link with no happens-before from its creation, and loom must report the
//! race on the link's cell. Its own test binary, because the switch is process-global.
#![cfg(dwarf2btf_loom)]

use dwarf2btf::functions::table::shared::mutants::RELAXED_PUBLISH;
use loom_tests::expect_mutant_caught;

#[test]
fn loom_catches_a_relaxed_publish() {
    expect_mutant_caught(
        "relaxed publish, same entry, 2 owners",
        &RELAXED_PUBLISH,
        "Causality violation",
        &[&[0], &[0]],
    );
}
