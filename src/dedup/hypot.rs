//! libbpf's `hypot_map` and `hypot_list`: the hypothetical canonical → candidate mapping that
//! one equivalence check (`is_equiv`) builds, and the canonical ids it touched, in order.
//!
//! libbpf keeps the map as an array over every type id, reset through the list after each
//! check: over the struct phase, every page of it that some check touched stays resident (4.5
//! MiB on the reference vmlinux, 5.9 on a 6.12 generic one). Here the array is cut into pages
//! of [`PAGE`] ids, present only while in use: a directory (one entry per page, in the cache)
//! names each present page's place in a pool. A clear zeroes the check's entries, as libbpf's
//! does, and pages stay present for the next checks, which map ids nearby; once more than
//! [`KEEP`] pages are present, a clear returns them all, zeroed, to the pool. So the map holds
//! at most `KEEP` pages plus what one check needs, and a lookup is two loads, the second on
//! the line of the canonical id's neighbours as in libbpf's array. Entries hold
//! `candidate + 1`, so that 0 is "unmapped" and a fresh page is zeroed memory.

/// `BTF_UNPROCESSED_ID` in the hypothetical map: no candidate yet (above every type id).
pub(crate) const NO_CANDIDATE: u32 = u32::MAX;

/// Ids per page: 4 KiB of entries, one memory page. A check's canonical ids are scattered,
/// so small pages keep the pool small: on a 7.3 kernel the pool ends at 0.8 MiB with 4 KiB
/// pages against 2.3 with 16 KiB ones, at the same speed.
const PAGE: usize = 1 << 10;
/// Pages kept present between checks (256 KiB).
const KEEP: usize = 64;
/// The directory entry of a page that is not present: the pool's first page, which stays all
/// zero (so a lookup needs no test).
const ABSENT: u32 = 0;

/// The hypothetical map of one equivalence check.
pub(crate) struct HypotMap {
    /// Per page of ids: its place in `pool`, or `ABSENT`.
    dir: Vec<u32>,
    /// The pages, `PAGE` entries each: per id, the candidate it is mapped to plus one, or 0.
    pool: Vec<u32>,
    /// The places in `pool` of pages not present (all zero).
    free: Vec<u32>,
    /// The directory indices of the present pages.
    present: Vec<u32>,
    /// The canonical ids mapped since the last [`Self::clear`], in order (libbpf's
    /// `hypot_list`).
    list: Vec<u32>,
}

impl HypotMap {
    /// An empty map over `cnt` type ids.
    pub(crate) fn new(cnt: usize) -> Self {
        HypotMap {
            dir: vec![ABSENT; cnt.div_ceil(PAGE)],
            pool: vec![0; PAGE],
            free: Vec::new(),
            present: Vec::new(),
            list: Vec::new(),
        }
    }

    /// Where `canon`'s entry is in the pool (in the zero page when its page is absent).
    #[inline(always)]
    fn slot(&self, canon: u32) -> usize {
        (self.dir[canon as usize / PAGE] as usize) * PAGE + canon as usize % PAGE
    }

    /// `hypot_map[canon]`: the candidate `canon` is hypothetically mapped to, or
    /// `NO_CANDIDATE`.
    #[inline(always)]
    pub(crate) fn get(&self, canon: u32) -> u32 {
        // 0 - 1 wraps to u32::MAX, which is NO_CANDIDATE.
        self.pool[self.slot(canon)].wrapping_sub(1)
    }

    /// Maps `canon`, which is not mapped yet, to `cand` (a type id), and lists it.
    #[inline(always)]
    pub(crate) fn insert(&mut self, canon: u32, cand: u32) {
        debug_assert_eq!(self.get(canon), NO_CANDIDATE);
        let at = canon as usize / PAGE;
        if self.dir[at] == ABSENT {
            self.dir[at] = self.take_page();
            self.present.push(at as u32);
        }
        let slot = self.slot(canon);
        self.pool[slot] = cand + 1;
        self.list.push(canon);
    }

    /// A zeroed page's place in the pool.
    #[cold]
    fn take_page(&mut self) -> u32 {
        self.free.pop().unwrap_or_else(|| {
            let page = (self.pool.len() / PAGE) as u32;
            self.pool.resize(self.pool.len() + PAGE, 0);
            page
        })
    }

    /// Bytes the map holds (the pool is as large as the most pages present at once).
    pub(crate) fn bytes(&self) -> usize {
        (self.dir.capacity() + self.pool.capacity() + self.free.capacity()) * 4
            + (self.present.capacity() + self.list.capacity()) * 4
    }

    /// The canonical ids mapped since the last [`Self::clear`], in order.
    pub(crate) fn list(&self) -> &[u32] {
        &self.list
    }

    /// `btf_dedup_clear_hypot_map`: forgets every mapping.
    pub(crate) fn clear(&mut self) {
        for i in 0..self.list.len() {
            let slot = self.slot(self.list[i]);
            self.pool[slot] = 0;
        }
        self.list.clear();
        if self.present.len() > KEEP {
            // Every entry is zero now: back to the pool with the pages.
            for at in self.present.drain(..) {
                self.free.push(self.dir[at as usize]);
                self.dir[at as usize] = ABSENT;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    /// Against a plain array of candidates, with clears in between.
    #[test]
    fn behaves_like_the_array() {
        let n = 10_000u32;
        let mut map = HypotMap::new(n as usize);
        let mut array = vec![NO_CANDIDATE; n as usize];
        let mut rng = Rng::with_state(0x2545_f491_4f6c_dd1d);
        for round in 0..4 {
            let mut listed = Vec::new();
            for _ in 0..(500 << round) {
                let x = rng.next();
                let (canon, cand) = ((x % u64::from(n)) as u32, (x >> 40) as u32 & 0xffff);
                assert_eq!(map.get(canon), array[canon as usize]);
                if array[canon as usize] == NO_CANDIDATE {
                    map.insert(canon, cand);
                    array[canon as usize] = cand;
                    listed.push(canon);
                }
            }
            assert_eq!(map.list(), &listed[..]);
            assert!((0..n).all(|id| map.get(id) == array[id as usize]));
            map.clear();
            array.fill(NO_CANDIDATE);
            assert!((0..n).all(|id| map.get(id) == NO_CANDIDATE));
        }
    }

    /// A check spread over more than `KEEP` pages returns them all, zeroed, and the next
    /// checks take them again.
    #[test]
    fn pages_past_keep_go_back_to_the_pool_zeroed() {
        let pages = KEEP + 8;
        let mut map = HypotMap::new(pages * PAGE);
        for round in 0..3u32 {
            let ids: Vec<u32> = (0..pages as u32)
                .map(|p| p * PAGE as u32 + round * 7)
                .collect();
            for (k, &id) in ids.iter().enumerate() {
                map.insert(id, k as u32 + round);
            }
            for (k, &id) in ids.iter().enumerate() {
                assert_eq!(map.get(id), k as u32 + round);
            }
            map.clear();
            assert!(map.present.is_empty(), "all {pages} pages returned");
            assert_eq!(map.free.len(), pages);
            assert!(map.pool.iter().all(|&e| e == 0));
            assert!(ids.iter().all(|&id| map.get(id) == NO_CANDIDATE));
        }
        assert_eq!(
            map.pool.len(),
            (pages + 1) * PAGE,
            "pages reused, not added"
        );
    }
}
