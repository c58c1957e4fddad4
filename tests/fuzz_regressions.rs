//! Replays every input the fuzz targets (fuzz/, docs/fuzzing.md) once failed on, through the
//! same target code: tests/data/fuzz/TARGET-WHAT, where TARGET names the target. Each must now
//! run to its end: a clear error or a result, never a panic. The committed seed corpus
//! (fuzz/corpus/TARGET/) is replayed the same way. The encoding targets check that what a
//! run writes with success passes `verify`; and their seeds must encode (both runs succeed,
//! but for the seeds made to fail), so a change that makes every run end in an error cannot
//! pass for one that makes none panic.
//!
//! Each input has a time bound ([`LIMIT`]), as libFuzzer's `-timeout` gives the campaigns: an
//! input that hangs fails the test naming it, instead of stalling the run.
//!
//! Some findings were arithmetic overflows, which only debug builds check (the fuzz targets are
//! built with debug assertions): `cargo test --test fuzz_regressions` catches their return,
//! while the release run checks that the input is handled.

// The targets' helpers are only reached through the four entry points, and what is the fuzz
// crate's public API is private here.
#[allow(dead_code, unreachable_pub)]
#[path = "../fuzz/src/lib.rs"]
mod fuzz;

use std::path::Path;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long one input may run (a debug build, on a loaded machine; the slowest seed, an LTO
/// object run with four jobs, takes a few seconds there).
const LIMIT: Duration = Duration::from_secs(60);

/// A fuzz target's name and body.
type Target = (&'static str, fn(&[u8]));

const TARGETS: [Target; 5] = [
    ("elf_pipeline", fuzz::elf_pipeline),
    ("btf_read_verify", fuzz::btf_read_verify),
    ("dedup_generated", fuzz::dedup_generated),
    ("split_btf", fuzz::split_btf),
    ("sup_file", fuzz::sup_file),
];

/// Runs `run` on the file at `path` on a thread of its own, and fails when it panics or is
/// still running after [`LIMIT`] (the thread is then left behind; the test fails at once).
fn replay(run: fn(&[u8]), path: &Path) {
    let data = std::fs::read(path).unwrap();
    let start = Instant::now();
    let (tx, rx) = mpsc::channel();
    let worker = std::thread::spawn(move || {
        run(&data);
        let _ = tx.send(());
    });
    match rx.recv_timeout(LIMIT) {
        Ok(()) => {}
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            let _ = worker.join();
            panic!("{}: the target panicked (above)", path.display());
        }
        Err(mpsc::RecvTimeoutError::Timeout) => {
            panic!("{}: still running after {LIMIT:?}", path.display())
        }
    }
    eprintln!("replayed {} in {:?}", path.display(), start.elapsed());
}

#[test]
fn fuzz_findings_replay() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/fuzz");
    let mut replayed = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let Some((_, run)) = TARGETS
            .iter()
            .find(|(t, _)| name.starts_with(&format!("{t}-")))
        else {
            panic!("{name}: the name does not start with a fuzz target's name and '-'");
        };
        replay(*run, &path);
        replayed += 1;
    }
    assert!(replayed > 0, "no input in {}", dir.display());
}

/// Every input of the committed corpus, through its target: the seeds the campaigns started
/// from (real fixtures, kernel-like objects, BTF) must run to their end too.
#[test]
fn fuzz_corpus_replays() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus");
    for (target, run) in TARGETS {
        let dir = corpus.join(target);
        let mut replayed = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            replay(run, &path);
            replayed += 1;
        }
        assert!(replayed > 0, "no input in {}", dir.display());
    }
}

/// The harness's own compression (fuzz/src/elf_input.rs) makes sections the encoder reads
/// back: a seed's BTF is the same with its debug sections compressed, with zlib and zstd, in a
/// little-endian ELF64 object and a big-endian ELF32 executable. Were the streams or headers
/// wrong, the inputs that ask for compression would only reach the decompression's errors.
#[test]
fn harness_compression_reads_back() {
    use dwarf2btf::config::{Config, Features, Output};
    use fuzz::elf_input::{compress_debug_sections, Compression, ElfInput};
    use object::{Object, ObjectSection};

    let dir = tempfile::tempdir().unwrap();
    let encode = |object: &[u8]| {
        let input = dir.path().join("input.o");
        let out = dir.path().join("out.btf");
        std::fs::write(&input, object).unwrap();
        let config = Config {
            input,
            output: Output::Detached(out.clone()),
            base: None,
            jobs: 1,
            features: Features::default(),
            lang_exclude: Vec::new(),
            verbose: false,
            no_dedup: false,
            func_table: Default::default(),
            max_decompress_ratio: dwarf2btf::input::elf::DEFAULT_DECOMPRESS_RATIO,
            stats: false,
            trace_saves: false,
            quiet: false,
        };
        dwarf2btf::pipeline::run(&config, dwarf2btf::pipeline::Host::quiet()).unwrap();
        std::fs::read(out).unwrap()
    };
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/elf_pipeline");
    for seed in ["module.gcc.d4.o", "types.clang.ppc32.zlib-by-harness.exec"] {
        let data = std::fs::read(corpus.join(seed)).unwrap();
        let object = ElfInput::parse(&data).object;
        let plain = encode(object);
        for how in [Compression::Zlib, Compression::Zstd] {
            let packed = compress_debug_sections(object, how).expect("sections to compress");
            let file = object::File::parse(&*packed).unwrap();
            let info = file.section_by_name(".debug_info").unwrap();
            let format = info.compressed_file_range().unwrap().format;
            assert_ne!(format, object::CompressionFormat::None, "{seed} {how:?}");
            assert_eq!(encode(&packed), plain, "{seed} {how:?}");
        }
    }
}

/// Every `elf_pipeline` seed is an option header and a file ([`fuzz::elf_input::ElfInput`]) that
/// writes back to the same bytes; a seed named for a base from the input has one.
#[test]
fn elf_seeds_parse_back() {
    use fuzz::elf_input::{BaseChoice, ElfInput};

    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/elf_pipeline");
    for entry in std::fs::read_dir(&corpus).unwrap() {
        let path = entry.unwrap().path();
        let data = std::fs::read(&path).unwrap();
        let input = ElfInput::parse(&data);
        assert_eq!(input.to_bytes(), data, "{}", path.display());
        assert!(input.object.starts_with(b"\x7fELF"), "{}", path.display());
        let name = path.file_name().unwrap().to_string_lossy();
        let from_input = matches!(input.base, BaseChoice::Input(_));
        assert_eq!(name.contains("base-from-input"), from_input, "{name}");
    }
}

/// What a 32-bit object encoded as split BTF on the fixed base (x86-64's, where `long` and so
/// pointers are 8 bytes) ends with when its structs hold pointers: they overrun their structs
/// by the base's measure, and the BTF is refused rather than written.
const REFUSED_ON_A_64_BIT_BASE: &str = "breaks the kernel's rules, nothing written";

/// Whether `data`, an `elf_pipeline` input, is a 32-bit ELF file split on the fixed base.
fn elf32_on_the_fixed_base(data: &[u8]) -> bool {
    use fuzz::elf_input::{BaseChoice, ElfInput};
    let input = ElfInput::parse(data);
    input.base == BaseChoice::Fixed && input.object.get(4) == Some(&1)
}

/// Every seed of `elf_pipeline` and `sup_file` encodes, both ways, and passes `verify`
/// (the targets check that), but for the split runs of 32-bit objects on the fixed base
/// ([`REFUSED_ON_A_64_BIT_BASE`]).
#[test]
fn encoding_seeds_encode() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus");
    let mut encoded = 0;
    for target in ["elf_pipeline", "sup_file"] {
        for entry in std::fs::read_dir(corpus.join(target)).unwrap() {
            let path = entry.unwrap().path();
            let data = std::fs::read(&path).unwrap();
            let (runs, elf_input) = match target {
                "sup_file" => {
                    let sup_len = u32::from_le_bytes(data[..4].try_into().unwrap()) as usize;
                    let runs = fuzz::sup_file_runs(&data).expect("a sup_file seed");
                    (runs, &data[4 + sup_len..])
                }
                _ => (fuzz::elf_pipeline_runs(&data), &data[..]),
            };
            let elf32_split = elf32_on_the_fixed_base(elf_input);
            let name = path.file_name().unwrap().to_string_lossy();
            for (run, outcome) in runs.iter().enumerate() {
                match outcome {
                    Ok(()) => encoded += 1,
                    Err(e) if run == 1 && elf32_split && e.contains(REFUSED_ON_A_64_BIT_BASE) => {}
                    Err(e) => panic!("{target}/{name}, run {run}: {e}"),
                }
            }
        }
    }
    assert!(encoded > 0, "no seed encoded");
}
