//! A function instance's prototype in a form that does not depend on type ids, so that
//! instances saved from different chunks can be compared where they are saved.
//!
//! pahole's `funcs__match` compares two prototypes with `types__match`, which walks both type
//! chains side by side. That relation is an equivalence: two types match exactly when they are
//! equal after this normalisation, which [`Signature`] writes out as bytes:
//! - `const` is skipped when the other side is not `const` (loose matching), so a chain of
//!   `const`s before a real type drops out — but not before `void`: `types__match` reaches id 0
//!   on one side while the other still has a `const`, and fails. A `const` chain ending in
//!   `void` (or in a type that is not there) therefore keeps its length;
//! - typedefs, structs, unions and enums match by kind and name (a FWD counts as the struct or
//!   union it declares), integers by size, encoding and name, floats by size and name;
//! - pointers, volatile, restrict and type tags are followed (a type tag's name is not
//!   compared), arrays compare their element count and element, prototypes their parameter
//!   count, return type and each parameter;
//! - any other kind (a FUNC, VAR …) matches only itself, by id: the form holds its chunk and
//!   chunk-local id, unique in the concatenated BTF.
//!
//! So `a.matches(b)` is `types__match` on every part, and [`FuncSummary`] can fold an owner's
//! instances locally. `tests` checks the equivalence against a direct port of `types__match`
//! on random BTF.
//!
//! A signature holds its parts' numbers in [`SignatureParts`], not their forms: a kernel's
//! 55,000 saved instances have 174,000 parts (2.2 MB of forms) but only 4,000 distinct forms,
//! and the instances live until the final pass.
//!
//! [`FuncSummary`]: super::fold::FuncSummary

use std::sync::atomic::{AtomicU32, Ordering};

use dashmap::DashMap;
use rustc_hash::FxBuildHasher;

use super::packing::{push_leb, read_leb};
use crate::btf::{Btf, Kind};

/// The distinct normal forms of the signature parts of one run, each numbered once: equal
/// numbers exactly when equal forms. The workers share one (a sharded map, written only by a
/// form's first sight). A number depends on which worker saw its form first, so numbers are
/// only compared, never written out.
#[derive(Default)]
pub struct SignatureParts {
    numbers: DashMap<Box<[u8]>, u32, FxBuildHasher>,
    next: AtomicU32,
}

impl SignatureParts {
    /// The number of the form `form`.
    fn number(&self, form: &[u8]) -> u32 {
        if let Some(n) = self.numbers.get(form) {
            return *n;
        }
        *self
            .numbers
            .entry(form.into())
            .or_insert_with(|| self.next.fetch_add(1, Ordering::Relaxed))
    }
}

/// Writes the signature of a prototype returning `ret` with parameter types `params`, ids of
/// `btf`, the BTF of chunk `chunk`, to `out`: the number of parts, then the number in `parts`
/// of each part's normal form (0: the return type, 1…: the parameters), as LEB128.
/// [`Signature`] reads it back.
pub fn write(
    parts: &SignatureParts,
    btf: &Btf,
    chunk: u32,
    ret: u32,
    params: impl ExactSizeIterator<Item = u32>,
    out: &mut Vec<u8>,
) {
    push_leb(out, params.len() as u32 + 1);
    let mut form = Vec::new();
    for id in std::iter::once(ret).chain(params) {
        form.clear();
        Form { btf, chunk }.write(id, &mut form);
        push_leb(out, parts.number(&form));
    }
}

/// Return type and parameter types of one instance, normalised: a view of what [`write`]
/// wrote. Two signatures written with one [`SignatureParts`] are equal exactly when their
/// bytes are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Signature<'a>(&'a [u8]);

impl<'a> Signature<'a> {
    /// The signature [`write`] wrote as `bytes`.
    pub fn new(bytes: &'a [u8]) -> Self {
        Signature(bytes)
    }

    /// How many parameters.
    pub fn params(&self) -> usize {
        (read_leb(self.0, &mut 0) as usize).saturating_sub(1)
    }

    /// The parts' numbers: the return type's form's, then each parameter's.
    fn parts(&self) -> impl Iterator<Item = u32> + 'a {
        let bytes = self.0;
        let mut pos = 0;
        let count = read_leb(bytes, &mut pos);
        (0..count).map(move |_| read_leb(bytes, &mut pos))
    }

    /// Whether pahole's `funcs__match` would find the two prototypes matching.
    pub fn matches(&self, other: &Signature<'_>) -> bool {
        self.0 == other.0
    }

    /// The first difference `funcs__match` reports, or `None` when they match.
    pub fn mismatch(&self, other: &Signature<'_>) -> Option<Mismatch> {
        if self.params() != other.params() {
            return Some(Mismatch::ParamCount);
        }
        self.parts()
            .zip(other.parts())
            .position(|(a, b)| a != b)
            .map(|i| match i {
                0 => Mismatch::Return,
                i => Mismatch::Param(i - 1),
            })
    }
}

/// What `funcs__match` found different first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mismatch {
    /// The numbers of parameters differ.
    ParamCount,
    /// The return types differ.
    Return,
    /// The parameter at this index (0-based).
    Param(usize),
}

/// Writes the normal form of one type of a chunk's BTF.
struct Form<'b> {
    btf: &'b Btf,
    chunk: u32,
}

/// Leading bytes of the form's tokens.
mod token {
    pub(super) const VOID: u8 = b'v';
    pub(super) const CONST: u8 = b'c';
    pub(super) const BY_ID: u8 = b'#';
    pub(super) const INT: u8 = b'i';
    pub(super) const FLOAT: u8 = b'f';
    pub(super) const NAMED: u8 = b'n';
    pub(super) const FOLLOWED: u8 = b'>';
    pub(super) const ARRAY: u8 = b'a';
    pub(super) const PROTO: u8 = b'p';
}

impl Form<'_> {
    fn write(&self, mut id: u32, out: &mut Vec<u8>) {
        let mut consts = 0u32;
        loop {
            let kind = self.btf.type_by_id(id).map(|t| (t, t.kind()));
            let (t, kind) = match kind {
                Some((t, Some(kind))) if id != 0 => (t, kind),
                // void, a missing type or an unknown kind: the `const`s before it count.
                _ => {
                    out.extend(std::iter::repeat_n(token::CONST, consts as usize));
                    if id == 0 {
                        out.push(token::VOID);
                    } else {
                        self.by_id(id, out);
                    }
                    return;
                }
            };
            if kind == Kind::Const {
                consts += 1;
                id = t.size_or_type();
                continue;
            }
            consts = 0;
            match kind {
                Kind::Int => {
                    out.push(token::INT);
                    push_leb(out, t.size_or_type());
                    push_leb(out, t.extra());
                    self.name(t.name_off(), out);
                    return;
                }
                Kind::Float => {
                    out.push(token::FLOAT);
                    push_leb(out, t.size_or_type());
                    self.name(t.name_off(), out);
                    return;
                }
                Kind::Typedef | Kind::Struct | Kind::Union | Kind::Enum | Kind::Enum64 => {
                    self.named(kind, t.name_off(), out);
                    return;
                }
                Kind::Fwd => {
                    let declared = if t.kflag() { Kind::Union } else { Kind::Struct };
                    self.named(declared, t.name_off(), out);
                    return;
                }
                Kind::Ptr | Kind::Volatile | Kind::Restrict | Kind::TypeTag => {
                    out.extend([token::FOLLOWED, kind as u8]);
                    id = t.size_or_type();
                }
                Kind::Array => {
                    let a = t.array();
                    out.push(token::ARRAY);
                    push_leb(out, a.nelems);
                    id = a.elem;
                }
                Kind::FuncProto => {
                    out.push(token::PROTO);
                    push_leb(out, t.vlen());
                    self.write(t.size_or_type(), out);
                    for p in t.params() {
                        self.write(p.type_id, out);
                    }
                    return;
                }
                _ => {
                    self.by_id(id, out);
                    return;
                }
            }
        }
    }

    fn named(&self, kind: Kind, name_off: u32, out: &mut Vec<u8>) {
        out.extend([token::NAMED, kind as u8]);
        self.name(name_off, out);
    }

    fn by_id(&self, id: u32, out: &mut Vec<u8>) {
        out.push(token::BY_ID);
        push_leb(out, self.chunk);
        push_leb(out, id);
    }

    /// A length-prefixed name; an invalid offset gets a length no name has.
    fn name(&self, name_off: u32, out: &mut Vec<u8>) {
        match self.btf.str_at(name_off) {
            Some(name) => {
                push_leb(out, name.len() as u32);
                out.extend_from_slice(name);
            }
            None => push_leb(out, u32::MAX),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::btf::kinds;
    use crate::rng::Rng;

    /// pahole HEAD's `types__match` within one BTF (with its fix that compares FUNC_PROTO parameters),
    /// ported directly: the oracle for [`Signature::matches`].
    fn types_match(btf: &Btf, mut id1: u32, mut id2: u32) -> bool {
        let fwd_kind = |t: &crate::btf::Type<'_>| match t.kind()? {
            Kind::Fwd if t.kflag() => Some(Kind::Union),
            Kind::Fwd => Some(Kind::Struct),
            k => Some(k),
        };
        loop {
            if id1 == id2 {
                return true;
            }
            if id1 == 0 || id2 == 0 {
                return false;
            }
            let (Some(t1), Some(t2)) = (btf.type_by_id(id1), btf.type_by_id(id2)) else {
                return false;
            };
            let (Some(k1), Some(k2)) = (fwd_kind(&t1), fwd_kind(&t2)) else {
                return false;
            };
            if k1 != k2 {
                if k1 == Kind::Const {
                    id1 = t1.size_or_type();
                    continue;
                }
                if k2 == Kind::Const {
                    id2 = t2.size_or_type();
                    continue;
                }
                return false;
            }
            let same_name = || btf.str_at(t1.name_off()) == btf.str_at(t2.name_off());
            match k1 {
                Kind::Int => {
                    return t1.size_or_type() == t2.size_or_type()
                        && t1.extra() == t2.extra()
                        && same_name()
                }
                Kind::Float => return t1.size_or_type() == t2.size_or_type() && same_name(),
                Kind::Typedef | Kind::Struct | Kind::Union | Kind::Enum | Kind::Enum64 => {
                    return same_name()
                }
                Kind::Ptr | Kind::Volatile | Kind::Const | Kind::Restrict | Kind::TypeTag => {
                    id1 = t1.size_or_type();
                    id2 = t2.size_or_type();
                }
                Kind::Array => {
                    let (a1, a2) = (t1.array(), t2.array());
                    if a1.nelems != a2.nelems {
                        return false;
                    }
                    id1 = a1.elem;
                    id2 = a2.elem;
                }
                Kind::FuncProto => {
                    return t1.vlen() == t2.vlen()
                        && types_match(btf, t1.size_or_type(), t2.size_or_type())
                        && t1
                            .params()
                            .zip(t2.params())
                            .all(|(p1, p2)| types_match(btf, p1.type_id, p2.type_id));
                }
                _ => return false,
            }
        }
    }

    /// The normal form of type `id` (a signature part's).
    fn form(btf: &Btf, id: u32) -> Vec<u8> {
        let mut out = Vec::new();
        Form { btf, chunk: 0 }.write(id, &mut out);
        out
    }

    /// Two workers numbering the same forms in opposite orders agree on every number, and
    /// distinct forms get distinct numbers.
    #[test]
    fn part_numbers_are_one_per_form_across_threads() {
        let parts = SignatureParts::default();
        let forms: Vec<Vec<u8>> = (0..2000u32)
            .map(|i| (i % 700).to_le_bytes().to_vec())
            .collect();
        let numbers = |reverse: bool| {
            let mut order: Vec<&Vec<u8>> = forms.iter().collect();
            if reverse {
                order.reverse();
            }
            order
                .iter()
                .map(|f| (f.to_vec(), parts.number(f)))
                .collect::<Vec<_>>()
        };
        let (a, b) = std::thread::scope(|s| {
            let a = s.spawn(|| numbers(false));
            let b = s.spawn(|| numbers(true));
            (a.join().unwrap(), b.join().unwrap())
        });
        let mut by_form = std::collections::HashMap::new();
        for (form, n) in a.into_iter().chain(b) {
            assert_eq!(*by_form.entry(form).or_insert(n), n);
        }
        let mut distinct: Vec<u32> = by_form.values().copied().collect();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(
            (distinct.len(), by_form.len(), parts.numbers.len()),
            (700, 700, 700)
        );
    }

    fn signature(parts: &SignatureParts, btf: &Btf, ret: u32, params: &[u32]) -> Vec<u8> {
        let mut out = Vec::new();
        write(parts, btf, 0, ret, params.iter().copied(), &mut out);
        out
    }

    #[test]
    fn const_is_loose_except_before_void() {
        let mut btf = Btf::new();
        let int = btf.add_int(b"int", 4, kinds::INT_SIGNED).unwrap();
        let cint = btf.add_ref(Kind::Const, None, int).unwrap();
        let ccint = btf.add_ref(Kind::Const, None, cint).unwrap();
        let cvoid = btf.add_ref(Kind::Const, None, 0).unwrap();
        let ccvoid = btf.add_ref(Kind::Const, None, cvoid).unwrap();
        let fwd = btf.add_fwd(b"s", false).unwrap();
        let s = btf.add_composite(Kind::Struct, Some(b"s"), 4).unwrap();
        let u = btf.add_composite(Kind::Union, Some(b"s"), 4).unwrap();
        assert_eq!(form(&btf, int), form(&btf, ccint));
        assert_ne!(form(&btf, 0), form(&btf, cvoid));
        assert_ne!(form(&btf, cvoid), form(&btf, ccvoid));
        assert_eq!(form(&btf, fwd), form(&btf, s));
        assert_ne!(form(&btf, s), form(&btf, u));
        for (a, b) in [(int, ccint), (0, cvoid), (cvoid, ccvoid), (fwd, s), (s, u)] {
            assert_eq!(types_match(&btf, a, b), form(&btf, a) == form(&btf, b));
        }
    }

    #[test]
    fn mismatch_names_the_first_difference() {
        let mut btf = Btf::new();
        let int = btf.add_int(b"int", 4, kinds::INT_SIGNED).unwrap();
        let long = btf.add_int(b"long", 8, kinds::INT_SIGNED).unwrap();
        let parts = SignatureParts::default();
        let sig = |ret, params: &[u32]| signature(&parts, &btf, ret, params);
        let bytes = sig(int, &[int, long]);
        let a = Signature::new(&bytes);
        let mismatch = |ret, params: &[u32]| a.mismatch(&Signature::new(&sig(ret, params)));
        assert_eq!(mismatch(int, &[int]), Some(Mismatch::ParamCount));
        assert_eq!(mismatch(long, &[long, long]), Some(Mismatch::Return));
        assert_eq!(mismatch(int, &[int, int]), Some(Mismatch::Param(1)));
        assert_eq!(mismatch(int, &[int, long]), None);
        assert!(a.matches(&Signature::new(&sig(int, &[int, long]))));
    }

    /// A small random BTF where many pairs are nearly alike: few names, short chains.
    fn random_btf(rng: &mut Rng) -> Btf {
        let mut next = |n: u32| rng.below(n as usize) as u32;
        let names: [&[u8]; 3] = [b"a", b"b", b"int"];
        let mut btf = Btf::new();
        for _ in 0..60 {
            let cnt = btf.type_cnt();
            let target = next(cnt);
            let name = names[next(3) as usize];
            let _ = match next(14) {
                0 => btf.add_int(name, 4 << next(2), kinds::INT_SIGNED * next(2) as u8),
                1 => btf.add_float(name, 4 << next(2)),
                2 => btf.add_ref(Kind::Typedef, Some(name), target),
                3 => btf.add_composite(Kind::Struct, Some(name), 8),
                4 => btf.add_composite(Kind::Union, Some(name), 8),
                5 => btf.add_fwd(name, next(2) == 1),
                6 => btf.add_enum(Kind::Enum, Some(name), 4, false),
                7 | 8 => btf.add_ref(Kind::Const, None, target),
                9 => btf.add_ref(Kind::Ptr, None, target),
                10 => btf.add_ref(Kind::Volatile, None, target),
                11 => btf.add_array(0, target, next(3)),
                12 => {
                    let proto = btf.add_func_proto(target);
                    for _ in 0..next(3) {
                        let _ = btf.add_func_param(None, next(cnt));
                    }
                    proto
                }
                _ => btf.add_ref(Kind::TypeTag, Some(name), target),
            };
        }
        btf
    }

    /// Form equality is `types__match`, on every pair of types of random BTFs.
    #[test]
    fn forms_agree_with_types_match_on_random_btf() {
        let mut rng = Rng::with_state(0x9e37_79b9_7f4a_7c15);
        let mut matching = 0;
        for _ in 0..200 {
            let btf = random_btf(&mut rng);
            let forms: Vec<_> = (0..btf.type_cnt()).map(|id| form(&btf, id)).collect();
            for a in 0..btf.type_cnt() {
                for b in 0..btf.type_cnt() {
                    let want = types_match(&btf, a, b);
                    matching += usize::from(want && a != b);
                    assert_eq!(
                        forms[a as usize] == forms[b as usize],
                        want,
                        "types [{a}] and [{b}]"
                    );
                }
            }
        }
        assert!(matching > 1000, "the random BTF has too few matching pairs");
    }
}
