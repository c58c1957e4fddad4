//! Type signature hashes and the equality/compatibility predicates of libbpf's dedup.
//!
//! All functions work on raw records (slices starting at the record; only the fields the
//! record's kind and vlen define are read: `[name_off, info, size_or_type, ...]`, native `u32`
//! words) exactly as libbpf's `btf_hash_*`, `btf_equal_*` and `btf_compat_*` work on
//! `struct btf_type`. Hashes are `hash_combine(h, v) = h * 31 + v` on wrapping 64-bit integers
//! with every input a zero-extended `u32`, so the keys equal libbpf's `long` keys bit for bit.

use crate::btf::kinds::{self, kind};

/// An equality predicate on two records.
pub(crate) type Equal = fn(&[u32], &[u32]) -> bool;

#[inline]
fn hc(h: u64, v: u32) -> u64 {
    h.wrapping_mul(31).wrapping_add(v as u64)
}

/// The kinds whose equivalence is their own words plus that of the one type they point at,
/// which libbpf's `btf_dedup_is_equiv` and `btf_dedup_identical_types` take as one case.
pub(crate) fn points_at_one(k: u32) -> bool {
    matches!(
        k,
        kind::CONST
            | kind::VOLATILE
            | kind::RESTRICT
            | kind::PTR
            | kind::TYPEDEF
            | kind::FUNC
            | kind::TYPE_TAG
    )
}

#[inline]
pub(crate) fn vlen(t: &[u32]) -> usize {
    kinds::info_vlen(t[1]) as usize
}

#[inline]
pub(crate) fn kind_of(t: &[u32]) -> u32 {
    kinds::info_kind(t[1])
}

/// `btf_hash_common`: name, info, size/type.
pub(crate) fn hash_common(t: &[u32]) -> u64 {
    hc(hc(hc(0, t[0]), t[1]), t[2])
}

/// `btf_hash_typedef` (v1.7.0): name and info, not the referenced id.
pub(crate) fn hash_typedef(t: &[u32]) -> u64 {
    hc(hc(0, t[0]), t[1])
}

/// `btf_hash_int_decl_tag`: common fields plus the INT data / DECL_TAG component word.
pub(crate) fn hash_int_decl_tag(t: &[u32]) -> u64 {
    hc(hash_common(t), t[3])
}

/// `btf_hash_enum`: the name only, so that enum forward declarations meet full enums.
pub(crate) fn hash_enum(t: &[u32]) -> u64 {
    hc(0, t[0])
}

/// `btf_hash_struct`: common fields plus each member's name and offset (not its type).
pub(crate) fn hash_struct(t: &[u32]) -> u64 {
    let mut h = hash_common(t);
    for m in t[3..3 + 3 * vlen(t)].chunks_exact(3) {
        h = hc(hc(h, m[0]), m[2]);
    }
    h
}

/// `btf_hash_array`: common fields plus element type, index type and element count.
pub(crate) fn hash_array(t: &[u32]) -> u64 {
    hc(hc(hc(hash_common(t), t[3]), t[4]), t[5])
}

/// `btf_hash_fnproto`: common fields plus each parameter's name and type.
pub(crate) fn hash_fnproto(t: &[u32]) -> u64 {
    let mut h = hash_common(t);
    for p in t[3..3 + 2 * vlen(t)].chunks_exact(2) {
        h = hc(hc(h, p[0]), p[1]);
    }
    h
}

/// `btf_equal_common`.
#[inline]
pub(crate) fn equal_common(a: &[u32], b: &[u32]) -> bool {
    a[0] == b[0] && a[1] == b[1] && a[2] == b[2]
}

/// `btf_equal_typedef`: name and info.
#[inline]
pub(crate) fn equal_typedef(a: &[u32], b: &[u32]) -> bool {
    a[0] == b[0] && a[1] == b[1]
}

/// `btf_equal_int_tag`. Both records must carry a fourth word when the common part is equal.
pub(crate) fn equal_int_tag(a: &[u32], b: &[u32]) -> bool {
    equal_common(a, b) && a[3] == b[3]
}

/// `btf_equal_enum`: common fields and every enumerator (kinds are equal once info is).
pub(crate) fn equal_enum(a: &[u32], b: &[u32]) -> bool {
    if !equal_common(a, b) {
        return false;
    }
    let n = vlen(a) * if kind_of(a) == kind::ENUM64 { 3 } else { 2 };
    a[3..3 + n] == b[3..3 + n]
}

fn is_any_enum(t: &[u32]) -> bool {
    matches!(kind_of(t), kind::ENUM | kind::ENUM64)
}

/// `btf_is_enum_fwd`: an ENUM or ENUM64 without enumerators.
pub(crate) fn is_enum_fwd(t: &[u32]) -> bool {
    is_any_enum(t) && vlen(t) == 0
}

/// `btf_compat_enum`: equal, or (when either side is a forward declaration) same name and
/// both any-enum, ignoring size, kind and vlen.
pub(crate) fn compat_enum(a: &[u32], b: &[u32]) -> bool {
    if !is_enum_fwd(a) && !is_enum_fwd(b) {
        return equal_enum(a, b);
    }
    a[0] == b[0] && is_any_enum(a) && is_any_enum(b)
}

/// `btf_shallow_equal_struct`: common fields and each member's name and offset.
pub(crate) fn shallow_equal_struct(a: &[u32], b: &[u32]) -> bool {
    if !equal_common(a, b) {
        return false;
    }
    let n = vlen(a);
    a[3..3 + 3 * n]
        .chunks_exact(3)
        .zip(b[3..3 + 3 * n].chunks_exact(3))
        .all(|(x, y)| x[0] == y[0] && x[2] == y[2])
}

/// `btf_equal_array`: exact, referenced ids included.
pub(crate) fn equal_array(a: &[u32], b: &[u32]) -> bool {
    equal_common(a, b) && a[3..6] == b[3..6]
}

/// `btf_compat_array`: common fields and element count (ids ignored).
pub(crate) fn compat_array(a: &[u32], b: &[u32]) -> bool {
    equal_common(a, b) && a[5] == b[5]
}

/// `btf_equal_fnproto`: exact, return and parameter ids included.
pub(crate) fn equal_fnproto(a: &[u32], b: &[u32]) -> bool {
    let n = 2 * vlen(a);
    equal_common(a, b) && a[3..3 + n] == b[3..3 + n]
}

/// `btf_compat_fnproto`: name, info and parameter names (ids ignored).
pub(crate) fn compat_fnproto(a: &[u32], b: &[u32]) -> bool {
    if a[0] != b[0] || a[1] != b[1] {
        return false;
    }
    let n = vlen(a);
    a[3..3 + 2 * n]
        .chunks_exact(2)
        .zip(b[3..3 + 2 * n].chunks_exact(2))
        .all(|(x, y)| x[0] == y[0])
}
