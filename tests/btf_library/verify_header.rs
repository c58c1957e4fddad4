//! The header and section rules of `toolbox::verify` (the H rules): the valid sample is accepted
//! in either byte order, hand-corrupted headers, section layouts and string sections are
//! rejected with the expected rule, no corruption of the bytes makes the verifier panic, and
//! pahole's output for the reference kernel is accepted.

use crate::common::verify_sample;

use std::sync::Arc;

use dwarf2btf::btf::{read, write, Btf, Endian, Kind};
use dwarf2btf::rng::Rng;
use dwarf2btf::toolbox::verify;
use verify_sample::*;

#[test]
fn valid_sample_is_accepted() {
    let (b, _) = sample();
    assert_valid(&b);
    // Parsing the bytes back gives the same verdict.
    let parsed = read::parse(&write::to_bytes(&b), None).unwrap();
    assert!(verify::verify(&parsed).is_empty());
    // Either byte order.
    let mut be = b.clone();
    be.endian = Endian::Big;
    let bytes = write::to_bytes(&be);
    assert_eq!(&bytes[..2], &[0xeb, 0x9f]);
    let p = verify::verify_bytes(&bytes, None);
    assert!(p.is_empty(), "{}", show(&p));
}

#[test]
fn header_magic_version_flags_hdr_len() {
    let (b, _) = sample();
    let good = write::to_bytes(&b);

    let mut bytes = good.clone();
    bytes[0] = 0x42;
    assert_only_rule(&verify::verify_bytes(&bytes, None), "H1-magic");

    let mut bytes = good.clone();
    bytes[2] = 2;
    assert_only_rule(&verify::verify_bytes(&bytes, None), "H1-version");

    let mut bytes = good.clone();
    bytes[3] = 1;
    assert_only_rule(&verify::verify_bytes(&bytes, None), "H1-flags");

    let mut bytes = good.clone();
    set32(&mut bytes, 4, 16);
    assert_only_rule(&verify::verify_bytes(&bytes, None), "H2-hdr-len");

    let mut bytes = good.clone();
    set32(&mut bytes, 4, good.len() as u32 + 4);
    assert_only_rule(&verify::verify_bytes(&bytes, None), "H2-hdr-len");

    assert_only_rule(&verify::verify_bytes(&good[..5], None), "H2-hdr-len");
    assert_only_rule(&verify::verify_bytes(&[], None), "H2-hdr-len");

    // A 32-byte header (libbpf >= 1.8) is fine while its extra (layout) fields are zero; with
    // layout_len set, 6.x rejects it (tests/btf_library/verify_layout.rs has the layout-aware rules).
    let mut long_hdr = good[..24].to_vec();
    set32(&mut long_hdr, 4, 32);
    long_hdr.extend_from_slice(&[0; 8]);
    long_hdr.extend_from_slice(&good[24..]);
    let p = verify::verify_bytes(&long_hdr, None);
    assert!(p.is_empty(), "{}", show(&p));
    long_hdr[28] = 80;
    let linux_6_1 = verify::Target::Kernel("6.1".parse().unwrap());
    let p = verify::judge(&long_hdr, None, linux_6_1).problems;
    assert_only_rule(&p, "H2-hdr-extra");
}

#[test]
fn section_layout() {
    let (b, _) = sample();
    let good = write::to_bytes(&b);
    let type_len = get32(&good, TYPE_LEN);
    let str_len = get32(&good, STR_LEN);

    // Overlap: the string section starts inside the type section.
    let mut bytes = good.clone();
    set32(&mut bytes, STR_OFF, type_len - 4);
    assert_only_rule(&verify::verify_bytes(&bytes, None), "H4-sections");

    // A section running past the end.
    let mut bytes = good.clone();
    set32(&mut bytes, STR_LEN, str_len + 4);
    assert_only_rule(&verify::verify_bytes(&bytes, None), "H4-sections");

    // Trailing bytes in no section.
    let mut bytes = good.clone();
    bytes.extend_from_slice(&[0; 4]);
    assert_only_rule(&verify::verify_bytes(&bytes, None), "H4-sections");

    // A gap between the sections.
    let mut bytes = good[..24 + type_len as usize].to_vec();
    bytes.extend_from_slice(&[0; 4]);
    bytes.extend_from_slice(&good[24 + type_len as usize..]);
    set32(&mut bytes, STR_OFF, type_len + 4);
    assert_only_rule(&verify::verify_bytes(&bytes, None), "H4-sections");

    // Strings first, then an unaligned type section: both rules, and the types still check.
    let mut strs = b.strings().as_bytes().to_vec();
    if strs.len().is_multiple_of(4) {
        strs.push(0);
    }
    let mut bytes = good[..24].to_vec();
    set32(&mut bytes, TYPE_OFF, strs.len() as u32);
    set32(&mut bytes, STR_OFF, 0);
    set32(&mut bytes, STR_LEN, strs.len() as u32);
    bytes.extend_from_slice(&strs);
    bytes.extend_from_slice(&good[24..24 + type_len as usize]);
    let p = verify::verify_bytes(&bytes, None);
    assert_rule(&p, "H3-type-align");
    assert_rule(&p, "H4-str-not-last");
    assert_eq!(p.len(), 2, "{}", show(&p));
}

#[test]
fn string_section() {
    let (b, _) = sample();
    let good = write::to_bytes(&b);
    let type_len = get32(&good, TYPE_LEN) as usize;

    let mut bytes = good.clone();
    bytes[24 + type_len] = b'x';
    assert_rule(&verify::verify_bytes(&bytes, None), "H5-str-first");

    let mut bytes = good.clone();
    *bytes.last_mut().unwrap() = b'x';
    assert_rule(&verify::verify_bytes(&bytes, None), "H6-str-section");

    // Base BTF without strings at all.
    let mut bytes = good[..24 + type_len].to_vec();
    set32(&mut bytes, STR_LEN, 0);
    let p = verify::verify_bytes(&bytes, None);
    assert_rule(&p, "H6-str-section");
    assert_rule(&p, "M3-name-offset");

    // Base BTF without types.
    let mut bytes = good[..24].to_vec();
    set32(&mut bytes, TYPE_LEN, 0);
    set32(&mut bytes, STR_OFF, 0);
    set32(&mut bytes, STR_LEN, 1);
    bytes.push(0);
    assert_only_rule(&verify::verify_bytes(&bytes, None), "H5-no-types");
    // Header only.
    assert_only_rule(&verify::verify_bytes(&bytes[..24], None), "H5-no-types");
    assert_only_rule(&verify::verify(&Btf::new()), "H5-no-types");
}

#[test]
fn garbage_never_panics() {
    let (b, ids) = sample();
    let good = write::to_bytes(&b);
    let base = Arc::new(b.clone());
    let mut rng = Rng::with_state(0x9e37_79b9_7f4a_7c15);

    // Every truncation.
    for len in 0..good.len() {
        let p = verify::verify_bytes(&good[..len], None);
        assert!(!p.is_empty(), "truncated to {len} bytes but accepted");
    }
    // Every single-bit flip in the header and types, and random words in the type section.
    let type_end = 24 + get32(&good, TYPE_LEN) as usize;
    for pos in 0..type_end {
        for bit in 0..8 {
            let mut bytes = good.clone();
            bytes[pos] ^= 1 << bit;
            let _ = verify::verify_bytes(&bytes, None);
            let _ = verify::verify_bytes(&bytes, Some(&base));
        }
    }
    for _ in 0..2000 {
        let mut bytes = good.clone();
        for _ in 0..1 + rng.next() % 4 {
            let w = 24 + 4 * (rng.next() as usize % ((type_end - 24) / 4));
            let v = match rng.next() % 4 {
                0 => rng.next() as u32,
                1 => (rng.next() % 64) as u32,
                2 => ((rng.next() % 32) << 24) as u32 | (rng.next() % 8) as u32,
                _ => get32(&bytes, w) ^ 1 << (rng.next() % 32),
            };
            set32(&mut bytes, w, v);
        }
        let _ = verify::verify_bytes(&bytes, None);
    }
    // Pure noise, with and without a valid header.
    for _ in 0..500 {
        let len = (rng.next() % 400) as usize;
        let mut bytes: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        let _ = verify::verify_bytes(&bytes, None);
        if len >= 24 {
            bytes[..24].copy_from_slice(&good[..24]);
            let body = (len - 24) as u32;
            let tl = (rng.next() as u32 % (body + 1)) & !3;
            set32(&mut bytes, TYPE_LEN, tl);
            set32(&mut bytes, STR_OFF, tl);
            set32(&mut bytes, STR_LEN, body - tl);
            let _ = verify::verify_bytes(&bytes, None);
            let _ = verify::verify_bytes(&bytes, Some(&base));
        }
    }
    // Random records pushed in memory, including ones with the wrong length.
    for _ in 0..300 {
        let mut m = b.clone();
        for _ in 0..1 + rng.next() % 5 {
            let n = (rng.next() % 8) as usize;
            let rec: Vec<u32> = (0..n)
                .map(|i| match (i, rng.next() % 3) {
                    (1, 0) => info(
                        Kind::ALL[(rng.next() % 19) as usize],
                        (rng.next() % 4) as u32,
                        rng.next() & 1 == 0,
                    ),
                    (_, 0) => (rng.next() % 64) as u32,
                    (_, 1) => ids.s,
                    _ => rng.next() as u32,
                })
                .collect();
            m.push_record(&rec).unwrap();
        }
        let _ = verify::verify(&m);
        let _ = verify::verify_bytes(&write::to_bytes(&m), None);
    }
}

/// The reference pahole output for the Debian 6.1 kernel must be accepted as is (pahole 1.32,
/// through libbpf 1.7.0, writes the 24-byte header; the 32-byte one is verify_layout.rs's).
#[test]
fn pahole_oracle_is_accepted() {
    let data = std::fs::read(crate::common::oracle_btf()).unwrap();
    assert_eq!(
        u32::from_le_bytes(data[4..8].try_into().unwrap()),
        24,
        "expected a 24-byte header"
    );
    let t = std::time::Instant::now();
    let p = verify::verify_bytes(&data, None);
    let elapsed = t.elapsed();
    assert!(p.is_empty(), "pahole output rejected:\n{}", show(&p));
    println!("verified {} bytes in {elapsed:?}", data.len());
    // The in-memory path agrees.
    let btf = read::parse(&data, None).unwrap();
    assert!(btf.own_len() > 90_000);
    assert!(verify::verify(&btf).is_empty());
}
