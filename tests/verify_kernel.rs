//! `dwarf2btf verify` and the running kernel agree: BTF encoded by dwarf2btf (the fixtures and,
//! when present, the reference vmlinux) gets deterministic random single-byte mutations, and
//! for each one `verify_bytes`'s verdict (no problems / some problem) must equal the verdict
//! of `bpf(BPF_BTF_LOAD)`. Half the mutations hit any byte with any new value; the other
//! half put a byte 0x80..=0xFF into a string (the names the kernel checks with lib/ctype.c's
//! classes, where 0xC0..=0xFF are Latin-1 letters).
//!
//! `DWARF2BTF_VERIFY_MUTATIONS` sets the number per BTF (default 200). Skips, saying so, when
//! the kernel refuses the call for lack of privilege — a failure under
//! DWARF2BTF_REQUIRE_KERNEL=1 (scripts/test.sh, as root).

mod common;

use common::*;
use dwarf2btf::btf::verify::verify_bytes;

/// One single-byte change.
#[derive(Clone, Copy, Debug)]
struct Mutation {
    offset: usize,
    old: u8,
    new: u8,
    targeted: bool,
}

/// The string section's byte range in raw BTF (little-endian header, as dwarf2btf writes on
/// this host).
fn string_section(data: &[u8]) -> std::ops::Range<usize> {
    let word = |at: usize| u32::from_le_bytes(data[at..at + 4].try_into().unwrap()) as usize;
    let (hdr_len, str_off, str_len) = (word(4), word(16), word(20));
    hdr_len + str_off..hdr_len + str_off + str_len
}

/// `n` deterministic mutations of `data`: even ones anywhere, odd ones 0x80..=0xFF into a
/// string byte (a third of those at the first byte of the string).
fn mutations(data: &[u8], n: u64, seed: u64) -> Vec<Mutation> {
    let strs = string_section(data);
    let mut rng = Rng(seed);
    (0..n)
        .map(|i| {
            let targeted = i % 2 == 1 && strs.len() > 1;
            let (offset, new) = if targeted {
                let mut at = strs.start + 1 + rng.below(strs.len() - 1);
                while data[at] == 0 {
                    at = strs.start + 1 + rng.below(strs.len() - 1);
                }
                if rng.chance(33) {
                    while data[at - 1] != 0 {
                        at -= 1;
                    }
                }
                (at, 0x80 + rng.below(0x80) as u8)
            } else {
                let at = rng.below(data.len());
                (at, data[at] ^ (1 + rng.below(255) as u8))
            };
            Mutation {
                offset,
                old: data[offset],
                new,
                targeted,
            }
        })
        .filter(|m| m.old != m.new)
        .collect()
}

/// Compares verify and the kernel on `data` and its mutations; panics listing every
/// disagreement. Returns false when the kernel refused the call (a SKIP).
fn differential(what: &str, data: &[u8], n: u64) -> bool {
    match btf_load(data) {
        Ok(_fd) => {}
        Err((errno, _)) if kernel_refused(errno, what) => return false,
        Err((errno, log)) => {
            panic!("{what}: the kernel rejects the unmutated BTF ({errno}): {log}")
        }
    }
    let problems = verify_bytes(data, None);
    assert!(
        problems.is_empty(),
        "{what}: verify rejects the unmutated BTF: {problems:?}"
    );

    let muts = mutations(data, n, 0x9e37_79b9_7f4a_7c15 ^ data.len() as u64);
    let (mut bad, mut rejected, mut targeted) = (Vec::new(), 0, 0);
    let mut buf = data.to_vec();
    for m in &muts {
        buf[m.offset] = m.new;
        let problems = verify_bytes(&buf, None);
        let kernel = btf_load(&buf);
        buf[m.offset] = m.old;
        let kernel = match kernel {
            Ok(_fd) => Ok(()),
            Err((28, _)) => panic!("{what}: the verifier log overflowed (ENOSPC) at {m:?}"),
            Err(e) => Err(e),
        };
        targeted += m.targeted as usize;
        rejected += kernel.is_err() as usize;
        if problems.is_empty() != kernel.is_ok() {
            let log = match &kernel {
                Ok(()) => "(accepted)".to_string(),
                Err((errno, log)) => {
                    let tail: Vec<_> = log.lines().rev().take(4).collect();
                    format!("errno {errno}: {}", tail.join(" | "))
                }
            };
            let shown: Vec<String> = problems.iter().take(3).map(|p| p.to_string()).collect();
            bad.push(format!(
                "  offset {:#x}: {:#04x} -> {:#04x}{}\n    verify: {}\n    kernel: {log}",
                m.offset,
                m.old,
                m.new,
                if m.targeted { " (string byte)" } else { "" },
                if shown.is_empty() {
                    "valid".to_string()
                } else {
                    shown.join("; ")
                },
            ));
        }
    }
    eprintln!(
        "{what}: {} mutations ({targeted} into strings), kernel rejected {rejected}, \
         verify agrees on {}",
        muts.len(),
        muts.len() - bad.len()
    );
    assert!(
        bad.is_empty(),
        "{what}: verify and BPF_BTF_LOAD disagree on {} of {} mutations:\n{}",
        bad.len(),
        muts.len(),
        bad.join("\n")
    );
    // Agreement means something only when the kernel both rejected and accepted some.
    assert!(
        rejected > 0 && rejected < muts.len(),
        "{what}: the kernel rejected {rejected} of {} mutations: the comparison shows nothing",
        muts.len()
    );
    true
}

fn cases() -> u64 {
    cases_from_env("DWARF2BTF_VERIFY_MUTATIONS", 200)
}

#[test]
fn verify_agrees_with_kernel_on_mutated_fixture_btf() {
    for (name, file) in fixture_btf_files("verify_kernel") {
        if !differential(name, &std::fs::read(&file).unwrap(), cases()) {
            return;
        }
    }
}

#[test]
fn verify_agrees_with_kernel_on_mutated_vmlinux_btf() {
    let Some(data) = vmlinux_btf("verify_kernel") else {
        return;
    };
    differential("vmlinux", &data, cases());
}

/// BTF written with `layout` (libbpf 1.8's 32-byte header and kind layout section): verify's
/// verdict equals the running kernel's. A 6.x kernel rejects the longer header, as verify's
/// 6.1 rules do; on a kernel that reads the layout section this fails until verify learns
/// its rules (issue 21).
#[test]
fn verify_agrees_with_kernel_on_btf_with_a_layout_section() {
    let what = "verify_agrees_with_kernel_on_btf_with_a_layout_section";
    let fixture = &fixtures()[0];
    let out = scratch("verify_kernel_layout").join("layout.btf");
    let features = format!("{KERNEL_FEATURES},layout");
    let o = encode(&fixture.path, &out, &[&features]);
    assert!(o.status.success(), "{}", text(&o));
    let data = std::fs::read(&out).unwrap();
    let kernel = match btf_load(&data) {
        Err((errno, _)) if kernel_refused(errno, what) => return,
        other => other.map(drop),
    };
    let problems = verify_bytes(&data, None);
    assert_eq!(
        problems.is_empty(),
        kernel.is_ok(),
        "{what}: verify says {problems:?}, the kernel {kernel:?}"
    );
}
