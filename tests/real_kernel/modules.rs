//! Debian's 6.1 modules (the reference kernel's `-dbg` package, `scripts/setup/fetch-kernel.sh
//! --modules`) encoded as split BTF against the vmlinux BTF, as kernel builds do: a sample
//! across subsystems, each compared with pahole 1.32's output for the same module
//! (tests/data/modules), checked by `dwarf2btf verify --base` and `bpftool btf -B`.
//!
//! Types, variables and datasecs must be identical. Functions may differ only in the ways the
//! docs/differences-from-pahole.md documents for relocatable inputs: pahole cannot match a module's
//! DWARF addresses with its symbols, so it emits a prototype for a function whose only symbol is an
//! optimized clone (`NAME.isra.0`, `NAME.constprop.0`) that dwarf2btf skips for "optimized
//! parameters", and it may take another instance's parameter names; and pahole misses an ambiguous
//! address when one of the symbols sits at section offset 0 or the name is the table's last.

use std::path::Path;
use std::process::Command;

use crate::common::*;
use object::{Object, ObjectSymbol};

/// Modules across subsystems: file systems, networking, block, crypto, drivers, memory
/// management, KVM (whose clones show the relocatable-input difference) and small library
/// modules.
const SAMPLE: &[&str] = &[
    "arch/x86/kvm/kvm",
    "arch/x86/crypto/aesni-intel",
    "block/bfq",
    "crypto/cryptd",
    "drivers/block/loop",
    "drivers/net/virtio_net",
    "drivers/md/dm-mod",
    "drivers/virtio/virtio_pci",
    "fs/fat/fat",
    "drivers/nvme/host/nvme-tcp",
    "fs/btrfs/btrfs",
    "fs/xfs/xfs",
    "fs/fuse/fuse",
    "fs/nfs/nfs",
    "fs/overlayfs/overlay",
    "lib/crc-itu-t",
    "lib/libcrc32c",
    "net/bridge/bridge",
    "net/sched/act_bpf",
    "net/key/af_key",
    "net/netfilter/nf_tables",
    "net/openvswitch/openvswitch",
    "drivers/vhost/vhost_net",
    "mm/zsmalloc",
];

/// The type and string sections of raw BTF (pahole HEAD wrote a 32-byte header; pahole 1.32, through
/// libbpf 1.7.0, writes 24, as dwarf2btf does without `layout`).
fn body(data: &[u8]) -> &[u8] {
    &data[u32::from_le_bytes(data[4..8].try_into().unwrap()) as usize..]
}

/// A function line of `scripts/check/btf-canon.py` without parameter names:
/// `| 'a' type_id=T` → `| type_id=T`, in the prototype and in any it refers to.
fn without_param_names(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(at) = rest.find("| '") {
        let (before, after) = rest.split_at(at + 2);
        out.push_str(before);
        // `after` is `'NAME' type_id=…` for a parameter.
        match after[1..].find('\'') {
            Some(end) if after[end + 2..].starts_with(" type_id=") => rest = &after[end + 3..],
            _ => {
                out.push('\'');
                rest = &after[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// What a function line of `scripts/check/btf-canon.py` is — its first two words, `FUNC 'f'` or
/// `DECL_TAG 't'` — and the name of its function (`f`, the tagged FUNC's for a tag).
fn function_of(line: &str) -> (String, String) {
    let head: String = line.split_inclusive('\'').take(2).collect();
    let f = line
        .split_once("FUNC '")
        .and_then(|(_, rest)| rest.split_once('\''))
        .map_or("", |(f, _)| f);
    (head, f.to_string())
}

/// Checks that every function difference between our output and pahole's (the lines of
/// `scripts/check/btf-canon.py --only funcs` only in `ours` and only in `theirs`) is one
/// docs/differences-from-pahole.md documents; returns how many there were.
fn check_function_differences(
    module: &str,
    ko: &Path,
    ours: &[String],
    theirs: &[String],
    log: &str,
) -> usize {
    let elf_data = std::fs::read(ko).unwrap();
    let elf = object::File::parse(&*elf_data).unwrap();
    let symbols: Vec<(String, u64)> = elf
        .symbols()
        .filter(|s| s.kind() == object::SymbolKind::Text)
        .filter_map(|s| s.name().ok().map(|n| (n.to_string(), s.address())))
        .collect();
    let skipped_for = |f: &str, reason: &str| {
        log.contains(&format!(
            "{f} : skipping BTF encoding of function due to {reason}"
        ))
    };
    for line in theirs {
        let what = function_of(line);
        if let Some(mine) = ours.iter().find(|l| function_of(l) == what) {
            assert_eq!(
                without_param_names(mine),
                without_param_names(line),
                "{module}: {what:?} differs in more than parameter names"
            );
            continue;
        }
        let f = &what.1;
        // Symbols of this function: its own name, or its name with a clone suffix.
        let syms: Vec<&(String, u64)> = symbols
            .iter()
            .filter(|(n, _)| n == f || n.starts_with(&format!("{f}.")))
            .collect();
        let only_clones = syms.iter().all(|(n, _)| n != f) && !syms.is_empty();
        let mut addrs: Vec<u64> = syms.iter().map(|(_, a)| *a).collect();
        addrs.dedup();
        let explained = (skipped_for(f, "optimized parameters") && only_clones)
            || (skipped_for(f, "ambiguous address") && addrs.len() > 1);
        assert!(
            explained,
            "{module}: {what:?} is in pahole's output, not in ours, for no documented reason"
        );
    }
    for line in ours {
        let what = function_of(line);
        assert!(
            theirs.iter().any(|l| function_of(l) == what),
            "{module}: {what:?} is in our output only"
        );
    }
    theirs.len()
}

#[test]
fn debian_modules_as_split_btf_match_pahole_1_32() {
    let Some(modules) = pinned_modules("debian_modules_as_split_btf_match_pahole_1_32") else {
        return;
    };
    let base = oracle_btf();
    let base_arg = format!("--btf_base={}", base.display());
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/modules");
    let out_dir = scratch("modules");
    let (mut identical, mut explained) = (0, 0);
    for module in SAMPLE {
        let ko = modules.join(format!("kernel/{module}.ko"));
        let short = Path::new(module).file_name().unwrap().to_string_lossy();
        let out = out_dir.join(format!("{short}.btf"));
        let o = encode(
            &ko,
            &out,
            &[
                KERNEL_FEATURES,
                "--lang_exclude=rust",
                "-j1",
                "-V",
                &base_arg,
            ],
        );
        assert!(o.status.success(), "{module}: {}", text(&o));
        let log = String::from_utf8_lossy(&o.stdout).into_owned();
        run_ok(
            Command::new(bin())
                .arg("verify")
                .arg("--base")
                .arg(&base)
                .arg(&out),
        );
        run_ok(
            Command::new(tool("bpftool"))
                .args(["btf", "-B"])
                .arg(&base)
                .args(["dump", "file"])
                .arg(&out),
        );
        let oracle = data.join(format!("{short}.btf"));
        let (a, b) = (
            std::fs::read(&out).unwrap(),
            std::fs::read(&oracle).unwrap(),
        );
        if body(&a) == body(&b) {
            identical += 1;
            continue;
        }
        // As bpftool reads them (tests/common/judge.rs), not by dwarf2btf's own `diff`.
        let judge = judge::Judge::only("types,vars,datasecs").over(&base);
        if let Some(d) = judge.difference(&oracle, &out) {
            panic!("{module}: types differ:\n{d}");
        }
        let (theirs, ours) = judge::Judge::only("funcs")
            .over(&base)
            .only_in(&oracle, &out);
        assert!(
            check_function_differences(module, &ko, &ours, &theirs, &log) > 0,
            "{module}: outputs differ, but not in types or functions"
        );
        explained += 1;
    }
    println!(
        "{} modules: {identical} identical to pahole 1.32's, {explained} with documented function differences",
        SAMPLE.len()
    );
    assert!(identical > 0, "no module was byte-identical");
}

/// `--btf_features=distilled_base` in place (what Kbuild passes for external modules): the
/// module gets `.BTF` (split BTF on a distilled base) and `.BTF.base`, both equal to pahole
/// HEAD's (tests/data/modules/NAME.distilled.*).
#[test]
fn distilled_base_matches_pahole_1_32() {
    let Some(modules) = pinned_modules("distilled_base_matches_pahole_1_32") else {
        return;
    };
    let base = oracle_btf();
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/modules");
    for module in ["net/key/af_key", "lib/crc-itu-t"] {
        let short = Path::new(module).file_name().unwrap().to_string_lossy();
        let ko = scratch("distilled").join(format!("{short}.ko"));
        std::fs::copy(modules.join(format!("kernel/{module}.ko")), &ko).unwrap();
        run_ok(
            Command::new(bin())
                .args(["-J", "-j1", "--lang_exclude=rust"])
                .arg(format!("{KERNEL_FEATURES},distilled_base"))
                .arg(format!("--btf_base={}", base.display()))
                .arg(&ko),
        );
        let elf_data = std::fs::read(&ko).unwrap();
        let elf = object::File::parse(&*elf_data).unwrap();
        for section in [".BTF", ".BTF.base"] {
            use object::ObjectSection;
            let ours = elf.section_by_name(section).unwrap().data().unwrap();
            let theirs = std::fs::read(data.join(format!("{short}.distilled{section}"))).unwrap();
            assert!(
                body(ours) == body(&theirs),
                "{module}: {section} differs from pahole 1.32's"
            );
        }
    }
}

/// An out-of-tree module author's one-liner: the running kernel's BTF as base, read from
/// sysfs (which refuses mmap). Needs a kernel with CONFIG_DEBUG_INFO_BTF, as the machines
/// here have.
#[test]
fn running_kernel_btf_as_base() {
    let Some(modules) = modules() else { return };
    let sysfs = Path::new("/sys/kernel/btf/vmlinux");
    assert!(sysfs.exists(), "this machine's kernel has no BTF");
    let ko = scratch("sysfs_base").join("crc-itu-t.ko");
    std::fs::copy(modules.join("kernel/lib/crc-itu-t.ko"), &ko).unwrap();
    run_ok(
        Command::new(bin())
            .args(["-J", "--btf_base", "/sys/kernel/btf/vmlinux"])
            .arg(&ko),
    );
    run_ok(
        Command::new(bin())
            .args(["verify", "--base"])
            .arg(sysfs)
            .arg(&ko),
    );
}

/// Negative control of the module comparison's judge (split BTF over the vmlinux oracle): a
/// committed module oracle against itself passes; with a struct member renamed or retyped it
/// fails. And the function lines it compares lose their parameter names only.
#[test]
fn module_judge_detects_a_changed_member() {
    let base = oracle_btf();
    let oracle = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/modules/act_bpf.btf");
    let judge = judge::Judge::only("types,vars,datasecs").over(&base);
    judge::judge_detects_a_changed_member(judge, &oracle, &scratch("judge").join("act_bpf"));
    let line = "FUNC 'f' type_id={FUNC_PROTO '(anon)' ret_type_id=INT 'int' vlen=2 | 'a' \
                type_id=INT 'int' | 'b' type_id={PTR '(anon)' type_id=STRUCT 's'}} linkage=static";
    assert_eq!(
        without_param_names(line),
        "FUNC 'f' type_id={FUNC_PROTO '(anon)' ret_type_id=INT 'int' vlen=2 | type_id=INT \
         'int' | type_id={PTR '(anon)' type_id=STRUCT 's'}} linkage=static"
    );
    let tag = format!("DECL_TAG 'bpf_kfunc' type_id={{{line}}} component_idx=-1");
    assert_eq!(
        function_of(&tag),
        ("DECL_TAG 'bpf_kfunc'".to_string(), "f".to_string())
    );
    assert_eq!(function_of(line), ("FUNC 'f'".to_string(), "f".to_string()));
}

/// Relocating a large module's debug sections (`mlx5_core.ko`: 17 MiB of `.debug_info`, 24 MiB
/// of `.rela.debug_info`) gives the mapped pages it read back as it goes, and so does the
/// variables' pass over the same relocations: what stays of the file in this process is a
/// small part of what was read.
#[test]
fn relocating_a_module_releases_the_pages_it_read() {
    use dwarf2btf::dwarf::units::DebugSections;
    use dwarf2btf::input::elf::{Elf, Mapped};
    use dwarf2btf::measure::file_resident_mib;

    let Some(dir) = modules() else { return };
    let ko = dir.join("kernel/drivers/net/ethernet/mellanox/mlx5/core/mlx5_core.ko");
    // SAFETY: the reference modules are a read-only cache no test writes.
    let mapped = unsafe { Mapped::open(&ko) }.unwrap();
    let elf = Elf::parse(&mapped).unwrap();
    let sections = DebugSections::load(&elf).unwrap().unwrap();
    let read_mib = (sections.info_bytes().len() >> 20) as u64;
    assert!(
        read_mib >= 16,
        "{}: {read_mib} MiB of .debug_info",
        ko.display()
    );
    let after_copy = file_resident_mib(&ko);
    let relocations = elf.relocation_symbols(".debug_info").count();
    assert!(relocations > 1_000_000, "{relocations} relocations");
    let after_scan = file_resident_mib(&ko);
    // A kernel that keeps the file in large page-cache folios maps a whole folio (up to 2 MiB)
    // on a fault, so the neighbours of a released range can stay mapped: one folio at each
    // of its ends (seen on 6.18: 3 MiB after the scan). Keeping what was read would leave
    // 16-40 MiB.
    const FOLIO_EDGES_MIB: u64 = 4;
    let bound = read_mib / 8 + FOLIO_EDGES_MIB;
    assert!(
        after_copy <= bound && after_scan <= bound,
        "of {read_mib} MiB of .debug_info (and 24 MiB of its relocations) read, \
         {after_copy} MiB stay mapped after the copy, {after_scan} MiB after the scan"
    );
}

/// The encoder relocates a module's `.debug_info` unit by unit, as workers read the units:
/// every unit of the largest modules comes out as the whole relocated copy has it, and the
/// sections the encoder loads hold no copy of the section.
#[test]
fn modules_relocate_unit_by_unit() {
    use dwarf2btf::dwarf::units::DebugSections;
    use dwarf2btf::input::elf::Elf;

    let Some(dir) = modules() else { return };
    for module in [
        "drivers/net/ethernet/mellanox/mlx5/core/mlx5_core",
        "arch/x86/kvm/kvm",
    ] {
        let ko = dir.join(format!("kernel/{module}.ko"));
        let units = crate::common::assert_units_relocate_as_the_whole_section(&ko);
        assert!(units > 10, "{module}: {units} units");
        let mapped = crate::common::map(&ko);
        let elf = Elf::parse(&mapped).unwrap();
        let sections = DebugSections::load_by_unit(&elf).unwrap().unwrap();
        let info = sections.info_bytes().as_ptr_range();
        let map = mapped.bytes().as_ptr_range();
        assert!(
            map.start <= info.start && info.end <= map.end,
            "{module}: .debug_info was copied, not read unit by unit"
        );
    }
}
