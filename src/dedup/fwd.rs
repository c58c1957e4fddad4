//! Phase 4: unambiguous forward declarations (libbpf `btf_dedup_resolve_fwds`, since v1.1.0).
//!
//! Most FWDs are resolved while comparing struct graphs. A FWD that never took part in such a
//! comparison (say `struct foo;` used only through a pointer in one CU) is mapped here to the
//! canonical STRUCT/UNION carrying the same name — base types included — provided exactly one
//! canonical composite has that name and its kind matches the FWD's kind flag. Only own FWDs
//! that are still their own canonical type are touched.

use rustc_hash::FxHashMap;

use super::Dedup;
use crate::btf::kinds::kind;

/// Marks a name shared by several canonical composites.
const AMBIGUOUS: u32 = 0;

impl Dedup {
    pub(crate) fn resolve_fwds(&mut self) {
        let mut names: FxHashMap<u32, u32> = FxHashMap::default();
        let mut fwds = Vec::new();
        for id in 1..self.types.type_cnt() {
            if self.types.map(id) != id {
                continue;
            }
            match self.types.kind(id) {
                kind::STRUCT | kind::UNION => {
                    names
                        .entry(self.types.rec(id)[0])
                        .and_modify(|c| *c = AMBIGUOUS)
                        .or_insert(id);
                }
                kind::FWD if id >= self.types.start_id => fwds.push(id),
                _ => {}
            }
        }
        for id in fwds {
            let t = self.types.rec(id);
            let Some(&cand) = names.get(&t[0]) else {
                continue;
            };
            if cand == AMBIGUOUS {
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
