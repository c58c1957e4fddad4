//! (e) The broken push (load + store instead of CAS) must make loom fail: proof that the
//! models can catch a lost node. Its own test binary, because `BROKEN_PUSH` is process-global.
#![cfg(loom)]

use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::Ordering;

use dwarf2btf::functions::table::{shared::SharedTable, shared::BROKEN_PUSH, FuncTable};
use dwarf2btf::sync::Arc;
use loom_tests::{explore, join_and_check, spawn_savers, Inst, Plan};

#[test]
fn loom_catches_the_lost_node() {
    const PLAN: Plan = &[&[0], &[0]];
    BROKEN_PUSH.store(true, Ordering::Relaxed);
    let quiet = panic::take_hook();
    panic::set_hook(Box::new(|_| {}));
    let result = panic::catch_unwind(AssertUnwindSafe(|| {
        explore("broken push, same entry, 2 owners", || {
            let table = Arc::new(SharedTable::<Vec<Inst>>::new(1, 2));
            let savers = spawn_savers(&table, PLAN);
            join_and_check(table, savers, 1, PLAN);
        })
    }));
    panic::set_hook(quiet);
    BROKEN_PUSH.store(false, Ordering::Relaxed);
    let message = match result {
        Ok(()) => panic!("loom explored every interleaving and found no lost node"),
        Err(payload) => payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default(),
    };
    assert!(
        message.contains("a node is lost or duplicated"),
        "loom failed for another reason: {message}"
    );
}
