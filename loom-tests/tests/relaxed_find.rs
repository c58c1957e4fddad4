//! Ordering mutant `mutants::RELAXED_FIND`: a save's Acquire load of its entry's head weakened
//! to `Relaxed`. The walk then reads the links of other owners' nodes with no happens-before
//! from their creation, and loom must report that race on the link's cell. Its own test
//! binary, because the switch is process-global.
#![cfg(dwarf2btf_loom)]

use dwarf2btf::functions::table::shared::mutants::RELAXED_FIND;
use loom_tests::expect_mutant_caught;

#[test]
fn loom_catches_a_relaxed_find() {
    expect_mutant_caught(
        "relaxed find, same entry, 2 owners",
        &RELAXED_FIND,
        "Causality violation",
        &[&[0], &[0]],
    );
}
