//! The text of a `why` report: the ELF symbols, the DWARF definitions with their prototypes,
//! parameter locations and flags, the final pass's decision and the evidence for each skip
//! reason.

use std::fmt::{self, Write as _};

use super::{Report, Verdict, INSTANCES_SHOWN};
use crate::dwarf::functions::ParamLoc;
use crate::encode::chunk::NotSaved;
use crate::functions::final_pass::SkipReason;
use crate::functions::instance::flags;
use crate::input::arch::UNKNOWN_REG;
use crate::input::elf::STT_FUNC;

impl Report {
    fn write_symbols(&self, out: &mut String) -> fmt::Result {
        let counted = self.counted_symbols().count();
        let fragments = self
            .symbols
            .iter()
            .filter(|s| s.st_type == STT_FUNC && !s.counts)
            .count();
        writeln!(
            out,
            "  ELF function symbols: {}{}",
            counted,
            match fragments {
                0 => String::new(),
                n => format!(" (and {n} .cold/.part fragments, which do not count)"),
            }
        )?;
        for s in &self.symbols {
            let bind = match s.bind {
                0 => "local",
                1 => "global",
                2 => "weak",
                _ => "other",
            };
            let note = match s.st_type {
                _ if s.counts => String::new(),
                STT_FUNC => "  fragment".into(),
                0 => "  not a function symbol (STT_NOTYPE)".into(),
                1 => "  not a function symbol (STT_OBJECT)".into(),
                t => format!("  not a function symbol (type {t})"),
            };
            writeln!(
                out,
                "    {:<40} {:#018x}  {bind:<6}  size {}{note}",
                s.name, s.addr, s.size
            )?;
        }
        Ok(())
    }

    fn write_dwarf(&self, out: &mut String, all: bool) -> fmt::Result {
        writeln!(
            out,
            "  DWARF definitions: {}{}{}",
            self.dwarf.len(),
            match self.declarations {
                0 => String::new(),
                n => format!(" (and {n} declarations, not listed)"),
            },
            if self.lang_exclude && self.dwarf.is_empty() {
                "; CUs excluded by --lang_exclude are not read"
            } else {
                ""
            }
        )?;
        let shown = if all {
            self.dwarf.len()
        } else {
            INSTANCES_SHOWN
        };
        for (i, f) in self.dwarf.iter().enumerate().take(shown) {
            let at = if f.addr == 0 {
                "no low_pc (abstract instance, or ranges only)".to_string()
            } else {
                let others: Vec<String> = self
                    .symbols
                    .iter()
                    .filter(|s| s.addr == f.addr && !s.counts)
                    .map(|s| format!("{} (does not count)", s.name))
                    .collect();
                match self.symbols_at(f.addr)[..] {
                    [] if others.is_empty() => {
                        format!("low_pc {:#x}, at no symbol's address", f.addr)
                    }
                    [] => format!(
                        "low_pc {:#x}, at no function symbol's address: {}",
                        f.addr,
                        others.join(", ")
                    ),
                    ref names => format!("low_pc {:#x} = {}", f.addr, names.join(", ")),
                }
            };
            writeln!(
                out,
                "    [{}] {}  (DIE {:#x}{})",
                i + 1,
                f.cu_name,
                f.die,
                if f.external { ", external" } else { "" }
            )?;
            writeln!(out, "        {at}")?;
            writeln!(out, "        {}", f.prototype)?;
            let shown = f.params.iter().map(|p| (p, "")).chain(
                f.left_out
                    .iter()
                    .map(|p| (p, " (left out of the prototype: reordered)")),
            );
            for ((name, ty, loc), note) in shown {
                if name.is_empty() && ty == "void" {
                    continue;
                }
                writeln!(
                    out,
                    "          {:<20} {}{note}",
                    if name.is_empty() { "(unnamed)" } else { name },
                    location(loc, self.machine)
                )?;
            }
            let saved = match f.saved {
                Ok(()) => "saved".to_string(),
                Err(NotSaved::UnnamedParameter) => "not saved: a parameter has no name".to_string(),
                Err(NotSaved::NoElfSymbol) => {
                    format!("not saved: no ELF function symbol named {}", self.name)
                }
                Err(e) => format!("not saved: {e:?}"),
            };
            let names = flag_names(f.flags);
            writeln!(
                out,
                "        {saved}; flags: {}",
                if names.is_empty() {
                    "none".into()
                } else {
                    names.join(", ")
                }
            )?;
        }
        if let Some(hidden) = self.dwarf.len().checked_sub(shown).filter(|&n| n > 0) {
            writeln!(out, "    ... and {hidden} more (--all lists them)")?;
        }
        Ok(())
    }

    fn write_decision(&self, out: &mut String) -> fmt::Result {
        let Some(d) = &self.decision else {
            return Ok(());
        };
        writeln!(
            out,
            "  decision (final pass, {} instance{} saved):",
            d.instances,
            if d.instances == 1 { "" } else { "s" }
        )?;
        if let Some(flags) = d.kfunc {
            writeln!(out, "    kfunc (KF_* flags {flags:#x})")?;
        }
        let why_canonical = match self.instance(d.canonical) {
            Some(c) if c.flags & flags::AT_SYMBOL != 0 => "the first at a symbol's address",
            _ => "none is at a symbol's address: the first",
        };
        writeln!(
            out,
            "    canonical instance: {} ({why_canonical})",
            self.instance_index(d.canonical)
        )?;
        if let (Some(other), Some(m)) = (d.inconsistent, &d.mismatch) {
            writeln!(
                out,
                "    prototypes differ: {} vs {}: {m}",
                self.instance_index(d.first),
                self.instance_index(other)
            )?;
        }
        if let Some(other) = d.uncompared {
            writeln!(
                out,
                "    prototypes differ but are not compared: {} vs {} (with true_signature, \
                 an instance without an address is compared only when the first has none)",
                self.instance_index(d.first),
                self.instance_index(other)
            )?;
        }
        match d.skip() {
            None => writeln!(
                out,
                "    encoded: FUNC {} from instance {}",
                d.func_name,
                self.instance_index(d.canonical)
            )?,
            Some(skip) => {
                writeln!(out, "    skipped: {}", skip.describe())?;
                for r in &d.reasons {
                    let last = if *r == skip { "" } else { " (also applies)" };
                    writeln!(
                        out,
                        "      - {}{last}: {}",
                        r.describe(),
                        self.because(d, *r)
                    )?;
                }
            }
        }
        for line in &d.log_lines {
            writeln!(out, "    -V: {line}")?;
        }
        Ok(())
    }

    /// The evidence for one skip reason.
    fn because(&self, d: &Verdict, reason: SkipReason) -> String {
        let with = |flag: u8| {
            let which: Vec<String> = self
                .dwarf
                .iter()
                .filter(|f| f.saved.is_ok() && f.flags & flag != 0)
                .map(|f| self.instance_index(f.order))
                .collect();
            which.join(", ")
        };
        match reason {
            SkipReason::UnexpectedReg => format!(
                "a parameter is not in the register the calling convention puts it in, in {}",
                with(flags::UNEXPECTED_REG)
            ),
            SkipReason::InconsistentProto => format!(
                "the instances' prototypes differ ({})",
                d.mismatch.as_deref().unwrap_or("see above")
            ),
            SkipReason::UncertainParmLoc => format!(
                "a packed struct is passed past the register parameters, in {}",
                with(flags::UNCERTAIN_PARM_LOC)
            ),
            SkipReason::ReorderedParm => format!(
                "a parameter's position differs from its abstract origin's, in {}",
                with(flags::REORDERED_PARM)
            ),
            SkipReason::OptimizedParms => {
                let c = self.instance(d.canonical);
                let lost: Vec<&str> = c
                    .map(|c| {
                        c.params
                            .iter()
                            .chain(&c.left_out)
                            .filter(|(n, _, l)| !n.is_empty() && (l.optimized || !l.has_loc))
                            .map(|(n, _, _)| n.as_str())
                            .collect()
                    })
                    .unwrap_or_default();
                let changed = match c.map_or(0, |c| c.flags) {
                    f if f & flags::SIGNATURE_CHANGED != 0 => {
                        "clang marked it DW_CC_nocall".to_string()
                    }
                    f if f & flags::OPTIMIZED_SYMBOL != 0 => format!(
                        "it is at the address of the clone {}",
                        c.map(|c| self.symbols_at(c.addr).join(", "))
                            .unwrap_or_default()
                    ),
                    _ => "its ABI changed".into(),
                };
                format!(
                    "the canonical instance {} lost parameter(s) {} (optimized out or no location) and {changed}, so its calling convention is not the prototype's",
                    self.instance_index(d.canonical),
                    lost.join(", ")
                )
            }
            SkipReason::AmbiguousAddr => {
                let mut addrs: Vec<u64> = self.counted_symbols().map(|s| s.addr).collect();
                addrs.sort_unstable();
                addrs.dedup();
                format!(
                    "its symbols are at {} different addresses: one FUNC cannot name them all",
                    addrs.len()
                )
            }
        }
    }
}

/// A report: the headline, the ELF symbols, the DWARF definitions (the first
/// [`INSTANCES_SHOWN`], every one with `{:#}`), the decision, and the headline again.
impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = String::new();
        writeln!(out, "{}", self.headline())?;
        if self.asked != self.name {
            writeln!(
                out,
                "  ({} is a symbol of the function {})",
                self.asked, self.name
            )?;
        }
        if !self.unknown() {
            self.write_symbols(&mut out)?;
            // `{:#}` lists every DWARF definition (`why --all`).
            self.write_dwarf(&mut out, f.alternate())?;
            self.write_decision(&mut out)?;
            writeln!(out, "  => {}", self.headline())?;
        }
        f.write_str(&out)
    }
}

/// The names of the instance flag bits set in `f`.
fn flag_names(f: u8) -> Vec<&'static str> {
    flags::NAMES
        .into_iter()
        .filter(|(bit, _)| f & bit != 0)
        .map(|(_, name)| name)
        .collect()
}

/// A parameter's location, in words.
fn location(loc: &ParamLoc, machine: u16) -> String {
    let mut s = if !loc.has_loc {
        if loc.const_value {
            "no location, a constant value".to_string()
        } else {
            "no location".to_string()
        }
    } else if loc.reg != UNKNOWN_REG {
        register(loc.reg, machine)
    } else if loc.stack {
        "on the stack".to_string()
    } else {
        "a location in no register".to_string()
    };
    if loc.in_memory {
        s.push_str(", passed in memory");
    }
    if loc.optimized || !loc.has_loc {
        s.push_str(" (optimized out)");
    }
    if loc.unexpected_reg {
        s.push_str(" (unexpected register)");
    }
    s
}

/// A DWARF register number's name on `machine`.
fn register(reg: i32, machine: u16) -> String {
    const EM_X86_64: u16 = 62;
    const EM_AARCH64: u16 = 183;
    const X86_64: [&str; 16] = [
        "rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp", "r8", "r9", "r10", "r11", "r12",
        "r13", "r14", "r15",
    ];
    match machine {
        EM_X86_64 if (0..16).contains(&reg) => X86_64[reg as usize].into(),
        EM_AARCH64 if (0..31).contains(&reg) => format!("x{reg}"),
        _ => format!("DWARF register {reg}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loc(has_loc: bool, reg: i32) -> ParamLoc {
        ParamLoc {
            has_loc,
            reg,
            ..ParamLoc::VARARG
        }
    }

    #[test]
    fn locations_in_words() {
        assert_eq!(location(&loc(true, 5), 62), "rdi");
        assert_eq!(location(&loc(true, 1), 183), "x1");
        assert_eq!(location(&loc(true, 3), 8), "DWARF register 3");
        assert_eq!(
            location(&loc(false, UNKNOWN_REG), 62),
            "no location (optimized out)"
        );
        let constant = ParamLoc {
            const_value: true,
            ..loc(false, UNKNOWN_REG)
        };
        assert_eq!(
            location(&constant, 62),
            "no location, a constant value (optimized out)"
        );
        let moved = ParamLoc {
            unexpected_reg: true,
            ..loc(true, 4)
        };
        assert_eq!(location(&moved, 62), "rsi (unexpected register)");
        let stack = ParamLoc {
            stack: true,
            in_memory: true,
            ..loc(true, UNKNOWN_REG)
        };
        assert_eq!(location(&stack, 62), "on the stack, passed in memory");
    }

    #[test]
    fn flags_by_name() {
        assert_eq!(
            flag_names(flags::OPTIMIZED_PARMS | flags::AT_SYMBOL),
            ["optimized_parms", "at_symbol"]
        );
        assert!(flag_names(0).is_empty());
    }
}
