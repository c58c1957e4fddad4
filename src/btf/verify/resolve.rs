//! The resolve pass of `BPF_BTF_LOAD` (`btf_check_all_types`, rules `R*`): `btf_resolve` with
//! its explicit stack of at most [`MAX_RESOLVE_DEPTH`] types, every kind's `resolve` callback
//! (modifiers, PTR and VAR; ARRAY; STRUCT and UNION; FUNC; DECL_TAG; DATASEC), the sizes and
//! resolved ids they record, and `btf_func_proto_check`.
//!
//! Resolving a type checks what it refers to: that the target exists and may be referred to,
//! that no cycle runs through anything but a PTR, that sizes fit. The members of a STRUCT or
//! UNION are checked by the kinds' `check_member` callbacks in `member.rs`.

use super::record::T;
use super::{Sink, Verifier};
use crate::btf::kinds::Kind;

/// `MAX_RESOLVE_DEPTH` of the kernel's resolver.
pub(super) const MAX_RESOLVE_DEPTH: usize = 32;

/// Why a resolve step failed.
pub(super) enum Fail {
    /// A problem to report, at the given type.
    Report(u32, &'static str, String),
    /// `-EEXIST`: the given id is already on the resolve stack.
    Loop(u32),
    /// `-E2BIG`: the stack is full.
    Depth,
    /// Depends on a type whose problem was already reported.
    Silent,
}

/// Where an own type is in the resolve pass.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Visit {
    NotVisited,
    Visited,
    Resolved,
    Failed,
}

/// `resolve_mode`: which kinds end the walk down from the type that started it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
    Tbd,
    Ptr,
    StructOrArray,
}

/// The two types an ARRAY refers to.
#[derive(Clone, Copy)]
enum ArrayPart {
    Index,
    Elem,
}

/// An entry of the resolve stack (`struct resolve_vertex`).
#[derive(Clone, Copy)]
pub(super) struct Vertex {
    pub(super) id: u32,
    /// STRUCT and DATASEC: the member to go on from once the pushed type is resolved.
    pub(super) next_member: u32,
}

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

    fn resolved(&self, id: u32) -> bool {
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

    fn resolved_id(&self, id: u32) -> u32 {
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

    fn is_sink(&self, t: T<'_>) -> bool {
        match self.mode {
            Mode::Tbd => !t.needs_resolve(),
            Mode::Ptr => !t.is_modifier() && !t.is(Kind::Ptr),
            Mode::StructOrArray => !t.is_modifier() && !t.is(Kind::Array) && !t.is_struct(),
        }
    }

    fn push(&mut self, id: u32) -> Result<(), Fail> {
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

    fn pop_resolved(&mut self, res_id: u32, res_size: u32) {
        if let Some(v) = self.stack.pop() {
            if let Some(i) = self.own_idx(v.id) {
                self.res_id[i] = res_id;
                self.res_size[i] = res_size;
                self.visit[i] = Visit::Resolved;
            }
        }
    }

    fn set_next_member(&mut self, next: u32) {
        if let Some(v) = self.stack.last_mut() {
            v.next_member = next;
        }
    }

    /// `btf_resolve`: resolves `root` and everything it needs, reporting the first problem.
    /// Returns whether it succeeded.
    fn resolve(&mut self, root: u32, sink: &mut Sink) -> bool {
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

    fn nonexistent(&self, at: u32, what: &str, id: u32) -> Fail {
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

    /// `btf_modifier_resolve`, `btf_ptr_resolve` and `btf_var_resolve`.
    fn ref_resolve(&mut self, v: Vertex, t: T<'a>) -> Result<(), Fail> {
        let is_ptr = t.is(Kind::Ptr);
        let is_var = t.is(Kind::Var);
        let mut next_id = t.st();
        let Some(next) = self.get(next_id)? else {
            return Err(self.nonexistent(v.id, "its type", next_id));
        };
        if next.source_only() {
            return Err(Fail::Report(
                v.id,
                "R2-ref-target",
                format!(
                    "{} refers to {}, which cannot be referenced",
                    self.desc(t),
                    self.desc_id(next_id)
                ),
            ));
        }
        if !self.is_sink(next) && !self.resolved(next_id) {
            return self.push(next_id);
        }
        if (is_ptr || is_var) && next.is_modifier() {
            // Continue from the last-resolved PTR so it cannot point back at us.
            let rid = self.resolved_id(next_id);
            if let Some(rt) = self.ty(rid) {
                if rt.is(Kind::Ptr) && !self.is_sink(rt) && !self.resolved(rid) {
                    return self.push(rid);
                }
            }
        }
        match self.type_id_size(next_id) {
            Some((rid, _)) => next_id = rid,
            None if is_var => {
                return Err(Fail::Report(
                    v.id,
                    "R10-var-type",
                    format!(
                        "{}: its type {} has no size",
                        self.desc(t),
                        self.desc_id(next_id)
                    ),
                ));
            }
            None => {
                let mut nt = Some(next);
                if self.resolved(next_id) {
                    next_id = self.resolved_id(next_id);
                    nt = self.ty(next_id);
                }
                let ok =
                    nt.is_some_and(|n| n.is_void() || n.is(Kind::Fwd) || n.is(Kind::FuncProto));
                if !ok {
                    return Err(Fail::Report(
                        v.id,
                        "R2-ref-target",
                        format!(
                            "{} refers to {}, which has no size and is not void, FWD or FUNC_PROTO",
                            self.desc(t),
                            self.desc_id(next_id)
                        ),
                    ));
                }
            }
        }
        self.pop_resolved(next_id, 0);
        Ok(())
    }

    /// `btf_array_resolve`.
    fn array_resolve(&mut self, v: Vertex, t: T<'a>) -> Result<(), Fail> {
        let (elem_id, index_id, nelems) = (t.word(3), t.word(4), t.word(5));
        if !self.array_part_ready(v.id, index_id, ArrayPart::Index)? {
            return Ok(());
        }
        match self.type_id_size(index_id).and_then(|(id, _)| self.ty(id)) {
            Some(it) if it.is(Kind::Int) && it.int_is_regular() => {}
            _ => {
                let why = "is not a regular integer";
                return Err(self.bad_array_part(v.id, index_id, ArrayPart::Index, why));
            }
        }
        if !self.array_part_ready(v.id, elem_id, ArrayPart::Elem)? {
            return Ok(());
        }
        let bad_elem = |s: &Self, why: &str| s.bad_array_part(v.id, elem_id, ArrayPart::Elem, why);
        let Some((rid, elem_size)) = self.type_id_size(elem_id) else {
            return Err(bad_elem(self, "has no size"));
        };
        if self
            .ty(rid)
            .is_some_and(|e| e.is(Kind::Int) && !e.int_is_regular())
        {
            return Err(bad_elem(
                self,
                "is an int that is not regular (array of bitfields)",
            ));
        }
        if nelems != 0 && elem_size > u32::MAX / nelems {
            return Err(Fail::Report(
                v.id,
                "R4-array-overflow",
                format!("ARRAY: {nelems} elements of {elem_size} bytes overflow 32 bits"),
            ));
        }
        self.pop_resolved(rid, elem_size.wrapping_mul(nelems));
        Ok(())
    }

    /// What the index and the element type of ARRAY `at` must both pass first: `id` exists
    /// and is not a kind without size. Unless it is resolved already, it is pushed and the
    /// answer is `false` (the ARRAY is stepped again once it is resolved).
    fn array_part_ready(&mut self, at: u32, id: u32, part: ArrayPart) -> Result<bool, Fail> {
        let what = match part {
            ArrayPart::Index => "its index type",
            ArrayPart::Elem => "its element type",
        };
        let Some(pt) = self.get(id)? else {
            return Err(self.nonexistent(at, what, id));
        };
        if pt.nosize() || pt.source_only() {
            let why = match part {
                ArrayPart::Index => "is not an integer",
                ArrayPart::Elem => "has no size",
            };
            return Err(self.bad_array_part(at, id, part, why));
        }
        if !self.is_sink(pt) && !self.resolved(id) {
            self.push(id)?;
            return Ok(false);
        }
        Ok(true)
    }

    /// The index or element type `id` of ARRAY `at` is not what it must be: `why`.
    fn bad_array_part(&self, at: u32, id: u32, part: ArrayPart, why: &str) -> Fail {
        let (rule, name) = match part {
            ArrayPart::Index => ("R4-array-index", "index"),
            ArrayPart::Elem => ("R4-array-elem", "element"),
        };
        Fail::Report(
            at,
            rule,
            format!("ARRAY: {name} type {} {why}", self.desc_id(id)),
        )
    }

    /// `btf_struct_resolve`.
    fn struct_resolve(&mut self, v: Vertex, t: T<'a>) -> Result<(), Fail> {
        let kflag = t.kflag();
        if v.next_member > 0 {
            let i = v.next_member - 1;
            let m = t.member(i);
            let Some(mt) = self.ty(m.type_id).filter(|_| self.resolved(m.type_id)) else {
                return Err(Fail::Silent);
            };
            self.check_member(v.id, t, m, i, mt, kflag)?;
        }
        for i in v.next_member..t.vlen() {
            let m = t.member(i);
            let Some(mt) = self.get(m.type_id)? else {
                return Err(self.nonexistent(v.id, &self.member_desc(m, i), m.type_id));
            };
            if mt.nosize() || mt.source_only() {
                return Err(Fail::Report(
                    v.id,
                    "R5-member",
                    format!(
                        "{} {}: type {} cannot be a member (no size)",
                        self.desc(t),
                        self.member_desc(m, i),
                        self.desc_id(m.type_id)
                    ),
                ));
            }
            if !self.is_sink(mt) && !self.resolved(m.type_id) {
                self.set_next_member(i + 1);
                return self.push(m.type_id);
            }
            self.check_member(v.id, t, m, i, mt, kflag)?;
        }
        self.pop_resolved(0, 0);
        Ok(())
    }

    /// `btf_func_resolve` (`btf_func_check`).
    fn func_resolve(&mut self, t: T<'a>) -> Result<(), Fail> {
        let proto_id = t.st();
        let Some(proto) = self.get(proto_id)? else {
            return Err(self.nonexistent(t.id, "its prototype", proto_id));
        };
        if !proto.is(Kind::FuncProto) {
            return Err(Fail::Report(
                t.id,
                "R6-func-proto",
                format!(
                    "{}: type {} is not a FUNC_PROTO",
                    self.desc(t),
                    self.desc_id(proto_id)
                ),
            ));
        }
        for i in 0..proto.vlen() {
            let (name_off, ty) = (proto.entry(0, 2, i, 0), proto.entry(0, 2, i, 1));
            if name_off == 0 && ty != 0 {
                return Err(Fail::Report(
                    t.id,
                    "R6-func-param-name",
                    format!(
                        "{}: parameter #{} of {} has no name",
                        self.desc(t),
                        i + 1,
                        self.desc_id(proto_id)
                    ),
                ));
            }
        }
        self.pop_resolved(proto_id, 0);
        Ok(())
    }

    /// `btf_decl_tag_resolve`.
    fn decl_tag_resolve(&mut self, v: Vertex, t: T<'a>) -> Result<(), Fail> {
        let next_id = t.st();
        let Some(next) = self.get(next_id)? else {
            return Err(self.nonexistent(v.id, "its target", next_id));
        };
        let target_ok =
            next.is_struct() || matches!(next.kind(), Some(Kind::Func | Kind::Var | Kind::Typedef));
        if !target_ok {
            return Err(Fail::Report(
                v.id,
                "R9-decl-tag-target",
                format!(
                    "{}: target {} is not a STRUCT, UNION, FUNC, VAR or TYPEDEF",
                    self.desc(t),
                    self.desc_id(next_id)
                ),
            ));
        }
        if !self.is_sink(next) && !self.resolved(next_id) {
            return self.push(next_id);
        }
        let comp = t.word(3) as i32;
        if comp != -1 {
            let vlen = if next.is(Kind::Var) || next.is(Kind::Typedef) {
                None
            } else if next.is_struct() {
                Some(next.vlen())
            } else {
                Some(self.ty(next.st()).map_or(0, |p| p.vlen()))
            };
            if vlen.is_none_or(|n| comp as u32 >= n) {
                return Err(Fail::Report(
                    v.id,
                    "R9-decl-tag-component",
                    format!(
                        "{}: component_idx {comp} is out of range for {}",
                        self.desc(t),
                        self.desc_id(next_id)
                    ),
                ));
            }
        }
        self.pop_resolved(next_id, 0);
        Ok(())
    }

    /// `btf_datasec_resolve`.
    fn datasec_resolve(&mut self, v: Vertex, t: T<'a>) -> Result<(), Fail> {
        self.mode = Mode::Tbd;
        // Unlike the kernel, re-check the entry whose VAR was just resolved.
        for i in v.next_member.saturating_sub(1)..t.vlen() {
            let (var_id, size) = (t.entry(0, 3, i, 0), t.entry(0, 3, i, 2));
            let Some(var) = self.get(var_id)? else {
                return Err(self.nonexistent(v.id, &format!("entry #{i}"), var_id));
            };
            if !var.is(Kind::Var) {
                return Err(Fail::Report(
                    v.id,
                    "R8-datasec-var",
                    format!(
                        "{}: entry #{i} is {}, not a VAR",
                        self.desc(t),
                        self.desc_id(var_id)
                    ),
                ));
            }
            if !self.is_sink(var) && !self.resolved(var_id) {
                self.set_next_member(i + 1);
                return self.push(var_id);
            }
            let Some((_, type_size)) = self.type_id_size(var.st()) else {
                return Err(Fail::Report(
                    v.id,
                    "R8-datasec-var",
                    format!(
                        "{}: entry #{i} {}: its type has no size",
                        self.desc(t),
                        self.desc_id(var_id)
                    ),
                ));
            };
            if size < type_size {
                return Err(Fail::Report(
                    v.id,
                    "R8-datasec-size",
                    format!(
                        "{}: entry #{i} {} has size {size}, less than its type's {type_size}",
                        self.desc(t),
                        self.desc_id(var_id)
                    ),
                ));
            }
        }
        self.pop_resolved(0, 0);
        Ok(())
    }

    /// `btf_func_proto_check`: return and parameter types, varargs, parameter names.
    fn func_proto_check(&mut self, t: T<'a>, sink: &mut Sink) {
        let id = t.id;
        let report = |s: &Self, sink: &mut Sink, rule: &'static str, msg: String| {
            sink.push(Some(id), rule, format!("{}: {msg}", s.desc(t)));
        };
        let ret_id = t.st();
        if ret_id != 0 {
            let ret = match self.get(ret_id) {
                Err(_) => return,
                Ok(None) => {
                    let msg = format!("return type {ret_id} does not exist");
                    return report(self, sink, "R1-type-id", msg);
                }
                Ok(Some(r)) => r,
            };
            if ret.source_only() {
                let msg = format!("invalid return type {}", self.desc_id(ret_id));
                return report(self, sink, "R7-proto-return", msg);
            }
            if ret.needs_resolve() && !self.resolved(ret_id) && !self.resolve(ret_id, sink) {
                return;
            }
            if self.type_id_size(ret_id).is_none() {
                let msg = format!("return type {} has no size", self.desc_id(ret_id));
                return report(self, sink, "R7-proto-return", msg);
            }
        }
        let vlen = t.vlen();
        if vlen == 0 {
            return;
        }
        let param = |i: u32| (t.entry(0, 2, i, 0), t.entry(0, 2, i, 1));
        let mut nr = vlen;
        let (last_name, last_type) = param(vlen - 1);
        if last_type == 0 {
            if last_name != 0 {
                let msg = format!("the vararg parameter #{vlen} has a name");
                return report(self, sink, "R7-vararg", msg);
            }
            nr -= 1;
        }
        for i in 0..nr {
            let (name_off, arg_id) = param(i);
            let n = i + 1;
            let arg = match self.get(arg_id) {
                Err(_) => return,
                Ok(None) => {
                    let msg = format!("parameter #{n}: type {arg_id} does not exist");
                    return report(self, sink, "R1-type-id", msg);
                }
                Ok(Some(a)) => a,
            };
            if arg.source_only() {
                let msg = format!("parameter #{n}: invalid type {}", self.desc_id(arg_id));
                return report(self, sink, "R7-proto-param", msg);
            }
            if name_off != 0 && !self.ident_ok(name_off) {
                let msg = format!(
                    "parameter #{n}: invalid name {} (must be a C identifier)",
                    self.quoted(name_off)
                );
                return report(self, sink, "R7-param-name", msg);
            }
            if arg_id == 0 {
                let msg = format!(
                    "parameter #{n} of {nr} has type void: only the last parameter may be a vararg"
                );
                return report(self, sink, "R7-vararg", msg);
            }
            if arg.needs_resolve() && !self.resolved(arg_id) && !self.resolve(arg_id, sink) {
                return;
            }
            if self.type_id_size(arg_id).is_none() {
                let msg = format!("parameter #{n}: type {} has no size", self.desc_id(arg_id));
                return report(self, sink, "R7-proto-param", msg);
            }
        }
    }
}
