//! Parses raw BTF bytes (either byte order) or the `.BTF` section of an ELF file.
//!
//! Parsing checks only what is needed to hold the data safely (header bounds, record sizes,
//! known kinds); the kernel's full rule set lives in [`super::verify`].

use std::path::Path;
use std::sync::Arc;

use super::kinds::{self, Kind};
use super::strings::StringTable;
use super::write::MAGIC;
use super::{Btf, Endian};
use crate::error::{Error, Result};

/// The fields of a BTF header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub magic: u16,
    pub version: u8,
    pub flags: u8,
    pub hdr_len: u32,
    pub type_off: u32,
    pub type_len: u32,
    pub str_off: u32,
    pub str_len: u32,
    /// Header bytes past the 24 classic ones, if any are non-zero.
    pub extra_nonzero: bool,
    pub endian: Endian,
}

fn u32_at(data: &[u8], off: usize, endian: Endian) -> u32 {
    let b: [u8; 4] = data[off..off + 4]
        .try_into()
        .expect("bounds checked by caller");
    match endian {
        Endian::Little => u32::from_le_bytes(b),
        Endian::Big => u32::from_be_bytes(b),
    }
}

/// Reads and sanity-checks the header (enough to slice the sections safely).
pub fn parse_header(data: &[u8]) -> Result<Header> {
    if data.len() < 24 {
        return Err(Error::BadBtf(format!(
            "{} bytes is too short for a BTF header",
            data.len()
        )));
    }
    let endian = match [data[0], data[1]] {
        m if m == MAGIC.to_le_bytes() => Endian::Little,
        m if m == MAGIC.to_be_bytes() => Endian::Big,
        m => {
            return Err(Error::BadBtf(format!(
                "bad magic {:#06x} (expected 0xeb9f)",
                u16::from_le_bytes(m)
            )))
        }
    };
    let hdr_len = u32_at(data, 4, endian);
    if hdr_len < 24 || hdr_len as usize > data.len() {
        return Err(Error::BadBtf(format!("bad header length {hdr_len}")));
    }
    let h = Header {
        magic: MAGIC,
        version: data[2],
        flags: data[3],
        hdr_len,
        type_off: u32_at(data, 8, endian),
        type_len: u32_at(data, 12, endian),
        str_off: u32_at(data, 16, endian),
        str_len: u32_at(data, 20, endian),
        extra_nonzero: data[24..hdr_len as usize].iter().any(|&b| b != 0),
        endian,
    };
    let body = data.len() as u64 - hdr_len as u64;
    let end = |off: u32, len: u32| off as u64 + len as u64;
    if end(h.type_off, h.type_len) > body || end(h.str_off, h.str_len) > body {
        return Err(Error::BadBtf(
            "a section runs past the end of the data".into(),
        ));
    }
    if !h.type_off.is_multiple_of(4) || !h.type_len.is_multiple_of(4) {
        return Err(Error::BadBtf("type section is not 4-byte aligned".into()));
    }
    Ok(h)
}

/// Parses raw BTF; `base` must be given for split BTF.
pub fn parse(data: &[u8], base: Option<Arc<Btf>>) -> Result<Btf> {
    let h = parse_header(data)?;
    let body = &data[h.hdr_len as usize..];
    let tsec = &body[h.type_off as usize..(h.type_off + h.type_len) as usize];
    let ssec = &body[h.str_off as usize..(h.str_off + h.str_len) as usize];
    let words: Vec<u32> = match h.endian {
        Endian::Little => tsec
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect(),
        Endian::Big => tsec
            .chunks_exact(4)
            .map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]))
            .collect(),
    };
    let offs = record_offsets(&words)?;
    Ok(Btf::from_parts(
        base,
        words,
        offs,
        StringTable::from_bytes(ssec.to_vec()),
        h.endian,
    ))
}

/// Splits the type section into records, checking each kind and that it fits.
pub fn record_offsets(words: &[u32]) -> Result<Vec<u32>> {
    let mut offs = Vec::new();
    let mut i = 0usize;
    while i < words.len() {
        if i + 3 > words.len() {
            return Err(Error::BadBtf(format!(
                "type #{} is truncated",
                offs.len() + 1
            )));
        }
        let info = words[i + 1];
        let kind = Kind::from_u32(kinds::info_kind(info)).ok_or_else(|| {
            Error::BadBtf(format!(
                "type #{} has unknown kind {}",
                offs.len() + 1,
                kinds::info_kind(info)
            ))
        })?;
        let n = kind.record_words(kinds::info_vlen(info));
        if i + n > words.len() {
            return Err(Error::BadBtf(format!(
                "type #{} ({kind}) runs past the type section",
                offs.len() + 1
            )));
        }
        offs.push(i as u32);
        i += n;
    }
    Ok(offs)
}

/// Reads a base BTF (raw, or an ELF's `.BTF`), its strings indexed so that split BTF built on
/// it finds them (`btf__add_str` reuses base strings).
pub fn read_base(path: &Path) -> Result<Arc<Btf>> {
    let mut base = read_file(path, None)?;
    base.index_strings();
    Ok(Arc::new(base))
}

/// Reads BTF from `path`: raw BTF, or the `.BTF` section of an ELF file.
pub fn read_file(path: &Path, base: Option<Arc<Btf>>) -> Result<Btf> {
    // Mapped where the file allows it: a base vmlinux is hundreds of MiB, of which only .BTF
    // is wanted. sysfs (/sys/kernel/btf/vmlinux) refuses mmap, so such files are read.
    let mapped = crate::input::elf::Mapped::open(path);
    let read;
    let data = match &mapped {
        Ok(m) => m.bytes(),
        Err(_) => {
            read = std::fs::read(path).map_err(|e| Error::io(path, e))?;
            &read[..]
        }
    };
    if data.starts_with(b"\x7fELF") {
        let sec = crate::input::elf::btf_section(path, data)?;
        return parse(&sec, base);
    }
    parse(data, base)
}
