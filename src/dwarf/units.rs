//! Compile units: loading the DWARF sections for gimli, listing the CUs in DWARF order, and
//! the per-CU context (abbreviations, string bases, language, producer) the decoders need.
//!
//! A `gimli::Unit` is not built: it parses the line-program header, which an encoder never
//! needs and which would only add work and resident memory.

use std::borrow::Cow;
use std::sync::Arc;

use gimli::{
    AttributeValue, DebugAddrBase, DebugLocListsBase, DebugStrOffsetsBase, DwLang, EndianSlice,
    Reader, RunTimeEndian, UnitHeader, UnitOffset,
};

use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use crate::btf::Endian;
use crate::dwarf::error::DwarfCause;
use crate::dwarf::unit_copies::UnitCopies;
use crate::error::{Error, Result};
use crate::input::elf::Elf;
use crate::mapped::Mapped;

/// The reader every decoder uses: a borrowed slice with the target's byte order.
pub type R<'a> = EndianSlice<'a, RunTimeEndian>;

/// The debug sections an encoder reads, owned or borrowed from the mapped file.
pub struct DebugSections<'a> {
    info: Cow<'a, [u8]>,
    abbrev: Cow<'a, [u8]>,
    str: Cow<'a, [u8]>,
    line_str: Cow<'a, [u8]>,
    str_offsets: Cow<'a, [u8]>,
    addr: Cow<'a, [u8]>,
    loclists: Cow<'a, [u8]>,
    loc: Cow<'a, [u8]>,
    types: Cow<'a, [u8]>,
    endian: RunTimeEndian,
    /// The supplementary file's sections (`dwz -m`), copied out of it.
    sup: Option<Box<DebugSections<'static>>>,
    /// `.debug_info` read (and relocated) unit by unit ([`DebugSections::load_by_unit`]);
    /// `info` is then the section as the file holds it, which the unit headers are listed
    /// from.
    by_unit: Option<UnitCopies<'a>>,
}

impl<'a> DebugSections<'a> {
    /// Loads the debug sections of `elf`, and of the supplementary file its
    /// `.gnu_debugaltlink` names; `None` when it has no `.debug_info`.
    pub fn load(elf: &Elf<'a>) -> Result<Option<Self>> {
        if !elf.has_section(".debug_info") {
            return Ok(None);
        }
        let sup = match elf.section_data(".gnu_debugaltlink")? {
            Some(link) => Some(Box::new(load_sup(elf.path(), &link)?)),
            None => None,
        };
        Self::load_own(elf, sup, false)
    }

    /// [`DebugSections::load`], except that `.debug_info` is read from the file unit by unit
    /// as [`DebugSections::unit_header`] reads its units (and a relocatable object's
    /// relocated), when the input allows it (the section uncompressed, no `.debug_types`, no
    /// supplementary file; for a relocatable object, no type units and its relocations as
    /// `Elf::range_relocations` takes them); otherwise whole.
    pub fn load_by_unit(elf: &Elf<'a>) -> Result<Option<Self>> {
        if !elf.has_section(".debug_info") {
            return Ok(None);
        }
        if elf.has_section(".gnu_debugaltlink") || elf.has_section(".debug_types") {
            return Self::load(elf);
        }
        Self::load_own(elf, None, true)
    }

    /// Loads the debug sections of `elf` itself, with `sup` as its supplementary file's. A
    /// supplementary file's own `.gnu_debugaltlink` is not followed: dwz writes none, and a
    /// file naming itself (or a chain of them) would otherwise be read without end.
    fn load_own(
        elf: &Elf<'a>,
        sup: Option<Box<DebugSections<'static>>>,
        by_unit: bool,
    ) -> Result<Option<Self>> {
        let by_unit = match by_unit {
            true => copies_by_unit(elf)?,
            false => None,
        };
        let info = match &by_unit {
            Some(units) => Cow::Borrowed(units.unrelocated()),
            None => match elf.debug_section(".debug_info")? {
                Some(info) => info,
                None => return Ok(None),
            },
        };
        let get = |name: &str| -> Result<Cow<'a, [u8]>> {
            Ok(elf.debug_section(name)?.unwrap_or(Cow::Borrowed(&[])))
        };
        Ok(Some(DebugSections {
            info,
            abbrev: get(".debug_abbrev")?,
            str: get(".debug_str")?,
            line_str: get(".debug_line_str")?,
            str_offsets: get(".debug_str_offsets")?,
            addr: get(".debug_addr")?,
            loclists: get(".debug_loclists")?,
            loc: get(".debug_loc")?,
            types: get(".debug_types")?,
            endian: run_time_endian(elf.endian),
            sup,
            by_unit,
        }))
    }

    /// The unit of `header` ready to read: when `.debug_info` is read unit by unit, its
    /// header read again from the unit's copy (a listed header's abbreviation offset and
    /// entries are those of the mapped, unrelocated section), else `header` itself.
    pub fn unit_header<'s>(
        &'s self,
        header: UnitHeader<R<'s>>,
        path: &Path,
    ) -> Result<UnitHeader<R<'s>>> {
        let (Some(units), Some(offset)) = (&self.by_unit, header.debug_info_offset()) else {
            return Ok(header);
        };
        let start = offset.0;
        let bytes = units.unit(start..start + header.length_including_self())?;
        let bad = |e| Error::BadDwarf {
            path: path.to_path_buf(),
            offset: start as u64,
            cause: DwarfCause::Read(e),
        };
        let read = gimli::DebugInfo::new(bytes, self.endian)
            .units()
            .next()
            .map_err(bad)?
            .ok_or(gimli::Error::UnexpectedEof(gimli::ReaderOffsetId(0)))
            .map_err(bad)?;
        let entries = read
            .range_from(UnitOffset(read.header_size())..)
            .map_err(bad)?;
        Ok(UnitHeader::new(
            read.encoding(),
            read.unit_length(),
            read.type_(),
            read.debug_abbrev_offset(),
            gimli::SectionId::DebugInfo,
            gimli::UnitSectionOffset(start),
            entries,
        ))
    }

    /// Gives back the copies of the units in `range` of `.debug_info`, when it is read unit
    /// by unit; their readers must be done with them.
    pub fn release_units(&self, range: std::ops::Range<usize>) {
        if let Some(units) = &self.by_unit {
            units.release(range);
        }
    }

    /// Whether `.debug_info` is read unit by unit, so that the workers never read its mapped
    /// pages.
    pub fn copies_units(&self) -> bool {
        self.by_unit.is_some()
    }

    /// The same sections, owned.
    fn into_owned(self) -> DebugSections<'static> {
        let own = |c: Cow<'a, [u8]>| Cow::Owned(c.into_owned());
        DebugSections {
            info: own(self.info),
            abbrev: own(self.abbrev),
            str: own(self.str),
            line_str: own(self.line_str),
            str_offsets: own(self.str_offsets),
            addr: own(self.addr),
            loclists: own(self.loclists),
            loc: own(self.loc),
            types: own(self.types),
            endian: self.endian,
            sup: None,
            by_unit: None,
        }
    }

    /// The gimli view of these sections (and of the supplementary file's, as `sup()`).
    pub fn dwarf<'s>(&'s self) -> gimli::Dwarf<R<'s>> {
        let endian = self.endian;
        let r = |d: &'s Cow<'a, [u8]>| -> R<'s> { EndianSlice::new(&d[..], endian) };
        let mut dwarf = gimli::Dwarf {
            debug_info: gimli::DebugInfo::from(r(&self.info)),
            debug_abbrev: gimli::DebugAbbrev::from(r(&self.abbrev)),
            debug_str: gimli::DebugStr::from(r(&self.str)),
            debug_line_str: gimli::DebugLineStr::from(r(&self.line_str)),
            debug_str_offsets: gimli::DebugStrOffsets::from(r(&self.str_offsets)),
            debug_addr: gimli::DebugAddr::from(r(&self.addr)),
            debug_types: gimli::DebugTypes::from(r(&self.types)),
            locations: gimli::LocationLists::new(
                gimli::DebugLoc::from(r(&self.loc)),
                gimli::DebugLocLists::from(r(&self.loclists)),
            ),
            ..Default::default()
        };
        if let Some(sup) = &self.sup {
            dwarf.set_sup(sup.dwarf());
        }
        dwarf
    }

    /// The `.debug_info` bytes (for releasing pages of finished CUs).
    pub fn info_bytes(&self) -> &[u8] {
        &self.info
    }
}

/// One compile unit, ready to decode.
#[derive(Debug)]
pub struct Cu<'a> {
    /// The unit's header.
    pub header: UnitHeader<R<'a>>,
    /// Its abbreviations.
    pub abbrevs: Arc<gimli::Abbreviations>,
    /// `DW_AT_str_offsets_base`, for `DW_FORM_strx*` (0 when absent).
    pub str_offsets_base: DebugStrOffsetsBase<usize>,
    /// `DW_AT_addr_base` (or `DW_AT_GNU_addr_base`): where this CU's `.debug_addr` entries
    /// start, for `DW_OP_addrx`/`DW_FORM_addrx` (0 when absent).
    pub addr_base: DebugAddrBase<usize>,
    /// `DW_AT_language`, for `--lang_exclude`.
    pub language: Option<DwLang>,
    /// `DW_AT_producer` names clang (pahole's `producer_clang`: clang's rules apply).
    pub producer_clang: bool,
    /// Offset of the unit header in `.debug_info`.
    pub offset: usize,
    /// Byte order of the target (bitfield offsets depend on it).
    pub little_endian: bool,
    /// The unit is in the supplementary file (`dwz -m`), whose sections are `dwarf.sup()`.
    pub sup: bool,
    /// `DW_AT_loclists_base` (for `DW_FORM_loclistx` parameter locations).
    pub loclists_base: DebugLocListsBase<usize>,
}

/// gimli's name for a byte order.
fn run_time_endian(endian: Endian) -> RunTimeEndian {
    match endian {
        Endian::Little => RunTimeEndian::Little,
        Endian::Big => RunTimeEndian::Big,
    }
}

/// `.debug_info` of `elf`, to be read (and relocated) unit by unit, when it lies in the file
/// uncompressed and, for a relocatable object, its relocations allow it and every unit is a
/// compile or partial unit (a type unit is read from other units, which see the mapped
/// section: unrelocated there, as the file holds it otherwise).
fn copies_by_unit<'a>(elf: &Elf<'a>) -> Result<Option<UnitCopies<'a>>> {
    let (bytes, relocations) = if elf.relocatable {
        let Some(relocations) = elf.range_relocations(".debug_info")? else {
            return Ok(None);
        };
        if !only_compile_units(relocations.bytes(), run_time_endian(elf.endian)) {
            return Ok(None);
        }
        (relocations.bytes(), Some(relocations))
    } else {
        let Some(Cow::Borrowed(bytes)) = elf.section_data(".debug_info")? else {
            return Ok(None);
        };
        (bytes, None)
    };
    Ok(Some(UnitCopies::new(
        elf.mapped(),
        bytes,
        relocations,
        elf.path(),
    )))
}

/// Whether every unit of `.debug_info` (`bytes`) is a compile or partial unit.
fn only_compile_units(bytes: &[u8], endian: RunTimeEndian) -> bool {
    let mut units = gimli::DebugInfo::new(bytes, endian).units();
    while let Ok(Some(header)) = units.next() {
        if !matches!(
            header.type_(),
            gimli::UnitType::Compilation | gimli::UnitType::Partial
        ) {
            return false;
        }
    }
    true
}

/// Reads the debug sections of the supplementary file that `.gnu_debugaltlink` (`link`: a path
/// and a build ID) names: a relative path is relative to the input's directory, as gdb reads it;
/// when the path does not exist, `/usr/lib/debug/.build-id/xx/yyyy.debug` of the build ID.
fn load_sup(input: &Path, link: &[u8]) -> Result<DebugSections<'static>> {
    let bad = |reason: String| Error::BadDwarf {
        path: input.to_path_buf(),
        offset: 0,
        cause: DwarfCause::Malformed(reason),
    };
    let nul = link.iter().position(|&b| b == 0).unwrap_or(link.len());
    let named = Path::new(std::ffi::OsStr::from_bytes(&link[..nul]));
    let build_id: String = link
        .get(nul + 1..)
        .unwrap_or(&[])
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let mut path = input.parent().unwrap_or(Path::new(".")).join(named);
    if !path.exists() && build_id.len() > 2 {
        let by_id = Path::new("/usr/lib/debug/.build-id")
            .join(&build_id[..2])
            .join(format!("{}.debug", &build_id[2..]));
        if by_id.exists() {
            path = by_id;
        }
    }
    let why = |e: Error| {
        bad(format!(
            "its DWARF was processed by dwz -m and refers to the supplementary file {} \
             (.gnu_debugaltlink), which cannot be read: {e}",
            path.display()
        ))
    };
    // SAFETY: the dwz supplementary file is an input of the run and is not modified during it,
    // a precondition the project accepts (pahole maps it through libdw alike); dwarf2btf
    // never writes it.
    let mapped = unsafe { Mapped::open(&path) }.map_err(why)?;
    let elf = Elf::parse(&mapped).map_err(why)?;
    let sections = DebugSections::load_own(&elf, None, false).map_err(why)?;
    let sections = sections.ok_or_else(|| {
        why(Error::BadDwarf {
            path: path.clone(),
            offset: 0,
            cause: "it has no .debug_info".into(),
        })
    })?;
    Ok(sections.into_owned())
}

/// The supplementary file's sections (`dwz -m`); without one (no `.gnu_debugaltlink`), the
/// forms that point into it are unsupported.
/// The NUL-terminated string at `offset` in a string section (without its NUL). gimli's
/// `get_str` looks for the NUL a byte at a time; every name of every DIE comes through here,
/// so the search is `memchr`'s.
fn str_in<'a, S: gimli::Section<R<'a>>>(section: &S, offset: usize) -> gimli::Result<&'a [u8]> {
    let bytes = section.reader().slice();
    let Some(rest) = bytes.get(offset..) else {
        return Err(gimli::Error::UnexpectedEof(section.reader().offset_id()));
    };
    match memchr::memchr(0, rest) {
        Some(len) => Ok(&rest[..len]),
        None => Err(gimli::Error::UnexpectedEof(section.reader().offset_id())),
    }
}

fn sup_of<'d, 'a>(dwarf: &'d gimli::Dwarf<R<'a>>) -> gimli::Result<&'d gimli::Dwarf<R<'a>>> {
    dwarf.sup().ok_or(gimli::Error::UnsupportedAttributeForm(
        gimli::DW_FORM_GNU_ref_alt,
    ))
}

/// Lists the CU headers in DWARF order.
pub fn unit_headers<'a>(
    dwarf: &gimli::Dwarf<R<'a>>,
    path: &std::path::Path,
) -> Result<Vec<UnitHeader<R<'a>>>> {
    unit_headers_releasing(dwarf, path, &|_| {})
}

/// Units read between two calls of the release hook of [`unit_headers_releasing`].
const RELEASE_EVERY: usize = 64;

/// [`unit_headers`], handing the `.debug_info` ranges it has read past to `release` as it
/// goes. Reading a header faults in the pages around it (the kernel maps up to 64 KiB per
/// fault), so on a kernel the scan alone would make ~100 MiB resident.
pub fn unit_headers_releasing<'a>(
    dwarf: &gimli::Dwarf<R<'a>>,
    path: &std::path::Path,
    release: &dyn Fn(std::ops::Range<usize>),
) -> Result<Vec<UnitHeader<R<'a>>>> {
    let mut out = Vec::new();
    let mut iter = dwarf.units();
    let mut released = 0;
    loop {
        match iter.next() {
            Ok(Some(h)) => {
                out.push(h);
                if out.len() % RELEASE_EVERY == 0 {
                    let to = h.offset().0;
                    release(released..to);
                    released = to;
                }
            }
            Ok(None) => return Ok(out),
            Err(e) => {
                return Err(Error::BadDwarf {
                    path: path.to_path_buf(),
                    offset: out
                        .last()
                        .map_or(0, |h: &UnitHeader<R<'a>>| h.offset().0 as u64),
                    cause: DwarfCause::Read(e),
                })
            }
        }
    }
}

impl<'a> Cu<'a> {
    /// Reads the CU's abbreviations and root DIE.
    pub fn new(
        dwarf: &gimli::Dwarf<R<'a>>,
        header: UnitHeader<R<'a>>,
        little_endian: bool,
    ) -> gimli::Result<Self> {
        Self::new_in(dwarf, header, little_endian, false)
    }

    /// [`Cu::new`] for a unit of the supplementary file when `sup`.
    pub fn new_in(
        dwarf: &gimli::Dwarf<R<'a>>,
        header: UnitHeader<R<'a>>,
        little_endian: bool,
        sup: bool,
    ) -> gimli::Result<Self> {
        let own = if sup { sup_of(dwarf)? } else { dwarf };
        let abbrevs = own.abbreviations(&header)?;
        let offset = header.offset().0;
        let mut cu = Cu {
            str_offsets_base: DebugStrOffsetsBase::default_for_encoding_and_file(
                header.encoding(),
                gimli::DwarfFileType::Main,
            ),
            loclists_base: DebugLocListsBase::default_for_encoding_and_file(
                header.encoding(),
                gimli::DwarfFileType::Main,
            ),
            header,
            abbrevs,
            addr_base: DebugAddrBase(0),
            language: None,
            producer_clang: false,
            offset,
            little_endian,
            sup,
        };
        let mut raw = cu.header.entries_raw(&cu.abbrevs, None)?;
        let mut root = gimli::DebuggingInformationEntry::null();
        raw.read_entry(&mut root)?;
        // clang writes DW_AT_producer (DW_FORM_strx1 in DWARF 5) before
        // DW_AT_str_offsets_base, so the producer is resolved once every base is known.
        let mut producer = None;
        for attr in root.attrs() {
            match (attr.name(), attr.value()) {
                (gimli::DW_AT_language, AttributeValue::Language(l)) => cu.language = Some(l),
                (gimli::DW_AT_str_offsets_base, AttributeValue::DebugStrOffsetsBase(b)) => {
                    cu.str_offsets_base = b
                }
                (gimli::DW_AT_loclists_base, AttributeValue::DebugLocListsBase(b)) => {
                    cu.loclists_base = b
                }
                (
                    gimli::DW_AT_addr_base | gimli::DW_AT_GNU_addr_base,
                    AttributeValue::DebugAddrBase(b),
                ) => cu.addr_base = b,
                (gimli::DW_AT_producer, v) => producer = Some(v),
                _ => {}
            }
        }
        if let Some(Ok(p)) = producer.map(|v| cu.string(dwarf, v)) {
            cu.producer_clang = p.windows(5).any(|w| w == b"clang");
        }
        Ok(cu)
    }

    /// Resolves a string attribute value (inline, strp, line_strp, strx).
    pub fn string(
        &self,
        dwarf: &gimli::Dwarf<R<'a>>,
        v: AttributeValue<R<'a>>,
    ) -> gimli::Result<&'a [u8]> {
        let main = dwarf;
        let dwarf = if self.sup { sup_of(dwarf)? } else { dwarf };
        match v {
            AttributeValue::String(s) => Ok(s.slice()),
            AttributeValue::DebugStrRef(o) => str_in(&dwarf.debug_str, o.0),
            AttributeValue::DebugLineStrRef(o) => str_in(&dwarf.debug_line_str, o.0),
            AttributeValue::DebugStrRefSup(o) => str_in(&sup_of(main)?.debug_str, o.0),
            AttributeValue::DebugStrOffsetsIndex(i) => {
                let o = dwarf.debug_str_offsets.get_str_offset(
                    self.header.format(),
                    self.str_offsets_base,
                    i,
                )?;
                str_in(&dwarf.debug_str, o.0)
            }
            _ => Err(gimli::Error::ExpectedStringAttributeValue),
        }
    }

    /// The section offset of a DIE, for messages.
    pub fn die_offset(&self, off: UnitOffset<usize>) -> u64 {
        (self.offset + off.0) as u64
    }

    /// Whether the `.debug_info` DIE at `o` is in this unit.
    pub fn holds(&self, o: gimli::DebugInfoOffset<usize>) -> bool {
        self.header.section() == gimli::SectionId::DebugInfo && self.range().contains(&o.0)
    }

    /// The section offset of `bytes`, a slice of this unit's entries (`None` when it lies
    /// elsewhere). The unit's bytes need not lie at their section offset in memory: they
    /// are usually a copy of the unit alone ([`DebugSections::load_by_unit`]).
    pub fn section_offset_of(&self, bytes: &[u8]) -> Option<u64> {
        let header_size = self.header.header_size();
        let entries = self.header.range_from(UnitOffset(header_size)..).ok()?;
        let within = slice_offset(bytes, entries.slice())?;
        Some(within + (self.offset + header_size) as u64)
    }

    /// The byte range of this unit in its section.
    pub fn range(&self) -> std::ops::Range<usize> {
        self.offset..self.offset + self.header.length_including_self()
    }
}

/// Offset of `inner` within `outer`, when it lies there.
pub(crate) fn slice_offset(inner: &[u8], outer: &[u8]) -> Option<u64> {
    let start = (inner.as_ptr() as usize).checked_sub(outer.as_ptr() as usize)?;
    (start + inner.len() <= outer.len()).then_some(start as u64)
}
