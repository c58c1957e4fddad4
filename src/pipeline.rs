//! The encoding run: input → per-CU encoding → merge → dedup → output.
