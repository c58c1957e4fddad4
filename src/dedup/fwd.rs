//! Phase 4: unambiguous forward declarations (libbpf `btf_dedup_resolve_fwds`, since v1.1.0).
//!
//! Most FWDs are resolved while comparing struct graphs. A FWD that never took part in such a
//! comparison (say `struct foo;` used only through a pointer in one CU) is mapped here to the
//! canonical STRUCT/UNION carrying the same name — base types included — provided exactly one
//! canonical composite has that name and its kind matches the FWD's kind flag. Only own FWDs
//! that are still their own canonical type are touched.

use rustc_hash::FxHashMap;

use super::state::Dedup;
use crate::btf::kinds::kind;

/// Marks a name shared by several canonical composites.
const AMBIGUOUS: u32 = 0;
/// Marks a name no canonical composite has (yet).
const NO_COMPOSITE: u32 = u32::MAX;

impl Dedup {
    pub(crate) fn resolve_fwds(&mut self) {
        let fwds: Vec<u32> = (self.types.start_id..self.types.type_cnt())
            .filter(|&id| self.types.map(id) == id && self.types.kind(id) == kind::FWD)
            .collect();
        if fwds.is_empty() {
            return;
        }
        // Only the names of these FWDs are looked up: count canonical composites of those
        // names alone (split BTF: the base's thousands of structs are mostly other names).
        let mut names: FxHashMap<u32, u32> = fwds
            .iter()
            .map(|&id| (self.types.rec(id).tpl()[0], NO_COMPOSITE))
            .collect();
        for id in 1..self.types.type_cnt() {
            if self.types.map(id) != id {
                continue;
            }
            if let kind::STRUCT | kind::UNION = self.types.kind(id) {
                if let Some(c) = names.get_mut(&self.types.rec(id).tpl()[0]) {
                    *c = if *c == NO_COMPOSITE { id } else { AMBIGUOUS };
                }
            }
        }
        for id in fwds {
            let t = self.types.rec(id).tpl();
            let cand = names[&t[0]];
            if cand == AMBIGUOUS || cand == NO_COMPOSITE {
                continue;
            }
            let is_union = t[1] >> 31 != 0;
            match self.types.kind(cand) {
                kind::STRUCT if is_union => continue,
                kind::UNION if !is_union => continue,
                _ => {}
            }
            self.types.set_map(id, cand);
        }
    }
}
