//! The fuzz targets' bodies, one function per target (fuzz_targets/ only wraps them, and
//! tests/fuzz_regressions.rs replays the inputs that once failed through them), with what they
//! share: the fuzz input as a source of choices for the random BTF generator
//! (tests/common/random_btf.rs, shared with the dedup differential test), and the checks run
//! on any BTF a target gets hold of.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use dwarf2btf::btf::distill::distill_base;
use dwarf2btf::btf::{read, write, Btf};
use dwarf2btf::config::{Config, Features, Output};
use dwarf2btf::dedup::{dedup, DedupOptions};
use dwarf2btf::pipeline;
use dwarf2btf::toolbox::{canon, dump, verify};
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
/// bytes (on their own header and for a release), parse, verify the parsed BTF, list it, compare it with itself, write it and parse
/// that back (which must work). Returns the parsed BTF when it parsed.
pub fn read_all(data: &[u8], base: Option<&Arc<Btf>>) -> Option<Btf> {
    let _ = verify::verify_bytes(data, base);
    // For a release too: before 6.1 (the release table only), 6.1, and with the layout header.
    let release = ["5.4", "6.1", "7.2"][data.len() % 3];
    let release = release.parse().expect("a kernel release");
    let _ = verify::judge(data, base, verify::Target::Kernel(release));
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
        ..DedupOptions::default()
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
        // A character device of the harness's own (the null device's numbers), for the
        // outputs that are devices: a bug that replaced it would not touch /dev/null. Only
        // root may make one; otherwise those outputs are regular files.
        let _ = std::process::Command::new("mknod")
            .arg(dir.path().join(DEVICE))
            .args(["c", "1", "3"])
            .output();
        dir
    };
}

/// The scratch directory's character device ([`SCRATCH`]).
const DEVICE: &str = "null-device";

/// Whether `path` is a character device.
fn is_device(path: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::metadata(path).is_ok_and(|m| m.file_type().is_char_device())
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

/// One run of the encoder on `input`, as the command line with these options runs it: its
/// error message, if it fails. What a run that succeeds writes must pass `verify`
/// ([`check_written`]).
fn encode(
    input: &Path,
    output: Output,
    base: Option<PathBuf>,
    features: Features,
    opts: &ElfInput,
) -> Result<(), String> {
    // An output left by an earlier run must not pass for this one's (a device stays).
    if let Output::Detached(path) = &output {
        if path.is_file() {
            std::fs::remove_file(path).expect("the old output is removed");
        }
    }
    let before = std::fs::read(input).expect("the input reads");
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
        quiet: false,
    };
    pipeline::run(&config, pipeline::Host::quiet()).map_err(|e| e.to_string())?;
    check_written(&config, &before);
    Ok(())
}

/// The BTF a successful run wrote passes `verify`: the detached file, or the `.BTF` of the
/// rewritten input (`before` is the input as it was: a file left as it was holds nothing the
/// run wrote) on its base: the `.BTF.base` the run wrote beside it (`distilled_base`), else
/// the `--btf_base` it was given. A run that exits 0 with BTF the kernel rejects is a bug.
pub fn check_written(config: &Config, before: &[u8]) {
    let (btf, base) = match &config.output {
        Output::Detached(path) if !path.is_file() => return, // a device, or nothing written
        Output::Detached(path) => {
            let btf = std::fs::read(path).expect("the output reads");
            (btf, config.base.as_deref().map(base_from_file))
        }
        Output::InPlace => {
            let after = std::fs::read(&config.input).expect("the rewritten input reads");
            if after == before {
                return;
            }
            let btf = section(&after, ".BTF").expect("a rewritten input has a .BTF");
            let base = config
                .base
                .as_deref()
                .map(|path| match section(&after, ".BTF.base") {
                    Some(distilled) => base_of(&distilled),
                    None => base_from_file(path),
                });
            (btf, base)
        }
    };
    let problems = verify::verify_bytes(&btf, base.as_ref());
    assert!(
        problems.is_empty(),
        "a run that succeeded wrote BTF that fails verify: {:?}",
        &problems[..problems.len().min(5)]
    );
}

/// The BTF of a `--btf_base` file a successful run read (so it is valid).
fn base_from_file(path: &Path) -> Arc<Btf> {
    base_of(&read::file_btf_bytes(path).expect("a base the run used reads"))
}

/// The bytes of ELF section `name` of `file`, if it has one.
fn section(file: &[u8], name: &str) -> Option<Vec<u8>> {
    use object::{Object, ObjectSection};
    let elf = object::File::parse(file).ok()?;
    let data = elf.section_by_name(name)?.uncompressed_data().ok()?;
    Some(data.into_owned())
}

/// Target `elf_pipeline`: the whole encoder on an arbitrary file, as `dwarf2btf` runs it (the
/// input is written to a file, since the tool maps its input): once to a detached output
/// with pahole's default features, once in place (`-J`, the file being a copy) with every
/// feature on and a base, so split encoding and the distilled base run too. The input's first
/// bytes choose the options of both runs ([`ElfInput::parse`]): `-j` 1 to 4, the function
/// table design, the base ([`BASE_BTF`], none, or bytes from the input: a hostile base), and
/// whether the harness first compresses the file's debug sections (zlib or zstd).
pub fn elf_pipeline(data: &[u8]) {
    let _ = elf_pipeline_runs(data);
}

/// What [`elf_pipeline`]'s two runs on `data` end with: nothing, or an error message.
pub fn elf_pipeline_runs(data: &[u8]) -> [Result<(), String>; 2] {
    SCRATCH.with(|dir| encode_both_ways(dir.path(), &ElfInput::parse(data)))
}

/// The two runs of [`elf_pipeline`] on `opts`, in scratch directory `dir`.
fn encode_both_ways(dir: &Path, opts: &ElfInput<'_>) -> [Result<(), String>; 2] {
    let compressed = elf_input::compress_debug_sections(opts.object, opts.compression);
    let input = dir.join("input.o");
    std::fs::write(&input, compressed.as_deref().unwrap_or(opts.object))
        .expect("the input is written");
    let device = dir.join(DEVICE);
    let to_device = opts.device_output && is_device(&device);
    let detached = match to_device {
        true => device.clone(),
        false => dir.join("out.btf"),
    };
    let first = encode(
        &input,
        Output::Detached(detached),
        None,
        Features::default(),
        opts,
    );
    assert!(
        !to_device || is_device(&device),
        "a device given as the output was replaced"
    );
    let base = match opts.base {
        BaseChoice::Fixed => Some(dir.join("base.btf")),
        BaseChoice::Input(bytes) => {
            let path = dir.join("input-base.btf");
            std::fs::write(&path, bytes).expect("the base is written");
            Some(path)
        }
        BaseChoice::None => None,
    };
    let second = encode(&input, Output::InPlace, base, every_feature(), opts);
    [first, second]
}

// ---------------------------------------------------------------------------------------------
// sup_file

/// The name of the supplementary file [`sup_file`] writes beside its input: seeds name it in
/// their `.gnu_debugaltlink` (`dwz -m input.sup -M input.sup`).
pub const SUP_FILE: &str = "input.sup";

/// Target `sup_file`: an object whose DWARF refers to a supplementary file (`dwz -m`), and
/// that file. Four bytes (little-endian) give the supplementary file's length, which is
/// written as [`SUP_FILE`] beside the input; the rest is an [`elf_pipeline`] input, run as
/// that target runs it. The object's `.gnu_debugaltlink` may name any path: a relative one
/// resolves beside the input.
pub fn sup_file(data: &[u8]) {
    let _ = sup_file_runs(data);
}

/// What [`sup_file`]'s two runs on `data` end with (none when `data` is too short).
pub fn sup_file_runs(data: &[u8]) -> Option<[Result<(), String>; 2]> {
    let (len, rest) = data.split_first_chunk::<4>()?;
    let len = usize::try_from(u32::from_le_bytes(*len)).unwrap_or(usize::MAX);
    let (sup, rest) = rest.split_at(len.min(rest.len()));
    SCRATCH.with(|dir| {
        let dir = dir.path();
        std::fs::write(dir.join(SUP_FILE), sup).expect("the supplementary file is written");
        let runs = encode_both_ways(dir, &ElfInput::parse(rest));
        let _ = std::fs::remove_file(dir.join(SUP_FILE));
        Some(runs)
    })
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
