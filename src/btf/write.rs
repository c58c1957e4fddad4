//! Serialises a [`Btf`] to the raw on-disk layout: header | types | (kind layout) | strings.
//!
//! By default the header is the classic 24-byte one, which every kernel and tool reads. With
//! the `layout` feature it is libbpf 1.8's 32-byte one, as pahole HEAD writes it: base BTF
//! then carries the kind layout section (a `struct btf_layout` per kind this encoder knows)
//! between the types and the strings; split BTF gets the longer header with its layout fields
//! zero. The byte order is the BTF's own, which the encoder takes from the ELF input.

use super::kinds::Kind;
use super::{Btf, Endian};

/// Length of the classic BTF header.
pub const HEADER_LEN: u32 = 24;
/// Length of libbpf 1.8's header, with `layout_off` and `layout_len`.
pub const LAYOUT_HEADER_LEN: u32 = 32;
/// `BTF_MAGIC`.
pub const MAGIC: u16 = 0xeb9f;
/// The kinds the layout section describes: `BTF_KIND_UNKN` (0) to `BTF_KIND_ENUM64` (19).
const LAYOUT_KINDS: u32 = 20;
/// Bytes of one `struct btf_layout`: `info_sz` (u8), `elem_sz` (u8), `flags` (u16, unused).
const LAYOUT_ENTRY_LEN: u32 = 4;

/// Which header a blob is written with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeaderForm {
    /// The classic 24-byte header.
    Classic,
    /// libbpf 1.8's 32-byte header; with the kind layout section when `layout`.
    Extended {
        /// Whether the kind layout section is written (base BTF in pahole HEAD).
        layout: bool,
    },
}

fn put_u32(out: &mut Vec<u8>, v: u32, endian: Endian) {
    out.extend_from_slice(&match endian {
        Endian::Little => v.to_le_bytes(),
        Endian::Big => v.to_be_bytes(),
    });
}

/// The raw bytes of `btf` (only its own types and strings when it is split BTF), with the
/// classic header.
pub fn to_bytes(btf: &Btf) -> Vec<u8> {
    to_bytes_as(btf, HeaderForm::Classic)
}

/// The raw bytes of `btf` with the header `form` says.
pub fn to_bytes_as(btf: &Btf, form: HeaderForm) -> Vec<u8> {
    let endian = btf.endian;
    let type_len = (btf.type_words().len() * 4) as u32;
    let strs = btf.strings().as_bytes();
    let (hdr_len, layout_len) = match form {
        HeaderForm::Classic => (HEADER_LEN, 0),
        HeaderForm::Extended { layout } => (
            LAYOUT_HEADER_LEN,
            if layout {
                LAYOUT_KINDS * LAYOUT_ENTRY_LEN
            } else {
                0
            },
        ),
    };
    let mut out = Vec::with_capacity((hdr_len + type_len + layout_len) as usize + strs.len());
    let magic = match endian {
        Endian::Little => MAGIC.to_le_bytes(),
        Endian::Big => MAGIC.to_be_bytes(),
    };
    out.extend_from_slice(&magic);
    out.push(1); // version
    out.push(0); // flags
    let str_off = type_len + layout_len;
    for v in [hdr_len, 0, type_len, str_off, strs.len() as u32] {
        put_u32(&mut out, v, endian);
    }
    if hdr_len == LAYOUT_HEADER_LEN {
        // layout_off, layout_len: both 0 without the section, as libbpf leaves them.
        let layout_off = if layout_len > 0 { type_len } else { 0 };
        put_u32(&mut out, layout_off, endian);
        put_u32(&mut out, layout_len, endian);
    }
    for &w in btf.type_words() {
        put_u32(&mut out, w, endian);
    }
    if layout_len > 0 {
        put_kind_layouts(&mut out);
    }
    out.extend_from_slice(strs);
    out
}

/// libbpf's `layouts[]`: per kind, the bytes of its single element after `struct btf_type`
/// and of each of its `vlen` elements. `flags` is unused (0), so no byte order matters.
fn put_kind_layouts(out: &mut Vec<u8>) {
    for k in 0..LAYOUT_KINDS {
        let (info_sz, elem_sz) = Kind::from_u32(k).map_or((0, 0), |kind| {
            (
                4 * kind.extra_words() as u8,
                4 * kind.vlen_entry_words() as u8,
            )
        });
        out.extend_from_slice(&[info_sz, elem_sz, 0, 0]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// libbpf 1.8's `layouts[]` table, as pahole HEAD writes it (tests/data has its output).
    #[test]
    fn kind_layouts_are_libbpfs() {
        let mut out = Vec::new();
        put_kind_layouts(&mut out);
        let expected: [[u8; 2]; 20] = [
            [0, 0],  // UNKN
            [4, 0],  // INT
            [0, 0],  // PTR
            [12, 0], // ARRAY
            [0, 12], // STRUCT
            [0, 12], // UNION
            [0, 8],  // ENUM
            [0, 0],  // FWD
            [0, 0],  // TYPEDEF
            [0, 0],  // VOLATILE
            [0, 0],  // CONST
            [0, 0],  // RESTRICT
            [0, 0],  // FUNC
            [0, 8],  // FUNC_PROTO
            [4, 0],  // VAR
            [0, 12], // DATASEC
            [0, 0],  // FLOAT
            [4, 0],  // DECL_TAG
            [0, 0],  // TYPE_TAG
            [0, 12], // ENUM64
        ];
        let got: Vec<[u8; 2]> = out.chunks(4).map(|e| [e[0], e[1]]).collect();
        assert_eq!(got, expected);
        assert!(out.chunks(4).all(|e| e[2..] == [0, 0]));
    }
}
