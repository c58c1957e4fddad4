//! The string builder the renderer writes into: past a length limit it keeps a prefix and
//! completes the text with its length and an FNV-1a hash of all of it, which bounds memory
//! on adversarial input while still telling different texts apart.

use std::fmt;

/// What is kept of an over-long rendering before its length and hash.
pub(super) const KEPT_PREFIX: usize = 256;

/// 64-bit FNV-1a, stable across runs and platforms.
struct Fnv(u64);

impl Fnv {
    fn new() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= b as u64;
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

/// A string builder that degrades to prefix + length + hash past `limit` bytes.
pub(super) struct Sink {
    buf: String,
    limit: usize,
    total: usize,
    hasher: Option<Fnv>,
}

impl Sink {
    pub(super) fn new(limit: usize) -> Self {
        Sink {
            buf: String::new(),
            limit,
            total: 0,
            hasher: None,
        }
    }

    pub(super) fn push(&mut self, s: &str) {
        self.total += s.len();
        if let Some(h) = &mut self.hasher {
            h.write(s.as_bytes());
            return;
        }
        if self.buf.len() + s.len() <= self.limit {
            self.buf.push_str(s);
            return;
        }
        let mut h = Fnv::new();
        h.write(self.buf.as_bytes());
        h.write(s.as_bytes());
        let cut = floor_char_boundary(&self.buf, KEPT_PREFIX);
        self.buf.truncate(cut);
        self.hasher = Some(h);
    }

    pub(super) fn finish(self) -> String {
        match self.hasher {
            None => self.buf,
            Some(h) => format!(
                "{}... <{} bytes, fnv1a64 {:016x}>",
                self.buf, self.total, h.0
            ),
        }
    }
}

impl fmt::Write for Sink {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.push(s);
        Ok(())
    }
}

/// The largest char boundary of `s` not above `at`.
pub(super) fn floor_char_boundary(s: &str, at: usize) -> usize {
    if at >= s.len() {
        return s.len();
    }
    let mut i = at;
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sink_hashes_past_limit() {
        let mut s = Sink::new(10);
        s.push("0123456789");
        s.push("abc");
        let out = s.finish();
        assert!(
            out.starts_with("0123456789... <13 bytes, fnv1a64 "),
            "{out}"
        );
    }
}
