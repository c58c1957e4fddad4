//! `function__analyze_parameter_locations` (`dwarf_loader.c`): from each parameter's location
//! facts and the ABI's argument registers, which parameters were optimized out or arrive in
//! an unexpected register. clang functions whose signature did not change only have their
//! registers checked against the ABI window (`function__match_clang_parameter_locations`).
//!
//! With `true_signature`, a function whose signature clang changed (`DW_CC_nocall`) is read
//! for its real signature (`true_sig_enabled`): a constant-valued parameter is optimized out
//! and takes no register; a stack location is expected only for a parameter passed in memory;
//! an unknown register is unexpected rather than optimized; an aggregate whose pieces hold a
//! single member becomes that member (its type here, `<param>__<member>` as its name when
//! saved), unless the next parameter sits where the whole aggregate would end; and a
//! parameter without a location keeps its registers only when the next one proves them.

use super::{Decoder, Parm};
use crate::input::arch::UNKNOWN_REG;

impl Decoder<'_, '_> {
    /// `function__analyze_parameter_locations` for function `fi`.
    pub(super) fn analyze(&mut self, fi: usize) {
        let f = &self.funcs[fi];
        let range = f.parms.start as usize..f.parms.end as usize;
        let clang = self.cu.producer_clang;
        let true_sig = self.features.true_signature && f.signature_changed;
        if clang && !f.signature_changed {
            self.match_clang_locations(range);
            return;
        }
        let arch = self.arch;
        let nr = arch.nr_register_params;
        let mut reg_idx = 0usize;
        for k in range.clone() {
            let slots = self.slots(&self.parms[k]);
            let regs_available = reg_idx < nr;
            let expected_reg = if regs_available {
                arch.reg(reg_idx)
            } else {
                UNKNOWN_REG
            };
            // Whether the parameter after this one sits in the register right after `slots`.
            let next_preserves = self.parms[range.clone()]
                .get(k + 1 - range.start)
                .filter(|n| n.loc_reg != UNKNOWN_REG)
                .is_some_and(|n| reg_idx + slots < nr && n.loc_reg == arch.reg(reg_idx + slots));
            let p = &mut self.parms[k];
            let reg_slots = if p.passed_in_memory { 1 } else { slots };
            let mut consumes_register = true;
            if p.has_loc {
                if true_sig && p.loc_const_value {
                    p.optimized = true;
                    consumes_register = false;
                } else if !regs_available {
                    consumes_register = false;
                } else if true_sig && p.loc_stack {
                    if p.passed_in_memory {
                        consumes_register = false;
                    } else {
                        p.unexpected_reg = true;
                    }
                } else if p.loc_reg == UNKNOWN_REG {
                    if true_sig {
                        p.unexpected_reg = true;
                    } else {
                        p.optimized = true;
                    }
                } else if expected_reg >= 0 && expected_reg != p.loc_reg {
                    p.unexpected_reg = true;
                } else if true_sig && (p.first_fields != 0 || p.second_fields != 0) {
                    if p.first_fields != 0 && p.second_fields != 0 {
                        reg_idx += slots;
                        continue;
                    }
                    if next_preserves {
                        p.member = None;
                        reg_idx += slots;
                        continue;
                    }
                    if let Some((_, ty)) = p.member {
                        // parameter__apply_true_sig_member: the member's type replaces the
                        // aggregate's, and the member takes one register.
                        p.ty = ty;
                        reg_idx += 1;
                        continue;
                    }
                }
            } else if p.has_const_value && !clang {
                p.optimized = true;
            } else if true_sig {
                if regs_available && next_preserves {
                    reg_idx += slots;
                    continue;
                }
                p.optimized = true;
                consumes_register = false;
            }
            if consumes_register {
                reg_idx += reg_slots;
            }
        }
    }

    /// `function__match_clang_parameter_locations`: each parameter in a register must be in
    /// the window of registers the ABI gives it.
    fn match_clang_locations(&mut self, range: std::ops::Range<usize>) {
        let arch = self.arch;
        let nr = arch.nr_register_params;
        let mut reg_idx = 0usize;
        for k in range {
            let slots = self.slots(&self.parms[k]);
            let p = &mut self.parms[k];
            if p.passed_in_memory {
                continue;
            }
            if reg_idx >= nr {
                break;
            }
            if p.loc_reg != UNKNOWN_REG {
                let in_window = (reg_idx..reg_idx + slots)
                    .take_while(|&i| i < nr)
                    .any(|i| p.loc_reg == arch.reg(i));
                if !in_window {
                    p.unexpected_reg = true;
                }
            }
            reg_idx += slots;
        }
    }

    /// `parameter__abi_slots`: the argument registers a parameter takes.
    fn slots(&self, p: &Parm<'_>) -> usize {
        let addr_size = self.addr_size as i32;
        if !self.arch.agg_use_two_regs || p.type_byte_size <= addr_size {
            1
        } else {
            p.type_byte_size
                .saturating_add(addr_size - 1)
                .checked_div(addr_size)
                .unwrap_or(1)
                .max(1) as usize
        }
    }
}
