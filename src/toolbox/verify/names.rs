//! The kernel's identifier rule, `__btf_name_valid`, with lib/ctype.c's character classes.

use crate::btf::kinds::KSYM_NAME_LEN;

/// The classes of lib/ctype.c's `_ctype` table that `__btf_name_char_ok` asks about.
const UPPER: u8 = 0x01;
const LOWER: u8 = 0x02;
const DIGIT: u8 = 0x04;

/// `_ctype[c] & (_U|_L|_D)` for every byte, transcribed from lib/ctype.c (Linux 6.1, unchanged
/// since): ASCII as usual, 0x80..=0xBF none of these (control, space or punctuation), and
/// Latin-1 letters 0xC0..=0xFF, except 0xD7 (×) and 0xF7 (÷), which are punctuation.
/// `isalpha` is `& (_U|_L)`, `isalnum` is `& (_U|_L|_D)`; the kernel's `char` goes through
/// `(unsigned char)` in `__ismask`, so a byte's class does not depend on its signedness.
const fn ctype(c: u8) -> u8 {
    match c {
        b'A'..=b'Z' | 0xC0..=0xD6 | 0xD8..=0xDE => UPPER,
        b'a'..=b'z' | 0xDF..=0xF6 | 0xF8..=0xFF => LOWER,
        b'0'..=b'9' => DIGIT,
        _ => 0,
    }
}

/// `__btf_name_char_ok` for a first byte: the kernel's `isalpha` (lib/ctype.c classes,
/// Latin-1 letters included), `_` or `.`.
const FIRST_OK: u8 = 1;
/// `__btf_name_char_ok` for a later byte: the kernel's `isalnum`, `_` or `.`.
const LATER_OK: u8 = 2;

/// [`FIRST_OK`] and [`LATER_OK`] for every byte, looked up once per byte of a name: a base
/// BTF's names are checked on every module's encoding.
const NAME_BYTES: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut c = 0;
    while c < 256 {
        let class = ctype(c as u8);
        let punct = c == b'_' as usize || c == b'.' as usize;
        if class & (UPPER | LOWER) != 0 || punct {
            table[c] |= FIRST_OK;
        }
        if class & (UPPER | LOWER | DIGIT) != 0 || punct {
            table[c] |= LATER_OK;
        }
        c += 1;
    }
    table
};

/// `__btf_name_valid` of Linux 6.1: `__btf_name_char_ok` on every byte (first: `isalpha`,
/// then `isalnum`, or `_` or `.`) and at most `KSYM_NAME_LEN` bytes. `.` is allowed in every
/// identifier, first byte included, since "bpf: Accept function names that contain dots"
/// (6.5, backported to 6.1.y; Debian's 6.1 source has it). The classes are the kernel's, not
/// Rust's ASCII ones: a Latin-1 letter byte 0xC0..=0xFF (bar 0xD7, 0xF7) is a letter.
pub(super) fn name_valid(s: &[u8]) -> bool {
    match s.split_first() {
        Some((&c, rest)) => {
            s.len() <= KSYM_NAME_LEN
                && NAME_BYTES[c as usize] & FIRST_OK != 0
                && rest.iter().all(|&c| NAME_BYTES[c as usize] & LATER_OK != 0)
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers() {
        for ok in [&b"a"[..], b"_", b"task_struct", b"_9", b"Z_z0"] {
            assert!(name_valid(ok), "{}", String::from_utf8_lossy(ok));
            assert!(name_valid(ok));
        }
        for bad in [
            &b""[..],
            b"9a",
            b"a-b",
            b"a b",
            b"a$",
            b"\x80",
            b"a\xa0",
            b"a\xbf",
            b"\xd7",
            b"a\xf7",
        ] {
            assert!(!name_valid(bad), "{}", String::from_utf8_lossy(bad));
        }
    }

    /// lib/ctype.c: 0xC0..=0xFF are Latin-1 letters (bar 0xD7 and 0xF7), 0x80..=0xBF are not.
    #[test]
    fn latin1_letters_are_letters_as_in_the_kernel() {
        for c in 0x80..=0xffu8 {
            let letter = c >= 0xc0 && c != 0xd7 && c != 0xf7;
            assert_eq!(name_valid(&[c]), letter, "{c:#x} first");
            assert_eq!(name_valid(&[b'a', c]), letter, "{c:#x} later");
        }
        assert!(!name_valid(b"\xc3\xa9"), "0xA9 is punctuation");
        assert!(name_valid(b"caf\xe9"));
        assert!(name_valid(b"\xdf9"));
        for c in 0..0x80u8 {
            let letter = c.is_ascii_alphabetic();
            assert_eq!(name_valid(&[c]), letter || c == b'_' || c == b'.', "{c:#x}");
        }
    }

    #[test]
    fn dots_anywhere_in_identifiers() {
        assert!(name_valid(b"a.b"));
        assert!(name_valid(b"f.cold"));
        assert!(name_valid(b".data"));
        assert!(name_valid(b".data..percpu"));
        assert!(name_valid(b"x.y"));
        assert!(!name_valid(b".data-x"));
        assert!(!name_valid(b""));
    }

    #[test]
    fn identifier_length_limit_is_ksym_name_len() {
        let max = vec![b'a'; KSYM_NAME_LEN];
        assert!(name_valid(&max));
        let long = vec![b'a'; KSYM_NAME_LEN + 1];
        assert!(!name_valid(&long));
    }
}
