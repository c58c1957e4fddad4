//! The final cross-owner pass over saved function instances: pahole 1.32's
//! `btf_encoder__add_saved_funcs`, run once after the workers have joined and the chunks have
//! been concatenated into one BTF.
//!
//! Per ELF function, in name order: merge the owners' summaries (`fold.rs`: the first instance
//! in walk order (instances with an address first) with every instance's flags ORed in, the
//! first prototype that does not match it (`funcs__match`), the canonical instance by
//! address, "prefer strong definitions", the clone a true signature is encoded from), apply
//! the six skip reasons (the last one that applies is logged), and emit FUNC_PROTO + FUNC
//! (static linkage) + DECL_TAGs, plus `bpf_kfunc`/`bpf_fastcall` tags for kfuncs.
//!
//! Each function's [`Decision`] is what both `-V` logs and a [`FuncWatch`] (`dwarf2btf why`)
//! is shown, so the explanation and the output come from one decision.

use std::io::Write;

pub use super::decision::{Decision, SkipReason};
use super::fold::FuncSummary;
use super::watch::FuncWatch;
use crate::btf::store::Store;
use crate::btf::{kinds, Btf, Kind};
use crate::config::Features;
use crate::error::{Error, Result};
use crate::functions::instance::FuncInstance;
use crate::input::symbols::{ElfFunction, ElfFunctions};

/// `KF_FASTCALL` in a kfunc's BTF_ID_FLAGS.
const KF_FASTCALL: u32 = 1 << 12;
/// `KF_ARENA_RET`, `KF_ARENA_ARG1`, `KF_ARENA_ARG2`: the kfunc returns, or takes as its first
/// or second argument, a pointer into a BPF arena.
const KF_ARENA_RET: u32 = 1 << 13;
const KF_ARENA_ARG1: u32 = 1 << 14;
const KF_ARENA_ARG2: u32 = 1 << 15;
/// The attribute pahole's `attributes` feature puts on arena pointers' pointees.
const BPF_ARENA_ATTR: &[u8] = b"address_space(1)";

/// How the pass translates chunk-local type ids: `chunk_offsets[chunk]` is added to every
/// non-void id of an instance saved by that chunk.
pub struct FinalPass<'p, W: Write> {
    /// The run's BTF (the concatenated chunks), which the FUNCs and their types join.
    pub btf: &'p mut Btf,
    /// The chunks' records, which `btf` holds (see [`Btf::hold_in_store`]), perhaps without
    /// their positions yet (see [`Store::defer_positions`]).
    pub store: &'p mut Store,
    /// Per chunk, the offset its local type ids get in `btf`.
    pub chunk_offsets: &'p [u32],
    /// The BTF features on (`consistent_func`, `decl_tag_kfuncs`, `attributes`, ...).
    pub features: &'p Features,
    /// Where `-V` skip lines go (`None` when not verbose).
    pub log: Option<W>,
    /// Shown the decision on each function it watches.
    pub watch: Option<&'p dyn FuncWatch>,
}

/// Counters of what the pass did.
#[derive(Clone, Copy, Debug, Default)]
pub struct FuncStats {
    /// ELF functions encoded as FUNC.
    pub emitted: usize,
    /// ELF functions with instances that were not encoded (a skip reason applied).
    pub skipped: usize,
}

impl<W: Write> FinalPass<'_, W> {
    /// Runs the pass: `groups[i]` holds the per-owner summaries of ELF function `i`.
    pub fn run(
        &mut self,
        funcs: &ElfFunctions,
        groups: Vec<Vec<FuncSummary>>,
    ) -> Result<FuncStats> {
        let mut stats = FuncStats::default();
        for (i, group) in groups.into_iter().enumerate() {
            let Some(mut summary) = group.into_iter().reduce(FuncSummary::merge) else {
                continue;
            };
            let Some(elf) = funcs.get(i as u32) else {
                continue;
            };
            for s in summary.instances_mut() {
                self.translate(s);
            }
            if self.add_summary(&elf, &summary)? {
                stats.emitted += 1;
            } else {
                stats.skipped += 1;
            }
        }
        Ok(stats)
    }

    fn translate(&self, s: &mut FuncInstance) {
        let off = self.chunk_offsets[s.head.chunk as usize];
        let x = |id: u32| if id == 0 { 0 } else { id + off };
        s.head.ret = x(s.head.ret);
        for i in 0..s.param_count() {
            s.set_param_type(i, x(s.param_type(i)));
        }
    }

    /// Decides and emits one function from the summary of all its instances; true when it
    /// was emitted.
    fn add_summary(&mut self, elf: &ElfFunction<'_>, summary: &FuncSummary) -> Result<bool> {
        let decision = Decision::new(elf, summary, self.features);
        if let Some(w) = &mut self.log {
            for line in decision.log_lines() {
                let _ = writeln!(w, "{line}");
            }
        }
        if let Some(watch) = self.watch.filter(|w| w.watches(elf.name.as_bytes())) {
            watch.decided(&decision);
        }
        if decision.skip().is_some() {
            return Ok(false);
        }
        let canonical = decision.canonical;
        if let Some(sym) = decision.true_signature {
            // btf_encoder__add_true_signature: btf_encoder__add_func under the clone's name.
            self.add_func(sym.name, canonical)?;
            return Ok(true);
        }
        let tag_kfunc = elf.kfunc && self.features.decl_tag_kfuncs;
        let fn_id = if tag_kfunc && self.features.attributes {
            let mut state = canonical.clone();
            self.add_arena_attrs(elf, &mut state)?;
            self.add_func(elf.name, &state)?
        } else {
            self.add_func(elf.name, canonical)?
        };
        if tag_kfunc && self.features.decl_tag {
            self.btf.add_decl_tag(b"bpf_kfunc", fn_id, -1)?;
            if elf.kfunc_flags & KF_FASTCALL != 0 {
                self.btf.add_decl_tag(b"bpf_fastcall", fn_id, -1)?;
            }
        }
        Ok(true)
    }

    /// pahole's `btf__add_bpf_arena_type_tags`: the return type and first two parameters of
    /// an arena kfunc become `PTR → TYPE_TAG(kflag, "address_space(1)") → pointee`, new types
    /// added before the prototype.
    fn add_arena_attrs(&mut self, elf: &ElfFunction<'_>, state: &mut FuncInstance) -> Result<()> {
        let flags = elf.kfunc_flags;
        if flags & KF_ARENA_RET != 0 {
            state.head.ret = self.arena_ptr(elf, "return type", state.head.ret)?;
        }
        for (flag, idx) in [(KF_ARENA_ARG1, 0), (KF_ARENA_ARG2, 1)] {
            if flags & flag == 0 {
                continue;
            }
            if idx >= state.param_count() {
                return Err(Error::Encode {
                    what: format!("kfunc {}", elf.name),
                    die_offset: 0,
                    reason: format!("arena flag for argument {} it does not have", idx + 1),
                });
            }
            let tagged = self.arena_ptr(elf, "an argument", state.param_type(idx))?;
            state.set_param_type(idx, tagged);
        }
        Ok(())
    }

    /// What `id` points to, if it is a pointer (a CU's type, held in the store, or one
    /// of this pass's).
    fn pointee(&mut self, id: u32) -> Option<u32> {
        if id < self.store.len() {
            // Only arena kfuncs get here, a handful in a kernel: the positions are found then.
            self.store.record_positions(1);
            let t = self.store.rec(id);
            return (t.kind() == Kind::Ptr as u32).then(|| t.id(0));
        }
        let t = self.btf.type_by_id(id)?;
        (t.kind() == Some(Kind::Ptr)).then(|| t.size_or_type())
    }

    /// A new pointer to `address_space(1)`-tagged pointee of the pointer `ptr_id`.
    fn arena_ptr(&mut self, elf: &ElfFunction<'_>, what: &str, ptr_id: u32) -> Result<u32> {
        let pointee = match self.pointee(ptr_id) {
            Some(pointee) => pointee,
            None => {
                return Err(Error::Encode {
                    what: format!("kfunc {}", elf.name),
                    die_offset: 0,
                    reason: format!("{what} flagged as an arena pointer is not a pointer"),
                })
            }
        };
        let tagged = self.btf.add_type_attr(BPF_ARENA_ATTR, pointee)?;
        self.btf.add_ref(Kind::Ptr, None, tagged)
    }

    /// `btf_encoder__add_func`: FUNC_PROTO, FUNC (static, named `name`: the ELF base name, or
    /// a clone's for a true signature), decl tags.
    fn add_func(&mut self, name: &str, s: &FuncInstance) -> Result<u32> {
        let proto = self.btf.add_func_proto(s.head.ret)?;
        for (name, ty) in s.params() {
            self.btf.add_func_param(Some(name), ty)?;
        }
        let fn_id = self
            .btf
            .add_func(name.as_bytes(), kinds::FUNC_STATIC, proto)?;
        for (value, component) in s.annots() {
            self.btf.add_decl_tag(value, fn_id, component)?;
        }
        Ok(fn_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::functions::instance::{flags, InstanceHead};
    use crate::input::symbols::ElfFunctionSyms;

    fn kfunc(flags: u32) -> ElfFunction<'static> {
        ElfFunction {
            name: "bpf_arena_thing",
            syms: ElfFunctionSyms::default(),
            ambiguous_addr: false,
            kfunc: true,
            kfunc_flags: flags,
        }
    }

    /// A pass over `btf`, whose types are all raw (the store holds only `void`).
    fn pass<'p>(btf: &'p mut Btf, features: &'p Features) -> FinalPass<'p, std::io::Sink> {
        FinalPass {
            btf,
            store: Box::leak(Box::new(Store::new())),
            chunk_offsets: &[0],
            features,
            log: None,
            watch: None,
        }
    }

    #[test]
    fn decision_knows_every_reason_and_logs_the_last() {
        let instance = |f: u8| {
            let head = InstanceHead {
                addr: 0x10,
                flags: f | flags::AT_SYMBOL,
                ..InstanceHead::default()
            };
            FuncInstance::new(head, &[], &[], &[1, 0])
        };
        let features = Features::default();
        let mut elf = kfunc(0);
        elf.ambiguous_addr = true;
        let summary = FuncSummary::of(instance(flags::UNEXPECTED_REG | flags::REORDERED_PARM));
        let d = Decision::new(&elf, &summary, &features);
        assert_eq!(
            d.reasons().collect::<Vec<_>>(),
            [
                SkipReason::UnexpectedReg,
                SkipReason::ReorderedParm,
                SkipReason::AmbiguousAddr
            ]
        );
        assert_eq!(d.skip(), Some(SkipReason::AmbiguousAddr));
        assert_eq!(
            d.log_lines(),
            ["bpf_arena_thing : skipping BTF encoding of function due to ambiguous address"]
        );
        elf.ambiguous_addr = false;
        let summary = FuncSummary::of(instance(0));
        let d = Decision::new(&elf, &summary, &features);
        assert_eq!((d.skip(), d.log_lines().len()), (None, 0));
    }

    #[test]
    fn true_signature_compares_no_instance_without_an_address_with_one_that_has_one() {
        let instance = |order: u32, addr: u64, f: u8, sig: &[u8]| {
            let head = InstanceHead {
                order: (order, 0),
                addr,
                flags: f,
                ..InstanceHead::default()
            };
            FuncSummary::of(FuncInstance::new(head, &[], &[], sig))
        };
        let mut elf = kfunc(0);
        elf.kfunc = false;
        // An abstract instance with one parameter, first in DWARF order, and a concrete one
        // without parameters at the symbol's address, which the walk puts first.
        let summary =
            instance(0, 0, 0, &[2, 0, 0]).merge(instance(1, 0x10, flags::AT_SYMBOL, &[1, 0]));
        let mut features = Features {
            consistent_func: true,
            ..Features::default()
        };
        let d = Decision::new(&elf, &summary, &features);
        assert_eq!(d.skip(), Some(SkipReason::InconsistentProto));
        assert_eq!(d.log_lines().len(), 2, "the mismatch line, then the skip");
        assert!(d.uncompared().is_none());
        features.true_signature = true;
        let d = Decision::new(&elf, &summary, &features);
        assert_eq!((d.skip(), d.log_lines().len()), (None, 0));
        assert_eq!(d.uncompared().map(|i| i.head.order), Some((0, 0)));
        // Where no instance has an address, they are compared with true_signature too.
        let summary = instance(0, 0, 0, &[2, 0, 0]).merge(instance(1, 0, 0, &[1, 0]));
        let d = Decision::new(&elf, &summary, &features);
        assert_eq!(d.skip(), Some(SkipReason::InconsistentProto));
        assert!(d.uncompared().is_none());
    }

    #[test]
    fn arena_kfuncs_get_address_space_pointers() {
        let mut btf = Btf::new();
        let int = btf.add_int(b"int", 4, kinds::INT_SIGNED).unwrap();
        let ptr = btf.add_ref(Kind::Ptr, None, int).unwrap();
        let head = InstanceHead {
            ret: ptr,
            ..InstanceHead::default()
        };
        let mut state = FuncInstance::new(head, &[(b"a", int), (b"b", ptr)], &[], &[3, 0, 0, 0]);
        let features = Features::default();
        pass(&mut btf, &features)
            .add_arena_attrs(&kfunc(KF_ARENA_RET | KF_ARENA_ARG2), &mut state)
            .unwrap();
        assert_eq!(state.param_type(0), int, "argument 1 is not flagged");
        assert_eq!(
            state.params().map(|p| p.0).collect::<Vec<_>>(),
            [b"a", b"b"]
        );
        for new_ptr in [state.head.ret, state.param_type(1)] {
            let p = btf.type_by_id(new_ptr).unwrap();
            assert_eq!(p.kind(), Some(Kind::Ptr));
            assert_ne!(new_ptr, ptr);
            let tag = btf.type_by_id(p.size_or_type()).unwrap();
            assert_eq!(tag.kind(), Some(Kind::TypeTag));
            assert!(kinds::info_kflag(tag.words[1]));
            assert_eq!(btf.str_at(tag.name_off()), Some(BPF_ARENA_ATTR));
            assert_eq!(tag.size_or_type(), int);
        }
        // A flagged argument that is not a pointer is an error, as in pahole.
        let err = pass(&mut btf, &features).add_arena_attrs(&kfunc(KF_ARENA_ARG1), &mut state);
        assert!(err.is_err());
    }
}
