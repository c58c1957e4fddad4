//! The ELF input: memory-mapped file, section table, symbol table, and the debug sections
//! ready for gimli (decompressed, and relocated for ET_REL objects).
//!
//! `.rela.debug_*` are applied only to relocatable objects (`.o`, `.ko`): to a whole section
//! at once, or, for `.debug_info`, a range at a time ([`RangeRelocations`]). An ET_EXEC vmlinux
//! linked with `--emit-relocs` carries relocations that are already applied; applying them
//! again would be wrong.

use std::borrow::Cow;
use std::ops::Range;
use std::path::Path;

use object::elf::Rela64;
use object::read::elf::{ElfFile, FileHeader, SectionHeader};

use object::{
    Object, ObjectSection, ObjectSymbol, RelocationFlags, RelocationTarget, SectionIndex,
    SymbolIndex,
};

use super::relocations::{
    rela_entries, reloc_size, write_slot, RangeRelocations, RELEASE_RELOCATIONS_EVERY,
};
use crate::btf::Endian;
use crate::error::{Error, Result};

/// The input file, memory-mapped ([`crate::mapped`], which maps the files the BTF readers
/// take too).
pub use crate::mapped::Mapped;

/// One section header, as the encoder needs it.
#[derive(Clone, Debug)]
pub struct SectionInfo {
    /// The section's index in the section header table.
    pub index: usize,
    /// The section's name (empty when it has none or it is unreadable).
    pub name: String,
    /// `sh_addr`: its address in memory (0 in relocatable objects).
    pub addr: u64,
    /// `sh_size`: its size in bytes.
    pub size: u64,
    /// `sh_type` (`SHT_*`).
    pub sh_type: u32,
    /// `sh_flags` (`SHF_*` bits).
    pub sh_flags: u64,
}

/// A symbol table entry.
#[derive(Clone, Debug)]
pub struct SymbolInfo<'a> {
    /// The symbol's name (empty when it has none or it is unreadable).
    pub name: &'a str,
    /// `st_value`: its address (in relocatable objects, its offset in its section).
    pub value: u64,
    /// `st_size`: its size in bytes.
    pub size: u64,
    /// Its type, the low 4 bits of `st_info` (`STT_*`).
    pub st_type: u8,
    /// Its binding, the high 4 bits of `st_info` (`STB_*`).
    pub st_bind: u8,
    /// The index of the section it is defined in; `None` for undefined, absolute and common
    /// symbols.
    pub section: Option<usize>,
}

/// `STT_OBJECT`.
pub const STT_OBJECT: u8 = 1;
/// `STT_FUNC`.
pub const STT_FUNC: u8 = 2;
/// `SHT_PROGBITS`.
pub const SHT_PROGBITS: u32 = 1;
/// `SHT_NOBITS`.
pub const SHT_NOBITS: u32 = 8;
/// `SHF_ALLOC`.
pub const SHF_ALLOC: u64 = 2;

pub use crate::config::{DECOMPRESS_SLACK, DEFAULT_DECOMPRESS_RATIO};

/// A parsed ELF file.
pub struct Elf<'a> {
    path: &'a Path,
    /// The mapped file, whose pages a relocated section's copy gives back as it is made.
    mapped: &'a Mapped,
    file: object::File<'a>,
    /// A compressed section may expand to this many times its compressed size, plus
    /// [`DECOMPRESS_SLACK`] (0: no limit).
    decompress_ratio: u64,
    /// The sections (by index) that took some of [`DECOMPRESS_SLACK`], and how much they took
    /// together (a section read twice takes its share once).
    slack_taken: parking_lot::Mutex<(std::collections::BTreeSet<usize>, u64)>,
    /// Byte order of the target.
    pub endian: Endian,
    /// True for ET_REL (`.o`, `.ko`).
    pub relocatable: bool,
    /// `e_machine`.
    pub machine: u16,
    /// Address size in bytes (4 or 8).
    pub addr_size: u8,
}

/// The most bytes a zlib or zstd stream of nothing takes (8 and 9 as zlib and zstd write
/// them; headers with options take a little more).
const EMPTY_STREAM_MAX: u64 = 32;

/// Why a section's bytes could not be read. object reads every section through its
/// compression path, so a plain section that lies outside the file is reported as compressed
/// data: say what it is.
fn unreadable(sec: &object::Section<'_, '_>, e: object::Error) -> String {
    match sec.compressed_file_range() {
        Ok(r) if r.format == object::CompressionFormat::None => {
            "its offset and size lie outside the file".to_string()
        }
        _ => e.to_string(),
    }
}

fn bad_elf(path: &Path, e: impl std::fmt::Display) -> Error {
    Error::BadElf {
        path: path.to_path_buf(),
        reason: e.to_string(),
    }
}

impl<'a> Elf<'a> {
    /// Parses the mapped file as ELF.
    pub fn parse(mapped: &'a Mapped) -> Result<Self> {
        let path = mapped.path();
        let data = mapped.bytes();
        if !data.starts_with(b"\x7fELF") {
            return Err(bad_elf(path, "no ELF magic"));
        }
        let file = object::File::parse(data).map_err(|e| bad_elf(path, e))?;
        let (machine, relocatable) = match file.flags() {
            object::FileFlags::Elf { .. } => elf_header_fields(data, file.is_little_endian()),
            _ => return Err(bad_elf(path, "not an ELF object")),
        };
        let endian = if file.is_little_endian() {
            Endian::Little
        } else {
            Endian::Big
        };
        let addr_size = if file.is_64() { 8 } else { 4 };
        // Touch every section header once so that a truncated file fails here, cleanly.
        for s in file.sections() {
            s.name().map_err(|e| bad_elf(path, e))?;
        }
        Ok(Elf {
            path,
            mapped,
            file,
            decompress_ratio: DEFAULT_DECOMPRESS_RATIO,
            slack_taken: Default::default(),
            endian,
            relocatable,
            machine,
            addr_size,
        })
    }

    /// The input's path.
    pub fn path(&self) -> &Path {
        self.path
    }

    /// The mapped file.
    pub fn mapped(&self) -> &'a Mapped {
        self.mapped
    }

    /// Every section header.
    pub fn sections(&self) -> Vec<SectionInfo> {
        self.file
            .sections()
            .map(|s| {
                let (sh_type, sh_flags) = match s.flags() {
                    object::SectionFlags::Elf { sh_type, sh_flags } => (sh_type.0, sh_flags.0),
                    _ => (0, 0),
                };
                SectionInfo {
                    index: s.index().0,
                    name: s.name().unwrap_or("").to_string(),
                    addr: s.address(),
                    size: s.size(),
                    sh_type,
                    sh_flags,
                }
            })
            .collect()
    }

    /// True when the file has a `.symtab`.
    pub fn has_symtab(&self) -> bool {
        self.file.section_by_name(".symtab").is_some()
    }

    /// The `.symtab` entries, in table order (index 0 excluded).
    pub fn symbols(&self) -> impl Iterator<Item = SymbolInfo<'a>> + '_ {
        self.file.symbols().map(|s| {
            let st_info = match s.flags() {
                object::SymbolFlags::Elf { st_info, .. } => st_info.0,
                _ => 0,
            };
            SymbolInfo {
                name: s.name().unwrap_or(""),
                value: s.address(),
                size: s.size(),
                st_type: st_info & 0xf,
                st_bind: st_info >> 4,
                section: s.section_index().map(|i| i.0),
            }
        })
    }

    /// The data of a named section, decompressed when needed; `None` when absent.
    pub fn section_data(&self, name: &str) -> Result<Option<Cow<'a, [u8]>>> {
        match self.file.section_by_name(name) {
            Some(sec) => Ok(Some(self.data_of(&sec, name)?)),
            None => Ok(None),
        }
    }

    /// Lets a compressed section expand to `ratio` times its compressed size (plus
    /// [`DECOMPRESS_SLACK`]); 0 lifts the limit. The default is [`DEFAULT_DECOMPRESS_RATIO`].
    pub fn limit_decompression(&mut self, ratio: u64) {
        self.decompress_ratio = ratio;
    }

    fn data_of(&self, sec: &object::Section<'a, '_>, name: &str) -> Result<Cow<'a, [u8]>> {
        let bad = |reason: String| Error::BadSection {
            path: self.path.to_path_buf(),
            section: name.to_string(),
            reason,
        };
        let data = sec.compressed_data().map_err(|e| bad(unreadable(sec, e)))?;
        self.check_expansion(sec.index().0, &data).map_err(bad)?;
        data.decompress().map_err(|e| bad(e.to_string()))
    }

    /// Refuses a compressed section (number `index`) whose header claims more than the limit
    /// allows: the ratio times its compressed size, plus what is left of the file's slack.
    fn check_expansion(
        &self,
        index: usize,
        data: &object::CompressedData<'_>,
    ) -> std::result::Result<(), String> {
        if data.format == object::CompressionFormat::None {
            return Ok(());
        }
        let packed = data.data.len() as u64;
        if data.uncompressed_size == 0 && packed > EMPTY_STREAM_MAX {
            // A header claiming 0 bytes for more than an empty stream takes is corrupt: read
            // as claimed, the section would be empty and fail later, and obscurely.
            return Err(format!(
                "its compression header claims 0 bytes from {packed} compressed bytes"
            ));
        }
        if self.decompress_ratio == 0 {
            return Ok(());
        }
        let excess = data
            .uncompressed_size
            .saturating_sub(packed.saturating_mul(self.decompress_ratio));
        let (sections, total) = &mut *self.slack_taken.lock();
        if excess == 0 || sections.contains(&index) {
            return Ok(());
        }
        if total.saturating_add(excess) <= DECOMPRESS_SLACK {
            sections.insert(index);
            *total += excess;
            return Ok(());
        }
        Err(format!(
            "its compression header claims {} bytes from {packed} compressed bytes, more than \
             {} times that plus what is left of the file's 1 MiB (--max_decompress_ratio raises \
             the limit)",
            data.uncompressed_size, self.decompress_ratio
        ))
    }

    /// `(offset, symbol index)` of each relocation that applies to the first section named
    /// `name` and refers to a symbol (what a link with `--emit-relocs` keeps), in table order,
    /// read as the iteration goes (a large module has a million).
    pub fn relocation_symbols(&self, name: &str) -> Box<dyn Iterator<Item = (u64, u64)> + '_> {
        let Some(sec) = self.file.section_by_name(name) else {
            return Box::new(std::iter::empty());
        };
        if let Some(entries) = self.rela64_entries(sec.index()) {
            return Box::new(self.rela64_symbols(entries));
        }
        Box::new(
            self.relocations_releasing(&sec)
                .filter_map(|(offset, rel)| match rel.target() {
                    object::RelocationTarget::Symbol(sym) => Some((offset, sym.0 as u64)),
                    _ => None,
                }),
        )
    }

    /// The RELA entries of section `index` read straight from a 64-bit file (not MIPS, whose
    /// `r_info` is laid out otherwise), when its relocation table is linked to the symbols.
    fn rela64_entries(&self, index: SectionIndex) -> Option<&'a [Rela64<object::Endianness>]> {
        const EM_MIPS: u16 = 8;
        match &self.file {
            object::File::Elf64(file) if self.machine != EM_MIPS => rela_entries(file, index),
            _ => None,
        }
    }

    /// `(r_offset, r_sym)` of the entries that name a symbol, the pages behind released as
    /// the iteration goes.
    fn rela64_symbols(
        &self,
        entries: &'a [Rela64<object::Endianness>],
    ) -> impl Iterator<Item = (u64, u64)> + '_ {
        let endian = match self.endian {
            Endian::Little => object::Endianness::Little,
            Endian::Big => object::Endianness::Big,
        };
        entries
            .chunks(RELEASE_RELOCATIONS_EVERY)
            .flat_map(move |chunk| {
                let symbols = chunk.iter().filter_map(move |r| {
                    let sym = r.r_sym(endian, false);
                    (sym != 0).then_some((r.r_offset.get(endian), u64::from(sym)))
                });
                symbols.chain(
                    std::iter::once_with(move || {
                        self.mapped
                            .release_slice(object::pod::bytes_of_slice(chunk));
                        None
                    })
                    .flatten(),
                )
            })
    }

    /// The relocations that apply to `sec`, in table order; the table's mapped pages leave
    /// the resident set behind the iteration (a large module's `.rela.debug_info` is 24 MiB).
    fn relocations_releasing<'s>(
        &'s self,
        sec: &object::Section<'a, 's>,
    ) -> impl Iterator<Item = (u64, object::Relocation)> + 's {
        let table = self.relocation_table(sec);
        let release = move |done: usize| {
            if let Some((range, entry)) = &table {
                let end = range.start.saturating_add(done.saturating_mul(*entry));
                self.mapped.release(range.start..end.min(range.end));
            }
        };
        let mut relocs = sec.relocations();
        let mut done = 0;
        std::iter::from_fn(move || {
            let next = relocs.next();
            done += 1;
            if next.is_none() || done % RELEASE_RELOCATIONS_EVERY == 0 {
                release(done);
            }
            next
        })
    }

    /// True when the file has a section named `name`.
    pub fn has_section(&self, name: &str) -> bool {
        self.file.section_by_name(name).is_some()
    }

    /// The data of a debug section, decompressed and, for ET_REL, relocated. An ET_REL object
    /// can have several sections of one name (gcc puts each type unit in a COMDAT group of its
    /// own `.debug_types`, or `.debug_info` with DWARF 5): they are concatenated in section
    /// order, as a linker would.
    pub fn debug_section(&self, name: &str) -> Result<Option<Cow<'a, [u8]>>> {
        if !self.relocatable {
            return self.section_data(name);
        }
        let mut parts = self.file.sections().filter(|s| s.name() == Ok(name));
        let Some(first) = parts.next() else {
            return Ok(None);
        };
        let mut data = self.relocated(&first, name)?;
        for part in parts {
            data.to_mut()
                .extend_from_slice(&self.relocated(&part, name)?);
        }
        Ok(Some(data))
    }

    /// The relocations of the section `name`, held for relocating it a range at a time
    /// ([`RangeRelocations`]), so that each compile unit is relocated when a worker reads it
    /// and no copy of the whole section is made. `None` when the whole-section path must be
    /// taken instead ([`Elf::debug_section`]): the file is not a 64-bit relocatable object
    /// with one uncompressed section of that name and a RELA table; the entries are not in
    /// offset order; one points into the section itself (`DW_FORM_ref_addr`, read across
    /// units); or one would fail, which that path reports.
    pub fn range_relocations(&self, name: &str) -> Result<Option<RangeRelocations<'a>>> {
        let object::File::Elf64(file) = &self.file else {
            return Ok(None);
        };
        if !self.relocatable {
            return Ok(None);
        }
        let mut parts = self.file.sections().filter(|s| s.name() == Ok(name));
        let (Some(sec), None) = (parts.next(), parts.next()) else {
            return Ok(None);
        };
        let Cow::Borrowed(bytes) = self.data_of(&sec, name)? else {
            return Ok(None);
        };
        let endian = file.endian();
        let Some(entries) = self.rela64_entries(sec.index()) else {
            return Ok(None);
        };
        let sym_values = self.symbol_values(file);
        let relocations = RangeRelocations {
            path: self.path,
            name: name.to_string(),
            mapped: self.mapped,
            bytes,
            entries,
            endian,
            target: self.endian,
            machine: self.machine,
            sym_values,
        };
        let own_symbols = self.symbols_in_section(sec.index(), relocations.sym_values.len());
        Ok(relocations
            .all_applicable(&own_symbols)
            .then_some(relocations))
    }

    /// Each symbol's relocation value by index (`st_value` plus its section's address; 0 for
    /// the null symbol and any a reader rejects), as [`Elf::apply_relocation`] computes it.
    fn symbol_values(&self, file: &object::read::elf::ElfFile64<'a>) -> Vec<u64> {
        let count = file.elf_symbol_table().symbols().len();
        (0..count)
            .map(|i| {
                self.file.symbol_by_index(SymbolIndex(i)).map_or(0, |s| {
                    s.address()
                        .wrapping_add(self.section_load_addr(s.section_index()))
                })
            })
            .collect()
    }

    /// Per symbol index (`count` of them): whether it is defined in section `index`.
    fn symbols_in_section(&self, index: SectionIndex, count: usize) -> Vec<bool> {
        let mut own = vec![false; count];
        for s in self.file.symbols() {
            if s.section_index() == Some(index) {
                if let Some(slot) = own.get_mut(s.index().0) {
                    *slot = true;
                }
            }
        }
        own
    }

    /// The section's bytes with its relocations applied: an owned copy, made 1 MiB at a
    /// time, whose mapped source pages and relocation entries leave the resident set as they
    /// are used (a large module's `.debug_info` and `.rela.debug_info` are 17 and 24 MiB).
    fn relocated(&self, sec: &object::Section<'a, '_>, name: &str) -> Result<Cow<'a, [u8]>> {
        let data = self.data_of(sec, name)?;
        let mut relocs = self.relocations_releasing(sec).peekable();
        if relocs.peek().is_none() {
            return Ok(data);
        }
        let mut buf = self.copy_releasing(data);
        for (offset, rel) in relocs {
            self.apply_relocation(name, &mut buf, offset, &rel)?;
        }
        Ok(Cow::Owned(buf))
    }

    /// `data` as an owned vector; when it is the mapped file's bytes, each copied MiB is
    /// released from the mapping behind the copy.
    fn copy_releasing(&self, data: Cow<'a, [u8]>) -> Vec<u8> {
        let Cow::Borrowed(bytes) = data else {
            return data.into_owned();
        };
        let mut buf = Vec::with_capacity(bytes.len());
        for chunk in bytes.chunks(1 << 20) {
            buf.extend_from_slice(chunk);
            self.mapped.release_slice(chunk);
        }
        buf
    }

    /// The file range of the relocation table that applies to `sec`, and its entry size.
    fn relocation_table(&self, sec: &object::Section<'a, '_>) -> Option<(Range<usize>, usize)> {
        fn table<E: FileHeader>(
            file: &ElfFile<'_, E>,
            index: SectionIndex,
        ) -> Option<(Range<usize>, usize)> {
            let header = file
                .section_by_index(index)
                .ok()?
                .elf_relocation_section()
                .ok()??;
            let (offset, size) = header.file_range(file.endian())?;
            let start = usize::try_from(offset).ok()?;
            let end = start.checked_add(usize::try_from(size).ok()?)?;
            let entry = usize::try_from(header.sh_entsize(file.endian()).into()).ok()?;
            Some((start..end, entry))
        }
        match &self.file {
            object::File::Elf32(file) => table(file, sec.index()),
            object::File::Elf64(file) => table(file, sec.index()),
            _ => None,
        }
    }

    fn apply_relocation(
        &self,
        section: &str,
        buf: &mut [u8],
        offset: u64,
        rel: &object::Relocation,
    ) -> Result<()> {
        let bad = |reason: String| Error::BadSection {
            path: self.path.to_path_buf(),
            section: section.to_string(),
            reason,
        };
        // R_*_NONE (0 on every machine here): ld.lld -r leaves them where a relocation
        // pointed into a discarded section (LTO modules' `.debug_addr`); libdw skips them too.
        if matches!(rel.flags(), RelocationFlags::Elf { r_type } if r_type.0 == 0) {
            return Ok(());
        }
        let size = match rel.flags() {
            RelocationFlags::Elf { r_type } => reloc_size(self.machine, r_type.0),
            _ => None,
        }
        .or(match rel.size() {
            32 => Some(4),
            64 => Some(8),
            _ => None,
        })
        .ok_or_else(|| bad(format!("unsupported relocation at {offset:#x}")))?;
        let sym_value = match rel.target() {
            RelocationTarget::Symbol(SymbolIndex(i)) => self
                .file
                .symbol_by_index(SymbolIndex(i))
                // Relocation arithmetic is modulo 2^64, as with the addend below.
                .map(|s| {
                    s.address()
                        .wrapping_add(self.section_load_addr(s.section_index()))
                })
                .map_err(|e| bad(e.to_string()))?,
            RelocationTarget::Section(SectionIndex(i)) => {
                self.section_load_addr(Some(SectionIndex(i)))
            }
            RelocationTarget::Absolute => 0,
            _ => return Err(bad(format!("unsupported relocation target at {offset:#x}"))),
        };
        let at = offset as usize;
        let slot = at
            .checked_add(size)
            .and_then(|end| buf.get_mut(at..end))
            .ok_or_else(|| bad(format!("relocation at {offset:#x} is out of bounds")))?;
        // SHT_REL (i386, 32-bit Arm) keeps the addend in the relocated field itself.
        let addend = if rel.has_implicit_addend() {
            let mut bytes = [0u8; 8];
            match self.endian {
                Endian::Little => bytes[..size].copy_from_slice(slot),
                Endian::Big => bytes[8 - size..].copy_from_slice(slot),
            }
            match self.endian {
                Endian::Little => u64::from_le_bytes(bytes),
                Endian::Big => u64::from_be_bytes(bytes),
            }
        } else {
            rel.addend() as u64
        };
        write_slot(slot, sym_value.wrapping_add(addend), self.endian);
        Ok(())
    }

    /// The address a section is placed at: `sh_addr` (0 for ET_REL sections, which keeps
    /// relocated DWARF addresses section-relative, the same as their symbols' `st_value`).
    fn section_load_addr(&self, index: Option<SectionIndex>) -> u64 {
        index
            .and_then(|i| self.file.section_by_index(i).ok())
            .map_or(0, |s| s.address())
    }
}

fn elf_header_fields(data: &[u8], little: bool) -> (u16, bool) {
    let rd = |off: usize| {
        let b = [data[off], data[off + 1]];
        if little {
            u16::from_le_bytes(b)
        } else {
            u16::from_be_bytes(b)
        }
    };
    // e_type at 16, e_machine at 18, for both ELF classes.
    (rd(18), rd(16) == 1)
}
