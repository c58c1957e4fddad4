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
    let (words, offs) = s.raw_own_records();
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

/// Records of every kind that has ids, and some that have none; `big` makes a struct of
/// 200 members, whose block of 16 records spans more than 255 bytes (a far block).
fn sample(i: u32, big: bool) -> Vec<u32> {
    let k = |kind, vlen| kinds::info(kind, vlen, false);
    match i % 9 {
        0 => vec![1, k(Kind::Int, 0), 4, 32],
        1 => ptr(i / 2),
        2 if big => strukt(3, &(0..200).map(|m| (m, i / 3, 8 * m)).collect::<Vec<_>>()),
        2 => strukt(3, &[(4, i / 3, 0), (5, 1, 32)]),
        3 => vec![0, k(Kind::Array, 0), 0, i / 4, 1, 16],
        4 => vec![0, k(Kind::FuncProto, 2), 1, 6, i / 5, 7, 1],
        5 => vec![8, k(Kind::Func, 1), i - 1],
        6 => vec![9, k(Kind::Enum, 1), 4, 10, 0],
        7 => vec![11, k(Kind::Var, 0), 1, 1],
        _ => vec![12, k(Kind::DeclTag, 0), i - 3, u32::MAX],
    }
}

/// Positions deferred, after some were recorded, are found again by reading the records in
/// order: every record reads back by id as in a store that never deferred, far blocks
/// included; after they are released, the records still read in order and where
/// `byte_of` said they start.
#[test]
fn deferred_positions_are_found_again_and_released_ones_are_not_needed() {
    let (mut plain, mut deferred) = (Store::new(), Store::new());
    for i in 1..3_000u32 {
        let rec = sample(i, i % 97 == 2);
        plain.push(&rec).unwrap();
        if i == 1_000 {
            deferred.defer_positions();
        }
        deferred.push(&rec).unwrap();
    }
    assert_eq!(deferred.len(), plain.len());
    deferred.record_positions(1);
    let tail = deferred.push(&ptr(1)).unwrap();
    plain.push(&ptr(1)).unwrap();
    let starts: Vec<usize> = (1..=tail).map(|id| plain.view().byte_of(id)).collect();
    for id in 1..=tail {
        assert_eq!(deferred.words(id), plain.words(id), "[{id}]");
        assert_eq!(
            deferred.view().byte_of(id),
            starts[id as usize - 1],
            "[{id}]"
        );
    }
    let raw = plain.raw_own_records();
    plain.release_positions();
    assert_eq!(
        plain.raw_own_records(),
        raw,
        "read in order without positions"
    );
    for (id, &at) in (1..=tail).zip(&starts) {
        let mut words = Vec::new();
        plain.view().rec_at(id, at).write_to(&mut words);
        assert_eq!(words, deferred.words(id), "[{id}] at byte {at}");
    }
}

/// Positions deferred over many checkpoints (deferral starting mid-block, far blocks in
/// every stretch) are found on any number of threads exactly where recording them on each
/// push puts them.
#[test]
fn deferred_positions_found_on_several_threads_are_those_of_one() {
    let mut plain = Store::new();
    for i in 1..30_000u32 {
        plain.push(&sample(i, i % 97 == 2)).unwrap();
    }
    let starts: Vec<usize> = (1..plain.len())
        .map(|id| plain.view().byte_of(id))
        .collect();
    for threads in [1, 2, 3, 8] {
        let mut deferred = Store::new();
        for i in 1..30_000u32 {
            if i == 1_003 {
                deferred.defer_positions();
            }
            deferred.push(&sample(i, i % 97 == 2)).unwrap();
        }
        deferred.record_positions(threads);
        for (id, &at) in (1..deferred.len()).zip(&starts) {
            assert_eq!(
                deferred.view().byte_of(id),
                at,
                "[{id}] on {threads} threads"
            );
        }
        assert_eq!(deferred.words(29_999), plain.words(29_999));
    }
}

/// The id count the position scan uses is the number of fields `for_each_id_word` visits,
/// for every kind and a few vlens.
#[test]
fn id_count_is_the_number_of_id_words() {
    for k in 0..32u32 {
        for vlen in [0, 1, 7, 300] {
            let info = (k << 24) | vlen;
            let mut n = 0;
            for_each_id_word(info, |_| n += 1);
            assert_eq!(id_count(info), n, "kind {k} vlen {vlen}");
        }
    }
}
