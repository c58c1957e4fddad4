//! Where each record of a [`super::Store`] starts, in 1.5 bytes an id instead of 4.
//!
//! Ids come in blocks of 8. A block keeps the position of its first record as a `u32`, and
//! each id its distance from it as a `u8`. Eight consecutive records rarely span more than
//! 255 bytes (that takes records averaging 32 bytes: structs of 20 members); a block that
//! does is *far*: its `u32` names a run of 8 full positions instead.

/// Ids per block.
const BLOCK: usize = 8;
/// In a block's entry: the block is far, and the rest is the index of its run in `far`.
const FAR: u32 = 0x8000_0000;

/// Record positions by id.
#[derive(Default)]
pub(super) struct Positions {
    /// Per block: its first record's position, or `FAR | run`.
    blocks: Vec<u32>,
    /// Per id: its distance from its block's first record (0 in far blocks).
    within: Vec<u8>,
    /// The positions of far blocks' ids, 8 per block.
    far: Vec<u32>,
    /// How many ids after the recorded ones have no position: pushed while deferred
    /// ([`Positions::defer`]), or dropped by [`Positions::release`].
    missing: usize,
    /// Pushes only count the ids instead of recording their positions.
    deferred: bool,
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

    /// Records `starts`, the positions of the ids without one, and records on every push
    /// again.
    pub(super) fn record_missing(&mut self, starts: impl ExactSizeIterator<Item = u32>) {
        debug_assert_eq!(starts.len(), self.missing);
        // Sized once: vectors grown by doubling would leave their old blocks freed but
        // resident under the dedup's start.
        self.within.reserve_exact(self.missing);
        self.blocks.reserve_exact(self.missing.div_ceil(BLOCK));
        (self.missing, self.deferred) = (0, false);
        starts.for_each(|pos| self.push(pos));
    }

    /// Notes that the next id's record starts at `pos` (at or after the previous id's, below
    /// `FAR`).
    pub(super) fn push(&mut self, pos: u32) {
        if self.deferred {
            self.missing += 1;
            return;
        }
        debug_assert!(pos < FAR && self.missing == 0);
        let id = self.within.len();
        if id.is_multiple_of(BLOCK) {
            self.blocks.push(pos);
            self.within.push(0);
            return;
        }
        let entry = self.blocks.last_mut().expect("a block per 8 ids");
        if *entry & FAR == 0 {
            if let Ok(d) = u8::try_from(pos - *entry) {
                self.within.push(d);
                return;
            }
            // Too far for a byte: the block's positions so far move to a run of their own.
            let start = *entry;
            let run = (self.far.len() / BLOCK) as u32;
            let first = id - id % BLOCK;
            self.far
                .extend(self.within[first..].iter().map(|&d| start + u32::from(d)));
            self.far.resize(self.far.len() + BLOCK - (id - first), 0);
            *entry = FAR | run;
        }
        let run = (*entry & !FAR) as usize;
        self.far[run * BLOCK + id % BLOCK] = pos;
        self.within.push(0);
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
