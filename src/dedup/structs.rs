//! Phase 3: STRUCT, UNION and (since v1.7.0) TYPEDEF, by type-graph equivalence
//! (libbpf `btf_dedup_struct_types`, `btf_dedup_is_equiv`, `btf_dedup_identical_types`,
//! `btf_dedup_merge_hypot_map`).
//!
//! A struct/union hashes by its shallow signature (name, size, member names and offsets), a
//! typedef by name and info. For each candidate with an equal shallow signature, `is_equiv`
//! walks both type graphs side by side, recording canonical → candidate pairs in the
//! hypothetical map; a canonical type already mapped to a *different* candidate is accepted
//! only if the two candidates are structurally identical (`identical_types`, depth 16, with
//! libbpf's ARRAY quirk: both array descriptors are read from the first type, so two arrays
//! with equal size and element count count as identical whatever their element types). FWDs are
//! resolved on the canonical side only. A successful check is merged into the canonical map.
//!
//! `is_equiv` uses an explicit stack of pending pairs instead of recursion: every composite case
//! of libbpf's recursive function checks its children in order and returns the first
//! non-positive result unchanged, so visiting the pairs in pre-order from a stack (children
//! pushed in reverse) performs the same side effects in the same order and yields the same
//! answer, with no native stack growth.
//!
//! # Performance
//!
//! On the kernel this phase is most of dedup: a dependent chain of pair steps, each reading
//! the record the previous one pointed at. `ahead.rs` streams the records and per-id entries
//! ahead of the loop into the outer caches, queuing a pair decides it at once when both
//! sides already map to one type, and a step whose two records have the same template reads
//! only the canonical side's ids (its template words, a dependent load of their own, stay
//! unread). The figures behind this, and the ideas tried and dropped, are in
//! `docs/dedup-performance.md`.

use super::ahead::Ahead;
use super::entry::MAX_ID;
use super::hash::{self, kind_of, vlen};
use super::hypot::HypotMap;
use super::state::{Dedup, Graph};
use crate::btf::kinds::kind;
use crate::btf::store::{Rec, RecIds};
use crate::error::{DedupError, Result};

/// How often (in ids) the struct phase tells the reference-type thread how far it is.
const PUBLISH_EVERY: u32 = 256;

/// Result of examining one (candidate, canonical) pair.
enum Step {
    /// Not equivalent: the whole check fails.
    No,
    /// Equivalent as far as this pair goes (children, if any, were pushed).
    Yes,
}

impl Dedup {
    pub(crate) fn dedup_struct_types(&mut self) -> Result<()> {
        let mut ahead = Ahead::new(self.types.graph());
        for id in self.types.start_id..self.types.type_cnt() {
            ahead.advance(self.types.graph(), id);
            self.dedup_struct_type(id)?;
            if id % PUBLISH_EVERY == 0 {
                self.progress.publish(id + 1);
            }
        }
        Ok(())
    }

    fn dedup_struct_type(&mut self, id: u32) -> Result<()> {
        // The kind comes from the per-id entry, tested first: most ids are of other kinds.
        let k = self.types.kind(id);
        if !matches!(k, kind::STRUCT | kind::UNION | kind::TYPEDEF) || self.types.map(id) <= MAX_ID
        {
            return Ok(());
        }
        // The hashes and the shallow comparisons read no id field, so they take the
        // records' templates.
        let t = self.types.rec(id).tpl();
        let (h, shallow): (u64, hash::Equal) = if k == kind::TYPEDEF {
            (hash::hash_typedef(t), hash::equal_typedef)
        } else {
            (hash::hash_struct(t), hash::shallow_equal_struct)
        };
        let mut new_id = id;
        let mut cur = self.table.cursor(h);
        while let Some(c) = self.table.next(&mut cur, h) {
            if !same_template(self.types.rec(id), self.types.rec(c), shallow) {
                continue;
            }
            self.clear_hypot_map();
            if !self.is_equiv(id, c)? {
                continue;
            }
            self.merge_hypot_map();
            if self.hypot_adjust_canon {
                continue;
            }
            new_id = c;
            break;
        }
        self.types.set_map(id, new_id);
        if new_id == id {
            self.table.append(h, id);
        }
        Ok(())
    }

    /// `btf_dedup_clear_hypot_map`: resets the touched entries only.
    fn clear_hypot_map(&mut self) {
        self.hypot.clear();
        self.hypot_adjust_canon = false;
    }

    /// `btf_dedup_is_equiv(cand, canon)`: `Ok(true)` when the graphs are equivalent.
    pub(crate) fn is_equiv(&mut self, cand: u32, canon: u32) -> Result<bool> {
        self.equiv_stack.clear();
        Walk {
            g: self.types.graph(),
            hypot: &mut self.hypot,
            adjust_canon: &mut self.hypot_adjust_canon,
            stack: &mut self.equiv_stack,
        }
        .run(cand, canon)
    }

    /// `btf_dedup_merge_hypot_map`: records FWD resolutions and struct pre-mappings.
    ///
    /// Only pairs whose canonical side is a FWD, STRUCT or UNION can write: any other kind
    /// resolves to its own kind (nothing maps a struct to a FWD, and reference types are not
    /// mapped before phase 5), and its candidate, which passed the comparison, has that kind
    /// too. The others are skipped without resolving them (most pairs are pointers).
    fn merge_hypot_map(&mut self) {
        let g = self.types.graph();
        for &canon in self.hypot.list() {
            if !matches!(g.kind(canon), kind::FWD | kind::STRUCT | kind::UNION) {
                continue;
            }
            let t_id = g.resolve(self.hypot.get(canon));
            let c_id = g.resolve(canon);
            let t_kind = g.kind(t_id);
            let c_kind = g.kind(c_id);
            if t_kind != kind::FWD && c_kind == kind::FWD {
                g.set_map(c_id, t_id);
            }
            if self.hypot_adjust_canon {
                continue;
            }
            if t_kind == kind::FWD && c_kind != kind::FWD {
                g.set_map(t_id, c_id);
            }
            if matches!(t_kind, kind::STRUCT | kind::UNION)
                && c_kind != kind::FWD
                && g.is_mapped(c_id)
                && !g.is_mapped(t_id)
            {
                g.set_map(t_id, c_id);
            }
        }
    }
}

/// One equivalence check's working set, borrowed once for the whole walk so that the hot
/// loop keeps its base pointers in registers.
struct Walk<'a> {
    g: Graph<'a>,
    hypot: &'a mut HypotMap,
    adjust_canon: &'a mut bool,
    /// Pending (candidate, canonical) pairs.
    stack: &'a mut Vec<(u32, u32)>,
}

impl Walk<'_> {
    /// Runs the check from the pair (`cand`, `canon`) on an empty stack.
    fn run(&mut self, cand: u32, canon: u32) -> Result<bool> {
        self.push_pair(cand, canon);
        while let Some((cand, canon)) = self.stack.pop() {
            match self.equiv_step(cand, canon)? {
                Step::Yes => {}
                Step::No => return Ok(false),
            }
        }
        Ok(true)
    }

    /// Queues a pair unless libbpf's `is_equiv` would answer yes for it at once: when both
    /// sides resolve to one type (its first test), or when the canonical side, FWD-resolved,
    /// is already hypothetically mapped to this very candidate. Both answers stay fixed until
    /// the check ends (nothing writes the canonical map during a check, and a hypothetical
    /// entry stays until the map is cleared), and neither has a side effect, so deciding them
    /// when the pair is queued gives libbpf's answer and spares the stack the two most common
    /// pairs (a member whose type is already deduplicated, a type met again). The queued
    /// canonical id is the FWD-resolved one.
    #[inline(always)]
    fn push_pair(&mut self, cand: u32, canon: u32) {
        let (cand_to, canon_to) = (self.g.map(cand), self.g.map(canon));
        if cand_to == canon_to && cand_to <= MAX_ID {
            // Both sides map to one type, so they resolve to one type.
            return;
        }
        let resolved = self.g.resolve_from(canon, canon_to);
        if self.g.resolve_from(cand, cand_to) == resolved {
            return;
        }
        // A canonical side that resolves to itself is its own FWD resolution.
        let canon = if resolved == canon {
            canon
        } else {
            self.g.resolve_fwd(canon, resolved)
        };
        if self.hypot.get(canon) != cand {
            self.stack.push((cand, canon));
        }
    }

    /// The rest of libbpf's `is_equiv` for one pair that [`Self::push_pair`] queued:
    /// pushes the pairs of referenced types, children in reverse so that they pop in
    /// libbpf's recursion order. After a `No` the stack is dropped, so pushing while
    /// comparing is safe.
    fn equiv_step(&mut self, cand_id: u32, canon_id: u32) -> Result<Step> {
        let hypot = self.hypot.get(canon_id);
        if hypot <= MAX_ID {
            if hypot == cand_id {
                return Ok(Step::Yes);
            }
            return Ok(yes_if(self.identical_types(hypot, cand_id, 16)?));
        }
        self.hypot.insert(canon_id, cand_id);

        let cand_rec = self.g.rec(cand_id);
        let canon_ids = self.g.rec_ids(canon_id);
        if let (Some(a), Some(b)) = (cand_rec.template(), canon_ids.template()) {
            if a == b {
                // Equal templates: equal in every field but the ids, so every comparison
                // below passes and only the referenced types are left to compare. The
                // canonical side's template is not read.
                return self.push_children(cand_id, cand_rec, canon_ids);
            }
        }
        let canon_rec = self.g.rec(canon_id);
        let (cand_type, canon_type) = (cand_rec.tpl(), canon_rec.tpl());
        let (cand_kind, canon_kind) = (kind_of(cand_type), kind_of(canon_type));
        if cand_type[0] != canon_type[0] {
            return Ok(Step::No);
        }
        if (cand_kind == kind::FWD || canon_kind == kind::FWD) && cand_kind != canon_kind {
            let (real, fwd) = if cand_kind == kind::FWD {
                (canon_kind, fwd_kind(cand_type))
            } else {
                let fwd = fwd_kind(canon_type);
                if fwd == cand_kind && canon_id < self.g.start_id {
                    *self.adjust_canon = true;
                }
                (cand_kind, fwd)
            };
            return Ok(yes_if(fwd == real));
        }
        if cand_kind != canon_kind {
            return Ok(Step::No);
        }
        let equal = match cand_kind {
            kind::INT => hash::equal_int_tag(cand_type, canon_type),
            kind::ENUM | kind::ENUM64 => hash::compat_enum(cand_type, canon_type),
            kind::FWD | kind::FLOAT => hash::equal_common(cand_type, canon_type),
            k if hash::points_at_one(k) => cand_type[1] == canon_type[1],
            kind::ARRAY => hash::compat_array(cand_type, canon_type),
            // btf_shallow_equal_struct (no id field).
            kind::STRUCT | kind::UNION => {
                same_template(cand_rec, canon_rec, hash::shallow_equal_struct)
            }
            kind::FUNC_PROTO => hash::compat_fnproto(cand_type, canon_type),
            // No other kind belongs in a struct graph: `push_children` reports it.
            _ => true,
        };
        if !equal {
            return Ok(Step::No);
        }
        self.push_children(cand_id, cand_rec, canon_rec.into())
    }

    /// The rest of a step whose records compare equal: queues the pairs of the types they
    /// reference, in reverse so that they pop in libbpf's recursion order.
    #[inline(always)]
    fn push_children(
        &mut self,
        cand_id: u32,
        cand_rec: Rec<'_>,
        canon: RecIds<'_>,
    ) -> Result<Step> {
        let pair = |this: &mut Self, i: usize| this.push_pair(cand_rec.id(i), canon.id(i));
        match cand_rec.kind() {
            kind::INT | kind::ENUM | kind::ENUM64 | kind::FWD | kind::FLOAT => {}
            k if hash::points_at_one(k) => pair(self, 0),
            kind::ARRAY => {
                // Element type (id 0) pushed first, index type (id 1) second: the index type
                // is checked first, as in libbpf.
                pair(self, 0);
                pair(self, 1);
            }
            // The member types, queued from the last.
            kind::STRUCT | kind::UNION => (0..cand_rec.vlen()).rev().for_each(|i| pair(self, i)),
            // Return type is id 0, parameter i is id 1 + i; queued from the last.
            kind::FUNC_PROTO => (0..=cand_rec.vlen()).rev().for_each(|i| pair(self, i)),
            k => {
                return Err(DedupError::NotInStructGraph {
                    id: cand_id,
                    kind: k,
                }
                .into());
            }
        }
        Ok(Step::Yes)
    }

    /// `btf_dedup_identical_types(id1, id2, depth)`, ARRAY quirk included.
    fn identical_types(&self, mut id1: u32, mut id2: u32, depth: i32) -> Result<bool> {
        // libbpf follows modifier chains without decrementing the depth; a cycle of modifiers
        // would make it spin forever, which only malformed input can cause.
        let mut steps = 0u32;
        loop {
            if depth <= 0 {
                return Ok(false);
            }
            let (r1, r2) = (self.g.rec(id1), self.g.rec(id2));
            let (t1, t2) = (r1.tpl(), r2.tpl());
            let k1 = kind_of(t1);
            if k1 != kind_of(t2) {
                return Ok(false);
            }
            return Ok(match k1 {
                kind::UNKN => true,
                kind::INT => hash::equal_int_tag(t1, t2),
                kind::ENUM | kind::ENUM64 => hash::compat_enum(t1, t2),
                kind::FWD | kind::FLOAT => hash::equal_common(t1, t2),
                k if hash::points_at_one(k) => {
                    if t1[1] != t2[1] || t1[0] != t2[0] {
                        return Ok(false);
                    }
                    id1 = r1.id(0);
                    id2 = r2.id(0);
                    steps += 1;
                    if steps > self.g.type_cnt() {
                        return Err(DedupError::RefChainCycle { id: id1 }.into());
                    }
                    continue;
                }
                kind::ARRAY => {
                    if !hash::compat_array(t1, t2) {
                        return Ok(false);
                    }
                    // libbpf v1.6+ reads both descriptors from t1 (`a2 = btf_array(t1)`), so
                    // both comparisons below see equal ids and never recurse.
                    let (a1, a2) = (r1, r1);
                    if a1.id(1) != a2.id(1)
                        && !self.identical_types(a1.id(1), a2.id(1), depth - 1)?
                    {
                        return Ok(false);
                    }
                    if a1.id(0) != a2.id(0)
                        && !self.identical_types(a1.id(0), a2.id(0), depth - 1)?
                    {
                        return Ok(false);
                    }
                    true
                }
                kind::STRUCT | kind::UNION => {
                    if !hash::shallow_equal_struct(t1, t2) {
                        return Ok(false);
                    }
                    self.all_identical(r1, r2, 0..vlen(t1), depth)?
                }
                kind::FUNC_PROTO => {
                    if !hash::compat_fnproto(t1, t2) {
                        return Ok(false);
                    }
                    // The return type (id 0), then each parameter's.
                    self.all_identical(r1, r2, 0..vlen(t1) + 1, depth)?
                }
                _ => false,
            });
        }
    }

    /// Whether ids `ks` of `r1` and `r2` are pairwise equal or identical types (one level
    /// deeper than `depth`), checked in order, stopping at the first that is not.
    fn all_identical(
        &self,
        r1: Rec<'_>,
        r2: Rec<'_>,
        ks: std::ops::Range<usize>,
        depth: i32,
    ) -> Result<bool> {
        for k in ks {
            let (a, b) = (r1.id(k), r2.id(k));
            if a != b && !self.identical_types(a, b, depth - 1)? {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

/// `btf_fwd_kind`: the kind a FWD declares.
fn fwd_kind(t: &[u32]) -> u32 {
    if t[1] >> 31 != 0 {
        kind::UNION
    } else {
        kind::STRUCT
    }
}

/// Whether two STRUCT/UNION or TYPEDEF records are equal in every field but their type ids,
/// as `shallow` compares them: by template number when both are compact (a template is the
/// record with its id fields zeroed, and templates are interned), by `shallow` when a raw base
/// record is one of them.
#[inline(always)]
fn same_template(a: Rec<'_>, b: Rec<'_>, shallow: hash::Equal) -> bool {
    match (a.template(), b.template()) {
        (Some(x), Some(y)) => x == y,
        _ => shallow(a.tpl(), b.tpl()),
    }
}

fn yes_if(b: bool) -> Step {
    if b {
        Step::Yes
    } else {
        Step::No
    }
}
