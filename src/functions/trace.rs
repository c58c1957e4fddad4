//! Recording the function table's saves (`--trace-saves FILE`): which owner saved which ELF
//! function's instance, on which OS thread and CPU, when, how long the save took, and enough
//! of the instance (parameter count, name bytes, signature size and hash) to rebuild one of
//! the same shape, for replaying a real run's workload against each table design (`lab/`,
//! `docs/concurrency.md`).
//!
//! A worker's saver is wrapped in a [`Traced`] only when the run records: the choice is made
//! once per owner, when the savers are made, so a run that does not record runs exactly the
//! code it ran before (no per-save branch). A [`Traced`] saver times each save with the
//! monotonic clock and keeps its records in a private `Vec`, handed to the [`Recorder`] when
//! it is dropped. Recording changes nothing that is saved, so the output bytes do not change.
//!
//! # The file format (version 2, little-endian)
//!
//! A 96-byte header, then one 56-byte record per save, sorted by start time (then owner).
//! A reader refuses another format version, and a trace of another [`PIPELINE_VERSION`]: its
//! saves followed other semantics, so replaying them as today's would mislead.
//!
//! | bytes | header field |
//! |---|---|
//! | 8 | magic `D2BSAVES` |
//! | 4 | format version (2) |
//! | 4 | record size in bytes (56) |
//! | 4 | ELF function entries (the table's size) |
//! | 4 | owners (`-j`) |
//! | 8 | records |
//! | 4 | pipeline version ([`PIPELINE_VERSION`] of the recording build) |
//! | 4 | OS threads that saved |
//! | 40 | git commit of the recording build (`git describe`), NUL-padded |
//! | 4 | CPUs available to the recording run |
//! | 12 | zero |
//!
//! | bytes | record field |
//! |---|---|
//! | 8 | start of the save, ns since the encoding's workers started (monotonic clock) |
//! | 4 | duration of the save (the table's `save` call), ns, saturated |
//! | 4 | ELF function entry index (`ElfFunctions` order: sorted by name) |
//! | 4 | CU index of the instance (its DWARF order, first part) |
//! | 4 | DIE offset of the instance within its CU (its DWARF order, second part) |
//! | 4 | batch (chunk) the instance was encoded in |
//! | 2 | owner |
//! | 2 | CPU the save ran on (`sched_getcpu`; 65535: unknown) |
//! | 4 | OS thread that saved (`gettid`) |
//! | 1 | the instance's flag bits (`instance::flags`) |
//! | 1 | the instance's parameter count, saturated at 255 |
//! | 2 | bytes of the parameters' names, saturated |
//! | 2 | bytes of the instance's signature (`signature.rs`), saturated |
//! | 6 | zero |
//! | 8 | FxHash of the signature bytes: within one trace, equal exactly when the prototypes match (up to hash collisions; the bytes hold the run's numbers of the parts' forms) |

use std::hash::Hasher;
use std::io::{self, Write};
use std::time::Instant;

use parking_lot::Mutex;
use rustc_hash::FxHasher;

use super::fold::FuncSummary;
use super::instance::FuncInstance;
use super::table::{FuncSaver, Owner};

/// The file's first 8 bytes.
const MAGIC: &[u8; 8] = b"D2BSAVES";
/// The format version this module writes and reads.
pub const FORMAT_VERSION: u32 = 2;
/// The version of the pipeline's save semantics, bumped whenever they change, so a trace of
/// other semantics is refused rather than replayed as today's.
///
/// - 1: each worker thread was an owner and saved every instance as it encoded it.
/// - 2: owners are decoupled from threads: batch `b` (16 CUs) belongs to owner `b mod N`,
///   whichever thread encodes it, and its instances are saved in one burst once it is
///   encoded, each owner's batches in batch order.
/// - 3: batches of 8 CUs, so an input's functions split over owners otherwise.
pub const PIPELINE_VERSION: u32 = 3;
/// The git commit this library was built from (`build.rs`; empty outside a git checkout).
pub const COMMIT: &str = env!("DWARF2BTF_COMMIT");
/// The compiler this library was built with (`rustc --version`, from `build.rs`).
pub const RUSTC: &str = env!("DWARF2BTF_RUSTC");
/// Bytes of the header.
const HEADER_BYTES: usize = 96;
/// Bytes of one record.
pub const RECORD_BYTES: usize = 56;
/// Bytes of the header's commit field.
const COMMIT_BYTES: usize = 40;
/// The CPU of a save whose CPU is not known.
pub const UNKNOWN_CPU: u16 = u16::MAX;

/// One save, as recorded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SaveRecord {
    /// When the save started, ns since the workers started.
    pub start_ns: u64,
    /// How long the table's `save` took, ns (saturated).
    pub duration_ns: u32,
    /// The ELF function entry saved into.
    pub entry: u32,
    /// The instance's DWARF order: (CU index, DIE offset).
    pub order: (u32, u32),
    /// The batch (chunk) the instance came from.
    pub batch: u32,
    /// The owner whose saver saved it.
    pub owner: u16,
    /// The CPU the save ran on ([`UNKNOWN_CPU`] when not known).
    pub cpu: u16,
    /// The OS thread that saved it.
    pub thread: u32,
    /// The instance's flag bits.
    pub flags: u8,
    /// The instance's parameter count, saturated.
    pub params: u8,
    /// Bytes of the parameters' names, saturated.
    pub name_bytes: u16,
    /// Bytes of the signature, saturated.
    pub sig_bytes: u16,
    /// FxHash of the signature's bytes.
    pub proto: u64,
}

/// Every save of a run, sorted by start time, and where the run came from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SaveTrace {
    /// ELF function entries of the run's table.
    pub entries: u32,
    /// Owners of the run (`-j`).
    pub owners: u32,
    /// The pipeline version of the recording build ([`PIPELINE_VERSION`]).
    pub pipeline: u32,
    /// OS threads that saved.
    pub threads: u32,
    /// CPUs available to the recording run.
    pub cpus: u32,
    /// The recording build's commit (at most 40 bytes).
    pub commit: String,
    /// The saves, by start time (then owner).
    pub records: Vec<SaveRecord>,
}

impl SaveTrace {
    /// An empty trace of today's pipeline and this build, for `entries` functions and
    /// `owners` owners.
    pub fn new(entries: u32, owners: u32) -> Self {
        SaveTrace {
            entries,
            owners,
            pipeline: PIPELINE_VERSION,
            threads: 0,
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get() as u32),
            commit: COMMIT.chars().take(COMMIT_BYTES).collect(),
            records: Vec::new(),
        }
    }

    /// Writes the trace in the format of the module docs.
    pub fn write_to(&self, mut out: impl Write) -> io::Result<()> {
        let mut bytes = Vec::with_capacity(HEADER_BYTES + RECORD_BYTES * self.records.len());
        bytes.extend_from_slice(MAGIC);
        for word in [
            FORMAT_VERSION,
            RECORD_BYTES as u32,
            self.entries,
            self.owners,
        ] {
            bytes.extend_from_slice(&word.to_le_bytes());
        }
        bytes.extend_from_slice(&(self.records.len() as u64).to_le_bytes());
        bytes.extend_from_slice(&self.pipeline.to_le_bytes());
        bytes.extend_from_slice(&self.threads.to_le_bytes());
        let mut commit = [0u8; COMMIT_BYTES];
        let given = &self.commit.as_bytes()[..self.commit.len().min(COMMIT_BYTES)];
        commit[..given.len()].copy_from_slice(given);
        bytes.extend_from_slice(&commit);
        bytes.extend_from_slice(&self.cpus.to_le_bytes());
        bytes.resize(HEADER_BYTES, 0);
        for r in &self.records {
            write_record(r, &mut bytes);
        }
        out.write_all(&bytes)
    }

    /// Reads a trace written by [`SaveTrace::write_to`]; refuses, with one line saying why,
    /// a file of another format version or of another [`PIPELINE_VERSION`].
    pub fn read(bytes: &[u8]) -> Result<SaveTrace, String> {
        let word = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
        if bytes.len() < 16 || &bytes[..8] != MAGIC {
            return Err("not a dwarf2btf save trace (no D2BSAVES header)".into());
        }
        if word(8) != FORMAT_VERSION || word(12) as usize != RECORD_BYTES {
            return Err(format!(
                "save trace format version {} ({}-byte records); this build reads only format \
                 version {FORMAT_VERSION} ({RECORD_BYTES}-byte records): record it again with \
                 `dwarf2btf --trace-saves`",
                word(8),
                word(12)
            ));
        }
        if bytes.len() < HEADER_BYTES {
            return Err("save trace: the file ends inside its header".into());
        }
        if word(32) != PIPELINE_VERSION {
            return Err(format!(
                "save trace of pipeline version {}; this build's pipeline is version \
                 {PIPELINE_VERSION} (other save semantics): record it again with \
                 `dwarf2btf --trace-saves`",
                word(32)
            ));
        }
        let count = u64::from_le_bytes(bytes[24..32].try_into().expect("8 bytes"));
        let body = &bytes[HEADER_BYTES..];
        if body.len() as u64 != count.saturating_mul(RECORD_BYTES as u64) {
            return Err(format!(
                "save trace: header says {count} records, the file holds {} bytes of records",
                body.len()
            ));
        }
        let commit = &bytes[40..40 + COMMIT_BYTES];
        let commit = &commit[..commit.iter().position(|&b| b == 0).unwrap_or(COMMIT_BYTES)];
        Ok(SaveTrace {
            entries: word(16),
            owners: word(20),
            pipeline: word(32),
            threads: word(36),
            cpus: word(80),
            commit: String::from_utf8_lossy(commit).into_owned(),
            records: body.chunks_exact(RECORD_BYTES).map(read_record).collect(),
        })
    }
}

/// Appends `r` to `bytes` in the record layout of the module docs.
fn write_record(r: &SaveRecord, bytes: &mut Vec<u8>) {
    bytes.extend_from_slice(&r.start_ns.to_le_bytes());
    for word in [r.duration_ns, r.entry, r.order.0, r.order.1, r.batch] {
        bytes.extend_from_slice(&word.to_le_bytes());
    }
    bytes.extend_from_slice(&r.owner.to_le_bytes());
    bytes.extend_from_slice(&r.cpu.to_le_bytes());
    bytes.extend_from_slice(&r.thread.to_le_bytes());
    bytes.extend_from_slice(&[r.flags, r.params]);
    bytes.extend_from_slice(&r.name_bytes.to_le_bytes());
    bytes.extend_from_slice(&r.sig_bytes.to_le_bytes());
    bytes.extend_from_slice(&[0; 6]);
    bytes.extend_from_slice(&r.proto.to_le_bytes());
}

/// The record of `r`, [`RECORD_BYTES`] bytes in the layout of the module docs.
fn read_record(r: &[u8]) -> SaveRecord {
    let word = |at: usize| u32::from_le_bytes(r[at..at + 4].try_into().expect("4 bytes"));
    let half = |at: usize| u16::from_le_bytes([r[at], r[at + 1]]);
    SaveRecord {
        start_ns: u64::from_le_bytes(r[..8].try_into().expect("8 bytes")),
        duration_ns: word(8),
        entry: word(12),
        order: (word(16), word(20)),
        batch: word(24),
        owner: half(28),
        cpu: half(30),
        thread: word(32),
        flags: r[36],
        params: r[37],
        name_bytes: half(38),
        sig_bytes: half(40),
        proto: u64::from_le_bytes(r[48..56].try_into().expect("8 bytes")),
    }
}

/// The FxHash of a signature's bytes, as a trace records it.
pub fn proto_hash(signature: &[u8]) -> u64 {
    let mut h = FxHasher::default();
    h.write(signature);
    h.finish()
}

/// The CPU the calling thread runs on, [`UNKNOWN_CPU`] when the OS does not say.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn current_cpu() -> u16 {
    // SAFETY: `sched_getcpu` takes nothing and only returns a number (or -1).
    let cpu = unsafe { libc::sched_getcpu() };
    u16::try_from(cpu).unwrap_or(UNKNOWN_CPU)
}

/// CPUs are known on Linux only.
#[cfg(not(target_os = "linux"))]
fn current_cpu() -> u16 {
    UNKNOWN_CPU
}

/// The calling thread's OS id (cached per thread).
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn current_thread() -> u32 {
    thread_local! {
        // SAFETY: `gettid` takes nothing and cannot fail.
        static TID: u32 = unsafe { libc::gettid() } as u32;
    }
    TID.with(|t| *t)
}

/// Thread ids are known on Linux only.
#[cfg(not(target_os = "linux"))]
fn current_thread() -> u32 {
    0
}

/// Collects the records of a run's [`Traced`] savers.
pub struct Recorder {
    start: Instant,
    entries: u32,
    owners: u32,
    done: Mutex<Vec<SaveRecord>>,
}

impl Recorder {
    /// A recorder for a table of `entries` functions and `owners` owners; times count from now.
    pub fn new(entries: usize, owners: usize) -> Self {
        Recorder {
            start: Instant::now(),
            entries: entries as u32,
            owners: owners as u32,
            done: Mutex::new(Vec::new()),
        }
    }

    /// `saver`, the saver of `owner`, recording into this recorder.
    pub fn traced<S>(&self, saver: S, owner: Owner) -> Traced<'_, S> {
        Traced {
            inner: saver,
            recorder: self,
            owner: owner as u16,
            records: Vec::new(),
        }
    }

    /// The trace of every dropped [`Traced`] saver, sorted by start time.
    pub fn into_trace(self) -> SaveTrace {
        let mut records = self.done.into_inner();
        records.sort_unstable_by_key(|r| (r.start_ns, r.owner));
        let mut threads: Vec<u32> = records.iter().map(|r| r.thread).collect();
        threads.sort_unstable();
        threads.dedup();
        SaveTrace {
            threads: threads.len() as u32,
            records,
            ..SaveTrace::new(self.entries, self.owners)
        }
    }
}

/// A saver that records each save before handing it on; see the module docs.
pub struct Traced<'r, S> {
    inner: S,
    recorder: &'r Recorder,
    owner: u16,
    records: Vec<SaveRecord>,
}

impl<S: FuncSaver<FuncSummary>> FuncSaver<FuncSummary> for Traced<'_, S> {
    fn save(&mut self, entry: u32, instance: FuncInstance) {
        let signature = instance.signature_bytes();
        let sat = |n: usize| n.min(u16::MAX.into()) as u16;
        let mut record = SaveRecord {
            entry,
            order: instance.head.order,
            batch: instance.head.chunk,
            owner: self.owner,
            cpu: current_cpu(),
            thread: current_thread(),
            flags: instance.head.flags,
            params: instance.param_count().min(255) as u8,
            name_bytes: sat(instance.params().map(|(name, _)| name.len()).sum()),
            sig_bytes: sat(signature.len()),
            proto: proto_hash(signature),
            ..SaveRecord::default()
        };
        let start = Instant::now();
        self.inner.save(entry, instance);
        let end = Instant::now();
        record.start_ns = start.duration_since(self.recorder.start).as_nanos() as u64;
        record.duration_ns = end.duration_since(start).as_nanos().min(u32::MAX.into()) as u32;
        self.records.push(record);
    }
}

impl<S> Drop for Traced<'_, S> {
    fn drop(&mut self) {
        self.recorder.done.lock().append(&mut self.records);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> SaveTrace {
        SaveTrace {
            entries: 7,
            owners: 3,
            pipeline: PIPELINE_VERSION,
            threads: 2,
            cpus: 64,
            commit: "v0.1.0-123-gabcdef012345-dirty".into(),
            records: vec![
                SaveRecord {
                    start_ns: 5,
                    duration_ns: 40,
                    entry: 6,
                    order: (2, 0x1234),
                    batch: 1,
                    owner: 2,
                    cpu: 1,
                    thread: 4242,
                    flags: 0x41,
                    params: 3,
                    name_bytes: 17,
                    sig_bytes: 40,
                    proto: 0x0123_4567_89ab_cdef,
                },
                SaveRecord {
                    start_ns: u64::MAX,
                    duration_ns: u32::MAX,
                    entry: 0,
                    order: (u32::MAX, 0),
                    batch: 9,
                    owner: u16::MAX,
                    cpu: UNKNOWN_CPU,
                    thread: u32::MAX,
                    flags: 0xff,
                    params: 255,
                    name_bytes: u16::MAX,
                    sig_bytes: u16::MAX,
                    proto: u64::MAX,
                },
            ],
        }
    }

    #[test]
    fn write_then_read_is_identity() {
        let trace = sample();
        let mut bytes = Vec::new();
        trace.write_to(&mut bytes).unwrap();
        assert_eq!(bytes.len(), HEADER_BYTES + 2 * RECORD_BYTES);
        assert_eq!(SaveTrace::read(&bytes).unwrap(), trace);
        assert!(SaveTrace::read(&bytes[..bytes.len() - 1]).is_err());
        assert!(SaveTrace::read(b"not a trace, but long enough to hold a header").is_err());
    }

    #[test]
    fn other_format_and_pipeline_versions_are_refused_in_one_line() {
        let mut bytes = Vec::new();
        sample().write_to(&mut bytes).unwrap();
        let mut v1 = bytes.clone();
        v1[8..12].copy_from_slice(&1u32.to_le_bytes());
        v1[12..16].copy_from_slice(&32u32.to_le_bytes());
        let e = SaveTrace::read(&v1).unwrap_err();
        assert!(e.starts_with("save trace format version 1 (32-byte"), "{e}");
        let mut old = bytes.clone();
        old[32..36].copy_from_slice(&(PIPELINE_VERSION - 1).to_le_bytes());
        let e = SaveTrace::read(&old).unwrap_err();
        let want = format!("pipeline version {};", PIPELINE_VERSION - 1);
        assert!(e.contains(&want), "{e}");
        assert!(!e.contains('\n'));
    }

    #[test]
    fn a_commit_longer_than_its_field_is_cut() {
        let trace = SaveTrace {
            commit: "x".repeat(60),
            ..sample()
        };
        let mut bytes = Vec::new();
        trace.write_to(&mut bytes).unwrap();
        assert_eq!(SaveTrace::read(&bytes).unwrap().commit, "x".repeat(40));
    }
}
