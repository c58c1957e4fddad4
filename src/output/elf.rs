//! Writing sections into an ELF file in place (pahole's `-J` without `--btf_encode_detached`).
//!
//! Nothing already in the file moves: the bytes up to the end of the last section or segment
//! that stays are copied as they are; then come (when a section name is new) a grown copy of
//! the section-name table, the new section data and a new section header table. New
//! sections get the next indices, so no symbol, relocation or group index changes; a section
//! that is replaced keeps its index and header, with the offset and size of its new data.
//! This works the same for ET_EXEC, ET_REL and ET_DYN, 32- and 64-bit, either byte order, and
//! costs one in-kernel file copy (`copy_file_range`) on a 600 MB vmlinux. The result is
//! written to a temporary file beside the input, given the input's mode, flushed to disk and
//! renamed over it (see [`super`]), so on any error the input is untouched.
//!
//! Sections are added as objcopy's `--add-section` adds them (SHT_PROGBITS, no flags,
//! alignment 1). An allocated section with contents (the `.BTF` of a final vmlinux, inside a
//! loadable segment) cannot be replaced this way, and is refused. An allocated section that is
//! empty is replaced like any other: ld.lld keeps the linker script's empty `.BTF` output
//! section in `.tmp_vmlinux1` (GNU ld drops it), where the kernel's `link-vmlinux.sh` runs
//! `pahole -J` and then extracts `.BTF` with objcopy; its data then lies outside the segment
//! that holds its address, which nothing loads (pahole, through libelf, rewrites the layout of
//! the whole file instead).

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

use crate::error::{Error, Result};

const SHT_PROGBITS: u32 = 1;
const SHT_NOBITS: u32 = 8;
const SHF_ALLOC: u64 = 2;
/// `e_shnum` at or above this lives in section 0's `sh_size` (the ELF extended numbering).
const SHN_LORESERVE: u64 = 0xff00;
const SHN_XINDEX: u16 = 0xffff;

/// Adds each `(name, data)` section to the ELF file at `path`, or replaces the section of that
/// name; the file is rewritten through a temporary file and a rename.
pub fn write_sections(path: &Path, sections: &[(&str, &[u8])]) -> Result<()> {
    // Write beside the file itself, not beside a symlink to it.
    let path = std::fs::canonicalize(path).map_err(|e| Error::io(path, e))?;
    super::may_write(&path).map_err(|e| Error::io(&path, e))?;
    let mut input = File::open(&path).map_err(|e| Error::io(&path, e))?;
    let meta = input.metadata().map_err(|e| Error::io(&path, e))?;
    let keep = super::Keep::of(&meta).map_err(|e| Error::io(&path, e))?;
    let file_len = meta.len();
    let headers = Headers::read(&mut input, file_len).map_err(|reason| Error::BadElf {
        path: path.clone(),
        reason,
    })?;
    let plan = headers.plan(sections).map_err(|reason| Error::BadElf {
        path: path.clone(),
        reason,
    })?;
    let tmp = super::temp_path(&path, "btf");
    let _cleanup = super::signals::remove_on_signal(&tmp);
    let result = super::create_temp(&tmp).and_then(|mut out| {
        write_planned(&mut input, &mut out, &headers, &plan, sections)?;
        super::commit(out, &tmp, &path, Some(&keep))
    });
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(Error::io(&path, e));
    }
    Ok(())
}

/// The ELF identification that decides how every header field is read.
#[derive(Clone, Copy, Debug)]
struct Class {
    is64: bool,
    big: bool,
}

impl Class {
    fn get(self, b: &[u8], off: usize, width: usize) -> u64 {
        let bytes = &b[off..off + width];
        let mut v = 0u64;
        for i in 0..width {
            let byte = if self.big {
                bytes[i]
            } else {
                bytes[width - 1 - i]
            };
            v = v << 8 | byte as u64;
        }
        v
    }

    fn put(self, b: &mut [u8], off: usize, width: usize, v: u64) {
        for i in 0..width {
            let byte = (v >> (8 * i)) as u8;
            let at = if self.big {
                off + width - 1 - i
            } else {
                off + i
            };
            b[at] = byte;
        }
    }

    /// The width of an address-sized field (`Elf64_Off`/`Elf32_Off`, `sh_flags`, ...).
    fn word(self) -> usize {
        if self.is64 {
            8
        } else {
            4
        }
    }

    fn ehdr_size(self) -> usize {
        if self.is64 {
            64
        } else {
            52
        }
    }

    fn shdr_size(self) -> usize {
        if self.is64 {
            64
        } else {
            40
        }
    }
}

/// Byte offsets of the ELF header fields this module reads or writes.
struct EhdrFields {
    phoff: usize,
    shoff: usize,
    phentsize: usize,
    phnum: usize,
    shentsize: usize,
    shnum: usize,
    shstrndx: usize,
}

impl EhdrFields {
    fn of(class: Class) -> Self {
        if class.is64 {
            EhdrFields {
                phoff: 32,
                shoff: 40,
                phentsize: 54,
                phnum: 56,
                shentsize: 58,
                shnum: 60,
                shstrndx: 62,
            }
        } else {
            EhdrFields {
                phoff: 28,
                shoff: 32,
                phentsize: 42,
                phnum: 44,
                shentsize: 46,
                shnum: 48,
                shstrndx: 50,
            }
        }
    }
}

/// One section header, every field widened to 64 bits.
#[derive(Clone, Copy, Debug, Default)]
struct Shdr {
    name: u64,
    kind: u64,
    flags: u64,
    addr: u64,
    offset: u64,
    size: u64,
    link: u64,
    info: u64,
    addralign: u64,
    entsize: u64,
}

impl Shdr {
    /// `(width, field)` in file order; the 32- and 64-bit layouts differ only in widths.
    fn fields(&mut self, class: Class) -> [(usize, &mut u64); 10] {
        let w = class.word();
        [
            (4, &mut self.name),
            (4, &mut self.kind),
            (w, &mut self.flags),
            (w, &mut self.addr),
            (w, &mut self.offset),
            (w, &mut self.size),
            (4, &mut self.link),
            (4, &mut self.info),
            (w, &mut self.addralign),
            (w, &mut self.entsize),
        ]
    }

    fn decode(class: Class, b: &[u8]) -> Self {
        let mut s = Shdr::default();
        let mut off = 0;
        for (width, field) in s.fields(class) {
            *field = class.get(b, off, width);
            off += width;
        }
        s
    }

    fn encode(mut self, class: Class, out: &mut Vec<u8>) {
        let start = out.len();
        out.resize(start + class.shdr_size(), 0);
        let mut off = start;
        for (width, field) in self.fields(class) {
            class.put(out, off, width, *field);
            off += width;
        }
    }

    fn end(&self) -> u64 {
        self.offset
            + if self.kind == SHT_NOBITS as u64 {
                0
            } else {
                self.size
            }
    }
}

/// The parts of the file's headers that decide the new layout.
struct Headers {
    class: Class,
    ehdr: Vec<u8>,
    shdrs: Vec<Shdr>,
    shstrndx: usize,
    shstrtab: Vec<u8>,
    /// End of the program header table and of every segment's file contents.
    segments_end: u64,
    /// The file's length: nothing past it is kept, whatever a header claims.
    file_len: u64,
}

fn read_at(f: &mut File, off: u64, len: usize) -> std::result::Result<Vec<u8>, String> {
    let mut buf = vec![0; len];
    f.seek(SeekFrom::Start(off))
        .and_then(|_| f.read_exact(&mut buf))
        .map_err(|e| format!("reading {len} bytes at {off:#x}: {e}"))?;
    Ok(buf)
}

impl Headers {
    fn read(f: &mut File, file_len: u64) -> std::result::Result<Self, String> {
        let ident = read_at(f, 0, 16).map_err(|_| "too short for an ELF header".to_string())?;
        if &ident[..4] != b"\x7fELF" {
            return Err("no ELF magic".into());
        }
        let class = Class {
            is64: match ident[4] {
                1 => false,
                2 => true,
                c => return Err(format!("unknown ELF class {c}")),
            },
            big: match ident[5] {
                1 => false,
                2 => true,
                d => return Err(format!("unknown ELF data encoding {d}")),
            },
        };
        let ehdr = read_at(f, 0, class.ehdr_size())
            .map_err(|_| "too short for an ELF header".to_string())?;
        let e = EhdrFields::of(class);
        let w = class.word();
        let field = |off: usize, width: usize| class.get(&ehdr, off, width);
        let (shoff, shentsize) = (field(e.shoff, w), field(e.shentsize, 2));
        if shoff == 0 {
            return Err("no section header table".into());
        }
        if shentsize != class.shdr_size() as u64 {
            return Err(format!("section header size {shentsize}"));
        }
        let in_file = |off: u64, len: u64| off.checked_add(len).is_some_and(|end| end <= file_len);
        let shdr_at = |f: &mut File, i: u64| -> std::result::Result<Shdr, String> {
            let off = shoff + i * shentsize;
            if !in_file(off, shentsize) {
                return Err("section header table runs past the end of the file".into());
            }
            Ok(Shdr::decode(class, &read_at(f, off, shentsize as usize)?))
        };
        let first = shdr_at(f, 0)?;
        let shnum = match field(e.shnum, 2) {
            0 => first.size,
            n => n,
        };
        if !in_file(shoff, shnum.saturating_mul(shentsize)) {
            return Err("section header table runs past the end of the file".into());
        }
        let table = read_at(f, shoff, (shnum * shentsize) as usize)?;
        let shdrs: Vec<Shdr> = table
            .chunks_exact(shentsize as usize)
            .map(|b| Shdr::decode(class, b))
            .collect();
        for (i, s) in shdrs.iter().enumerate() {
            if s.kind != SHT_NOBITS as u64 && !in_file(s.offset, s.size) {
                return Err(format!("section {i} runs past the end of the file"));
            }
        }
        let shstrndx = match field(e.shstrndx, 2) as u16 {
            SHN_XINDEX => first.link as usize,
            i => i as usize,
        };
        let names = shdrs
            .get(shstrndx)
            .filter(|_| shstrndx != 0)
            .ok_or_else(|| "no section name table".to_string())?;
        let shstrtab = read_at(f, names.offset, names.size as usize)?;
        let segments_end = segments_end(f, class, &ehdr, file_len)?;
        Ok(Headers {
            class,
            ehdr,
            shdrs,
            shstrndx,
            shstrtab,
            segments_end,
            file_len,
        })
    }

    /// The index of the section called `name`.
    fn find(&self, name: &str) -> Option<usize> {
        self.shdrs
            .iter()
            .position(|s| name_at(&self.shstrtab, s.name) == Some(name.as_bytes()))
    }

    /// Decides where everything goes.
    fn plan(&self, sections: &[(&str, &[u8])]) -> std::result::Result<Plan, String> {
        let mut shdrs = self.shdrs.clone();
        let mut shstrtab = self.shstrtab.clone();
        let mut targets = Vec::new();
        for (name, _) in sections {
            let index = match self.find(name) {
                Some(i) if shdrs[i].flags & SHF_ALLOC != 0 && shdrs[i].size != 0 => {
                    return Err(format!(
                        "its {name} section is allocated (part of a loaded segment) and cannot be replaced; use --btf_encode_detached"
                    ))
                }
                // A table other sections depend on (the section names' own, a symbol or
                // string table) that carries the name: replaced, the file would be corrupt.
                Some(i) if i == self.shstrndx || !replaceable_kind(shdrs[i].kind) => {
                    let what = match i == self.shstrndx {
                        true => "holds the section names".to_string(),
                        false => format!("is of ELF type {}, not data", shdrs[i].kind),
                    };
                    return Err(format!(
                        "its section named {name} {what}: replacing it would corrupt the file; \
                         use --btf_encode_detached"
                    ));
                }
                Some(i) => i,
                None => {
                    let name_off = find_name(&shstrtab, name).unwrap_or_else(|| {
                        let off = shstrtab.len();
                        shstrtab.extend_from_slice(name.as_bytes());
                        shstrtab.push(0);
                        off
                    });
                    shdrs.push(Shdr {
                        name: name_off as u64,
                        kind: SHT_PROGBITS as u64,
                        addralign: 1,
                        ..Shdr::default()
                    });
                    shdrs.len() - 1
                }
            };
            targets.push(index);
        }
        let names_grew = shstrtab.len() != self.shstrtab.len();
        // Everything that stays where it is: the ELF header, the segments and every section
        // but those being replaced (the name table too: its old bytes stay when it grows).
        let keep = self
            .shdrs
            .iter()
            .enumerate()
            .filter(|(i, _)| !targets.contains(i))
            .map(|(_, s)| s.end())
            .chain([self.class.ehdr_size() as u64, self.segments_end])
            .max()
            .unwrap_or(0)
            // A SHT_NOBITS section's offset, or a segment's, can point past the end of the
            // file (malformed or not): there are no bytes there to keep.
            .min(self.file_len);
        // A grown name table goes first, so that the new data ends the file's contents and
        // the next replacement of the same sections truncates it instead of leaving it behind.
        let mut at = keep;
        if names_grew {
            let names = &mut shdrs[self.shstrndx];
            names.offset = at;
            names.size = shstrtab.len() as u64;
            at += shstrtab.len() as u64;
        }
        for (&index, (_, data)) in targets.iter().zip(sections) {
            at = at.next_multiple_of(8);
            shdrs[index].offset = at;
            shdrs[index].size = data.len() as u64;
            at += data.len() as u64;
        }
        let shoff = at.next_multiple_of(self.class.word() as u64);
        Ok(Plan {
            keep,
            targets,
            shstrtab: names_grew.then_some(shstrtab),
            shdrs,
            shoff,
        })
    }
}

/// Whether a section of type `kind` may be replaced by BTF: data (`SHT_PROGBITS`, as
/// objcopy's `--add-section` and linkers make `.BTF`) or no data (`SHT_NOBITS`).
fn replaceable_kind(kind: u64) -> bool {
    kind == u64::from(SHT_PROGBITS) || kind == u64::from(SHT_NOBITS)
}

/// The end of the program header table and of every segment's file contents.
fn segments_end(
    f: &mut File,
    class: Class,
    ehdr: &[u8],
    file_len: u64,
) -> std::result::Result<u64, String> {
    let (e, w) = (EhdrFields::of(class), class.word());
    let (phoff, phentsize, phnum) = (
        class.get(ehdr, e.phoff, w),
        class.get(ehdr, e.phentsize, 2),
        class.get(ehdr, e.phnum, 2),
    );
    let table_len = phentsize * phnum;
    if phnum == 0 {
        return Ok(0);
    }
    let phdr_size = if class.is64 { 56 } else { 32 };
    if phentsize != phdr_size {
        return Err(format!("program header size {phentsize}"));
    }
    if phoff
        .checked_add(table_len)
        .is_none_or(|end| end > file_len)
    {
        return Err("program header table runs past the end of the file".into());
    }
    let table = read_at(f, phoff, table_len as usize)?;
    // p_offset and p_filesz: 64-bit at 8 and 32; 32-bit at 4 and 16.
    let (off_at, filesz_at) = if class.is64 { (8, 32) } else { (4, 16) };
    let ends = table.chunks_exact(phentsize as usize).map(|ph| {
        class
            .get(ph, off_at, w)
            .saturating_add(class.get(ph, filesz_at, w))
    });
    Ok(ends.fold(phoff + table_len, u64::max))
}

/// The NUL-terminated name at `off` in a string table.
fn name_at(table: &[u8], off: u64) -> Option<&[u8]> {
    let rest = table.get(off as usize..)?;
    rest.iter().position(|&b| b == 0).map(|end| &rest[..end])
}

/// An offset in `table` where `name` stands NUL-terminated (possibly as the tail of a longer
/// name, as linkers share suffixes).
fn find_name(table: &[u8], name: &str) -> Option<usize> {
    let mut needle = name.as_bytes().to_vec();
    needle.push(0);
    table
        .windows(needle.len())
        .position(|w| w == needle.as_slice())
}

/// The new layout.
struct Plan {
    /// Bytes `0..keep` of the input are copied unchanged.
    keep: u64,
    /// The section index of each new section's data, in the order given.
    targets: Vec<usize>,
    /// The grown section-name table, when a name had to be added.
    shstrtab: Option<Vec<u8>>,
    shdrs: Vec<Shdr>,
    shoff: u64,
}

fn write_planned(
    input: &mut File,
    out: &mut File,
    headers: &Headers,
    plan: &Plan,
    sections: &[(&str, &[u8])],
) -> std::io::Result<()> {
    let class = headers.class;
    input.seek(SeekFrom::Start(0))?;
    // std::io::copy between files uses copy_file_range: the kernel copies (or reflinks).
    let copied = std::io::copy(&mut (&mut *input).take(plan.keep), out)?;
    if copied != plan.keep {
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "the file shrank while it was rewritten",
        ));
    }
    for (&index, (_, data)) in plan.targets.iter().zip(sections) {
        out.seek(SeekFrom::Start(plan.shdrs[index].offset))?;
        out.write_all(data)?;
    }
    if let Some(names) = &plan.shstrtab {
        out.seek(SeekFrom::Start(plan.shdrs[headers.shstrndx].offset))?;
        out.write_all(names)?;
    }
    let mut table = Vec::with_capacity(plan.shdrs.len() * class.shdr_size());
    let mut shdrs = plan.shdrs.clone();
    let count = shdrs.len() as u64;
    if count >= SHN_LORESERVE {
        shdrs[0].size = count;
    }
    for s in &shdrs {
        s.encode(class, &mut table);
    }
    out.seek(SeekFrom::Start(plan.shoff))?;
    out.write_all(&table)?;
    let mut ehdr = headers.ehdr.clone();
    let e = EhdrFields::of(class);
    class.put(&mut ehdr, e.shoff, class.word(), plan.shoff);
    class.put(
        &mut ehdr,
        e.shnum,
        2,
        if count >= SHN_LORESERVE { 0 } else { count },
    );
    out.seek(SeekFrom::Start(0))?;
    out.write_all(&ehdr)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_fields_round_trip_in_both_classes_and_orders() {
        for (is64, big) in [(true, false), (true, true), (false, false), (false, true)] {
            let class = Class { is64, big };
            let s = Shdr {
                name: 7,
                kind: 1,
                flags: 2,
                addr: 0x1000,
                offset: 0x2345,
                size: 99,
                link: 3,
                info: 4,
                addralign: 8,
                entsize: 24,
            };
            let mut out = Vec::new();
            s.encode(class, &mut out);
            assert_eq!(out.len(), class.shdr_size());
            let back = Shdr::decode(class, &out);
            assert_eq!(format!("{back:?}"), format!("{s:?}"));
        }
    }

    #[test]
    fn names_are_found_as_suffixes_too() {
        let table = b"\0.text\0.rel.BTF\0.BTF_ids\0";
        assert_eq!(find_name(table, ".BTF"), Some(11));
        assert_eq!(name_at(table, 11), Some(&b".BTF"[..]));
        assert_eq!(find_name(table, ".BTF.base"), None);
    }
}
