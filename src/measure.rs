//! The probes a run measures itself with, low enough for every stage to call: CPU clocks
//! (process and thread, [`timed`]), resident and allocated memory (`/proc`, `mallinfo2`,
//! `mincore` over one structure, [`resident_bytes`]), the phase ends a run marks
//! ([`RunClock`], [`PhaseEnd`]), the workers' CPU split ([`WorkerTimes`]) and the large
//! structures' bytes ([`Held`]). `stats` turns the figures into the `--stats` report.

use std::ops::AddAssign;
use std::time::{Duration, Instant};

/// The CPU time of the whole process (every thread), or of the calling thread.
fn cpu_clock(clock: libc::clockid_t) -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; clock_gettime writes only into it.
    if unsafe { libc::clock_gettime(clock, &mut ts) } != 0 {
        return Duration::ZERO;
    }
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// CPU time used so far by every thread of the process.
pub fn process_cpu() -> Duration {
    cpu_clock(libc::CLOCK_PROCESS_CPUTIME_ID)
}

/// CPU time used so far by the calling thread.
pub fn thread_cpu() -> Duration {
    cpu_clock(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// A `/proc/self/status` size in MiB: `VmRSS:` (resident now) or `VmHWM:` (peak so far);
/// 0 where /proc is not available.
pub fn status_mib(key: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix(key))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kib| kib / 1024)
}

/// MiB the allocator has handed out and not had back (glibc's `mallinfo2`: in-use chunks
/// of every arena plus mmapped blocks, resident or not: a vector's spare capacity counts);
/// 0 where that is not available.
pub fn allocated_mib() -> u64 {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallinfo2 only reads the allocator's counters; it takes no pointer.
        let m = unsafe { libc::mallinfo2() };
        ((m.uordblks + m.hblkhd) >> 20) as u64
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    0
}

/// The system's page size (`None` where it cannot be read).
pub fn page_size() -> Option<usize> {
    // SAFETY: sysconf only reads a system constant.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(size).ok().filter(|&s| s > 0)
}

/// Bytes of `items` resident in memory now, counted by page (`mincore`): untouched pages of
/// a zeroed or reserved array do not count. 0 where that is not available.
pub fn resident_bytes<T>(items: &[T]) -> usize {
    #[cfg(target_os = "linux")]
    {
        let len = std::mem::size_of_val(items);
        if len == 0 {
            return 0;
        }
        let Some(page) = page_size() else { return 0 };
        let start = items.as_ptr() as usize & !(page - 1);
        let end = (items.as_ptr() as usize + len).next_multiple_of(page);
        let mut pages = vec![0u8; (end - start) / page];
        // SAFETY: [start, end) covers the pages of a live slice, so it is mapped; `pages` has
        // one byte per page of it, as mincore writes.
        let ok = unsafe {
            libc::mincore(start as *mut libc::c_void, end - start, pages.as_mut_ptr()) == 0
        };
        if !ok {
            return 0;
        }
        let resident = pages.iter().filter(|&&p| p & 1 != 0).count();
        (resident * page).min(len)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = items;
        0
    }
}

/// Resident MiB of this process's mappings of the file `path` (its DWARF, when it is the
/// input), from `/proc/self/smaps`; 0 where that is not available.
pub fn file_resident_mib(path: &std::path::Path) -> u64 {
    let Ok(smaps) = std::fs::read_to_string("/proc/self/smaps") else {
        return 0;
    };
    let Ok(path) = path.canonicalize() else {
        return 0;
    };
    let path = path.to_string_lossy();
    let mut in_file = false;
    let mut kib = 0;
    for line in smaps.lines() {
        if let Some(rss) = line.strip_prefix("Rss:") {
            if in_file {
                kib += rss
                    .trim()
                    .trim_end_matches("kB")
                    .trim()
                    .parse::<u64>()
                    .unwrap_or(0);
            }
        } else if line
            .split_whitespace()
            .next()
            .is_some_and(|f| f.contains('-'))
        {
            in_file = line.ends_with(&*path);
        }
    }
    kib / 1024
}

/// A large structure of the run and the bytes it held at its largest.
#[derive(Clone, Debug)]
pub struct Held {
    /// What it is, with its counts (`record store: 3,408,561 records, ...`).
    pub what: String,
    /// Its bytes.
    pub bytes: usize,
}

/// The end of one phase of a run.
#[derive(Clone, Debug)]
pub struct PhaseEnd {
    /// The phase's name (`elf`, `dedup`, ...).
    pub name: &'static str,
    /// Seconds since the run started.
    pub wall: f64,
    /// Process CPU seconds since the run started.
    pub cpu: f64,
    /// Resident MiB now, and the peak so far.
    pub rss_mib: u64,
    /// Peak resident MiB so far (`VmHWM`).
    pub peak_mib: u64,
    /// Allocated MiB now (see [`allocated_mib`]).
    pub alloc_mib: u64,
}

/// Marks phase ends against the start of a run.
#[derive(Clone, Copy, Debug)]
pub struct RunClock {
    start: Instant,
    start_cpu: Duration,
}

impl RunClock {
    /// Starts the clock: now is time 0, wall and CPU.
    pub fn start() -> Self {
        RunClock {
            start: Instant::now(),
            start_cpu: process_cpu(),
        }
    }

    /// Seconds since the start.
    pub fn elapsed(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }

    /// Phase `name` ends now.
    pub fn end(&self, name: &'static str) -> PhaseEnd {
        PhaseEnd {
            name,
            wall: self.elapsed(),
            cpu: (process_cpu().saturating_sub(self.start_cpu)).as_secs_f64(),
            rss_mib: status_mib("VmRSS:"),
            peak_mib: status_mib("VmHWM:"),
            alloc_mib: allocated_mib(),
        }
    }
}

/// CPU time the workers spent per activity, summed over workers.
#[derive(Clone, Copy, Debug, Default)]
pub struct WorkerTimes {
    /// Reading DWARF: types, functions, variables.
    pub decode: Duration,
    /// Writing BTF records: types and variables.
    pub encode: Duration,
    /// Building function instances and saving them into the function table.
    pub save: Duration,
}

impl AddAssign for WorkerTimes {
    fn add_assign(&mut self, other: WorkerTimes) {
        self.decode += other.decode;
        self.encode += other.encode;
        self.save += other.save;
    }
}

/// Adds the calling thread's CPU time spent in `f` to `*into`.
pub fn timed<T>(into: &mut Duration, f: impl FnOnce() -> T) -> T {
    let start = thread_cpu();
    let out = f();
    *into += thread_cpu().saturating_sub(start);
    out
}

/// Adds one to `counts[at]`, growing it as needed.
pub fn bump(counts: &mut Vec<u64>, at: usize) {
    if counts.len() <= at {
        counts.resize(at + 1, 0);
    }
    counts[at] += 1;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A zeroed array is resident only where written: the count follows the pages touched.
    #[cfg(target_os = "linux")]
    #[test]
    fn resident_bytes_counts_touched_pages() {
        let mut big = vec![0u64; 8 << 20]; // 64 MiB, mapped on its own, untouched
        assert!(resident_bytes(&big) < 1 << 20, "{}", resident_bytes(&big));
        big[..1 << 20].iter_mut().for_each(|w| *w = 1); // the first 8 MiB
        let resident = resident_bytes(&big);
        // Up to two more MiB where transparent huge pages round the written range up.
        assert!(
            (8 << 20..=10 << 20).contains(&resident),
            "{resident} bytes resident after writing 8 MiB"
        );
        assert_eq!(resident_bytes::<u64>(&[]), 0);
    }
}
