//! libbpf's `hypot_map` and `hypot_list`: the hypothetical canonical → candidate mapping that
//! one equivalence check (`is_equiv`) builds, and the canonical ids it touched, in order.
//!
//! As in libbpf, the map is an array over every type id, reset through the list after each
//! check: a lookup is one load, and the struct phase makes one or two per pair of types it
//! compares. Unlike libbpf's, the array stores `candidate + 1`, so that "unmapped" is 0 and the
//! array can start as untouched zero pages: only the pages of ids some check touched (the
//! canonical side's types) become resident. Every [`RELEASE_AFTER`] mappings, when a clear has
//! left the array all zero, its pages go back to the kernel, so what stays resident is what
//! the recent checks touched (the pages of all the canonical types met through the struct
//! phase were 4.5–6.3 MiB at the dedup's peak on a kernel).

use super::UNPROCESSED;

/// Mappings between two releases of the array's pages: a release costs the faults that bring
/// back the pages the next checks touch.
const RELEASE_AFTER: usize = 1 << 16;

/// The hypothetical map of one equivalence check.
pub(crate) struct HypotMap {
    /// Per type id: the candidate it is mapped to, plus one; 0 when unmapped.
    plus_one: Vec<u32>,
    /// The canonical ids mapped, in the order they were (libbpf's `hypot_list`).
    list: Vec<u32>,
    /// Mappings since the array's pages were last released.
    since_release: usize,
}

impl HypotMap {
    /// An empty map over `cnt` type ids (zeroed memory, left to the kernel until written).
    pub(crate) fn new(cnt: usize) -> Self {
        HypotMap {
            plus_one: vec![0; cnt],
            list: Vec::new(),
            since_release: 0,
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
        self.since_release += self.list.len();
        self.list.clear();
        if self.since_release >= RELEASE_AFTER {
            self.since_release = 0;
            release_zeroed(&mut self.plus_one);
        }
    }
}

/// Gives the pages wholly inside `zeros`, which is all zero, back to the kernel (a memory-use
/// hint: when it fails, nothing changes but the resident set).
fn release_zeroed(zeros: &mut [u32]) {
    debug_assert!(zeros.iter().all(|&z| z == 0));
    #[cfg(target_os = "linux")]
    {
        let Some(page) = crate::stats::page_size() else {
            return;
        };
        let (from, to) = (
            zeros.as_mut_ptr() as usize,
            zeros.as_mut_ptr_range().end as usize,
        );
        let (start, end) = (from.next_multiple_of(page), to & !(page - 1));
        if start < end {
            // SAFETY: [start, end) is whole pages inside `zeros`, which this function borrows
            // exclusively and which holds only zeros; MADV_DONTNEED on private anonymous
            // memory (all a `Vec`'s memory is) makes those pages read as zeros again, so no
            // value observably changes.
            let _ = unsafe {
                libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_DONTNEED)
            };
        }
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
