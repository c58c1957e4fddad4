//! What `btf_encoder.c` takes from a decoded function: the parameter list
//! `btf_encoder__save_func` records (`reordered_parm` drops optimized parameters, so does
//! `true_signature` for a signature clang changed, where a parameter standing for one member
//! is named `<param>__<member>`; a variadic function gets a trailing `{"", 0}`),
//! `ftype__has_arg_names` and `ftype__has_uncertain_arg_loc`.

use super::{Decoder, FunctionInfo, Param, ParamLoc};
use crate::dwarf::layout::Layout;
use crate::dwarf::types::Entry;

impl<'a> Decoder<'a, '_> {
    /// The results, in table order, with the `btf_encoder.c` parts applied.
    pub(super) fn output(&mut self, order: &[u32]) -> Vec<FunctionInfo<'a>> {
        let mut out = Vec::with_capacity(order.len());
        for &fi in order {
            let f = &self.funcs[fi as usize];
            let parms = &self.parms[f.parms.start as usize..f.parms.end as usize];
            let has_arg_names = parms.iter().all(|p| p.name.is_some());
            let uncertain = !f.declaration && has_arg_names && self.uncertain_arg_loc(fi as usize);
            let f = &self.funcs[fi as usize];
            let parms = &self.parms[f.parms.start as usize..f.parms.end as usize];
            let mut params = Vec::with_capacity(parms.len() + usize::from(f.unspec));
            let mut left_out = Vec::new();
            let true_sig = self.features.true_signature && f.signature_changed;
            for p in parms {
                let param = Param {
                    name: p.name.unwrap_or(b""),
                    member: match (true_sig, p.name, p.member) {
                        (true, Some(_), Some((member, _))) => member,
                        _ => b"",
                    },
                    ty: p.ty,
                    loc: ParamLoc {
                        has_loc: p.has_loc,
                        reg: p.loc_reg,
                        const_value: p.has_const_value,
                        stack: p.loc_stack,
                        in_memory: p.passed_in_memory,
                        optimized: p.optimized,
                        unexpected_reg: p.unexpected_reg,
                    },
                };
                if (f.reordered_parm && (!p.has_loc || p.optimized)) || (true_sig && p.optimized) {
                    left_out.push(param);
                } else {
                    params.push(param);
                }
            }
            if f.unspec {
                params.push(Param {
                    name: b"",
                    member: b"",
                    ty: 0,
                    loc: ParamLoc::VARARG,
                });
            }
            out.push(FunctionInfo {
                die: f.die,
                name: f.name.unwrap_or(b""),
                declaration: f.declaration,
                external: f.external,
                addr: f.addr,
                ret: f.ret,
                params,
                left_out,
                has_arg_names,
                optimized_parms: f.optimized_parms,
                unexpected_reg: f.unexpected_reg,
                reordered_parm: f.reordered_parm,
                signature_changed: f.signature_changed,
                uncertain_parm_loc: uncertain,
                annots: self.annots[f.annots.start as usize..f.annots.end as usize].to_vec(),
            });
        }
        out
    }

    /// `ftype__has_uncertain_arg_loc`: a named struct (the parameter's own type, not through
    /// typedefs) passed by value beyond the register parameters and inferred packed.
    fn uncertain_arg_loc(&mut self, fi: usize) -> bool {
        let f = &self.funcs[fi];
        let nr = self.arch.nr_register_params;
        let n = (f.parms.end - f.parms.start) as usize;
        if n < nr {
            return false;
        }
        let start = f.parms.start as usize;
        for i in nr..n {
            let ty = self.parms[start + i].ty;
            let named_struct = matches!(
                self.entry(ty),
                Some(Entry::Composite { union: false, name, .. }) if !name.is_empty()
            );
            if named_struct
                && Layout::new(self.types, self.addr_size, &mut self.packed).infer_packed(ty)
            {
                return true;
            }
        }
        false
    }
}
