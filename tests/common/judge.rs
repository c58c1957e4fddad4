//! The judge independent of dwarf2btf: two BTF files compared as bpftool reads them
//! (`bpftool btf dump file F format raw`), normalised by `scripts/check/btf-canon.py` into one
//! id-free line per type, sorted. Tests whose oracle is another tool (pahole 1.24, pahole
//! HEAD's committed outputs, pahole's BTF of a plain build) compare through it, so that
//! neither side of the comparison is dwarf2btf's own code (`dwarf2btf diff`, which
//! tests/btf_library/canon_diff.rs tests).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use super::{corrupt_member_type, rename_first_member, run_ok, tool};

/// What to compare: the whole BTF (the default) or some categories, as multisets or sets,
/// split BTF with its base.
#[derive(Clone, Copy, Default)]
pub struct Judge<'a> {
    /// The base of both (split) files.
    pub base: Option<&'a Path>,
    /// `btf-canon.py --only`: a comma-separated list of types, funcs, vars, datasecs.
    pub only: Option<&'a str>,
    /// Compare as sets (each line once) rather than multisets.
    pub set: bool,
}

impl<'a> Judge<'a> {
    /// Every type, as a multiset.
    pub fn all() -> Self {
        Judge::default()
    }

    /// The items of `categories` only (see `btf-canon.py --only`).
    pub fn only(categories: &'a str) -> Self {
        Judge {
            only: Some(categories),
            ..Judge::default()
        }
    }

    /// The same comparison, as sets.
    pub fn as_sets(self) -> Self {
        Judge { set: true, ..self }
    }

    /// The same comparison, of split BTF over `base`.
    pub fn over(self, base: &'a Path) -> Self {
        Judge {
            base: Some(base),
            ..self
        }
    }

    /// The id-free rendering of `btf`: one line per type (or item), sorted.
    pub fn canon(&self, btf: &Path) -> String {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/check/btf-canon.py");
        let mut cmd = Command::new(tool("python3"));
        cmd.arg(script);
        if let Some(base) = self.base {
            cmd.arg("--base").arg(base);
        }
        if let Some(only) = self.only {
            cmd.args(["--only", only]);
        }
        if self.set {
            cmd.arg("--set");
        }
        String::from_utf8(run_ok(cmd.arg(btf)).stdout).expect("btf-canon.py prints UTF-8")
    }

    /// The lines of `a` not in `b` and those of `b` not in `a`, as multisets (or sets): a
    /// line `n` times more often on one side is listed `n` times there.
    pub fn only_in(&self, a: &Path, b: &Path) -> (Vec<String>, Vec<String>) {
        let (ca, cb) = (self.canon(a), self.canon(b));
        let mut count: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
        for l in ca.lines() {
            count.entry(l).or_default().0 += 1;
        }
        for l in cb.lines() {
            count.entry(l).or_default().1 += 1;
        }
        let (mut only_a, mut only_b) = (Vec::new(), Vec::new());
        for (l, (x, y)) in count {
            only_a.extend(std::iter::repeat_n(l.to_string(), x.saturating_sub(y)));
            only_b.extend(std::iter::repeat_n(l.to_string(), y.saturating_sub(x)));
        }
        (only_a, only_b)
    }

    /// `None` when `a` and `b` describe the same types; otherwise the lines only in each
    /// (the first 20 of each side).
    pub fn difference(&self, a: &Path, b: &Path) -> Option<String> {
        let (only_a, only_b) = self.only_in(a, b);
        if only_a.is_empty() && only_b.is_empty() {
            return None;
        }
        let show = |v: &[String]| v.iter().take(20).cloned().collect::<Vec<_>>().join("\n  ");
        Some(format!(
            "{} and {} differ as bpftool reads them ({} lines only in the first, {} only in \
             the second):\nonly in the first:\n  {}\nonly in the second:\n  {}",
            a.display(),
            b.display(),
            only_a.len(),
            only_b.len(),
            show(&only_a),
            show(&only_b)
        ))
    }

    /// Panics with the difference unless `a` and `b` describe the same types.
    pub fn assert_same(&self, a: &Path, b: &Path) {
        if let Some(d) = self.difference(a, b) {
            panic!("{d}");
        }
    }
}

/// Negative control of the judge: `btf` against itself passes; a copy with its first struct
/// member renamed, and one with that member's type changed (to the first FUNC), each fail.
/// The copies are written next to `scratch_file`.
pub fn judge_detects_a_changed_member(judge: Judge, btf: &Path, scratch_file: &Path) {
    judge.assert_same(btf, btf);
    let bytes = std::fs::read(btf).unwrap();
    for (what, changed) in [
        ("renamed", rename_first_member(&bytes)),
        ("retyped", corrupt_member_type(&bytes, true)),
    ] {
        let path = scratch_file.with_extension(format!("{what}.btf"));
        std::fs::write(&path, changed).unwrap();
        assert!(
            judge.difference(btf, &path).is_some(),
            "the judge passed a {what} member"
        );
    }
}
