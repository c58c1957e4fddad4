//! Phase 2: primitive types (libbpf `btf_dedup_prim_types`).
//!
//! INT, FLOAT, FWD, ENUM and ENUM64 reference no other type, so exact equality decides. They are
//! processed in id order; the first candidate (in table order) that matches becomes the
//! canonical id, otherwise the type becomes a candidate itself. Enums hash by name only so that
//! a forward-declared enum (vlen 0) meets full enums of either width: a fwd maps to the first
//! compatible candidate, while a full enum meeting a compatible canonical *fwd* re-points that
//! fwd to itself and keeps scanning.

use rustc_hash::{FxHashMap, FxHashSet};

use super::hash;
use super::state::Dedup;
use crate::btf::kinds::kind;

/// A shortcut past libbpf's candidate chain for full enums. Enums hash by name alone, so all
/// anonymous enums share one chain, walked from the start for each of them. For a full enum
/// whose name no canonical enum forward declaration carries, the walk has no side effect and
/// stops at the one canonical enum equal to it (canonical enums are pairwise unequal), so an
/// exact index by record gives the same answer. Not used for split BTF, whose base may hold
/// equal enums (the chain order would pick among them).
struct EnumIndex {
    enabled: bool,
    fwd_names: FxHashSet<u32>,
    full: FxHashMap<Box<[u32]>, u32>,
}

impl Dedup {
    pub(crate) fn dedup_prim_types(&mut self) {
        let mut enums = EnumIndex {
            enabled: self.types.start_id == 1,
            fwd_names: FxHashSet::default(),
            full: FxHashMap::default(),
        };
        for id in self.types.start_id..self.types.type_cnt() {
            self.dedup_prim_type(id, &mut enums);
        }
    }

    fn dedup_prim_type(&mut self, id: u32, enums: &mut EnumIndex) {
        // The kind comes from the per-id entry: the record is read only for primitives.
        let k = self.types.kind(id);
        let mut new_id = id;
        let h;
        match k {
            kind::INT | kind::FWD | kind::FLOAT => {
                let (hash, equal): (fn(&[u32]) -> u64, hash::Equal) = if k == kind::INT {
                    (hash::hash_int_decl_tag, hash::equal_int_tag)
                } else {
                    (hash::hash_common, hash::equal_common)
                };
                let t = self.types.rec(id).tpl();
                h = hash(t);
                let mut cur = self.table.cursor(h);
                while let Some(c) = self.table.next(&mut cur, h) {
                    if equal(t, self.types.rec(c).tpl()) {
                        new_id = c;
                        break;
                    }
                }
            }
            kind::ENUM | kind::ENUM64 => {
                let t = self.types.rec(id).tpl();
                h = hash::hash_enum(t);
                let enum_fwd = hash::is_enum_fwd(t);
                if enums.enabled && !enum_fwd && !enums.fwd_names.contains(&t[0]) {
                    if let Some(&c) = enums.full.get(t) {
                        new_id = c;
                    }
                } else {
                    new_id = self.enum_chain(id, h, enum_fwd);
                }
                if new_id == id {
                    let t = self.types.rec(id).tpl();
                    if enum_fwd {
                        enums.fwd_names.insert(t[0]);
                    } else {
                        enums.full.insert(t.into(), id);
                    }
                }
            }
            _ => return,
        }
        self.types.set_map(id, new_id);
        if new_id == id {
            self.table.append(h, id);
        }
    }

    /// libbpf's candidate walk for an enum: the first equal candidate, or for a forward
    /// declaration the first compatible one; a full enum meeting a compatible canonical
    /// forward declaration re-points it to itself and walks on.
    fn enum_chain(&mut self, id: u32, h: u64, enum_fwd: bool) -> u32 {
        let mut cur = self.table.cursor(h);
        while let Some(c) = self.table.next(&mut cur, h) {
            let (t, cand) = (self.types.rec(id).tpl(), self.types.rec(c).tpl());
            if hash::equal_enum(t, cand) {
                return c;
            }
            if hash::compat_enum(t, cand) {
                if enum_fwd {
                    return c;
                }
                self.types.set_map(c, id);
            }
        }
        id
    }
}
