//! `dwarf2btf why NAME… FILE`: why a function is, or is not, in the BTF — the question behind
//! "why can't I attach fentry to it?".
//!
//! The answer is read off a normal encoding run (no dedup, nothing written) through a
//! [`FuncWatch`]: the DWARF subprograms of the name as each CU's encoding met them and whether
//! they were saved, the flags of each instance saved, and the final pass's [`Decision`] — the
//! same decision, from the same code, that puts the FUNC in the output or logs the `-V` skip
//! line. This module only records what it is shown and formats it, with the function's ELF
//! symbols read from the symbol table as the ELF functions table reads them.

use std::collections::BTreeMap;
use std::fmt::{self, Write as _};
use std::sync::Mutex;

use crate::config::Config;
use crate::dwarf::functions::{Param, ParamLoc};
use crate::encode::chunk::{EncodeWatch, NotSaved, SeenFunction};
use crate::error::Result;
use crate::functions::final_pass::{Decision, SkipReason};
use crate::functions::instance::{dwarf_flags, flags, FuncInstance};
use crate::functions::watch::FuncWatch;
use crate::input::arch::UNKNOWN_REG;
use crate::input::elf::STT_FUNC;
use crate::input::symbols::{base_name, has_non_fn_suffix};
use crate::measure::RunClock;
use crate::pipeline::{self, Input, RunContext, Summary};
use crate::progress::Progress;

/// A DWARF instance's position: (CU index, DIE unit offset), DWARF order.
type Order = (u32, u32);

/// The answer for one name.
#[derive(Clone, Debug)]
pub struct Report {
    /// The name asked about, as given.
    pub asked: String,
    /// The function name (the ELF name cut at its first `.`).
    pub name: String,
    /// The ELF symbols with that base name, in symbol table order: the function's, its
    /// `.cold`/`.part` fragments, and symbols of other types (not sections or files).
    pub symbols: Vec<Symbol>,
    /// The DWARF definitions of that name (declarations are only counted), in DWARF order.
    pub dwarf: Vec<DwarfFunction>,
    /// How many DWARF declarations of that name the CUs hold.
    pub declarations: usize,
    /// The final pass's decision, when some instance was saved.
    pub decision: Option<Verdict>,
    /// The machine, for register names.
    machine: u16,
    /// `--lang_exclude` was given (its CUs are not read).
    lang_exclude: bool,
}

/// One ELF symbol of the function.
#[derive(Clone, Debug)]
pub struct Symbol {
    /// The full name (`foo.isra.0`).
    pub name: String,
    /// `st_value`.
    pub addr: u64,
    /// `st_size`.
    pub size: u64,
    /// `STB_*`.
    pub bind: u8,
    /// `STT_*`: only `STT_FUNC` symbols are functions to the encoder.
    pub st_type: u8,
    /// Counts as the function's: a function symbol, not a `.cold`/`.part` fragment.
    pub counts: bool,
}

/// One DWARF subprogram of the name that is not a declaration.
#[derive(Clone, Debug)]
pub struct DwarfFunction {
    /// Its position in DWARF order.
    pub order: Order,
    /// The DIE's offset in `.debug_info`.
    pub die: u64,
    /// The CU's `DW_AT_name`.
    pub cu_name: String,
    /// `DW_AT_low_pc` (0: none).
    pub addr: u64,
    /// `DW_AT_external`.
    pub external: bool,
    /// The prototype, as C.
    pub prototype: String,
    /// Parameters of the prototype: name, C type, location.
    pub params: Vec<Parameter>,
    /// Parameters left out of the prototype (reordered: optimized or without a location).
    pub left_out: Vec<Parameter>,
    /// The rule flags (instance [`flags`] bits), as saved or, when not saved, as decoded.
    pub flags: u8,
    /// Saved as an instance, or why not.
    pub saved: std::result::Result<(), NotSaved>,
}

/// A parameter: name, C type, location.
pub type Parameter = (String, String, ParamLoc);

/// What the final pass decided.
#[derive(Clone, Debug)]
pub struct Verdict {
    /// Every skip reason that applies, in check order; the last one is the decision.
    pub reasons: Vec<SkipReason>,
    /// pahole's `-V` lines for the function.
    pub log_lines: Vec<String>,
    /// The prototype difference `funcs__match` reports, if the instances disagree.
    pub mismatch: Option<String>,
    /// The instance a FUNC is (or would be) encoded from.
    pub canonical: Order,
    /// The first instance in DWARF order.
    pub first: Order,
    /// The first instance whose prototype does not match the first's.
    pub inconsistent: Option<Order>,
    /// With `true_signature`: the first instance whose prototype does not match the first's
    /// but which is not compared with it (it has no address, the first has one).
    pub uncompared: Option<Order>,
    /// The name the FUNC takes: the clone's (`foo.isra.0`) for a true signature, else the
    /// function's.
    pub func_name: String,
    /// How many instances were saved.
    pub instances: u32,
    /// The symbols have more than one address.
    pub ambiguous_addr: bool,
    /// A kfunc (`BTF_SET8` with `BTF_SET8_KFUNCS`), and its `KF_*` flags.
    pub kfunc: Option<u32>,
}

impl Verdict {
    /// Why it is not encoded; `None`: encoded.
    pub fn skip(&self) -> Option<SkipReason> {
        self.reasons.last().copied()
    }
}

impl Report {
    /// Encoded as a FUNC.
    pub fn encoded(&self) -> bool {
        self.decision.as_ref().is_some_and(|d| d.skip().is_none())
    }

    /// Neither an ELF function symbol nor a DWARF subprogram has the name.
    pub fn unknown(&self) -> bool {
        self.symbols.is_empty() && self.dwarf.is_empty() && self.declarations == 0
    }

    fn counted_symbols(&self) -> impl Iterator<Item = &Symbol> {
        self.symbols.iter().filter(|s| s.counts)
    }

    /// The one-line answer.
    pub fn headline(&self) -> String {
        let n = &self.name;
        if self.unknown() {
            return format!("{n}: unknown: no ELF function symbol and no DWARF function named {n}");
        }
        if let Some(d) = &self.decision {
            return match d.skip() {
                None => format!("{n}: encoded"),
                Some(r) => format!("{n}: skipped: {}", r.describe()),
            };
        }
        if self.counted_symbols().next().is_none() && self.inlined_everywhere() {
            format!("{n}: not encoded: inlined at every call site: nothing to attach to")
        } else if self.counted_symbols().next().is_none() {
            format!("{n}: not encoded: no ELF function symbol named {n}")
        } else {
            format!("{n}: not encoded: no DWARF definition of {n} with named parameters")
        }
    }

    /// Every DWARF definition is without an address (abstract instances, the code inlined
    /// into its callers) and no function symbol has the name.
    fn inlined_everywhere(&self) -> bool {
        !self.dwarf.is_empty() && self.dwarf.iter().all(|f| f.addr == 0)
    }

    fn instance_index(&self, order: Order) -> String {
        match self.dwarf.iter().position(|f| f.order == order) {
            Some(i) => format!("[{}]", i + 1),
            None => "[?]".into(),
        }
    }

    fn instance(&self, order: Order) -> Option<&DwarfFunction> {
        self.dwarf.iter().find(|f| f.order == order)
    }

    /// The symbol names at `addr`.
    fn symbols_at(&self, addr: u64) -> Vec<&str> {
        self.counted_symbols()
            .filter(|s| s.addr == addr)
            .map(|s| s.name.as_str())
            .collect()
    }

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

/// How many DWARF definitions a report lists without `--all`.
pub const INSTANCES_SHOWN: usize = 8;

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

/// What the watcher was shown.
#[derive(Default)]
struct Seen {
    dwarf: BTreeMap<Vec<u8>, Vec<DwarfFunction>>,
    declarations: BTreeMap<Vec<u8>, usize>,
    saved_flags: BTreeMap<Order, u8>,
    decisions: BTreeMap<Vec<u8>, Verdict>,
}

/// The watcher of the names asked about.
struct Watcher {
    /// Sorted.
    names: Vec<Vec<u8>>,
    seen: Mutex<Seen>,
}

impl EncodeWatch for Watcher {
    fn watches(&self, name: &[u8]) -> bool {
        self.names.binary_search_by(|n| n[..].cmp(name)).is_ok()
    }

    fn seen(&self, f: &SeenFunction<'_, '_>) {
        let name = f.info.name.to_vec();
        if f.saved == Err(NotSaved::Declaration) {
            *self.lock().declarations.entry(name).or_default() += 1;
            return;
        }
        let record = describe(f);
        self.lock().dwarf.entry(name).or_default().push(record);
    }
}

impl FuncWatch for Watcher {
    fn saved(&self, instance: &FuncInstance) {
        self.lock()
            .saved_flags
            .insert(instance.head.order, instance.head.flags);
    }

    fn decided(&self, d: &Decision<'_, '_>) {
        let verdict = Verdict {
            reasons: d.reasons().collect(),
            log_lines: d.log_lines(),
            mismatch: d.mismatch(),
            canonical: d.canonical.head.order,
            first: d.summary.first().head.order,
            inconsistent: d.inconsistent.map(|i| i.head.order),
            uncompared: d.uncompared().map(|i| i.head.order),
            func_name: d.true_signature.map_or(d.elf.name, |s| s.name).to_string(),
            instances: d.summary.count(),
            ambiguous_addr: d.elf.ambiguous_addr,
            kfunc: d.elf.kfunc.then_some(d.elf.kfunc_flags),
        };
        self.lock()
            .decisions
            .insert(d.elf.name.as_bytes().to_vec(), verdict);
    }
}

impl Watcher {
    fn lock(&self) -> std::sync::MutexGuard<'_, Seen> {
        self.seen.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A DWARF definition as the report shows it.
fn describe(f: &SeenFunction<'_, '_>) -> DwarfFunction {
    let info = f.info;
    let c = |id: u32| {
        let mut name = f.types.c_name(id);
        while name.contains("* *") {
            name = name.replace("* *", "**");
        }
        name
    };
    let parameters = |list: &[Param<'_>]| -> Vec<Parameter> {
        list.iter()
            .map(|p| (String::from_utf8_lossy(p.name).into_owned(), c(p.ty), p.loc))
            .collect()
    };
    let params = parameters(&info.params);
    let args: Vec<String> = params
        .iter()
        .map(|(n, t, _)| match (n.is_empty(), t.as_str()) {
            (true, "void") => "...".to_string(),
            (true, _) => t.clone(),
            (false, _) if t.ends_with('*') => format!("{t}{n}"),
            (false, _) => format!("{t} {n}"),
        })
        .collect();
    let ret = c(info.ret);
    let sep = if ret.ends_with('*') { "" } else { " " };
    let prototype = format!(
        "{ret}{sep}{}({})",
        String::from_utf8_lossy(info.name),
        if args.is_empty() {
            "void".to_string()
        } else {
            args.join(", ")
        }
    );
    DwarfFunction {
        order: (f.cu_index, info.die),
        die: f.cu.die_offset(gimli::UnitOffset(info.die as usize)),
        cu_name: cu_name(f),
        addr: info.addr,
        external: info.external,
        prototype,
        params,
        left_out: parameters(&info.left_out),
        flags: dwarf_flags(info),
        saved: f.saved.map(|_| ()),
    }
}

/// The CU's `DW_AT_name`.
fn cu_name(f: &SeenFunction<'_, '_>) -> String {
    let root = (|| {
        let mut raw = f.cu.header.entries_raw(&f.cu.abbrevs, None).ok()?;
        let mut root = gimli::DebuggingInformationEntry::null();
        raw.read_entry(&mut root).ok()?;
        let name = root.attr_value(gimli::DW_AT_name)?;
        f.cu.string(f.dwarf, name).ok()
    })();
    root.map_or_else(
        || format!("CU at {:#x}", f.cu.offset),
        |n| String::from_utf8_lossy(n).into_owned(),
    )
}

/// The answers for every name asked about.
#[derive(Clone, Debug)]
pub struct Answer {
    /// One report per name, in the order asked.
    pub reports: Vec<Report>,
    /// Why the run encoded nothing at all (no DWARF, or no CU produced a type), if it did not.
    pub nothing_encoded: Option<String>,
}

/// Runs the encoding of `config.input` as `config` says, watching `names` (ELF or DWARF
/// names), and reports on each, in the order given. Nothing is written but the encoder's
/// notes, to `notes`.
pub fn why(config: &Config, names: &[String], notes: &mut dyn std::io::Write) -> Result<Answer> {
    let input = Input::open(config)?;
    let elf = input.elf(config)?;
    let mut wanted: Vec<Vec<u8>> = names
        .iter()
        .map(|n| base_name(n).as_bytes().to_vec())
        .collect();
    wanted.sort();
    wanted.dedup();
    let watcher = Watcher {
        names: wanted,
        seen: Mutex::default(),
    };
    let mut symbols: BTreeMap<&[u8], Vec<Symbol>> = BTreeMap::new();
    // Functions, fragments, and whatever else has the name (an assembly entry point is
    // often STT_NOTYPE); not sections and files.
    for s in elf.symbols().filter(|s| s.st_type <= STT_FUNC) {
        let base = base_name(s.name).as_bytes();
        if watcher.watches(base) {
            symbols.entry(base).or_default().push(Symbol {
                name: s.name.to_string(),
                addr: s.value,
                size: s.size,
                bind: s.st_bind,
                st_type: s.st_type,
                counts: s.st_type == STT_FUNC && !has_non_fn_suffix(s.name),
            });
        }
    }
    let mut summary = Summary::default();
    let run = RunContext {
        config,
        progress: &Progress::new(config.quiet),
        clock: &RunClock::start(),
        summary: &mut summary,
        out: notes,
    };
    pipeline::encode(&elf, &input, run, Some(&watcher))?;
    let seen = watcher.seen.into_inner().unwrap_or_else(|e| e.into_inner());
    let reports = names
        .iter()
        .map(|asked| {
            let name = base_name(asked);
            let key = name.as_bytes();
            let mut dwarf = seen.dwarf.get(key).cloned().unwrap_or_default();
            dwarf.sort_by_key(|f| f.order);
            for f in &mut dwarf {
                if let Some(&fl) = seen.saved_flags.get(&f.order) {
                    f.flags = fl;
                }
            }
            Report {
                asked: asked.clone(),
                name: name.to_string(),
                symbols: symbols.get(key).cloned().unwrap_or_default(),
                dwarf,
                declarations: seen.declarations.get(key).copied().unwrap_or(0),
                decision: seen.decisions.get(key).cloned(),
                machine: elf.machine,
                lang_exclude: !config.lang_exclude.is_empty(),
            }
        })
        .collect();
    Ok(Answer {
        reports,
        nothing_encoded: summary.nothing_written,
    })
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
