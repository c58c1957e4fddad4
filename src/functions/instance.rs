//! What a worker saves per DWARF instance of a function (pahole's `btf_encoder_func_state`).
//!
//! Type ids are local to the worker's chunk; the final pass translates them with the chunk's
//! id offset once the chunks are concatenated. Parameter names and decl-tag values are added
//! to the chunk's string table at save time, as pahole does, so the string section keeps
//! pahole's order; the instance keeps its own copies, because GCC stores short names inline
//! in `.debug_info`, whose pages are released once a CU is done.

use crate::dwarf::functions::FunctionInfo;
use crate::encode::chunk::FoundFunction;
use crate::functions::packing::{push_part, read_part};
use crate::functions::signature::{self, Signature, SignatureParts};

/// Flag bits of a [`FuncInstance`].
pub mod flags {
    /// A parameter was optimized out or has no location (`optimized_parms`).
    pub const OPTIMIZED_PARMS: u8 = 1 << 0;
    /// A parameter is not in the register the ABI expects (`unexpected_reg`).
    pub const UNEXPECTED_REG: u8 = 1 << 1;
    /// A packed struct is passed past the register parameters (`uncertain_parm_loc`).
    pub const UNCERTAIN_PARM_LOC: u8 = 1 << 2;
    /// A parameter's index differs from its abstract origin's (`reordered_parm`).
    pub const REORDERED_PARM: u8 = 1 << 3;
    /// clang marked the function `DW_CC_nocall`: its ABI changed (`signature_changed`).
    pub const SIGNATURE_CHANGED: u8 = 1 << 4;
    /// The instance's address is that of a `.constprop` or `.isra` clone symbol.
    pub const OPTIMIZED_SYMBOL: u8 = 1 << 5;
    /// The instance's address is that of one of the function's ELF symbols.
    pub const AT_SYMBOL: u8 = 1 << 6;
    /// The instance's address is that of a symbol with a `.` suffix (`foo.isra.0`): with
    /// `true_signature`, its prototype is encoded under that name.
    pub const DOT_SYMBOL: u8 = 1 << 7;

    /// Every flag and its name, as `dwarf2btf why` shows them.
    pub const NAMES: [(u8, &str); 8] = [
        (OPTIMIZED_PARMS, "optimized_parms"),
        (UNEXPECTED_REG, "unexpected_reg"),
        (UNCERTAIN_PARM_LOC, "uncertain_parm_loc"),
        (REORDERED_PARM, "reordered_parm"),
        (SIGNATURE_CHANGED, "signature_changed"),
        (OPTIMIZED_SYMBOL, "optimized_symbol"),
        (AT_SYMBOL, "at_symbol"),
        (DOT_SYMBOL, "dot_symbol"),
    ];
}

/// The [`flags`] the DWARF analysis sets on a function (the ELF ones are added when it is
/// saved).
pub fn dwarf_flags(func: &FunctionInfo<'_>) -> u8 {
    [
        (func.optimized_parms, flags::OPTIMIZED_PARMS),
        (func.unexpected_reg, flags::UNEXPECTED_REG),
        (func.uncertain_parm_loc, flags::UNCERTAIN_PARM_LOC),
        (func.reordered_parm, flags::REORDERED_PARM),
        (func.signature_changed, flags::SIGNATURE_CHANGED),
    ]
    .into_iter()
    .filter(|(on, _)| *on)
    .fold(0, |acc, (_, bit)| acc | bit)
}

/// One saved DWARF instance of an ELF function.
#[derive(Clone, Debug)]
pub struct FuncInstance {
    /// Where it is in DWARF order, its chunk, address, return type and flags.
    pub head: InstanceHead,
    /// Parameters, decl tags and the signature, in one allocation (see [`Packed`]).
    packed: Box<[u8]>,
}

/// The layout of [`FuncInstance::packed`]: the counts, the fixed-size fields (rewritten in
/// place when the final pass translates type ids), then the variable-length parts
/// (`packing.rs`) and the signature.
///
/// | bytes | what |
/// |---|---|
/// | 4 + 4 + 4 | parameter count, decl tag count, where the signature starts (LE) |
/// | 4 per parameter | its type id (LE) |
/// | 4 per decl tag | its component: -1 for the function, else a parameter index (LE) |
/// | a part per parameter | its name (empty for the vararg) |
/// | a part per decl tag | its value |
/// | the rest | the [`Signature`] |
struct Packed;

impl Packed {
    const HEADER: usize = 12;

    fn word(bytes: &[u8], at: usize) -> u32 {
        u32::from_le_bytes(bytes[at..at + 4].try_into().expect("four bytes"))
    }
}

/// A parameter as the builder of an instance takes it: name and type id.
pub type Param<'n> = (&'n [u8], u32);
/// A decl tag as the builder of an instance takes it: value and component (-1: the function).
pub type Annot<'n> = (&'n [u8], i32);

impl FuncInstance {
    /// An instance with these parameters and decl tags, and the signature [`signature::write`]
    /// wrote as `signature`.
    ///
    /// [`signature::write`]: crate::functions::signature::write
    pub fn new(
        head: InstanceHead,
        params: &[Param<'_>],
        annots: &[Annot<'_>],
        signature: &[u8],
    ) -> Self {
        let names: usize = params.iter().map(|p| p.0.len() + 5).sum();
        let values: usize = annots.iter().map(|a| a.0.len() + 5).sum();
        let fixed = Packed::HEADER + 4 * (params.len() + annots.len());
        let mut out = Vec::with_capacity(fixed + names + values + signature.len());
        out.extend_from_slice(&(params.len() as u32).to_le_bytes());
        out.extend_from_slice(&(annots.len() as u32).to_le_bytes());
        out.extend_from_slice(&[0; 4]);
        for &(_, ty) in params {
            out.extend_from_slice(&ty.to_le_bytes());
        }
        for &(_, component) in annots {
            out.extend_from_slice(&component.to_le_bytes());
        }
        for &(name, _) in params {
            push_part(&mut out, name);
        }
        for &(value, _) in annots {
            push_part(&mut out, value);
        }
        let sig_at = out.len() as u32;
        out[8..12].copy_from_slice(&sig_at.to_le_bytes());
        out.extend_from_slice(signature);
        FuncInstance {
            head,
            packed: out.into_boxed_slice(),
        }
    }

    /// A value to move out of a place that must hold an instance: it holds no bytes (its
    /// accessors other than `head` must not be called) and allocates nothing.
    pub(super) fn placeholder() -> Self {
        FuncInstance {
            head: InstanceHead::default(),
            packed: Box::default(),
        }
    }

    /// Whether the [`flags`] bit `flag` is set.
    pub fn has(&self, flag: u8) -> bool {
        self.head.flags & flag != 0
    }

    /// Whether the instance is skipped for optimized parameters: its ABI changed (clang's
    /// nocall, or an optimized clone symbol) and some parameter was optimized out; never with
    /// `true_signature`.
    pub fn optimized_skip(&self, true_signature: bool) -> bool {
        !true_signature
            && self.has(flags::OPTIMIZED_PARMS)
            && (self.has(flags::SIGNATURE_CHANGED) || self.has(flags::OPTIMIZED_SYMBOL))
    }

    /// How many parameters (the vararg included).
    pub fn param_count(&self) -> usize {
        Packed::word(&self.packed, 0) as usize
    }

    fn annot_count(&self) -> usize {
        Packed::word(&self.packed, 4) as usize
    }

    /// Parameter `i`'s type id.
    pub fn param_type(&self, i: usize) -> u32 {
        Packed::word(&self.packed, Packed::HEADER + 4 * i)
    }

    /// Sets parameter `i`'s type id (`i` < [`Self::param_count`]).
    pub fn set_param_type(&mut self, i: usize, ty: u32) {
        let at = Packed::HEADER + 4 * i;
        self.packed[at..at + 4].copy_from_slice(&ty.to_le_bytes());
    }

    /// The names, in parameter order, then the decl tags' values.
    fn names(&self) -> impl Iterator<Item = &[u8]> {
        let bytes = &self.packed[..];
        let mut pos = Packed::HEADER + 4 * (self.param_count() + self.annot_count());
        (0..self.param_count() + self.annot_count()).map(move |_| read_part(bytes, &mut pos))
    }

    /// The parameters: name (empty for the vararg) and type id.
    pub fn params(&self) -> impl Iterator<Item = (&[u8], u32)> {
        self.names()
            .zip(0..self.param_count())
            .map(|(name, i)| (name, self.param_type(i)))
    }

    /// Parameter `i`'s name.
    pub fn param_name(&self, i: usize) -> &[u8] {
        self.names().nth(i).unwrap_or_default()
    }

    /// The `btf_decl_tag` values of the function (component -1) and its parameters (index).
    pub fn annots(&self) -> impl Iterator<Item = (&[u8], i32)> {
        let components = Packed::HEADER + 4 * self.param_count();
        self.names()
            .skip(self.param_count())
            .enumerate()
            .map(move |(i, value)| (value, Packed::word(&self.packed, components + 4 * i) as i32))
    }

    /// The prototype in a form comparable across chunks.
    pub fn signature(&self) -> Signature<'_> {
        Signature::new(self.signature_bytes())
    }

    /// The signature's bytes, as [`signature::write`] wrote them.
    ///
    /// [`signature::write`]: crate::functions::signature::write
    pub fn signature_bytes(&self) -> &[u8] {
        &self.packed[Packed::word(&self.packed, 8) as usize..]
    }

    /// The bytes the instance holds on the heap.
    pub fn heap_bytes(&self) -> usize {
        self.packed.len()
    }
}

/// Where an instance comes in the final pass's walk over a function's instances: those with
/// an address (`DW_AT_low_pc`) first, then the others, each group in DWARF order. pahole 1.32
/// sorts them so ("ensure the first same-name function has a non-zero address"): the first
/// instance, whose prototype the others are compared with, is a concrete one when there is
/// one.
pub type WalkPosition = (bool, u32, u32);

/// The fixed-size fields of a [`FuncInstance`].
#[derive(Clone, Copy, Debug, Default)]
pub struct InstanceHead {
    /// Position in DWARF order: (CU index, DIE offset). Orders instances like pahole's array.
    pub order: (u32, u32),
    /// The chunk whose BTF the type ids belong to.
    pub chunk: u32,
    /// `DW_AT_low_pc` (0 for abstract instances and ranges-only functions).
    pub addr: u64,
    /// Return type id, chunk-local (0 = void).
    pub ret: u32,
    /// [`flags`] bits.
    pub flags: u8,
}

impl InstanceHead {
    /// Its place in the final pass's walk ([`WalkPosition`]).
    pub fn walk_position(&self) -> WalkPosition {
        (self.addr == 0, self.order.0, self.order.1)
    }
}

/// True when `name` has a `.constprop` or `.isra` suffix (after its first '.').
fn is_optimized_clone(name: &[u8]) -> bool {
    let Some(dot) = name.iter().position(|&b| b == b'.') else {
        return false;
    };
    let suffix = &name[dot..];
    [&b".constprop"[..], b".isra"]
        .iter()
        .any(|s| suffix.windows(s.len()).any(|w| w == *s))
}

/// pahole's `btf_encoder__save_func`: builds the instance and adds its strings to the chunk;
/// the signature's part forms are numbered in `signature_parts`, which every worker shares.
pub fn save_instance(
    found: FoundFunction<'_, '_>,
    signature_parts: &SignatureParts,
) -> FuncInstance {
    let FoundFunction {
        chunk_btf,
        chunk,
        cu_index,
        type_id_off,
        info: func,
        elf: elf_fn,
        ..
    } = found;
    let xlate = |id: u32| if id == 0 { 0 } else { type_id_off + id };
    let mut f = dwarf_flags(func);
    if func.addr != 0
        && elf_fn
            .syms
            .iter()
            .any(|s| s.addr == func.addr && is_optimized_clone(s.name.as_bytes()))
    {
        f |= flags::OPTIMIZED_SYMBOL;
    }
    if elf_fn.syms.iter().any(|s| s.addr == func.addr) {
        f |= flags::AT_SYMBOL;
    }
    if func.addr != 0 && elf_fn.dot_symbol_at(func.addr).is_some() {
        f |= flags::DOT_SYMBOL;
    }
    let names: Vec<Box<[u8]>> = func
        .params
        .iter()
        .map(|p| {
            let name: Box<[u8]> = if p.member.is_empty() {
                Box::from(p.name)
            } else {
                [p.name, b"__", p.member].concat().into_boxed_slice()
            };
            if !name.is_empty() {
                chunk_btf.add_str(&name);
            }
            name
        })
        .collect();
    let params: Vec<Param<'_>> = names
        .iter()
        .zip(&func.params)
        .map(|(name, p)| (&name[..], xlate(p.ty)))
        .collect();
    let annots: Vec<Annot<'_>> = func
        .annots
        .iter()
        .map(|a| {
            chunk_btf.add_str(a.value);
            (a.value, a.component)
        })
        .collect();
    let ret = xlate(func.ret);
    let mut sig = Vec::new();
    signature::write(
        signature_parts,
        chunk_btf,
        chunk,
        ret,
        params.iter().map(|p| p.1),
        &mut sig,
    );
    let head = InstanceHead {
        order: (cu_index, func.die),
        chunk,
        addr: func.addr,
        ret,
        flags: f,
    };
    FuncInstance::new(head, &params, &annots, &sig)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn optimized_clone_suffixes() {
        assert!(is_optimized_clone(b"foo.isra.0"));
        assert!(is_optimized_clone(b"foo.constprop.3"));
        assert!(is_optimized_clone(b"foo.part.0.isra.0"));
        assert!(!is_optimized_clone(b"foo"));
        assert!(!is_optimized_clone(b"isra_foo.cold"));
    }
}
