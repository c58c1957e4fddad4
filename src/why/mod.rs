//! `dwarf2btf why NAME… FILE`: why a function is, or is not, in the BTF — the question behind
//! "why can't I attach fentry to it?".
//!
//! The answer is read off a normal encoding run (no dedup, nothing written) through a
//! [`FuncWatch`]: the DWARF subprograms of the name as each CU's encoding met them and whether
//! they were saved, the flags of each instance saved, and the final pass's [`Decision`] — the
//! same decision, from the same code, that puts the FUNC in the output or logs the `-V` skip
//! line. This module only records what it is shown and formats it, with the function's ELF
//! symbols read from the symbol table as the ELF functions table reads them; `report.rs`
//! writes a report as text.

use std::collections::BTreeMap;
use std::sync::Mutex;

use crate::config::Config;
use crate::dwarf::functions::{Param, ParamLoc};
use crate::encode::chunk::{EncodeWatch, NotSaved, SeenFunction};
use crate::error::Result;
use crate::functions::final_pass::{Decision, SkipReason};
use crate::functions::instance::{dwarf_flags, FuncInstance};
use crate::functions::watch::FuncWatch;
use crate::input::elf::STT_FUNC;
use crate::input::symbols::{base_name, has_non_fn_suffix};
use crate::measure::RunClock;
use crate::pipeline::{self, Input, RunContext, Summary};
use crate::progress::Progress;

mod report;

/// How many DWARF definitions a report lists without `--all`.
pub const INSTANCES_SHOWN: usize = 8;

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
    /// The rule flags (instance [`flags`](crate::functions::instance::flags) bits), as saved or, when not saved, as decoded.
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
    let parameters = |list: &[Param<'_>]| -> Vec<Parameter> {
        list.iter()
            .map(|p| {
                let name = String::from_utf8_lossy(p.name).into_owned();
                (name, f.types.c_name(p.ty), p.loc)
            })
            .collect()
    };
    let params = parameters(&info.params);
    let args: Vec<String> = info
        .params
        .iter()
        .map(|p| match (p.name.is_empty(), p.ty) {
            (true, 0) => "...".to_string(),
            _ => f.types.c_decl(p.ty, &String::from_utf8_lossy(p.name)),
        })
        .collect();
    let call = format!(
        "{}({})",
        String::from_utf8_lossy(info.name),
        if args.is_empty() {
            "void".to_string()
        } else {
            args.join(", ")
        }
    );
    let prototype = f.types.c_decl(info.ret, &call);
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
