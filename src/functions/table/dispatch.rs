//! The run-time choice of a table design: [`with_design`] calls [`WithTable::run`] with the
//! chosen design's table type, the one place that names all four. The property test that the
//! designs agree lives here too.

use super::dashmap::DashmapTable;
use super::private::PrivateTable;
use super::save_merge::SaveMergeTable;
use super::shared::SharedTable;
use super::{Fold, FuncTable};
use crate::config::Design;

/// Code that runs with whichever table design a run chose: [`with_design`] calls
/// [`WithTable::run`] with that design's table type. The designs stay in the released binary
/// (researchers compare them with it) behind this one dispatch.
pub trait WithTable<S: Fold> {
    /// What the code returns.
    type Output;
    /// Runs with table type `T`.
    fn run<T: FuncTable<S>>(self) -> Self::Output;
}

/// Runs `code` with the table type of `design`.
pub fn with_design<S: Fold, W: WithTable<S>>(design: Design, code: W) -> W::Output {
    match design {
        Design::Shared => code.run::<SharedTable<S>>(),
        Design::Dashmap => code.run::<DashmapTable<S>>(),
        Design::SaveMerge => code.run::<SaveMergeTable<S>>(),
        Design::Private => code.run::<PrivateTable<S>>(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::functions::table::contract::{expected, random_plan, run, Inst};

    #[test]
    fn designs_agree_under_threads() {
        let (seeds, saves) = if cfg!(miri) {
            (100..103, 30)
        } else {
            (100..120, 3000)
        };
        for seed in seeds {
            let (owners, entries) = (2 + seed as usize % 4, [2, 17, 1000][seed as usize % 3]);
            let plan = random_plan(seed, owners, saves, entries);
            let shared = run::<SharedTable<Vec<Inst>>>(entries as usize, &plan);
            let dashmap = run::<DashmapTable<Vec<Inst>>>(entries as usize, &plan);
            let save_merge = run::<SaveMergeTable<Vec<Inst>>>(entries as usize, &plan);
            let private = run::<PrivateTable<Vec<Inst>>>(entries as usize, &plan);
            assert_eq!(shared, dashmap, "seed {seed}");
            assert_eq!(shared, save_merge, "seed {seed}");
            assert_eq!(shared, private, "seed {seed}");
            assert_eq!(shared, expected(entries as usize, &plan), "seed {seed}");
        }
    }
}
