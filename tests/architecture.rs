//! The layering of src/ as a test: every module sits on a floor, a file imports only from its
//! own floor or the ones below, and no files import each other in a circle.
//!
//! A small scanner reads the source text (comments and literals blanked out), finds the module
//! tree from `mod` declarations (files and inline modules, from `lib.rs` and, for the binary,
//! `main.rs`), and resolves every path that names a module of the crate: `use` trees with their
//! `{…}` groups, `crate::`, `super::`, `self::` and child-module paths, in `use` items and in
//! expressions alike. In the binary's files, `dwarf2btf::` names the library. Each path is
//! resolved to the longest module prefix it names, and that module's file is the import's end.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The floors, from the ground up. A pattern names a module and everything inside it; `x::*`
/// names only what is inside `x`. The longest pattern matching a module places it. The
/// binary's modules are under `main`; `crate` is the library's root (`lib.rs`, which
/// re-exports the crate's error).
const FLOORS: &[(&str, &[&str])] = &[
    (
        "the vocabulary: the format's kinds, each stage's error types",
        &[
            "sync",
            "rng",
            "btf::kinds",
            "btf::error",
            "dedup::error",
            "dwarf::error",
            "encode::error",
        ],
    ),
    (
        "the ground: the crate's error, measurement probes, mapped files, configuration",
        &["crate", "error", "measure", "mapped", "config", "progress"],
    ),
    ("the format", &["btf"]),
    (
        "the toolbox: verify, canon, dump, the running kernel's verdict",
        &["toolbox"],
    ),
    ("input", &["input"]),
    ("dwarf", &["dwarf"]),
    ("encode", &["encode"]),
    ("functions", &["functions"]),
    ("dedup", &["dedup"]),
    ("output", &["output"]),
    ("pipeline", &["pipeline"]),
    ("the run's report", &["stats"]),
    ("the subcommands", &["why", "main::*"]),
    ("main", &["main"]),
];

/// One source file: its module path and where its text is.
struct File {
    module: Vec<String>,
    path: PathBuf,
    /// "lib" or "main": which crate `crate::` names.
    krate: &'static str,
}

/// Blanks out comments, string and char literals (keeping line breaks), so only code is left.
fn code_only(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    let blank = |out: &mut Vec<u8>, c: u8| out.push(if c == b'\n' { b'\n' } else { b' ' });
    while i < b.len() {
        let c = b[i];
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                out.push(b' ');
                i += 1;
            }
        } else if c == b'/' && b.get(i + 1) == Some(&b'*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                    depth += 1;
                    out.extend_from_slice(b"  ");
                    i += 2;
                } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                    depth -= 1;
                    out.extend_from_slice(b"  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(&mut out, b[i]);
                    i += 1;
                }
            }
        } else if (c == b'r' || c == b'b')
            && !b[..i]
                .last()
                .is_some_and(|p| p.is_ascii_alphanumeric() || *p == b'_')
            && raw_string_start(&b[i..]).is_some()
        {
            let (skip, hashes) = raw_string_start(&b[i..]).unwrap();
            out.extend(std::iter::repeat_n(b' ', skip));
            i += skip;
            let close: Vec<u8> = std::iter::once(b'"')
                .chain(std::iter::repeat_n(b'#', hashes))
                .collect();
            while i < b.len() && !b[i..].starts_with(&close) {
                blank(&mut out, b[i]);
                i += 1;
            }
            out.extend(std::iter::repeat_n(b' ', close.len()));
            i += close.len();
        } else if c == b'"' {
            out.push(b' ');
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' {
                    blank(&mut out, b[i]);
                    i += 1;
                }
                if i < b.len() {
                    blank(&mut out, b[i]);
                    i += 1;
                }
            }
            out.push(b' ');
            i += 1;
        } else if c == b'\'' {
            // A char literal ('x', '\n', '\u{..}'), or a lifetime, which stays.
            let end = if b.get(i + 1) == Some(&b'\\') {
                b[i + 2..]
                    .iter()
                    .position(|&x| x == b'\'')
                    .map(|p| i + 2 + p)
            } else {
                let ch = std::str::from_utf8(&b[i + 1..])
                    .ok()
                    .and_then(|s| s.chars().next());
                ch.map(|ch| i + 1 + ch.len_utf8())
                    .filter(|&e| b.get(e) == Some(&b'\''))
            };
            match end {
                Some(e) => {
                    out.extend(std::iter::repeat_n(b' ', e + 1 - i));
                    i = e + 1;
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// At `r"`, `r#"`, `br"`…: the prefix's length and the number of `#`.
fn raw_string_start(b: &[u8]) -> Option<(usize, usize)> {
    let mut i = usize::from(b.first() == Some(&b'b'));
    if b.get(i) != Some(&b'r') {
        return None;
    }
    i += 1;
    let hashes = b[i..].iter().take_while(|&&c| c == b'#').count();
    (b.get(i + hashes) == Some(&b'"')).then_some((i + hashes + 1, hashes))
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Sep, // ::
    Punct(char),
}

fn tokens(code: &str) -> Vec<(Tok, usize)> {
    let b = code.as_bytes();
    let (mut out, mut i, mut line) = (Vec::new(), 0, 1);
    while i < b.len() {
        let c = b[i];
        if c == b'\n' {
            line += 1;
            i += 1;
        } else if c.is_ascii_whitespace() {
            i += 1;
        } else if c.is_ascii_alphabetic() || c == b'_' || c == b'$' {
            let s = i;
            i += 1;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            let word = &code[s..i];
            out.push((
                Tok::Ident(word.strip_prefix("r#").unwrap_or(word).to_string()),
                line,
            ));
        } else if c == b':' && b.get(i + 1) == Some(&b':') {
            out.push((Tok::Sep, line));
            i += 2;
        } else if c.is_ascii_digit() {
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
        } else {
            out.push((Tok::Punct(c as char), line));
            i += 1;
        }
    }
    out
}

/// A path found in a file: the module it is written in, its segments, its line.
struct Found {
    scope: Vec<String>,
    segments: Vec<String>,
    line: usize,
}

/// Inline modules declared in a file (`mod x { … }`) and the paths written in it.
struct Scan {
    children: BTreeSet<Vec<String>>, // module paths of `mod x;` declarations (files)
    inline: BTreeSet<Vec<String>>,
    paths: Vec<Found>,
}

fn ident(t: Option<&(Tok, usize)>) -> Option<&str> {
    match t {
        Some((Tok::Ident(s), _)) => Some(s),
        _ => None,
    }
}

fn scan(module: &[String], code: &str) -> Scan {
    let toks = tokens(code);
    let mut scan = Scan {
        children: BTreeSet::new(),
        inline: BTreeSet::new(),
        paths: Vec::new(),
    };
    // Inline modules: (name, brace depth at which it closes).
    let mut stack: Vec<(String, usize)> = Vec::new();
    let mut depth = 0;
    let scope = |stack: &[(String, usize)]| -> Vec<String> {
        module
            .iter()
            .cloned()
            .chain(stack.iter().map(|(n, _)| n.clone()))
            .collect()
    };
    let mut i = 0;
    while i < toks.len() {
        match &toks[i].0 {
            Tok::Punct('{') => depth += 1,
            Tok::Punct('}') => {
                depth -= 1;
                if stack.last().is_some_and(|(_, d)| *d == depth) {
                    stack.pop();
                }
            }
            Tok::Ident(w) if w == "mod" => {
                if let Some(name) = ident(toks.get(i + 1)) {
                    let mut m = scope(&stack);
                    m.push(name.to_string());
                    match toks.get(i + 2).map(|t| &t.0) {
                        Some(Tok::Punct(';')) => {
                            scan.children.insert(m);
                        }
                        Some(Tok::Punct('{')) => {
                            scan.inline.insert(m);
                            stack.push((name.to_string(), depth));
                            depth += 1;
                            i += 3;
                            continue;
                        }
                        _ => {}
                    }
                }
            }
            Tok::Ident(w) if w == "use" => {
                let end = toks[i..]
                    .iter()
                    .position(|t| t.0 == Tok::Punct(';'))
                    .map_or(toks.len(), |p| i + p);
                let mut trees = Vec::new();
                use_tree(&toks[i + 1..end], &mut Vec::new(), &mut trees);
                for (segments, line) in trees {
                    scan.paths.push(Found {
                        scope: scope(&stack),
                        segments,
                        line,
                    });
                }
                i = end + 1;
                continue;
            }
            Tok::Ident(first) if i == 0 || toks[i - 1].0 != Tok::Sep => {
                // A path in an expression or a type: ident (:: ident)*.
                let mut segments = vec![first.clone()];
                let mut j = i + 1;
                while toks.get(j).map(|t| &t.0) == Some(&Tok::Sep) {
                    match ident(toks.get(j + 1)) {
                        Some(s) => segments.push(s.to_string()),
                        None => break,
                    }
                    j += 2;
                }
                if segments.len() > 1 {
                    scan.paths.push(Found {
                        scope: scope(&stack),
                        segments,
                        line: toks[i].1,
                    });
                    i = j;
                    continue;
                }
            }
            _ => {}
        }
        i += 1;
    }
    scan
}

/// Flattens a use tree (`a::b::{c, d::{e, f}}`) into its paths.
fn use_tree(toks: &[(Tok, usize)], prefix: &mut Vec<String>, out: &mut Vec<(Vec<String>, usize)>) {
    let mut i = 0;
    let start = prefix.len();
    let mut line = toks.first().map_or(0, |t| t.1);
    while i < toks.len() {
        match &toks[i].0 {
            Tok::Ident(s) if s == "as" => i += 2,
            Tok::Ident(s) => {
                prefix.push(s.clone());
                line = toks[i].1;
                i += 1;
            }
            Tok::Sep => i += 1,
            Tok::Punct('{') => {
                // Split the group's content at top-level commas.
                let mut d = 0;
                let mut part = i + 1;
                let mut j = i + 1;
                while j < toks.len() {
                    match toks[j].0 {
                        Tok::Punct('{') => d += 1,
                        Tok::Punct('}') if d == 0 => break,
                        Tok::Punct('}') => d -= 1,
                        Tok::Punct(',') if d == 0 => {
                            use_tree(&toks[part..j], prefix, out);
                            part = j + 1;
                        }
                        _ => {}
                    }
                    j += 1;
                }
                use_tree(&toks[part..j], prefix, out);
                prefix.truncate(start);
                return;
            }
            Tok::Punct(',') => {
                out.push((prefix.clone(), line));
                prefix.truncate(start);
                i += 1;
            }
            _ => i += 1,
        }
    }
    if prefix.len() > start {
        out.push((prefix.clone(), line));
    }
    prefix.truncate(start);
}

/// The source files of a crate rooted at `root`, found through its `mod` declarations.
fn crate_files(src: &Path, root: &str, krate: &'static str, top: &[String]) -> Vec<File> {
    let mut files = Vec::new();
    let mut todo = vec![(top.to_vec(), src.join(root))];
    while let Some((module, path)) = todo.pop() {
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
        let dir = if path.file_name().is_some_and(|n| n == "mod.rs") || module.len() == top.len() {
            path.parent().unwrap().to_path_buf()
        } else {
            path.with_extension("")
        };
        for child in scan(&module, &code_only(&text)).children {
            // A child of an inline module lives in a directory named after it.
            let rel = &child[module.len()..];
            let mut base = dir.clone();
            rel[..rel.len() - 1].iter().for_each(|p| base.push(p));
            let name = &rel[rel.len() - 1];
            let file = base.join(format!("{name}.rs"));
            let file = if file.exists() {
                file
            } else {
                base.join(name).join("mod.rs")
            };
            todo.push((child, file));
        }
        files.push(File {
            module,
            path,
            krate,
        });
    }
    files
}

fn floor_of(module: &[String]) -> Option<usize> {
    if module.is_empty() {
        return FLOORS
            .iter()
            .position(|(_, patterns)| patterns.contains(&"crate"));
    }
    let mut best: Option<(usize, usize)> = None; // (specificity, floor)
    for (floor, (_, patterns)) in FLOORS.iter().enumerate() {
        for pattern in *patterns {
            let (segs, strict) = match pattern.strip_suffix("::*") {
                Some(p) => (p.split("::").collect::<Vec<_>>(), true),
                None => (pattern.split("::").collect(), false),
            };
            let matches = module.len() >= segs.len() + usize::from(strict)
                && module.iter().zip(&segs).all(|(m, s)| m == s);
            let specificity = 2 * segs.len() + usize::from(strict);
            if matches && best.is_none_or(|(s, _)| specificity > s) {
                best = Some((specificity, floor));
            }
        }
    }
    best.map(|(_, f)| f)
}

struct Graph {
    files: Vec<File>,
    /// file → (imported file, line of the first such path, the path as written)
    edges: BTreeMap<usize, BTreeMap<usize, (usize, String)>>,
}

fn graph(src: &Path) -> Graph {
    let main_root = vec!["main".to_string()];
    let mut files = crate_files(src, "lib.rs", "lib", &[]);
    files.extend(crate_files(src, "main.rs", "main", &main_root));
    files.sort_by(|a, b| a.path.cmp(&b.path));
    let mut owner: BTreeMap<Vec<String>, usize> = BTreeMap::new();
    let mut scans = Vec::new();
    for (i, f) in files.iter().enumerate() {
        owner.insert(f.module.clone(), i);
        let s = scan(
            &f.module,
            &code_only(&std::fs::read_to_string(&f.path).unwrap()),
        );
        scans.push(s);
    }
    for (i, s) in scans.iter().enumerate() {
        for m in &s.inline {
            owner.entry(m.clone()).or_insert(i);
        }
    }
    let mut edges: BTreeMap<usize, BTreeMap<usize, (usize, String)>> = BTreeMap::new();
    for (i, s) in scans.iter().enumerate() {
        let f = &files[i];
        let root: Vec<String> = if f.krate == "main" {
            main_root.clone()
        } else {
            vec![]
        };
        for p in &s.paths {
            let mut segs = p.segments.iter().map(String::as_str).peekable();
            let mut abs: Vec<String> = match *segs.peek().unwrap() {
                "crate" | "$crate" => {
                    segs.next();
                    root.clone()
                }
                "dwarf2btf" if f.krate == "main" => {
                    segs.next();
                    vec![]
                }
                "self" => {
                    segs.next();
                    p.scope.clone()
                }
                "super" => p.scope.clone(),
                first => {
                    // A child module of the scope, named without a prefix.
                    let mut child = p.scope.clone();
                    child.push(first.to_string());
                    if !owner.contains_key(&child) {
                        continue;
                    }
                    p.scope.clone()
                }
            };
            for seg in segs {
                if seg == "super" {
                    abs.pop();
                } else {
                    abs.push(seg.to_string());
                }
            }
            let target = (0..=abs.len()).rev().find_map(|n| owner.get(&abs[..n]));
            if let Some(&t) = target {
                if t != i {
                    edges
                        .entry(i)
                        .or_default()
                        .entry(t)
                        .or_insert((p.line, p.segments.join("::")));
                }
            }
        }
    }
    Graph { files, edges }
}

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rel(p: &Path) -> String {
    p.strip_prefix(env!("CARGO_MANIFEST_DIR"))
        .unwrap_or(p)
        .display()
        .to_string()
}

/// The imports that point up the order, one line each.
fn upward(g: &Graph) -> Vec<String> {
    let mut out = Vec::new();
    for (&from, targets) in &g.edges {
        let fa = floor_of(&g.files[from].module).unwrap();
        for (&to, (line, path)) in targets {
            let fb = floor_of(&g.files[to].module).unwrap();
            if fb > fa {
                out.push(format!(
                    "{}:{line}: `{path}` ({}) imports {} ({}), a higher floor",
                    rel(&g.files[from].path),
                    FLOORS[fa].0,
                    rel(&g.files[to].path),
                    FLOORS[fb].0
                ));
            }
        }
    }
    out
}

/// The file-level circles: each strongly connected component of more than one file, shown as
/// one cycle through it.
fn circles(g: &Graph) -> Vec<(Vec<String>, String)> {
    // Tarjan's algorithm, iteratively small enough to write recursively for a few hundred files.
    struct T<'a> {
        g: &'a Graph,
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        sccs: Vec<Vec<usize>>,
    }
    fn visit(t: &mut T, v: usize) {
        t.index[v] = Some(t.next);
        t.low[v] = t.next;
        t.next += 1;
        t.stack.push(v);
        t.on[v] = true;
        let succ: Vec<usize> =
            t.g.edges
                .get(&v)
                .map_or(vec![], |e| e.keys().copied().collect());
        for w in succ {
            match t.index[w] {
                None => {
                    visit(t, w);
                    t.low[v] = t.low[v].min(t.low[w]);
                }
                Some(iw) if t.on[w] => t.low[v] = t.low[v].min(iw),
                _ => {}
            }
        }
        if Some(t.low[v]) == t.index[v] {
            let mut scc = Vec::new();
            while let Some(w) = t.stack.pop() {
                t.on[w] = false;
                scc.push(w);
                if w == v {
                    break;
                }
            }
            if scc.len() > 1 {
                t.sccs.push(scc);
            }
        }
    }
    let n = g.files.len();
    let mut t = T {
        g,
        index: vec![None; n],
        low: vec![0; n],
        on: vec![false; n],
        stack: vec![],
        next: 0,
        sccs: vec![],
    };
    for v in 0..n {
        if t.index[v].is_none() {
            visit(&mut t, v);
        }
    }
    t.sccs
        .iter()
        .map(|scc| {
            // One cycle: breadth-first from the first file back to it, inside the component.
            let set: BTreeSet<usize> = scc.iter().copied().collect();
            let start = *set.iter().next().unwrap();
            let mut prev: BTreeMap<usize, usize> = BTreeMap::new();
            let mut queue = std::collections::VecDeque::from([start]);
            let mut last = start;
            'bfs: while let Some(v) = queue.pop_front() {
                for &w in g.edges.get(&v).map(|e| e.keys()).into_iter().flatten() {
                    if !set.contains(&w) {
                        continue;
                    }
                    if w == start {
                        last = v;
                        break 'bfs;
                    }
                    if let std::collections::btree_map::Entry::Vacant(e) = prev.entry(w) {
                        e.insert(v);
                        queue.push_back(w);
                    }
                }
            }
            let mut cycle = vec![last];
            while let Some(&p) = prev.get(cycle.last().unwrap()) {
                cycle.push(p);
            }
            cycle.reverse();
            cycle.push(start);
            let mut s = String::new();
            for pair in cycle.windows(2) {
                let (line, path) = &g.edges[&pair[0]][&pair[1]];
                let _ = write!(s, "\n    {}:{line} `{path}` →", rel(&g.files[pair[0]].path));
            }
            let _ = write!(s, "\n    {}", rel(&g.files[start].path));
            let others = scc.len() - (cycle.len() - 1);
            if others > 0 {
                let _ = write!(s, "\n    (and {others} more files in the same circle)");
            }
            let mut files: Vec<String> = scc.iter().map(|&f| rel(&g.files[f].path)).collect();
            files.sort();
            (files, s)
        })
        .collect()
}

#[test]
fn every_file_has_a_floor() {
    let g = graph(&src_dir());
    let lost: Vec<String> = g
        .files
        .iter()
        .filter(|f| floor_of(&f.module).is_none())
        .map(|f| format!("{} (module {})", rel(&f.path), f.module.join("::")))
        .collect();
    assert!(
        lost.is_empty(),
        "files on no floor of tests/architecture.rs's FLOORS:\n{}",
        lost.join("\n")
    );
}

#[test]
fn imports_point_down_the_order() {
    let g = graph(&src_dir());
    let up = upward(&g);
    assert!(
        up.is_empty(),
        "imports up the order of tests/architecture.rs's FLOORS (docs/architecture.md):\n{}",
        up.join("\n")
    );
}

#[test]
fn no_files_import_each_other_in_a_circle() {
    let g = graph(&src_dir());
    let found: Vec<String> = circles(&g)
        .iter()
        .map(|(files, text)| format!("{text}\n    files: {}", files.join(", ")))
        .collect();
    assert!(
        found.is_empty(),
        "files importing each other in a circle:{}",
        found.join("\n")
    );
}

#[test]
fn the_scanner_reads_groups_super_and_expressions() {
    let code = code_only(
        "use crate::{a, b::{c, d as e}};\nuse super::f::G;\n// crate::comment\n\
         fn x() { let s = \"crate::string\"; crate::h::i(); let c = '{'; }\nmod t { use super::j; }\n",
    );
    let s = scan(&["m".to_string(), "n".to_string()], &code);
    let got: Vec<(String, String)> = s
        .paths
        .iter()
        .map(|p| (p.scope.join("::"), p.segments.join("::")))
        .collect();
    let want = [
        ("m::n", "crate::a"),
        ("m::n", "crate::b::c"),
        ("m::n", "crate::b::d"),
        ("m::n", "super::f::G"),
        ("m::n", "crate::h::i"),
        ("m::n::t", "super::j"),
    ];
    let want: Vec<(String, String)> = want
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    assert_eq!(got, want);
}
