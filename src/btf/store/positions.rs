//! Where each record of a [`super::Store`] starts, in 1.25 bytes an id instead of 4.
//!
//! Ids come in blocks of 16. A block keeps the position of its first record as a `u32`, and
//! each id its distance from it as a `u8`. Sixteen consecutive records rarely span more than
//! 255 bytes (a kernel's average 6–7 bytes; it takes records averaging 16 bytes: structs of
//! 10 members); a block that does is *far*: its `u32` names a run of 16 full positions
//! instead. Blocks of 8 took 1.1 MiB more on a 7.3 kernel, at the same speed.

/// Ids per block.
const BLOCK: usize = 16;
/// While positions are deferred, every this many ids (a multiple of [`BLOCK`]) the position
/// is still noted, so that the missing ones can be found from several places at once.
const CHECKPOINT: usize = 1 << 12;
/// Stretches between checkpoints scanned side by side when the positions are found: their
/// reads are independent, so the processor overlaps them.
const LANES: usize = 4;
/// In a block's entry: the block is far, and the rest is the index of its run in `far`.
const FAR: u32 = 0x8000_0000;

/// Record positions by id.
#[derive(Default)]
pub(super) struct Positions {
    /// Per block: its first record's position, or `FAR | run`.
    blocks: Vec<u32>,
    /// Per id: its distance from its block's first record (0 in far blocks).
    within: Vec<u8>,
    /// The positions of far blocks' ids, [`BLOCK`] per block.
    far: Vec<u32>,
    /// How many ids after the recorded ones have no position: pushed while deferred
    /// ([`Positions::defer`]), or dropped by [`Positions::release`].
    missing: usize,
    /// Pushes only count the ids instead of recording their positions.
    deferred: bool,
    /// While deferred: (id, position) of the ids at multiples of [`CHECKPOINT`].
    checkpoints: Vec<(u32, u32)>,
}

/// [`Positions`] borrowed as plain slices.
#[derive(Clone, Copy)]
pub(super) struct PositionsView<'a> {
    blocks: &'a [u32],
    within: &'a [u8],
    far: &'a [u32],
}

impl Positions {
    /// How many ids there are, with or without a position.
    pub(super) fn len(&self) -> usize {
        self.within.len() + self.missing
    }

    /// How many ids, from the first, have a position.
    pub(super) fn recorded(&self) -> usize {
        self.within.len()
    }

    /// Drops every position, keeping only how many ids there are: reading records
    /// sequentially needs none. No position may be looked up until
    /// [`Positions::record_missing`] gives them all again.
    pub(super) fn release(&mut self) {
        *self = Positions {
            missing: self.len(),
            deferred: true,
            ..Positions::default()
        };
    }

    /// From the next push on, counts ids without recording their positions.
    pub(super) fn defer(&mut self) {
        self.deferred = true;
    }

    /// Records the positions of the ids without one, the first of which starts at `first`,
    /// `next(pos)` giving where the record after the one at `pos` starts; records on every
    /// push again. The stretches between checkpoints are read on up to `threads` threads,
    /// each taking a run of whole stretches and the blocks they cover.
    pub(super) fn record_missing(
        &mut self,
        first: u32,
        threads: usize,
        next: impl Fn(u32) -> u32 + Sync,
    ) {
        let (from, to) = (self.within.len(), self.len());
        let checkpoints = std::mem::take(&mut self.checkpoints);
        (self.missing, self.deferred) = (0, false);
        // Sized once: vectors grown by doubling would leave their old blocks freed but
        // resident under the dedup's start.
        self.within.resize(to, 0);
        self.blocks.resize(to.div_ceil(BLOCK), 0);
        // From `from` and from each checkpoint, each up to the next (or the end).
        let starts: Vec<(usize, u32)> = std::iter::once((from, first))
            .chain(checkpoints.iter().map(|&(id, pos)| (id as usize, pos)))
            .collect();
        let ends = starts.iter().skip(1).map(|&(id, _)| id).chain([to]);
        let stretches: Vec<Stretch> = starts
            .iter()
            .zip(ends)
            .map(|(&(start, pos), end)| (start, end, pos))
            .collect();
        let runs = split_runs(&stretches, threads);
        // A run's blocks start at the block of its first id: a checkpoint (a multiple of
        // `BLOCK`), or `from` for the first run, whose block may already hold positions.
        let block_starts: Vec<usize> = runs.iter().map(|r| r[0].0 / BLOCK).collect();
        let Positions {
            blocks,
            within,
            far,
            ..
        } = self;
        let mut slots = split_slots(blocks, within, &block_starts).into_iter();
        let (first_blocks, first_within) = slots.next().expect("a run at least");
        let next = &next;
        let far_runs: Vec<Vec<u32>> = std::thread::scope(|s| {
            let others: Vec<_> = slots
                .zip(&runs[1..])
                .zip(&block_starts[1..])
                .map(|(((blocks, within), run), &block)| {
                    s.spawn(move || {
                        let mut far = Vec::new();
                        let base = block * BLOCK;
                        Slots::new(blocks, within, &mut far, base).fill(run, next);
                        far
                    })
                })
                .collect();
            let base = block_starts[0] * BLOCK;
            Slots::new(first_blocks, first_within, far, base).fill(runs[0], next);
            others
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect()
        });
        // The other runs' far blocks join `far` after the first run's, renumbered.
        let ends = block_starts.iter().skip(2).copied().chain([blocks.len()]);
        for ((run_far, &start), end) in far_runs.into_iter().zip(&block_starts[1..]).zip(ends) {
            let shift = (far.len() / BLOCK) as u32;
            for entry in &mut blocks[start..end] {
                if *entry & FAR != 0 {
                    *entry += shift;
                }
            }
            far.extend(run_far);
        }
    }

    /// Notes that the next id's record starts at `pos` (at or after the previous id's, below
    /// `FAR`).
    pub(super) fn push(&mut self, pos: u32) {
        let id = self.len();
        if self.deferred {
            if id.is_multiple_of(CHECKPOINT) {
                self.checkpoints.push((id as u32, pos));
            }
            self.missing += 1;
            return;
        }
        debug_assert!(pos < FAR && self.missing == 0);
        if id.is_multiple_of(BLOCK) {
            self.blocks.push(0);
        }
        self.within.push(0);
        self.set(id, pos);
    }

    /// Sets the position of `id`, whose entries exist, after those of the ids before it in
    /// its block.
    fn set(&mut self, id: usize, pos: u32) {
        Slots::new(&mut self.blocks, &mut self.within, &mut self.far, 0).set(id, pos);
    }

    /// The positions, borrowed.
    pub(super) fn view(&self) -> PositionsView<'_> {
        PositionsView {
            blocks: &self.blocks,
            within: &self.within,
            far: &self.far,
        }
    }

    /// The bytes held.
    pub(super) fn bytes(&self) -> usize {
        (self.blocks.len() + self.far.len()) * 4 + self.within.len()
    }

    /// Of [`Self::bytes`], those resident now.
    pub(super) fn resident(&self) -> usize {
        use crate::measure::resident_bytes;
        resident_bytes(&self.blocks) + resident_bytes(&self.within) + resident_bytes(&self.far)
    }

    /// Frees the spare capacity.
    pub(super) fn shrink_to_fit(&mut self) {
        self.blocks.shrink_to_fit();
        self.within.shrink_to_fit();
        self.far.shrink_to_fit();
    }
}

/// A stretch of ids without positions: (first id, end id, the first one's position).
type Stretch = (usize, usize, u32);

/// `stretches` cut into at most `threads` runs of consecutive stretches with about as many
/// ids each (never empty: a run holds at least one stretch).
fn split_runs(stretches: &[Stretch], threads: usize) -> Vec<&[Stretch]> {
    let total: usize = stretches.iter().map(|&(s, e, _)| e - s).sum();
    let per = total.div_ceil(threads.max(1)).max(1);
    let mut runs = Vec::new();
    let (mut start, mut ids) = (0, 0);
    for (i, &(s, e, _)) in stretches.iter().enumerate() {
        ids += e - s;
        if ids >= per && i + 1 < stretches.len() {
            runs.push(&stretches[start..=i]);
            (start, ids) = (i + 1, 0);
        }
    }
    runs.push(&stretches[start..]);
    runs
}

/// `blocks` and `within` from the first run's first block on, cut where each run's blocks
/// start: one pair of slices per run.
fn split_slots<'s>(
    blocks: &'s mut [u32],
    within: &'s mut [u8],
    block_starts: &[usize],
) -> Vec<(&'s mut [u32], &'s mut [u8])> {
    let first = block_starts[0];
    let (mut blocks, mut within) = (&mut blocks[first..], &mut within[first * BLOCK..]);
    let mut slots = Vec::new();
    for pair in block_starts.windows(2) {
        let len = pair[1] - pair[0];
        let (run_blocks, rest_blocks) = std::mem::take(&mut blocks).split_at_mut(len);
        let (run_within, rest_within) = std::mem::take(&mut within).split_at_mut(len * BLOCK);
        slots.push((run_blocks, run_within));
        (blocks, within) = (rest_blocks, rest_within);
    }
    slots.push((blocks, within));
    slots
}

/// The entries of a run of whole blocks, from id `base` on (a multiple of [`BLOCK`]), and
/// the far runs they may start.
struct Slots<'s> {
    blocks: &'s mut [u32],
    within: &'s mut [u8],
    far: &'s mut Vec<u32>,
    base: usize,
}

impl<'s> Slots<'s> {
    fn new(
        blocks: &'s mut [u32],
        within: &'s mut [u8],
        far: &'s mut Vec<u32>,
        base: usize,
    ) -> Self {
        Slots {
            blocks,
            within,
            far,
            base,
        }
    }

    /// Fills the positions of `run`'s stretches, [`LANES`] side by side.
    fn fill(&mut self, run: &[Stretch], next: &impl Fn(u32) -> u32) {
        for lanes in run.chunks(LANES) {
            let mut at: Vec<Stretch> = lanes.to_vec();
            let longest = at
                .iter()
                .map(|&(s, e, _)| e.saturating_sub(s))
                .max()
                .unwrap_or(0);
            for _ in 0..longest {
                for lane in &mut at {
                    let (idx, end, pos) = *lane;
                    if idx < end {
                        self.set(idx, pos);
                        *lane = (idx + 1, end, next(pos));
                    }
                }
            }
        }
    }

    /// Sets the position of `id`, whose entries exist, after those of the ids before it in
    /// its block.
    fn set(&mut self, id: usize, pos: u32) {
        let local = id - self.base;
        let entry = &mut self.blocks[local / BLOCK];
        if local.is_multiple_of(BLOCK) {
            *entry = pos;
            return;
        }
        if *entry & FAR == 0 {
            if let Ok(d) = u8::try_from(pos - *entry) {
                self.within[local] = d;
                return;
            }
            // Too far for a byte: the block's positions so far move to a run of their own.
            let start = *entry;
            let run = (self.far.len() / BLOCK) as u32;
            let first = local - local % BLOCK;
            self.far.extend(
                self.within[first..local]
                    .iter()
                    .map(|&d| start + u32::from(d)),
            );
            self.far.resize(self.far.len() + BLOCK - (local - first), 0);
            *entry = FAR | run;
        }
        let run = (*entry & !FAR) as usize;
        self.far[run * BLOCK + local % BLOCK] = pos;
    }
}

impl<'a> PositionsView<'a> {
    /// Where `id`'s record starts.
    #[inline(always)]
    pub(super) fn of(self, id: u32) -> usize {
        let id = id as usize;
        let entry = self.blocks[id / BLOCK];
        if entry & FAR == 0 {
            entry as usize + usize::from(self.within[id])
        } else {
            self.far[(entry & !FAR) as usize * BLOCK + id % BLOCK] as usize
        }
    }

    /// `id`'s entry (for prefetching): its distance byte.
    #[inline(always)]
    pub(super) fn entry(self, id: u32) -> &'a u8 {
        &self.within[id as usize]
    }

    /// `id`'s block entry (for prefetching).
    #[inline(always)]
    pub(super) fn block(self, id: u32) -> &'a u32 {
        &self.blocks[id as usize / BLOCK]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_read_back_near_and_far() {
        let mut p = Positions::default();
        let mut want = Vec::new();
        let mut pos = 0u32;
        for i in 0..100u32 {
            want.push(pos);
            p.push(pos);
            // Ids 19 and 42 are followed by long records: their blocks become far mid-block.
            pos += if i == 19 || i == 42 { 300 } else { 3 };
        }
        let v = p.view();
        for (id, &w) in want.iter().enumerate() {
            assert_eq!(v.of(id as u32), w as usize, "id {id}");
        }
        assert_eq!(p.far.len(), 2 * BLOCK);
    }
}
