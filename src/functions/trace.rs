//! Recording the function table's saves (`--trace-saves FILE`): which worker saved which ELF
//! function's instance, when, and how long the save took, for replaying a real run's workload
//! against each table design (`lab/`, `docs/concurrency.md`).
//!
//! A worker's saver is wrapped in a [`Traced`] only when the run records: the choice is made
//! once per worker, when it starts, so a run that does not record runs exactly the code it ran
//! before (no per-save branch). A [`Traced`] saver times each save with the monotonic clock
//! and keeps its records in a private `Vec`, handed to the [`Recorder`] when it is dropped.
//! Recording changes nothing that is saved, so the output bytes do not change.
//!
//! # The file format (version 1, little-endian)
//!
//! A 32-byte header, then one 32-byte record per save, sorted by start time (then worker):
//!
//! | bytes | header field |
//! |---|---|
//! | 8 | magic `D2BSAVES` |
//! | 4 | version (1) |
//! | 4 | record size in bytes (32) |
//! | 4 | ELF function entries (the table's size) |
//! | 4 | workers (owners) |
//! | 8 | records |
//!
//! | bytes | record field |
//! |---|---|
//! | 8 | start of the save, ns since the encoding's workers started (monotonic clock) |
//! | 4 | duration of the save (the table's `save` call), ns, saturated |
//! | 4 | ELF function entry index (`ElfFunctions` order: sorted by name) |
//! | 4 | CU index of the instance (its DWARF order, first part) |
//! | 4 | DIE offset of the instance within its CU (its DWARF order, second part) |
//! | 4 | batch (chunk) the instance was encoded in |
//! | 2 | worker (owner) |
//! | 1 | the instance's flag bits (`instance::flags`) |
//! | 1 | the instance's parameter count, saturated at 255 |

use std::io::{self, Write};
use std::time::Instant;

use parking_lot::Mutex;

use super::fold::FuncSummary;
use super::instance::FuncInstance;
use super::table::{FuncSaver, Owner};

/// The file's first 8 bytes.
const MAGIC: &[u8; 8] = b"D2BSAVES";
/// The format version this module writes and reads.
const VERSION: u32 = 1;
/// Bytes of the header and of each record.
const HEADER_BYTES: usize = 32;
/// Bytes of one record.
pub const RECORD_BYTES: usize = 32;

/// One save, as recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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
    /// The worker that saved it.
    pub worker: u16,
    /// The instance's flag bits.
    pub flags: u8,
    /// The instance's parameter count, saturated.
    pub params: u8,
}

/// Every save of a run, sorted by start time.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SaveTrace {
    /// ELF function entries of the run's table.
    pub entries: u32,
    /// Workers of the run.
    pub workers: u32,
    /// The saves, by start time (then worker).
    pub records: Vec<SaveRecord>,
}

impl SaveTrace {
    /// Writes the trace in the format of the module docs.
    pub fn write_to(&self, mut out: impl Write) -> io::Result<()> {
        let mut bytes = Vec::with_capacity(HEADER_BYTES + RECORD_BYTES * self.records.len());
        bytes.extend_from_slice(MAGIC);
        bytes.extend_from_slice(&VERSION.to_le_bytes());
        bytes.extend_from_slice(&(RECORD_BYTES as u32).to_le_bytes());
        bytes.extend_from_slice(&self.entries.to_le_bytes());
        bytes.extend_from_slice(&self.workers.to_le_bytes());
        bytes.extend_from_slice(&(self.records.len() as u64).to_le_bytes());
        for r in &self.records {
            bytes.extend_from_slice(&r.start_ns.to_le_bytes());
            bytes.extend_from_slice(&r.duration_ns.to_le_bytes());
            for word in [r.entry, r.order.0, r.order.1, r.batch] {
                bytes.extend_from_slice(&word.to_le_bytes());
            }
            bytes.extend_from_slice(&r.worker.to_le_bytes());
            bytes.extend_from_slice(&[r.flags, r.params]);
        }
        out.write_all(&bytes)
    }

    /// Reads a trace written by [`SaveTrace::write_to`].
    pub fn read(bytes: &[u8]) -> Result<SaveTrace, String> {
        let word = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
        let long = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
        if bytes.len() < HEADER_BYTES || &bytes[..8] != MAGIC {
            return Err("not a dwarf2btf save trace (no D2BSAVES header)".into());
        }
        if word(8) != VERSION || word(12) as usize != RECORD_BYTES {
            return Err(format!(
                "save trace version {} with {}-byte records; this build reads version {VERSION} \
                 with {RECORD_BYTES}-byte records",
                word(8),
                word(12)
            ));
        }
        let count = long(24);
        let body = &bytes[HEADER_BYTES..];
        if body.len() as u64 != count.saturating_mul(RECORD_BYTES as u64) {
            return Err(format!(
                "save trace: header says {count} records, the file holds {} bytes of records",
                body.len()
            ));
        }
        let records = body
            .chunks_exact(RECORD_BYTES)
            .map(|r| {
                let word = |at: usize| u32::from_le_bytes(r[at..at + 4].try_into().expect("4"));
                SaveRecord {
                    start_ns: u64::from_le_bytes(r[..8].try_into().expect("8 bytes")),
                    duration_ns: word(8),
                    entry: word(12),
                    order: (word(16), word(20)),
                    batch: word(24),
                    worker: u16::from_le_bytes([r[28], r[29]]),
                    flags: r[30],
                    params: r[31],
                }
            })
            .collect();
        Ok(SaveTrace {
            entries: word(16),
            workers: word(20),
            records,
        })
    }
}

/// Collects the records of a run's [`Traced`] savers.
pub struct Recorder {
    start: Instant,
    entries: u32,
    workers: u32,
    done: Mutex<Vec<SaveRecord>>,
}

impl Recorder {
    /// A recorder for a table of `entries` functions and `workers` owners; times count from now.
    pub fn new(entries: usize, workers: usize) -> Self {
        Recorder {
            start: Instant::now(),
            entries: entries as u32,
            workers: workers as u32,
            done: Mutex::new(Vec::new()),
        }
    }

    /// `saver`, the saver of `owner`, recording into this recorder.
    pub fn traced<S>(&self, saver: S, owner: Owner) -> Traced<'_, S> {
        Traced {
            inner: saver,
            recorder: self,
            worker: owner as u16,
            records: Vec::new(),
        }
    }

    /// The trace of every dropped [`Traced`] saver, sorted by start time.
    pub fn into_trace(self) -> SaveTrace {
        let mut records = self.done.into_inner();
        records.sort_unstable_by_key(|r| (r.start_ns, r.worker));
        SaveTrace {
            entries: self.entries,
            workers: self.workers,
            records,
        }
    }
}

/// A saver that records each save before handing it on; see the module docs.
pub struct Traced<'r, S> {
    inner: S,
    recorder: &'r Recorder,
    worker: u16,
    records: Vec<SaveRecord>,
}

impl<S: FuncSaver<FuncSummary>> FuncSaver<FuncSummary> for Traced<'_, S> {
    fn save(&mut self, entry: u32, instance: FuncInstance) {
        let mut record = SaveRecord {
            start_ns: 0,
            duration_ns: 0,
            entry,
            order: instance.head.order,
            batch: instance.head.chunk,
            worker: self.worker,
            flags: instance.head.flags,
            params: instance.param_count().min(255) as u8,
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

    #[test]
    fn write_then_read_is_identity() {
        let trace = SaveTrace {
            entries: 7,
            workers: 3,
            records: vec![
                SaveRecord {
                    start_ns: 5,
                    duration_ns: 40,
                    entry: 6,
                    order: (2, 0x1234),
                    batch: 1,
                    worker: 2,
                    flags: 0x41,
                    params: 3,
                },
                SaveRecord {
                    start_ns: u64::MAX,
                    duration_ns: u32::MAX,
                    entry: 0,
                    order: (u32::MAX, 0),
                    batch: 9,
                    worker: u16::MAX,
                    flags: 0xff,
                    params: 255,
                },
            ],
        };
        let mut bytes = Vec::new();
        trace.write_to(&mut bytes).unwrap();
        assert_eq!(bytes.len(), HEADER_BYTES + 2 * RECORD_BYTES);
        assert_eq!(SaveTrace::read(&bytes).unwrap(), trace);
        assert!(SaveTrace::read(&bytes[..bytes.len() - 1]).is_err());
        assert!(SaveTrace::read(b"not a trace, but long enough to hold a header").is_err());
    }
}
