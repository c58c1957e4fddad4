//! Phase 1: string deduplication (libbpf `btf_dedup_strings`).
//!
//! Runs only for BTF whose string section may hold duplicates or unused strings (parsed from
//! bytes). Every string reference of the own types is visited in id order and libbpf's STRS
//! field order (`name_off`, then member/enumerator/parameter names); the empty string and base
//! strings are left alone; in split BTF a string that exists in the base (found by exact
//! content, first occurrence, lower levels first — `btf__find_str` on the base) is rewritten to
//! the base offset; every other string is added to a fresh section, so the new section holds
//! exactly the referenced strings in first-reference order.

use rustc_hash::FxHashMap;

use super::hash::kind_of;
use crate::btf::kinds::Kind;
use crate::btf::strings::StringTable;
use crate::btf::Btf;
use crate::error::{RecordError, Result};

/// Marks an old string offset not rewritten yet.
const UNSEEN: u32 = u32::MAX;

/// Index of every string of every base level: content → absolute offset, first one wins.
fn base_index(base: &Btf) -> FxHashMap<&[u8], u32> {
    let mut levels = vec![base];
    while let Some(b) = levels.last().and_then(|b| b.base()) {
        levels.push(b);
    }
    let mut index = FxHashMap::default();
    for level in levels.iter().rev() {
        let data = level.strings().as_bytes();
        let mut off = 0usize;
        while off < data.len() {
            let end = data[off..]
                .iter()
                .position(|&b| b == 0)
                .map_or(data.len(), |e| off + e);
            index
                .entry(&data[off..end])
                .or_insert(level.start_str_off() + off as u32);
            off = end + 1;
        }
    }
    index
}

/// Rewrites every string reference of `btf`'s own types and replaces its string section.
pub(crate) fn dedup_strings(btf: &mut Btf) -> Result<()> {
    let base = btf.base().cloned();
    let start = btf.start_str_off();
    let start_id = btf.start_id();
    let index = base.as_deref().map(base_index);
    let (words, offs, strings) = btf.raw_parts_mut();
    let mut new = if base.is_none() {
        StringTable::new_base()
    } else {
        StringTable::new_split()
    };
    let old: &StringTable = strings;
    // New offset of each old offset already seen: every reference to the same old offset
    // names the same string, so it gets the same answer without hashing the string again.
    let mut memo = vec![UNSEEN; old.len()];
    let mut err = None;
    for (i, &o) in offs.iter().enumerate() {
        let o = o as usize;
        let end = offs.get(i + 1).map_or(words.len(), |&e| e as usize);
        let rec = &mut words[o..end];
        let Some(kind) = Kind::from_u32(kind_of(rec)) else {
            continue;
        };
        crate::btf::types::for_each_str_off_mut(kind, rec, |r| {
            let off = *r;
            if off == 0 || off < start || err.is_some() {
                return;
            }
            let local = (off - start) as usize;
            match memo.get(local) {
                Some(&m) if m != UNSEEN => {
                    *r = m;
                    return;
                }
                Some(_) => {}
                None => {
                    err = Some(off);
                    return;
                }
            }
            let s = old.get(off - start).unwrap_or_default();
            let new_off = match index.as_ref().and_then(|ix| ix.get(s)) {
                Some(&b) => b,
                None => start + new.add(s),
            };
            memo[local] = new_off;
            *r = new_off;
        });
        if let Some(off) = err {
            let id = start_id + i as u32;
            return Err(RecordError::StringPastEnd { id, off }.into());
        }
    }
    *strings = new;
    Ok(())
}
