//! The lock-free shared function table ([`SharedTable`]).
//!
//! One `AtomicPtr` head per ELF-function entry; each heads a singly linked list of per-owner
//! nodes. A worker finds its own node in an entry's list or pushes a new one with
//! compare-and-swap, then appends to that node's state, which nobody else touches until
//! [`FuncTable::finish`]. Nodes live in their owner's arena and are never removed before the
//! table is finished or dropped, so there is no ABA and no reclamation problem: a pointer read
//! from a list stays valid for as long as the table is borrowed. The lists serve lookups only:
//! `finish` and `drop` go through the arenas, owner by owner, in allocation order.
//!
//! Atomics and cells come from [`crate::sync`] only, so `loom-tests/` model-checks this very
//! code. Under `--cfg dwarf2btf_loom` (and `--cfg dwarf2btf_mutants`, for ThreadSanitizer),
//! and only there, the switches in `mutants` plant one bug each (a racy load + store instead
//! of the compare-and-swap; each ordering the design relies on weakened to `Relaxed`), so the
//! tests can show that loom (and TSan) catch every one of them; under loom, an arena's first
//! chunk holds one node, so that short models cross chunk boundaries (`docs/concurrency.md`,
//! "Verification").

use std::marker::PhantomData;
use std::mem::MaybeUninit;
use std::ptr;

use super::{
    bytes_of, check_entry, empty_entries, push_fold, Contended, Contention, Fold, FuncSaver,
    FuncTable, LocalContention, Owner, OwnerClaims, TableMemory,
};
use crate::sync::{mutable_ordering, AtomicPtr, Ordering, Track, UnsafeCell};

/// Test-only switches, each planting one bug that a loom model must catch (and, for the
/// orderings, ThreadSanitizer too). Compiled only in loom builds and with
/// `--cfg dwarf2btf_mutants`. Never set one outside a test that expects the failure: they are
/// process-global, so keep such tests in their own test binary (or process).
#[cfg(any(dwarf2btf_loom, dwarf2btf_shuttle, dwarf2btf_mutants))]
pub mod mutants {
    use std::sync::atomic::AtomicBool;

    /// A push is `load` + `store` instead of a compare-and-swap: it loses nodes under
    /// contention (atomicity, not ordering).
    pub static RACY_PUSH: AtomicBool = AtomicBool::new(false);
    /// A save loads its entry's head with `Relaxed` instead of `Acquire`: the walk then reads
    /// other owners' links without their publication happening before.
    pub static RELAXED_FIND: AtomicBool = AtomicBool::new(false);
    /// A push's successful compare-and-swap is `Relaxed` instead of `Release`: it publishes a
    /// node without its link.
    pub static RELAXED_PUBLISH: AtomicBool = AtomicBool::new(false);
}

/// Slots in an arena's first chunk; each further chunk doubles, up to 128 times this.
/// One under loom, so that an owner's second node already lies in a chunk of its own.
const FIRST_CHUNK: usize = if cfg!(dwarf2btf_loom) { 1 } else { 8 };

/// The shared table: one lock-free list of per-owner nodes per entry.
pub struct SharedTable<T> {
    /// `heads[entry]`: the most recently pushed node of the entry, or null.
    heads: Box<[AtomicPtr<Node<T>>]>,
    /// `arenas[owner]`: `owner`'s nodes, which it owns; used only by `owner`'s saver until the
    /// table is finished or dropped.
    arenas: Box<[UnsafeCell<Arena<T>>]>,
    claims: OwnerClaims,
    /// Failed compare-and-swaps.
    cas_retries: Contention,
}

/// One owner's fold for one entry.
struct Node<T> {
    /// Written only before the node is published (in `Node::new` and `push`), read-only
    /// afterwards. In a cell so that loom checks every read against that publication.
    link: UnsafeCell<Link<T>>,
    /// Folded into only by the owner's saver, moved out only by the owner's arena.
    state: UnsafeCell<T>,
    /// Under loom, reports a node that was never dropped; nothing outside loom.
    _leak_check: Track<()>,
}

/// The immutable part of a published node.
struct Link<T> {
    next: *mut Node<T>,
    owner: Owner,
    entry: u32,
}

// Manual impls: a derive would demand `T: Copy`, but a `Link` only holds a pointer to `T`s.
impl<T> Clone for Link<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Link<T> {}

impl<T: Fold> Node<T> {
    /// A node for `owner`'s first instance of `entry`, to be pushed before `next`.
    fn new(owner: Owner, entry: u32, next: *mut Node<T>, first: T::Instance) -> Self {
        Node {
            link: UnsafeCell::new(Link { next, owner, entry }),
            state: UnsafeCell::new(T::new(first)),
            _leak_check: Track::new(()),
        }
    }
}

impl<T> Node<T> {
    /// The node's owner, entry and successor.
    fn link(&self) -> Link<T> {
        // SAFETY: `link` is written only while the node is unpublished, by the one thread that
        // created it (`Node::new`, `push`); `self` is reachable here only through a published
        // pointer read with Acquire (a head load or the `next` of a node so read), which orders
        // those writes before this read. No write follows publication.
        self.link.with(|link| unsafe { *link })
    }
}

/// Where one owner's nodes live, and their owner: chunks of node slots that never move and are
/// freed only with the arena. Allocating a node is a write into the current chunk, not a
/// `malloc`.
struct Arena<T> {
    /// Each chunk's first slot and its length in slots (from `Box::into_raw`). Raw pointers,
    /// not `Box`es: pointers to published nodes must never be invalidated by a reborrow.
    chunks: Vec<(*mut Node<T>, usize)>,
    /// Slots written in the last chunk; all slots of the earlier chunks are written.
    used: usize,
}

impl<T> Arena<T> {
    const fn new() -> Self {
        Arena {
            chunks: Vec::new(),
            used: 0,
        }
    }

    /// Moves `node` into a fresh slot and returns its address, fixed until the arena is emptied.
    fn alloc(&mut self, node: Node<T>) -> *mut Node<T> {
        let base = match self.chunks.last() {
            Some(&(base, len)) if self.used < len => base,
            _ => {
                // 8, 16, … 1024 slots: small tables stay small, big ones rarely allocate.
                let len = FIRST_CHUNK << self.chunks.len().min(7);
                let base = Box::into_raw(Box::<[Node<T>]>::new_uninit_slice(len)).cast();
                self.chunks.push((base, len));
                self.used = 0;
                base
            }
        };
        // SAFETY: `used < len` of the last chunk, so the slot lies inside that live allocation.
        let slot = unsafe { base.add(self.used) };
        // SAFETY: the slot is inside the allocation, aligned (an element of a `[Node<T>]`), and
        // not written yet (slots are handed out once, in order): nothing is overwritten.
        unsafe { slot.write(node) };
        self.used += 1;
        slot
    }

    /// The arena's part of [`FuncTable::memory`]: its nodes, the slots not handed out yet,
    /// its chunk list and what the nodes' folds point to.
    ///
    /// # Safety
    ///
    /// The caller must hold the table exclusively: the folds are read.
    unsafe fn memory(&self) -> TableMemory
    where
        T: Fold,
    {
        let mut memory = TableMemory {
            per_owner: bytes_of::<(*mut Node<T>, usize)>(self.chunks.capacity()),
            ..TableMemory::default()
        };
        let last = self.chunks.len().saturating_sub(1);
        for (i, &(base, len)) in self.chunks.iter().enumerate() {
            let written = if i == last { self.used } else { len };
            memory.records += bytes_of::<Node<T>>(written);
            memory.slack += bytes_of::<Node<T>>(len - written);
            for slot in 0..written {
                // SAFETY: slot `slot < written` of this chunk was written by `alloc` and is not
                // moved out before `drain`; the caller excludes every other access to it.
                let node = unsafe { &*base.add(slot) };
                // SAFETY: as above: nobody else reads or writes the state.
                memory.heap += node.state.with(|state| unsafe { (*state).heap_bytes() }) as u64;
            }
        }
        memory
    }

    /// Moves every node out, in allocation order, hands it to `f`, and frees the chunks.
    ///
    /// # Safety
    ///
    /// The lists still point into the freed chunks: nobody may walk them afterwards, so the
    /// caller must hold the table exclusively (or be dropping it).
    unsafe fn drain(&mut self, mut f: impl FnMut(Node<T>)) {
        let last = self.chunks.len().saturating_sub(1);
        for (i, (base, len)) in std::mem::take(&mut self.chunks).into_iter().enumerate() {
            let written = if i == last { self.used } else { len };
            for slot in 0..written {
                // SAFETY: slot `slot < written` of this chunk was written by `alloc` and not
                // moved out since (chunks are taken out of the arena as they are drained), and
                // the caller excludes every other access to it.
                f(unsafe { ptr::read(base.add(slot)) });
            }
            let chunk = ptr::slice_from_raw_parts_mut(base.cast::<MaybeUninit<Node<T>>>(), len);
            // SAFETY: `(base, len)` is the pointer and length of a `Box<[MaybeUninit<Node<T>>]>`
            // turned into a raw pointer in `alloc`, taken out of `self.chunks` above, so freed
            // once. Its nodes have all been moved out, and `MaybeUninit` drops nothing anyway.
            drop(unsafe { Box::from_raw(chunk) });
        }
        self.used = 0;
    }
}

impl<T> Drop for Arena<T> {
    fn drop(&mut self) {
        // SAFETY: an arena is dropped only with its table (a plain drop, or the end of
        // `finish`, after which the arena is empty already): nobody can walk the lists again.
        unsafe { self.drain(drop) };
    }
}

// SAFETY: the table owns its arenas, hence every node, and through the nodes their states;
// sending the table sends those `T`s, hence `T: Send`. The raw pointers (heads, links, arena
// chunks) are what make the auto impl absent; none of them has a thread affinity.
unsafe impl<T: Send> Send for SharedTable<T> {}

// SAFETY: what `&SharedTable` lets threads do concurrently:
// - heads: atomics only;
// - node links: written before publication (Release CAS), read after an Acquire load that saw
//   the node (directly or through `next` links, each published the same way), never written
//   after publication — no data race (see `Node::link`, `push`);
// - node states and arenas: used only by the one saver of the owner (`OwnerClaims` makes that
//   saver unique, and only the owner inserts or finds its own node), then by `finish` / `drop`,
//   which own the table. So each `T` is used by one thread at a time and moved between
//   threads, never shared: `T: Send` suffices, `T: Sync` is not needed.
unsafe impl<T: Send> Sync for SharedTable<T> {}

/// The per-owner handle of a [`SharedTable`].
pub struct SharedSaver<'t, T> {
    table: &'t SharedTable<T>,
    owner: Owner,
    /// This saver's failed compare-and-swaps.
    cas_retries: LocalContention<'t>,
}

impl<T> SharedTable<T> {
    /// The nodes of the list starting at `first`, a pointer read with Acquire from a head.
    fn nodes(&self, first: *mut Node<T>) -> Nodes<'_, T> {
        Nodes {
            next: first,
            _table: PhantomData,
        }
    }

    /// Publishes the unpublished `node` at the front of `head`'s list; `expected` is the head
    /// value last read (with Acquire) and already stored in `node`'s `next`. Returns how many
    /// compare-and-swaps failed.
    ///
    /// A strong compare-and-swap, not a weak one: a strong one fails only when the head has
    /// moved, that is when another owner's push onto this list succeeded since `expected` was
    /// read. Each owner pushes at most once per entry and only the owner pushes its node, so a
    /// push fails at most owners − 1 times (wait-free), and the count returned — the table's
    /// contention figure — counts real conflicts only. A weak one may also fail spuriously
    /// (LL/SC machines: ARM, POWER, RISC-V), which voids both.
    fn push(head: &AtomicPtr<Node<T>>, node: *mut Node<T>, mut expected: *mut Node<T>) -> u64 {
        #[cfg(any(dwarf2btf_loom, dwarf2btf_shuttle, dwarf2btf_mutants))]
        if mutants::RACY_PUSH.load(std::sync::atomic::Ordering::Relaxed) {
            // Deliberately wrong: another push between the caller's load and this store is lost.
            head.store(node, Ordering::Release);
            return 0;
        }
        let mut retries = 0;
        // Release on success publishes `node`'s link to every thread that Acquire-loads it from
        // the head, and with it the nodes it reaches: their publishing CASs precede ours in the
        // head's modification order, and ours, a read-modify-write, continues their release
        // sequences. That is also why failure needs no Acquire: `current` is only stored into
        // `node`'s `next`, never dereferenced here, and whoever later walks from `node` reaches
        // `current`'s node through the release sequence our successful CAS continues (the
        // loom suite runs a model with this very ordering; `docs/concurrency.md`).
        let publish = mutable_ordering!(Ordering::Release, mutants::RELAXED_PUBLISH);
        while let Err(current) = head.compare_exchange(expected, node, publish, Ordering::Relaxed) {
            expected = current;
            retries += 1;
            // SAFETY: the CAS failed, so `node` is still unpublished: this thread, which
            // created it, is the only one that can reach it.
            unsafe { (*node).link.with_mut(|link| (*link).next = expected) };
        }
        retries
    }
}

/// Iterator over the `(owner, node)` pairs of one list.
struct Nodes<'t, T> {
    next: *mut Node<T>,
    _table: PhantomData<&'t SharedTable<T>>,
}

impl<'t, T> Iterator for Nodes<'t, T> {
    type Item = (Owner, &'t Node<T>);

    fn next(&mut self) -> Option<Self::Item> {
        // SAFETY: `self.next` is null or a published node pointer, read from a head with
        // Acquire or from the `next` of a node so reached (see `Node::link`); nodes are moved
        // out and their memory freed only by `Arena::drain`, which runs only once the table is
        // held exclusively (`finish`, `drop`), impossible while `'t` lasts.
        let node = unsafe { self.next.as_ref()? };
        let link = node.link();
        self.next = link.next;
        Some((link.owner, node))
    }
}

impl<T: Fold> FuncTable<T> for SharedTable<T> {
    type Saver<'t>
        = SharedSaver<'t, T>
    where
        T: 't;

    fn new(entries: usize, owners: usize) -> Self {
        SharedTable {
            heads: (0..entries)
                .map(|_| AtomicPtr::new(ptr::null_mut()))
                .collect(),
            arenas: (0..owners).map(|_| UnsafeCell::new(Arena::new())).collect(),
            claims: OwnerClaims::new(owners),
            cas_retries: Contention::default(),
        }
    }

    fn saver(&self, owner: Owner) -> SharedSaver<'_, T> {
        self.claims.claim(owner);
        SharedSaver {
            table: self,
            owner,
            cas_retries: self.cas_retries.local(),
        }
    }

    fn contention(&self) -> Contended {
        Contended {
            cas_failures: self.cas_retries.total(),
            lock_waits: 0,
        }
    }

    fn memory(&mut self) -> TableMemory {
        let mut memory = TableMemory {
            shared_index: bytes_of::<AtomicPtr<Node<T>>>(self.heads.len()),
            per_owner: bytes_of::<UnsafeCell<Arena<T>>>(self.arenas.len()),
            ..TableMemory::default()
        };
        for arena in self.arenas.iter() {
            // SAFETY: `&mut self`: no saver is alive, so nothing else uses the arena.
            memory += arena.with(|arena| unsafe { (*arena).memory() });
        }
        memory
    }

    fn finish(self) -> Vec<Vec<T>> {
        // `self` by value: every saver and walker is gone, and whatever ended them (a join, a
        // scope end, an `Arc` unwrap) ordered their writes before this point. Owners ascending,
        // each with at most one node per entry: appending in this order is the contract's
        // order, with no sorting and no list walking.
        let mut out = empty_entries(self.heads.len());
        for arena in self.arenas.iter() {
            // SAFETY: the table is held exclusively (see above): this is the only access to the
            // arena, and nobody can walk the lists after `drain` has freed the nodes.
            arena.with_mut(|arena| unsafe {
                (*arena).drain(|Node { link, state, .. }| {
                    let entry = link.into_inner().entry as usize;
                    push_fold(&mut out[entry], state.into_inner());
                })
            });
        }
        out
    }
}

impl<T: Fold> FuncSaver<T> for SharedSaver<'_, T> {
    fn save(&mut self, entry: u32, instance: T::Instance) {
        let table = self.table;
        check_entry(entry, table.heads.len());
        let head = &table.heads[entry as usize];
        // Acquire: the walk below reads the links of nodes other owners published (see
        // `Node::link`).
        let first = head.load(mutable_ordering!(Ordering::Acquire, mutants::RELAXED_FIND));
        match table.nodes(first).find(|&(owner, _)| owner == self.owner) {
            // SAFETY: `node` belongs to `self.owner`, whose only saver is `self` (`OwnerClaims`),
            // and `&mut self` excludes a re-entrant save; walkers never read states, and
            // `finish`/`drop` cannot run while `self` borrows the table. So this is the only
            // access to the state.
            Some((_, node)) => node
                .state
                .with_mut(|state| unsafe { (*state).add(instance) }),
            None => {
                let node = Node::new(self.owner, entry, first, instance);
                // SAFETY: `arenas[owner]` is used only by `owner`'s saver, which is `self`
                // (`OwnerClaims`), and by `finish`/`drop`, which cannot run while `self` borrows
                // the table.
                let node = table.arenas[self.owner as usize]
                    .with_mut(|arena| unsafe { (*arena).alloc(node) });
                // Only `self` pushes nodes of `self.owner`, so none can have appeared since the
                // walk: a failed CAS in `push` needs a re-link, never a re-check.
                self.cas_retries.add(SharedTable::push(head, node, first));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::contract_tests;
    use super::*;

    contract_tests!(SharedTable);

    /// ThreadSanitizer's negative control (scripts/test.sh): in a build with the mutant
    /// switches (`--cfg dwarf2btf_mutants`), `DWARF2BTF_MUTANT=relaxed_find` or
    /// `relaxed_publish` runs the contract's concurrent saves with that ordering weakened to
    /// `Relaxed`, and TSan must report the data race on a node's link. Without the variable it
    /// runs them unmutated.
    #[cfg(dwarf2btf_mutants)]
    #[test]
    fn contract_under_the_mutant_in_the_environment() {
        let mutant = match std::env::var("DWARF2BTF_MUTANT").as_deref() {
            Ok("relaxed_find") => Some(&mutants::RELAXED_FIND),
            Ok("relaxed_publish") => Some(&mutants::RELAXED_PUBLISH),
            Ok(other) => panic!("DWARF2BTF_MUTANT={other}: no such ordering mutant"),
            Err(_) => None,
        };
        if let Some(mutant) = mutant {
            mutant.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        contract::check::<SharedTable<Vec<Inst>>>();
    }

    #[test]
    #[should_panic(expected = "owner 2 out of range")]
    fn owner_out_of_range_panics() {
        let table = SharedTable::<Vec<Inst>>::new(1, 2);
        table.saver(2);
    }

    #[test]
    fn lists_hold_one_node_per_owner_newest_first() {
        let table = SharedTable::<Vec<char>>::new(2, 3);
        let (mut a, mut b, mut c) = (table.saver(0), table.saver(1), table.saver(2));
        c.save(1, 'c');
        a.save(1, 'a');
        c.save(1, 'C');
        b.save(0, 'b');
        a.save(1, 'A');
        let owners = |entry: usize| -> Vec<Owner> {
            let first = table.heads[entry].load(Ordering::Acquire);
            table.nodes(first).map(|(owner, _)| owner).collect()
        };
        assert_eq!(owners(1), [0, 2]);
        assert_eq!(owners(0), [1]);
        drop((a, b, c));
        assert_eq!(
            table.finish(),
            [vec![vec!['b']], vec![vec!['a', 'A'], vec!['c', 'C']]]
        );
    }

    #[test]
    fn memory_counts_heads_nodes_slack_and_folds() {
        let mut table = contract::memory_plan::<SharedTable<Vec<u64>>>();
        let m = table.memory();
        let node = std::mem::size_of::<Node<Vec<u64>>>() as u64;
        assert_eq!(m.shared_index, 3 * 8);
        assert_eq!(m.records, 3 * node, "owner 0: 2 nodes, owner 1: 1");
        assert_eq!(m.slack, (6 + 7) * node, "two first chunks of 8 slots");
        assert_eq!(m.heap, contract::PLAN_FOLD_HEAP);
        assert_eq!(m.owner_index, 0);
        assert!(m.per_owner > 0);
        assert_eq!(
            m.total(),
            m.shared_index + m.records + m.slack + m.heap + m.per_owner
        );
    }

    #[test]
    fn arena_chunks_grow_and_slots_stay_put() {
        // 8 + 16 + … + 1024 + 1024 + 1024 slots for 3000 nodes; under Miri, which interprets
        // every step, 8 + … + 128 for 200 (still every kind of chunk but the capped ones).
        let (entries, want_chunks) = if cfg!(miri) { (200, 5) } else { (3000, 9) };
        let table = SharedTable::<Vec<u32>>::new(entries as usize, 1);
        {
            let mut saver = table.saver(0);
            for entry in 0..entries {
                saver.save(entry, entry);
            }
            for entry in (0..entries).step_by(7) {
                saver.save(entry, entry + 10_000);
            }
        }
        // SAFETY: no saver is left, so nothing else uses the arena.
        let chunks = table.arenas[0].with(|arena| unsafe { (*arena).chunks.len() });
        assert_eq!(chunks, want_chunks, "chunks for {entries} nodes");
        let out = table.finish();
        for (entry, folds) in (0..).zip(&out) {
            let instances = folds.concat();
            let mut want = vec![entry];
            if entry % 7 == 0 {
                want.push(entry + 10_000);
            }
            assert_eq!(instances, want);
        }
    }
}
