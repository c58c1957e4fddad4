//! The ELF functions table: every `STT_FUNC` symbol of `.symtab`, grouped by the name DWARF
//! knows it by, as pahole's `elf_functions__collect` builds it.
//!
//! The rules, from pahole HEAD (`btf_encoder.c`):
//! - every `STT_FUNC` symbol counts, whatever its binding (local, global, weak) and section;
//! - a symbol whose name contains `.cold` or `.part` anywhere after its first `.` is dropped
//!   (`str_contains_non_fn_suffix`: `foo.cold`, `foo.part.0`, `foo.isra.0.cold`): those are
//!   fragments of a function, not functions;
//! - the key is the name cut at its first `.`, so `foo`, `foo.isra.0`, `foo.constprop.0` and
//!   `foo.llvm.123` all land in the entry `foo`, each symbol with its own name and address;
//! - entries are sorted by key in byte order (`strcmp`), and looked up by binary search
//!   (`btf_encoder__find_function`);
//! - an entry whose symbols have more than one distinct address is *ambiguous*: the encoder
//!   cannot tell which body a DWARF function describes (`elf_function__has_ambiguous_address`).
//!
//! Deliberate differences from pahole, both in the ambiguity flag:
//! - pahole computes the flag only when its merge loop moves on to the next name, so the
//!   alphabetically **last** entry never gets it (an off-by-one). Here every entry gets it.
//! - pahole's check treats an address of 0 as "none seen yet", so `[0, X]` is not ambiguous
//!   while `[X, 0]` is, depending on qsort's order. Here 0 is an address like any other. Only
//!   relocatable inputs have functions at 0 (section-relative `st_value`), and pahole's
//!   address matching does not work for those anyway.
//!
//! Symbols keep their `.symtab` order inside an entry (the sort is stable).

use std::hash::Hasher;

use hashbrown::HashTable;
use rustc_hash::FxHashMap;

use crate::error::{Error, Result};
use crate::input::elf::{Elf, STT_FUNC};

/// One symbol of an [`ElfFunction`]: its full name (suffix included) and its `st_value`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ElfFunctionSym<'a> {
    /// The symbol's full name (`foo.isra.0`).
    pub name: &'a str,
    /// Its `st_value`.
    pub addr: u64,
}

/// The symbols sharing one name before the first `.`, as [`ElfFunctions::get`] shows them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ElfFunction<'t> {
    /// The symbol name cut at its first `.` (what DWARF calls the function).
    pub name: &'t str,
    /// Every qualifying symbol with that base name, in `.symtab` order.
    pub syms: &'t [ElfFunctionSym<'t>],
    /// More than one distinct address among `syms`.
    pub ambiguous_addr: bool,
    /// Listed in a `BTF_SET8` with the `BTF_SET8_KFUNCS` flag (see [`crate::input::kfuncs`]).
    pub kfunc: bool,
    /// The `KF_*` flags of its `BTF_ID_FLAGS` pair.
    pub kfunc_flags: u32,
}

impl<'t> ElfFunction<'t> {
    /// The first symbol at `addr` whose name has a `.` suffix (`foo.isra.0`): the name
    /// `true_signature` encodes a clone's prototype under.
    pub fn dot_symbol_at(&self, addr: u64) -> Option<&'t ElfFunctionSym<'t>> {
        self.syms
            .iter()
            .find(|s| s.addr == addr && s.name.contains('.'))
    }
}

/// The ELF functions table, sorted by name.
///
/// An entry is held as where its symbols start in one flat list, ordered entry after entry:
/// its name is its first symbol's cut at the `.`, its symbol count the distance to the next
/// entry's start, its ambiguity a comparison of those symbols' addresses. A kernel has
/// 50,000–110,000 entries (6.12's `__pfx_` symbols double them), held through the whole
/// encoding: 4 bytes each, where a struct with the name and flags cost 32.
#[derive(Clone, Debug, Default)]
pub struct ElfFunctions<'a> {
    /// Per entry, where its symbols start in `syms`; then `syms.len()`.
    starts: Vec<u32>,
    /// Every entry's symbols, entry after entry.
    syms: Vec<ElfFunctionSym<'a>>,
    /// The kfunc entries (a few hundred) and the `KF_*` flags of each.
    kfuncs: FxHashMap<u32, u32>,
    /// Entry indices by a hash of their names: every DWARF function is looked up, and a
    /// binary search over the names costs a cache miss or two per step.
    by_name: HashTable<u32>,
}

impl PartialEq for ElfFunctions<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.starts == other.starts && self.syms == other.syms && self.kfuncs == other.kfuncs
    }
}

impl Eq for ElfFunctions<'_> {}

fn name_hash(name: &[u8]) -> u64 {
    let mut h = rustc_hash::FxHasher::default();
    h.write(name);
    h.finish()
}

/// True for the names `str_contains_non_fn_suffix` rejects: `.cold` or `.part` after the
/// first `.` (a substring search, as pahole's `strstr`).
pub fn has_non_fn_suffix(name: &str) -> bool {
    match name.find('.') {
        Some(dot) => {
            let suffix = &name[dot..];
            suffix.contains(".cold") || suffix.contains(".part")
        }
        None => false,
    }
}

/// The name cut at its first `.`.
pub fn base_name(name: &str) -> &str {
    name.split_once('.').map_or(name, |(base, _)| base)
}

impl<'a> ElfFunctions<'a> {
    /// Builds the table from `.symtab`. An ELF without `.symtab` is an error, as it is for
    /// pahole (its encoder cannot be created); the error is `Error::BadSection` for
    /// `.symtab`. Use [`ElfFunctions::collect_opt`] to tell that case apart.
    pub fn collect(elf: &Elf<'a>) -> Result<Self> {
        Self::collect_opt(elf)?.ok_or_else(|| Error::BadSection {
            path: elf.path().to_path_buf(),
            section: ".symtab".into(),
            reason: "no symbol table: the ELF functions table cannot be built".into(),
        })
    }

    /// Builds the table from `.symtab`; `Ok(None)` when the ELF has no `.symtab`.
    pub fn collect_opt(elf: &Elf<'a>) -> Result<Option<Self>> {
        if !elf.has_symtab() {
            return Ok(None);
        }
        Ok(Some(Self::from_symbols(elf.symbols().filter_map(|s| {
            (s.st_type == STT_FUNC).then_some((s.name, s.value))
        }))))
    }

    /// Builds the table from `(name, st_value)` pairs of `STT_FUNC` symbols in table order.
    pub fn from_symbols(syms: impl IntoIterator<Item = (&'a str, u64)>) -> Self {
        let mut flat: Vec<(&'a str, ElfFunctionSym<'a>)> = syms
            .into_iter()
            .filter(|(name, _)| !has_non_fn_suffix(name))
            .map(|(name, addr)| (base_name(name), ElfFunctionSym { name, addr }))
            .collect();
        // Stable: symbols of one entry stay in table order.
        flat.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        let mut starts = Vec::with_capacity(flat.chunk_by(|a, b| a.0 == b.0).count() + 1);
        let mut start = 0;
        for group in flat.chunk_by(|a, b| a.0 == b.0) {
            starts.push(start);
            start += group.len() as u32;
        }
        starts.push(start);
        // Not collected in place: that would keep `flat`'s larger allocation.
        let mut syms = Vec::with_capacity(flat.len());
        syms.extend(flat.into_iter().map(|(_, sym)| sym));
        let mut table = ElfFunctions {
            starts,
            syms,
            kfuncs: FxHashMap::default(),
            by_name: HashTable::new(),
        };
        let mut by_name = HashTable::with_capacity(table.len());
        for i in 0..table.len() as u32 {
            by_name.insert_unique(name_hash(table.name_of(i).as_bytes()), i, |&i| {
                name_hash(table.name_of(i).as_bytes())
            });
        }
        table.by_name = by_name;
        table
    }

    /// The index of the entry named `name` (a DWARF function name, without suffix).
    pub fn find(&self, name: &[u8]) -> Option<u32> {
        self.by_name
            .find(name_hash(name), |&i| self.name_of(i).as_bytes() == name)
            .copied()
    }

    /// The entry at `index`.
    pub fn get(&self, index: u32) -> Option<ElfFunction<'_>> {
        (index < self.len() as u32).then(|| self.view(index))
    }

    /// Marks the entry at `index` a kfunc with `flags` (its `BTF_ID_FLAGS` word).
    pub fn mark_kfunc(&mut self, index: u32, flags: u32) {
        self.kfuncs.insert(index, flags);
    }

    /// All entries, sorted by name.
    pub fn entries(
        &self,
    ) -> impl ExactSizeIterator<Item = ElfFunction<'_>> + DoubleEndedIterator + '_ {
        (0..self.len() as u32).map(|i| self.view(i))
    }

    fn view(&self, index: u32) -> ElfFunction<'_> {
        let syms = self.syms_of(index);
        let kfunc_flags = self.kfuncs.get(&index);
        ElfFunction {
            name: base_name(syms[0].name),
            syms,
            ambiguous_addr: has_ambiguous_address(syms),
            kfunc: kfunc_flags.is_some(),
            kfunc_flags: kfunc_flags.copied().unwrap_or(0),
        }
    }

    /// The symbols of the entry at `index` (at least one).
    fn syms_of(&self, index: u32) -> &[ElfFunctionSym<'a>] {
        let i = index as usize;
        &self.syms[self.starts[i] as usize..self.starts[i + 1] as usize]
    }

    /// The name of the entry at `index`: its first symbol's, cut at the `.`.
    fn name_of(&self, index: u32) -> &'a str {
        base_name(self.syms[self.starts[index as usize] as usize].name)
    }

    /// Number of entries (pahole's `funcs->cnt`).
    pub fn len(&self) -> usize {
        self.starts.len().saturating_sub(1)
    }

    /// True when the ELF has no function symbol.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes the table holds: its entries, symbols and index.
    pub fn heap_bytes(&self) -> usize {
        self.starts.capacity() * std::mem::size_of::<u32>()
            + self.syms.capacity() * std::mem::size_of::<ElfFunctionSym<'_>>()
            + self.kfuncs.capacity() * (2 * std::mem::size_of::<u32>() + 1)
            + self.by_name.capacity() * (std::mem::size_of::<u32>() + 1)
    }
}

/// More than one distinct address (see the module documentation for how this differs from
/// pahole on address 0).
fn has_ambiguous_address(syms: &[ElfFunctionSym<'_>]) -> bool {
    syms.iter().any(|s| s.addr != syms[0].addr)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(syms: &[(&'static str, u64)]) -> ElfFunctions<'static> {
        ElfFunctions::from_symbols(syms.iter().copied())
    }

    #[test]
    fn suffixes_are_grouped_or_dropped() {
        let t = table(&[
            ("foo", 0x10),
            ("foo.cold", 0x90),
            ("foo.isra.0", 0x20),
            ("bar.part.1", 0x30),
            ("baz.isra.0.cold", 0x40),
            ("baz.constprop.0", 0x50),
            ("qux.llvm.1234", 0x60),
            ("cold.start", 0x70),
            ("x.partial", 0x80),
        ]);
        let names: Vec<_> = t.entries().map(|e| e.name).collect();
        assert_eq!(names, ["baz", "cold", "foo", "qux"]);
        let foo = t.get(t.find(b"foo").unwrap()).unwrap();
        assert_eq!(
            foo.syms,
            [
                ElfFunctionSym {
                    name: "foo",
                    addr: 0x10
                },
                ElfFunctionSym {
                    name: "foo.isra.0",
                    addr: 0x20
                }
            ]
        );
        assert!(foo.ambiguous_addr);
        assert!(!t.get(t.find(b"baz").unwrap()).unwrap().ambiguous_addr);
        assert_eq!(t.find(b"bar"), None);
        assert_eq!(t.find(b"x"), None);
    }

    #[test]
    fn sorted_like_strcmp_and_found_by_bsearch() {
        let t = table(&[
            ("b", 1),
            ("_a", 2),
            ("a_", 3),
            ("a", 4),
            ("B", 5),
            ("ab", 6),
        ]);
        let names: Vec<_> = t.entries().map(|e| e.name).collect();
        assert_eq!(names, ["B", "_a", "a", "a_", "ab", "b"]);
        for (i, n) in names.iter().enumerate() {
            assert_eq!(t.find(n.as_bytes()), Some(i as u32));
        }
        assert_eq!(t.find(b"aa"), None);
        assert_eq!(t.find(b""), None);
    }

    #[test]
    fn ambiguity_needs_distinct_addresses_even_for_the_last_entry() {
        // Same address twice (an alias): not ambiguous.
        let t = table(&[("f", 0x100), ("f", 0x100), ("zz", 0x200), ("zz", 0x300)]);
        assert!(!t.entries().next().unwrap().ambiguous_addr);
        // pahole never flags the alphabetically last entry; this table does.
        assert!(t.entries().nth(1).unwrap().ambiguous_addr);
        // Address 0 counts as an address.
        let t = table(&[("g", 0), ("g", 0x10)]);
        assert!(t.entries().next().unwrap().ambiguous_addr);
    }

    #[test]
    fn suffix_checks_start_at_the_first_dot() {
        assert!(has_non_fn_suffix("f.cold"));
        assert!(has_non_fn_suffix("f.isra.0.cold.1"));
        assert!(has_non_fn_suffix("f.partial"));
        assert!(!has_non_fn_suffix("cold_start"));
        assert!(!has_non_fn_suffix("f.constprop.0"));
        assert_eq!(base_name("f.constprop.0"), "f");
        assert_eq!(base_name(".hidden"), "");
        assert_eq!(base_name("plain"), "plain");
    }

    #[test]
    fn empty_table() {
        let t = table(&[]);
        assert!(t.is_empty());
        assert_eq!(t.find(b"x"), None);
    }
}
