//! The compact record store: type records held in about a third of their raw size, read in
//! place, for the BTF that exists only between encoding and deduplication.
//!
//! A record is split in two: its *template*, the record with its type-id fields zeroed (name,
//! info, size, member names and offsets, enumerators ...), and its type ids. A kernel's 3.4 M
//! pre-dedup records have only ~70,000 distinct templates (every CU repeats the same
//! structs), so each template is kept once, numbered in the order first seen, and a record is
//! its template's number followed by its ids, in 16-bit units. The number takes one unit when
//! below 2^14 (the templates the first CUs bring: `int`, anonymous pointers, the core structs,
//! which most records use) and two otherwise. An id is held as its 16-bit two's-complement
//! distance from the record's own id (a CU's types reference each other, so distances are
//! small); a record with an id too far for that holds all its ids as 32-bit words and is
//! marked *wide*.
//!
//! Equal templates have equal references, so libbpf's shallow struct equality (name, size,
//! member names and offsets) is one integer comparison, and a hash over a template's words is
//! a hash of the record's id-free fields.
//!
//! The type-id fields are those of libbpf's `BTF_FIELD_ITER_IDS` except FWD's `type` word,
//! which stays in the template (it is not a reference, and is 0 in every encoder's output).

mod positions;

use hashbrown::HashTable;
use positions::{Positions, PositionsView};
use rustc_hash::FxHasher;
use std::hash::{Hash, Hasher};

use super::kinds::{self, kind, Kind, MAX_NR_TYPES};
use crate::error::{LimitError, RecordError, Result};

/// In a record's first unit: the template number continues in the next unit.
const LONG: u16 = 0x8000;
/// In a record's first unit: the ids are 32-bit words (two units each).
const WIDE: u16 = 0x4000;
/// The template number bits of a record's first unit.
const NUMBER_BITS: u32 = 14;
/// Templates whose number fits in a record's first unit.
const SHORT_NUMBERS: u32 = 1 << NUMBER_BITS;
/// Template numbers fit in 14 + 16 bits.
const MAX_TEMPLATES: usize = 1 << (NUMBER_BITS + 16);

/// Type records by id, from id 0 (`void`) on: the base's raw, then the BTF's own compact.
pub struct Store {
    /// `void` (three zero words) and the base's records, raw, back to back: a module's base
    /// is vmlinux, whose 100,000 records would cost more to compact than the module itself.
    base: Vec<u32>,
    /// Per base id: where its record starts in `base`.
    base_offs: Vec<u32>,
    /// Every distinct template, back to back.
    tpls: Vec<u32>,
    /// Per template number: where the template starts in `tpls`.
    tpl_offs: Vec<u32>,
    /// The template numbers, by a hash of their words (for interning).
    index: HashTable<u32>,
    /// Per record, in id order: `LONG | WIDE | number` (the number's low 14 bits), the
    /// number's high 16 bits when `LONG`, then the ids (one unit each, or two when wide).
    data: Vec<u16>,
    /// Per id: where its record starts in `data`.
    offs: Positions,
    /// Reused while pushing: the record being split.
    scratch: Vec<u32>,
    ids: Vec<u32>,
}

/// One record of a [`Store`], read in place.
#[derive(Clone, Copy)]
pub struct Rec<'a> {
    tpl: &'a [u32],
    ids: &'a [u16],
    form: Form,
    id: u32,
    /// The template's number (meaningless for [`Form::Raw`]).
    key: u32,
}

/// How a [`Rec`] holds its ids.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Form {
    /// 16-bit distances from the record's id.
    Near,
    /// 32-bit ids, low half first.
    Wide,
    /// A raw base record: the ids are in its words.
    Raw,
}

impl<'a> Rec<'a> {
    /// The record's words, exactly as long as its kind and vlen say, with its type-id fields
    /// zeroed, or (in a base record) holding the ids: read ids with [`Rec::id`], and compare
    /// templates with functions that skip the id fields.
    #[inline(always)]
    pub fn tpl(self) -> &'a [u32] {
        self.tpl
    }

    /// The number of the record's template, unless it is a raw base record. Templates are
    /// interned: two compact records have equal template words exactly when their numbers
    /// are equal.
    #[inline(always)]
    pub fn template(self) -> Option<u32> {
        (self.form != Form::Raw).then_some(self.key)
    }

    /// The `info` word.
    #[inline(always)]
    pub fn info(self) -> u32 {
        self.tpl[1]
    }

    /// The raw kind.
    #[inline(always)]
    pub fn kind(self) -> u32 {
        kinds::info_kind(self.tpl[1])
    }

    /// The vlen.
    #[inline(always)]
    pub fn vlen(self) -> usize {
        kinds::info_vlen(self.tpl[1]) as usize
    }

    /// The `k`-th type id, in [`for_each_id_word`]'s order: the referenced type of a
    /// modifier, typedef, FUNC, VAR or DECL_TAG; an array's element then index type; a
    /// struct's member types; a FUNC_PROTO's return type then parameter types; a DATASEC's
    /// variables.
    #[inline(always)]
    pub fn id(self, k: usize) -> u32 {
        match self.form {
            Form::Near => self.id.wrapping_add(self.ids[k] as i16 as i32 as u32),
            Form::Wide => u32::from(self.ids[2 * k]) | u32::from(self.ids[2 * k + 1]) << 16,
            Form::Raw => self.tpl[id_word(self.tpl[1], k)],
        }
    }

    /// Whether every id the record holds is below `cnt`, told by its form alone: a near
    /// record's ids are within 2^15 of its own id, so when that is at least 2^15 from 0 and
    /// from `cnt`, none can be out of range and none needs reading.
    pub fn ids_below_by_form(self, cnt: u32) -> bool {
        const REACH: u32 = 1 << 15;
        self.form == Form::Near && self.id >= REACH && self.id < cnt.saturating_sub(REACH)
    }

    /// Appends the record's raw words to `out`.
    pub fn write_to(self, out: &mut Vec<u32>) {
        let start = out.len();
        out.extend_from_slice(self.tpl);
        if self.form == Form::Raw {
            return;
        }
        let rec = &mut out[start..];
        let mut k = 0;
        for_each_id_word(rec[1], |w| {
            rec[w] = self.id(k);
            k += 1;
        });
    }
}

/// A [`Store`]'s arrays borrowed as plain slices: a hot loop holding one keeps their base
/// pointers in registers.
#[derive(Clone, Copy)]
pub struct View<'a> {
    base: &'a [u32],
    base_offs: &'a [u32],
    tpls: &'a [u32],
    tpl_offs: &'a [u32],
    data: &'a [u16],
    offs: PositionsView<'a>,
}

impl<'a> View<'a> {
    /// The record of `id` (which must be below the store's length).
    #[inline(always)]
    pub fn rec(self, id: u32) -> Rec<'a> {
        let Some(own) = (id as usize).checked_sub(self.base_offs.len()) else {
            let start = self.base_offs[id as usize] as usize;
            let len = kinds::record_words_of(self.base[start + 1]);
            return Rec {
                tpl: &self.base[start..start + len],
                ids: &[],
                form: Form::Raw,
                id,
                key: 0,
            };
        };
        let o = self.offs.of(own as u32);
        let first = self.data[o];
        let low = u32::from(first) & (SHORT_NUMBERS - 1);
        let (key, ids) = if first & LONG == 0 {
            (low, o + 1)
        } else {
            (low | u32::from(self.data[o + 1]) << NUMBER_BITS, o + 2)
        };
        let start = self.tpl_offs[key as usize] as usize;
        let len = kinds::record_words_of(self.tpls[start + 1]);
        Rec {
            tpl: &self.tpls[start..start + len],
            ids: &self.data[ids..],
            form: if first & WIDE != 0 {
                Form::Wide
            } else {
                Form::Near
            },
            id,
            key,
        }
    }

    /// Where `id`'s record starts among the record units (16-bit) of the store.
    #[inline(always)]
    pub fn unit_of(self, id: u32) -> usize {
        self.offs.of(self.own_index(id))
    }

    /// The index among the compact records of `id`, which is not a base id.
    #[inline(always)]
    fn own_index(self, id: u32) -> u32 {
        id - self.base_offs.len() as u32
    }

    /// How many record units (16-bit) the store holds.
    pub fn units(self) -> usize {
        self.data.len()
    }

    /// The position entries of `id` (not a base id), its own and its block's (for
    /// prefetching).
    #[inline(always)]
    pub fn entries(self, id: u32) -> (&'a u8, &'a u32) {
        let own = self.own_index(id);
        (self.offs.entry(own), self.offs.block(own))
    }

    /// The first word of the template of `id`, which is not a base id (for prefetching).
    #[inline(always)]
    pub fn template_start(self, id: u32) -> &'a u32 {
        let o = self.offs.of(self.own_index(id));
        let first = self.data[o];
        let mut key = u32::from(first) & (SHORT_NUMBERS - 1);
        if first & LONG != 0 {
            key |= u32::from(self.data[o + 1]) << NUMBER_BITS;
        }
        &self.tpls[self.tpl_offs[key as usize] as usize]
    }

    /// The record unit at `unit` (for prefetching).
    #[inline(always)]
    pub fn unit(self, unit: usize) -> &'a u16 {
        &self.data[unit]
    }
}

/// Calls `f` with the word index of every type-id field a [`Store`] holds outside the
/// template, in order (libbpf's `BTF_FIELD_ITER_IDS` order, FWD's `type` word excepted).
#[inline(always)]
pub fn for_each_id_word(info: u32, mut f: impl FnMut(usize)) {
    let Some(k) = Kind::from_u32(kinds::info_kind(info)) else {
        return;
    };
    // The fixed words that are ids, then (entry words, the id's place in an entry).
    let (fixed, entries): (&[usize], _) = match k {
        Kind::Int | Kind::Float | Kind::Enum | Kind::Enum64 | Kind::Fwd => return,
        Kind::Array => (&[3, 4], None),
        Kind::Struct | Kind::Union => (&[], Some((3, 1))),
        Kind::Datasec => (&[], Some((3, 0))),
        Kind::FuncProto => (&[2], Some((2, 1))),
        Kind::Func | Kind::Var | Kind::DeclTag => (&[2], None),
        _ => {
            debug_assert!(k.is_modifier_like());
            (&[2], None)
        }
    };
    fixed.iter().for_each(|&w| f(w));
    if let Some((per, at)) = entries {
        let n = kinds::info_vlen(info) as usize;
        (0..n).for_each(|i| f(3 + per * i + at));
    }
}

/// The word index of the `k`-th id of [`for_each_id_word`] in a raw record with `info`.
#[inline]
fn id_word(info: u32, k: usize) -> usize {
    match kinds::info_kind(info) {
        kind::ARRAY => 3 + k,
        kind::STRUCT | kind::UNION => 3 + 3 * k + 1,
        kind::DATASEC => 3 + 3 * k,
        kind::FUNC_PROTO if k > 0 => 3 + 2 * (k - 1) + 1,
        _ => 2,
    }
}

fn hash_words(words: &[u32]) -> u64 {
    let mut h = FxHasher::default();
    words.hash(&mut h);
    h.finish()
}

impl Default for Store {
    fn default() -> Self {
        Store::new()
    }
}

impl Store {
    /// A store holding only `void` (id 0).
    pub fn new() -> Self {
        Store::with_base(vec![0; 3], vec![0])
    }

    /// A store holding `void` and a base: `base` is `void`'s three zero words and the base's
    /// records, back to back (checked: each as long as its kind says), `base_offs` where
    /// each id's record starts.
    pub fn with_base(base: Vec<u32>, base_offs: Vec<u32>) -> Self {
        Store {
            base,
            base_offs,
            tpls: Vec::new(),
            tpl_offs: Vec::new(),
            index: HashTable::new(),
            data: Vec::new(),
            offs: Positions::default(),
            scratch: Vec::new(),
            ids: Vec::new(),
        }
    }

    /// How many records there are (one past the highest id).
    pub fn len(&self) -> u32 {
        (self.base_offs.len() + self.offs.len()) as u32
    }

    /// Whether the store is empty (never: it holds `void`).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends `rec`, a whole record whose kind is known (or `void`'s three zero words), and
    /// returns its id.
    pub fn push(&mut self, rec: &[u32]) -> Result<u32> {
        let mut tpl = std::mem::take(&mut self.scratch);
        tpl.clear();
        tpl.extend_from_slice(rec);
        let pushed = self.push_in_place(&mut tpl, |t| t);
        self.scratch = tpl;
        pushed
    }

    /// [`Self::push`] of the record in `rec` with each of its type ids passed through `map`
    /// (which sees them in libbpf's field order), taking `rec` as scratch: its id fields are
    /// zero afterwards.
    pub fn push_in_place(
        &mut self,
        rec: &mut [u32],
        mut map: impl FnMut(u32) -> u32,
    ) -> Result<u32> {
        let id = self.len();
        if id > MAX_NR_TYPES {
            return Err(LimitError::TooManyTypes.into());
        }
        check_shape(id, rec, true)?;
        let mut ids = std::mem::take(&mut self.ids);
        ids.clear();
        for_each_id_word(rec[1], |w| {
            ids.push(map(rec[w]));
            rec[w] = 0;
        });
        let number = self.intern(rec)?;
        let near = |t: u32| i16::try_from(t.wrapping_sub(id) as i32).is_ok();
        let wide = !ids.iter().all(|&t| near(t));
        self.offs.push(self.data.len() as u32);
        let low = (number & (SHORT_NUMBERS - 1)) as u16 | if wide { WIDE } else { 0 };
        if number < SHORT_NUMBERS {
            self.data.push(low);
        } else {
            let high = (number >> NUMBER_BITS) as u16;
            self.data.extend_from_slice(&[low | LONG, high]);
        }
        for &t in &ids {
            if wide {
                self.data.extend_from_slice(&[t as u16, (t >> 16) as u16]);
            } else {
                self.data.push(t.wrapping_sub(id) as u16);
            }
        }
        if self.data.len() >= 1 << 31 {
            return Err(LimitError::StoreFull.into());
        }
        self.ids = ids;
        Ok(id)
    }

    /// The number of template `tpl`, added if new.
    fn intern(&mut self, tpl: &[u32]) -> Result<u32> {
        let h = hash_words(tpl);
        let (tpls, tpl_offs) = (&self.tpls, &self.tpl_offs);
        let words_of = |number: u32| {
            let off = tpl_offs[number as usize] as usize;
            &tpls[off..off + kinds::record_words_of(tpls[off + 1])]
        };
        if let Some(&number) = self.index.find(h, |&n| words_of(n) == tpl) {
            return Ok(number);
        }
        let number = self.tpl_offs.len();
        if number >= MAX_TEMPLATES || self.tpls.len() + tpl.len() > u32::MAX as usize {
            return Err(LimitError::TooManyTemplates.into());
        }
        self.tpl_offs.push(self.tpls.len() as u32);
        self.tpls.extend_from_slice(tpl);
        let (tpls, tpl_offs) = (&self.tpls, &self.tpl_offs);
        self.index.insert_unique(h, number as u32, |&n| {
            let off = tpl_offs[n as usize] as usize;
            hash_words(&tpls[off..off + kinds::record_words_of(tpls[off + 1])])
        });
        Ok(number as u32)
    }

    /// The record of `id` (which must be below [`Self::len`]).
    #[inline(always)]
    pub fn rec(&self, id: u32) -> Rec<'_> {
        self.view().rec(id)
    }

    /// The store's arrays, borrowed as plain slices (for hot loops).
    #[inline(always)]
    pub fn view(&self) -> View<'_> {
        View {
            base: &self.base,
            base_offs: &self.base_offs,
            tpls: &self.tpls,
            tpl_offs: &self.tpl_offs,
            data: &self.data,
            offs: self.offs.view(),
        }
    }

    /// The raw words of `id`'s record.
    pub fn words(&self, id: u32) -> Vec<u32> {
        let mut out = Vec::new();
        self.rec(id).write_to(&mut out);
        out
    }

    /// The raw records of ids `from..`, back to back, and the word offset of each.
    pub fn raw_records(&self, from: u32) -> (Vec<u32>, Vec<u32>) {
        let mut words = Vec::new();
        let mut offs = Vec::with_capacity(self.len().saturating_sub(from) as usize);
        for id in from..self.len() {
            offs.push(words.len() as u32);
            self.rec(id).write_to(&mut words);
        }
        (words, offs)
    }

    /// The bytes the store holds (its arrays' lengths; capacity aside).
    pub fn bytes(&self) -> usize {
        (self.base.len() + self.base_offs.len()) * 4
            + (self.tpls.len() + self.tpl_offs.len() + self.index.len()) * 4
            + self.data.len() * 2
            + self.offs.bytes()
    }

    /// Of [`Self::bytes`] (the template index aside), those resident now.
    pub fn resident(&self) -> usize {
        use crate::measure::resident_bytes;
        resident_bytes(&self.base)
            + resident_bytes(&self.base_offs)
            + resident_bytes(&self.tpls)
            + resident_bytes(&self.tpl_offs)
            + resident_bytes(&self.data)
            + self.offs.resident()
    }

    /// How many distinct templates there are.
    pub fn templates(&self) -> usize {
        self.index.len()
    }

    /// Frees the spare capacity of the arrays (once nothing more is pushed).
    pub fn shrink_to_fit(&mut self) {
        self.data.shrink_to_fit();
        self.offs.shrink_to_fit();
        self.tpls.shrink_to_fit();
        self.tpl_offs.shrink_to_fit();
        self.scratch = Vec::new();
        self.ids = Vec::new();
    }
}

/// Checks that record `id` is at least the three common words and exactly as long as its kind
/// and vlen say, and that its kind is known, or (when `void_ok`) `void`'s (kind 0, three
/// words); returns the kind, `None` for `void`'s.
pub(crate) fn check_shape(
    id: u32,
    rec: &[u32],
    void_ok: bool,
) -> Result<Option<Kind>, RecordError> {
    if rec.len() < 3 {
        return Err(RecordError::Truncated { id });
    }
    let k = kinds::info_kind(rec[1]);
    let kind = match Kind::from_u32(k) {
        None if void_ok && k == kind::UNKN => None,
        None => return Err(RecordError::UnknownKind { id, kind: k }),
        known => known,
    };
    let want = kind.map_or(3, |kind| kind.record_words(kinds::info_vlen(rec[1])));
    if rec.len() != want {
        let words = rec.len();
        return Err(RecordError::WrongLength {
            id,
            kind,
            words,
            want,
        });
    }
    Ok(kind)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    fn ptr(to: u32) -> Vec<u32> {
        vec![0, kinds::info(Kind::Ptr, 0, false), to]
    }

    fn strukt(name: u32, members: &[(u32, u32, u32)]) -> Vec<u32> {
        let mut w = vec![
            name,
            kinds::info(Kind::Struct, members.len() as u32, false),
            8,
        ];
        for &(n, t, off) in members {
            w.extend_from_slice(&[n, t, off]);
        }
        w
    }

    /// Wherever [`Rec::ids_below_by_form`] answers for a record, every id it holds is below
    /// the count: over 140,000 records referring back and forth by up to 40,000 ids, some past
    /// the end, it answers for most of them and for none that refers past the end.
    #[test]
    fn ids_below_by_form_never_answers_for_a_reference_past_the_end() {
        const COUNT: u32 = 140_000;
        let mut s = Store::new();
        s.push(&[0, 0, 0]).unwrap();
        for id in 1..COUNT {
            let reach = id.wrapping_mul(7_919) % 40_000;
            s.push(&ptr(if id % 2 == 0 { id - reach } else { id + reach }))
                .unwrap();
        }
        let (mut answered, mut past_end) = (0, 0);
        for id in 1..COUNT {
            let rec = s.rec(id);
            let beyond = rec.id(0) >= COUNT;
            past_end += u32::from(beyond);
            if rec.ids_below_by_form(COUNT) {
                assert!(!beyond, "[{id}] refers to [{}]", rec.id(0));
                answered += 1;
            }
        }
        assert!(
            past_end > 1_000 && answered > COUNT / 3,
            "{past_end} {answered}"
        );
    }

    #[test]
    fn records_read_back_as_pushed_near_and_far() {
        let mut s = Store::new();
        let recs = [
            vec![1, kinds::info(Kind::Int, 0, false), 4, 32],
            ptr(1),
            strukt(5, &[(6, 1, 0), (7, 2, 32)]),
            ptr(0),
            ptr(200_000),
            strukt(5, &[(6, 100_000, 0), (7, 3, 32)]),
            vec![9, kinds::info(Kind::Fwd, 0, true), 0],
        ];
        for r in &recs {
            s.push(r).unwrap();
        }
        assert_eq!(s.len(), 1 + recs.len() as u32);
        assert_eq!(s.words(0), vec![0, 0, 0]);
        for (i, r) in recs.iter().enumerate() {
            assert_eq!(&s.words(i as u32 + 1), r, "record {}", i + 1);
        }
        // The two structs differ only in member types: one template.
        assert_eq!(
            s.templates(),
            4,
            "int, one pointer template, one struct template, fwd"
        );
        assert_eq!(s.rec(6).id(0), 100_000);
        let (words, offs) = s.raw_records(1);
        assert_eq!(words, recs.concat());
        assert_eq!(offs.len(), recs.len());
    }

    #[test]
    fn template_numbers_past_one_unit_read_back() {
        let mut s = Store::new();
        let n = SHORT_NUMBERS + 100;
        for name in 1..=n {
            s.push(&[name, kinds::info(Kind::Int, 0, false), 4, 32])
                .unwrap();
            s.push(&ptr(2 * name - 1)).unwrap();
        }
        assert_eq!(
            s.templates() as u32,
            n + 1,
            "the ints, one pointer template"
        );
        for name in [1, SHORT_NUMBERS - 1, SHORT_NUMBERS, n] {
            let int = 2 * name - 1;
            assert_eq!(
                s.words(int),
                vec![name, kinds::info(Kind::Int, 0, false), 4, 32]
            );
            assert_eq!(s.words(int + 1), ptr(int));
        }
    }

    #[test]
    fn bad_shapes_are_refused() {
        let mut s = Store::new();
        let refused = |s: &mut Store, rec: &[u32]| match s.push(rec) {
            Err(Error::Record(e)) => e,
            other => panic!("expected a RecordError, got {other:?}"),
        };
        assert_eq!(refused(&mut s, &[0, 0]), RecordError::Truncated { id: 1 });
        let unknown = RecordError::UnknownKind { id: 1, kind: 31 };
        assert_eq!(refused(&mut s, &[0, 31 << 24, 0]), unknown);
        let short = refused(&mut s, &strukt(1, &[(1, 1, 0)])[..5]);
        assert_eq!(
            Error::from(short).to_string(),
            "invalid BTF: type [1] (STRUCT) has 5 words, its kind and vlen say 6"
        );
        let void_too_long = refused(&mut s, &[0, 0, 0, 0]);
        assert_eq!(
            void_too_long.to_string(),
            "type [1] (void) has 4 words, its kind and vlen say 3"
        );
        assert_eq!(s.len(), 1);
    }
}
