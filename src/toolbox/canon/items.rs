//! The top-level items of one BTF, rendered in id order or only counted.

use super::category::Category;
use super::render::Canon;
use crate::btf::Btf;

/// The canonical items of `btf`'s own types, in id order (see the module documentation).
pub fn canonical_items(btf: &Btf) -> Vec<(Category, String)> {
    canonical_items_of(btf, &Category::ALL)
}

/// The canonical items of `btf`'s own types whose category is in `categories`, in id order.
pub fn canonical_items_of(btf: &Btf, categories: &[Category]) -> Vec<(Category, String)> {
    Canon::new(btf).into_items(categories)
}

/// Number of top-level items per category (indexed by `Category as usize`), without rendering.
pub fn item_counts(btf: &Btf) -> [usize; Category::ALL.len()] {
    let canon = Canon::new(btf);
    let mut counts = [0; Category::ALL.len()];
    for t in btf.own_types() {
        if let Some(c) = canon.top_level(&t) {
            counts[c.index()] += 1;
        }
    }
    counts
}
