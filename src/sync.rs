//! The `cfg(loom)` shim: loom's atomics and cells under `--cfg loom`, std's otherwise.
