//! Every kind's `resolve` callback of the resolve pass (`btf_modifier_resolve` and the PTR and
//! VAR ones, ARRAY, STRUCT and UNION, FUNC, DECL_TAG, DATASEC) and `btf_func_proto_check`:
//! what each kind checks of the types it refers to once the walk in `resolve.rs` reaches it.

use super::problem::Sink;
use super::record::T;
use super::verifier::{Fail, Mode, Verifier, Vertex};
use crate::btf::kinds::Kind;

/// The two types an ARRAY refers to.
#[derive(Clone, Copy)]
enum ArrayPart {
    Index,
    Elem,
}

impl<'a> Verifier<'a> {
    /// `btf_modifier_resolve`, `btf_ptr_resolve` and `btf_var_resolve`.
    pub(super) fn ref_resolve(&mut self, v: Vertex, t: T<'a>) -> Result<(), Fail> {
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
    pub(super) fn array_resolve(&mut self, v: Vertex, t: T<'a>) -> Result<(), Fail> {
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
    pub(super) fn struct_resolve(&mut self, v: Vertex, t: T<'a>) -> Result<(), Fail> {
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
    pub(super) fn func_resolve(&mut self, t: T<'a>) -> Result<(), Fail> {
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
    pub(super) fn decl_tag_resolve(&mut self, v: Vertex, t: T<'a>) -> Result<(), Fail> {
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
    pub(super) fn datasec_resolve(&mut self, v: Vertex, t: T<'a>) -> Result<(), Fail> {
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
    pub(super) fn func_proto_check(&mut self, t: T<'a>, sink: &mut Sink) {
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
