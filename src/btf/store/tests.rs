//! The record store read back as pushed: near and far ids, every width, every template
//! number length, bad shapes.

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

/// Wherever [`Rec::ids_below_by_width`] answers for a record, every id it holds is below
/// the count: over 140,000 records referring back and forth by up to 40,000 ids, some past
/// the end, it answers for most of them and for none that refers past the end.
#[test]
fn ids_below_by_width_never_answers_for_a_reference_past_the_end() {
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
        if rec.ids_below_by_width(COUNT) {
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
fn template_numbers_of_every_length_read_back() {
    let mut s = Store::new();
    let n = (1 << 18) + 100;
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
    for name in [1, 2, 3, 4, 5, 1023, 1024, 1025, (1 << 18) - 1, 1 << 18, n] {
        let int = 2 * name - 1;
        assert_eq!(
            s.words(int),
            vec![name, kinds::info(Kind::Int, 0, false), 4, 32]
        );
        assert_eq!(s.words(int + 1), ptr(int));
    }
}

/// Ids at every distance from their record, both ways, up to the whole `u32` range, read
/// back, alone and beside ids of every other width in one record.
#[test]
fn ids_of_every_width_read_back() {
    let mut s = Store::new();
    let mut recs = Vec::new();
    let base = 1u32 << 31;
    for bits in 0..32 {
        for d in [1i64 << bits, -(1i64 << bits), (1i64 << bits) - 1] {
            let id = s.len();
            let to = (i64::from(base) + d) as u32;
            let r = strukt(1, &[(2, to, 0), (3, id, 8), (4, to ^ 1, 16)]);
            assert_eq!(s.push(&ptr(to)).unwrap(), id);
            s.push(&r).unwrap();
            recs.push((id, ptr(to)));
            recs.push((id + 1, r));
        }
    }
    for (id, r) in &recs {
        assert_eq!(&s.words(*id), r, "record {id}");
    }
    assert_eq!(s.rec(s.len() - 1).id(1), s.len() - 2);
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

/// After [`Store::release_index`] a push finds the templates interned before it: equal
/// templates keep one number, and the records read back as pushed.
#[test]
fn a_released_template_index_is_rebuilt_by_the_next_push() {
    let mut s = Store::new();
    let a = strukt(1, &[(2, 3, 0), (4, 1, 32)]);
    let first = s.push(&a).unwrap();
    s.push(&ptr(first)).unwrap();
    let templates = s.templates();
    s.release_index();
    assert_eq!(
        s.templates(),
        templates,
        "the count does not depend on the index"
    );
    let again = strukt(1, &[(2, 1, 0), (4, 2, 32)]);
    let id = s.push(&again).unwrap();
    s.push(&ptr(id)).unwrap();
    assert_eq!(s.templates(), templates, "both templates were found again");
    assert_eq!(s.rec(id).template(), s.rec(first).template());
    assert_eq!(s.words(id), again);
    assert_eq!(s.words(first), a);
}
