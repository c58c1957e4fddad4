//! The shared test helpers (tests/common) hold nothing dead.
//!
//! Each themed test binary declares `pub mod common`, so the compiler does not flag a helper
//! that binary leaves unused (another binary uses it). What the compiler cannot see across
//! binaries is checked here: every public item of tests/common is named somewhere besides its
//! own definition, in the tests, the benchmarks or the fuzz targets that include those files.

use std::path::{Path, PathBuf};

const ITEM_KEYWORDS: &[&str] = &["fn", "struct", "enum", "const", "static", "trait", "type"];

/// Every `.rs` file under `dir`, recursively.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if !path.ends_with("target") {
                rust_files(&path, out);
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The names `pub` items are given in `text` (`pub fn name`, `pub struct Name`, ...).
fn public_items(text: &str) -> Vec<String> {
    let mut items = Vec::new();
    for line in text.lines() {
        let mut words = line.split_whitespace();
        if words.next() != Some("pub") {
            continue;
        }
        let Some(keyword) = words.next() else {
            continue;
        };
        if !ITEM_KEYWORDS.contains(&keyword) {
            continue;
        }
        if let Some(name) = words.next() {
            let name: String = name
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                items.push(name);
            }
        }
    }
    items
}

/// How many times `name` appears in `text` as a whole word.
fn word_count(text: &str, name: &str) -> usize {
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices(name)
        .filter(|&(at, _)| {
            let before = text[..at].chars().next_back();
            let after = text[at + name.len()..].chars().next();
            !before.is_some_and(is_word) && !after.is_some_and(is_word)
        })
        .count()
}

/// The public items of `helpers` (file name, text) that none of `texts` names besides their
/// definition: `file: name`.
fn unused(helpers: &[(String, String)], texts: &[String]) -> Vec<String> {
    let mut dead = Vec::new();
    for (file, own) in helpers {
        for name in public_items(own) {
            let uses: usize = texts.iter().map(|t| word_count(t, &name)).sum();
            // Its definition is one use.
            if uses <= 1 {
                dead.push(format!("{file}: {name}"));
            }
        }
    }
    dead
}

fn read(paths: &[PathBuf]) -> Vec<(String, String)> {
    paths
        .iter()
        .map(|p| (p.display().to_string(), std::fs::read_to_string(p).unwrap()))
        .collect()
}

#[test]
fn every_public_helper_is_used() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut helpers = Vec::new();
    rust_files(&root.join("tests/common"), &mut helpers);
    assert!(helpers.len() > 5, "tests/common not found");
    let mut all = Vec::new();
    for dir in ["tests", "benches", "fuzz/fuzz_targets", "fuzz/src"] {
        rust_files(&root.join(dir), &mut all);
    }
    let all: Vec<String> = read(&all).into_iter().map(|(_, text)| text).collect();
    let dead = unused(&read(&helpers), &all);
    assert!(
        dead.is_empty(),
        "public helpers of tests/common that nothing uses (remove them):\n{}",
        dead.join("\n")
    );
}

#[test]
fn an_unused_helper_is_found() {
    let helper = "pub fn used() {}\npub fn forgotten() {}\npub struct Kept;\n".to_string();
    let user = "fn t() { used(); let _ = Kept; forgotten_not(); }\n".to_string();
    let dead = unused(&[("helper.rs".into(), helper.clone())], &[helper, user]);
    assert_eq!(dead, vec!["helper.rs: forgotten".to_string()]);
}
