//! The command line and the files it reads and writes: messages, exit codes, bad input, in-place
//! and detached output, write safety, the memory bound, `why`.
//!
//! One test binary per theme (tests/*/main.rs), each module one concern; they share
//! tests/common.

#[path = "../common/mod.rs"]
pub mod common;

mod bad_input;
mod cli;
mod cli_json;
mod cli_messages;
mod in_place;
mod rss_bound;
mod why;
mod write_safety;
