//! Splitting dedup's per-id passes over threads. Only passes whose result does not depend on
//! how the ids are split use it (each id's outcome is a function of that id alone, and errors
//! are reported for the lowest id), so the output is the same for every thread count.

/// Below this many items a pass runs on the calling thread: spawning would cost more.
const MIN_PARALLEL: usize = 1 << 16;

/// How many threads to use for `len` items, given the configured `threads` (0: all cores).
fn thread_count(len: usize, threads: usize) -> usize {
    if len < MIN_PARALLEL {
        return 1;
    }
    threads_for(threads).min(len / (MIN_PARALLEL / 2))
}

/// The threads the configured `threads` (0: all cores) stands for: at most one per core.
pub(crate) fn threads_for(threads: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let want = if threads == 0 { cores } else { threads };
    want.clamp(1, cores)
}

/// Calls `f(first, chunk)` on contiguous chunks of `items`, where `first` is the index of the
/// chunk's first item, in parallel; returns the results in chunk order.
pub(crate) fn for_chunks_mut<T: Send, R: Send>(
    items: &mut [T],
    threads: usize,
    f: impl Fn(usize, &mut [T]) -> R + Sync,
) -> Vec<R> {
    let per = items
        .len()
        .div_ceil(thread_count(items.len(), threads))
        .max(1);
    let f = &f;
    run(items
        .chunks_mut(per)
        .enumerate()
        .map(|(i, chunk)| move || f(i * per, chunk))
        .collect())
}

/// Runs the jobs, each on a scoped thread of its own unless there is only one.
fn run<R: Send>(jobs: Vec<impl FnOnce() -> R + Send>) -> Vec<R> {
    if jobs.len() <= 1 {
        return jobs.into_iter().map(|job| job()).collect();
    }
    std::thread::scope(|s| {
        let handles: Vec<_> = jobs.into_iter().map(|job| s.spawn(job)).collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    })
}
