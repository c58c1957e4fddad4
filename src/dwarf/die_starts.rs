//! Where a unit's DIEs start: a bit per byte of the unit, set by the types walker at every DIE
//! it meets, so that references read later can be checked before anything is read at them. A
//! reference past the unit's end or into the middle of a DIE is corrupt DWARF: read there, the
//! bytes would parse as some other DIE (or none), and the encoding would be wrong without a
//! word.

/// The DIE starts of one unit, by unit offset.
#[derive(Default, Debug)]
pub struct DieStarts {
    bits: Vec<u64>,
    /// The unit's length: offsets from here on are past its end.
    len: usize,
}

/// What is wrong with a reference to a unit offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BadRef {
    /// It is at or past the end of the unit.
    PastUnit,
    /// It lies inside the unit but no DIE starts there.
    NotADie,
}

impl BadRef {
    /// The problem in words, for a message that goes on with the referring DIE.
    pub fn describe(self, what: &str, target: usize) -> String {
        match self {
            BadRef::PastUnit => {
                format!("{what} leads to unit offset {target:#x}, past the end of the unit")
            }
            BadRef::NotADie => {
                format!("{what} leads to unit offset {target:#x}, where no DIE starts")
            }
        }
    }
}

impl DieStarts {
    /// Empties the set for a unit of `len` bytes, keeping its memory.
    pub fn reset(&mut self, len: usize) {
        self.bits.clear();
        self.bits.resize(len.div_ceil(64), 0);
        self.len = len;
    }

    /// Records a DIE at `offset` (inside the unit).
    #[inline]
    pub fn insert(&mut self, offset: usize) {
        if let Some(word) = self.bits.get_mut(offset / 64) {
            *word |= 1 << (offset % 64);
        }
    }

    /// Whether a reference to `offset` leads to a DIE recorded here.
    pub fn check(&self, offset: usize) -> Result<(), BadRef> {
        if offset >= self.len {
            return Err(BadRef::PastUnit);
        }
        match self.bits.get(offset / 64) {
            Some(word) if word & (1 << (offset % 64)) != 0 => Ok(()),
            _ => Err(BadRef::NotADie),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_recorded_offsets_inside_the_unit_are_dies() {
        let mut starts = DieStarts::default();
        starts.reset(130);
        for o in [0, 11, 63, 64, 129] {
            starts.insert(o);
        }
        for o in [0, 11, 63, 64, 129] {
            assert_eq!(starts.check(o), Ok(()), "{o}");
        }
        for o in [1, 12, 65, 128] {
            assert_eq!(starts.check(o), Err(BadRef::NotADie), "{o}");
        }
        for o in [130, 131, usize::MAX] {
            assert_eq!(starts.check(o), Err(BadRef::PastUnit), "{o}");
        }
        starts.reset(10);
        assert_eq!(starts.check(0), Err(BadRef::NotADie), "reset forgets");
    }
}
