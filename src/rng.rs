//! A seeded xorshift64 generator: the reproducible random numbers of the unit tests, the
//! integration tests, the benchmarks and the lab, one sequence everywhere for a given seed.
//! The encoder itself draws no random numbers.

/// Marsaglia's xorshift64 (13, 7, 17): reproducible and fast, not strong.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed`, any value (0 included), spread by a multiplication so that
    /// nearby seeds start far apart.
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    /// A generator whose state is `state` as given (a zero state stays zero).
    pub const fn with_state(state: u64) -> Self {
        Rng(state)
    }

    /// The next 64 random bits.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Uniform in `0..n` (0 when `n` is 0), up to the modulo's bias.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    /// True with probability `pct` %.
    pub fn chance(&mut self, pct: u64) -> bool {
        self.next() % 100 < pct
    }

    /// One of `items`, uniformly (which must not be empty).
    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }

    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Shuffles `items` (Fisher–Yates).
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            items.swap(i, self.below(i + 1));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Rng;

    #[test]
    fn the_sequence_is_marsaglias() {
        // xorshift64 (13, 7, 17) from state 1: 1082269761, then 1152992998833853505.
        let mut r = Rng::with_state(1);
        assert_eq!(r.next(), 1_082_269_761);
        assert_eq!(r.next(), 1_152_992_998_833_853_505);
    }

    #[test]
    fn below_stays_below_and_shuffle_permutes() {
        let mut r = Rng::new(7);
        assert!((0..1000).all(|_| r.below(10) < 10));
        assert_eq!(r.below(0), 0);
        let mut v: Vec<u32> = (0..50).collect();
        r.shuffle(&mut v);
        v.sort_unstable();
        assert_eq!(v, (0..50).collect::<Vec<_>>());
    }
}
