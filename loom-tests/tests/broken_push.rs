//! (e) The broken push (load + store instead of CAS) must make loom fail: proof that the
//! models can catch a lost node. Its own test binary, because `BROKEN_PUSH` is process-global.
#![cfg(dwarf2btf_loom)]

use std::sync::atomic::Ordering;

use dwarf2btf::functions::table::{shared::SharedTable, shared::BROKEN_PUSH, FuncTable};
use dwarf2btf::sync::Arc;
use loom_tests::{expect_failure, join_and_check, spawn_savers, Inst, Plan};

#[test]
fn loom_catches_the_lost_node() {
    const PLAN: Plan = &[&[0], &[0]];
    BROKEN_PUSH.store(true, Ordering::Relaxed);
    expect_failure(
        "broken push, same entry, 2 owners",
        "a node is lost or duplicated",
        || {
            let table = Arc::new(SharedTable::<Vec<Inst>>::new(1, 2));
            let savers = spawn_savers(&table, PLAN);
            join_and_check(table, savers, 1, PLAN);
        },
    );
    BROKEN_PUSH.store(false, Ordering::Relaxed);
}
