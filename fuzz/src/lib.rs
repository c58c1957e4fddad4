//! The fuzz targets' bodies, one function per target (fuzz_targets/ only wraps them, and
//! tests/fuzz_regressions.rs replays the inputs that once failed through them), with what they
//! share: the fuzz input as a source of choices for the random BTF generator
//! (tests/common/random_btf.rs, shared with the dedup differential test), and the checks run
//! on any BTF a target gets hold of.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use dwarf2btf::btf::distill::distill_base;
use dwarf2btf::btf::{canon, dump, read, verify, write, Btf};
use dwarf2btf::config::{Config, Features, Output};
use dwarf2btf::dedup::{dedup, DedupOptions};
use dwarf2btf::pipeline;
use elf_input::{BaseChoice, ElfInput};
use random_btf::{random_case, Source};

#[path = "../../tests/common/random_btf.rs"]
pub mod random_btf;

#[path = "elf_input.rs"]
pub mod elf_input;

/// The fuzz input read one byte per choice; once it runs out, an xorshift seeded by its length
/// takes over, so that short inputs still make whole cases (deterministically).
pub struct Bytes<'a> {
    data: &'a [u8],
    state: u64,
}

impl<'a> Bytes<'a> {
    /// Choices from `data`.
    pub fn new(data: &'a [u8]) -> Self {
        Bytes {
            data,
            state: (data.len() as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1,
        }
    }
}

impl random_btf::Source for Bytes<'_> {
    fn next(&mut self) -> u64 {
        if let Some((&b, rest)) = self.data.split_first() {
            self.data = rest;
            return u64::from(b);
        }
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        self.state
    }
}

/// Everything a reader of hostile BTF does with `data` (on `base` for split BTF): verify the
/// bytes, parse, verify the parsed BTF, list it, compare it with itself, write it and parse
/// that back (which must work). Returns the parsed BTF when it parsed.
pub fn read_all(data: &[u8], base: Option<&Arc<Btf>>) -> Option<Btf> {
    let _ = verify::verify_bytes(data, base);
    let btf = read::parse(data, base.cloned()).ok()?;
    let _ = verify::verify(&btf);
    let _ = dump::dump(&btf, &mut std::io::sink());
    let opts = canon::DiffOptions {
        set: false,
        categories: canon::Category::ALL.to_vec(),
        max_shown: 20,
        fold_fwd: true,
    };
    let _ = canon::diff(&btf, &btf, &opts);
    let again = write::to_bytes(&btf);
    read::parse(&again, base.cloned()).expect("written BTF parses back");
    Some(btf)
}

/// Deduplicates `btf`; when that succeeds, the result must write and parse back, and is
/// verified (problems allowed: the input need not have been valid). `threads` above 1 takes
/// the threaded path, `force_collisions` the single-threaded one with every hash colliding.
pub fn dedup_all(btf: &mut Btf, threads: usize, force_collisions: bool) -> bool {
    let opts = DedupOptions {
        threads,
        force_collisions,
    };
    if dedup(btf, &opts).is_err() {
        return false;
    }
    let bytes = write::to_bytes(btf);
    let again = read::parse(&bytes, btf.base().cloned()).expect("deduplicated BTF parses back");
    let _ = verify::verify(&again);
    true
}

/// The small base BTF of the split targets (a C fixture's BTF).
pub const BASE_BTF: &[u8] = include_bytes!("../base.btf");

/// A base with its strings indexed, as `read::read_base` makes one.
fn base_of(bytes: &[u8]) -> Arc<Btf> {
    let mut btf = read::parse(bytes, None).expect("base parses");
    btf.index_strings();
    Arc::new(btf)
}

fn fixed_base() -> &'static Arc<Btf> {
    static BASE: OnceLock<Arc<Btf>> = OnceLock::new();
    BASE.get_or_init(|| base_of(BASE_BTF))
}

/// A generated case (split or not as `split` says), its base deduplicated by dwarf2btf.
fn generated(src: &mut Bytes<'_>, split: bool) -> (Option<Arc<Btf>>, Vec<u8>) {
    let (base, data) = random_case(src, Some(split), |raw| {
        let mut btf = read::parse(raw, None).expect("generated base parses");
        match dedup(&mut btf, &DedupOptions::default()) {
            Ok(()) => write::to_bytes(&btf),
            Err(_) => raw.to_vec(),
        }
    });
    (base.map(|b| base_of(&b)), data)
}

// ---------------------------------------------------------------------------------------------
// elf_pipeline

thread_local! {
    /// The scratch directory holding the input and [`BASE_BTF`], one per thread: the replay
    /// tests run targets on several threads at once, and a shared input file would race.
    static SCRATCH: tempfile::TempDir = {
        let dir = tempfile::tempdir().expect("a temporary directory");
        std::fs::write(dir.path().join("base.btf"), BASE_BTF).expect("the base is written");
        dir
    };
}

fn every_feature() -> Features {
    Features {
        encode_force: true,
        var: true,
        float: true,
        decl_tag: true,
        type_tag: true,
        enum64: true,
        optimized_func: true,
        consistent_func: true,
        decl_tag_kfuncs: true,
        reproducible_build: true,
        distilled_base: true,
        global_var: true,
        attributes: true,
        true_signature: true,
        force_cu_merging: true,
        layout: true,
    }
}

/// One run of the encoder on `input`, as the command line with these options runs it.
fn encode(
    input: &Path,
    output: Output,
    base: Option<PathBuf>,
    features: Features,
    opts: &ElfInput,
) {
    let config = Config {
        input: input.to_path_buf(),
        output,
        base,
        jobs: opts.jobs,
        features,
        lang_exclude: Vec::new(),
        verbose: false,
        no_dedup: false,
        func_table: opts.design,
        max_decompress_ratio: dwarf2btf::input::elf::DEFAULT_DECOMPRESS_RATIO,
        stats: false,
        trace_saves: false,
    };
    let _ = pipeline::run(&config, pipeline::Host::quiet());
}

/// Target `elf_pipeline`: the whole encoder on an arbitrary file, as `dwarf2btf` runs it (the
/// input is written to a file, since the tool maps its input): once to a detached output
/// with pahole's default features, once in place (`-J`, the file being a copy) with every
/// feature on and a base, so split encoding and the distilled base run too. The input's first
/// bytes choose the options of both runs ([`ElfInput::parse`]): `-j` 1 to 4, the function
/// table design, the base ([`BASE_BTF`], none, or bytes from the input: a hostile base), and
/// whether the harness first compresses the file's debug sections (zlib or zstd).
pub fn elf_pipeline(data: &[u8]) {
    let opts = ElfInput::parse(data);
    let compressed = elf_input::compress_debug_sections(opts.object, opts.compression);
    SCRATCH.with(|dir| {
        let dir = dir.path();
        let input = dir.join("input.o");
        std::fs::write(&input, compressed.as_deref().unwrap_or(opts.object))
            .expect("the input is written");
        let detached = Output::Detached(dir.join("out.btf"));
        encode(&input, detached, None, Features::default(), &opts);
        let base = match opts.base {
            BaseChoice::Fixed => Some(dir.join("base.btf")),
            BaseChoice::Input(bytes) => {
                let path = dir.join("input-base.btf");
                std::fs::write(&path, bytes).expect("the base is written");
                Some(path)
            }
            BaseChoice::None => None,
        };
        encode(&input, Output::InPlace, base, every_feature(), &opts);
    });
}

// ---------------------------------------------------------------------------------------------
// btf_read_verify

/// Target `btf_read_verify`: the BTF reader and `verify` on arbitrary bytes (raw BTF, or an
/// ELF file whose `.BTF` section is read, as `dwarf2btf verify|dump|diff` do), then dump,
/// self-diff, and write back.
pub fn btf_read_verify(data: &[u8]) {
    let Ok(bytes) = read::btf_bytes(Path::new("fuzz-input"), data) else {
        return;
    };
    let _ = read::parse_header(&bytes);
    read_all(&bytes, None);
}

// ---------------------------------------------------------------------------------------------
// dedup_generated

/// Target `dedup_generated`: dedup on valid BTF. The input drives the random BTF generator,
/// which only makes well-formed records referencing existing types, so nearly every input
/// reaches the dedup proper. The first byte picks the dedup's mode ([`dedup_mode`]: one
/// thread, forced hash collisions, or 2 to 4 threads) and whether the case is split BTF
/// (bits 2-3 zero: split).
pub fn dedup_generated(data: &[u8]) {
    let mut src = Bytes::new(data);
    let mode = src.next() as u8;
    let (threads, force) = dedup_mode(mode);
    let (base, data) = generated(&mut src, (mode / 4).is_multiple_of(4));
    let mut btf = read_all(&data, base.as_ref()).expect("generated BTF parses");
    dedup_all(&mut btf, threads, force);
}

/// The dedup's threads and forced collisions from an option byte: bits 0-1 choose one
/// thread (0 and 1), one thread with every hash colliding (2), or threads (3), how many by
/// bits 4-5 (2 + the value, 4 at most: 2, 3, 4, 2). A byte whose bits 4-5 are zero means what
/// it meant before the thread count was chosen (two threads).
pub fn dedup_mode(mode: u8) -> (usize, bool) {
    match mode % 4 {
        0 | 1 => (1, false),
        2 => (1, true),
        _ => (2 + usize::from(mode >> 4 & 3) % 3, false),
    }
}

// ---------------------------------------------------------------------------------------------
// split_btf

/// Split BTF on `base`: read and checked, deduplicated (`threads`, `force` as
/// [`dedup_all`]), its base distilled.
fn split_on(data: &[u8], base: &Arc<Btf>, threads: usize, force: bool) {
    let Some(mut btf) = read_all(data, Some(base)) else {
        return;
    };
    if dedup_all(&mut btf, threads, force) {
        if let Ok((new_base, new_split)) = distill_base(&btf) {
            let reread = base_of(&write::to_bytes(&new_base));
            let _ = verify::verify_bytes(&write::to_bytes(&new_split), Some(&reread));
        }
    }
}

/// Target `split_btf`: split BTF on a base, as module encoding reads, checks and deduplicates
/// it with `--btf_base`, then distils the base (`distilled_base`). The first byte picks the
/// input and the dedup's mode:
///
/// - bit 0 clear: the rest is raw split BTF on [`BASE_BTF`]; set: the rest drives the random
///   BTF generator to make a base and a valid split BTF on it;
/// - bits 1-2: the dedup on one thread (0), with every hash colliding (1), on 2 threads (2)
///   or 4 (3);
/// - bit 3, raw split BTF only: the base comes from the input (a hostile base, as `--btf_base`
///   may name any file): a length (two bytes, little-endian), that many bytes of raw base
///   BTF, then the split BTF. A base that does not parse ends the case, as it ends the tool.
///
/// Bytes 0 and 1 mean what they meant before the options (one thread, [`BASE_BTF`]).
pub fn split_btf(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let (threads, force) = match mode >> 1 & 3 {
        0 => (1, false),
        1 => (1, true),
        2 => (2, false),
        _ => (4, false),
    };
    if mode & 1 == 1 {
        let (base, split) = generated(&mut Bytes::new(rest), true);
        split_on(
            &split,
            &base.expect("a split case has a base"),
            threads,
            force,
        );
    } else if mode & 8 == 0 {
        split_on(rest, fixed_base(), threads, force);
    } else {
        let Some((len, rest)) = rest.split_first_chunk::<2>() else {
            return;
        };
        let (base, split) = rest.split_at(usize::from(u16::from_le_bytes(*len)).min(rest.len()));
        let Ok(mut base) = read::parse(base, None) else {
            return;
        };
        base.index_strings(); // as `read::read_base` does: no check beyond parsing
        split_on(split, &Arc::new(base), threads, force);
    }
}
