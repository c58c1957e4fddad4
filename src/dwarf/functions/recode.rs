//! pahole's passes over a CU's loaded functions: `function__signature_changed` (clang),
//! the `functions_table` order, `cu__recode_dwarf_types` (names, parameter names and types
//! from origins, location facts shared back to them) and `cu__resolve_func_ret_types_optimized`
//! (the location analysis, `optimized_parms`, `unexpected_reg`, the LTO return type rule).

use super::read::numeric;
use super::{Decoder, Parm, DW_CC_NOCALL};
use crate::btf::Kind;
use crate::dwarf::types::{DecodeError, Entry};
use crate::dwarf::MAX_CHAIN;
use crate::input::arch::UNKNOWN_REG;

impl<'a, 'd> Decoder<'a, 'd> {
    /// `function__signature_changed`, for clang CUs.
    pub(super) fn signatures(&mut self) -> Result<(), DecodeError> {
        if !self.cu.producer_clang {
            return Ok(());
        }
        for i in 0..self.funcs.len() {
            let f = &self.funcs[i];
            let changed = if f.inlined {
                false
            } else if !f.has_origin_attr {
                f.cc_nocall
            } else {
                match f.origin {
                    Some(o) => match self.func_at(o) {
                        Some(j) => self.funcs[j].cc_nocall,
                        None => self.die_cc_nocall(o)?,
                    },
                    None => false,
                }
            };
            self.funcs[i].signature_changed = changed;
        }
        Ok(())
    }

    /// `DW_AT_calling_convention == DW_CC_nocall` on the DIE at `off`.
    fn die_cc_nocall(&mut self, off: u32) -> Result<bool, DecodeError> {
        self.with_attrs(|this, attrs| {
            this.read_die(off, attrs)?;
            Ok(attrs.iter().any(|a| {
                a.name() == gimli::DW_AT_calling_convention
                    && numeric(a.raw_value()) == DW_CC_NOCALL
            }))
        })
    }

    /// pahole's `functions_table` order: a function is added after its subtree, so by the
    /// offset that ends it.
    pub(super) fn table_order(&self, own: usize) -> Vec<u32> {
        let mut order: Vec<u32> = (0..own as u32).collect();
        order.sort_by_key(|&i| self.funcs[i as usize].end);
        order
    }

    /// `tag__recode_dwarf_type` on the functions table: names from origins/specifications,
    /// parameter names/types from origin parameters, location facts shared back to them.
    pub(super) fn recode(&mut self, order: &[u32]) {
        for &fi in order {
            let fi = fi as usize;
            let f = &self.funcs[fi];
            if f.name.is_none() {
                if f.origin.is_none() && f.spec.is_none() {
                    // pahole returns before recoding anything else of such a function.
                    continue;
                }
                let src = f
                    .origin
                    .and_then(|o| self.func_at(o))
                    .or_else(|| f.spec.and_then(|s| self.func_at(s)));
                if let Some(src) = src {
                    self.funcs[fi].name = self.funcs[src].name;
                }
            }
            let parms = self.funcs[fi].parms.clone();
            let mut reordered = false;
            for pi in parms {
                let pi = pi as usize;
                let p = &self.parms[pi];
                if let Some(t) = p.own_type {
                    self.parms[pi].ty = self.types.type_id_of(t);
                    continue;
                }
                let Some(origin) = p.origin else {
                    self.parms[pi].ty = 0;
                    continue;
                };
                let Some(oi) = self.parm_at(origin) else {
                    continue;
                };
                let p = self.parms[pi].clone();
                let o = &mut self.parms[oi];
                if p.idx != o.idx {
                    reordered = true;
                }
                let (name, ty) = (o.name, o.ty);
                p.share_location_facts(o);
                let p = &mut self.parms[pi];
                p.name = name;
                p.ty = ty;
            }
            let f = &mut self.funcs[fi];
            if reordered {
                f.reordered_parm = true;
            }
            f.ret = f.ret_type.map_or(0, |t| self.types.type_id_of(t));
        }
    }

    /// `cu__resolve_func_ret_types_optimized`.
    pub(super) fn resolve(&mut self, order: &[u32]) -> Result<(), DecodeError> {
        for &fi in order {
            let fi = fi as usize;
            self.analyze(fi);
            let f = &self.funcs[fi];
            let parms = &self.parms[f.parms.start as usize..f.parms.end as usize];
            let optimized_parms = parms.iter().any(|p| p.optimized || !p.has_loc);
            let unexpected_reg = parms.iter().any(|p| p.unexpected_reg)
                && !parms.iter().any(|p| self.is_struct(p.ty));
            let mut ret = f.ret;
            if ret == 0 && f.has_origin_attr {
                let origin = f.origin.unwrap_or(0);
                ret = if let Some(o) = self.func_at(origin) {
                    self.funcs[o].ret
                } else if let Some(o) = self.parm_at(origin) {
                    self.parms[o].ty
                } else {
                    return Err(self.err(
                        f.die,
                        format!("abstract origin {origin:#x} of a function not found"),
                    ));
                };
            }
            let f = &mut self.funcs[fi];
            f.optimized_parms = optimized_parms;
            f.unexpected_reg = unexpected_reg;
            f.ret = ret;
        }
        Ok(())
    }

    /// `param__is_struct`: a struct, through typedefs and const.
    fn is_struct(&self, mut id: u32) -> bool {
        for _ in 0..MAX_CHAIN {
            match self.entry(id) {
                Some(Entry::Composite { union: false, .. }) => return true,
                Some(Entry::Typedef { ty, .. })
                | Some(Entry::Modifier {
                    kind: Kind::Const,
                    ty,
                }) => id = *ty,
                _ => return false,
            }
        }
        false
    }
}

impl<'a> Parm<'a> {
    /// Copies what a concrete instance's parameter knows of its location onto its abstract
    /// origin's parameter (`ftype__recode_dwarf_types`), so that the origin reflects what its
    /// out-of-line copies know.
    fn share_location_facts(&self, origin: &mut Parm<'a>) {
        origin.has_loc |= self.has_loc;
        origin.has_const_value |= self.has_const_value;
        origin.loc_const_value |= self.loc_const_value;
        origin.loc_stack |= self.loc_stack;
        if self.loc_reg != UNKNOWN_REG {
            origin.loc_reg = self.loc_reg;
        }
        if self.type_byte_size != 0 {
            origin.type_byte_size = self.type_byte_size;
        }
        origin.passed_in_memory |= self.passed_in_memory;
        origin.optimized |= self.optimized;
        origin.unexpected_reg |= self.unexpected_reg;
        origin.first_fields |= self.first_fields;
        origin.second_fields |= self.second_fields;
        if origin.member.is_none() {
            origin.member = self.member;
        }
    }
}
