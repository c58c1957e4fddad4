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

use std::fmt;
use std::hash::Hasher;

use hashbrown::HashTable;
use rustc_hash::{FxHashMap, FxHashSet};

use crate::error::{Error, Result};
use crate::input::elf::{Elf, STT_FUNC};

/// One symbol of an [`ElfFunction`]: its full name (suffix included) and its `st_value`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ElfFunctionSym<'t> {
    /// The symbol's full name (`foo.isra.0`).
    pub name: &'t str,
    /// Its `st_value`.
    pub addr: u64,
}

/// The symbols of one [`ElfFunction`], in `.symtab` order, read from the table's copy of
/// their names.
#[derive(Clone, Copy, Default)]
pub struct ElfFunctionSyms<'t> {
    /// The table's names, back to back, which `syms` hold positions in.
    names: &'t str,
    /// The entry's symbols.
    syms: &'t [Sym],
}

impl<'t> ElfFunctionSyms<'t> {
    /// Number of symbols.
    pub fn len(&self) -> usize {
        self.syms.len()
    }

    /// True when there is no symbol (never for an entry of the table).
    pub fn is_empty(&self) -> bool {
        self.syms.is_empty()
    }

    /// The symbols, in `.symtab` order.
    pub fn iter(
        &self,
    ) -> impl ExactSizeIterator<Item = ElfFunctionSym<'t>> + DoubleEndedIterator + 't {
        let names = self.names;
        self.syms.iter().map(move |s| s.view(names))
    }
}

impl PartialEq for ElfFunctionSyms<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.iter().eq(other.iter())
    }
}

impl Eq for ElfFunctionSyms<'_> {}

impl fmt::Debug for ElfFunctionSyms<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// The symbols sharing one name before the first `.`, as [`ElfFunctions::get`] shows them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ElfFunction<'t> {
    /// The symbol name cut at its first `.` (what DWARF calls the function).
    pub name: &'t str,
    /// Every qualifying symbol with that base name, in `.symtab` order.
    pub syms: ElfFunctionSyms<'t>,
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
    pub fn dot_symbol_at(&self, addr: u64) -> Option<ElfFunctionSym<'t>> {
        self.syms
            .iter()
            .find(|s| s.addr == addr && s.name.contains('.'))
    }
}

/// A symbol as the table holds it: where its name lies in the table's names, and its
/// `st_value`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Sym {
    addr: u64,
    name_start: u32,
    name_len: u32,
}

impl Sym {
    fn name(self, names: &str) -> &str {
        let start = self.name_start as usize;
        &names[start..start + self.name_len as usize]
    }

    fn view(self, names: &str) -> ElfFunctionSym<'_> {
        ElfFunctionSym {
            name: self.name(names),
            addr: self.addr,
        }
    }
}

/// The ELF functions table, sorted by name.
///
/// An entry is held as where its symbols start in one flat list, ordered entry after entry:
/// its name is its first symbol's cut at the `.`, its symbol count the distance to the next
/// entry's start, its ambiguity a comparison of those symbols' addresses. A kernel has
/// 50,000–110,000 entries (6.12's `__pfx_` symbols double them), held through the whole
/// encoding: 4 bytes each, where a struct with the name and flags cost 32.
///
/// The table owns a copy of its symbols' names, back to back in one string that each symbol
/// holds a position in (0.87 MB for the reference kernel's 43,675 symbols): every DWARF
/// function is looked up by name while the CUs are encoded, and names borrowed from the
/// input's mapping would fault its `.strtab` pages (2.5 MB there), dropped with the DWARF's,
/// back in batch after batch.
#[derive(Clone, Debug, Default)]
pub struct ElfFunctions {
    /// Per entry, where its symbols start in `syms`; then `syms.len()`.
    starts: Vec<u32>,
    /// Every entry's symbols, entry after entry.
    syms: Vec<Sym>,
    /// The symbols' names, back to back in `syms` order.
    names: Box<str>,
    /// The kfunc entries (a few hundred) and the `KF_*` flags of each.
    kfuncs: FxHashMap<u32, u32>,
    /// Entry indices by a hash of their names: every DWARF function is looked up, and a
    /// binary search over the names costs a cache miss or two per step.
    by_name: HashTable<u32>,
}

impl PartialEq for ElfFunctions {
    fn eq(&self, other: &Self) -> bool {
        self.starts == other.starts
            && self.syms == other.syms
            && self.names == other.names
            && self.kfuncs == other.kfuncs
    }
}

impl Eq for ElfFunctions {}

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

impl ElfFunctions {
    /// Builds the table from `.symtab`. An ELF without `.symtab` is an error, as it is for
    /// pahole (its encoder cannot be created); the error is `Error::BadSection` for
    /// `.symtab`. Use [`ElfFunctions::collect_opt`] to tell that case apart.
    pub fn collect(elf: &Elf<'_>) -> Result<Self> {
        Self::collect_opt(elf)?.ok_or_else(|| Error::BadSection {
            path: elf.path().to_path_buf(),
            section: ".symtab".into(),
            reason: "no symbol table: the ELF functions table cannot be built".into(),
        })
    }

    /// Builds the table from `.symtab`; `Ok(None)` when the ELF has no `.symtab`.
    pub fn collect_opt(elf: &Elf<'_>) -> Result<Option<Self>> {
        if !elf.has_symtab() {
            return Ok(None);
        }
        Ok(Some(Self::from_symbols(elf.symbols().filter_map(|s| {
            (s.st_type == STT_FUNC).then_some((s.name, s.value))
        }))))
    }

    /// Builds the table from `(name, st_value)` pairs of `STT_FUNC` symbols in table order,
    /// copying the names it keeps.
    pub fn from_symbols<'s>(syms: impl IntoIterator<Item = (&'s str, u64)>) -> Self {
        let mut flat: Vec<(&'s str, &'s str, u64)> = syms
            .into_iter()
            .filter(|(name, _)| !has_non_fn_suffix(name))
            .map(|(name, addr)| (base_name(name), name, addr))
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
        let (names, name_starts) = pack_names(flat.iter().map(|s| s.1));
        let syms = flat
            .iter()
            .zip(name_starts)
            .map(|(&(_, name, addr), name_start)| Sym {
                addr,
                name_start,
                name_len: name.len() as u32,
            })
            .collect();
        let mut table = ElfFunctions {
            starts,
            syms,
            names: names.into_boxed_str(),
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
        let syms = ElfFunctionSyms {
            names: &self.names,
            syms: self.syms_of(index),
        };
        let kfunc_flags = self.kfuncs.get(&index);
        ElfFunction {
            name: self.name_of(index),
            syms,
            ambiguous_addr: has_ambiguous_address(syms.syms),
            kfunc: kfunc_flags.is_some(),
            kfunc_flags: kfunc_flags.copied().unwrap_or(0),
        }
    }

    /// The symbols of the entry at `index` (at least one).
    fn syms_of(&self, index: u32) -> &[Sym] {
        let i = index as usize;
        &self.syms[self.starts[i] as usize..self.starts[i + 1] as usize]
    }

    /// The name of the entry at `index`: its first symbol's, cut at the `.`.
    fn name_of(&self, index: u32) -> &str {
        base_name(self.syms[self.starts[index as usize] as usize].name(&self.names))
    }

    /// Number of entries (pahole's `funcs->cnt`).
    pub fn len(&self) -> usize {
        self.starts.len().saturating_sub(1)
    }

    /// True when the ELF has no function symbol.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes the table holds: its entries, symbols, their names and index.
    pub fn heap_bytes(&self) -> usize {
        self.starts.capacity() * std::mem::size_of::<u32>()
            + self.syms.capacity() * std::mem::size_of::<Sym>()
            + self.names.len()
            + self.kfuncs.capacity() * (2 * std::mem::size_of::<u32>() + 1)
            + self.by_name.capacity() * (std::mem::size_of::<u32>() + 1)
    }
}

/// The prefix of the symbol that a kernel built with call padding (6.2 on, `CALL_PADDING`)
/// places before most functions: `__pfx_foo` before `foo`.
const PADDING_PREFIX: &str = "__pfx_";

/// The names, back to back, and where each starts (32-bit positions: a kernel's function
/// names total a few MB). A name `foo` and a name `__pfx_foo` share one copy, `__pfx_foo`,
/// whose tail is `foo`: on a 7.3 kernel that is 55,000 names and 1.2 MB fewer.
fn pack_names<'s>(names: impl Iterator<Item = &'s str> + Clone) -> (String, Vec<u32>) {
    let padded: FxHashSet<&str> = names
        .clone()
        .filter_map(|n| n.strip_prefix(PADDING_PREFIX))
        .collect();
    // Per function name of a pair: where its padding symbol's name starts.
    let mut pairs: FxHashMap<&str, u32> = FxHashMap::default();
    let mut out = String::new();
    let starts = names
        .map(|name| {
            let (function, skip) = match name.strip_prefix(PADDING_PREFIX) {
                Some(function) => (function, 0),
                None if padded.contains(name) => (name, PADDING_PREFIX.len() as u32),
                None => {
                    out.push_str(name);
                    return (out.len() - name.len()) as u32;
                }
            };
            let pair = *pairs.entry(function).or_insert_with(|| {
                out.push_str(PADDING_PREFIX);
                out.push_str(function);
                (out.len() - PADDING_PREFIX.len() - function.len()) as u32
            });
            pair + skip
        })
        .collect();
    (out, starts)
}

/// More than one distinct address (see the module documentation for how this differs from
/// pahole on address 0).
fn has_ambiguous_address(syms: &[Sym]) -> bool {
    syms.iter().any(|s| s.addr != syms[0].addr)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(syms: &[(&str, u64)]) -> ElfFunctions {
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
            foo.syms.iter().collect::<Vec<_>>(),
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
    fn names_outlive_the_bytes_they_were_read_from() {
        let mut strtab: Vec<String> = ["vfs_read", "do_sys_open.isra.0", "do_sys_open"]
            .map(String::from)
            .into();
        let t = ElfFunctions::from_symbols(strtab.iter().map(|s| s.as_str()).zip([1, 2, 2]));
        // The table must not borrow the source: it is overwritten, then freed.
        for s in &mut strtab {
            s.make_ascii_uppercase();
        }
        drop(strtab);
        let open = t.get(t.find(b"do_sys_open").unwrap()).unwrap();
        let syms: Vec<_> = open.syms.iter().map(|s| (s.name, s.addr)).collect();
        assert_eq!(syms, [("do_sys_open.isra.0", 2), ("do_sys_open", 2)]);
        assert_eq!(open.dot_symbol_at(2).unwrap().name, "do_sys_open.isra.0");
        assert_eq!(t.entries().nth(1).unwrap().name, "vfs_read");
        assert_eq!(t.find(b"DO_SYS_OPEN"), None);
    }

    #[test]
    fn heap_bytes_count_the_names() {
        let names = ["a".repeat(1000), "b".repeat(1000)];
        let short = table(&[("a", 1), ("b", 2)]);
        let long = table(&[(&names[0], 1), (&names[1], 2)]);
        assert_eq!(long.heap_bytes() - short.heap_bytes(), 2 * 999);
    }

    /// `foo` and `__pfx_foo` share one copy, whichever comes first in the sorted order,
    /// and every symbol still reads its own name.
    #[test]
    fn padding_symbols_share_their_functions_names() {
        let syms = [
            ("foo", 0x10),
            ("__pfx_foo", 0x0),
            ("Abc", 0x30),
            ("__pfx_Abc", 0x20),
            ("__pfx_only", 0x40),
            ("bar.isra.0", 0x60),
            ("__pfx_bar.isra.0", 0x50),
            ("__pfx___pfx_x", 0x70),
            ("__pfx_x", 0x80),
            ("plain", 0x90),
        ];
        let t = table(&syms);
        let mut read: Vec<(&str, u64)> = t
            .entries()
            .flat_map(|e| e.syms.iter().map(|s| (s.name, s.addr)).collect::<Vec<_>>())
            .collect();
        read.sort();
        let mut want = syms.to_vec();
        want.sort();
        assert_eq!(read, want);
        assert_eq!(
            t.get(t.find(b"__pfx_foo").unwrap()).unwrap().name,
            "__pfx_foo"
        );
        assert_eq!(t.get(t.find(b"foo").unwrap()).unwrap().name, "foo");
        let copies = "__pfx_foo__pfx_Abc__pfx_only__pfx_bar.isra.0__pfx___pfx_x__pfx_xplain";
        assert_eq!(t.names.len(), copies.len());
    }

    #[test]
    fn empty_table() {
        let t = table(&[]);
        assert!(t.is_empty());
        assert_eq!(t.find(b"x"), None);
    }
}
