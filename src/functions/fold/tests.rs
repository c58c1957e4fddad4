//! The fold's algebra against the walk over every instance (`fold.rs`'s module docs): a
//! randomized check over small sets, an exhaustive small-scope check, and a randomized check
//! up to the reference kernel's largest function (543 instances).

use super::*;
use crate::btf::{kinds, Btf};
use crate::functions::instance::InstanceHead;
use crate::functions::signature;
use crate::rng::Rng;

/// What the final pass reads, by the walk over every instance in walk order that pahole's
/// `btf_encoder__add_saved_funcs` does: (first, first compared mismatch without and with
/// true_signature, first's flags after ORing, canonical with and without true_signature,
/// the true signature's instance), as DWARF positions.
type Decision = (
    (u32, u32),
    (Option<(u32, u32)>, Option<(u32, u32)>),
    u8,
    (u32, u32),
    (u32, u32),
    Option<(u32, u32)>,
);

fn walk(mut all: Vec<FuncInstance>) -> Decision {
    all.sort_by_key(|s| s.head.walk_position());
    let mut first_flags = all[0].head.flags;
    let mut mismatch = (None, None);
    for s in &all[1..] {
        let acc = (first_flags | s.head.flags) & COMBINED;
        if acc & BLOCKING == 0 && !all[0].signature().matches(&s.signature()) {
            mismatch.0 = mismatch.0.or(Some(s.head.order));
            // With true_signature, an instance without an address is compared only
            // when the first has none either.
            if all[0].head.addr == 0 || s.head.addr != 0 {
                mismatch.1 = mismatch.1.or(Some(s.head.order));
            }
        }
        first_flags |= acc;
    }
    let canonical = |true_sig: bool| {
        let at = |skip_ok: bool| {
            all.iter()
                .find(|s| s.has(flags::AT_SYMBOL) && (skip_ok || !s.optimized_skip(true_sig)))
        };
        at(false).or(at(true)).unwrap_or(&all[0]).head.order
    };
    // btf_encoder__add_true_signature: each instance carries the OR of the untrusted
    // flags from the first instance to it, the first instance those of all.
    let mut untrusted = 0;
    let all_untrusted = all
        .iter()
        .fold(0, |acc, s| acc | (s.head.flags & UNTRUSTED));
    let true_signature = all.iter().enumerate().find_map(|(i, s)| {
        untrusted |= s.head.flags & UNTRUSTED;
        let flags = if i == 0 { all_untrusted } else { untrusted };
        (s.has(flags::DOT_SYMBOL) && flags == 0).then_some(s.head.order)
    });
    (
        all[0].head.order,
        mismatch,
        first_flags,
        canonical(false),
        canonical(true),
        true_signature,
    )
}

fn decision(s: &FuncSummary) -> Decision {
    (
        s.first().head.order,
        (
            s.inconsistent(false).map(|m| m.head.order),
            s.inconsistent(true).map(|m| m.head.order),
        ),
        s.flags(),
        s.canonical(false).head.order,
        s.canonical(true).head.order,
        s.true_signature().map(|t| t.head.order),
    )
}

/// Three prototypes, two of which match (`int` and `const int`).
fn signatures() -> Vec<Vec<u8>> {
    let mut btf = Btf::new();
    let int = btf.add_int(b"int", 4, kinds::INT_SIGNED).unwrap();
    let cint = btf.add_ref(crate::btf::Kind::Const, None, int).unwrap();
    let long = btf.add_int(b"long", 8, kinds::INT_SIGNED).unwrap();
    let parts = signature::SignatureParts::default();
    [int, cint, long]
        .iter()
        .map(|&p| {
            let mut sig = Vec::new();
            signature::write(&parts, &btf, 0, 0, [p].into_iter(), &mut sig);
            sig
        })
        .collect()
}

fn instance(rng: &mut Rng, order: u32, sigs: &[Vec<u8>]) -> FuncInstance {
    let mut f = 0u8;
    for bit in 0..8 {
        // Rare flags, so that most sets are neither all blocked nor all skipped.
        if rng.below(6) == 0 {
            f |= 1 << bit;
        }
    }
    // Instances at a symbol have an address; others have one or not (abstract instances).
    let located = f & (flags::AT_SYMBOL | flags::DOT_SYMBOL) != 0 || rng.below(2) == 0;
    let head = InstanceHead {
        order: (order, 0),
        addr: if located {
            0x1000 + u64::from(order)
        } else {
            0
        },
        flags: f,
        ..InstanceHead::default()
    };
    FuncInstance::new(head, &[], &[], &sigs[rng.below(3)])
}

/// Folding per random owner (in save order) and merging the owners in random order gives
/// what the walk over every instance gives.
#[test]
fn any_grouping_decides_as_the_walk_over_every_instance() {
    let sigs = signatures();
    let mut rng = Rng::with_state(0x2545_f491_4f6c_dd1d);
    let (mut inconsistent, mut uncompared) = (0, 0);
    for _ in 0..20_000 {
        let n = 1 + rng.below(7) as u32;
        let all: Vec<FuncInstance> = (0..n).map(|i| instance(&mut rng, i, &sigs)).collect();
        let owners = 1 + rng.below(4);
        let owner_of: Vec<usize> = all.iter().map(|_| rng.below(owners)).collect();
        let mut folds = fold_per_owner(&all, &owner_of, owners);
        rng.shuffle(&mut folds);
        let merged = folds.into_iter().reduce(FuncSummary::merge).unwrap();
        let want = walk(all);
        inconsistent += usize::from(want.1 .0.is_some());
        uncompared += usize::from(want.1 .0.is_some() && want.1 .1.is_none());
        assert_eq!(decision(&merged), want);
        assert_eq!(merged.count(), n);
        assert!(merged.held() <= 6);
    }
    assert!(
        inconsistent > 2000 && uncompared > 200,
        "too few inconsistent sets: {inconsistent}, {uncompared} of them with true_signature"
    );
}

/// One kind of instance of the small-scope check: its prototype (an index into
/// [`signatures`]: 0 and 1 match, 2 matches neither), its flags, and whether it has an
/// address (forced for [`flags::AT_SYMBOL`] and [`flags::DOT_SYMBOL`], as in real DWARF).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Kind {
    sig: usize,
    flags: u8,
    located: bool,
}

/// Every combination of `sigs`, `flag_sets` and `locations` (`true`: has an address).
fn kinds(sigs: &[usize], flag_sets: &[u8], locations: &[bool]) -> Vec<Kind> {
    let mut out = Vec::new();
    for &sig in sigs {
        for &flags in flag_sets {
            for &located in locations {
                let located = located || flags & (flags::AT_SYMBOL | flags::DOT_SYMBOL) != 0;
                let kind = Kind {
                    sig,
                    flags,
                    located,
                };
                if !out.contains(&kind) {
                    out.push(kind);
                }
            }
        }
    }
    out
}

/// The instance of kind `k` at DWARF position `order`.
fn of_kind(k: Kind, order: u32, sigs: &[Vec<u8>]) -> FuncInstance {
    let head = InstanceHead {
        order: (order, 0),
        addr: if k.located {
            0x1000 + u64::from(order)
        } else {
            0
        },
        flags: k.flags,
        ..InstanceHead::default()
    };
    FuncInstance::new(head, &[], &[], &sigs[k.sig])
}

/// Every split of `n` instances into owners, as `owner_of[i]` with owners numbered in order of
/// first appearance (restricted growth strings: each set partition once; Bell(n) of them).
fn splits(n: usize) -> Vec<Vec<usize>> {
    let mut out = vec![vec![0]];
    for _ in 1..n {
        out = out
            .into_iter()
            .flat_map(|s: Vec<usize>| {
                let owners = s.iter().max().map_or(0, |m| m + 1);
                (0..=owners).map(move |o| {
                    let mut next = s.clone();
                    next.push(o);
                    next
                })
            })
            .collect();
    }
    out
}

/// Each owner's fold of its instances (`owner_of[i]`: instance `i`'s owner, below `owners`), in
/// the order of `all`, one [`Fold::add`] at a time; owners without an instance have none.
fn fold_per_owner(all: &[FuncInstance], owner_of: &[usize], owners: usize) -> Vec<FuncSummary> {
    let mut folds: Vec<Option<FuncSummary>> = vec![None; owners];
    for (s, &o) in all.iter().zip(owner_of) {
        match &mut folds[o] {
            Some(f) => f.add(s.clone()),
            fold @ None => *fold = Some(FuncSummary::new(s.clone())),
        }
    }
    folds.into_iter().flatten().collect()
}

/// Folds `all` as the owners of `owner_of` do (each its own instances, in DWARF order, one
/// [`Fold::add`] at a time) and merges the owners' folds in ascending owner order (the final
/// pass's) and in descending order; checks both against the walk over every instance.
fn check_split(all: &[FuncInstance], owner_of: &[usize], want: &Decision) {
    let owners = owner_of.iter().max().map_or(0, |m| m + 1);
    let folds = fold_per_owner(all, owner_of, owners);
    let ascending = folds.iter().cloned().reduce(FuncSummary::merge).unwrap();
    let descending = folds.into_iter().rev().reduce(FuncSummary::merge).unwrap();
    for merged in [ascending, descending] {
        assert_eq!(&decision(&merged), want, "split {owner_of:?}");
        assert_eq!(merged.count() as usize, all.len());
        assert!(merged.held() <= 6);
    }
}

/// Every sequence of up to `max_len` instances over `alphabet` (DWARF order = sequence order),
/// every split of each into owners, checked against the walk; returns the sequences checked.
fn exhaustive(alphabet: &[Kind], max_len: usize) -> usize {
    let sigs = signatures();
    let mut checked = 0;
    for n in 1..=max_len {
        let splits = splits(n);
        let mut digits = vec![0usize; n];
        loop {
            let all: Vec<FuncInstance> = (0..)
                .zip(&digits)
                .map(|(i, &d)| of_kind(alphabet[d], i, &sigs))
                .collect();
            let want = walk(all.clone());
            for owner_of in &splits {
                check_split(&all, owner_of, &want);
            }
            checked += 1;
            // The next sequence, as an odometer over the alphabet.
            let Some(i) = digits.iter().rposition(|&d| d + 1 < alphabet.len()) else {
                break;
            };
            digits[i] += 1;
            digits[i + 1..].iter_mut().for_each(|d| *d = 0);
        }
    }
    checked
}

const BLOCK_UNTRUST: u8 = flags::UNEXPECTED_REG;
const SKIP: u8 = flags::OPTIMIZED_PARMS | flags::SIGNATURE_CHANGED;
const DOT: u8 = flags::AT_SYMBOL | flags::DOT_SYMBOL;

/// The small-scope check, one alphabet per group of decisions the summary keeps apart (they
/// share only walk positions and the first instance). Each decision reads at most a few
/// *witnesses* — the first instance in walk order and the first instance with some property —
/// and a summary keeps exactly those; a merge can only go wrong by picking the wrong witness
/// among the two sides'. So the sizes below are the witnesses a group reads plus one: every
/// way of placing those witnesses and an instance that must not matter, in any walk order,
/// split between owners in every way.
///
/// - prototypes and flags (first, first compared mismatch with and without true_signature,
///   ORed flags): witnesses first, first mismatch, first blocking flag, plus a side whose own
///   first matches neither (three prototypes: 0 and 1 match); 4 instances over 24 kinds;
/// - canonical instance: first, first at a symbol, first at a symbol not skipped; 5 instances
///   over 6 kinds;
/// - true signature: first, first two at a `.` symbol, first untrusted; 5 instances over 6
///   kinds;
/// - all features at once (96 kinds), 3 instances in release builds (2 in debug builds, which
///   are 10–20 times slower).
#[test]
fn every_small_set_split_every_way_decides_as_the_walk() {
    let both = [false, true];
    let prototypes = kinds(
        &[0, 1, 2],
        &[
            0,
            flags::REORDERED_PARM,
            flags::UNCERTAIN_PARM_LOC,
            BLOCK_UNTRUST,
        ],
        &both,
    );
    assert_eq!(exhaustive(&prototypes, 4), 24 + 576 + 13_824 + 331_776);
    let canonical = kinds(
        &[0],
        &[0, flags::AT_SYMBOL, SKIP, SKIP | flags::AT_SYMBOL],
        &both,
    );
    assert_eq!(canonical.len(), 6);
    exhaustive(&canonical, 5);
    let true_signature = kinds(
        &[0],
        &[0, DOT, flags::UNCERTAIN_PARM_LOC, DOT | BLOCK_UNTRUST],
        &both,
    );
    assert_eq!(true_signature.len(), 6);
    exhaustive(&true_signature, 5);
    let all = kinds(
        &[0, 1, 2],
        &[
            0,
            BLOCK_UNTRUST,
            flags::UNCERTAIN_PARM_LOC | flags::AT_SYMBOL,
            SKIP | DOT,
        ],
        &both,
    );
    let len = if cfg!(debug_assertions) { 2 } else { 3 };
    exhaustive(&all, len);
}

/// Random sets up to the reference kernel's largest function (a `static` name with 543
/// instances), split between up to 64 owners at random, owners merged in random order.
#[test]
fn sets_up_to_543_instances_decide_as_the_walk() {
    let sigs = signatures();
    let mut rng = Rng::with_state(0x9e37_79b9_7f4a_7c15);
    for round in 0..400 {
        let n = if round % 4 == 0 {
            543
        } else {
            1 + rng.below(543) as u32
        };
        let all: Vec<FuncInstance> = (0..n).map(|i| instance(&mut rng, i, &sigs)).collect();
        let owners = 1 + rng.below(64);
        let owner_of: Vec<usize> = (0..n).map(|_| rng.below(owners)).collect();
        let mut folds = fold_per_owner(&all, &owner_of, owners);
        rng.shuffle(&mut folds);
        let merged = folds.into_iter().reduce(FuncSummary::merge).unwrap();
        assert_eq!(
            decision(&merged),
            walk(all),
            "{n} instances, {owners} owners"
        );
        assert_eq!(merged.count(), n);
        assert!(merged.held() <= 6);
    }
}
