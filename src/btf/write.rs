//! Serialises a [`Btf`] to the raw on-disk layout: header | types | strings.
//!
//! The header is the classic 24-byte one (kernels older than the 7.x ones that ask for
//! `layout` reject a longer header); the byte order is the BTF's own, which the encoder takes from the ELF input.

use super::{Btf, Endian};

/// Length of the classic BTF header.
pub const HEADER_LEN: u32 = 24;
/// `BTF_MAGIC`.
pub const MAGIC: u16 = 0xeb9f;

fn put_u32(out: &mut Vec<u8>, v: u32, endian: Endian) {
    out.extend_from_slice(&match endian {
        Endian::Little => v.to_le_bytes(),
        Endian::Big => v.to_be_bytes(),
    });
}

/// The raw bytes of `btf` (only its own types and strings when it is split BTF).
pub fn to_bytes(btf: &Btf) -> Vec<u8> {
    let endian = btf.endian;
    let type_len = (btf.type_words().len() * 4) as u32;
    let strs = btf.strings().as_bytes();
    let mut out = Vec::with_capacity(HEADER_LEN as usize + type_len as usize + strs.len());
    let magic = match endian {
        Endian::Little => MAGIC.to_le_bytes(),
        Endian::Big => MAGIC.to_be_bytes(),
    };
    out.extend_from_slice(&magic);
    out.push(1); // version
    out.push(0); // flags
    for v in [HEADER_LEN, 0, type_len, type_len, strs.len() as u32] {
        put_u32(&mut out, v, endian);
    }
    for &w in btf.type_words() {
        put_u32(&mut out, w, endian);
    }
    out.extend_from_slice(strs);
    out
}
