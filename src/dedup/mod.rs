//! BTF deduplication with libbpf v1.7.0 semantics.
