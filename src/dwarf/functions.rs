//! DIE → function model: everything pahole HEAD (dwarves 1436dafff5c2) knows about each
//! `DW_TAG_subprogram` of a CU by the time `btf_encoder__save_func` runs, minus the ELF side.
//!
//! [`decode_cu_functions`] returns one [`FunctionInfo`] per subprogram DIE of the CU
//! (declarations, abstract instances and nested subprograms included; the caller applies
//! pahole's filters: `declaration`, `has_arg_names`, the ELF functions table). The order is
//! pahole's `functions_table` order: a subprogram is added once its whole subtree has been
//! loaded, so a subprogram nested in another (GNU C nested functions, block-scope declarations)
//! comes *before* its parent. For a CU without nested subprograms that is DIE order, i.e.
//! [`CuTypes::subprograms`] order. `FunctionInfo::die` identifies the DIE.
//!
//! What is ported, from `dwarf_loader.c` unless noted:
//! - `function__new`/`die__process_function`: name, `DW_AT_declaration`/`DW_AT_external` by
//!   presence, `DW_AT_low_pc` (0 when absent, e.g. abstract instances or `DW_AT_ranges`-only
//!   functions), the return type; the direct `DW_TAG_formal_parameter` children are the
//!   parameters (their index counts every one of them), a `DW_TAG_unspecified_parameters`
//!   child makes the function variadic; formal parameters in lexical blocks or inlined
//!   subroutines are not parameters.
//! - Decl tags (`features.decl_tag` only), in pahole's list order: while the children are
//!   walked, a `DW_TAG_LLVM_annotation`/`DW_TAG_GNU_annotation` child named `btf_decl_tag`
//!   gives component -1, a parameter's annotation children and then its `DW_AT_GNU_annotation`
//!   chain give the parameter index; the function's own `DW_AT_GNU_annotation` chain (GCC 16)
//!   comes last, with component -1.
//! - `parameter__new`: `has_loc`/`has_const_value` by presence, the type byte size
//!   (`get_type_byte_size`: taken from the abstract origin's `DW_AT_type` when the parameter
//!   has one; a pointer is `addr_size`; a type without `DW_AT_byte_size` is looked through),
//!   `passed_in_memory`, and `parameter__decode_location`/`parameter__multi_exprs` over every
//!   entry of the location (an expression, or a `.debug_loc`/`.debug_loclists` list):
//!   `loc_num` counts the entries libdw's `dwarf_getlocations` returns (base-address entries
//!   are not returned, empty ranges and `DW_LLE_default_location` are), an entry libdw cannot
//!   parse ends the walk, a trailing `DW_OP_stack_value` of a 2-operation expression is
//!   dropped, `DW_OP_reg0..31` (not `DW_OP_regx`, as in pahole) and `DW_OP_bregN` +
//!   `DW_OP_stack_value` count at entry 0 only, `DW_OP_fbreg` and constants at entry 0 only,
//!   `DW_OP_entry_value`/`DW_OP_GNU_entry_value` of a lone `DW_OP_regN` in any entry; pieces of
//!   an aggregate larger than a register take the first register seen.
//! - `function__signature_changed` (clang CUs only): `DW_AT_calling_convention ==
//!   DW_CC_nocall` on the function, or on its abstract origin; never for `DW_AT_inline` ones.
//! - `cu__recode_dwarf_types` for functions, in table order: a nameless function takes the
//!   (current) name of its abstract origin, else of its specification; a nameless function
//!   with neither is left alone (its return type stays void, as in pahole). A parameter without
//!   `DW_AT_type` but with an abstract origin takes the origin parameter's name and type, sets
//!   `reordered_parm` when the indexes differ, and copies its location facts onto the origin
//!   parameter (`ftype__recode_dwarf_types`), so an abstract instance reflects what its
//!   out-of-line copies know.
//! - `cu__resolve_func_ret_types_optimized`: `function__analyze_parameter_locations`
//!   (`function__match_clang_parameter_locations` for clang without a changed signature),
//!   then `optimized_parms` (a parameter optimized or without location), `unexpected_reg`
//!   (unless a parameter is a struct by value through typedefs/const, `param__is_struct`), and
//!   the LTO rule: a void function with an abstract origin takes the origin's return type (an
//!   origin that is neither a subprogram nor a parameter of the CU is an error: pahole aborts
//!   the CU there too).
//! - `btf_encoder.c`: `ftype__has_arg_names`; `ftype__has_uncertain_arg_loc` (a named struct,
//!   not looked up through typedefs, at parameter index ≥ `nr_register_params`, that
//!   `class__infer_packed_attributes` from `dwarves.c` finds packed, including the holes
//!   search and the marking of structs embedded at unnatural offsets); and the parameter list
//!   `btf_encoder__save_func` records: with `reordered_parm`, parameters that are optimized or
//!   have no location are dropped, and a variadic function gets a trailing `{"", 0}`.
//!
//! Left out (documented differences):
//! - `true_signature` is not implemented: `features.true_signature` is ignored and the
//!   analysis is always the default one (no `loc_const_value`/`loc_stack` rules, no
//!   `DW_OP_piece` field bitmaps, no `<param>__<member>` renaming or member-type switch, no
//!   dropping of optimized parameters of changed signatures).
//! - pahole also re-runs `ftype__recode_dwarf_types` on the abstract origin of every inlined
//!   subroutine met while recoding a function body. Such an origin is an abstract instance
//!   whose parameters have their own types, so re-running changes nothing unless the origin is
//!   itself a concrete instance (parameters with abstract origins); it is not replayed.
//! - An abstract origin that pahole would resolve to a non-parameter DIE (its tag table also
//!   holds variables, labels, ...) is treated as not found.
//! - `uncertain_parm_loc` is computed for every function that is not a declaration and has
//!   all its parameter names; pahole only computes it for the ones also found in the ELF
//!   functions table, which only matters through the memoised "embedded at an unnatural
//!   offset" marking.
//! - `_Atomic` (which pahole rejects) is dropped by `types.rs`: a parameter or return type
//!   that is `_Atomic T` has type `T`, for its BTF type and for sizing and aligning alike.
//! - Cross-CU references (`DW_FORM_ref_addr` outside the CU, LTO) and type-unit references are
//!   errors, as in `types.rs`.
//!
//! Each subprogram is read by its offset with `EntriesRaw`: its attributes, its direct
//! children's attributes, and nothing below them when a `DW_AT_sibling` (GCC) allows jumping
//! over a subtree. No `gimli::Unit` is built; location lists are walked raw (addresses are never
//! needed, only the entries and their expressions). On the reference kernel this reproduces
//! every skip decision pahole HEAD takes from these facts (the ignored test
//! `vmlinux_skip_reasons_match_pahole_head` in `tests/dwarf_functions.rs`).

use std::ops::Range;

use gimli::{AttributeValue, DwTag, EntriesRaw, UnitOffset};

use super::types::{Annot, CuTypes, DecodeError, Entry};
use super::units::{Cu, R};
use crate::btf::Kind;
use crate::config::Features;

/// The argument-passing facts of a target, from its ELF `e_machine`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arch {
    /// How many parameters the ABI passes in registers (`arch__nr_register_params`); 0 for
    /// an unknown machine, which turns most of the location analysis off.
    pub nr_register_params: usize,
    /// DWARF register numbers of the argument registers, in order
    /// (`arch__set_register_params`); empty where pahole has no table (MIPS, PowerPC,
    /// RISC-V, SPARC, ARC), so no register ever matches an expected one there.
    pub regs: &'static [u16],
    /// Aggregates up to two registers wide travel in two registers (`arch__agg_use_two_regs`;
    /// false on s390 only).
    pub agg_use_two_regs: bool,
}

impl Arch {
    /// pahole's tables for `e_machine`.
    pub fn from_elf_machine(e_machine: u16) -> Arch {
        const EM_SPARC: u16 = 2;
        const EM_MIPS: u16 = 8;
        const EM_PPC: u16 = 20;
        const EM_PPC64: u16 = 21;
        const EM_S390: u16 = 22;
        const EM_ARM: u16 = 40;
        const EM_SPARCV9: u16 = 43;
        const EM_ARC: u16 = 45;
        const EM_X86_64: u16 = 62;
        const EM_AARCH64: u16 = 183;
        const EM_RISCV: u16 = 243;
        // rdi, rsi, rdx, rcx, r8, r9.
        const X86_64: &[u16] = &[5, 4, 1, 2, 8, 9];
        const S390: &[u16] = &[2, 3, 4, 5, 6];
        const ARM: &[u16] = &[0, 1, 2, 3, 4, 5, 6, 7];
        let nr_register_params = match e_machine {
            EM_S390 => 5,
            EM_SPARC | EM_SPARCV9 | EM_X86_64 => 6,
            EM_AARCH64 | EM_ARC | EM_ARM | EM_MIPS | EM_PPC | EM_PPC64 | EM_RISCV => 8,
            _ => 0,
        };
        let regs = match e_machine {
            EM_S390 => S390,
            EM_X86_64 => X86_64,
            EM_ARM | EM_AARCH64 => ARM,
            _ => &[],
        };
        Arch {
            nr_register_params,
            regs,
            agg_use_two_regs: e_machine != EM_S390,
        }
    }

    /// `cu->register_params[idx]` as a DWARF register number, -1 when there is none.
    fn reg(&self, idx: usize) -> i32 {
        self.regs.get(idx).map_or(UNKNOWN_REG, |&r| r as i32)
    }
}

/// One parameter as `btf_encoder__save_func` records it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Param<'a> {
    /// The name (empty when the DIE has none, or for the trailing vararg).
    pub name: &'a [u8],
    /// Small id of the type in the CU's types table (0 = void).
    pub ty: u32,
}

/// What pahole knows about one `DW_TAG_subprogram` when it saves the function.
#[derive(Clone, Debug)]
pub struct FunctionInfo<'a> {
    /// Unit offset of the `DW_TAG_subprogram` DIE.
    pub die: u32,
    /// Own `DW_AT_name`, else the abstract origin's, else the specification's (empty: none).
    pub name: &'a [u8],
    /// `DW_AT_declaration` is present (pahole skips the function).
    pub declaration: bool,
    /// `DW_AT_external` is present.
    pub external: bool,
    /// `DW_AT_low_pc` (0 when absent: abstract instances, ranges-only functions).
    pub addr: u64,
    /// Small id of the return type (0 = void); inherited from the abstract origin when the
    /// DIE has none (pahole's LTO rule).
    pub ret: u32,
    /// Exactly the parameters `btf_encoder__save_func` records, in order, the trailing vararg
    /// `{b"", 0}` included.
    pub params: Vec<Param<'a>>,
    /// Every formal parameter has a name (`ftype__has_arg_names`; false → pahole skips it).
    pub has_arg_names: bool,
    pub optimized_parms: bool,
    pub unexpected_reg: bool,
    pub reordered_parm: bool,
    pub signature_changed: bool,
    pub uncertain_parm_loc: bool,
    /// `btf_decl_tag` values: component -1 is the function, else the parameter index.
    pub annots: Vec<Annot<'a>>,
}

/// pahole's `PARAMETER_UNKNOWN_REG`.
const UNKNOWN_REG: i32 = -1;
/// `DW_CC_nocall`.
const DW_CC_NOCALL: u64 = 3;
/// `DW_TAG_LLVM_annotation`.
const DW_TAG_LLVM_ANNOTATION: DwTag = DwTag(0x6000);
/// `DW_TAG_GNU_annotation` (GCC 16+).
const DW_TAG_GNU_ANNOTATION: DwTag = DwTag(0x6001);
/// `DW_AT_GNU_annotation`: the head of a function's or parameter's GCC annotation chain.
const DW_AT_GNU_ANNOTATION: gimli::DwAt = gimli::DwAt(0x2139);
/// Longest type chain or annotation chain followed (cycles in malformed DWARF).
const MAX_CHAIN: usize = 64;

/// A parameter's `DW_AT_location`, as libdw would walk it.
#[derive(Clone, Copy, Debug)]
enum Loc<'a> {
    /// No attribute.
    None,
    /// One expression (exprloc, or a block before DWARF 4).
    Expr(&'a [u8]),
    /// A location list at this offset of `.debug_loc` (DWARF ≤ 4) or `.debug_loclists`.
    List(usize),
    /// Present, but libdw returns no location from it (bad form or list index).
    Unreadable,
}

/// A parameter while the CU is decoded: what `struct parameter` holds.
#[derive(Clone, Debug)]
struct Parm<'a> {
    /// Unit offset of the `DW_TAG_formal_parameter`.
    die: u32,
    name: Option<&'a [u8]>,
    /// Source index (`uint8_t` in pahole).
    idx: u8,
    /// Unit offset of the own `DW_AT_type`.
    own_type: Option<u32>,
    /// `DW_AT_abstract_origin` is present (even if it does not resolve).
    has_origin_attr: bool,
    origin: Option<u32>,
    loc: Loc<'a>,
    ty: u32,
    type_byte_size: i32,
    passed_in_memory: bool,
    loc_reg: i32,
    has_loc: bool,
    has_const_value: bool,
    loc_const_value: bool,
    loc_stack: bool,
    optimized: bool,
    unexpected_reg: bool,
}

/// A function while the CU is decoded.
#[derive(Clone, Debug)]
struct Func<'a> {
    die: u32,
    /// Offset just past the DIE's subtree (orders nested subprograms first).
    end: u32,
    name: Option<&'a [u8]>,
    declaration: bool,
    external: bool,
    inlined: bool,
    has_origin_attr: bool,
    origin: Option<u32>,
    spec: Option<u32>,
    addr: u64,
    ret_type: Option<u32>,
    ret: u32,
    cc_nocall: bool,
    unspec: bool,
    parms: Range<u32>,
    annots: Range<u32>,
    reordered_parm: bool,
    signature_changed: bool,
    optimized_parms: bool,
    unexpected_reg: bool,
}

/// One decoded location operation (libdw's `Dwarf_Op`, trimmed to what pahole reads).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Op<'a> {
    atom: u8,
    number: u64,
    /// The operand block of `DW_OP_entry_value`/`DW_OP_GNU_entry_value`.
    block: &'a [u8],
}

const DW_OP_LIT0: u8 = 0x30;
const DW_OP_LIT31: u8 = 0x4f;
const DW_OP_REG0: u8 = 0x50;
const DW_OP_REG31: u8 = 0x6f;
const DW_OP_BREG0: u8 = 0x70;
const DW_OP_BREG31: u8 = 0x8f;
const DW_OP_CONSTU: u8 = 0x10;
const DW_OP_CONSTS: u8 = 0x11;
const DW_OP_FBREG: u8 = 0x91;
const DW_OP_STACK_VALUE: u8 = 0x9f;
const DW_OP_ENTRY_VALUE: u8 = 0xa3;
const DW_OP_GNU_ENTRY_VALUE: u8 = 0xf3;

fn is_reg(atom: u8) -> bool {
    (DW_OP_REG0..=DW_OP_REG31).contains(&atom)
}

fn is_const(atom: u8) -> bool {
    (DW_OP_LIT0..=DW_OP_LIT31).contains(&atom) || atom == DW_OP_CONSTU || atom == DW_OP_CONSTS
}

/// Sizes of the operands libdw reads for an expression.
#[derive(Clone, Copy, Debug)]
struct OpSizes {
    /// `DW_OP_addr`.
    addr: usize,
    /// `DW_OP_call_ref`, `DW_OP_implicit_pointer`, ...: the address size in DWARF 2, else the
    /// offset size.
    reference: usize,
}

/// Reads a LEB128 value at `*pos` with gimli's reader and advances `*pos` past it.
fn read_leb<'d, T>(
    data: &'d [u8],
    pos: &mut usize,
    read: impl FnOnce(&mut gimli::EndianSlice<'d, gimli::LittleEndian>) -> gimli::Result<T>,
) -> Option<T> {
    let mut r = gimli::EndianSlice::new(data.get(*pos..)?, gimli::LittleEndian);
    let v = read(&mut r).ok()?;
    *pos = data.len() - r.len();
    Some(v)
}

fn read_uleb(data: &[u8], pos: &mut usize) -> Option<u64> {
    read_leb(data, pos, gimli::Reader::read_uleb128)
}

fn read_sleb(data: &[u8], pos: &mut usize) -> Option<u64> {
    read_leb(data, pos, |r| {
        gimli::Reader::read_sleb128(r).map(|v| v as u64)
    })
}

fn read_fixed(data: &[u8], pos: &mut usize, n: usize, little: bool) -> Option<u64> {
    let bytes = data.get(*pos..pos.checked_add(n)?)?;
    *pos += n;
    let mut v = 0u64;
    if little {
        for &b in bytes.iter().rev() {
            v = v << 8 | u64::from(b);
        }
    } else {
        for &b in bytes {
            v = v << 8 | u64::from(b);
        }
    }
    Some(v)
}

/// Decodes an expression as libdw's `__libdw_intern_expression` does; `None` where libdw
/// fails (an opcode it does not know, a truncated operand), which ends a location walk.
fn parse_ops<'a>(
    expr: &'a [u8],
    sizes: OpSizes,
    little: bool,
    out: &mut Vec<Op<'a>>,
) -> Option<()> {
    out.clear();
    let mut pos = 0;
    while pos < expr.len() {
        let atom = expr[pos];
        pos += 1;
        let mut op = Op {
            atom,
            number: 0,
            block: &[],
        };
        match atom {
            // DW_OP_addr.
            0x03 => op.number = read_fixed(expr, &mut pos, sizes.addr, little)?,
            // DW_OP_call_ref, DW_OP_GNU_variable_value.
            0x9a | 0xfd => op.number = read_fixed(expr, &mut pos, sizes.reference, little)?,
            // No operand: deref, dup..xderef, abs..xor (minus plus_uconst), bra's
            // comparisons, lit*, reg*, nop, push_object_address, form_tls_address,
            // call_frame_cfa, stack_value, GNU_push_tls_address, GNU_uninit.
            0x06
            | 0x12..=0x14
            | 0x16..=0x22
            | 0x24..=0x27
            | 0x29..=0x2e
            | 0x30..=0x6f
            | 0x96
            | 0x97
            | 0x9b
            | 0x9c
            | 0x9f
            | 0xe0
            | 0xf0 => {}
            // const1u, pick, deref_size, xderef_size.
            0x08 | 0x15 | 0x94 | 0x95 => op.number = read_fixed(expr, &mut pos, 1, little)?,
            // const1s.
            0x09 => op.number = read_fixed(expr, &mut pos, 1, little)? as u8 as i8 as u64,
            // const2u.
            0x0a => op.number = read_fixed(expr, &mut pos, 2, little)?,
            // const2s, skip, bra, call2.
            0x0b | 0x2f | 0x28 | 0x98 => {
                op.number = read_fixed(expr, &mut pos, 2, little)? as u16 as i16 as u64
            }
            // const4u.
            0x0c => op.number = read_fixed(expr, &mut pos, 4, little)?,
            // const4s, call4, GNU_parameter_ref.
            0x0d | 0x99 | 0xfa => {
                op.number = read_fixed(expr, &mut pos, 4, little)? as u32 as i32 as u64
            }
            // const8u, const8s.
            0x0e | 0x0f => op.number = read_fixed(expr, &mut pos, 8, little)?,
            // constu, plus_uconst, regx, piece, convert, GNU_convert, reinterpret,
            // GNU_reinterpret, addrx, GNU_addr_index, constx, GNU_const_index.
            0x10 | 0x23 | 0x90 | 0x93 | 0xa8 | 0xf7 | 0xa9 | 0xf9 | 0xa1 | 0xfb | 0xa2 | 0xfc => {
                op.number = read_uleb(expr, &mut pos)?
            }
            // consts, breg*, fbreg.
            0x11 | 0x70..=0x8f | 0x91 => op.number = read_sleb(expr, &mut pos)?,
            // bregx.
            0x92 => {
                op.number = read_uleb(expr, &mut pos)?;
                read_sleb(expr, &mut pos)?;
            }
            // bit_piece, regval_type, GNU_regval_type.
            0x9d | 0xa5 | 0xf5 => {
                op.number = read_uleb(expr, &mut pos)?;
                read_uleb(expr, &mut pos)?;
            }
            // implicit_value, entry_value, GNU_entry_value: a sized block.
            0x9e | DW_OP_ENTRY_VALUE | DW_OP_GNU_ENTRY_VALUE => {
                let len = usize::try_from(read_uleb(expr, &mut pos)?).ok()?;
                op.number = len as u64;
                op.block = expr.get(pos..pos.checked_add(len)?)?;
                pos += len;
            }
            // implicit_pointer, GNU_implicit_pointer.
            0xa0 | 0xf2 => {
                op.number = read_fixed(expr, &mut pos, sizes.reference, little)?;
                read_uleb(expr, &mut pos)?;
            }
            // deref_type, GNU_deref_type, xderef_type.
            0xa6 | 0xf6 | 0xa7 => {
                op.number = read_fixed(expr, &mut pos, 1, little)?;
                read_uleb(expr, &mut pos)?;
            }
            // const_type, GNU_const_type.
            0xa4 | 0xf4 => {
                op.number = read_uleb(expr, &mut pos)?;
                let size = read_fixed(expr, &mut pos, 1, little)? as usize;
                expr.get(pos..pos + size)?;
                pos += size;
            }
            _ => return None,
        }
        out.push(op);
    }
    Some(())
}

/// The location facts `parameter__decode_location` gathers for one parameter.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct LocFacts {
    loc_reg: Option<u8>,
    loc_const_value: bool,
    loc_stack: bool,
}

impl LocFacts {
    /// `parameter__set_loc_reg`: only the first register found counts.
    fn set_reg(&mut self, atom: u8) {
        if self.loc_reg.is_none() {
            self.loc_reg = Some(atom - DW_OP_REG0);
        }
    }

    /// One entry of the location list (`loc_num` counts from 0), as the loop body of
    /// `parameter__decode_location`. `aggregate` is `type_byte_size > addr_size &&
    /// agg_use_two_regs`, where `parameter__multi_exprs` walks the pieces.
    fn entry<'e>(
        &mut self,
        ops: &[Op<'e>],
        loc_num: usize,
        aggregate: bool,
        sizes: OpSizes,
        little: bool,
        inner: &mut Vec<Op<'e>>,
    ) {
        if ops.is_empty() {
            return;
        }
        let had_stack_value = ops[ops.len() - 1].atom == DW_OP_STACK_VALUE;
        let len = if ops.len() == 2 && had_stack_value {
            1
        } else {
            ops.len()
        };
        if len != 1 {
            self.multi(ops, loc_num, aggregate);
            return;
        }
        let op = ops[0];
        let first = loc_num == 0;
        match op.atom {
            DW_OP_REG0..=DW_OP_REG31 if first => self.set_reg(op.atom),
            DW_OP_BREG0..=DW_OP_BREG31 if first && had_stack_value => {
                self.set_reg(op.atom - DW_OP_BREG0 + DW_OP_REG0)
            }
            DW_OP_FBREG if first => self.loc_stack = true,
            a if first && is_const(a) => self.loc_const_value = true,
            DW_OP_ENTRY_VALUE | DW_OP_GNU_ENTRY_VALUE
                if parse_ops(op.block, sizes, little, inner).is_some()
                    && inner.len() == 1
                    && is_reg(inner[0].atom) =>
            {
                self.set_reg(inner[0].atom)
            }
            _ => {}
        }
    }

    /// `parameter__multi_exprs` (the `DW_OP_piece` field bitmaps only serve true signatures
    /// and are not kept).
    fn multi(&mut self, ops: &[Op<'_>], loc_num: usize, aggregate: bool) {
        let first = ops[0].atom;
        if is_const(first) {
            if loc_num == 0 {
                self.loc_const_value = true;
            }
            return;
        }
        if !aggregate {
            match first {
                DW_OP_REG0..=DW_OP_REG31 if loc_num == 0 => self.set_reg(first),
                DW_OP_BREG0..=DW_OP_BREG31
                    if loc_num == 0 && ops[1..].iter().any(|o| o.atom == DW_OP_STACK_VALUE) =>
                {
                    self.set_reg(first - DW_OP_BREG0 + DW_OP_REG0)
                }
                _ => {}
            }
            return;
        }
        // Whatever the piece offset, only an unset register is ever recorded, so the first
        // register operation of any entry wins.
        if let Some(op) = ops.iter().find(|o| is_reg(o.atom)) {
            self.set_reg(op.atom);
        }
    }
}

/// Decodes the functions of one CU. `types` must come from [`super::types::decode_cu_types`]
/// on the same CU.
pub fn decode_cu_functions<'a>(
    dwarf: &gimli::Dwarf<R<'a>>,
    cu: &Cu<'a>,
    types: &CuTypes<'a>,
    arch: &Arch,
    features: &Features,
) -> Result<Vec<FunctionInfo<'a>>, DecodeError> {
    let encoding = cu.header.encoding();
    let mut d = Decoder {
        dwarf,
        cu,
        types,
        arch,
        features,
        addr_size: u32::from(cu.header.address_size()),
        sizes: OpSizes {
            addr: usize::from(encoding.address_size),
            reference: if encoding.version == 2 {
                usize::from(encoding.address_size)
            } else {
                usize::from(encoding.format.word_size())
            },
        },
        funcs: Vec::with_capacity(types.subprograms.len()),
        parms: Vec::new(),
        annots: Vec::new(),
        attrs: Vec::new(),
        ops: Vec::new(),
        parm_index: Vec::new(),
        func_index: Vec::new(),
        packed: Vec::new(),
    };
    for &off in &types.subprograms {
        d.read_function(off)?;
    }
    d.build_indexes();
    d.finish_parms()?;
    d.signatures()?;
    let order = d.table_order();
    d.recode(&order);
    d.resolve(&order)?;
    Ok(d.output(&order))
}

struct Decoder<'a, 'd> {
    dwarf: &'d gimli::Dwarf<R<'a>>,
    cu: &'d Cu<'a>,
    types: &'d CuTypes<'a>,
    arch: &'d Arch,
    features: &'d Features,
    addr_size: u32,
    sizes: OpSizes,
    /// In DIE order.
    funcs: Vec<Func<'a>>,
    parms: Vec<Parm<'a>>,
    annots: Vec<Annot<'a>>,
    attrs: Vec<gimli::Attribute<R<'a>>>,
    ops: Vec<Op<'a>>,
    /// (unit offset, index into `parms`), sorted by offset.
    parm_index: Vec<(u32, u32)>,
    /// (unit offset, index into `funcs`), sorted by offset.
    func_index: Vec<(u32, u32)>,
    /// `class__infer_packed_attributes` memo by small id: 0 unknown, 1 not packed, 2 packed.
    packed: Vec<u8>,
}

/// The attributes read from a parameter DIE.
struct ParmAttrs<'a> {
    name: Option<&'a [u8]>,
    own_type: Option<u32>,
    has_origin_attr: bool,
    origin: Option<u32>,
    loc: Loc<'a>,
    has_const_value: bool,
    gnu_annot: Option<u32>,
}

/// The attributes read from an annotation DIE.
struct AnnotAttrs<'a> {
    name: Option<&'a [u8]>,
    value: &'a [u8],
    next: Option<u32>,
}

impl<'a, 'd> Decoder<'a, 'd> {
    fn err(&self, off: u32, reason: impl Into<String>) -> DecodeError {
        DecodeError {
            die_offset: self.cu.die_offset(UnitOffset(off as usize)),
            reason: reason.into(),
        }
    }

    fn gimli_err(&self, off: u32) -> impl Fn(gimli::Error) -> DecodeError {
        let die_offset = self.cu.die_offset(UnitOffset(off as usize));
        move |e| DecodeError {
            die_offset,
            reason: format!("reading a subprogram: {e}"),
        }
    }

    /// A DIE reference inside this CU; cross-CU and type-unit references are errors, other
    /// forms resolve to nothing (pahole's failed `dwarf_formref_die`).
    fn unit_ref(
        &self,
        v: AttributeValue<R<'a>>,
        off: u32,
        what: &str,
    ) -> Result<Option<u32>, DecodeError> {
        match v {
            AttributeValue::UnitRef(UnitOffset(o)) => Ok(u32::try_from(o).ok()),
            AttributeValue::DebugInfoRef(o) if self.cu.range().contains(&o.0) => {
                Ok(u32::try_from(o.0 - self.cu.offset).ok())
            }
            AttributeValue::DebugInfoRef(_) => Err(self.err(
                off,
                format!(
                    "{what}: cross-CU references (DW_FORM_ref_addr, LTO builds) are not supported"
                ),
            )),
            AttributeValue::DebugTypesRef(_) => Err(self.err(
                off,
                format!("{what}: type-unit references (DW_FORM_ref_sig8) are not supported"),
            )),
            _ => Ok(None),
        }
    }

    fn string(&self, v: AttributeValue<R<'a>>) -> Option<&'a [u8]> {
        self.cu.string(self.dwarf, v).ok()
    }

    /// Reads one subprogram and its direct children.
    fn read_function(&mut self, off: u32) -> Result<(), DecodeError> {
        let cu = self.cu;
        let e = self.gimli_err(off);
        let mut raw = cu
            .header
            .entries_raw(&cu.abbrevs, Some(UnitOffset(off as usize)))
            .map_err(&e)?;
        let Some(abbrev) = raw.read_abbreviation().map_err(&e)? else {
            return Err(self.err(off, "expected a DW_TAG_subprogram, found a null entry"));
        };
        if abbrev.tag() != gimli::DW_TAG_subprogram {
            return Err(self.err(
                off,
                format!("expected a DW_TAG_subprogram, found {}", abbrev.tag()),
            ));
        }
        let mut attrs = std::mem::take(&mut self.attrs);
        raw.read_attributes(abbrev.attributes(), &mut attrs)
            .map_err(&e)?;
        let mut f = Func {
            die: off,
            end: 0,
            name: None,
            declaration: false,
            external: false,
            inlined: false,
            has_origin_attr: false,
            origin: None,
            spec: None,
            addr: 0,
            ret_type: None,
            ret: 0,
            cc_nocall: false,
            unspec: false,
            parms: 0..0,
            annots: 0..0,
            reordered_parm: false,
            signature_changed: false,
            optimized_parms: false,
            unexpected_reg: false,
        };
        let mut gnu_annot = None;
        for attr in &attrs {
            match attr.name() {
                gimli::DW_AT_name => f.name = self.string(attr.raw_value()),
                gimli::DW_AT_declaration => f.declaration = true,
                gimli::DW_AT_external => f.external = true,
                gimli::DW_AT_inline => f.inlined = numeric(attr.raw_value()) != 0,
                gimli::DW_AT_abstract_origin => {
                    f.has_origin_attr = true;
                    f.origin = self.unit_ref(attr.raw_value(), off, "DW_AT_abstract_origin")?;
                }
                gimli::DW_AT_specification => {
                    f.spec = self.unit_ref(attr.raw_value(), off, "DW_AT_specification")?
                }
                gimli::DW_AT_low_pc => f.addr = self.address(attr.raw_value()),
                gimli::DW_AT_type => {
                    f.ret_type = self.unit_ref(attr.raw_value(), off, "DW_AT_type")?
                }
                gimli::DW_AT_calling_convention => {
                    f.cc_nocall = numeric(attr.raw_value()) == DW_CC_NOCALL
                }
                DW_AT_GNU_ANNOTATION => {
                    gnu_annot = self.unit_ref(attr.raw_value(), off, "DW_AT_GNU_annotation")?
                }
                _ => {}
            }
        }
        self.attrs = attrs;
        let parms_start = self.parms.len() as u32;
        let annots_start = self.annots.len() as u32;
        if abbrev.has_children() {
            self.read_children(&mut raw, &mut f)?;
        }
        if self.features.decl_tag {
            self.gnu_chain(gnu_annot, -1, off)?;
        }
        f.end = raw.next_offset().0 as u32;
        f.parms = parms_start..self.parms.len() as u32;
        f.annots = annots_start..self.annots.len() as u32;
        self.funcs.push(f);
        Ok(())
    }

    /// `die__process_function` for the direct children of a subprogram.
    fn read_children(
        &mut self,
        raw: &mut EntriesRaw<'d, R<'a>>,
        f: &mut Func<'a>,
    ) -> Result<(), DecodeError> {
        let mut param_idx: u8 = 0;
        loop {
            let child = raw.next_offset().0 as u32;
            let e = self.gimli_err(child);
            let Some(abbrev) = raw.read_abbreviation().map_err(&e)? else {
                return Ok(());
            };
            match abbrev.tag() {
                gimli::DW_TAG_formal_parameter => {
                    let pa = self.read_parm_attrs(raw, abbrev, child)?;
                    let idx = param_idx;
                    param_idx = param_idx.wrapping_add(1);
                    if abbrev.has_children() {
                        self.read_annotation_children(raw, i32::from(idx))?;
                    }
                    if self.features.decl_tag {
                        self.gnu_chain(pa.gnu_annot, i32::from(idx), child)?;
                    }
                    self.parms.push(Parm {
                        die: child,
                        name: pa.name,
                        idx,
                        own_type: pa.own_type,
                        has_origin_attr: pa.has_origin_attr,
                        origin: pa.origin,
                        loc: pa.loc,
                        ty: pa.own_type.map_or(0, |t| self.types.type_id_of(t)),
                        type_byte_size: 0,
                        passed_in_memory: false,
                        loc_reg: UNKNOWN_REG,
                        has_loc: !matches!(pa.loc, Loc::None),
                        has_const_value: pa.has_const_value,
                        loc_const_value: false,
                        loc_stack: false,
                        optimized: false,
                        unexpected_reg: false,
                    });
                }
                gimli::DW_TAG_unspecified_parameters => {
                    f.unspec = true;
                    self.skip_entry(raw, abbrev, child)?;
                }
                DW_TAG_LLVM_ANNOTATION | DW_TAG_GNU_ANNOTATION if self.features.decl_tag => {
                    let a = self.read_annot_attrs(raw, abbrev, child)?;
                    self.add_annotation(&a, -1);
                    if abbrev.has_children() {
                        self.skip_children(raw, child)?;
                    }
                }
                _ => self.skip_entry(raw, abbrev, child)?,
            }
        }
    }

    fn read_parm_attrs(
        &mut self,
        raw: &mut EntriesRaw<'d, R<'a>>,
        abbrev: &gimli::Abbreviation,
        off: u32,
    ) -> Result<ParmAttrs<'a>, DecodeError> {
        self.with_attrs(|this, attrs| {
            raw.read_attributes(abbrev.attributes(), attrs)
                .map_err(this.gimli_err(off))?;
            let mut pa = ParmAttrs {
                name: None,
                own_type: None,
                has_origin_attr: false,
                origin: None,
                loc: Loc::None,
                has_const_value: false,
                gnu_annot: None,
            };
            for attr in attrs.iter() {
                match attr.name() {
                    gimli::DW_AT_name => pa.name = this.string(attr.raw_value()),
                    gimli::DW_AT_type => {
                        pa.own_type = this.unit_ref(attr.raw_value(), off, "DW_AT_type")?
                    }
                    gimli::DW_AT_abstract_origin => {
                        pa.has_origin_attr = true;
                        pa.origin =
                            this.unit_ref(attr.raw_value(), off, "DW_AT_abstract_origin")?;
                    }
                    gimli::DW_AT_location => pa.loc = this.location(attr.raw_value()),
                    gimli::DW_AT_const_value => pa.has_const_value = true,
                    DW_AT_GNU_ANNOTATION => {
                        pa.gnu_annot =
                            this.unit_ref(attr.raw_value(), off, "DW_AT_GNU_annotation")?
                    }
                    _ => {}
                }
            }
            Ok(pa)
        })
    }

    /// Classifies a `DW_AT_location` value the way libdw's `dwarf_getlocations` would.
    fn location(&self, v: AttributeValue<R<'a>>) -> Loc<'a> {
        let version = self.cu.header.version();
        match v {
            AttributeValue::Exprloc(e) => Loc::Expr(e.0.slice()),
            AttributeValue::Block(b) if version < 4 => Loc::Expr(b.slice()),
            AttributeValue::SecOffset(o) => Loc::List(o),
            AttributeValue::Data4(o) if version < 4 => Loc::List(o as usize),
            AttributeValue::Data8(o) if version < 4 => {
                usize::try_from(o).map_or(Loc::Unreadable, Loc::List)
            }
            AttributeValue::DebugLocListsIndex(i) => self
                .dwarf
                .locations
                .get_offset(self.cu.header.encoding(), self.cu.loclists_base, i)
                .map_or(Loc::Unreadable, |o| Loc::List(o.0)),
            _ => Loc::Unreadable,
        }
    }

    /// `dwarf_lowpc`: an address, or an index into `.debug_addr`; 0 when it cannot be read.
    fn address(&self, v: AttributeValue<R<'a>>) -> u64 {
        match v {
            AttributeValue::Addr(a) => a,
            AttributeValue::DebugAddrIndex(i) => self
                .dwarf
                .debug_addr
                .get_address(self.cu.header.address_size(), self.cu.addr_base, i)
                .unwrap_or(0),
            _ => 0,
        }
    }

    fn read_annot_attrs(
        &mut self,
        raw: &mut EntriesRaw<'d, R<'a>>,
        abbrev: &gimli::Abbreviation,
        off: u32,
    ) -> Result<AnnotAttrs<'a>, DecodeError> {
        self.with_attrs(|this, attrs| {
            raw.read_attributes(abbrev.attributes(), attrs)
                .map_err(this.gimli_err(off))?;
            this.annot_attrs(attrs, off)
        })
    }

    fn annot_attrs(
        &self,
        attrs: &[gimli::Attribute<R<'a>>],
        off: u32,
    ) -> Result<AnnotAttrs<'a>, DecodeError> {
        let mut a = AnnotAttrs {
            name: None,
            value: b"",
            next: None,
        };
        for attr in attrs {
            match attr.name() {
                gimli::DW_AT_name => a.name = self.string(attr.raw_value()),
                gimli::DW_AT_const_value => a.value = self.string(attr.raw_value()).unwrap_or(b""),
                DW_AT_GNU_ANNOTATION => {
                    a.next = self.unit_ref(attr.raw_value(), off, "DW_AT_GNU_annotation")?
                }
                _ => {}
            }
        }
        Ok(a)
    }

    /// `add_tag_annotation`: only `btf_decl_tag` annotations are kept.
    fn add_annotation(&mut self, a: &AnnotAttrs<'a>, component: i32) {
        if a.name == Some(b"btf_decl_tag".as_slice()) {
            self.annots.push(Annot {
                value: a.value,
                component,
            });
        }
    }

    /// `add_child_llvm_annotations` of a parameter: its annotation children, in order.
    fn read_annotation_children(
        &mut self,
        raw: &mut EntriesRaw<'d, R<'a>>,
        component: i32,
    ) -> Result<(), DecodeError> {
        loop {
            let child = raw.next_offset().0 as u32;
            let Some(abbrev) = raw.read_abbreviation().map_err(self.gimli_err(child))? else {
                return Ok(());
            };
            let tag = abbrev.tag();
            if self.features.decl_tag
                && (tag == DW_TAG_LLVM_ANNOTATION || tag == DW_TAG_GNU_ANNOTATION)
            {
                let a = self.read_annot_attrs(raw, abbrev, child)?;
                self.add_annotation(&a, component);
                if abbrev.has_children() {
                    self.skip_children(raw, child)?;
                }
            } else {
                self.skip_entry(raw, abbrev, child)?;
            }
        }
    }

    /// `add_gnu_annotation_chain`: follows `DW_AT_GNU_annotation` through
    /// `DW_TAG_GNU_annotation` DIEs.
    fn gnu_chain(
        &mut self,
        mut next: Option<u32>,
        component: i32,
        off: u32,
    ) -> Result<(), DecodeError> {
        let mut hops = 0;
        while let Some(at) = next {
            hops += 1;
            if hops > 1024 {
                return Err(self.err(off, "DW_AT_GNU_annotation chain does not end"));
            }
            let a = self.with_attrs(|this, attrs| match this.read_die(at, attrs)? {
                Some(DW_TAG_GNU_ANNOTATION) => this.annot_attrs(attrs, at).map(Some),
                _ => Ok(None),
            })?;
            let Some(a) = a else {
                return Ok(());
            };
            self.add_annotation(&a, component);
            next = a.next;
        }
        Ok(())
    }

    /// Reads the attributes of the DIE at `off` into `attrs`; its tag, `None` for a null entry.
    /// Runs `f` with the reusable attribute buffer, taken out of `self` for the call and put
    /// back afterwards, whatever `f` returns.
    fn with_attrs<T>(
        &mut self,
        f: impl FnOnce(&Self, &mut Vec<gimli::Attribute<R<'a>>>) -> T,
    ) -> T {
        let mut attrs = std::mem::take(&mut self.attrs);
        let r = f(self, &mut attrs);
        self.attrs = attrs;
        r
    }

    fn read_die(
        &self,
        off: u32,
        attrs: &mut Vec<gimli::Attribute<R<'a>>>,
    ) -> Result<Option<DwTag>, DecodeError> {
        let cu = self.cu;
        let e = self.gimli_err(off);
        let mut raw = cu
            .header
            .entries_raw(&cu.abbrevs, Some(UnitOffset(off as usize)))
            .map_err(&e)?;
        let Some(abbrev) = raw.read_abbreviation().map_err(&e)? else {
            attrs.clear();
            return Ok(None);
        };
        raw.read_attributes(abbrev.attributes(), attrs)
            .map_err(&e)?;
        Ok(Some(abbrev.tag()))
    }

    /// Skips a DIE whose abbreviation has been read: its attributes and its subtree.
    fn skip_entry(
        &mut self,
        raw: &mut EntriesRaw<'d, R<'a>>,
        abbrev: &gimli::Abbreviation,
        off: u32,
    ) -> Result<(), DecodeError> {
        if !abbrev.has_children() {
            return raw
                .skip_attributes(abbrev.attributes())
                .map_err(self.gimli_err(off));
        }
        if self.jump_to_sibling(raw, abbrev, off)? {
            return Ok(());
        }
        self.skip_children(raw, off)
    }

    /// For a DIE with children whose abbreviation has just been read: reads its attributes
    /// and, when it has a usable `DW_AT_sibling` (GCC), moves `raw` there. Without one, the
    /// attributes are skipped and `raw` is left at the first child.
    fn jump_to_sibling(
        &mut self,
        raw: &mut EntriesRaw<'d, R<'a>>,
        abbrev: &gimli::Abbreviation,
        off: u32,
    ) -> Result<bool, DecodeError> {
        let e = self.gimli_err(off);
        if !abbrev
            .attributes()
            .iter()
            .any(|s| s.name() == gimli::DW_AT_sibling)
        {
            raw.skip_attributes(abbrev.attributes()).map_err(&e)?;
            return Ok(false);
        }
        let mut sibling = None;
        for spec in abbrev.attributes() {
            let attr = raw.read_attribute(*spec).map_err(&e)?;
            if attr.name() == gimli::DW_AT_sibling {
                if let AttributeValue::UnitRef(o) = attr.raw_value() {
                    sibling = Some(o);
                }
            }
        }
        match sibling {
            Some(o) if o.0 > raw.next_offset().0 => {
                let cu = self.cu;
                if let Ok(r) = cu.header.entries_raw(&cu.abbrevs, Some(o)) {
                    *raw = r;
                    return Ok(true);
                }
                Ok(false)
            }
            _ => Ok(false),
        }
    }

    /// With `raw` at the first child of a DIE: moves it past the null entry that ends the
    /// children, jumping over subtrees with `DW_AT_sibling` where there is one.
    fn skip_children(
        &mut self,
        raw: &mut EntriesRaw<'d, R<'a>>,
        off: u32,
    ) -> Result<(), DecodeError> {
        let mut depth = 1usize;
        while depth > 0 {
            let at = raw.next_offset().0 as u32;
            let Some(abbrev) = raw.read_abbreviation().map_err(self.gimli_err(off))? else {
                depth -= 1;
                continue;
            };
            if !abbrev.has_children() {
                raw.skip_attributes(abbrev.attributes())
                    .map_err(self.gimli_err(at))?;
            } else if !self.jump_to_sibling(raw, abbrev, at)? {
                depth += 1;
            }
        }
        Ok(())
    }

    fn build_indexes(&mut self) {
        self.func_index = self
            .funcs
            .iter()
            .enumerate()
            .map(|(i, f)| (f.die, i as u32))
            .collect();
        self.func_index.sort_unstable();
        self.parm_index = self
            .parms
            .iter()
            .enumerate()
            .map(|(i, p)| (p.die, i as u32))
            .collect();
        self.parm_index.sort_unstable();
    }

    fn func_at(&self, off: u32) -> Option<usize> {
        self.func_index
            .binary_search_by_key(&off, |&(o, _)| o)
            .ok()
            .map(|i| self.func_index[i].1 as usize)
    }

    fn parm_at(&self, off: u32) -> Option<usize> {
        self.parm_index
            .binary_search_by_key(&off, |&(o, _)| o)
            .ok()
            .map(|i| self.parm_index[i].1 as usize)
    }

    fn entry(&self, id: u32) -> Option<&Entry<'a>> {
        id.checked_sub(1)
            .and_then(|i| self.types.entries.get(i as usize))
    }

    /// `__get_type_byte_size` on the type DIE at `type_off`: a pointer is `addr_size`, a DIE
    /// with `DW_AT_byte_size` has that size, anything else is looked through.
    fn type_byte_size(&self, type_off: u32) -> i32 {
        let mut id = self.types.type_id_of(type_off);
        for _ in 0..MAX_CHAIN {
            let Some(e) = self.entry(id) else {
                return 0;
            };
            match *e {
                Entry::Modifier {
                    kind: Kind::Ptr, ..
                } => return self.addr_size as i32,
                Entry::Base { byte_size, .. } | Entry::Enum { byte_size, .. } => {
                    return byte_size as i32
                }
                Entry::Composite { size, .. } => return size as i32,
                Entry::Modifier { ty, .. }
                | Entry::Typedef { ty, .. }
                | Entry::TypeTag { ty, .. } => id = ty,
                Entry::Array { elem, .. } => id = elem,
                Entry::FuncProto { ret, .. } => id = ret,
                Entry::Unsupported { .. } => return 0,
            }
        }
        0
    }

    /// The `DW_AT_type` (unit offset) of the DIE at `off`.
    fn die_type(&mut self, off: u32) -> Result<Option<u32>, DecodeError> {
        if let Some(i) = self.parm_at(off) {
            return Ok(self.parms[i].own_type);
        }
        self.with_attrs(|this, attrs| {
            this.read_die(off, attrs)?;
            let mut ty = None;
            for a in attrs.iter() {
                if a.name() == gimli::DW_AT_type {
                    ty = this.unit_ref(a.raw_value(), off, "DW_AT_type")?;
                }
            }
            Ok(ty)
        })
    }

    /// Type sizes and locations of every parameter (`parameter__new`, second half: the
    /// origin's type must be known first).
    fn finish_parms(&mut self) -> Result<(), DecodeError> {
        let two = self.arch.agg_use_two_regs;
        let addr_size = self.addr_size as i32;
        let mut ops = std::mem::take(&mut self.ops);
        let mut inner = Vec::new();
        for i in 0..self.parms.len() {
            let p = &self.parms[i];
            let type_off = if p.has_origin_attr {
                match p.origin {
                    Some(o) => self.die_type(o)?,
                    None => None,
                }
            } else {
                p.own_type
            };
            let tbs = type_off.map_or(0, |t| self.type_byte_size(t));
            let aggregate = two && tbs > addr_size;
            let facts = self.decode_location(self.parms[i].loc, aggregate, &mut ops, &mut inner);
            let p = &mut self.parms[i];
            p.type_byte_size = tbs;
            p.passed_in_memory = tbs > if two { 2 * addr_size } else { addr_size };
            p.loc_reg = facts.loc_reg.map_or(UNKNOWN_REG, i32::from);
            p.loc_const_value = facts.loc_const_value;
            p.loc_stack = facts.loc_stack;
        }
        self.ops = ops;
        Ok(())
    }

    /// `parameter__decode_location`: walks the location entries as `dwarf_getlocations`
    /// returns them.
    fn decode_location(
        &self,
        loc: Loc<'a>,
        aggregate: bool,
        ops: &mut Vec<Op<'a>>,
        inner: &mut Vec<Op<'a>>,
    ) -> LocFacts {
        let mut facts = LocFacts::default();
        let (sizes, little) = (self.sizes, self.cu.little_endian);
        match loc {
            Loc::None | Loc::Unreadable => {}
            Loc::Expr(bytes) => {
                if parse_ops(bytes, sizes, little, ops).is_some() {
                    facts.entry(ops, 0, aggregate, sizes, little, inner);
                }
            }
            Loc::List(offset) => {
                let encoding = self.cu.header.encoding();
                let Ok(mut iter) = self
                    .dwarf
                    .locations
                    .raw_locations(gimli::LocationListsOffset(offset), encoding)
                else {
                    return facts;
                };
                let addrx_ok = |i: gimli::DebugAddrIndex<usize>| {
                    self.dwarf
                        .debug_addr
                        .get_address(encoding.address_size, self.cu.addr_base, i)
                        .is_ok()
                };
                let mut loc_num = 0;
                // An entry libdw cannot read ends its walk, as does the end of the list.
                while let Ok(Some(entry)) = iter.next() {
                    use gimli::RawLocListEntry as E;
                    let data = match entry {
                        E::BaseAddress { .. } => continue,
                        E::BaseAddressx { addr } => {
                            if addrx_ok(addr) {
                                continue;
                            }
                            break;
                        }
                        E::StartxEndx { begin, end, data } => {
                            if !(addrx_ok(begin) && addrx_ok(end)) {
                                break;
                            }
                            data
                        }
                        E::StartxLength { begin, data, .. } => {
                            if !addrx_ok(begin) {
                                break;
                            }
                            data
                        }
                        E::AddressOrOffsetPair { data, .. }
                        | E::OffsetPair { data, .. }
                        | E::DefaultLocation { data }
                        | E::StartEnd { data, .. }
                        | E::StartLength { data, .. } => data,
                    };
                    if parse_ops(data.0.slice(), sizes, little, ops).is_none() {
                        break;
                    }
                    facts.entry(ops, loc_num, aggregate, sizes, little, inner);
                    loc_num += 1;
                }
            }
        }
        facts
    }

    /// `function__signature_changed`, for clang CUs.
    fn signatures(&mut self) -> Result<(), DecodeError> {
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
    fn table_order(&self) -> Vec<u32> {
        let mut order: Vec<u32> = (0..self.funcs.len() as u32).collect();
        order.sort_by_key(|&i| self.funcs[i as usize].end);
        order
    }

    /// `tag__recode_dwarf_type` on the functions table: names from origins/specifications,
    /// parameter names/types from origin parameters, location facts shared back to them.
    fn recode(&mut self, order: &[u32]) {
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
                if p.has_loc {
                    o.has_loc = true;
                }
                if p.has_const_value {
                    o.has_const_value = true;
                }
                if p.loc_const_value {
                    o.loc_const_value = true;
                }
                if p.loc_stack {
                    o.loc_stack = true;
                }
                if p.loc_reg != UNKNOWN_REG {
                    o.loc_reg = p.loc_reg;
                }
                if p.type_byte_size != 0 {
                    o.type_byte_size = p.type_byte_size;
                }
                if p.passed_in_memory {
                    o.passed_in_memory = true;
                }
                if p.optimized {
                    o.optimized = true;
                }
                if p.unexpected_reg {
                    o.unexpected_reg = true;
                }
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
    fn resolve(&mut self, order: &[u32]) -> Result<(), DecodeError> {
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

    /// `function__analyze_parameter_locations` (true signatures off).
    fn analyze(&mut self, fi: usize) {
        let f = &self.funcs[fi];
        let range = f.parms.start as usize..f.parms.end as usize;
        let clang = self.cu.producer_clang;
        let check_locations = !clang || f.signature_changed;
        let arch = self.arch;
        let nr = arch.nr_register_params;
        let addr_size = self.addr_size as i32;
        let slots_of = |p: &Parm<'_>| -> usize {
            if !arch.agg_use_two_regs || p.type_byte_size <= addr_size {
                1
            } else {
                p.type_byte_size
                    .saturating_add(addr_size - 1)
                    .checked_div(addr_size)
                    .unwrap_or(1)
                    .max(1) as usize
            }
        };
        let mut reg_idx = 0usize;
        if !check_locations {
            // function__match_clang_parameter_locations.
            for p in &mut self.parms[range] {
                let slots = slots_of(p);
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
            return;
        }
        for p in &mut self.parms[range] {
            let regs_available = reg_idx < nr;
            let slots = slots_of(p);
            let expected_reg = if regs_available {
                arch.reg(reg_idx)
            } else {
                UNKNOWN_REG
            };
            let reg_slots = if p.passed_in_memory { 1 } else { slots };
            let mut consumes_register = true;
            if p.has_loc {
                if !regs_available {
                    consumes_register = false;
                } else if p.loc_reg == UNKNOWN_REG {
                    p.optimized = true;
                } else if expected_reg >= 0 && expected_reg != p.loc_reg {
                    p.unexpected_reg = true;
                }
            } else if p.has_const_value && !clang {
                p.optimized = true;
            }
            if consumes_register {
                reg_idx += reg_slots;
            }
        }
    }

    /// The results, in table order, with the `btf_encoder.c` parts applied.
    fn output(&mut self, order: &[u32]) -> Vec<FunctionInfo<'a>> {
        let mut out = Vec::with_capacity(order.len());
        for &fi in order {
            let f = &self.funcs[fi as usize];
            let parms = &self.parms[f.parms.start as usize..f.parms.end as usize];
            let has_arg_names = parms.iter().all(|p| p.name.is_some());
            let uncertain = !f.declaration && has_arg_names && self.uncertain_arg_loc(fi as usize);
            let f = &self.funcs[fi as usize];
            let parms = &self.parms[f.parms.start as usize..f.parms.end as usize];
            let mut params = Vec::with_capacity(parms.len() + usize::from(f.unspec));
            for p in parms {
                if f.reordered_parm && (!p.has_loc || p.optimized) {
                    continue;
                }
                params.push(Param {
                    name: p.name.unwrap_or(b""),
                    ty: p.ty,
                });
            }
            if f.unspec {
                params.push(Param { name: b"", ty: 0 });
            }
            out.push(FunctionInfo {
                die: f.die,
                name: f.name.unwrap_or(b""),
                declaration: f.declaration,
                external: f.external,
                addr: f.addr,
                ret: f.ret,
                params,
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
            if named_struct && self.layout().infer_packed(ty) {
                return true;
            }
        }
        false
    }

    fn layout(&mut self) -> Layout<'_, 'a> {
        if self.packed.len() != self.types.entries.len() + 1 {
            self.packed = vec![0; self.types.entries.len() + 1];
        }
        Layout {
            types: self.types,
            addr_size: u64::from(self.addr_size),
            packed: &mut self.packed,
        }
    }
}

/// A struct member laid out as pahole's `class_member__cache_byte_size` leaves it.
#[derive(Clone, Copy, Debug)]
struct MemberLayout {
    ty: u32,
    bit_offset: u32,
    byte_offset: u32,
    byte_size: u64,
    bit_size: u32,
    bitfield_size: u8,
}

/// The size and alignment rules of `dwarves.c` on a CU's types table, for
/// `class__infer_packed_attributes`.
struct Layout<'l, 'a> {
    types: &'l CuTypes<'a>,
    addr_size: u64,
    /// 0 unknown, 1 not packed, 2 packed (`packed_attributes_inferred` + `is_packed`).
    packed: &'l mut Vec<u8>,
}

impl<'a> Layout<'_, 'a> {
    fn entry(&self, id: u32) -> Option<&Entry<'a>> {
        id.checked_sub(1)
            .and_then(|i| self.types.entries.get(i as usize))
    }

    /// `tag__strip_typedefs_and_modifiers` (0: void).
    fn strip(&self, mut id: u32) -> u32 {
        for _ in 0..MAX_CHAIN {
            match self.entry(id) {
                Some(Entry::Typedef { ty, .. }) => id = *ty,
                Some(Entry::Modifier { kind, ty }) if *kind != Kind::Ptr => id = *ty,
                _ => return id,
            }
        }
        id
    }

    /// `tag__size`.
    fn size(&self, mut id: u32) -> u64 {
        let mut mult = 1u64;
        for _ in 0..MAX_CHAIN {
            let Some(e) = self.entry(id) else {
                return 0;
            };
            let size = match *e {
                Entry::Modifier {
                    kind: Kind::Ptr, ..
                } => self.addr_size,
                Entry::Base { byte_size, .. } | Entry::Enum { byte_size, .. } => {
                    u64::from(byte_size)
                }
                Entry::FuncProto { .. } => self.addr_size,
                Entry::Composite {
                    size, ref members, ..
                } => {
                    if size == 1 && members.is_empty() {
                        0
                    } else {
                        u64::from(size)
                    }
                }
                Entry::Array { elem, nelems } => {
                    mult = mult.wrapping_mul(u64::from(nelems));
                    id = elem;
                    continue;
                }
                Entry::Modifier { ty, .. }
                | Entry::Typedef { ty, .. }
                | Entry::TypeTag { ty, .. } => {
                    id = ty;
                    continue;
                }
                Entry::Unsupported { .. } => 0,
            };
            return size.wrapping_mul(mult);
        }
        0
    }

    /// `tag__natural_alignment`.
    fn natural_alignment(&self, id: u32, depth: usize) -> u64 {
        let a = match self.entry(id) {
            None => 1,
            Some(Entry::Modifier {
                kind: Kind::Ptr, ..
            }) => self.addr_size,
            Some(Entry::Base { byte_size, .. }) | Some(Entry::Enum { byte_size, .. }) => {
                u64::from(*byte_size)
            }
            Some(Entry::Composite { members, .. }) => {
                let mut max = 0;
                if depth < MAX_CHAIN {
                    for m in &self.types.members[members.start as usize..members.end as usize] {
                        if m.bit_offset == u32::MAX {
                            continue;
                        }
                        let mt = self.strip(m.ty);
                        if mt == 0 {
                            continue;
                        }
                        max = max.max(self.natural_alignment(mt, depth + 1));
                    }
                }
                max
            }
            Some(Entry::Array { elem, .. }) => {
                let t = self.strip(*elem);
                if t == 0 || depth >= MAX_CHAIN {
                    1
                } else {
                    self.natural_alignment(t, depth + 1)
                }
            }
            Some(_) => 1,
        };
        if a == 0 {
            1
        } else {
            a
        }
    }

    /// The non-static members of struct `id`, laid out.
    fn members(&self, id: u32) -> (u32, Vec<MemberLayout>) {
        let Some(Entry::Composite { size, members, .. }) = self.entry(id) else {
            return (0, Vec::new());
        };
        let mut out = Vec::with_capacity(members.len());
        for m in &self.types.members[members.start as usize..members.end as usize] {
            if m.bit_offset == u32::MAX {
                continue;
            }
            let bitfield_size = m.bitfield_size as u8;
            let (byte_size, byte_offset) = if bitfield_size == 0 {
                (self.size(m.ty), m.bit_offset / 8)
            } else {
                let storage = self.size(self.strip(m.ty));
                let bit_size = storage.wrapping_mul(8) as u32;
                let byte_offset = match m.bit_offset.checked_div(bit_size) {
                    Some(units) => units * bit_size / 8,
                    None => m.bit_offset / 8,
                };
                (storage, byte_offset)
            };
            out.push(MemberLayout {
                ty: m.ty,
                bit_offset: m.bit_offset,
                byte_offset,
                byte_size,
                bit_size: byte_size.wrapping_mul(8) as u32,
                bitfield_size,
            });
        }
        (*size, out)
    }

    /// `class__find_holes`, reduced to what the packed inference reads: the number of byte
    /// holes (`uint8_t`) and the tail padding (`uint16_t`).
    fn holes(size: u32, members: &[MemberLayout]) -> (u8, u16) {
        let mut cur_bitfield_end = size.wrapping_mul(8);
        let mut cur_bitfield_size = 0u32;
        let mut last_seen_bit = 0u32;
        let mut in_bitfield = false;
        let mut nr_holes = 0u8;
        for m in members {
            let bit_start = m.bit_offset;
            let bit_end = if m.bitfield_size != 0 {
                bit_start.wrapping_add(u32::from(m.bitfield_size))
            } else {
                bit_start.wrapping_add(m.byte_size.wrapping_mul(8) as u32)
            };
            let mut byte_holes = 0i32;
            if in_bitfield {
                last_seen_bit = bit_start.min(cur_bitfield_end);
            }
            if m.bitfield_size != 0 {
                let aligned_start = m.byte_offset.wrapping_mul(8);
                if last_seen_bit < aligned_start && aligned_start <= bit_start {
                    // (pahole then moves last_seen_bit to aligned_start for its bit holes,
                    // which the packed inference does not read.)
                    byte_holes = m.byte_offset.wrapping_sub(last_seen_bit / 8) as i32;
                }
            } else {
                byte_holes = (bit_start / 8).wrapping_sub(last_seen_bit / 8) as i32;
            }
            last_seen_bit = bit_end;
            if m.bitfield_size != 0 {
                in_bitfield = true;
                if bit_end > cur_bitfield_end || m.bit_size > cur_bitfield_size {
                    cur_bitfield_size = m.bit_size;
                    cur_bitfield_end = m
                        .byte_offset
                        .wrapping_mul(8)
                        .wrapping_add(cur_bitfield_size);
                    if bit_end > cur_bitfield_end {
                        cur_bitfield_end = cur_bitfield_end.wrapping_add(cur_bitfield_size);
                    }
                }
            } else {
                in_bitfield = false;
                cur_bitfield_size = 0;
                cur_bitfield_end = bit_end;
            }
            if byte_holes > 0 {
                nr_holes = nr_holes.wrapping_add(1);
            }
        }
        if in_bitfield {
            last_seen_bit = size.wrapping_mul(8).min(cur_bitfield_end);
        }
        (nr_holes, size.wrapping_sub(last_seen_bit / 8) as u16)
    }

    /// `class__infer_packed_attributes` (with `DW_AT_alignment` ignored, as under `-J`).
    fn infer_packed(&mut self, id: u32) -> bool {
        match self.packed.get(id as usize) {
            Some(1) => return false,
            Some(2) => return true,
            Some(_) => {}
            None => return false,
        }
        let (size, members) = self.members(id);
        let (nr_holes, padding) = Self::holes(size, &members);
        let mut packed = false;
        if padding != 0 || nr_holes != 0 {
            // type__check_structs_at_unnatural_alignments: structs embedded at an offset
            // their alignment forbids are marked packed.
            for m in &members {
                let mt = self.strip(m.ty);
                if !matches!(self.entry(mt), Some(Entry::Composite { union: false, .. })) {
                    continue;
                }
                let na = self.natural_alignment(mt, 0);
                if u64::from(m.byte_offset) % na != 0 {
                    if let Some(slot) = self.packed.get_mut(mt as usize) {
                        *slot = 2;
                    }
                }
            }
        } else {
            let mut max_natural_alignment = 1u16;
            for m in &members {
                let na = self.natural_alignment(self.strip(m.ty), 0);
                if na == 1 {
                    continue;
                }
                max_natural_alignment = max_natural_alignment.max(na as u16);
                if u64::from(m.byte_offset) % na != 0 {
                    packed = true;
                    break;
                }
            }
            if !packed && max_natural_alignment != 0 && size % u32::from(max_natural_alignment) != 0
            {
                packed = true;
            }
        }
        if let Some(slot) = self.packed.get_mut(id as usize) {
            *slot = if packed { 2 } else { 1 };
        }
        packed
    }
}

/// pahole's `attr_numeric` for the constant and flag forms.
fn numeric(v: AttributeValue<R<'_>>) -> u64 {
    match v {
        AttributeValue::Data1(x) => u64::from(x),
        AttributeValue::Data2(x) => u64::from(x),
        AttributeValue::Data4(x) => u64::from(x),
        AttributeValue::Data8(x) => x,
        AttributeValue::Udata(x) => x,
        AttributeValue::Sdata(x) => x as u64,
        AttributeValue::Flag(f) => u64::from(f),
        // DW_AT_inline and DW_AT_calling_convention come out of `raw_value` as data forms;
        // these are what `value` would turn them into.
        AttributeValue::Inline(i) => u64::from(i.0),
        AttributeValue::CallingConvention(c) => u64::from(c.0),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dwarf::types::Member;

    const SIZES: OpSizes = OpSizes {
        addr: 8,
        reference: 4,
    };

    fn ops(bytes: &[u8]) -> Vec<Op<'_>> {
        let mut out = Vec::new();
        parse_ops(bytes, SIZES, true, &mut out).expect("valid expression");
        out
    }

    /// Runs `parameter__decode_location` over a list of entries.
    fn facts(entries: &[&[u8]], aggregate: bool) -> LocFacts {
        let mut f = LocFacts::default();
        let mut inner = Vec::new();
        for (loc_num, e) in entries.iter().enumerate() {
            f.entry(&ops(e), loc_num, aggregate, SIZES, true, &mut inner);
        }
        f
    }

    #[test]
    fn parse_ops_reads_operands_like_libdw() {
        let o = ops(&[0x55, 0x75, 0x7f, 0x9f, 0x91, 0x10, 0x11, 0x7e, 0x93, 0x08]);
        let atoms: Vec<(u8, u64)> = o.iter().map(|o| (o.atom, o.number)).collect();
        assert_eq!(
            atoms,
            [
                (0x55, 0),
                (0x75, u64::MAX),
                (0x9f, 0),
                (0x91, 16),
                (0x11, (-2i64) as u64),
                (0x93, 8)
            ]
        );
        // DW_OP_addr takes the address size, DW_OP_const4s sign-extends.
        let o = ops(&[0x03, 1, 0, 0, 0, 0, 0, 0, 0, 0x0d, 0xff, 0xff, 0xff, 0xff]);
        assert_eq!((o[0].number, o[1].number), (1, u64::MAX));
        // DW_OP_entry_value keeps its block.
        let o = ops(&[0xa3, 0x01, 0x54, 0x9f]);
        assert_eq!(
            (o[0].atom, o[0].block, o[1].atom),
            (0xa3, &[0x54u8][..], 0x9f)
        );
        // Opcodes libdw does not know, and truncated operands, fail the whole expression.
        let mut out = Vec::new();
        assert!(parse_ops(&[0x55, 0x01], SIZES, true, &mut out).is_none());
        assert!(parse_ops(&[0xe9], SIZES, true, &mut out).is_none());
        assert!(parse_ops(&[0x0c, 1, 2], SIZES, true, &mut out).is_none());
        assert!(parse_ops(&[0xa3, 0x05, 0x54], SIZES, true, &mut out).is_none());
        assert!(parse_ops(&[0x10, 0x80], SIZES, true, &mut out).is_none());
        // GCC's DW_OP_GNU_parameter_ref (4-byte operand) is known.
        assert_eq!(ops(&[0xfa, 0x93, 0x01, 0, 0, 0x9f]).len(), 2);
        assert!(ops(&[]).is_empty());
    }

    #[test]
    fn registers_count_at_the_first_entry_only() {
        assert_eq!(facts(&[&[0x55]], false).loc_reg, Some(5));
        assert_eq!(
            facts(&[&[0x91, 0x10], &[0x55]], false),
            LocFacts {
                loc_stack: true,
                ..LocFacts::default()
            }
        );
        // DW_OP_regx is not a register for pahole.
        assert_eq!(facts(&[&[0x90, 0x05]], false).loc_reg, None);
        // The first register found wins.
        assert_eq!(facts(&[&[0x58]], false).loc_reg, Some(8));
        // An empty expression still counts as an entry.
        assert_eq!(facts(&[&[], &[0x55]], false).loc_reg, None);
    }

    #[test]
    fn entry_values_count_in_any_entry() {
        // [reg1 ... ), then DW_OP_entry_value(DW_OP_reg5), DW_OP_stack_value.
        let f = facts(&[&[0x91, 0x08], &[0xa3, 0x01, 0x55, 0x9f]], false);
        assert_eq!((f.loc_reg, f.loc_stack), (Some(5), true));
        let f = facts(&[&[0xf3, 0x01, 0x54, 0x9f]], false);
        assert_eq!(f.loc_reg, Some(4));
        // Only a lone register inside the entry value.
        assert_eq!(
            facts(&[&[0xa3, 0x02, 0x75, 0x00, 0x9f]], false).loc_reg,
            None
        );
        // Without the stack value the entry value alone is a single operation too.
        assert_eq!(facts(&[&[0xa3, 0x01, 0x51]], false).loc_reg, Some(1));
    }

    #[test]
    fn stack_values_constants_and_frame_base() {
        // DW_OP_breg5 0, DW_OP_stack_value: the value of rdi.
        assert_eq!(facts(&[&[0x75, 0x00, 0x9f]], false).loc_reg, Some(5));
        // A memory location at rdi is not.
        assert_eq!(facts(&[&[0x75, 0x00]], false).loc_reg, None);
        // ... nor the stack value at a later entry.
        assert_eq!(
            facts(&[&[0x91, 0x00], &[0x75, 0x00, 0x9f]], false).loc_reg,
            None
        );
        // breg with an offset and a stack value (3 operations) still names the register.
        assert_eq!(
            facts(&[&[0x75, 0x01, 0x23, 0x01, 0x9f]], false).loc_reg,
            Some(5)
        );
        assert!(facts(&[&[0x30, 0x9f]], false).loc_const_value);
        assert!(facts(&[&[0x10, 0x2a, 0x9f]], false).loc_const_value);
        assert!(!facts(&[&[0x55], &[0x31, 0x9f]], false).loc_const_value);
        assert!(facts(&[&[0x91, 0x70]], false).loc_stack);
        // Constants first in a multi-operation expression count too.
        assert!(facts(&[&[0x31, 0x93, 0x04, 0x55, 0x93, 0x04]], true).loc_const_value);
    }

    #[test]
    fn pieces_of_aggregates() {
        // A 16-byte struct in rdi:rsi.
        let pieces: &[u8] = &[0x55, 0x93, 0x08, 0x54, 0x93, 0x08];
        assert_eq!(facts(&[pieces], true).loc_reg, Some(5));
        // Its first half optimized out: the register of the second half is taken.
        let second: &[u8] = &[0x93, 0x08, 0x54, 0x93, 0x08];
        assert_eq!(facts(&[second], true).loc_reg, Some(4));
        // Pieces count in any entry for aggregates ...
        assert_eq!(facts(&[&[0x91, 0x00], pieces], true).loc_reg, Some(5));
        // ... but for scalars only the first operation of entry 0 is looked at.
        assert_eq!(facts(&[second], false).loc_reg, None);
        assert_eq!(facts(&[pieces], false).loc_reg, Some(5));
        assert_eq!(facts(&[&[0x91, 0x00], pieces], false).loc_reg, None);
    }

    #[test]
    fn arch_tables() {
        let x86 = Arch::from_elf_machine(62);
        assert_eq!(
            (x86.nr_register_params, x86.regs, x86.agg_use_two_regs),
            (6, &[5u16, 4, 1, 2, 8, 9][..], true)
        );
        assert_eq!(x86.reg(5), 9);
        assert_eq!(x86.reg(6), UNKNOWN_REG);
        let arm64 = Arch::from_elf_machine(183);
        assert_eq!((arm64.nr_register_params, arm64.regs.len()), (8, 8));
        let s390 = Arch::from_elf_machine(22);
        assert_eq!(
            (s390.nr_register_params, s390.regs, s390.agg_use_two_regs),
            (5, &[2u16, 3, 4, 5, 6][..], false)
        );
        let riscv = Arch::from_elf_machine(243);
        assert_eq!((riscv.nr_register_params, riscv.regs.len()), (8, 0));
        assert_eq!(riscv.reg(0), UNKNOWN_REG);
        assert_eq!(Arch::from_elf_machine(3).nr_register_params, 0);
    }

    fn member(ty: u32, bit_offset: u32, bitfield_size: u32) -> Member<'static> {
        Member {
            name: b"m",
            ty,
            bit_offset,
            bitfield_size,
        }
    }

    /// char (1), int (2), then the structs under test.
    fn types_with(structs: &[(u32, Vec<Member<'static>>)]) -> CuTypes<'static> {
        let mut t = CuTypes {
            entries: vec![
                Entry::Base {
                    name: b"char",
                    byte_size: 1,
                    encoding: 6,
                },
                Entry::Base {
                    name: b"int",
                    byte_size: 4,
                    encoding: 5,
                },
            ],
            ..CuTypes::default()
        };
        for (size, members) in structs {
            let start = t.members.len() as u32;
            t.members.extend(members.iter().cloned());
            t.entries.push(Entry::Composite {
                union: false,
                name: b"s",
                size: *size,
                declaration: false,
                members: start..t.members.len() as u32,
                annots: 0..0,
            });
        }
        t
    }

    fn packed(types: &CuTypes<'_>, id: u32) -> bool {
        let mut memo = vec![0; types.entries.len() + 1];
        Layout {
            types,
            addr_size: 8,
            packed: &mut memo,
        }
        .infer_packed(id)
    }

    #[test]
    fn packed_inference() {
        let t = types_with(&[
            // 3: struct { char a; int b; } __packed (size 5, b at 1).
            (5, vec![member(1, 0, 0), member(2, 8, 0)]),
            // 4: struct { char a; int b; } (size 8, a hole after a).
            (8, vec![member(1, 0, 0), member(2, 32, 0)]),
            // 5: struct { int b; char a; } __packed (size 5: no hole, size not aligned).
            (5, vec![member(2, 0, 0), member(1, 32, 0)]),
            // 6: struct { char a, b; } (alignment 1: never packed).
            (2, vec![member(1, 0, 0), member(1, 8, 0)]),
            // 7: struct { int x:3; int y:5; } (size 4).
            (4, vec![member(2, 0, 3), member(2, 3, 5)]),
        ]);
        assert!(packed(&t, 3));
        assert!(!packed(&t, 4));
        assert!(packed(&t, 5));
        assert!(!packed(&t, 6));
        assert!(!packed(&t, 7));
        let m = |id| {
            let mut memo = Vec::new();
            Layout {
                types: &t,
                addr_size: 8,
                packed: &mut memo,
            }
            .members(id)
        };
        let (size, members) = m(4);
        assert_eq!(Layout::holes(size, &members), (1, 0));
        let (size, members) = m(7);
        assert_eq!(Layout::holes(size, &members), (0, 0));
    }

    #[test]
    fn embedded_struct_at_an_unnatural_offset_is_marked_packed() {
        let mut t = types_with(&[
            // 3: struct { int b; } (not packed by itself).
            (4, vec![member(2, 0, 0)]),
        ]);
        // 4: struct { char a; struct s3 s; char pad[3]; } with s at offset 1, and a hole
        // before `pad` so the outer struct is "not packed" and checks its members.
        let start = t.members.len() as u32;
        t.members
            .extend([member(1, 0, 0), member(3, 8, 0), member(1, 64, 0)]);
        t.entries.push(Entry::Composite {
            union: false,
            name: b"outer",
            size: 12,
            declaration: false,
            members: start..t.members.len() as u32,
            annots: 0..0,
        });
        let mut memo = vec![0; t.entries.len() + 1];
        let mut l = Layout {
            types: &t,
            addr_size: 8,
            packed: &mut memo,
        };
        assert!(!l.infer_packed(4));
        assert!(l.infer_packed(3), "marked by the outer struct's check");
        let mut fresh = vec![0; t.entries.len() + 1];
        let mut l = Layout {
            types: &t,
            addr_size: 8,
            packed: &mut fresh,
        };
        assert!(!l.infer_packed(3));
    }
}
