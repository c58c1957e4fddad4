//! The command-line slips whose clap message misleads, each explained in one line: pahole's
//! `-j N` (the count must be attached), a mistyped subcommand, `why` without its FILE. Part of
//! the `dwarf2btf` binary, consulted only after clap refused the command line.

use std::ffi::OsString;
use std::path::Path;

use clap::error::ErrorKind;

/// The subcommands a mistyped first word is compared with.
const SUBCOMMANDS: [&str; 7] = [
    "verify",
    "diff",
    "dump",
    "why",
    "version",
    "completions",
    "man",
];

/// The one line for the slip in `args` (the whole command line, program name first) that made
/// clap fail with `kind`; `None` when it is none of these.
pub(crate) fn explain(kind: ErrorKind, args: &[OsString]) -> Option<String> {
    let words: Vec<&str> = args.iter().skip(1).filter_map(|a| a.to_str()).collect();
    detached_jobs(&words)
        .or_else(|| mistyped_subcommand(&words))
        .or_else(|| why_without_file(kind, &words))
}

/// `-j 4 vmlinux`: like pahole's, `-j` takes its count attached; a bare `-j` means one thread
/// per CPU, so `4` became the input file and `vmlinux` one word too many.
fn detached_jobs(words: &[&str]) -> Option<String> {
    let pair = words.windows(2).find(|w| {
        matches!(w[0], "-j" | "--jobs") && w[1].parse::<u32>().is_ok() && !Path::new(w[1]).exists()
    })?;
    let (flag, n) = (pair[0], pair[1]);
    let attached = match flag {
        "-j" => format!("-j{n}"),
        _ => format!("--jobs={n}"),
    };
    Some(format!(
        "'{flag} {n}': the thread count must be attached, as pahole's is ({attached}); a bare \
         {flag} means one thread per CPU, and '{n}' was read as the input file"
    ))
}

/// `verfy FILE`: a first word that is not a file and is within two edits of a subcommand.
fn mistyped_subcommand(words: &[&str]) -> Option<String> {
    let first = *words.iter().find(|w| !w.starts_with('-'))?;
    if Path::new(first).exists() || SUBCOMMANDS.contains(&first) {
        return None;
    }
    let best = SUBCOMMANDS.iter().min_by_key(|s| edit_distance(first, s))?;
    (edit_distance(first, best) <= 2)
        .then(|| format!("'{first}' is neither a subcommand nor a file: did you mean '{best}'?"))
}

/// `why NAME` without the file to look in (clap would say the names are missing).
fn why_without_file(kind: ErrorKind, words: &[&str]) -> Option<String> {
    let first = *words.iter().find(|w| !w.starts_with('-'))?;
    (kind == ErrorKind::MissingRequiredArgument && first == "why").then(|| {
        "why: FILE is missing: give the function names, then the vmlinux, module or object \
         file to look in (dwarf2btf why NAME... FILE)"
            .to_string()
    })
}

/// Levenshtein distance between two short words (bytes).
fn edit_distance(a: &str, b: &str) -> usize {
    let b = b.as_bytes();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, &ca) in a.as_bytes().iter().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let substitute = diagonal + usize::from(ca != cb);
            diagonal = row[j + 1];
            row[j + 1] = substitute.min(row[j] + 1).min(diagonal + 1);
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_distances() {
        assert_eq!(edit_distance("verfy", "verify"), 1);
        assert_eq!(edit_distance("dupm", "dump"), 2);
        assert_eq!(edit_distance("", "why"), 3);
        assert_eq!(edit_distance("diff", "diff"), 0);
        assert_eq!(edit_distance("vmlinux", "version"), 6);
    }
}
