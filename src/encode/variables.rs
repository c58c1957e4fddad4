//! Variables → BTF `VAR`s and `DATASEC`s, as pahole's `btf_encoder__encode_cu_variables` and
//! `btf_encoder__add_datasec` emit them.
//!
//! A [`VarEncoder`] is built once from the ELF: its section table, with pahole's `include`
//! rule (every section with the `global_var` feature, `.data..percpu` with `var`), and an
//! index of the `STT_OBJECT` symbols. For each CU, [`VarEncoder::encode_cu`] takes the
//! candidates of [`crate::dwarf::variables`] in DIE order and, like pahole:
//! 1. finds the variable's section — for linked files the first `SHT_PROGBITS`/`SHT_NOBITS`
//!    section with `sh_addr <= addr < sh_addr + sh_size` (`get_elf_section`) — and skips the
//!    variable unless that section is included; the offset is `addr - sh_addr`;
//! 2. skips a variable without a name, and names starting with `__UNIQUE_ID`, `__tpstrtab_`,
//!    `__exitcall_`, `__gendwarfksyms_ptr_` or `__func_stack_frame_non_standard_`;
//! 3. at offset 0, requires an `STT_OBJECT` symbol of that name in that section (variables of
//!    discarded sections have address 0 too: `variable_in_sec`);
//! 4. rejects a name BTF cannot hold (`btf_name_valid`: `[A-Za-z_.][A-Za-z0-9_.]*`, at most
//!    128 bytes) and a void type: skipped with `encode_force`, an error otherwise;
//! 5. skips a size of 0 or above `u32::MAX`, and an offset above `u32::MAX`;
//! 6. emits `VAR` (type `type_id_off + small id`, linkage global-allocated when
//!    `DW_AT_external`, static otherwise), then one `DECL_TAG` per annotation (component
//!    -1), and buffers `{section, var id, offset, size}`.
//!
//! After every CU (and pahole emits the functions first), [`VarEncoder::add_datasecs`] adds
//! one `DATASEC` per section that got a variable, in section-index order, named after the
//! section, its entries sorted by offset (stably) and its size the end of the last entry.
//!
//! **Relocatable inputs** (`.o`, `.ko`): all sections are at `sh_addr` 0, so an address does
//! not tell the section. pahole gets it right because libdwfl lays the sections out at
//! distinct addresses before relocating the DWARF; here the section is the one the relocation
//! of the address (in `.rela.debug_info`, or `.rela.debug_addr` for `DW_OP_addrx`) points
//! into, and the relocated value is already the section offset. The result is the same as
//! pahole's (checked on kernel modules with and without `global_var`), except as noted below.
//!
//! Deliberate differences from pahole HEAD:
//! - a void-typed variable without `encode_force` is an error here; pahole prints "error:
//!   found variable ... that has void type", stops encoding the CU's remaining variables and
//!   carries on as if nothing happened (a `break` that falls into `err = 0`);
//! - a section with more than 65,535 variables is an error (BTF's vlen limit); pahole keeps
//!   the count in a `u16` and silently drops entries;
//! - entries with equal offsets keep their emission order (pahole's `qsort` makes no promise);
//! - relocatable inputs with `global_var`: a variable in a section that is neither
//!   `SHT_PROGBITS` nor `SHT_NOBITS` (the kernel's `ELFNOTE` variables `_note_*` in
//!   `.note.*`) is skipped, as pahole skips it in linked files. In a module, pahole's search
//!   falls through to a non-allocated section at address 0 whose size covers libdwfl's layout
//!   address, and emits the variable in a `.debug_info` DATASEC.

use rustc_hash::{FxHashMap, FxHashSet};

use crate::btf::{kinds, Btf};
use crate::config::Features;
use crate::dwarf::variables::{AddrSite, CuVariables, Variable};
use crate::error::{Error, Result};
use crate::input::elf::{Elf, SectionInfo, SHT_NOBITS, SHT_PROGBITS, STT_OBJECT};

/// pahole's `PERCPU_SECTION`.
pub const PERCPU_SECTION: &str = ".data..percpu";
/// pahole's own `KSYM_NAME_LEN` (dwarves' `btf_encoder.c`): the longest variable name it
/// encodes. Not the kernel's (512 in 6.1, which `verify` checks names against).
pub const PAHOLE_KSYM_NAME_LEN: usize = 128;

/// A variable waiting for its section's `DATASEC`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PendingSecinfo {
    /// ELF section index.
    pub shndx: u32,
    /// The `VAR`'s BTF id.
    pub var_id: u32,
    /// The variable's offset in its section, in bytes.
    pub offset: u32,
    /// The variable's size, in bytes.
    pub size: u32,
}

/// A message pahole prints while encoding variables.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VarMessage {
    /// The message, as pahole words it (one line, no newline).
    pub text: String,
    /// True when pahole prints it only under `-V`.
    pub verbose_only: bool,
}

impl VarMessage {
    fn verbose(text: String) -> Self {
        VarMessage {
            text,
            verbose_only: true,
        }
    }
}

#[derive(Clone, Debug)]
struct SecInfo {
    name: String,
    addr: u64,
    size: u64,
    sh_type: u32,
    include: bool,
}

impl SecInfo {
    fn holds_vars(&self) -> bool {
        self.sh_type == SHT_PROGBITS || self.sh_type == SHT_NOBITS
    }
}

/// For relocatable inputs: which section the address stored at a debug-section offset
/// points into, from the relocations (only those into included sections are kept).
#[derive(Clone, Debug, Default)]
struct RelocIndex {
    /// `(r_offset, target section)` of `.rela.debug_info`, sorted by offset.
    info: Vec<(u64, u32)>,
    /// The same for `.rela.debug_addr`.
    addr: Vec<(u64, u32)>,
}

impl RelocIndex {
    fn lookup(&self, site: AddrSite) -> Option<usize> {
        let (table, off) = match site {
            AddrSite::DebugInfo(o) => (&self.info, o),
            AddrSite::DebugAddr(o) => (&self.addr, o),
        };
        let i = table.partition_point(|&(o, _)| o < off);
        table
            .get(i)
            .filter(|&&(o, _)| o == off)
            .map(|&(_, s)| s as usize)
    }
}

/// Encodes variables; built once per input ELF.
#[derive(Clone, Debug)]
pub struct VarEncoder<'a> {
    sections: Vec<SecInfo>,
    /// `(name, section)` of every `STT_OBJECT` symbol.
    objects: FxHashSet<(&'a [u8], usize)>,
    /// `Some` for relocatable inputs.
    relocs: Option<RelocIndex>,
    enabled: bool,
    force: bool,
}

impl<'a> VarEncoder<'a> {
    /// The section table and symbol index of `elf`, with the features' include rule.
    pub fn new(elf: &Elf<'a>, features: &Features) -> Result<Self> {
        let sections = section_table(&elf.sections(), features);
        let objects = elf
            .symbols()
            .filter(|s| s.st_type == STT_OBJECT)
            .filter_map(|s| Some((s.name.as_bytes(), s.section?)))
            .collect();
        let relocs = if elf.relocatable {
            Some(reloc_index(elf, &sections))
        } else {
            None
        };
        Ok(VarEncoder {
            sections,
            objects,
            relocs,
            enabled: features.var || features.global_var,
            force: features.encode_force,
        })
    }

    /// False when neither `var` nor `global_var` is on: pahole then encodes no variable.
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// True when the ELF has a `.data..percpu` section (pahole says so under `-V` otherwise).
    pub fn has_percpu_section(&self) -> bool {
        self.sections.iter().any(|s| s.name == PERCPU_SECTION)
    }

    /// The section a variable lives in and its offset there, when the section is included.
    fn place(&self, var: &Variable<'_>) -> Option<(usize, u64)> {
        let shndx = match &self.relocs {
            Some(relocs) => relocs.lookup(var.addr_site)?,
            None => self.get_elf_section(var.addr)?,
        };
        let sec = self.sections.get(shndx)?;
        if !sec.include || !sec.holds_vars() {
            return None;
        }
        Some((shndx, var.addr.checked_sub(sec.addr)?))
    }

    /// pahole's `get_elf_section`: the first variable-holding section containing `addr`.
    fn get_elf_section(&self, addr: u64) -> Option<usize> {
        self.sections
            .iter()
            .enumerate()
            .skip(1)
            .find(|(_, s)| s.holds_vars() && s.addr <= addr && addr - s.addr < s.size)
            .map(|(i, _)| i)
    }

    /// pahole's `variable_in_sec`.
    fn variable_in_sec(&self, name: &[u8], shndx: usize) -> bool {
        self.objects.contains(&(name, shndx))
    }

    /// Emits the `VAR`s (and their `DECL_TAG`s) of one CU, buffering their `DATASEC`
    /// entries in `pending`. `type_id_off` is the BTF type count before the CU's types minus
    /// one, as for the CU's types. Returns pahole's messages.
    pub fn encode_cu(
        &self,
        btf: &mut Btf,
        vars: &CuVariables<'_>,
        type_id_off: u32,
        pending: &mut Vec<PendingSecinfo>,
    ) -> Result<Vec<VarMessage>> {
        let mut msgs = Vec::new();
        if !self.enabled {
            return Ok(msgs);
        }
        let cu_name = String::from_utf8_lossy(vars.cu_name);
        msgs.push(VarMessage::verbose(format!(
            "search cu '{cu_name}' for percpu global variables."
        )));
        for var in &vars.vars {
            let Some((shndx, offset)) = self.place(var) else {
                continue;
            };
            let Some(name) = var.name else {
                continue;
            };
            if filter_variable_name(name) {
                continue;
            }
            if offset == 0 && !self.variable_in_sec(name, shndx) {
                continue;
            }
            let shown = String::from_utf8_lossy(name);
            let die_offset = (vars.unit_offset + var.die as usize) as u64;
            let fail = |reason: &str| Error::Encode {
                what: format!("variable '{shown}'"),
                die_offset,
                reason: reason.to_string(),
            };
            if !btf_name_valid(name) {
                if !self.force {
                    return Err(fail(
                        "invalid BTF name (the encode_force feature skips such variables)",
                    ));
                }
                msgs.push(VarMessage::verbose(format!(
                    "PAHOLE: Warning: Found invalid variable name when encoding btf, ignored (sym: '{shown}')."
                )));
                continue;
            }
            if var.ty == 0 {
                if !self.force {
                    return Err(fail(
                        "the variable has void type (the encode_force feature skips it)",
                    ));
                }
                msgs.push(VarMessage {
                    text: format!(
                        "error: found variable '{shown}' in CU '{cu_name}' that has void type"
                    ),
                    verbose_only: false,
                });
                continue;
            }
            if var.size == 0 || var.size > u64::from(u32::MAX) {
                let which = if var.size == 0 { "zero" } else { "over" };
                msgs.push(VarMessage::verbose(format!(
                    "Ignoring {which}-sized variable '{shown}'..."
                )));
                continue;
            }
            let (Ok(offset32), Ok(size32)) = (u32::try_from(offset), u32::try_from(var.size))
            else {
                msgs.push(VarMessage::verbose(format!(
                    "Ignoring variable '{shown}' - its offset {offset} doesn't fit in a u32"
                )));
                continue;
            };
            let linkage = if var.external {
                kinds::VAR_GLOBAL_ALLOCATED
            } else {
                kinds::VAR_STATIC
            };
            msgs.push(VarMessage::verbose(format!(
                "Variable '{shown}' from CU '{cu_name}' at address 0x{offset:x} encoded"
            )));
            let ctx = |e: Error| e.while_encoding(|| format!("variable '{shown}'"), die_offset);
            let var_id = btf
                .add_var(name, linkage, type_id_off + var.ty)
                .map_err(ctx)?;
            for value in vars.annots_of(var) {
                btf.add_decl_tag(value, var_id, -1).map_err(ctx)?;
            }
            pending.push(PendingSecinfo {
                shndx: shndx as u32,
                var_id,
                offset: offset32,
                size: size32,
            });
        }
        Ok(msgs)
    }

    /// Emits one `DATASEC` per section with pending variables, in section-index order,
    /// entries sorted by offset (stable), size = end of the last entry. Drains `pending`.
    pub fn add_datasecs(&self, btf: &mut Btf, pending: &mut Vec<PendingSecinfo>) -> Result<()> {
        let mut by_sec: FxHashMap<u32, Vec<PendingSecinfo>> = FxHashMap::default();
        for p in pending.drain(..) {
            by_sec.entry(p.shndx).or_default().push(p);
        }
        let mut secs: Vec<(u32, Vec<PendingSecinfo>)> = by_sec.into_iter().collect();
        secs.sort_by_key(|(shndx, _)| *shndx);
        for (shndx, mut entries) in secs {
            entries.sort_by_key(|p| p.offset);
            let name = self
                .sections
                .get(shndx as usize)
                .map_or("", |s| s.name.as_str());
            let last = entries.last().expect("groups are never empty");
            let size = last.offset.wrapping_add(last.size);
            let datasec_err = |reason: String| Error::Encode {
                what: format!("DATASEC '{name}'"),
                die_offset: 0,
                reason,
            };
            btf.add_datasec(name.as_bytes(), size)
                .map_err(|e| datasec_err(e.to_string()))?;
            for p in entries {
                btf.add_datasec_var(p.var_id, p.offset, p.size)
                    .map_err(|e| datasec_err(e.to_string()))?;
            }
        }
        Ok(())
    }
}

/// pahole's section table with its `include` rule.
fn section_table(sections: &[SectionInfo], features: &Features) -> Vec<SecInfo> {
    let count = sections.iter().map(|s| s.index + 1).max().unwrap_or(0);
    let mut table = vec![
        SecInfo {
            name: String::new(),
            addr: 0,
            size: 0,
            sh_type: 0,
            include: false,
        };
        count
    ];
    for s in sections {
        table[s.index] = SecInfo {
            name: s.name.clone(),
            addr: s.addr,
            size: s.size,
            sh_type: s.sh_type,
            include: features.global_var || (features.var && s.name == PERCPU_SECTION),
        };
    }
    table
}

/// The relocations of `.debug_info` and `.debug_addr` that point into included sections.
fn reloc_index(elf: &Elf<'_>, sections: &[SecInfo]) -> RelocIndex {
    let sym_sections: Vec<Option<usize>> = std::iter::once(None)
        .chain(elf.symbols().map(|s| s.section))
        .collect();
    let wanted = |sym: u64| -> Option<u32> {
        let shndx = (*sym_sections.get(usize::try_from(sym).ok()?)?)?;
        let sec = sections.get(shndx)?;
        (sec.include && sec.holds_vars()).then_some(shndx as u32)
    };
    let mut index = RelocIndex::default();
    for (target, out) in [
        (".debug_info", &mut index.info),
        (".debug_addr", &mut index.addr),
    ] {
        for (r_offset, sym) in elf.relocation_symbols(target) {
            if let Some(shndx) = wanted(sym) {
                out.push((r_offset, shndx));
            }
        }
        out.sort_by_key(|&(o, _)| o);
    }
    index
}

/// pahole's `filter_variable_name`: prefixes of variables with no useful value.
pub fn filter_variable_name(name: &[u8]) -> bool {
    const SKIP: [&[u8]; 5] = [
        b"__UNIQUE_ID",
        b"__tpstrtab_",
        b"__exitcall_",
        b"__gendwarfksyms_ptr_",
        b"__func_stack_frame_non_standard_",
    ];
    SKIP.iter().any(|p| name.starts_with(p))
}

/// pahole's `btf_name_valid`: `[A-Za-z_.][A-Za-z0-9_.]*`, 1 to 128 bytes.
pub fn btf_name_valid(name: &[u8]) -> bool {
    let ok = |c: u8, first: bool| {
        c == b'_'
            || c == b'.'
            || if first {
                c.is_ascii_alphabetic()
            } else {
                c.is_ascii_alphanumeric()
            }
    };
    match name.split_first() {
        Some((&c, rest)) => {
            name.len() <= PAHOLE_KSYM_NAME_LEN && ok(c, true) && rest.iter().all(|&c| ok(c, false))
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::btf::Kind;

    #[test]
    fn names() {
        assert!(btf_name_valid(b"x"));
        assert!(btf_name_valid(b"_x.y1"));
        assert!(btf_name_valid(b".L1"));
        assert!(!btf_name_valid(b""));
        assert!(!btf_name_valid(b"1x"));
        assert!(!btf_name_valid(b"a-b"));
        assert!(!btf_name_valid(b"a$"));
        assert!(!btf_name_valid("é".as_bytes()));
        assert!(btf_name_valid(&[b'a'; 128]));
        assert!(!btf_name_valid(&[b'a'; 129]));
        assert!(filter_variable_name(b"__UNIQUE_ID_x12"));
        assert!(filter_variable_name(b"__exitcall_foo"));
        assert!(!filter_variable_name(b"_UNIQUE_ID"));
        assert!(!filter_variable_name(b"runqueues"));
    }

    fn sec(index: usize, name: &str, addr: u64, size: u64, sh_type: u32) -> SectionInfo {
        SectionInfo {
            index,
            name: name.into(),
            addr,
            size,
            sh_type,
            sh_flags: 0,
        }
    }

    fn encoder(features: &Features) -> VarEncoder<'static> {
        let secs = [
            sec(0, "", 0, 0, 0),
            sec(1, ".text", 0x1000, 0x1000, SHT_PROGBITS),
            sec(2, ".data..percpu", 0, 0x100, SHT_PROGBITS),
            sec(3, ".data", 0x2000, 0x100, SHT_PROGBITS),
            sec(4, ".bss", 0x2100, 0x100, SHT_NOBITS),
            sec(5, ".comment", 0, 0x2400, SHT_PROGBITS),
            sec(6, ".note", 0x2200, 0x10, 7),
        ];
        let mut objects = FxHashSet::default();
        objects.insert((&b"first"[..], 2));
        objects.insert((&b"d0"[..], 3));
        VarEncoder {
            sections: section_table(&secs, features),
            objects,
            relocs: None,
            enabled: features.var || features.global_var,
            force: features.encode_force,
        }
    }

    fn var(name: &'static [u8], addr: u64, ty: u32, size: u64) -> Variable<'static> {
        Variable {
            die: 0,
            name: Some(name),
            ty,
            size,
            external: true,
            addr,
            addr_site: AddrSite::DebugInfo(0),
            annots: 0..0,
        }
    }

    fn cu(vars: Vec<Variable<'static>>) -> CuVariables<'static> {
        CuVariables {
            cu_name: b"cu.c",
            unit_offset: 0,
            vars,
            annots: vec![b"tag1", b"tag2"],
        }
    }

    fn run(
        features: &Features,
        vars: Vec<Variable<'static>>,
    ) -> Result<(Btf, Vec<PendingSecinfo>)> {
        let enc = encoder(features);
        let mut btf = Btf::new();
        btf.add_int(b"int", 4, kinds::INT_SIGNED)?;
        let mut pending = Vec::new();
        enc.encode_cu(&mut btf, &cu(vars), 0, &mut pending)?;
        Ok((btf, pending))
    }

    #[test]
    fn percpu_only_by_default() {
        let f = Features::default();
        let mut tagged = var(b"tagged", 0x20, 1, 4);
        tagged.annots = 0..2;
        tagged.external = false;
        let (btf, pending) = run(
            &f,
            vec![
                var(b"later", 0x40, 1, 4),
                var(b"first", 0, 1, 4),
                var(b"absent_at_zero", 0, 1, 4),
                tagged,
                var(b"in_data", 0x2000, 1, 4),
                var(b"__UNIQUE_ID_x", 0x50, 1, 4),
                var(b"zero", 0x60, 1, 0),
                var(b"huge", 0x60, 1, 1 << 33),
            ],
        )
        .unwrap();
        let names: Vec<_> = btf
            .own_types()
            .skip(1)
            .map(|t| (t.k(), btf.name(t.name_off()).into_owned()))
            .collect();
        assert_eq!(
            names,
            [
                (Kind::Var, "later".to_string()),
                (Kind::Var, "first".into()),
                (Kind::Var, "tagged".into()),
                (Kind::DeclTag, "tag1".into()),
                (Kind::DeclTag, "tag2".into()),
            ]
        );
        let tagged = btf.type_by_id(4).unwrap();
        assert_eq!(tagged.extra(), kinds::VAR_STATIC);
        assert_eq!(btf.type_by_id(5).unwrap().size_or_type(), 4);
        assert_eq!(btf.type_by_id(5).unwrap().decl_tag_component(), -1);
        assert_eq!(
            pending
                .iter()
                .map(|p| (p.shndx, p.offset))
                .collect::<Vec<_>>(),
            [(2, 0x40), (2, 0), (2, 0x20)]
        );
    }

    #[test]
    fn global_var_includes_every_section() {
        let f = Features {
            global_var: true,
            ..Features::default()
        };
        let (btf, pending) = run(
            &f,
            vec![
                var(b"d", 0x2010, 1, 4),
                var(b"d0", 0x2000, 1, 4),
                var(b"b", 0x2180, 1, 8),
                var(b"n", 0x2200, 1, 4),
                var(b"p", 0x10, 1, 4),
                var(b"nowhere", 0x9000, 1, 4),
            ],
        )
        .unwrap();
        // `n` is in a SHT_NOTE section, which pahole never considers, so the first
        // variable-holding section containing its address wins: the non-allocated .comment
        // at address 0 (pahole's `get_elf_section` does the same).
        assert_eq!(
            pending
                .iter()
                .map(|p| (p.shndx, p.offset))
                .collect::<Vec<_>>(),
            [(3, 0x10), (3, 0), (4, 0x80), (5, 0x2200), (2, 0x10)]
        );
        let enc = encoder(&f);
        let mut btf = btf;
        let mut pending = pending;
        enc.add_datasecs(&mut btf, &mut pending).unwrap();
        assert!(pending.is_empty());
        let secs: Vec<_> = btf
            .own_types()
            .filter(|t| t.k() == Kind::Datasec)
            .map(|t| {
                (
                    btf.name(t.name_off()).into_owned(),
                    t.size_or_type(),
                    t.secinfos()
                        .map(|s| (s.type_id, s.offset))
                        .collect::<Vec<_>>(),
                )
            })
            .collect();
        assert_eq!(
            secs,
            [
                (".data..percpu".to_string(), 0x14, vec![(6, 0x10)]),
                (".data".to_string(), 0x14, vec![(3, 0), (2, 0x10)]),
                (".bss".to_string(), 0x88, vec![(4, 0x80)]),
                (".comment".to_string(), 0x2204, vec![(5, 0x2200)]),
            ]
        );
    }

    #[test]
    fn invalid_names_and_void_types_need_force() {
        let f = Features::default();
        assert!(run(&f, vec![var(b"a-b", 0x10, 1, 4)]).is_err());
        assert!(run(&f, vec![var(b"v", 0x10, 0, 4)]).is_err());
        let forced = Features {
            encode_force: true,
            ..Features::default()
        };
        let (btf, pending) = run(
            &forced,
            vec![
                var(b"a-b", 0x10, 1, 4),
                var(b"v", 0x10, 0, 4),
                var(b"ok", 0x14, 1, 4),
            ],
        )
        .unwrap();
        assert_eq!(btf.own_len(), 2);
        assert_eq!(pending.len(), 1);
        // Not in an included section: not even checked.
        assert!(run(&f, vec![var(b"a-b", 0x2000, 1, 4)]).is_ok());
    }

    #[test]
    fn disabled_encodes_nothing() {
        let (btf, pending) = run(&Features::none(), vec![var(b"x", 0x10, 1, 4)]).unwrap();
        assert_eq!(btf.own_len(), 1);
        assert!(pending.is_empty());
    }

    #[test]
    fn relocations_are_looked_up_by_site() {
        let idx = RelocIndex {
            info: vec![(0x8, 3), (0x10, 7)],
            addr: vec![(0x18, 2)],
        };
        assert_eq!(idx.lookup(AddrSite::DebugInfo(0x10)), Some(7));
        assert_eq!(idx.lookup(AddrSite::DebugInfo(0x11)), None);
        assert_eq!(idx.lookup(AddrSite::DebugAddr(0x18)), Some(2));
        assert_eq!(idx.lookup(AddrSite::DebugAddr(0x8)), None);
    }
}
