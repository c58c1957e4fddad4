//! The owners' savers during encoding: each owner's [`FuncSaver`] behind a lock of its own,
//! handed between the worker threads that encode the owner's batches, and the rule that an
//! owner saves its batches in batch order (`o`, `o + owners`, `o + 2 × owners` …), whichever
//! threads encoded them and in whatever order they finished.
//!
//! The lock is [`crate::sync::Mutex`]: `parking_lot`'s in production, loom's under
//! `--cfg dwarf2btf_loom`, so `loom-tests/tests/owner_handover.rs` model-checks this very code
//! handing a saver from one thread to another while a third pushes onto the same list. Under
//! loom and shuttle (and `--cfg dwarf2btf_mutants`) the switch in `mutants` saves each batch as soon as it
//! is encoded, ignoring the order, which that model must catch.

use std::collections::BTreeMap;

use crate::functions::table::{Fold, FuncSaver};
use crate::sync::Mutex;

/// Test-only switch, compiled only in loom and shuttle builds and with `--cfg dwarf2btf_mutants`:
/// process-global, so keep a test that sets it in its own test binary.
#[cfg(any(dwarf2btf_loom, dwarf2btf_shuttle, dwarf2btf_mutants))]
pub mod mutants {
    use std::sync::atomic::AtomicBool;

    /// An owner saves each batch as soon as it is encoded, not in batch order: the saves of a
    /// batch that finished before the owner's earlier one land first.
    pub static UNORDERED_SAVES: AtomicBool = AtomicBool::new(false);
}

/// A batch's function instances, each with its ELF functions table entry, in DWARF order.
pub type BatchInstances<I> = Vec<(u32, I)>;

/// An owner's saver as the workers hold it: boxed, so one type serves any table design and the
/// save tracer alike.
pub type BoxedSaver<'s, S> = Box<dyn FuncSaver<S> + Send + 's>;

/// Every owner's saver, each behind its own lock. Batch `b` belongs to owner `b % owners`.
pub struct Owners<'s, S: Fold>(Box<[Mutex<OwnerSaves<'s, S>>]>);

impl<'s, S: Fold> Owners<'s, S> {
    /// The owners `0..`, one per saver, in order.
    pub fn new(savers: impl IntoIterator<Item = BoxedSaver<'s, S>>) -> Self {
        Owners(
            savers
                .into_iter()
                .enumerate()
                .map(|(next, saver)| {
                    Mutex::new(OwnerSaves {
                        saver,
                        next,
                        waiting: BTreeMap::new(),
                    })
                })
                .collect(),
        )
    }

    /// How many owners there are.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there is no owner.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Saves batch `b`'s instances through its owner's saver (under the owner's lock, held
    /// only while saving: a thread never waits for another's encoding), and then every waiting
    /// batch of that owner whose turn that makes; a batch whose turn has not come waits.
    pub fn save(&self, b: usize, instances: BatchInstances<S::Instance>) {
        let owners = self.0.len();
        self.0[b % owners]
            .lock()
            .save_in_order(b, instances, owners);
    }
}

/// One owner's saver, and the instances of the owner's batches that were encoded before an
/// earlier batch of the same owner.
struct OwnerSaves<'s, S: Fold> {
    saver: BoxedSaver<'s, S>,
    /// The owner's next batch to save.
    next: usize,
    /// Encoded batches waiting for `next`, with their instances in DWARF order.
    waiting: BTreeMap<usize, BatchInstances<S::Instance>>,
}

impl<S: Fold> OwnerSaves<'_, S> {
    /// Saves batch `b`'s instances, and then every waiting batch whose turn that makes, in
    /// batch order; `owners` is the step between an owner's batches.
    fn save_in_order(&mut self, b: usize, instances: BatchInstances<S::Instance>, owners: usize) {
        #[cfg(any(dwarf2btf_loom, dwarf2btf_shuttle, dwarf2btf_mutants))]
        if mutants::UNORDERED_SAVES.load(std::sync::atomic::Ordering::Relaxed) {
            return self.save_batch(instances);
        }
        self.waiting.insert(b, instances);
        while let Some(instances) = self.waiting.remove(&self.next) {
            self.save_batch(instances);
            self.next += owners;
        }
    }

    fn save_batch(&mut self, instances: BatchInstances<S::Instance>) {
        for (entry, instance) in instances {
            self.saver.save(entry, instance);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A saver that notes the batch and entry of each save (the instance is its batch).
    struct Noting<'n>(&'n parking_lot::Mutex<Vec<(u32, u32)>>);

    impl FuncSaver<Vec<u32>> for Noting<'_> {
        fn save(&mut self, entry: u32, batch: u32) {
            self.0.lock().push((batch, entry));
        }
    }

    fn batch(b: u32) -> BatchInstances<u32> {
        (0..2).map(|entry| (entry, b)).collect()
    }

    #[test]
    fn an_owner_saves_its_batches_in_batch_order_whatever_order_they_finish_in() {
        let saved = parking_lot::Mutex::new(Vec::new());
        let noting = || Box::new(Noting(&saved)) as BoxedSaver<'_, Vec<u32>>;
        // Owner 1 of 3: its batches are 1, 4, 7, 10 (owners 0 and 2 save nothing here).
        let owners = Owners::new([noting(), noting(), noting()]);
        owners.save(7, batch(7));
        owners.save(4, batch(4));
        assert!(saved.lock().is_empty(), "batch 1 has not been saved yet");
        owners.save(1, batch(1));
        owners.save(10, batch(10));
        let expected: Vec<(u32, u32)> = [1, 4, 7, 10]
            .into_iter()
            .flat_map(|b| [(b, 0), (b, 1)])
            .collect();
        assert_eq!(*saved.lock(), expected);
        assert!(owners.0[1].lock().waiting.is_empty());
    }
}
