//! Encoding: one CU's type model to BTF records.
