//! The candidate table: a faithful emulation of the libbpf hashmap behind `d->dedup_table`.
//!
//! libbpf keeps canonical candidates in its generic chained hashmap (`hashmap.c`) with the
//! `HASHMAP_APPEND` strategy: every insert *prepends* to the bucket chain, and every growth
//! re-inserts all entries bucket by bucket, head to tail, prepending again — which reverses the
//! relative order of entries that land in the same new bucket. `for_each_dedup_cand` walks one
//! bucket head to tail and keeps the entries whose key equals the hash. The order in which
//! candidates are tried matters whenever two canonical candidates are both equivalent to a new
//! type (structs with FWD members, enum forward declarations), so this module reproduces the
//! structure itself rather than an approximation of it: the same bucket function (`hash_bits`,
//! Fibonacci hashing on 64 bits), the same growth rule (`cap == 0 || (sz + 1) * 4 / 3 > cap`,
//! minimum 4 buckets), the same prepend and the same growth walk. Chains are singly linked lists
//! of indices into one flat entry array, so there is no per-entry allocation.
//!
//! With `force_collisions` the hash function returns 0, exactly like libbpf's
//! `btf_dedup_collision_hash_fn`: everything lands in bucket 0 and lookups filter by key, so the
//! candidate order (and therefore the result) is unchanged; only the speed suffers.

/// End of a chain.
const NONE: u32 = u32::MAX;

#[derive(Clone, Copy)]
struct Entry {
    key: u64,
    val: u32,
    next: u32,
}

/// libbpf's chained multimap from a 64-bit type hash to candidate type ids.
pub(crate) struct CandTable {
    buckets: Vec<u32>,
    entries: Vec<Entry>,
    cap_bits: u32,
    force_collisions: bool,
}

/// libbpf `hash_bits()` for LP64: multiply by 2^64/phi and keep the top `bits` bits.
fn hash_bits(h: u64, bits: u32) -> usize {
    if bits == 0 {
        return 0;
    }
    (h.wrapping_mul(11_400_714_819_323_198_485) >> (64 - bits)) as usize
}

impl CandTable {
    /// An empty table; `force_collisions` makes every key hash to bucket 0.
    pub(crate) fn new(force_collisions: bool, expected: usize) -> Self {
        CandTable {
            buckets: Vec::new(),
            entries: Vec::with_capacity(expected),
            cap_bits: 0,
            force_collisions,
        }
    }

    fn bucket(&self, key: u64, bits: u32) -> usize {
        if self.force_collisions {
            0
        } else {
            hash_bits(key, bits)
        }
    }

    /// Bytes of the table resident now, and how many entries it has.
    pub(crate) fn resident(&self) -> (usize, usize) {
        use crate::measure::resident_bytes;
        (
            resident_bytes(&self.buckets) + resident_bytes(&self.entries),
            self.entries.len(),
        )
    }

    fn grow(&mut self) {
        let new_bits = (self.cap_bits + 1).max(2);
        let mut new_buckets = vec![NONE; 1usize << new_bits];
        for bkt in 0..self.buckets.len() {
            let mut cur = self.buckets[bkt];
            while cur != NONE {
                let next = self.entries[cur as usize].next;
                let h = self.bucket(self.entries[cur as usize].key, new_bits);
                self.entries[cur as usize].next = new_buckets[h];
                new_buckets[h] = cur;
                cur = next;
            }
        }
        self.buckets = new_buckets;
        self.cap_bits = new_bits;
    }

    /// `hashmap__append(key, val)`: grows first if needed, then prepends to the bucket chain.
    pub(crate) fn append(&mut self, key: u64, val: u32) {
        let cap = self.buckets.len();
        if cap == 0 || (self.entries.len() + 1) * 4 / 3 > cap {
            self.grow();
        }
        self.prepend(key, val);
    }

    /// Prepends `val` to the chain of `key`'s bucket at the current size.
    fn prepend(&mut self, key: u64, val: u32) {
        let h = self.bucket(key, self.cap_bits);
        let idx = self.entries.len() as u32;
        self.entries.push(Entry {
            key,
            val,
            next: self.buckets[h],
        });
        self.buckets[h] = idx;
    }

    /// Appends `entries` to an empty table, in order: the same candidate order for every key
    /// as calling [`CandTable::append`] on each, without re-inserting everything at each
    /// growth (split BTF enters every base type this way).
    ///
    /// Only the order of entries with equal keys is observable ([`CandTable::next`] filters
    /// by key), and equal keys share a bucket at every size, so each growth reverses their
    /// order and each append prepends. That is a deque read head first: an entry appended
    /// after an even number of growths goes to the front, after an odd number to the back,
    /// and the deque is read back to front when the total number of growths is odd. The
    /// entries are prepended at the final size in the reverse of that reading order.
    pub(crate) fn append_all(&mut self, entries: impl IntoIterator<Item = (u64, u32)>) {
        assert!(
            self.entries.is_empty(),
            "append_all starts from an empty table"
        );
        let entries = entries.into_iter();
        self.entries.reserve(entries.size_hint().0);
        self.entries.extend(entries.map(|(key, val)| Entry {
            key,
            val,
            next: NONE,
        }));
        let n = self.entries.len();
        if n == 0 {
            return;
        }
        // Entry i was appended after an odd number of growths when `odd_after[i]`.
        let mut odd_after = vec![false; n];
        let (mut bits, mut odd) = (0u32, false);
        for (len, slot) in odd_after.iter_mut().enumerate() {
            let cap = if bits == 0 { 0 } else { 1usize << bits };
            if cap == 0 || (len + 1) * 4 / 3 > cap {
                bits = (bits + 1).max(2);
                odd = !odd;
            }
            *slot = odd;
        }
        self.cap_bits = bits;
        self.buckets = vec![NONE; 1usize << bits];
        // Prepending in this order reads back as the deque's reading order: the front half
        // reversed, then the back half (odd total), or the back half reversed, then the
        // front half (even total).
        let first = |i: &usize| odd_after[*i] != odd;
        let order = (0..n)
            .rev()
            .filter(first)
            .chain((0..n).filter(|i| !first(i)));
        for idx in order {
            let h = self.bucket(self.entries[idx].key, bits);
            self.entries[idx].next = self.buckets[h];
            self.buckets[h] = idx as u32;
        }
    }

    /// A cursor positioned before the first candidate for `key`.
    pub(crate) fn cursor(&self, key: u64) -> u32 {
        if self.buckets.is_empty() {
            NONE
        } else {
            self.buckets[self.bucket(key, self.cap_bits)]
        }
    }

    /// The next candidate for `key` after `cur` (chain order), advancing the cursor.
    #[inline]
    pub(crate) fn next(&self, cur: &mut u32, key: u64) -> Option<u32> {
        while *cur != NONE {
            let e = self.entries[*cur as usize];
            *cur = e.next;
            if e.key == key {
                return Some(e.val);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    fn all(t: &CandTable, key: u64) -> Vec<u32> {
        let mut cur = t.cursor(key);
        let mut v = Vec::new();
        while let Some(x) = t.next(&mut cur, key) {
            v.push(x);
        }
        v
    }

    #[test]
    fn append_all_orders_candidates_as_appends_do() {
        let mut rng = Rng::with_state(0x2545_f491_4f6c_dd1d);
        let mut rand = move || rng.next();
        for n in (0..40).chain([100, 1000, 5000]) {
            for force in [false, true] {
                let entries: Vec<(u64, u32)> = (0..n).map(|i| (rand() % 7, i)).collect();
                let more: Vec<(u64, u32)> = (n..n + 50).map(|i| (rand() % 7, i)).collect();
                let mut one_by_one = CandTable::new(force, 0);
                entries.iter().for_each(|&(k, v)| one_by_one.append(k, v));
                let mut bulk = CandTable::new(force, 0);
                bulk.append_all(entries.iter().copied());
                let same = |a: &CandTable, b: &CandTable| (0..8).all(|k| all(a, k) == all(b, k));
                assert!(same(&one_by_one, &bulk), "{n} entries");
                for table in [&mut one_by_one, &mut bulk] {
                    more.iter().for_each(|&(k, v)| table.append(k, v));
                }
                assert!(same(&one_by_one, &bulk), "{n} entries, then 50 appended");
            }
        }
    }

    #[test]
    fn prepend_then_growth_reverses() {
        for force in [false, true] {
            let mut t = CandTable::new(force, 0);
            t.append(7, 1);
            t.append(7, 2);
            t.append(7, 3);
            // Newest first, no growth since the first insert (cap 4 holds 3).
            assert_eq!(all(&t, 7), [3, 2, 1]);
            // The 4th insert grows to 8 buckets: the chain is reversed, then 4 is prepended.
            t.append(7, 4);
            assert_eq!(all(&t, 7), [4, 1, 2, 3]);
            t.append(9, 5);
            assert_eq!(all(&t, 9), [5]);
            assert_eq!(all(&t, 8), Vec::<u32>::new());
        }
    }
}
