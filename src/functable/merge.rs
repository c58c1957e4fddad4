//! The final cross-owner pass over saved function instances: pahole HEAD's
//! `btf_encoder__add_saved_funcs`, run once after the workers have joined and the chunks have
//! been concatenated into one BTF.
//!
//! Per ELF function, in name order: OR the flags of every instance into the first (in DWARF
//! order), compare each prototype with the first (`funcs__match`, `types__match`), pick the
//! canonical instance by address ("prefer strong definitions"), apply the six skip reasons
//! (the last one that applies is logged), and emit FUNC_PROTO + FUNC (static linkage) +
//! DECL_TAGs, plus `bpf_kfunc`/`bpf_fastcall` tags for kfuncs.

use std::io::Write;

use crate::btf::{kinds, Btf, Kind};
use crate::config::Features;
use crate::encode::func_state::{flags, FuncInstance};
use crate::error::{Error, Result};
use crate::input::functions::{ElfFunction, ElfFunctions};

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
    pub btf: &'p mut Btf,
    pub chunk_offsets: &'p [u32],
    pub features: &'p Features,
    /// Where `-V` skip lines go (`None` when not verbose).
    pub log: Option<W>,
}

/// Counters of what the pass did.
#[derive(Clone, Copy, Debug, Default)]
pub struct FuncStats {
    pub emitted: usize,
    pub skipped: usize,
}

impl<W: Write> FinalPass<'_, W> {
    /// Runs the pass: `groups[i]` holds the instances of ELF function `i` (any order).
    pub fn run(
        &mut self,
        funcs: &ElfFunctions<'_>,
        groups: Vec<Vec<FuncInstance>>,
    ) -> Result<FuncStats> {
        let mut stats = FuncStats::default();
        for (i, mut group) in groups.into_iter().enumerate() {
            if group.is_empty() {
                continue;
            }
            let Some(elf) = funcs.get(i as u32) else {
                continue;
            };
            group.sort_by_key(|s| s.order);
            for s in &mut group {
                self.translate(s);
            }
            if self.add_group(elf, &mut group)? {
                stats.emitted += 1;
            } else {
                stats.skipped += 1;
            }
        }
        Ok(stats)
    }

    fn translate(&self, s: &mut FuncInstance) {
        let off = self.chunk_offsets[s.chunk as usize];
        let x = |id: u32| if id == 0 { 0 } else { id + off };
        s.ret = x(s.ret);
        for p in s.params.iter_mut() {
            p.1 = x(p.1);
        }
    }

    fn log(&mut self, elf: &ElfFunction<'_>, reason: std::fmt::Arguments<'_>) {
        if let Some(w) = &mut self.log {
            let _ = writeln!(
                w,
                "{} : skipping BTF encoding of function due to {reason}",
                elf.name
            );
        }
    }

    /// Combines, decides and emits one function; true when it was emitted.
    fn add_group(&mut self, elf: &ElfFunction<'_>, group: &mut [FuncInstance]) -> Result<bool> {
        let mut inconsistent = false;
        let combined = flags::UNEXPECTED_REG | flags::UNCERTAIN_PARM_LOC | flags::REORDERED_PARM;
        for j in 1..group.len() {
            let acc = (group[0].flags | group[j].flags) & combined;
            let blocking = acc & (flags::UNEXPECTED_REG | flags::REORDERED_PARM) != 0;
            if !blocking && !inconsistent && !self.funcs_match(elf, &group[0], &group[j]) {
                inconsistent = true;
            }
            group[0].flags |= acc;
        }
        let first = &group[0];
        let canonical = if group.len() > 1 {
            select_canonical(elf, group, self.features)
        } else {
            0
        };
        let mut reason = None;
        if first.has(flags::UNEXPECTED_REG) {
            reason = Some("unexpected register usage for parameter");
        }
        if self.features.consistent_func && inconsistent {
            reason = Some("inconsistet prototype");
        }
        if first.has(flags::UNCERTAIN_PARM_LOC) {
            reason = Some("uncertain parameter location");
        }
        if first.has(flags::REORDERED_PARM) {
            reason = Some("reordered parameters");
        }
        if skip_optimized_parms(&group[canonical], self.features) {
            reason = Some("optimized parameters");
        }
        if elf.ambiguous_addr {
            reason = Some("ambiguous address");
        }
        if let Some(reason) = reason {
            self.log(elf, format_args!("{reason}"));
            return Ok(false);
        }
        let tag_kfunc = elf.kfunc && self.features.decl_tag_kfuncs;
        let fn_id = if tag_kfunc && self.features.attributes {
            let mut state = group[canonical].clone();
            self.add_arena_attrs(elf, &mut state)?;
            self.add_func(elf, &state)?
        } else {
            self.add_func(elf, &group[canonical])?
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
            state.ret = self.arena_ptr(elf, "return type", state.ret)?;
        }
        for (flag, idx) in [(KF_ARENA_ARG1, 0), (KF_ARENA_ARG2, 1)] {
            if flags & flag == 0 {
                continue;
            }
            let Some(param) = state.params.get_mut(idx) else {
                return Err(Error::Encode {
                    what: format!("kfunc {}", elf.name),
                    die_offset: 0,
                    reason: format!("arena flag for argument {} it does not have", idx + 1),
                });
            };
            param.1 = self.arena_ptr(elf, "an argument", param.1)?;
        }
        Ok(())
    }

    /// A new pointer to `address_space(1)`-tagged pointee of the pointer `ptr_id`.
    fn arena_ptr(&mut self, elf: &ElfFunction<'_>, what: &str, ptr_id: u32) -> Result<u32> {
        let pointee = match self.btf.type_by_id(ptr_id) {
            Some(t) if t.kind() == Some(Kind::Ptr) => t.size_or_type(),
            _ => {
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

    /// `btf_encoder__add_func`: FUNC_PROTO, FUNC (static, ELF base name), decl tags.
    fn add_func(&mut self, elf: &ElfFunction<'_>, s: &FuncInstance) -> Result<u32> {
        let proto = self.btf.add_func_proto(s.ret)?;
        for (name, ty) in s.params.iter() {
            self.btf.add_func_param(Some(name), *ty)?;
        }
        let fn_id = self
            .btf
            .add_func(elf.name.as_bytes(), kinds::FUNC_STATIC, proto)?;
        for (value, component) in s.annots.iter() {
            self.btf.add_decl_tag(value, fn_id, *component)?;
        }
        Ok(fn_id)
    }

    /// pahole's `funcs__match`, logging the mismatch under `-V` as pahole does.
    fn funcs_match(&mut self, elf: &ElfFunction<'_>, a: &FuncInstance, b: &FuncInstance) -> bool {
        if a.params.len() != b.params.len() {
            self.log(
                elf,
                format_args!(
                    "param count mismatch; {} params != {} params",
                    a.params.len(),
                    b.params.len()
                ),
            );
            return false;
        }
        if !types_match(self.btf, a.ret, b.ret) {
            self.log(elf, format_args!("return type mismatch"));
            return false;
        }
        for (i, (pa, pb)) in a.params.iter().zip(b.params.iter()).enumerate() {
            if !types_match(self.btf, pa.1, pb.1) {
                let (na, nb) = (
                    String::from_utf8_lossy(&pa.0),
                    String::from_utf8_lossy(&pb.0),
                );
                self.log(
                    elf,
                    format_args!("param type mismatch for param#{} {na} != {nb}", i + 1),
                );
                return false;
            }
        }
        true
    }
}

/// `!true_signature && optimized_parms && (signature_changed || optimized_symbol)`.
fn skip_optimized_parms(s: &FuncInstance, features: &Features) -> bool {
    !features.true_signature
        && s.has(flags::OPTIMIZED_PARMS)
        && (s.has(flags::SIGNATURE_CHANGED) || s.has(flags::OPTIMIZED_SYMBOL))
}

/// `btf_encoder__select_canonical_state`: the first instance at one of the function's ELF
/// addresses that is not skipped for optimized parameters, else the first at an ELF address,
/// else the first.
fn select_canonical(elf: &ElfFunction<'_>, group: &[FuncInstance], features: &Features) -> usize {
    let mut first = None;
    for (i, s) in group.iter().enumerate() {
        for sym in &elf.syms {
            if s.addr != sym.addr {
                continue;
            }
            first.get_or_insert(i);
            if !skip_optimized_parms(s, features) {
                return i;
            }
        }
    }
    first.unwrap_or(0)
}

/// FWD counts as the STRUCT or UNION it declares.
fn fwd_kind(t: &crate::btf::Type<'_>) -> Option<Kind> {
    match t.kind()? {
        Kind::Fwd if t.kflag() => Some(Kind::Union),
        Kind::Fwd => Some(Kind::Struct),
        k => Some(k),
    }
}

/// pahole HEAD's `types__match` within one BTF (with the 2026 FUNC_PROTO parameter fix).
pub fn types_match(btf: &Btf, mut id1: u32, mut id2: u32) -> bool {
    loop {
        if id1 == id2 {
            return true;
        }
        if id1 == 0 || id2 == 0 {
            return false;
        }
        let (Some(t1), Some(t2)) = (btf.type_by_id(id1), btf.type_by_id(id2)) else {
            return false;
        };
        let (Some(k1), Some(k2)) = (fwd_kind(&t1), fwd_kind(&t2)) else {
            return false;
        };
        if k1 != k2 {
            // Loose matching: const and non-const parameters match.
            if k1 == Kind::Const {
                id1 = t1.size_or_type();
                continue;
            }
            if k2 == Kind::Const {
                id2 = t2.size_or_type();
                continue;
            }
            return false;
        }
        let same_name = || btf.str_at(t1.name_off()) == btf.str_at(t2.name_off());
        match k1 {
            Kind::Int => {
                return t1.size_or_type() == t2.size_or_type()
                    && t1.extra() == t2.extra()
                    && same_name()
            }
            Kind::Float => return t1.size_or_type() == t2.size_or_type() && same_name(),
            Kind::Typedef | Kind::Struct | Kind::Union | Kind::Enum | Kind::Enum64 => {
                return same_name()
            }
            Kind::Ptr | Kind::Volatile | Kind::Const | Kind::Restrict | Kind::TypeTag => {
                id1 = t1.size_or_type();
                id2 = t2.size_or_type();
            }
            Kind::Array => {
                let (a1, a2) = (t1.array(), t2.array());
                if a1.nelems != a2.nelems {
                    return false;
                }
                id1 = a1.elem;
                id2 = a2.elem;
            }
            Kind::FuncProto => {
                return t1.vlen() == t2.vlen()
                    && types_match(btf, t1.size_or_type(), t2.size_or_type())
                    && t1
                        .params()
                        .zip(t2.params())
                        .all(|(p1, p2)| types_match(btf, p1.type_id, p2.type_id));
            }
            _ => return false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_match_is_loose_on_const_and_strict_on_names() {
        let mut btf = Btf::new();
        let int = btf.add_int(b"int", 4, kinds::INT_SIGNED).unwrap();
        let long = btf.add_int(b"long", 8, kinds::INT_SIGNED).unwrap();
        let cint = btf.add_ref(Kind::Const, None, int).unwrap();
        let p_int = btf.add_ref(Kind::Ptr, None, int).unwrap();
        let p_cint = btf.add_ref(Kind::Ptr, None, cint).unwrap();
        let fwd = btf.add_fwd(b"s", false).unwrap();
        let s = btf.add_composite(Kind::Struct, Some(b"s"), 4).unwrap();
        let p_long = btf.add_ref(Kind::Ptr, None, long).unwrap();
        assert!(types_match(&btf, p_int, p_cint));
        assert!(types_match(&btf, fwd, s));
        assert!(!types_match(&btf, p_int, p_long));
        assert!(!types_match(&btf, int, 0));
        assert!(types_match(&btf, 0, 0));
    }

    fn kfunc(flags: u32) -> ElfFunction<'static> {
        ElfFunction {
            name: "bpf_arena_thing",
            syms: Vec::new(),
            ambiguous_addr: false,
            kfunc: true,
            kfunc_flags: flags,
        }
    }

    fn pass<'p>(btf: &'p mut Btf, features: &'p Features) -> FinalPass<'p, std::io::Sink> {
        FinalPass {
            btf,
            chunk_offsets: &[0],
            features,
            log: None,
        }
    }

    #[test]
    fn arena_kfuncs_get_address_space_pointers() {
        let mut btf = Btf::new();
        let int = btf.add_int(b"int", 4, kinds::INT_SIGNED).unwrap();
        let ptr = btf.add_ref(Kind::Ptr, None, int).unwrap();
        let mut state = FuncInstance {
            order: (0, 0),
            chunk: 0,
            addr: 0,
            ret: ptr,
            params: vec![(b"a".to_vec().into(), int), (b"b".to_vec().into(), ptr)].into(),
            annots: Box::new([]),
            flags: 0,
        };
        let features = Features::default();
        pass(&mut btf, &features)
            .add_arena_attrs(&kfunc(KF_ARENA_RET | KF_ARENA_ARG2), &mut state)
            .unwrap();
        assert_eq!(state.params[0].1, int, "argument 1 is not flagged");
        for new_ptr in [state.ret, state.params[1].1] {
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
