//! The records the dedup reads, checked before any phase relies on them: laid out as their
//! kinds say, known kinds, every referenced id below the type count (the base's records too,
//! since equivalence checks walk into the base). [`Recs`] holds them by id, with each one's
//! kind, for the whole dedup.

use crate::btf::kinds::{kind, Kind};
use crate::btf::store::{self, Rec, Store};
use crate::btf::types::for_each_type_id_word;
use crate::btf::Btf;
use crate::error::{DedupError, RecordError, Result};
use crate::sync::AtomicU32;

use super::entry::{new_entry, MAX_TYPES, UNPROCESSED};
use super::par;

/// Checks what the phases rely on in the own records — laid out as their kinds say, known
/// kinds, every referenced id (in libbpf's IDS field order, FWD's `type` included) below the
/// type count — in parallel. An error names the lowest bad id.
pub(super) fn check_own(btf: &Btf, threads: usize) -> Result<()> {
    let (start, cnt) = (btf.start_id(), btf.type_cnt());
    let mut covered = vec![0usize; (cnt - start) as usize];
    let checked = par::for_chunks_mut(&mut covered, threads, |first, chunk| {
        for (i, words) in chunk.iter_mut().enumerate() {
            let id = start + (first + i) as u32;
            let t = btf.type_by_id(id).ok_or(DedupError::Missing { id })?;
            check_record(id, t.words, cnt)?;
            *words = t.words.len();
        }
        Ok(())
    });
    checked.into_iter().collect::<Result<()>>()?;
    if covered.iter().sum::<usize>() != btf.type_words().len() {
        return Err(DedupError::NotCovered.into());
    }
    Ok(())
}

/// A store of `void` and every record of `btf`'s base (all levels flattened, raw), to which
/// `btf`'s own records can be pushed for [`dedup_store`]. The base records are checked as
/// [`dedup`] checks them: equivalence checks walk into the base.
pub fn store_with_base(btf: &Btf) -> Result<Store> {
    let Some(base) = btf.base() else {
        return Ok(Store::new());
    };
    let cnt = base.type_cnt();
    let mut levels = vec![base];
    while let Some(below) = levels.last().and_then(|b| b.base()) {
        levels.push(below);
    }
    let words: usize = levels.iter().map(|l| l.type_words().len()).sum();
    let mut flat = Vec::with_capacity(3 + words);
    flat.extend_from_slice(&[0u32; 3]);
    let mut offs = Vec::with_capacity(cnt as usize);
    offs.push(0);
    for level in levels.into_iter().rev() {
        for (i, t) in level.own_types().enumerate() {
            check_record(level.start_id() + i as u32, t.words, cnt)?;
            offs.push(flat.len() as u32);
            flat.extend_from_slice(t.words);
        }
    }
    Ok(Store::with_base(flat, offs))
}

fn check_record(id: u32, w: &[u32], cnt: u32) -> Result<(), RecordError> {
    let kind = store::check_shape(id, w, false)?;
    // One comparison on the common path; the first bad id is looked for only on the error path.
    let mut highest = 0;
    for_each_type_id_word(w[1], |i| highest = highest.max(w[i]));
    if highest < cnt {
        return Ok(());
    }
    let mut first_bad = None;
    for_each_type_id_word(w[1], |i| {
        if w[i] >= cnt {
            first_bad.get_or_insert(w[i]);
        }
    });
    Err(RecordError::RefPastEnd {
        id,
        kind,
        target: first_bad.unwrap_or(highest),
        last: cnt - 1,
    })
}

/// Every type record, base and own, by id; fixed once dedup starts, so shared with the
/// thread that orders the reference types. (Each one's kind, which most per-id decisions need
/// alone, is kept in its `map` entry: `entry.rs`.)
pub(crate) struct Recs {
    pub(super) store: Store,
}

impl Recs {
    /// The dedup's initial `map` (`btf_dedup_new`), each entry holding its record's kind:
    /// everything unprocessed, except VAR and DATASEC, which are never deduplicated and map
    /// to themselves from the start. Checks on the way that every id an own record references
    /// (FWD's `type` word included, as in libbpf's IDS order) is below the type count, in
    /// parallel; the error names the lowest bad id. More types than the dedup takes are an
    /// error. The entries are written in place: no per-id array of kinds beside them (5 MB
    /// on a 7.3 kernel, at the dedup's peak).
    pub(super) fn entries_checked(
        store: &Store,
        start_id: u32,
        threads: usize,
    ) -> Result<Vec<AtomicU32>> {
        let cnt = store.len();
        if cnt > MAX_TYPES {
            return Err(DedupError::TooManyTypes {
                count: cnt,
                max: MAX_TYPES,
            }
            .into());
        }
        let mut map = Vec::with_capacity(cnt as usize);
        map.resize_with(cnt as usize, || AtomicU32::new(0));
        let view = store.view();
        let checked = par::for_chunks_mut(&mut map, threads, |first, chunk| {
            for (i, entry) in chunk.iter_mut().enumerate() {
                let id = (first + i) as u32;
                let rec = view.rec(id);
                let kind = rec.kind();
                *entry = new_entry(kind, initial_value(id, kind));
                // FWD's `type` word is in its template, not among its ids: always read.
                if id >= start_id && (kind == kind::FWD || !rec.ids_below_by_width(cnt)) {
                    check_ids(id, rec, cnt)?;
                }
            }
            Ok(())
        });
        checked.into_iter().collect::<Result<()>>()?;
        Ok(map)
    }

    /// The record of `id`.
    #[inline(always)]
    pub(crate) fn rec(&self, id: u32) -> Rec<'_> {
        self.store.rec(id)
    }

    /// One past the highest id.
    pub(crate) fn type_cnt(&self) -> u32 {
        self.store.len()
    }
}

/// `id`'s map value before any phase: `void` and the types never deduplicated (VAR, DATASEC)
/// are their own, every other type is unprocessed.
fn initial_value(id: u32, kind: u32) -> u32 {
    match (id, kind) {
        (0, _) => 0,
        (_, kind::VAR | kind::DATASEC) => id,
        _ => UNPROCESSED,
    }
}

/// `id`'s referenced ids, FWD's `type` word included, are below `cnt`.
fn check_ids(id: u32, rec: Rec<'_>, cnt: u32) -> Result<(), RecordError> {
    let mut bad = None;
    let mut k = 0;
    store::for_each_id_word(rec.info(), |_| {
        let t = rec.id(k);
        k += 1;
        if t >= cnt {
            bad.get_or_insert(t);
        }
    });
    if rec.kind() == kind::FWD && rec.tpl()[2] >= cnt {
        bad.get_or_insert(rec.tpl()[2]);
    }
    match bad {
        None => Ok(()),
        Some(target) => Err(RecordError::RefPastEnd {
            id,
            kind: Kind::from_u32(rec.kind()),
            target,
            last: cnt - 1,
        }),
    }
}
