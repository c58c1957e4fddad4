//! loom models of the dedup's hand-over (`dwarf2btf::dedup::handover`): the struct phase maps
//! ids and publishes how far it is; the reference-type classifier reads only what is final.

#![cfg(dwarf2btf_loom)]

use dwarf2btf::dedup::handover::final_id;
use dwarf2btf::sync::Ordering;
use loom_tests::{explore, spawn_struct_phase};

/// Type 3 is the FWD of the models.
fn is_fwd(id: u32) -> bool {
    id == 3
}

/// A type published as mapped is read with its final canonical id: 2 → 1, 1 canonical.
#[test]
fn published_mappings_are_seen() {
    explore("published mappings are seen", || {
        let (map, progress, writer) = spawn_struct_phase(4, |map, progress| {
            map[1].store(1, Ordering::Relaxed);
            map[2].store(1, Ordering::Relaxed);
            progress.publish(3);
            progress.finish();
        });
        let seen = final_id(&map, &progress, 2, is_fwd);
        assert_eq!(seen, Some(1), "a published mapping was not seen");
        writer.join().unwrap();
    });
}

/// A canonical FWD is not final before the phases end: the classifier gets `None`, or, once
/// it sees them over, what the FWD was resolved to — never the FWD itself.
#[test]
fn a_fwd_is_final_only_at_the_end() {
    explore("a fwd is final only at the end", || {
        let (map, progress, writer) = spawn_struct_phase(4, |map, progress| {
            map[3].store(3, Ordering::Relaxed);
            progress.publish(4);
            map[0].store(0, Ordering::Relaxed);
            map[3].store(0, Ordering::Relaxed);
            progress.finish();
        });
        let seen = final_id(&map, &progress, 3, is_fwd);
        assert!(seen.is_none() || seen == Some(0), "{seen:?}");
        writer.join().unwrap();
    });
}
