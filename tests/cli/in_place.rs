//! `dwarf2btf -J FILE` writes `.BTF` into FILE itself, as pahole does in kernel builds: on
//! relocatable objects, shared objects, executables and a kernel module, 32- and 64-bit, both
//! byte orders.
//! The added section reads back as the same BTF `--btf_encode_detached` writes; every other
//! section, segment and header field keeps its meaning (checked section by section, and with
//! objcopy: removing `.BTF` again gives what removing it from the input gives); the file mode
//! is kept; a second run replaces the section without growing the file; and a file whose
//! `.BTF` cannot be replaced is left untouched.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;
use object::{Object, ObjectSection, ObjectSegment};

const SRC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");

/// One input kind: a name, the compiler and its flags, and whether GNU objcopy reads it.
struct Kind {
    name: &'static str,
    cc: &'static str,
    flags: &'static [&'static str],
    gnu_objcopy: bool,
}

const KINDS: &[Kind] = &[
    Kind {
        name: "x86_64.o",
        cc: "gcc",
        flags: &["-O2", "-g", "-c"],
        gnu_objcopy: true,
    },
    Kind {
        name: "x86_64.so",
        cc: "gcc",
        flags: &["-O2", "-g", "-shared", "-fPIC"],
        gnu_objcopy: true,
    },
    Kind {
        name: "x86_64.exe",
        cc: "gcc",
        flags: &["-O2", "-g", "-no-pie", "-nostdlib", "-Wl,-e,0"],
        gnu_objcopy: true,
    },
    Kind {
        name: "i386.o",
        cc: "clang",
        flags: &["--target=i386-linux-gnu", "-O2", "-g", "-c"],
        gnu_objcopy: true,
    },
    Kind {
        name: "s390x.o",
        cc: "clang",
        flags: &["--target=s390x-linux-gnu", "-O2", "-g", "-c"],
        gnu_objcopy: false,
    },
    Kind {
        name: "ppc32.o",
        cc: "clang",
        flags: &["--target=powerpc-linux-gnu", "-O2", "-g", "-c"],
        gnu_objcopy: false,
    },
];

/// Compiles `kind` into the scratch directory `dir` (one per test: tests run in parallel).
fn build(kind: &Kind, dir: &str) -> PathBuf {
    let out = scratch(dir).join(kind.name);
    run_ok(
        Command::new(tool(kind.cc))
            .args(kind.flags)
            .arg(format!("{SRC}/funcs_a.c"))
            .arg("-o")
            .arg(&out),
    );
    out
}

/// What a section is, apart from where its bytes sit in the file.
#[derive(Debug, PartialEq)]
struct SectionFacts {
    index: usize,
    name: String,
    kind: object::SectionKind,
    address: u64,
    size: u64,
    align: u64,
    flags: object::SectionFlags,
    data: Vec<u8>,
    /// The file position, for every section but the name table (which moves when a name is
    /// added).
    position: Option<(u64, u64)>,
}

/// `e_shstrndx`: the index of the section-name table (clang shares it with symbol names).
fn shstrndx(elf: &[u8]) -> usize {
    let at = if elf[4] == 2 { 62 } else { 50 };
    let b = [elf[at], elf[at + 1]];
    (if elf[5] == 2 {
        u16::from_be_bytes(b)
    } else {
        u16::from_le_bytes(b)
    }) as usize
}

/// A segment: address, memory size and file range.
type SegmentFacts = (u64, u64, Option<(u64, u64)>);

fn sections(path: &Path) -> (Vec<SectionFacts>, Vec<SegmentFacts>) {
    let bytes = std::fs::read(path).unwrap();
    let names = shstrndx(&bytes);
    let file = object::File::parse(&*bytes).unwrap();
    let secs = file
        .sections()
        .map(|s| SectionFacts {
            index: s.index().0,
            name: s.name().unwrap().to_string(),
            kind: s.kind(),
            address: s.address(),
            size: s.size(),
            align: s.align(),
            flags: s.flags(),
            data: s.data().unwrap().to_vec(),
            position: (s.index().0 != names).then(|| s.file_range()).flatten(),
        })
        .collect();
    let segs = file
        .segments()
        .map(|s| (s.address(), s.size(), Some(s.file_range())))
        .collect();
    (secs, segs)
}

fn objcopy_without_btf(objcopy: &Path, input: &Path, out: &Path) -> Vec<u8> {
    run_ok(
        Command::new(objcopy)
            .args(["--remove-section", ".BTF"])
            .arg(input)
            .arg(out),
    );
    std::fs::read(out).unwrap()
}

/// Encodes `original` in place (as split BTF on `base` when given) and checks everything the
/// module comment promises.
fn check_in_place(name: &str, original: &Path, base: Option<&Path>, gnu_objcopy: bool) {
    let flags: Vec<String> = base
        .map(|b| format!("--btf_base={}", b.display()))
        .into_iter()
        .collect();
    let verify_base: Vec<String> = base
        .map(|b| vec!["--base".into(), b.display().to_string()])
        .unwrap_or_default();
    let dir = scratch("in_place");
    let detached = dir.join(format!("{}.btf", name));
    run_ok(
        Command::new(bin())
            .arg("-J")
            .arg(format!("--btf_encode_detached={}", detached.display()))
            .args(&flags)
            .arg(original),
    );
    let target = dir.join(format!("{}.in-place", name));
    std::fs::copy(original, &target).unwrap();
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o751)).unwrap();
    run_ok(Command::new(bin()).arg("-J").args(&flags).arg(&target));

    let mode = std::fs::metadata(&target).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o751, "{}: mode not kept", name);
    let (before, segs_before) = sections(original);
    let (after, segs_after) = sections(&target);
    assert_eq!(segs_before, segs_after, "{}: segments changed", name);
    assert_eq!(after.len(), before.len() + 1, "{}: one section more", name);
    for (b, a) in before.iter().zip(&after) {
        if b.position.is_none() && b.kind == object::SectionKind::Metadata {
            // The name table may only have grown by the new name.
            assert!(a.data.starts_with(&b.data), "{}: names rewritten", name);
            assert_eq!(&a.data[b.data.len()..], b".BTF\0", "{}", name);
            continue;
        }
        assert_eq!(b, a, "{}: section {} changed", name, b.name);
    }
    let btf = after.last().unwrap();
    assert_eq!(btf.name, ".BTF");
    assert_eq!(
        btf.data,
        std::fs::read(&detached).unwrap(),
        "{}: .BTF differs from the detached output",
        name
    );
    let verify = run(Command::new(bin())
        .arg("verify")
        .args(&verify_base)
        .arg(&target));
    assert!(verify.status.success(), "{}: {}", name, text(&verify));

    let objcopy = tool(if gnu_objcopy {
        "objcopy"
    } else {
        "llvm-objcopy"
    });
    if gnu_objcopy {
        assert_eq!(
            objcopy_without_btf(&objcopy, &target, &dir.join(format!("{name}.a.tmp"))),
            objcopy_without_btf(&objcopy, original, &dir.join(format!("{name}.b.tmp"))),
            "{}: objcopy --remove-section .BTF differs",
            name
        );
    }

    // Again: the section is replaced in place of the old one, and the file does not grow.
    let size = std::fs::metadata(&target).unwrap().len();
    run_ok(
        Command::new(bin())
            .args(["-J", "-j2"])
            .args(&flags)
            .arg(&target),
    );
    assert_eq!(std::fs::metadata(&target).unwrap().len(), size);
    let (again, _) = sections(&target);
    assert_eq!(again, after, "{}: the second run changed sections", name);
}

#[test]
fn in_place_on_every_elf_kind() {
    for kind in KINDS {
        check_in_place(kind.name, &build(kind, "in_place"), None, kind.gnu_objcopy);
    }
}

/// A kernel module as Makefile.modfinal rewrites it: split BTF against the vmlinux BTF.
#[test]
fn in_place_on_a_kernel_module() {
    // Split BTF on tests/data's vmlinux BTF: the module must come from the same image.
    let Some(modules) = pinned_modules("in_place_on_a_kernel_module") else {
        return;
    };
    // Debian's module already has a .BTF; the build's .ko has none yet.
    let ko = scratch("in_place").join("af_key.ko");
    run_ok(
        Command::new(tool("objcopy"))
            .args(["--remove-section", ".BTF"])
            .arg(modules.join("kernel/net/key/af_key.ko"))
            .arg(&ko),
    );
    check_in_place("af_key.ko", &ko, Some(&oracle_btf()), true);
}

/// A `.BTF` inside a loaded segment (as in a final vmlinux) cannot be rewritten: the file is
/// left as it was, with no temporary file beside it, and the error is one line.
#[test]
fn allocated_btf_is_refused_and_the_file_untouched() {
    let original = build(&KINDS[0], "in_place_allocated");
    let dir = scratch("in_place_alloc");
    let blob = dir.join("blob");
    std::fs::write(&blob, b"not really BTF").unwrap();
    let target = dir.join("alloc.o");
    run_ok(
        Command::new(tool("objcopy"))
            .arg(format!("--add-section=.BTF={}", blob.display()))
            .args(["--set-section-flags", ".BTF=alloc,readonly"])
            .arg(&original)
            .arg(&target),
    );
    let before = std::fs::read(&target).unwrap();
    let out = run(Command::new(bin()).arg("-J").arg(&target));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("allocated"), "{err}");
    assert_eq!(std::fs::read(&target).unwrap(), before);
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
}

/// An empty allocated `.BTF` (ld.lld keeps the kernel linker script's empty output section in
/// `.tmp_vmlinux1`, where link-vmlinux.sh runs `pahole -J`) is filled as an unallocated one
/// would be, and llvm-objcopy extracts what the detached output holds.
#[test]
fn empty_allocated_btf_is_filled() {
    let original = build(&KINDS[0], "in_place_empty_alloc_src");
    let dir = scratch("in_place_empty_alloc");
    let target = dir.join("empty.o");
    run_ok(
        Command::new(tool("objcopy"))
            .arg("--add-section=.BTF=/dev/null")
            .args(["--set-section-flags", ".BTF=alloc,readonly"])
            .arg(&original)
            .arg(&target),
    );
    run_ok(Command::new(bin()).arg("-J").arg(&target));
    let detached = dir.join("detached.btf");
    let o = encode(&original, &detached, &[]);
    assert!(o.status.success(), "{}", text(&o));
    let extracted = dir.join("extracted.btf");
    run_ok(
        Command::new(tool("llvm-objcopy"))
            .args(["-O", "binary", "--only-section=.BTF"])
            .arg(&target)
            .arg(&extracted),
    );
    assert_eq!(
        std::fs::read(&extracted).unwrap(),
        std::fs::read(&detached).unwrap()
    );
}

/// pahole's getopt reads `-j` alone as "one job per CPU": the next word is the input.
#[test]
fn bare_j_does_not_take_the_file_as_its_value() {
    let target = scratch("in_place_j").join("j.o");
    std::fs::copy(build(&KINDS[0], "in_place_j_src"), &target).unwrap();
    run_ok(Command::new(bin()).args(["-J", "-j"]).arg(&target));
    run_ok(Command::new(bin()).arg("verify").arg(&target));
}
