//! dwarf2btf: turns the DWARF of a Linux kernel image (or module, or any ELF object) into BTF.
//!
//! The pipeline flows one way, and the modules are named after its stages:
//!
//! ```text
//! input (mmap, ELF, debug sections) → dwarf (per-CU type model) → encode (BTF records)
//!     → dedup (libbpf-equivalent) → output (raw file, or .BTF written into the ELF in place;
//!       atomically either way)
//! ```
//!
//! `btf` holds the format itself: building, reading, writing and distilling BTF; it depends on
//! no stage. `toolbox` stands on it: verifying, comparing, dumping, and asking the running
//! kernel. `mapped` maps files, for `input` and `btf` alike.
//! `pipeline` runs the stages; `progress` draws its line on a terminal; `measure` holds the
//! probes every stage may call (clocks, resident bytes), and `stats` reports what a run measured
//! (`--stats`, as text, JSON or CSV); `why` explains one function's fate through a watched run.

pub mod btf;
pub mod config;
pub mod dedup;
pub mod dwarf;
pub mod encode;
pub mod error;
pub mod functions;
pub mod input;
pub mod mapped;
pub mod measure;
pub mod output;
pub mod pipeline;
pub mod progress;
pub mod rng;
pub mod stats;
pub mod sync;
pub mod toolbox;
pub mod why;

pub use error::{Error, Result};
