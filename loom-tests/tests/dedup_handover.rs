//! loom models of the dedup's hand-over (`dwarf2btf::dedup::handover`): the struct phase maps
//! ids and publishes how far it is; the reference-type classifier reads only what is final.
//! The models themselves are in the harness (`loom_tests::published_mappings_are_seen`,
//! `loom_tests::a_fwd_is_final_only_at_the_end`), which the ordering mutants reuse.

#![cfg(dwarf2btf_loom)]

use loom_tests::explore;

/// A type published as mapped is read with its final canonical id: 2 → 1, 1 canonical.
#[test]
fn published_mappings_are_seen() {
    explore(
        "published mappings are seen",
        loom_tests::published_mappings_are_seen,
    );
}

/// A canonical FWD is not final before the phases end: the classifier gets `None`, or, once
/// it sees them over, what the FWD was resolved to — never the FWD itself.
#[test]
fn a_fwd_is_final_only_at_the_end() {
    explore(
        "a fwd is final only at the end",
        loom_tests::a_fwd_is_final_only_at_the_end,
    );
}
