//! A publish with Relaxed ordering (`BROKEN_PUBLISH`) lets the classifier see the position
//! without the mappings below it: loom must find that execution. In its own test binary,
//! because the switch is process-global.

#![cfg(dwarf2btf_loom)]

use dwarf2btf::dedup::handover::{final_id, mutants::BROKEN_PUBLISH};
use dwarf2btf::sync::Ordering;
use loom_tests::{expect_failure, spawn_struct_phase};

#[test]
fn loom_rejects_a_relaxed_publish() {
    BROKEN_PUBLISH.store(true, std::sync::atomic::Ordering::Relaxed);
    expect_failure(
        "relaxed publish",
        "a published mapping was not seen",
        || {
            let (map, progress, writer) = spawn_struct_phase(3, |map, progress| {
                map[1].store(1, Ordering::Relaxed);
                map[2].store(1, Ordering::Relaxed);
                progress.publish(3);
            });
            let seen = final_id(&map, &progress, 2, |_| false);
            assert_eq!(seen, Some(1), "a published mapping was not seen");
            writer.join().unwrap();
        },
    );
    BROKEN_PUBLISH.store(false, std::sync::atomic::Ordering::Relaxed);
}
