//! The `elf_pipeline` target's input: a header of run options, then the file. The first byte
//! chooses the worker count, the function table design, where the base BTF comes from and
//! whether the harness compresses the object's debug sections before the run; a hostile base
//! follows as a length-prefixed part of the input. The compression writes real zlib and zstd
//! streams (stored and raw blocks, so that it costs no more than a copy) behind an ELF
//! compression header, so mutations of the DWARF inside still reach the decompression path,
//! which a mutated compressed stream almost never gets through.

use dwarf2btf::config::Design;

/// Where the base BTF of the second (split) run comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BaseChoice<'a> {
    /// `fuzz/base.btf`, the fixed base.
    Fixed,
    /// These bytes, from the input: raw BTF or an ELF with `.BTF`, valid or not.
    Input(&'a [u8]),
    /// None: the second run encodes plain BTF.
    None,
}

/// How the harness compresses the object's uncompressed `.debug_*` sections.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    /// Not at all: the file runs as the input gives it.
    None,
    /// `ELFCOMPRESS_ZLIB`.
    Zlib,
    /// `ELFCOMPRESS_ZSTD`.
    Zstd,
}

/// The run options and the file, split from a fuzz input.
#[derive(Clone, Copy, Debug)]
pub struct ElfInput<'a> {
    /// `-j`: 1 to 4.
    pub jobs: usize,
    /// `--func-table`.
    pub design: Design,
    /// `--btf_base` of the second run.
    pub base: BaseChoice<'a>,
    /// What the harness does to the debug sections first.
    pub compression: Compression,
    /// The first run writes to a character device (the harness's own), not a regular file.
    pub device_output: bool,
    /// The file to encode.
    pub object: &'a [u8],
}

impl<'a> ElfInput<'a> {
    /// Splits `data`: byte 0 holds the options, bits 0-1 the jobs less one, bits 2-3 the design
    /// (shared, dashmap, save-merge, private), bits 4-5 the base (0 fixed, 1 from the input, 2
    /// none, 3 from the input with the first run's output a character device), bits 6-7 the
    /// compression (0 and 3 none, 1 zlib, 2 zstd). With the base from the input, two bytes
    /// (little-endian) give its length and the base follows. What remains is the file. Option byte 0 is the target's original run: one job, the shared
    /// table, the fixed base, the file as given.
    pub fn parse(data: &'a [u8]) -> Self {
        let (opts, mut rest) = match data.split_first() {
            Some((&opts, rest)) => (opts, rest),
            None => (0, data),
        };
        let design = match (opts >> 2) & 3 {
            1 => Design::Dashmap,
            2 => Design::SaveMerge,
            3 => Design::Private,
            _ => Design::Shared,
        };
        let base = match (opts >> 4) & 3 {
            0 => BaseChoice::Fixed,
            2 => BaseChoice::None,
            _ => {
                let len = match rest {
                    [lo, hi, tail @ ..] => {
                        rest = tail;
                        usize::from(u16::from_le_bytes([*lo, *hi]))
                    }
                    _ => std::mem::take(&mut rest).len(),
                };
                let (base, tail) = rest.split_at(len.min(rest.len()));
                rest = tail;
                BaseChoice::Input(base)
            }
        };
        let compression = match opts >> 6 {
            1 => Compression::Zlib,
            2 => Compression::Zstd,
            _ => Compression::None,
        };
        ElfInput {
            jobs: usize::from(opts & 3) + 1,
            design,
            base,
            compression,
            device_output: (opts >> 4) & 3 == 3,
            object: rest,
        }
    }

    /// The inverse of [`ElfInput::parse`], for making seeds.
    pub fn to_bytes(self) -> Vec<u8> {
        let jobs = (self.jobs.clamp(1, 4) - 1) as u8;
        let design: u8 = match self.design {
            Design::Shared => 0,
            Design::Dashmap => 1,
            Design::SaveMerge => 2,
            Design::Private => 3,
        };
        let (base, base_bytes): (u8, &[u8]) = match self.base {
            BaseChoice::Fixed => (0, &[]),
            BaseChoice::Input(b) if self.device_output => (3, b),
            BaseChoice::Input(b) => (1, b),
            BaseChoice::None => (2, &[]),
        };
        let compression: u8 = match self.compression {
            Compression::None => 0,
            Compression::Zlib => 1,
            Compression::Zstd => 2,
        };
        let mut out = vec![jobs | design << 2 | base << 4 | compression << 6];
        if base & 1 == 1 {
            let len = u16::try_from(base_bytes.len()).expect("a base under 64 KiB");
            out.extend_from_slice(&len.to_le_bytes());
            out.extend_from_slice(base_bytes);
        }
        out.extend_from_slice(self.object);
        out
    }
}

const SHT_NOBITS: u32 = 8;
const SHF_ALLOC: u64 = 2;
const SHF_COMPRESSED: u64 = 0x800;

/// An ELF file's fields read and written in its own class and byte order.
struct Layout {
    is64: bool,
    little: bool,
}

impl Layout {
    fn get(&self, data: &[u8], off: usize, size: usize) -> Option<u64> {
        let b = data.get(off..off.checked_add(size)?)?;
        let mut v = 0u64;
        for i in 0..size {
            let byte = if self.little { b[size - 1 - i] } else { b[i] };
            v = v << 8 | u64::from(byte);
        }
        Some(v)
    }

    fn put(&self, data: &mut [u8], off: usize, size: usize, v: u64) {
        for i in 0..size {
            let shift = if self.little { i } else { size - 1 - i };
            data[off + i] = (v >> (8 * shift)) as u8;
        }
    }

    /// Bytes of an address-sized field.
    fn word(&self) -> usize {
        if self.is64 {
            8
        } else {
            4
        }
    }

    /// The ELF compression header: `Elf64_Chdr` or `Elf32_Chdr`.
    fn chdr(&self, ch_type: u32, size: u64) -> Vec<u8> {
        let w = self.word();
        let mut h = vec![0; if self.is64 { 24 } else { 12 }];
        self.put(&mut h, 0, 4, u64::from(ch_type));
        self.put(&mut h, if self.is64 { 8 } else { 4 }, w, size);
        self.put(&mut h, if self.is64 { 16 } else { 8 }, w, 1);
        h
    }
}

/// `elf` with every uncompressed, non-allocated `.debug_*` section compressed as `how` says
/// (`SHF_COMPRESSED`, the new contents appended at the end of the file); `None` when there is
/// nothing to compress or the headers cannot be followed (then the file runs as it is).
pub fn compress_debug_sections(elf: &[u8], how: Compression) -> Option<Vec<u8>> {
    let ch_type = match how {
        Compression::None => return None,
        Compression::Zlib => 1,
        Compression::Zstd => 2,
    };
    if elf.get(..4)? != b"\x7fELF" {
        return None;
    }
    let l = Layout {
        is64: *elf.get(4)? == 2,
        little: *elf.get(5)? != 2,
    };
    let w = l.word();
    // e_shoff, e_shentsize, e_shnum, e_shstrndx.
    let (shoff, rest) = if l.is64 { (0x28, 0x3a) } else { (0x20, 0x2e) };
    let shoff = usize::try_from(l.get(elf, shoff, w)?).ok()?;
    let shentsize = l.get(elf, rest, 2)? as usize;
    let shnum = l.get(elf, rest + 2, 2)? as usize;
    let shstrndx = l.get(elf, rest + 4, 2)? as usize;
    if shentsize < if l.is64 { 64 } else { 40 } || shnum > 4096 {
        return None;
    }
    // A header's fields lie in its first 64 (ELF64) or 40 bytes: a header that ends past the
    // file is not read (nor `h + field` computed near usize::MAX).
    let fields = if l.is64 { 64 } else { 40 };
    let header = |i: usize| {
        shoff
            .checked_add(i.checked_mul(shentsize)?)
            .filter(|h| h.checked_add(fields).is_some_and(|end| end <= elf.len()))
    };
    // Offsets in a section header: sh_flags, sh_offset, sh_size.
    let (flags_at, offset_at, size_at) = if l.is64 { (8, 24, 32) } else { (8, 16, 20) };
    let range = |data: &[u8], h: usize| -> Option<(usize, usize)> {
        let off = usize::try_from(l.get(data, h + offset_at, w)?).ok()?;
        let size = usize::try_from(l.get(data, h + size_at, w)?).ok()?;
        off.checked_add(size).filter(|&end| end <= data.len())?;
        Some((off, size))
    };
    let (strtab, strsize) = range(elf, header(shstrndx)?)?;
    let strtab = &elf[strtab..strtab + strsize];
    let mut out = elf.to_vec();
    let mut changed = false;
    for i in 0..shnum {
        let h = header(i)?;
        let name = l.get(elf, h, 4)? as usize;
        let is_debug = strtab
            .get(name..)
            .is_some_and(|n| n.starts_with(b".debug_"));
        let flags = l.get(elf, h + flags_at, w)?;
        if !is_debug
            || l.get(elf, h + 4, 4)? == u64::from(SHT_NOBITS)
            || flags & (SHF_ALLOC | SHF_COMPRESSED) != 0
        {
            continue;
        }
        let Some((off, size)) = range(elf, h) else {
            continue;
        };
        let plain = &elf[off..off + size];
        let mut packed = l.chdr(ch_type, size as u64);
        match how {
            Compression::Zlib => zlib_stored(plain, &mut packed),
            _ => zstd_raw(plain, &mut packed),
        }
        out.resize(out.len().next_multiple_of(w), 0);
        let at = out.len();
        out.extend_from_slice(&packed);
        l.put(&mut out, h + offset_at, w, at as u64);
        l.put(&mut out, h + size_at, w, packed.len() as u64);
        l.put(&mut out, h + flags_at, w, flags | SHF_COMPRESSED);
        changed = true;
    }
    changed.then_some(out)
}

/// A zlib stream (RFC 1950) of stored deflate blocks.
fn zlib_stored(data: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(&[0x78, 0x01]);
    let mut chunks = data.chunks(0xffff).peekable();
    if chunks.peek().is_none() {
        out.extend_from_slice(&[1, 0, 0, 0xff, 0xff]);
    }
    while let Some(chunk) = chunks.next() {
        out.push(u8::from(chunks.peek().is_none()));
        let len = chunk.len() as u16;
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&(!len).to_le_bytes());
        out.extend_from_slice(chunk);
    }
    let (mut a, mut b) = (1u32, 0u32);
    for &byte in data {
        a = (a + u32::from(byte)) % 65521;
        b = (b + a) % 65521;
    }
    out.extend_from_slice(&(b << 16 | a).to_be_bytes());
}

/// A zstd frame (RFC 8878) of raw blocks, with its content size and no checksum.
fn zstd_raw(data: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(&0xfd2f_b528u32.to_le_bytes());
    // Frame header descriptor: an 8-byte content size, a single segment.
    out.push(0xe0);
    out.extend_from_slice(&(data.len() as u64).to_le_bytes());
    let mut chunks = data.chunks(128 * 1024).peekable();
    if chunks.peek().is_none() {
        out.extend_from_slice(&[1, 0, 0]);
    }
    while let Some(chunk) = chunks.next() {
        let last = u32::from(chunks.peek().is_none());
        let header = (chunk.len() as u32) << 3 | last;
        out.extend_from_slice(&header.to_le_bytes()[..3]);
        out.extend_from_slice(chunk);
    }
}
