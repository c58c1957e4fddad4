//! The resolve pass of `BPF_BTF_LOAD` (`btf_check_all_types`, rules `R*`): `btf_resolve` with
//! its explicit stack of at most [`MAX_RESOLVE_DEPTH`] types, every kind's `resolve` callback
//! (modifiers, PTR and VAR; ARRAY; STRUCT and UNION; FUNC; DECL_TAG; DATASEC), the sizes and
//! resolved ids they record, and `btf_func_proto_check`.
//!
//! Resolving a type checks what it refers to: that the target exists and may be referred to,
//! that no cycle runs through anything but a PTR, that sizes fit. The members of a STRUCT or
//! UNION are checked by the kinds' `check_member` callbacks in `member.rs`.

use super::problem::Sink;
use super::record::T;
use super::verifier::{Fail, Mode, Verifier, Vertex, Visit, MAX_RESOLVE_DEPTH};
use crate::btf::kinds::Kind;

impl<'a> Verifier<'a> {
    /// `btf_check_all_types`: resolves every own type that needs it, then checks every
    /// FUNC_PROTO.
    pub(super) fn check_all_types(&mut self, sink: &mut Sink) {
        for i in 0..self.meta_bad.len() {
            if sink.full {
                return;
            }
            if self.meta_bad[i] {
                continue;
            }
            let id = self.start_id + i as u32;
            let Some(t) = self.ty(id) else { continue };
            if t.needs_resolve() && self.visit[i] == Visit::NotVisited {
                self.resolve(id, sink);
            }
            if t.is(Kind::FuncProto) {
                self.func_proto_check(t, sink);
            }
        }
    }

    pub(super) fn resolved(&self, id: u32) -> bool {
        if id == 0 {
            return false;
        }
        match self.own_idx(id) {
            Some(i) => self.visit[i] == Visit::Resolved,
            None => id < self.start_id,
        }
    }

    /// Follows modifiers (at most `MAX_RESOLVE_DEPTH` links).
    fn skip_modifiers(&self, mut id: u32) -> u32 {
        for _ in 0..MAX_RESOLVE_DEPTH {
            match self.ty(id) {
                Some(t) if t.is_modifier() => id = t.st(),
                _ => break,
            }
        }
        id
    }

    pub(super) fn resolved_id(&self, id: u32) -> u32 {
        if let Some(i) = self.own_idx(id) {
            return self.res_id[i];
        }
        if id == 0 || id >= self.start_id {
            return 0;
        }
        // Base types count as resolved: compute what their resolve would have stored.
        let Some(t) = self.ty(id) else { return 0 };
        match t.kind() {
            _ if t.is_modifier() => self.skip_modifiers(t.st()),
            Some(Kind::Var | Kind::Ptr) => self.skip_modifiers(t.st()),
            Some(Kind::Array) => self.skip_modifiers(t.word(3)),
            Some(Kind::Func | Kind::DeclTag) => t.st(),
            _ => id,
        }
    }

    fn resolved_size(&self, id: u32) -> u32 {
        if let Some(i) = self.own_idx(id) {
            return self.res_size[i];
        }
        if id == 0 || id >= self.start_id {
            return 0;
        }
        // __btf_resolve_size for a base array.
        let (mut cur, mut nelems) = (id, 1u32);
        for _ in 0..MAX_RESOLVE_DEPTH {
            let Some(t) = self.ty(cur) else { return 0 };
            let size = match t.kind() {
                Some(
                    Kind::Int
                    | Kind::Struct
                    | Kind::Union
                    | Kind::Enum
                    | Kind::Float
                    | Kind::Enum64,
                ) => t.st(),
                Some(Kind::Ptr) => self.ptr_size,
                _ if t.is_modifier() => {
                    cur = t.st();
                    continue;
                }
                Some(Kind::Array) => {
                    let Some(n) = nelems.checked_mul(t.word(5)) else {
                        return 0;
                    };
                    nelems = n;
                    cur = t.word(3);
                    continue;
                }
                _ => return 0,
            };
            return size.checked_mul(nelems).unwrap_or(0);
        }
        0
    }

    /// `btf_type_id_size`: the sized type behind `id` and its size, following a resolved
    /// modifier or VAR once.
    pub(super) fn type_id_size(&self, id: u32) -> Option<(u32, u32)> {
        let sized = |t: T<'_>, id: u32| -> Option<u32> {
            if t.nosize() {
                None
            } else if t.has_size() {
                Some(t.st())
            } else if t.is(Kind::Array) {
                Some(self.resolved_size(id))
            } else if t.is(Kind::Ptr) {
                Some(self.ptr_size)
            } else {
                None
            }
        };
        let t = self.ty(id)?;
        if t.nosize() {
            return None;
        }
        if let Some(size) = sized(t, id) {
            return Some((id, size));
        }
        if !t.is_modifier() && !t.is(Kind::Var) {
            return None;
        }
        let rid = self.resolved_id(id);
        let rt = self.ty(rid)?;
        sized(rt, rid).map(|size| (rid, size))
    }

    pub(super) fn is_sink(&self, t: T<'_>) -> bool {
        match self.mode {
            Mode::Tbd => !t.needs_resolve(),
            Mode::Ptr => !t.is_modifier() && !t.is(Kind::Ptr),
            Mode::StructOrArray => !t.is_modifier() && !t.is(Kind::Array) && !t.is_struct(),
        }
    }

    pub(super) fn push(&mut self, id: u32) -> Result<(), Fail> {
        if self.stack.len() >= MAX_RESOLVE_DEPTH {
            return Err(Fail::Depth);
        }
        let Some(i) = self.own_idx(id) else {
            return Err(Fail::Loop(id));
        };
        match self.visit[i] {
            Visit::NotVisited => {}
            Visit::Failed => return Err(Fail::Silent),
            Visit::Visited | Visit::Resolved => return Err(Fail::Loop(id)),
        }
        let Some(t) = self.ty(id) else {
            return Err(Fail::Silent);
        };
        self.visit[i] = Visit::Visited;
        self.stack.push(Vertex { id, next_member: 0 });
        if self.mode == Mode::Tbd {
            if t.is(Kind::Ptr) {
                self.mode = Mode::Ptr;
            } else if t.is_struct() || t.is(Kind::Array) {
                self.mode = Mode::StructOrArray;
            }
        }
        Ok(())
    }

    pub(super) fn pop_resolved(&mut self, res_id: u32, res_size: u32) {
        if let Some(v) = self.stack.pop() {
            if let Some(i) = self.own_idx(v.id) {
                self.res_id[i] = res_id;
                self.res_size[i] = res_size;
                self.visit[i] = Visit::Resolved;
            }
        }
    }

    pub(super) fn set_next_member(&mut self, next: u32) {
        if let Some(v) = self.stack.last_mut() {
            v.next_member = next;
        }
    }

    /// `btf_resolve`: resolves `root` and everything it needs, reporting the first problem.
    /// Returns whether it succeeded.
    pub(super) fn resolve(&mut self, root: u32, sink: &mut Sink) -> bool {
        match self.own_idx(root).map(|i| self.visit[i]) {
            Some(Visit::NotVisited) => {}
            Some(Visit::Resolved) => return true,
            _ => return false,
        }
        self.mode = Mode::Tbd;
        self.stack.clear();
        let mut result = self.push(root);
        // Every step pushes a not yet visited type, pops one, or fails: bounded by 2 per type.
        let mut budget = 2 * self.meta_bad.len() + 4;
        while result.is_ok() {
            let Some(&v) = self.stack.last() else { break };
            if budget == 0 {
                result = Err(Fail::Report(
                    v.id,
                    "R0-internal",
                    "resolver made no progress (internal error)".into(),
                ));
                break;
            }
            budget -= 1;
            result = self.step(v);
        }
        let Err(fail) = result else { return true };
        let chain = || {
            self.stack
                .iter()
                .map(|v| self.desc_id(v.id))
                .collect::<Vec<_>>()
                .join(" -> ")
        };
        match fail {
            Fail::Report(id, rule, msg) => sink.push(Some(id), rule, msg),
            Fail::Loop(id) => sink.push(
                Some(root),
                "R3-loop",
                format!(
                    "loop detected: {} -> {} (only a PTR may close a cycle)",
                    chain(),
                    self.desc_id(id)
                ),
            ),
            Fail::Depth => sink.push(
                Some(root),
                "R3-depth",
                format!(
                    "exceeded max resolving depth {MAX_RESOLVE_DEPTH}: {}",
                    chain()
                ),
            ),
            Fail::Silent => {}
        }
        for k in 0..self.stack.len() {
            if let Some(i) = self.own_idx(self.stack[k].id) {
                self.visit[i] = Visit::Failed;
            }
        }
        self.stack.clear();
        false
    }

    fn step(&mut self, v: Vertex) -> Result<(), Fail> {
        let Some(t) = self.ty(v.id) else {
            return Err(Fail::Silent);
        };
        match t.kind() {
            _ if t.is_modifier() => self.ref_resolve(v, t),
            Some(Kind::Ptr | Kind::Var) => self.ref_resolve(v, t),
            Some(Kind::Struct | Kind::Union) => self.struct_resolve(v, t),
            Some(Kind::Array) => self.array_resolve(v, t),
            Some(Kind::Func) => self.func_resolve(t),
            Some(Kind::DeclTag) => self.decl_tag_resolve(v, t),
            Some(Kind::Datasec) => self.datasec_resolve(v, t),
            _ => Err(Fail::Report(
                v.id,
                "R0-internal",
                format!("{} cannot be resolved (internal error)", self.desc(t)),
            )),
        }
    }

    pub(super) fn nonexistent(&self, at: u32, what: &str, id: u32) -> Fail {
        Fail::Report(
            at,
            "R1-type-id",
            format!(
                "{}: {what} refers to type {id}, which does not exist (last id is {})",
                self.ty(at).map_or_else(String::new, |t| self.desc(t)),
                self.type_cnt.saturating_sub(1)
            ),
        )
    }
}
