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
//! The facts are gathered in four places, one concept each:
//! - this file: the subprogram walk and the function model (below);
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
//! - `_Atomic` (which pahole rejects) is dropped by `types.rs`: a parameter or return type
//!   that is `_Atomic T` has type `T`, for its BTF type and for sizing and aligning alike.
//! - References into other units (`foreign.rs`): types and abstract origins that `types.rs`
//!   imported resolve. An abstract origin in another unit (gcc LTO's concrete functions name
//!   their early-debug DIEs) is read from there as an origin only, not as a function of this
//!   CU, so the location facts this CU's instances copy onto its parameters stay with this
//!   CU's copy; in pahole's merged CU the origin's own CU sees them too. The two agree on the
//!   LTO tests (`tests/cross_unit.rs`) and a generated 12,000-function gcc LTO library. Any
//!   other reference out of the CU is an error.
//!
//! Each subprogram is read by its offset with `EntriesRaw`: its attributes, its direct
//! children's attributes, and nothing below them when a `DW_AT_sibling` (GCC) allows jumping
//! over a subtree. No `gimli::Unit` is built. On the reference kernel this reproduces every
//! skip decision pahole HEAD takes from these facts (the ignored test
//! `vmlinux_skip_reasons_match_pahole_head` in `tests/dwarf_functions.rs`).

use std::ops::Range;

use gimli::{AttributeValue, DwTag, EntriesRaw, UnitOffset};

use super::foreign::{describe, die_key, IMPORTED};
pub use super::locations::ParamLoc;
use super::locations::{Loc, Locations};
use super::types::{Annot, CuTypes, DecodeError, Entry};
use super::units::{Cu, R};

mod analysis;
mod output;
use crate::btf::Kind;
use crate::config::Features;
use crate::input::arch::{Arch, UNKNOWN_REG};

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

    /// A DIE reference as a local reference value: a DIE of this CU, or one of another unit
    /// the types decoder imported; other references out of the CU are errors, other forms
    /// resolve to nothing (pahole's failed `dwarf_formref_die`).
    fn unit_ref(
        &self,
        v: AttributeValue<R<'a>>,
        off: u32,
        what: &str,
    ) -> Result<Option<u32>, DecodeError> {
        if let Some(local) = self.types.imported(&v) {
            return Ok(Some(local));
        }
        match v {
            AttributeValue::UnitRef(UnitOffset(o)) => Ok(self.local(o)),
            AttributeValue::DebugInfoRef(o) if self.cu.holds(o) => {
                Ok(self.local(o.0 - self.cu.offset))
            }
            AttributeValue::DebugInfoRef(_) | AttributeValue::DebugTypesRef(_) => Err(self.err(
                off,
                format!("{what}: a reference into another unit that this unit does not import"),
            )),
            _ => Ok(None),
        }
    }

    /// The local reference value of the DIE at `unit_offset` of the unit being read.
    fn local(&self, unit_offset: usize) -> Option<u32> {
        if unit_offset >= self.cu.header.length_including_self() {
            return None;
        }
        if !self.in_foreign_unit {
            return u32::try_from(unit_offset).ok();
        }
        let key = die_key(&self.cu.header, self.cu.sup, self.cu.offset + unit_offset);
        self.types.imports.lookup(key)
    }

    /// Reads the abstract origins in other units (gcc LTO: the early-debug CUs) of the CU's
    /// functions, as pahole's merged CU has them: they are origins for names, return types,
    /// parameters and location facts, and are not functions of this CU themselves.
    fn read_foreign_origins(&mut self) -> Result<(), DecodeError> {
        let mut origins: Vec<u32> = self
            .funcs
            .iter()
            .filter_map(|f| f.origin)
            .filter(|&o| o & IMPORTED != 0)
            .collect();
        origins.sort_unstable();
        origins.dedup();
        let main = self.cu;
        for local in origins {
            let Some(unit) = self.types.unit_of_import(local) else {
                continue;
            };
            let Some(key) = self.types.imports.key(local) else {
                continue;
            };
            let unit_offset = describe(key).0 as usize - unit.offset;
            self.cu = unit;
            self.in_foreign_unit = true;
            let parms_start = self.parms.len();
            let read = self.read_function(unit_offset as u32);
            self.cu = main;
            self.in_foreign_unit = false;
            read?;
            let f = self.funcs.last_mut().expect("read_function pushes");
            f.die = local;
            f.ret = f.ret_type.map_or(0, |t| self.types.type_id_of(t));
            for p in &mut self.parms[parms_start..] {
                let key = die_key(&unit.header, unit.sup, unit.offset + p.die as usize);
                p.die = self.types.imports.lookup(key).unwrap_or(u32::MAX);
            }
        }
        Ok(())
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
                        first_fields: 0,
                        second_fields: 0,
                        member: None,
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
                    gimli::DW_AT_location => pa.loc = this.locs.classify(attr.raw_value()),
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
            let facts = self.locs.facts(self.parms[i].loc, aggregate);
            let p = &mut self.parms[i];
            p.type_byte_size = tbs;
            p.passed_in_memory = tbs > if two { 2 * addr_size } else { addr_size };
            p.loc_reg = facts.loc_reg.map_or(UNKNOWN_REG, i32::from);
            p.loc_const_value = facts.loc_const_value;
            p.loc_stack = facts.loc_stack;
            p.first_fields = facts.first_fields;
            p.second_fields = facts.second_fields;
            self.parms[i].member = self.piece_member(&self.parms[i]);
        }
        Ok(())
    }

    /// `parameter__finish_piece_decode`: when the pieces put exactly one byte offset in one
    /// register, the member of the parameter's own type (through typedefs and qualifiers) at
    /// that offset, if it has a name and a type (`get_member_with_offset`).
    fn piece_member(&self, p: &Parm<'a>) -> Option<(&'a [u8], u32)> {
        let (first, second) = (p.first_fields, p.second_fields);
        if (first == 0) == (second == 0) || first.count_ones() >= 2 || second.count_ones() >= 2 {
            return None;
        }
        p.name?;
        let offset = if first != 0 {
            first.trailing_zeros()
        } else {
            self.addr_size + second.trailing_zeros()
        };
        let mut id = self.types.type_id_of(p.own_type?);
        for _ in 0..MAX_CHAIN {
            match *self.entry(id)? {
                Entry::Typedef { ty, .. } | Entry::TypeTag { ty, .. } => id = ty,
                Entry::Modifier { kind, ty } if kind != Kind::Ptr => id = ty,
                Entry::Array { elem, .. } => id = elem,
                Entry::Composite {
                    union: false,
                    size,
                    ref members,
                    ..
                } if size != 0 => {
                    let m = self.types.members[members.start as usize..members.end as usize]
                        .iter()
                        .find(|m| m.bit_offset != u32::MAX && m.bit_offset == offset * 8)?;
                    return (!m.name.is_empty() && m.ty != 0).then_some((m.name, m.ty));
                }
                _ => return None,
            }
        }
        None
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
    fn table_order(&self, own: usize) -> Vec<u32> {
        let mut order: Vec<u32> = (0..own as u32).collect();
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
                o.first_fields |= p.first_fields;
                o.second_fields |= p.second_fields;
                if o.member.is_none() {
                    o.member = p.member;
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
