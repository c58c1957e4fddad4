//! loom models of the pipeline's per-owner saver locks (`dwarf2btf::pipeline::owners`): an
//! owner's saver handed from one thread to another under its lock, while a third thread saves
//! as another owner into the same list. The lock is `dwarf2btf::sync::Mutex` (loom's under
//! loom, `parking_lot`'s in production), so loom orders the two threads' uses of the saver
//! (for the shared table: the folds in the owner's nodes, the arena) and checks every cell.
#![cfg(dwarf2btf_loom)]

use dwarf2btf::functions::table::{
    private::PrivateTable, save_merge::SaveMergeTable, shared::SharedTable,
};
use loom_tests::{explore, owner_handover, Inst};

#[test]
fn shared_owner_handover() {
    explore(
        "owner hand-over, shared",
        owner_handover::<SharedTable<Vec<Inst>>>,
    );
}

#[test]
fn save_merge_and_private_owner_handover() {
    explore(
        "owner hand-over, save-merge",
        owner_handover::<SaveMergeTable<Vec<Inst>>>,
    );
    explore(
        "owner hand-over, private",
        owner_handover::<PrivateTable<Vec<Inst>>>,
    );
}
