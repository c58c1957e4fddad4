//! The hooks through which a caller watches chosen functions go through a normal encoding run
//! (`dwarf2btf why`): every DWARF subprogram of a watched name and what became of it (the
//! encode stage's [`EncodeWatch`], which this trait extends), every instance saved, and the
//! final pass's decision. The run's own code calls them at the points where it decides, so
//! what a watcher reports is what the run did.

use crate::encode::chunk::EncodeWatch;
use crate::functions::decision::Decision;
use crate::functions::instance::FuncInstance;

/// A watcher of the functions of some names, from the DWARF subprograms the encode stage meets
/// ([`EncodeWatch`]) to the final pass's decision. Workers call it concurrently.
pub trait FuncWatch: EncodeWatch {
    /// An instance saved of a watched function (its type ids are chunk-local).
    fn saved(&self, instance: &FuncInstance);

    /// The final pass's decision on a watched function that has saved instances.
    fn decided(&self, decision: &Decision<'_, '_>);
}
