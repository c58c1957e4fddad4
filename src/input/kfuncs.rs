//! kfunc discovery: which ELF functions are kfuncs, and their `KF_*` flags, read from the
//! `.BTF_ids` section as pahole's `btf_encoder__collect_kfuncs` reads it.
//!
//! The kernel's `BTF_KFUNCS_START(set)` emits, in `.BTF_ids`, a `struct btf_id_set8
//! { u32 cnt; u32 flags; struct { u32 id; u32 flags; } pairs[]; }` labelled
//! `__BTF_ID__set8__<set>` (its `st_size` covers the pairs), and each `BTF_ID_FLAGS(func, f,
//! KF_...)` labels one pair `__BTF_ID__func__<f>__<N>`. The ids are still 0 before
//! `resolve_btfids` runs; the flags are already there.
//!
//! 1. Every symbol in `.BTF_ids` named `__BTF_ID__set8__*` whose set's `flags` has
//!    `BTF_SET8_KFUNCS` (bit 0) gives a range `[st_value, st_value + st_size)`.
//! 2. Every symbol in `.BTF_ids` named `__BTF_ID__func__<f>__<N>` whose `st_value` lies in a
//!    range marks the ELF function `<f>` (when there is one) as a kfunc, with the `flags` word
//!    of its pair.
//!
//! Words are read in the ELF's byte order. Addresses are `st_value - sh_addr`: for ET_REL
//! inputs both are section-relative (`sh_addr` is 0), as in pahole, which opens the file with
//! plain libelf here. No `.symtab` or no `.BTF_ids` means there is nothing to do.
//!
//! Differences from pahole: a set symbol whose 8-byte header does not fit the section is
//! reported and ignored (pahole checks only its first byte and may read past the section);
//! everything else, including the fatal error for a pair outside the section, is the same.

use crate::btf::Endian;
use crate::error::{Error, Result};
use crate::input::elf::Elf;
use crate::input::symbols::ElfFunctions;

/// `BTF_SET8_KFUNCS`.
pub const BTF_SET8_KFUNCS: u32 = 1 << 0;
/// The section the kernel's `BTF_ID*` macros emit into.
pub const BTF_IDS_SECTION: &str = ".BTF_ids";
const SET8_PREFIX: &str = "__BTF_ID__set8__";
const FUNC_PREFIX: &str = "__BTF_ID__func__";

/// A symbol of `.BTF_ids`: name, `st_value`, `st_size`.
type IdSym<'a> = (&'a str, u64, u64);

/// Marks the kfuncs of `funcs` from `elf`'s `.BTF_ids`. Returns the warnings pahole prints
/// (to stderr, unconditionally) for set symbols outside the section.
pub fn collect_kfuncs(elf: &Elf<'_>, funcs: &mut ElfFunctions) -> Result<Vec<String>> {
    if !elf.has_symtab() {
        return Ok(Vec::new());
    }
    let Some(sec) = elf
        .sections()
        .into_iter()
        .find(|s| s.name == BTF_IDS_SECTION)
    else {
        return Ok(Vec::new());
    };
    let Some(data) = elf.section_data(BTF_IDS_SECTION)? else {
        return Ok(Vec::new());
    };
    let syms: Vec<IdSym<'_>> = elf
        .symbols()
        .filter(|s| s.section == Some(sec.index))
        .map(|s| (s.name, s.value, s.size))
        .collect();
    let marks =
        find_kfuncs(&data, sec.addr, elf.endian, &syms).map_err(|reason| Error::BadSection {
            path: elf.path().to_path_buf(),
            section: BTF_IDS_SECTION.into(),
            reason,
        })?;
    for (name, flags) in marks.kfuncs {
        if let Some(i) = funcs.find(name.as_bytes()) {
            funcs.mark_kfunc(i, flags);
        }
    }
    Ok(marks.warnings)
}

/// What the two passes found: `(function name, pair flags)` in symbol order, and warnings.
#[derive(Debug, Default, PartialEq, Eq)]
struct Marks<'a> {
    kfuncs: Vec<(&'a str, u32)>,
    warnings: Vec<String>,
}

/// The `u32` at section offset `off`, if it lies inside `data`.
fn read_u32(data: &[u8], off: u64, endian: Endian) -> Option<u32> {
    endian.u32_at(data, usize::try_from(off).ok()?)
}

/// The two passes over the `.BTF_ids` symbols. `Err` is pahole's fatal "kfunc offset outside
/// section".
fn find_kfuncs<'a>(
    data: &[u8],
    sh_addr: u64,
    endian: Endian,
    syms: &[IdSym<'a>],
) -> std::result::Result<Marks<'a>, String> {
    let mut marks = Marks::default();
    let mut ranges: Vec<(u64, u64)> = Vec::new();
    for &(name, value, size) in syms {
        if !name.starts_with(SET8_PREFIX) {
            continue;
        }
        // struct btf_id_set8 { u32 cnt; u32 flags; ... }
        let flags = value
            .checked_sub(sh_addr)
            .and_then(|off| read_u32(data, off.checked_add(4)?, endian));
        match flags {
            Some(flags) if flags & BTF_SET8_KFUNCS != 0 => {
                ranges.push((value, value.saturating_add(size)))
            }
            Some(_) => {}
            None => marks
                .warnings
                .push(format!("is_sym_kfunc_set: symbol '{name}' out of bounds")),
        }
    }
    for &(name, value, _) in syms {
        let Some(func) = func_name(name) else {
            continue;
        };
        if !ranges
            .iter()
            .any(|&(start, end)| start <= value && value < end)
        {
            continue;
        }
        // struct btf_id_and_flag { u32 id; u32 flags; }
        let flags = value
            .checked_sub(sh_addr)
            .and_then(|off| read_u32(data, off.checked_add(4)?, endian))
            .ok_or_else(|| format!("kfunc '{func}' offset outside section '{BTF_IDS_SECTION}'"))?;
        marks.kfuncs.push((func, flags));
    }
    Ok(marks)
}

/// pahole's `get_func_name`: `__BTF_ID__func__vfs_close__1` → `vfs_close`. The rest after
/// the prefix must contain `__`, and its last `_` must follow another `_`; the name is what
/// precedes that `__`.
pub fn func_name(sym: &str) -> Option<&str> {
    let rest = sym.strip_prefix(FUNC_PREFIX)?;
    if !rest.contains("__") {
        return None;
    }
    let end = rest.rfind('_')?;
    if end == 0 || rest.as_bytes()[end - 1] != b'_' {
        return None;
    }
    Some(&rest[..end - 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn func_names_like_get_func_name() {
        assert_eq!(func_name("__BTF_ID__func__vfs_close__1"), Some("vfs_close"));
        assert_eq!(func_name("__BTF_ID__func__a__b__12"), Some("a__b"));
        assert_eq!(func_name("__BTF_ID__func__foo__"), Some("foo"));
        assert_eq!(func_name("__BTF_ID__func___"), None);
        assert_eq!(func_name("__BTF_ID__func__foo__1_2"), None);
        assert_eq!(func_name("__BTF_ID__func__foo_1"), None);
        assert_eq!(func_name("__BTF_ID__struct__foo__1"), None);
        assert_eq!(func_name("__BTF_ID__func____"), Some(""));
    }

    /// A set8 with flags `set_flags` at `base`, then `pairs` as (id, flags) words.
    fn blob(endian: Endian, set_flags: u32, pairs: &[u32]) -> Vec<u8> {
        let mut words = vec![pairs.len() as u32 / 2, set_flags];
        words.extend_from_slice(pairs);
        words
            .iter()
            .flat_map(|w| match endian {
                Endian::Little => w.to_le_bytes(),
                Endian::Big => w.to_be_bytes(),
            })
            .collect()
    }

    #[test]
    fn pairs_inside_kfunc_sets_are_marked() {
        for endian in [Endian::Little, Endian::Big] {
            let mut data = blob(endian, BTF_SET8_KFUNCS, &[0, 0x11, 0, 0x22]);
            // A second set without the KFUNCS flag, at 0x1000 + 24.
            data.extend(blob(endian, 0, &[0, 0x33]));
            let base = 0x1000;
            let syms = [
                ("__BTF_ID__set8__a", base, 24),
                ("__BTF_ID__func__f__1", base + 8, 4),
                ("__BTF_ID__func__g__2", base + 16, 4),
                ("__BTF_ID__set8__b", base + 24, 16),
                ("__BTF_ID__func__h__3", base + 32, 4),
            ];
            let marks = find_kfuncs(&data, base, endian, &syms).unwrap();
            assert_eq!(marks.kfuncs, [("f", 0x11), ("g", 0x22)]);
            assert!(marks.warnings.is_empty());
        }
    }

    #[test]
    fn out_of_bounds_sets_warn_and_pairs_fail() {
        let data = blob(Endian::Little, BTF_SET8_KFUNCS, &[0, 1]);
        let syms = [("__BTF_ID__set8__a", 100, 16), ("__BTF_ID__set8__b", 0, 64)];
        let marks = find_kfuncs(&data, 0, Endian::Little, &syms).unwrap();
        assert_eq!(marks.warnings.len(), 1);
        // A func symbol inside the (too long) range of `b` but past the data: fatal.
        let syms = [
            ("__BTF_ID__set8__b", 0, 64),
            ("__BTF_ID__func__f__1", 40, 4),
        ];
        assert!(find_kfuncs(&data, 0, Endian::Little, &syms).is_err());
        // Below sh_addr: not a set, no panic.
        let syms = [("__BTF_ID__set8__c", 0, 8)];
        let marks = find_kfuncs(&data, 0x10, Endian::Little, &syms).unwrap();
        assert_eq!(marks.warnings.len(), 1);
    }
}
