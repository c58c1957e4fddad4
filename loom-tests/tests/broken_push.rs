//! The racy push (`mutants::RACY_PUSH`: load + store instead of a compare-and-swap) must make
//! loom fail: proof that the models catch a node lost from a list. A lost node shows where
//! production reads: its owner's next save does not find it and pushes another, and `finish`
//! returns two folds for that owner. Its own test binary, because the switch is
//! process-global.
#![cfg(dwarf2btf_loom)]

use dwarf2btf::functions::table::shared::mutants::RACY_PUSH;
use loom_tests::expect_mutant_caught;

#[test]
fn loom_catches_the_lost_node() {
    expect_mutant_caught(
        "racy push, same entry, 2 owners",
        &RACY_PUSH,
        "a node was lost from its list",
        &[&[0, 0], &[0, 0]],
    );
}
