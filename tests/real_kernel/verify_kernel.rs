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
//!
//! verify judges for the running kernel's release (`Target::Kernel`, as `verify
//! --kernel-version` does): its header rules are 6.1's before 7.1 and the layout-aware ones
//! from 7.1 on. BTF with libbpf 1.8's 32-byte layout header (encoded by dwarf2btf, pahole
//! HEAD's, hand-made variants) and every mutation of its header get the same comparison, and
//! so do pahole HEAD's attribute type tags (kind_flag 1) with kind_flag flipped in each record.

use crate::common::layout_cases;

use crate::common::*;
use dwarf2btf::rng::Rng;
use dwarf2btf::toolbox::kernel;
use dwarf2btf::toolbox::verify::{self, Problem, Target};

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
    let mut rng = Rng::with_state(seed);
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

/// verify's problems with `data` for the running kernel's release.
fn for_running_kernel(data: &[u8]) -> Vec<Problem> {
    let version = kernel::version().expect("the running kernel's release");
    verify::judge(data, None, Target::Kernel(version)).problems
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
    let problems = for_running_kernel(data);
    assert!(
        problems.is_empty(),
        "{what}: verify rejects the unmutated BTF: {problems:?}"
    );

    let muts = mutations(data, n, 0x9e37_79b9_7f4a_7c15 ^ data.len() as u64);
    let (mut bad, mut rejected, mut targeted) = (Vec::new(), 0, 0);
    let mut buf = data.to_vec();
    for m in &muts {
        buf[m.offset] = m.new;
        let problems = for_running_kernel(&buf);
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

/// The kernel's verdict on `data`: Ok, or Err with the tail of its log; `None` when it
/// refused the call (a SKIP).
fn kernel_verdict(what: &str, data: &[u8]) -> Option<Result<(), String>> {
    match btf_load(data) {
        Ok(_fd) => Some(Ok(())),
        Err((errno, _)) if kernel_refused(errno, what) => None,
        Err((errno, log)) => {
            let tail: Vec<_> = log.lines().rev().take(3).collect();
            Some(Err(format!("errno {errno}: {}", tail.join(" | "))))
        }
    }
}

/// `data` with one header byte changed: every byte of the 32-byte header, each with three
/// masks (`hdr_len`, the section fields, the layout fields, magic, version and flags).
fn header_mutations(data: &[u8]) -> impl Iterator<Item = (usize, Vec<u8>)> + '_ {
    (0..32).flat_map(move |at| {
        [0x01u8, 0x10, 0x80].map(|mask| {
            let mut buf = data.to_vec();
            buf[at] ^= mask;
            (at, buf)
        })
    })
}

/// BTF with libbpf 1.8's 32-byte header: the kernel's verdict on `data` is `expected` (the
/// rule verify names for the running kernel's release, `None` for valid), and `data` and its
/// header mutations get the same verdict from verify for that release as from the kernel.
/// Returns how many the kernel accepted, or `None` when it refused the call (a SKIP).
fn layout_agreement(what: &str, data: &[u8], expected: Option<&str>) -> Option<usize> {
    let problems = for_running_kernel(data);
    let rules: Vec<&str> = problems.iter().map(|p| p.rule).collect();
    assert_eq!(
        rules,
        Vec::from_iter(expected),
        "{what}: verify says {problems:#?}"
    );
    let mut bad = Vec::new();
    let mut accepted = 0;
    let unmutated = std::iter::once((usize::MAX, data.to_vec()));
    for (at, buf) in unmutated.chain(header_mutations(data)) {
        let kernel = kernel_verdict(what, &buf)?;
        let problems = for_running_kernel(&buf);
        accepted += kernel.is_ok() as usize;
        if problems.is_empty() != kernel.is_ok() {
            let shown: Vec<String> = problems.iter().take(2).map(|p| p.to_string()).collect();
            bad.push(format!(
                "  {}: verify: {}; kernel: {kernel:?}",
                if at == usize::MAX {
                    "unmutated".to_string()
                } else {
                    format!("header byte {at} -> {:#04x}", buf[at])
                },
                if shown.is_empty() {
                    "valid".into()
                } else {
                    shown.join("; ")
                },
            ));
        }
    }
    assert!(
        bad.is_empty(),
        "{what}: verify for the running kernel and BPF_BTF_LOAD disagree:\n{}",
        bad.join("\n")
    );
    Some(accepted)
}

/// BTF written by dwarf2btf with `layout`, pahole HEAD's with `layout`, and the hand-made
/// variants of tests/common/layout_cases.rs: the kernel's verdict on each is the one expected
/// for its release (before 7.1 every file with a layout field set is rejected, verify saying
/// "H2-hdr-extra"), and verify for that release agrees with the kernel on each and on every
/// header mutation.
#[test]
fn verify_agrees_with_kernel_on_layout_headers() {
    let what = "verify_agrees_with_kernel_on_layout_headers";
    let out = scratch("verify_kernel_layout").join("layout.btf");
    let features = format!("{KERNEL_FEATURES},layout");
    let o = encode(&fixtures()[0].path, &out, &[&features]);
    assert!(o.status.success(), "{}", text(&o));
    let layout_kernel = kernel::version().is_some_and(|v| v >= verify::LAYOUT_KERNEL);
    let written = (!layout_kernel).then_some("H2-hdr-extra");
    let mut files = vec![
        (
            "dwarf2btf with layout".to_string(),
            std::fs::read(&out).unwrap(),
            written,
        ),
        (
            "pahole HEAD with layout".to_string(),
            std::fs::read(oracle_layout_btf()).unwrap(),
            written,
        ),
    ];
    files.extend(layout_cases::cases().into_iter().map(|c| {
        let expected = if layout_kernel {
            c.layout_rule
        } else {
            c.classic_rule
        };
        (format!("layout case: {}", c.name), c.data, expected)
    }));
    for (name, data, expected) in &files {
        let what = format!("{what}: {name}");
        let Some(accepted) = layout_agreement(&what, data, *expected) else {
            return;
        };
        eprintln!("{name}: the kernel accepted {accepted} of 97");
    }
}

/// pahole HEAD's BTF of the arena kfuncs (tests/data/attributes), whose TYPE_TAGs have
/// kind_flag 1: verify for the running kernel's release and the kernel agree on it, on its
/// random mutations, and on kind_flag flipped in every record, one at a time (the tags'
/// rule changed in 6.15; the other kinds' did not).
#[test]
fn verify_agrees_with_kernel_on_tag_kind_flags() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/attributes/arena_kfuncs.pahole-head.btf"
    );
    let data = std::fs::read(path).unwrap();
    let what = "verify_agrees_with_kernel_on_tag_kind_flags";
    if !differential(what, &data, cases()) {
        return;
    }
    let btf = dwarf2btf::btf::read::parse(&data, None).unwrap();
    let h = dwarf2btf::btf::read::parse_header(&data).unwrap();
    let mut at = (h.hdr_len + h.type_off) as usize;
    let (mut bad, mut flipped, mut accepted) = (Vec::new(), 0, 0);
    for id in 1..btf.type_cnt() {
        let t = btf.type_by_id(id).unwrap();
        let mut buf = data.clone();
        buf[at + 7] ^= 0x80; // info bit 31, kind_flag (little-endian)
        at += t.words.len() * 4;
        let Some(kernel) = kernel_verdict(what, &buf) else {
            return;
        };
        let problems = for_running_kernel(&buf);
        flipped += 1;
        accepted += kernel.is_ok() as u32;
        if problems.is_empty() != kernel.is_ok() {
            bad.push(format!(
                "  [{id}] {:?}: verify {problems:?}, kernel {kernel:?}",
                t.kind()
            ));
        }
    }
    assert_eq!(flipped, btf.type_cnt() - 1);
    // The tags (and the structs, whose kind_flag only changes how member offsets read) take
    // either value; FUNCs, PTRs, INTs, ... do not: the comparison shows something.
    assert!(
        0 < accepted && accepted < flipped,
        "{accepted} of {flipped}"
    );
    assert!(bad.is_empty(), "{what}: disagreements:\n{}", bad.join("\n"));
}
