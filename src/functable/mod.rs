//! The function table: where parallel encoders record what they learn about each ELF function.
//!
//! Three designs implement one trait and must give byte-identical output:
//! - [`shared`]: one table over the ELF functions; each entry heads a lock-free singly linked
//!   list of per-owner nodes (`owner`, `next`, state) pushed with compare-and-swap (the 2024
//!   "shared elf_functions" design);
//! - [`dashmap`]: entry → per-owner states behind `dashmap`'s sharded locks;
//! - [`save_merge`]: each encoder appends to its own plain list; one pass at the end groups
//!   them by entry (Alan Maguire's save-then-merge, what pahole ≥ 1.29 does).
//!
//! Workers get a per-owner [`FuncSaver`] handle. A table keeps, per entry and owner, a
//! [`Fold`] of that owner's instances: the shared table and dashmap fold each instance in as
//! it is saved (the encoder-local merge), save-merge keeps plain lists and folds them at the
//! end. After the workers have joined, [`FuncTable::finish`] hands every entry's per-owner
//! folds to the single-threaded final pass (`merge.rs`), which merges across owners.

pub mod dashmap;
pub mod fold;
pub mod merge;
pub mod save_merge;
pub mod shared;
pub mod signature;

/// Index of a worker (encoder) — the owner of the states it saves.
pub type Owner = u32;

/// What a table keeps per (entry, owner): that owner's instances, folded in save order.
pub trait Fold: Send + Sized {
    /// What a worker saves.
    type Instance: Send;
    /// The fold of one instance.
    fn new(first: Self::Instance) -> Self;
    /// Folds in the next instance.
    fn add(&mut self, instance: Self::Instance);
}

/// Keeps every instance, in save order: the fold of the contract tests, the loom models and
/// the contention benchmark, which check where each instance went.
impl<T: Send> Fold for Vec<T> {
    type Instance = T;
    fn new(first: T) -> Self {
        vec![first]
    }
    fn add(&mut self, instance: T) {
        self.push(instance);
    }
}

/// What one worker uses to record instances. Not shared between threads.
pub trait FuncSaver<S: Fold> {
    /// Records one instance of the ELF function with index `entry`.
    fn save(&mut self, entry: u32, instance: S::Instance);
}

/// A table of per-owner folds of function instances, filled concurrently by `owners` workers.
pub trait FuncTable<S: Fold>: Sync + Sized {
    /// The per-worker handle.
    type Saver<'t>: FuncSaver<S> + Send
    where
        Self: 't;

    /// A table for `entries` ELF functions and `owners` workers.
    fn new(entries: usize, owners: usize) -> Self;

    /// The handle of worker `owner` (call once per owner; each handle goes to one thread).
    fn saver(&self, owner: Owner) -> Self::Saver<'_>;

    /// Contention seen so far: failed compare-and-swaps (shared), saves that found their shard
    /// locked (dashmap); 0 for a design that shares nothing while encoding.
    fn contention(&self) -> u64 {
        0
    }

    /// After every worker has joined: for each entry (index = entry), one fold per owner that
    /// saved into it, owners ascending, each folding that owner's instances in save order.
    fn finish(self) -> Vec<Vec<S>>;
}

/// Which table design a run uses (`--func-table`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Design {
    #[default]
    Shared,
    Dashmap,
    SaveMerge,
}

impl Design {
    /// The name `--func-table` takes.
    pub fn name(self) -> &'static str {
        match self {
            Design::Shared => "shared",
            Design::Dashmap => "dashmap",
            Design::SaveMerge => "save-merge",
        }
    }
}

impl std::str::FromStr for Design {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        [Design::Shared, Design::Dashmap, Design::SaveMerge]
            .into_iter()
            .find(|d| d.name() == s)
            .ok_or_else(|| {
                format!("unknown function table design '{s}' (shared, dashmap, save-merge)")
            })
    }
}
