//! libbpf's `hypot_map` and `hypot_list`: the hypothetical canonical → candidate mapping that
//! one equivalence check (`is_equiv`) builds, and the canonical ids it touched, in order.
//!
//! As in libbpf, the map is an array over every type id, reset through the list after each
//! check: a lookup is one load, and the struct phase makes one or two per pair of types it
//! compares. Unlike libbpf's, the array stores `candidate + 1`, so that "unmapped" is 0 and the
//! array can start as untouched zero pages: only the pages of ids some check touched (the
//! canonical side's types) ever become resident.

use super::UNPROCESSED;

/// The hypothetical map of one equivalence check.
pub(crate) struct HypotMap {
    /// Per type id: the candidate it is mapped to, plus one; 0 when unmapped.
    plus_one: Vec<u32>,
    /// The canonical ids mapped, in the order they were (libbpf's `hypot_list`).
    list: Vec<u32>,
}

impl HypotMap {
    /// An empty map over `cnt` type ids (zeroed memory, left to the kernel until written).
    pub(crate) fn new(cnt: usize) -> Self {
        HypotMap {
            plus_one: vec![0; cnt],
            list: Vec::new(),
        }
    }

    /// `hypot_map[canon]`: the candidate `canon` is hypothetically mapped to, or
    /// `UNPROCESSED`.
    #[inline(always)]
    pub(crate) fn get(&self, canon: u32) -> u32 {
        // 0 - 1 wraps to u32::MAX, which is UNPROCESSED.
        self.plus_one[canon as usize].wrapping_sub(1)
    }

    /// Maps `canon`, which is not mapped yet, to `cand` (a type id, so at most
    /// `MAX_NR_TYPES`), and lists it.
    #[inline(always)]
    pub(crate) fn insert(&mut self, canon: u32, cand: u32) {
        debug_assert_eq!(self.get(canon), UNPROCESSED);
        self.plus_one[canon as usize] = cand + 1;
        self.list.push(canon);
    }

    /// Bytes of the map resident now (its array is touched only where checks mapped ids).
    pub(crate) fn resident(&self) -> usize {
        crate::stats::resident_bytes(&self.plus_one) + crate::stats::resident_bytes(&self.list)
    }

    /// The canonical ids mapped since the last [`Self::clear`], in order.
    pub(crate) fn list(&self) -> &[u32] {
        &self.list
    }

    /// `btf_dedup_clear_hypot_map`: forgets every mapping.
    pub(crate) fn clear(&mut self) {
        for &canon in &self.list {
            self.plus_one[canon as usize] = 0;
        }
        self.list.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against a plain array of candidates, with clears in between.
    #[test]
    fn behaves_like_the_array() {
        let n = 10_000u32;
        let mut map = HypotMap::new(n as usize);
        let mut array = vec![UNPROCESSED; n as usize];
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for round in 0..4 {
            let mut listed = Vec::new();
            for _ in 0..(500 << round) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let (canon, cand) = ((x % u64::from(n)) as u32, (x >> 40) as u32 & 0xffff);
                assert_eq!(map.get(canon), array[canon as usize]);
                if array[canon as usize] == UNPROCESSED {
                    map.insert(canon, cand);
                    array[canon as usize] = cand;
                    listed.push(canon);
                }
            }
            assert_eq!(map.list(), &listed[..]);
            assert!((0..n).all(|id| map.get(id) == array[id as usize]));
            map.clear();
            array.fill(UNPROCESSED);
            assert!((0..n).all(|id| map.get(id) == UNPROCESSED));
        }
    }
}
