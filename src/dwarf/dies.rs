//! A DIE cursor for walks that visit every DIE of a unit and read a few attributes of some
//! (the types walker). Each abbreviation is compiled once per unit into a plan: to skip a
//! DIE, runs of fixed-size attributes become one bounds-checked step and variable-size ones
//! are skipped by form; to read one, the attributes the walk wants are parsed — the common
//! forms here, exactly as gimli's `parse_attribute` parses them, the others by gimli itself —
//! and the runs between them skipped the same way. gimli's own `skip_attributes` looks every
//! form's size up again at every DIE, and `read_attributes` parses every attribute into a
//! vector.

use gimli::{
    Abbreviation, Abbreviations, Attribute, AttributeSpecification, AttributeValue, DebugStrOffset,
    DwAt, DwForm, EntriesRaw, Format, Reader, ReaderOffset, UnitHeader, UnitOffset,
};
use rustc_hash::FxHashMap;

use super::units::R;

/// Abbreviation codes below this are planned in a vector indexed by code (gcc and clang
/// number a unit's abbreviations from 1); larger ones in a map.
const VECTOR_CODES: u64 = 1 << 16;

/// One step over a DIE's attributes.
#[derive(Clone, Copy)]
enum Step {
    Skip(Skip),
    /// Read this attribute.
    Read(AttributeSpecification),
}

/// Attributes passed over without reading them.
#[derive(Clone, Copy)]
enum Skip {
    /// A run of fixed-size attributes, this many bytes.
    Bytes(usize),
    /// One attribute of a variable-size form.
    Form(DwForm),
}

/// How the DIEs of one abbreviation are skipped and read: ranges of [`AbbrevPlans::steps`].
#[derive(Clone, Copy)]
pub(crate) struct Plan {
    skip: (u32, u32),
    read: (u32, u32),
    /// Whether an attribute's form can refer to a DIE of another unit.
    pub(crate) leaves_unit: bool,
}

/// The plans of one unit's abbreviations, each made at the first DIE that uses it.
pub(crate) struct AbbrevPlans {
    /// Whether the walk reads an attribute.
    wanted: fn(DwAt) -> bool,
    by_code: Vec<Option<Plan>>,
    large_codes: FxHashMap<u64, Plan>,
    steps: Vec<Step>,
}

impl AbbrevPlans {
    /// Plans for a walk that reads the attributes `wanted` accepts.
    pub(crate) fn new(wanted: fn(DwAt) -> bool) -> Self {
        AbbrevPlans {
            wanted,
            by_code: Vec::new(),
            large_codes: FxHashMap::default(),
            steps: Vec::new(),
        }
    }

    /// The plan of `abbrev`, an abbreviation of the unit `header` heads.
    #[inline]
    pub(crate) fn plan(&mut self, abbrev: &Abbreviation, header: &UnitHeader<R<'_>>) -> Plan {
        let code = abbrev.code();
        let cached = if code < VECTOR_CODES {
            self.by_code.get(code as usize).copied().flatten()
        } else {
            self.large_codes.get(&code).copied()
        };
        cached.unwrap_or_else(|| self.make(abbrev, header))
    }

    fn make(&mut self, abbrev: &Abbreviation, header: &UnitHeader<R<'_>>) -> Plan {
        let specs = abbrev.attributes();
        let skip = self.compile(specs, header, |_| false);
        let wanted = self.wanted;
        let read = self.compile(specs, header, |spec| wanted(spec.name()));
        let plan = Plan {
            skip,
            read,
            leaves_unit: specs.iter().any(|a| form_leaves_unit(a.form())),
        };
        let code = abbrev.code();
        if code < VECTOR_CODES {
            if self.by_code.len() <= code as usize {
                self.by_code.resize(code as usize + 1, None);
            }
            self.by_code[code as usize] = Some(plan);
        } else {
            self.large_codes.insert(code, plan);
        }
        plan
    }

    /// Appends the steps over `specs` that read the attributes `read` accepts and skip the
    /// others, merging adjacent fixed sizes; returns their range.
    fn compile(
        &mut self,
        specs: &[AttributeSpecification],
        header: &UnitHeader<R<'_>>,
        read: impl Fn(&AttributeSpecification) -> bool,
    ) -> (u32, u32) {
        let start = self.steps.len() as u32;
        let mut run = 0;
        for spec in specs {
            let size = spec.size(header).filter(|_| !read(spec));
            if let Some(size) = size {
                run += size;
                continue;
            }
            if run > 0 {
                self.steps.push(Step::Skip(Skip::Bytes(run)));
                run = 0;
            }
            self.steps.push(if read(spec) {
                Step::Read(*spec)
            } else {
                Step::Skip(Skip::Form(spec.form()))
            });
        }
        if run > 0 {
            self.steps.push(Step::Skip(Skip::Bytes(run)));
        }
        (start, self.steps.len() as u32)
    }

    fn steps(&self, range: (u32, u32)) -> &[Step] {
        &self.steps[range.0 as usize..range.1 as usize]
    }
}

/// Whether an attribute of this form can refer to a DIE of another unit.
fn form_leaves_unit(form: DwForm) -> bool {
    matches!(
        form,
        gimli::DW_FORM_ref_addr | gimli::DW_FORM_ref_sig8 | gimli::DW_FORM_GNU_ref_alt
    )
}

/// A position in a unit's DIEs, as gimli's `EntriesRaw` keeps it: the DIEs left, and the
/// depth of the next one.
pub(crate) struct DieCursor<'a, 'u> {
    header: &'u UnitHeader<R<'a>>,
    abbrevs: &'u Abbreviations,
    input: R<'a>,
    format: Format,
    /// The unit offset just past the last DIE.
    end: usize,
    depth: isize,
}

impl<'a, 'u> DieCursor<'a, 'u> {
    /// A cursor at the DIE at `start`, or at the unit's first DIE.
    pub(crate) fn new(
        header: &'u UnitHeader<R<'a>>,
        abbrevs: &'u Abbreviations,
        start: Option<UnitOffset>,
    ) -> gimli::Result<Self> {
        let start = start.unwrap_or_else(|| header.root_offset());
        let input = header.range_from(start..)?;
        Ok(DieCursor {
            header,
            abbrevs,
            format: header.format(),
            end: start.0 + input.len(),
            input,
            depth: 0,
        })
    }

    /// The unit header of the DIEs walked.
    pub(crate) fn header(&self) -> &'u UnitHeader<R<'a>> {
        self.header
    }

    /// Whether no DIE is left.
    pub(crate) fn is_empty(&self) -> bool {
        self.input.is_empty()
    }

    /// The unit offset of the next DIE.
    pub(crate) fn next_offset(&self) -> UnitOffset {
        UnitOffset(self.end - self.input.len())
    }

    /// The depth of the next DIE, updated by [`Self::read_abbreviation`].
    pub(crate) fn next_depth(&self) -> isize {
        self.depth
    }

    /// Reads the next DIE's abbreviation (`None` for a null entry, which ends a list of
    /// children), as `EntriesRaw::read_abbreviation`.
    pub(crate) fn read_abbreviation(&mut self) -> gimli::Result<Option<&'u Abbreviation>> {
        // Nearly every code fits in one byte: LEB128's loop only for the others.
        let code = match self.input.slice().first() {
            Some(&byte) if byte < 0x80 => {
                self.input.skip(1)?;
                u64::from(byte)
            }
            _ => self.input.read_uleb128()?,
        };
        if code == 0 {
            self.depth -= 1;
            return Ok(None);
        }
        let abbrev = self
            .abbrevs
            .get(code)
            .ok_or(gimli::Error::InvalidAbbreviationCode(code))?;
        if abbrev.has_children() {
            self.depth += 1;
        }
        Ok(Some(abbrev))
    }

    /// Skips the attributes of the DIE whose abbreviation was just read.
    pub(crate) fn skip(&mut self, plans: &AbbrevPlans, plan: Plan) -> gimli::Result<()> {
        // A skip plan has no reads.
        for &step in plans.steps(plan.skip) {
            if let Step::Skip(skip) = step {
                self.skip_over(skip)?;
            }
        }
        Ok(())
    }

    /// Reads the wanted attributes of the DIE whose abbreviation was just read, passing each
    /// name and raw value (gimli's `Attribute::raw_value`) to `read` in order, and skips the
    /// others.
    pub(crate) fn read<E: From<gimli::Error>>(
        &mut self,
        plans: &AbbrevPlans,
        plan: Plan,
        mut read: impl FnMut(DwAt, AttributeValue<R<'a>>) -> Result<(), E>,
    ) -> Result<(), E> {
        for &step in plans.steps(plan.read) {
            match step {
                Step::Read(spec) => {
                    let value = self.read_value(spec)?;
                    read(spec.name(), value)?;
                }
                Step::Skip(skip) => self.skip_over(skip)?,
            }
        }
        Ok(())
    }

    /// Reads every attribute of the DIE whose abbreviation `abbrev` was just read into `buf`,
    /// as `EntriesRaw::read_attributes`.
    pub(crate) fn read_all(
        &mut self,
        abbrev: &Abbreviation,
        buf: &mut Vec<Attribute<R<'a>>>,
    ) -> gimli::Result<()> {
        self.with_gimli(|raw| raw.read_attributes(abbrev.attributes(), buf))
    }

    /// Reads one attribute's raw value: the forms the types walker meets on nearly every
    /// DIE parsed here as gimli parses them, the others (`data4` and `data8` among them,
    /// which gimli reads as section offsets for some attributes) by gimli.
    #[inline(always)]
    fn read_value(&mut self, spec: AttributeSpecification) -> gimli::Result<AttributeValue<R<'a>>> {
        let input = &mut self.input;
        Ok(match spec.form() {
            gimli::DW_FORM_strp => {
                AttributeValue::DebugStrRef(DebugStrOffset(input.read_offset(self.format)?))
            }
            gimli::DW_FORM_ref1 => AttributeValue::UnitRef(UnitOffset(input.read_u8()?.into())),
            gimli::DW_FORM_ref2 => AttributeValue::UnitRef(UnitOffset(input.read_u16()?.into())),
            gimli::DW_FORM_ref4 => AttributeValue::UnitRef(UnitOffset(input.read_u32()? as usize)),
            gimli::DW_FORM_data1 => AttributeValue::Data1(input.read_u8()?),
            gimli::DW_FORM_data2 => AttributeValue::Data2(input.read_u16()?),
            gimli::DW_FORM_udata => AttributeValue::Udata(input.read_uleb128()?),
            gimli::DW_FORM_sdata => AttributeValue::Sdata(input.read_sleb128()?),
            gimli::DW_FORM_implicit_const => AttributeValue::Sdata(
                spec.implicit_const_value()
                    .ok_or(gimli::Error::InvalidImplicitConst)?,
            ),
            gimli::DW_FORM_flag => AttributeValue::Flag(input.read_u8()? != 0),
            gimli::DW_FORM_flag_present => AttributeValue::Flag(true),
            gimli::DW_FORM_string => AttributeValue::String(input.read_null_terminated_slice()?),
            gimli::DW_FORM_exprloc => {
                let len = input.read_uleb128().and_then(usize::from_u64)?;
                AttributeValue::Exprloc(gimli::Expression(input.split(len)?))
            }
            _ => self.with_gimli(|raw| raw.read_attribute(spec))?.raw_value(),
        })
    }

    /// Runs `f` on a gimli reader at this position, then moves past what it read.
    #[inline(always)]
    fn with_gimli<T>(
        &mut self,
        f: impl FnOnce(&mut EntriesRaw<'u, R<'a>>) -> gimli::Result<T>,
    ) -> gimli::Result<T> {
        let at = self.next_offset();
        let mut raw = self.header.entries_raw(self.abbrevs, Some(at))?;
        let value = f(&mut raw)?;
        self.input.skip(raw.next_offset().0 - at.0)?;
        Ok(value)
    }

    fn skip_over(&mut self, skip: Skip) -> gimli::Result<()> {
        match skip {
            Skip::Bytes(n) => self.input.skip(n),
            Skip::Form(form) => self.skip_form(form),
        }
    }

    /// Skips one attribute of a variable-size form, as gimli's `skip_attributes` does.
    fn skip_form(&mut self, mut form: DwForm) -> gimli::Result<()> {
        loop {
            let input = &mut self.input;
            return match form {
                gimli::DW_FORM_indirect => {
                    form = DwForm(input.read_uleb128_u16()?);
                    // The form read may have a fixed size.
                    let spec = AttributeSpecification::new(
                        DwAt(0),
                        form,
                        (form == gimli::DW_FORM_implicit_const).then_some(0),
                    );
                    match spec.size(self.header) {
                        Some(size) => input.skip(size),
                        None => continue,
                    }
                }
                gimli::DW_FORM_block1 => {
                    let n = input.read_u8()?;
                    input.skip(n.into())
                }
                gimli::DW_FORM_block2 => {
                    let n = input.read_u16()?;
                    input.skip(n.into())
                }
                gimli::DW_FORM_block4 => {
                    let n = input.read_u32()?;
                    input.skip(n as usize)
                }
                gimli::DW_FORM_block | gimli::DW_FORM_exprloc => {
                    let n = input.read_uleb128().and_then(usize::from_u64)?;
                    input.skip(n)
                }
                gimli::DW_FORM_string => input.read_null_terminated_slice().map(drop),
                gimli::DW_FORM_udata
                | gimli::DW_FORM_sdata
                | gimli::DW_FORM_ref_udata
                | gimli::DW_FORM_strx
                | gimli::DW_FORM_GNU_str_index
                | gimli::DW_FORM_addrx
                | gimli::DW_FORM_GNU_addr_index
                | gimli::DW_FORM_loclistx
                | gimli::DW_FORM_rnglistx => input.skip_leb128(),
                _ => Err(gimli::Error::UnknownForm(form)),
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use object::{Object, ObjectSection};

    /// Walks every DIE of `info`'s units three ways — gimli's `EntriesRaw` reading every
    /// attribute, a cursor reading the attributes `wanted` accepts, a cursor skipping every
    /// DIE — and checks that all three see the same offsets, depths and abbreviations, and
    /// that the cursor reads gimli's raw values. Returns the number of DIEs.
    fn walk_three_ways(info: &[u8], abbrev: &[u8], wanted: fn(DwAt) -> bool) -> usize {
        let endian = gimli::RunTimeEndian::Little;
        let dwarf = gimli::Dwarf::<R<'_>> {
            debug_info: gimli::DebugInfo::new(info, endian),
            debug_abbrev: gimli::DebugAbbrev::new(abbrev, endian),
            ..Default::default()
        };
        let mut dies = 0;
        let mut units = dwarf.units();
        while let Some(header) = units.next().unwrap() {
            let abbrevs = dwarf.abbreviations(&header).unwrap();
            let (mut reads, mut skips) = (AbbrevPlans::new(wanted), AbbrevPlans::new(|_| false));
            let mut gimli_raw = header.entries_raw(&abbrevs, None).unwrap();
            let mut reader = DieCursor::new(&header, &abbrevs, None).unwrap();
            let mut skipper = DieCursor::new(&header, &abbrevs, None).unwrap();
            let mut attrs = Vec::new();
            while !gimli_raw.is_empty() {
                for cursor in [&reader, &skipper] {
                    assert_eq!(cursor.next_offset(), gimli_raw.next_offset());
                    assert_eq!(cursor.next_depth(), gimli_raw.next_depth());
                }
                let expected = gimli_raw.read_abbreviation().unwrap();
                let code = |a: Option<&Abbreviation>| a.map(Abbreviation::code);
                assert_eq!(code(reader.read_abbreviation().unwrap()), code(expected));
                assert_eq!(code(skipper.read_abbreviation().unwrap()), code(expected));
                let Some(abbrev) = expected else {
                    continue;
                };
                gimli_raw
                    .read_attributes(abbrev.attributes(), &mut attrs)
                    .unwrap();
                let want: Vec<_> = attrs
                    .iter()
                    .filter(|a| wanted(a.name()))
                    .map(|a| (a.name(), a.raw_value()))
                    .collect();
                let mut got = Vec::new();
                let plan = reads.plan(abbrev, &header);
                reader
                    .read(&reads, plan, |name, value| {
                        got.push((name, value));
                        Ok::<(), gimli::Error>(())
                    })
                    .unwrap();
                assert_eq!(got, want, "DIE {dies}");
                let plan = skips.plan(abbrev, &header);
                skipper.skip(&skips, plan).unwrap();
                dies += 1;
            }
            assert!(reader.is_empty() && skipper.is_empty());
        }
        dies
    }

    /// `.debug_info` and `.debug_abbrev` of the types fixture compiled by `cc` with `flags`.
    fn compiled_fixture(cc: &str, flags: &[&str]) -> (Vec<u8>, Vec<u8>) {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("types.o");
        let src = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/types.c");
        let status = std::process::Command::new(cc)
            .args(flags)
            .args(["-c", "-o"])
            .arg(&out)
            .arg(src)
            .status()
            .unwrap_or_else(|e| panic!("{cc}: {e}"));
        assert!(status.success(), "{cc} {flags:?} failed");
        let data = std::fs::read(&out).unwrap();
        let file = object::File::parse(&*data).unwrap();
        let section = |name| {
            let s = file.section_by_name(name).expect("the fixture has DWARF");
            s.uncompressed_data().unwrap().into_owned()
        };
        (section(".debug_info"), section(".debug_abbrev"))
    }

    #[test]
    fn the_cursor_reads_and_skips_what_gimli_reads() {
        let builds: [(&str, &[&str]); 3] = [
            ("gcc", &["-O2", "-gdwarf-4"]),
            ("gcc", &["-O2", "-gdwarf-5"]),
            ("clang", &["-O2", "-gdwarf-5"]),
        ];
        for (cc, flags) in builds {
            let (info, abbrev) = compiled_fixture(cc, flags);
            // Every attribute read; none (runs of skips only); and reads between skips.
            let all = walk_three_ways(&info, &abbrev, |_| true);
            assert!(all > 100, "{cc} {flags:?}: only {all} DIEs");
            assert_eq!(walk_three_ways(&info, &abbrev, |_| false), all);
            assert_eq!(walk_three_ways(&info, &abbrev, |n| n.0 % 3 != 0), all);
        }
    }
}
