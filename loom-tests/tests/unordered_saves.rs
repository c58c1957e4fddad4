//! The pipeline's owner-order mutant (`pipeline::owners::mutants::UNORDERED_SAVES`): an owner
//! saves each batch as soon as it is encoded, not in batch order. When the thread with the
//! owner's later batch takes the lock first, that batch's instances land first, and the owner
//! hand-over model must see its folds differ from the sequential run's. Its own test binary,
//! because the switch is process-global.
#![cfg(dwarf2btf_loom)]

use dwarf2btf::functions::table::shared::SharedTable;
use dwarf2btf::pipeline::owners::mutants::UNORDERED_SAVES;
use loom_tests::{expect_failure, owner_handover, Inst};

#[test]
fn loom_catches_unordered_saves() {
    UNORDERED_SAVES.store(true, std::sync::atomic::Ordering::Relaxed);
    expect_failure(
        "unordered saves, owner hand-over",
        "an instance is lost or misplaced",
        owner_handover::<SharedTable<Vec<Inst>>>,
    );
    UNORDERED_SAVES.store(false, std::sync::atomic::Ordering::Relaxed);
}
