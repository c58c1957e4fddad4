//! The BTF library: verify's rules, the canonical form and diff, the dedup and the distilled
//! base against libbpf's.
//!
//! One test binary per theme (tests/*/main.rs), each module one concern; they share
//! tests/common.

#[path = "../common/mod.rs"]
pub mod common;

mod canon_diff;
mod dedup_libbpf;
mod distill_libbpf;
mod verify_header;
mod verify_layout;
mod verify_releases;
mod verify_types;
