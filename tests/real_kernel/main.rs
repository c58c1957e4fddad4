//! The real kernel: the reference vmlinux and its modules against pahole, the running kernel's
//! BPF_BTF_LOAD, Debian's 6.1 under qemu, and the kernel fetch.
//!
//! One test binary per theme (tests/*/main.rs), each module one concern; they share
//! tests/common.

#[path = "../common/mod.rs"]
pub mod common;

mod btf_load;
mod fetch_kernel;
mod kernel;
mod kernel_61;
mod modules;
mod verify_kernel;
mod verify_probes;
