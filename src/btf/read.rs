//! Parses raw BTF bytes (either byte order) or the `.BTF` section of an ELF file, and reads
//! either from a file.
//!
//! Parsing checks only what is needed to hold the data safely (header bounds, record sizes,
//! known kinds); the kernel's full rule set lives in `toolbox::verify`.

use std::borrow::Cow;
use std::path::Path;
use std::sync::Arc;

use object::{Object, ObjectSection};

use super::kinds::{self, Kind};
use super::strings::StringTable;
use super::write::MAGIC;
use super::{Btf, Endian};
use crate::config::{DECOMPRESS_SLACK, DEFAULT_DECOMPRESS_RATIO};
use crate::error::{BtfError, Error, Result};
use crate::mapped::Mapped;

/// The fields of a BTF header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// The magic, always `0xeb9f` (in the blob's byte order; parsing fails otherwise).
    pub magic: u16,
    /// The format version byte, as found (the kernel accepts only 1).
    pub version: u8,
    /// The flags byte, as found (the kernel accepts only 0).
    pub flags: u8,
    /// The header's length in bytes, at least 24.
    pub hdr_len: u32,
    /// Offset of the type section in bytes, from the end of the header.
    pub type_off: u32,
    /// Length of the type section in bytes.
    pub type_len: u32,
    /// Offset of the string section in bytes, from the end of the header.
    pub str_off: u32,
    /// Length of the string section in bytes.
    pub str_len: u32,
    /// Header bytes past the 24 classic ones, if any are non-zero.
    pub extra_nonzero: bool,
    /// The blob's byte order, told by the magic.
    pub endian: Endian,
}

/// The byte order of BTF `data`, told by its magic; `None` when it does not start with the
/// BTF magic in either order.
pub fn byte_order(data: &[u8]) -> Option<Endian> {
    let m = data.get(..2)?;
    if m == MAGIC.to_le_bytes() {
        Some(Endian::Little)
    } else if m == MAGIC.to_be_bytes() {
        Some(Endian::Big)
    } else {
        None
    }
}

/// Reads and sanity-checks the header (enough to slice the sections safely).
pub fn parse_header(data: &[u8]) -> Result<Header, BtfError> {
    if data.len() < 24 {
        return Err(BtfError::TooShort { len: data.len() });
    }
    let Some(endian) = byte_order(data) else {
        let magic = u16::from_le_bytes([data[0], data[1]]);
        return Err(BtfError::BadMagic { magic });
    };
    // In bounds: data holds at least the 24 header bytes.
    let word_at = |off| endian.u32_at(data, off).unwrap_or(0);
    let hdr_len = word_at(4);
    if hdr_len < 24 || hdr_len as usize > data.len() {
        return Err(BtfError::BadHeaderLength { hdr_len });
    }
    let h = Header {
        magic: MAGIC,
        version: data[2],
        flags: data[3],
        hdr_len,
        type_off: word_at(8),
        type_len: word_at(12),
        str_off: word_at(16),
        str_len: word_at(20),
        extra_nonzero: data[24..hdr_len as usize].iter().any(|&b| b != 0),
        endian,
    };
    let body = data.len() as u64 - hdr_len as u64;
    let end = |off: u32, len: u32| off as u64 + len as u64;
    if end(h.type_off, h.type_len) > body || end(h.str_off, h.str_len) > body {
        return Err(BtfError::SectionPastEnd);
    }
    if !h.type_off.is_multiple_of(4) || !h.type_len.is_multiple_of(4) {
        return Err(BtfError::TypesUnaligned);
    }
    Ok(h)
}

/// Parses raw BTF; `base` must be given for split BTF.
pub fn parse(data: &[u8], base: Option<Arc<Btf>>) -> Result<Btf> {
    let h = parse_header(data)?;
    let body = &data[h.hdr_len as usize..];
    let tsec = &body[h.type_off as usize..(h.type_off + h.type_len) as usize];
    let ssec = &body[h.str_off as usize..(h.str_off + h.str_len) as usize];
    let words = h.endian.words(tsec);
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
    // Records are at least 3 words and kernel ones average more than 4.
    let mut offs = Vec::with_capacity(words.len() / 4);
    let mut i = 0usize;
    while i < words.len() {
        let index = offs.len() + 1;
        if i + 3 > words.len() {
            return Err(BtfError::TypeTruncated { index }.into());
        }
        let info = words[i + 1];
        let kind = kinds::info_kind(info);
        let kind = Kind::from_u32(kind).ok_or(BtfError::UnknownKind { index, kind })?;
        let n = kind.record_words(kinds::info_vlen(info));
        if i + n > words.len() {
            return Err(BtfError::TypePastEnd { index, kind }.into());
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
    with_file_btf_bytes(path, |bytes| parse(&bytes, base))
}

/// The BTF bytes of the file at `path`: all of it when it is raw BTF, its `.BTF` section
/// when it is an ELF file. Only a regular file is read (a directory, FIFO or device is an
/// error, not an endless read).
pub fn file_btf_bytes(path: &Path) -> Result<Vec<u8>> {
    with_file_btf_bytes(path, |bytes| Ok(bytes.into_owned()))
}

/// Calls `f` with the BTF bytes of the file at `path` ([`file_btf_bytes`]), borrowed from the
/// file's map where they are stored plain, so that parsing them copies them once.
fn with_file_btf_bytes<T>(path: &Path, f: impl FnOnce(Cow<'_, [u8]>) -> Result<T>) -> Result<T> {
    // Mapped where the file allows it: a base vmlinux is hundreds of MiB, of which only .BTF
    // is wanted. sysfs (/sys/kernel/btf/vmlinux) refuses mmap, so such files are read.
    // SAFETY: the map lives only until `f` returns, and a BTF file being read is not
    // rewritten meanwhile: a precondition the project accepts (pahole and bpftool map or read
    // the same files with the same exposure); dwarf2btf's own writes go to a temporary file
    // renamed over the target, never into a mapped inode.
    let mapped = unsafe { Mapped::open(path) };
    let read;
    let data = match mapped {
        Ok(ref m) => m.bytes(),
        Err(e) => {
            read = match read_unmappable(path) {
                Some(bytes) => bytes?,
                None => return Err(e),
            };
            &read[..]
        }
    };
    f(btf_bytes(path, data)?)
}

/// The bytes of a regular file that refuses mmap (sysfs), at most as many as its size says;
/// `None` when `path` is not such a file (the map's error then stands).
fn read_unmappable(path: &Path) -> Option<Result<Vec<u8>>> {
    use std::io::Read;
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() {
        return None;
    }
    let mut out = Vec::new();
    Some(
        std::fs::File::open(path)
            .and_then(|f| f.take(meta.len()).read_to_end(&mut out))
            .map(|_| out)
            .map_err(|e| Error::io(path, e)),
    )
}

/// The BTF in the bytes of the file at `path`: all of them when they are raw BTF, the `.BTF`
/// section when they are an ELF file (decompressed if need be).
pub fn btf_bytes<'a>(path: &Path, data: &'a [u8]) -> Result<Cow<'a, [u8]>> {
    if !data.starts_with(b"\x7fELF") {
        return Ok(Cow::Borrowed(data));
    }
    let section_error = |reason: String| Error::BadSection {
        path: path.to_path_buf(),
        section: ".BTF".into(),
        reason,
    };
    let file = object::File::parse(data).map_err(|e| Error::BadElf {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })?;
    let sec = file
        .section_by_name(".BTF")
        .ok_or_else(|| section_error("no such section".into()))?;
    let data = sec
        .compressed_data()
        .map_err(|e| section_error(e.to_string()))?;
    // Bounded as the encoder bounds debug sections: a few KiB must not ask for gigabytes.
    let packed = data.data.len() as u64;
    let limit = packed
        .saturating_mul(DEFAULT_DECOMPRESS_RATIO)
        .saturating_add(DECOMPRESS_SLACK);
    if data.format != object::CompressionFormat::None && data.uncompressed_size > limit {
        return Err(section_error(format!(
            "its compression header claims {} bytes from {packed} compressed bytes, more than \
             {DEFAULT_DECOMPRESS_RATIO} times that plus 1 MiB",
            data.uncompressed_size
        )));
    }
    data.decompress().map_err(|e| section_error(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_are_typed_and_read_as_before() {
        let err = |data: &[u8]| match parse(data, None) {
            Err(Error::Btf(e)) => e,
            other => panic!("expected a BtfError, got {other:?}"),
        };
        assert_eq!(err(&[0; 3]), BtfError::TooShort { len: 3 });
        assert_eq!(
            Error::from(BtfError::TooShort { len: 3 }).to_string(),
            "invalid BTF: 3 bytes is too short for a BTF header"
        );
        assert_eq!(err(&[0; 24]), BtfError::BadMagic { magic: 0 });
        let mut header = [0u8; 24];
        header[..4].copy_from_slice(&[0x9f, 0xeb, 1, 0]);
        assert_eq!(err(&header), BtfError::BadHeaderLength { hdr_len: 0 });
        header[4] = 24;
        header[12] = 4; // type_len past the end
        assert_eq!(err(&header), BtfError::SectionPastEnd);
        let mut btf = Btf::new();
        btf.add_int(b"int", 4, kinds::INT_SIGNED).unwrap();
        let mut words = btf.type_words().to_vec();
        words[1] = 25 << 24;
        let unknown = record_offsets(&words).unwrap_err();
        assert_eq!(
            unknown.to_string(),
            "invalid BTF: type #1 has unknown kind 25"
        );
        assert!(matches!(
            record_offsets(&words[..2]),
            Err(Error::Btf(BtfError::TypeTruncated { index: 1 }))
        ));
        words[1] = kinds::info(Kind::Struct, 1, false);
        assert_eq!(
            record_offsets(&words).unwrap_err().to_string(),
            "invalid BTF: type #1 (STRUCT) runs past the type section"
        );
    }
}
