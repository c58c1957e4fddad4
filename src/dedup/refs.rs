//! Phase 5: reference types (libbpf `btf_dedup_ref_types`).
//!
//! PTR, CONST, VOLATILE, RESTRICT, TYPE_TAG, FUNC, DECL_TAG, ARRAY and FUNC_PROTO. Everything
//! they can bottom out in (primitives, structs, unions, typedefs, VAR, DATASEC) is already
//! mapped, so a depth-first walk first rewrites each referenced id *in place* to its canonical
//! id, after which the record is stable and is looked up by exact equality. The first type of
//! an equivalence class to *finish* (DFS post-order, roots in id order) becomes canonical.
//!
//! libbpf recurses; this walk keeps an explicit stack of frames `(type id, next field)`, so
//! chains of any depth run in constant native stack. A type met again while in progress is a
//! cycle through reference types only, which C cannot produce: `Err`, like libbpf's `-ELOOP`.

use super::hash::{self, kind_of, vlen};
use super::{kind, Dedup, IN_PROGRESS, MAX_NR_TYPES};
use crate::error::{Error, Result};

/// An exact-equality predicate on two records.
type Equal = fn(&[u32], &[u32]) -> bool;

/// Word index of the `i`-th referenced id of a reference type, in libbpf's visiting order,
/// or `None` past the last one.
fn ref_field(t: &[u32], i: usize) -> Option<usize> {
    match kind_of(t) {
        kind::ARRAY => [3, 4].get(i).copied(),
        kind::FUNC_PROTO => match i {
            0 => Some(2),
            _ if i <= vlen(t) => Some(3 + 2 * (i - 1) + 1),
            _ => None,
        },
        _ => (i == 0).then_some(2),
    }
}

impl Dedup {
    pub(crate) fn dedup_ref_types(&mut self) -> Result<()> {
        for id in self.types.start_id..self.types.type_cnt() {
            if self.types.map(id) <= MAX_NR_TYPES {
                continue;
            }
            self.ref_type(id)?;
        }
        Ok(())
    }

    /// Starts deduplicating `id`: `Ok(Some(canonical))` if it is already decided, `Ok(None)`
    /// after marking it in progress.
    fn enter(&mut self, id: u32) -> Result<Option<u32>> {
        let m = self.types.map(id);
        if m == IN_PROGRESS {
            return Err(Error::BadBtf(format!(
                "type [{id}] is part of a reference type cycle"
            )));
        }
        if m <= MAX_NR_TYPES {
            return Ok(Some(self.resolve(id)));
        }
        match self.types.kind(id) {
            kind::CONST
            | kind::VOLATILE
            | kind::RESTRICT
            | kind::PTR
            | kind::FUNC
            | kind::TYPE_TAG
            | kind::DECL_TAG
            | kind::ARRAY
            | kind::FUNC_PROTO => {
                self.types.set_map(id, IN_PROGRESS);
                Ok(None)
            }
            k => Err(Error::BadBtf(format!(
                "type [{id}] of kind {k} is unexpectedly unresolved"
            ))),
        }
    }

    /// `btf_dedup_ref_type(root)` with an explicit stack.
    fn ref_type(&mut self, root: u32) -> Result<()> {
        if self.enter(root)?.is_some() {
            return Ok(());
        }
        self.ref_stack.clear();
        self.ref_stack.push((root, 0));
        while let Some(&(id, pos)) = self.ref_stack.last() {
            let t = self.types.rec(id);
            if let Some(field) = ref_field(t, pos as usize) {
                let child = t[field];
                match self.enter(child)? {
                    Some(r) => self.set_field(id, field, r),
                    None => self.ref_stack.push((child, 0)),
                }
                continue;
            }
            let new_id = self.finish_ref(id);
            self.ref_stack.pop();
            if let Some(&(parent, ppos)) = self.ref_stack.last() {
                let field = ref_field(self.types.rec(parent), ppos as usize)
                    .expect("a parent frame waits on an existing field");
                self.set_field(parent, field, new_id);
            }
        }
        Ok(())
    }

    /// Writes a resolved id into field `field` of the frame on top for `id`, and moves on.
    fn set_field(&mut self, id: u32, field: usize, value: u32) {
        *self.types.own_word_mut(id, field) = value;
        if let Some(top) = self.ref_stack.last_mut() {
            top.1 += 1;
        }
    }

    /// All fields of `id` are canonical: look it up, record the decision, return it.
    fn finish_ref(&mut self, id: u32) -> u32 {
        let t = self.types.rec(id);
        let (h, eq): (u64, Equal) = match kind_of(t) {
            kind::DECL_TAG => (hash::hash_int_decl_tag(t), hash::equal_int_tag),
            kind::ARRAY => (hash::hash_array(t), hash::equal_array),
            kind::FUNC_PROTO => (hash::hash_fnproto(t), hash::equal_fnproto),
            _ => (hash::hash_common(t), hash::equal_common),
        };
        let mut new_id = id;
        let mut cur = self.table.cursor(h);
        while let Some(c) = self.table.next(&mut cur, h) {
            if eq(t, self.types.rec(c)) {
                new_id = c;
                break;
            }
        }
        self.types.set_map(id, new_id);
        if new_id == id {
            self.table.append(h, id);
        }
        new_id
    }
}
