//! loom models of `dwarf2btf::functable::shared` live in `tests/`; this library is empty.
//!
//! Run them with `RUSTFLAGS="--cfg loom" cargo test --release -p loom-tests`; without
//! `--cfg loom` every test compiles away.
