//! What the bad-input tests share: the check that a run failed cleanly (one error line,
//! exit 2, no output or temporary file left, the input untouched, peak RSS within the
//! bound docs/bad-input.md states), compiling a C snippet, and finding and patching DIEs and
//! sections of an object by what readelf says of it.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::*;

/// Runs the encoder on `input` three ways (detached, detached with the kernel's features, in
/// place) and checks that each fails cleanly with `expect` in its one error line.
pub fn assert_clean_failure(input: &Path, expect: &str) {
    let dir = input.parent().unwrap();
    let out_path = dir.join(format!(
        "{}.out.btf",
        input.file_name().unwrap().to_string_lossy()
    ));
    let before = std::fs::read(input).unwrap();
    let detached = |flags: &[&str]| encode_command(input, &out_path, flags);
    let mut in_place = Command::new(bin());
    in_place.arg("-J").arg(input);
    for mut cmd in [
        detached(&[]),
        detached(&[KERNEL_FEATURES, "--lang_exclude=rust"]),
        in_place,
    ] {
        let (out, kib) = rss::within_bound(&[input], &mut cmd);
        println!("{}: peak RSS {kib} KiB", input.display());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{}: {stderr}", input.display());
        assert!(
            !stderr.contains("panicked"),
            "panic on {}: {stderr}",
            input.display()
        );
        assert_eq!(
            stderr.trim_end().lines().count(),
            1,
            "one error line expected: {stderr}"
        );
        assert!(stderr.starts_with("dwarf2btf: "), "{stderr}");
        assert!(stderr.contains(expect), "expected '{expect}' in: {stderr}");
    }
    assert!(!out_path.exists(), "an output file was left behind");
    // Temporary files: `.NAME.tmp.PID` (raw output), `.NAME.btf.PID` (in place).
    let leftovers: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with('.'))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
    assert_eq!(std::fs::read(input).unwrap(), before, "input was modified");
}

/// Finds the file range of a section by name with readelf.
pub fn section_range(path: &Path, name: &str) -> (usize, usize) {
    let out = run_ok(Command::new(tool("readelf")).args(["-S", "-W"]).arg(path));
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.split_whitespace().any(|w| w == name))
        .unwrap_or_else(|| panic!("no {name} in {}", path.display()));
    let f: Vec<&str> = line.split(']').nth(1).unwrap().split_whitespace().collect();
    let off = usize::from_str_radix(f[3], 16).unwrap();
    let size = usize::from_str_radix(f[4], 16).unwrap();
    (off, size)
}

/// Compiles `source` (file name `name`) with `cc -c` and `flags` in a scratch directory of
/// its own; returns the object.
pub fn compile(name: &str, source: &str, cc: &str, flags: &[&str]) -> PathBuf {
    let dir = scratch(&format!("bad_{name}"));
    let src = dir.join(name);
    std::fs::write(&src, source).unwrap();
    let obj = src.with_extension("o");
    run_ok(
        Command::new(tool(cc))
            .args(flags)
            .arg("-c")
            .arg(&src)
            .arg("-o")
            .arg(&obj),
    );
    obj
}

/// A DIE as `readelf --debug-dump=info` shows it: offsets are `.debug_info` offsets.
#[derive(Debug)]
pub struct Die {
    /// Where the DIE starts in `.debug_info`.
    pub offset: usize,
    /// Its tag, as readelf prints it (`DW_TAG_subprogram`).
    pub tag: String,
    /// (offset of the attribute's value, name, value as readelf prints it).
    pub attrs: Vec<(usize, String, String)>,
}

impl Die {
    /// The value of attribute `name`, as readelf prints it.
    pub fn attr(&self, name: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(_, n, _)| n == name)
            .map(|(_, _, v)| v.as_str())
    }

    /// Where attribute `name`'s value lies in `.debug_info`.
    pub fn attr_at(&self, name: &str) -> usize {
        self.attrs
            .iter()
            .find(|(_, n, _)| n == name)
            .unwrap_or_else(|| panic!("no {name} in {self:?}"))
            .0
    }

    /// Whether its `DW_AT_name` is `name` (inline or indirect).
    pub fn named(&self, name: &str) -> bool {
        self.attr("DW_AT_name")
            .is_some_and(|v| v == name || v.ends_with(&format!("): {name}")))
    }
}

/// Every DIE of `obj`, in order.
pub fn read_dies(obj: &Path) -> Vec<Die> {
    let out = run_ok(
        Command::new(tool("readelf"))
            .arg("--debug-dump=info")
            .arg(obj),
    );
    let hex = |s: &str| usize::from_str_radix(s.trim().trim_start_matches("0x"), 16).unwrap();
    let mut dies: Vec<Die> = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let t = line.trim_start();
        if let (Some(tag), true) = (line.split(['(', ')']).nth(1), t.contains("Abbrev Number:")) {
            if t.contains("Abbrev Number: 0") {
                continue;
            }
            dies.push(Die {
                offset: hex(t.split(['<', '>']).nth(3).unwrap()),
                tag: tag.to_string(),
                attrs: Vec::new(),
            });
        } else if let (Some(die), Some(rest)) = (dies.last_mut(), t.strip_prefix('<')) {
            let Some((at, rest)) = rest.split_once('>') else {
                continue;
            };
            let Some((name, value)) = rest.trim().split_once(':') else {
                continue;
            };
            die.attrs
                .push((hex(at), name.trim().to_string(), value.trim().to_string()));
        }
    }
    dies
}

/// The DIE of `tag` named `name`.
pub fn die_named<'d>(dies: &'d [Die], tag: &str, name: &str) -> &'d Die {
    dies.iter()
        .find(|d| d.tag == tag && d.named(name))
        .unwrap_or_else(|| panic!("no {tag} {name}"))
}

/// A copy of `obj` named `name` with the 4-byte value at `.debug_info` offset `at` (a
/// `DW_FORM_ref4` in a unit at offset 0, so a unit offset) set to `value`.
pub fn with_ref4(obj: &Path, name: &str, at: usize, value: u32) -> PathBuf {
    let mut bytes = std::fs::read(obj).unwrap();
    let (off, size) = section_range(obj, ".debug_info");
    assert!(at + 4 <= size, "{at:#x} is past .debug_info");
    bytes[off + at..off + at + 4].copy_from_slice(&value.to_le_bytes());
    let p = obj.with_file_name(name);
    std::fs::write(&p, &bytes).unwrap();
    p
}
