//! How a record's type ids are packed: each as its distance from the record's own id, in one
//! bit width for the whole record (coded in the header byte's low 4 bits), offset so that it
//! is unsigned, back to back from the first bit.

/// In a record's header byte: the code of its ids' width (see [`width_of_code`]).
pub(super) const WIDTH_CODE: u8 = 0x0f;

/// The bit width of the ids of a record whose header holds width code `code`: 0, 2, 4 ...
/// 28, and 32 for the last code.
#[inline(always)]
pub(super) fn width_of_code(code: u8) -> u32 {
    if code == WIDTH_CODE {
        32
    } else {
        2 * u32::from(code)
    }
}

/// The code of the narrowest width that holds `bits` bits.
pub(super) fn code_of_bits(bits: u32) -> u8 {
    if bits > width_of_code(WIDTH_CODE - 1) {
        WIDTH_CODE
    } else {
        bits.div_ceil(2) as u8
    }
}

/// The low `width` bits set.
#[inline(always)]
pub(super) fn width_mask(width: u32) -> u32 {
    ((1u64 << width) - 1) as u32
}

/// What distances packed in `width` bits are offset by: 2^(width-1), 0 for no bits.
#[inline(always)]
pub(super) fn offset_of_width(width: u32) -> u32 {
    ((1u64 << width) >> 1) as u32
}

/// The bits a signed distance takes: `d` fits `w` bits offset by 2^(w-1) from this many on.
pub(super) fn bits_of_distance(d: u32) -> u32 {
    let d = d as i32;
    32 - ((d << 1) ^ (d >> 31)).leading_zeros()
}

/// Writes each of the distances `values` in `width` bits, offset by 2^(width-1), back to back
/// from the first bit of `out`, whose bytes are zero and at least 8 past the last one written.
/// The bits gather in a register and go out four bytes at a time: writing each value into
/// the 8 bytes around it made every write wait for the one before it, whose bytes it
/// overlaps (37 % of the merge's time in that loop on the reference vmlinux).
pub(super) fn pack_bits(out: &mut [u8], values: &[u32], width: u32) {
    let (offset, mask) = (offset_of_width(width), width_mask(width));
    let (mut bits, mut held, mut at) = (0u64, 0u32, 0usize);
    for &d in values {
        bits |= u64::from(d.wrapping_add(offset) & mask) << held;
        held += width;
        if held >= 32 {
            out[at..at + 4].copy_from_slice(&(bits as u32).to_le_bytes());
            (bits, held, at) = (bits >> 32, held - 32, at + 4);
        }
    }
    out[at..at + 4].copy_from_slice(&(bits as u32).to_le_bytes());
}
