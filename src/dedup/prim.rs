//! Phase 2: primitive types (libbpf `btf_dedup_prim_types`).
//!
//! INT, FLOAT, FWD, ENUM and ENUM64 reference no other type, so exact equality decides. They are
//! processed in id order; the first candidate (in table order) that matches becomes the
//! canonical id, otherwise the type becomes a candidate itself. Enums hash by name only so that
//! a forward-declared enum (vlen 0) meets full enums of either width: a fwd maps to the first
//! compatible candidate, while a full enum meeting a compatible canonical *fwd* re-points that
//! fwd to itself and keeps scanning.

use super::hash::{self, kind_of};
use super::{kind, Dedup};

impl Dedup {
    pub(crate) fn dedup_prim_types(&mut self) {
        for id in self.types.start_id..self.types.type_cnt() {
            self.dedup_prim_type(id);
        }
    }

    fn dedup_prim_type(&mut self, id: u32) {
        let t = self.types.rec(id);
        let mut new_id = id;
        let h;
        match kind_of(t) {
            kind::INT => {
                h = hash::hash_int_decl_tag(t);
                let mut cur = self.table.cursor(h);
                while let Some(c) = self.table.next(&mut cur, h) {
                    if hash::equal_int_tag(t, self.types.rec(c)) {
                        new_id = c;
                        break;
                    }
                }
            }
            kind::ENUM | kind::ENUM64 => {
                h = hash::hash_enum(t);
                let enum_fwd = hash::is_enum_fwd(t);
                let mut cur = self.table.cursor(h);
                while let Some(c) = self.table.next(&mut cur, h) {
                    let (t, cand) = (self.types.rec(id), self.types.rec(c));
                    if hash::equal_enum(t, cand) {
                        new_id = c;
                        break;
                    }
                    if hash::compat_enum(t, cand) {
                        if enum_fwd {
                            new_id = c;
                            break;
                        }
                        self.types.set_map(c, id);
                    }
                }
            }
            kind::FWD | kind::FLOAT => {
                h = hash::hash_common(t);
                let mut cur = self.table.cursor(h);
                while let Some(c) = self.table.next(&mut cur, h) {
                    if hash::equal_common(t, self.types.rec(c)) {
                        new_id = c;
                        break;
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
}
