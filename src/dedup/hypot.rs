//! libbpf's `hypot_map` and `hypot_list`: the hypothetical canonical → candidate mapping that
//! one equivalence check (`is_equiv`) builds, and the canonical ids it touched, in order.
//!
//! libbpf holds the map as an array over every type id and resets the touched entries after
//! each check. A check touches a few hundred ids out of millions (3.4 M on a kernel), so the
//! array was 13 MiB at dedup's peak for a working set that fits in the caches. Here the map
//! is a small open-addressing table keyed by canonical id (linear probing), grown when half
//! full and emptied through the list, the way libbpf empties its array.

use super::UNPROCESSED;

/// An empty slot's key: no type has this id (it is libbpf's `BTF_UNPROCESSED_ID`).
const EMPTY: u32 = UNPROCESSED;

/// Slots of a new table; a power of two.
const INITIAL_SLOTS: usize = 1 << 10;

/// The hypothetical map of one equivalence check.
pub(crate) struct HypotMap {
    /// `(canonical id, candidate id)`, or `(EMPTY, _)`; the length is a power of two.
    slots: Vec<(u32, u32)>,
    /// The canonical ids mapped, in the order they were (libbpf's `hypot_list`).
    list: Vec<u32>,
}

impl Default for HypotMap {
    fn default() -> Self {
        HypotMap {
            slots: vec![(EMPTY, 0); INITIAL_SLOTS],
            list: Vec::new(),
        }
    }
}

impl HypotMap {
    /// The slot that holds `canon`, or the empty slot where it would go (linear probing
    /// from a Fibonacci hash of the id: the top bits of its product with 2^32/φ).
    #[inline(always)]
    fn slot(&self, canon: u32) -> usize {
        let mask = self.slots.len() - 1;
        let bits = self.slots.len().trailing_zeros();
        let mut i = (u64::from(canon.wrapping_mul(0x9e37_79b9)) >> (32 - bits)) as usize;
        loop {
            let key = self.slots[i].0;
            if key == canon || key == EMPTY {
                return i;
            }
            i = (i + 1) & mask;
        }
    }

    /// `hypot_map[canon]`: the candidate `canon` is hypothetically mapped to, or
    /// `UNPROCESSED`.
    #[inline(always)]
    pub(crate) fn get(&self, canon: u32) -> u32 {
        let (key, cand) = self.slots[self.slot(canon)];
        if key == EMPTY {
            UNPROCESSED
        } else {
            cand
        }
    }

    /// Maps `canon`, which is not mapped yet, to `cand`, and lists it.
    #[inline(always)]
    pub(crate) fn insert(&mut self, canon: u32, cand: u32) {
        debug_assert_eq!(self.get(canon), UNPROCESSED);
        if 2 * (self.list.len() + 1) > self.slots.len() {
            self.grow();
        }
        let i = self.slot(canon);
        self.slots[i] = (canon, cand);
        self.list.push(canon);
    }

    /// The canonical ids mapped since the last [`Self::clear`], in order.
    pub(crate) fn list(&self) -> &[u32] {
        &self.list
    }

    /// `btf_dedup_clear_hypot_map`: forgets every mapping, the last mapped first. The table
    /// holds exactly what inserting the listed ids in order gives (a growth re-enters them
    /// in that order), so taking them out in reverse undoes each insertion: the slots a
    /// removed id's probe passed are still held by the ids mapped before it.
    pub(crate) fn clear(&mut self) {
        while let Some(canon) = self.list.pop() {
            let slot = self.slot(canon);
            self.slots[slot].0 = EMPTY;
        }
    }

    /// Doubles the table and re-enters the listed mappings, in list order.
    fn grow(&mut self) {
        let entries: Vec<(u32, u32)> = self.list.iter().map(|&c| (c, self.get(c))).collect();
        self.slots = vec![(EMPTY, 0); 2 * self.slots.len()];
        for (canon, cand) in entries {
            let i = self.slot(canon);
            self.slots[i] = (canon, cand);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against a plain array, over enough mappings to grow the table several times, with
    /// clears in between.
    #[test]
    fn behaves_like_the_array() {
        let n = 100_000u32;
        let mut map = HypotMap::default();
        let mut array = vec![UNPROCESSED; n as usize];
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for round in 0..4 {
            let mut listed = Vec::new();
            for _ in 0..(5_000 << round) {
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
            for id in 0..n {
                assert_eq!(map.get(id), array[id as usize], "round {round}, id {id}");
            }
            map.clear();
            array.fill(UNPROCESSED);
            assert!((0..n).all(|id| map.get(id) == UNPROCESSED));
        }
    }
}
