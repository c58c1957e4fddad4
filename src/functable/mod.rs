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
//! Workers get a per-owner [`FuncSaver`] handle; after they have all joined,
//! [`FuncTable::finish`] hands every entry's instances to the single-threaded final pass.

pub mod dashmap;
pub mod merge;
pub mod save_merge;
pub mod shared;

/// Index of a worker (encoder) — the owner of the states it saves.
pub type Owner = u32;

/// What one worker uses to record instances. Not shared between threads.
pub trait FuncSaver<T> {
    /// Records one instance of the ELF function with index `entry`.
    fn save(&mut self, entry: u32, instance: T);
}

/// A table of function instances, filled concurrently by `owners` workers.
pub trait FuncTable<T: Send>: Sync + Sized {
    /// The per-worker handle.
    type Saver<'t>: FuncSaver<T> + Send
    where
        Self: 't;

    /// A table for `entries` ELF functions and `owners` workers.
    fn new(entries: usize, owners: usize) -> Self;

    /// The handle of worker `owner` (call once per owner; each handle goes to one thread).
    fn saver(&self, owner: Owner) -> Self::Saver<'_>;

    /// After every worker has joined: the instances of each entry (index = entry), grouped by
    /// owner in ascending owner order, each owner's instances in the order it saved them.
    fn finish(self) -> Vec<Vec<T>>;
}

/// Which table design a run uses (`--func-table`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Design {
    #[default]
    Shared,
    Dashmap,
    SaveMerge,
}

impl std::str::FromStr for Design {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "shared" => Ok(Design::Shared),
            "dashmap" => Ok(Design::Dashmap),
            "save-merge" => Ok(Design::SaveMerge),
            _ => Err(format!(
                "unknown function table design '{s}' (shared, dashmap, save-merge)"
            )),
        }
    }
}
