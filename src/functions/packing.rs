//! The byte encoding of packed function instances and signatures: unsigned LEB128 numbers and
//! length-prefixed parts. A worker saves tens of thousands of instances that live until the
//! final pass, so each is one allocation of bytes rather than a tree of boxes.
//!
//! The LEB128 here is not gimli's: gimli reads through its fallible `Reader` (these bytes are
//! the encoder's own, always well formed, read on the final pass's hot path) and writes only
//! with its `write` feature, which the encoder does not otherwise need.

/// Appends `v` as unsigned LEB128.
pub(super) fn push_leb(out: &mut Vec<u8>, mut v: u32) {
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

/// Reads an unsigned LEB128 number at `*pos` and moves past it. The bytes are the encoder's
/// own, written by [`push_leb`], so they are well formed.
pub(super) fn read_leb(bytes: &[u8], pos: &mut usize) -> u32 {
    let mut v = 0u32;
    let mut shift = 0;
    loop {
        let byte = bytes[*pos];
        *pos += 1;
        v |= u32::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return v;
        }
        shift += 7;
    }
}

/// Appends `part` with its LEB128 length before it.
pub(super) fn push_part(out: &mut Vec<u8>, part: &[u8]) {
    push_leb(out, part.len() as u32);
    out.extend_from_slice(part);
}

/// Reads a part [`push_part`] wrote at `*pos` and moves past it.
pub(super) fn read_part<'a>(bytes: &'a [u8], pos: &mut usize) -> &'a [u8] {
    let len = read_leb(bytes, pos) as usize;
    let part = &bytes[*pos..*pos + len];
    *pos += len;
    part
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_parts_read_back() {
        let values = [0, 1, 0x7f, 0x80, 0x3fff, 0x4000, u32::MAX];
        let mut out = Vec::new();
        for v in values {
            push_leb(&mut out, v);
            push_part(&mut out, &v.to_le_bytes()[..(v % 5) as usize]);
        }
        let mut pos = 0;
        for v in values {
            assert_eq!(read_leb(&out, &mut pos), v);
            assert_eq!(
                read_part(&out, &mut pos),
                &v.to_le_bytes()[..(v % 5) as usize]
            );
        }
        assert_eq!(pos, out.len());
        let leb = |v| {
            let mut out = Vec::new();
            push_leb(&mut out, v);
            out
        };
        assert_eq!(leb(0x7f), [0x7f]);
        assert_eq!(leb(0x80), [0x80, 0x01]);
        assert_eq!(leb(u32::MAX), [0xff, 0xff, 0xff, 0xff, 0x0f]);
    }
}
