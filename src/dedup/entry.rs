//! The layout of a dedup `map` entry: the canonical-map value in its low bits, the type's raw
//! kind in its top bits, so that the kind needs no array of its own and is read with the value
//! (one load, one cache line). The phases read and write entries only through these functions.

use crate::sync::{AtomicU32, Ordering};

/// A `map` entry holds its type's raw kind above this bit and the map value below it: the
/// kind is read with the value (one load, one cache line), and needs no array of its own.
pub(crate) const KIND_SHIFT: u32 = 27;
/// The map value's bits in an entry.
pub(crate) const VALUE_MASK: u32 = (1 << KIND_SHIFT) - 1;
/// The bit that marks a map value as a tag, not a type id: every value above [`MAX_ID`] means
/// "not mapped yet" to the phases (the reference and compaction phases' tags use it).
pub(crate) const TAG: u32 = 1 << 26;
/// The highest value that is a type id.
pub(crate) const MAX_ID: u32 = TAG - 1;
/// `BTF_UNPROCESSED_ID` in `map`: nothing yet.
pub(crate) const UNPROCESSED: u32 = VALUE_MASK;
/// How many types the dedup takes: ids, and the numbers tags carry, stay below the low bits
/// of the three highest tags (`UNPROCESSED` and the reference phase's two).
pub(crate) const MAX_TYPES: u32 = TAG - 3;

/// The map value of an entry.
#[inline(always)]
pub(crate) fn entry_value(entry: &AtomicU32) -> u32 {
    entry.load(Ordering::Relaxed) & VALUE_MASK
}

/// The raw kind of an entry's type.
#[inline(always)]
pub(crate) fn entry_kind(entry: &AtomicU32) -> u32 {
    entry.load(Ordering::Relaxed) >> KIND_SHIFT
}

/// Sets an entry's map value, keeping its kind (which never changes, so concurrent writers
/// of different values still keep it).
#[inline(always)]
pub(crate) fn set_entry(entry: &AtomicU32, value: u32) {
    debug_assert!(value <= VALUE_MASK);
    let kind = entry.load(Ordering::Relaxed) & !VALUE_MASK;
    entry.store(kind | value, Ordering::Relaxed);
}

/// A fresh entry: `kind` and map value `value`.
pub(crate) fn new_entry(kind: u32, value: u32) -> AtomicU32 {
    AtomicU32::new(kind << KIND_SHIFT | value)
}
