//! DIE → function model: everything pahole 1.32 knows about each
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
//! The facts are gathered in four places, one concept each:
//! - this directory: the function model and the decoder's driver (`mod.rs`); reading a
//!   subprogram and its children (`read.rs`), their decl tags (`annotations.rs`), references
//!   and abstract origins in other units (`references.rs`); the parameters' sizes and
//!   location facts (`parms.rs`); pahole's passes over the loaded functions (`recode.rs`,
//!   with the location analysis in `analysis.rs`); what the encoder records (`output.rs`);
//! - `locations.rs`: what a parameter's `DW_AT_location` says (`loc_num`, register,
//!   stack, constant, entry value), over `expr.rs`, the DWARF expression decoder;
//! - `layout.rs`: struct layout and the packed inference behind
//!   `ftype__has_uncertain_arg_loc`;
//! - `input/arch.rs`: the target's argument registers, from the ELF machine.
//!
//! What is ported here, from `dwarf_loader.c` unless noted:
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
//!   `passed_in_memory`, and the location facts of `locations.rs` (an aggregate is a
//!   type larger than an address where the ABI uses two registers for it).
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
//!   (`functions/analysis.rs`, with `true_signature`'s rules for a signature clang changed),
//!   then `optimized_parms` (a parameter optimized or without location), `unexpected_reg`
//!   (unless a parameter is a struct by value through typedefs/const, `param__is_struct`), and
//!   the LTO rule: a void function with an abstract origin takes the origin's return type (an
//!   origin that is neither a subprogram nor a parameter of the CU is an error: pahole aborts
//!   the CU there too).
//! - `btf_encoder.c`: `ftype__has_arg_names`; `ftype__has_uncertain_arg_loc` (a named struct,
//!   not looked up through typedefs, at parameter index ≥ `nr_register_params`, that
//!   `layout.rs` finds packed); and the parameter list `btf_encoder__save_func` records:
//!   with `reordered_parm`, parameters that are optimized or have no location are dropped, and
//!   a variadic function gets a trailing `{"", 0}`.
//!
//! Left out (documented differences):
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
//! - `_Atomic` (which pahole rejects) is dropped by `types/`: a parameter or return type
//!   that is `_Atomic T` has type `T`, for its BTF type and for sizing and aligning alike.
//! - References into other units (`foreign.rs`): types and abstract origins that `types/`
//!   imported resolve. An abstract origin in another unit (gcc LTO's concrete functions name
//!   their early-debug DIEs) is read from there as an origin only, not as a function of this
//!   CU, so the location facts this CU's instances copy onto its parameters stay with this
//!   CU's copy; in pahole's merged CU the origin's own CU sees them too. The two agree on the
//!   LTO tests (`tests/encoding/cross_unit.rs`) and a generated 12,000-function gcc LTO library. Any
//!   other reference out of the CU is an error.
//!
//! Each subprogram is read by its offset with `EntriesRaw`: its attributes, its direct
//! children's attributes, and nothing below them when a `DW_AT_sibling` (GCC) allows jumping
//! over a subtree. No `gimli::Unit` is built. On the reference kernel this reproduces every
//! skip decision pahole 1.32 takes from these facts (the ignored test
//! `vmlinux_skip_reasons_match_pahole_1_32` in `tests/encoding/dwarf_functions.rs`).

use std::ops::Range;

use gimli::UnitOffset;

pub use super::locations::ParamLoc;
use super::locations::{Loc, Locations};
use super::types::{Annot, CuTypes, DecodeError, Entry};
use super::units::{Cu, R};
use crate::config::Features;
use crate::dwarf::error::DwarfCause;
use crate::input::arch::Arch;

mod analysis;
mod annotations;
mod output;
mod parms;
mod read;
mod recode;
mod references;

/// One parameter as `btf_encoder__save_func` records it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Param<'a> {
    /// The name (empty when the DIE has none, or for the trailing vararg).
    pub name: &'a [u8],
    /// With `true_signature`, the member of an aggregate the parameter stands for: it is
    /// saved as `<name>__<member>` (empty: none).
    pub member: &'a [u8],
    /// Small id of the type in the CU's types table (0 = void).
    pub ty: u32,
    /// What the location analysis found (not encoded; `dwarf2btf why` shows it).
    pub loc: ParamLoc,
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
    /// Formal parameters left out of `params` (`reordered_parm`: optimized or no location).
    pub left_out: Vec<Param<'a>>,
    /// Every formal parameter has a name (`ftype__has_arg_names`; false → pahole skips it).
    pub has_arg_names: bool,
    /// A parameter was optimized out or has no location (pahole's `optimized_parms`).
    pub optimized_parms: bool,
    /// A parameter is not in the register the ABI puts it in (`unexpected_reg`).
    pub unexpected_reg: bool,
    /// A concrete instance's parameters come in another order than its abstract origin's
    /// (`reordered_parm`).
    pub reordered_parm: bool,
    /// The compiler changed the calling convention (clang's `DW_CC_nocall`).
    pub signature_changed: bool,
    /// A packed struct is passed on the stack, where its location is uncertain
    /// (`ftype__has_uncertain_arg_loc`).
    pub uncertain_parm_loc: bool,
    /// `btf_decl_tag` values: component -1 is the function, else the parameter index.
    pub annots: Vec<Annot<'a>>,
}

/// `DW_CC_nocall`, as the number an attribute holds.
const DW_CC_NOCALL: u64 = gimli::DW_CC_nocall.0 as u64;

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
    /// `first_reg_fields`, `second_reg_fields`: which byte offsets of an aggregate each of
    /// its two registers holds (`DW_OP_piece`).
    first_fields: u64,
    second_fields: u64,
    /// `true_sig_member_name`/`true_sig_type`: the one member the pieces hold, by name and
    /// small id, for `true_signature` (`parameter__finish_piece_decode`).
    member: Option<(&'a [u8], u32)>,
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

/// Decodes the functions of one CU. `types` must come from [`super::types::decode_cu_types`]
/// on the same CU.
pub fn decode_cu_functions<'a>(
    dwarf: &gimli::Dwarf<R<'a>>,
    cu: &Cu<'a>,
    types: &CuTypes<'a>,
    arch: &Arch,
    features: &Features,
) -> Result<Vec<FunctionInfo<'a>>, DecodeError> {
    let mut d = Decoder {
        dwarf,
        cu,
        types,
        arch,
        features,
        addr_size: u32::from(cu.header.address_size()),
        locs: Locations::new(dwarf, cu),
        funcs: Vec::with_capacity(types.subprograms.len()),
        parms: Vec::new(),
        annots: Vec::new(),
        attrs: Vec::new(),
        parm_index: Vec::new(),
        func_index: Vec::new(),
        packed: Vec::new(),
        in_foreign_unit: false,
    };
    for &off in &types.subprograms {
        d.read_function(off)?;
    }
    let own = d.funcs.len();
    d.read_foreign_origins()?;
    d.build_indexes();
    d.finish_parms()?;
    d.signatures()?;
    let order = d.table_order(own);
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
    locs: Locations<'a, 'd>,
    /// In DIE order.
    funcs: Vec<Func<'a>>,
    parms: Vec<Parm<'a>>,
    annots: Vec<Annot<'a>>,
    attrs: Vec<gimli::Attribute<R<'a>>>,
    /// (unit offset, index into `parms`), sorted by offset.
    parm_index: Vec<(u32, u32)>,
    /// (unit offset, index into `funcs`), sorted by offset.
    func_index: Vec<(u32, u32)>,
    /// `class__infer_packed_attributes` memo by small id: 0 unknown, 1 not packed, 2 packed.
    packed: Vec<u8>,
    /// `cu` is another unit, where an abstract origin of the CU's functions is read.
    in_foreign_unit: bool,
}

impl<'a, 'd> Decoder<'a, 'd> {
    /// An error about the DIE at unit offset `off`.
    pub(super) fn err(&self, off: u32, reason: impl Into<String>) -> DecodeError {
        DecodeError {
            die_offset: self.cu.die_offset(UnitOffset(off as usize)),
            cause: DwarfCause::Malformed(reason.into()),
        }
    }

    /// Turns gimli's errors while reading the DIE at `off` into errors about it.
    pub(super) fn gimli_err(&self, off: u32) -> impl Fn(gimli::Error) -> DecodeError {
        let die_offset = self.cu.die_offset(UnitOffset(off as usize));
        move |e| DecodeError {
            die_offset,
            cause: DwarfCause::Read(e),
        }
    }

    /// Sorts the functions and parameters read by DIE offset, for `func_at` and `parm_at`.
    fn build_indexes(&mut self) {
        self.func_index = index_by_die(self.funcs.iter().map(|f| f.die));
        self.parm_index = index_by_die(self.parms.iter().map(|p| p.die));
    }

    /// The index of the function whose DIE is at `off`.
    pub(super) fn func_at(&self, off: u32) -> Option<usize> {
        lookup_die(&self.func_index, off)
    }

    /// The index of the parameter whose DIE is at `off`.
    pub(super) fn parm_at(&self, off: u32) -> Option<usize> {
        lookup_die(&self.parm_index, off)
    }

    /// The types table entry with small id `id` (`None` for void).
    pub(super) fn entry(&self, id: u32) -> Option<&Entry<'a>> {
        id.checked_sub(1)
            .and_then(|i| self.types.entries.get(i as usize))
    }
}

/// (DIE offset, index) of each of `dies`, sorted by offset.
fn index_by_die(dies: impl Iterator<Item = u32>) -> Vec<(u32, u32)> {
    let mut index: Vec<(u32, u32)> = dies.enumerate().map(|(i, die)| (die, i as u32)).collect();
    index.sort_unstable();
    index
}

/// The index of the DIE at `off` in an [`index_by_die`] index.
fn lookup_die(index: &[(u32, u32)], off: u32) -> Option<usize> {
    index
        .binary_search_by_key(&off, |&(o, _)| o)
        .ok()
        .map(|i| index[i].1 as usize)
}
