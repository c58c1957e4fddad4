//! The random BTF generator shared by the dedup differential test (tests/btf_library/dedup_libbpf.rs,
//! seeded by [`Source`] over an xorshift) and the dedup fuzz targets (fuzz/, driven by the
//! fuzzer's bytes): a template of C-like types copied into several "compilation units" with
//! per-unit variations, so that the result is valid BTF with much to deduplicate.

use dwarf2btf::btf::kinds::{self, Kind};
use dwarf2btf::btf::read;

/// Where the generator's choices come from: a seeded PRNG in tests, the fuzz input in fuzz
/// targets. Only `next` is implemented; the others derive from it.
pub trait Source {
    /// The next raw choice.
    fn next(&mut self) -> u64;
    /// A choice in `0..n` (`0` when `n` is 0).
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    /// True with probability `pct` percent.
    fn chance(&mut self, pct: u64) -> bool {
        self.next() % 100 < pct
    }
    /// One of `items` (which must not be empty).
    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }
}

const SIGNED: u32 = kinds::INT_SIGNED as u32;

fn info(k: Kind, vlen: u32, kflag: bool) -> u32 {
    kinds::info(k, vlen, kflag)
}

/// Raw little-endian BTF from type words and a string section.
pub fn raw_words(words: &[u32], strs: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&0xeb9fu16.to_le_bytes());
    out.extend_from_slice(&[1, 0]);
    let tlen = words.len() as u32 * 4;
    for v in [24, 0, tlen, tlen, strs.len() as u32] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    for w in words {
        out.extend_from_slice(&w.to_le_bytes());
    }
    out.extend_from_slice(strs);
    out
}

/// A template type; references are template indices (`NONE` = void).
#[derive(Clone)]
enum Tt {
    Int(&'static str, u32, u32),
    Float(&'static str, u32),
    Mod(Kind, Option<&'static str>, usize),
    Array(usize, u32),
    Comp(
        bool,
        Option<&'static str>,
        u32,
        Vec<(Option<&'static str>, usize, u32)>,
    ),
    Enum(Option<&'static str>, bool, Vec<(&'static str, u64)>),
    Fwd(&'static str, bool),
    Proto(usize, Vec<(Option<&'static str>, usize)>),
    Func(&'static str, usize),
}

const NONE: usize = usize::MAX;
const NAMES: [&str; 8] = ["a", "b", "c", "node", "list", "x", "data", "ops"];
const SNAMES: [&str; 6] = ["s", "t", "u", "node", "list_head", "ops"];

fn gen_template<R: Source>(r: &mut R, n: usize, from: Vec<Tt>) -> Vec<Tt> {
    let mut tt = from;
    if tt.is_empty() {
        tt.push(Tt::Int("int", 4, SIGNED));
        tt.push(Tt::Int("char", 1, kinds::INT_CHAR as u32));
    }
    let data_ref = |r: &mut R, tt: &Vec<Tt>, upto: usize| -> usize {
        loop {
            let j = r.below(upto);
            if !matches!(tt[j], Tt::Func(..)) {
                return j;
            }
        }
    };
    while tt.len() < n {
        let i = tt.len();
        let t = match r.below(16) {
            0 => Tt::Int(
                ["int", "long", "short"][r.below(3)],
                [4, 8, 2][r.below(3)],
                SIGNED,
            ),
            1 => Tt::Float("double", 8),
            2 | 3 => Tt::Mod(
                Kind::Ptr,
                None,
                if r.chance(10) {
                    NONE
                } else {
                    data_ref(r, &tt, i)
                },
            ),
            4 => Tt::Mod(
                [Kind::Const, Kind::Volatile, Kind::Restrict][r.below(3)],
                None,
                data_ref(r, &tt, i),
            ),
            5 => Tt::Mod(
                Kind::Typedef,
                Some(["td", "u32", "T"][r.below(3)]),
                data_ref(r, &tt, i),
            ),
            6 => Tt::Mod(Kind::TypeTag, Some("tag"), data_ref(r, &tt, i)),
            7 => Tt::Array(data_ref(r, &tt, i), [1, 4, 16][r.below(3)]),
            8..=11 => {
                let union = r.chance(20);
                let nm = if r.chance(85) {
                    Some(SNAMES[r.below(SNAMES.len())])
                } else {
                    None
                };
                let nmem = 1 + r.below(4);
                // members filled in later (may reference later types)
                Tt::Comp(union, nm, 8 * nmem as u32, vec![(None, NONE, 0); nmem])
            }
            12 => {
                let nm = if r.chance(70) {
                    Some(["e", "f", "g"][r.below(3)])
                } else {
                    None
                };
                let wide = r.chance(25);
                let nv = if r.chance(15) { 0 } else { 1 + r.below(3) };
                let vals = (0..nv)
                    .map(|k| (["A", "B", "C"][k], if wide { 1u64 << 33 } else { k as u64 }))
                    .collect();
                Tt::Enum(nm, wide, vals)
            }
            13 => Tt::Fwd(SNAMES[r.below(SNAMES.len())], r.chance(20)),
            14 => {
                let np = r.below(3);
                let ret = if r.chance(20) {
                    NONE
                } else {
                    data_ref(r, &tt, i)
                };
                let ps = (0..np)
                    .map(|_| {
                        (
                            if r.chance(80) {
                                Some(NAMES[r.below(NAMES.len())])
                            } else {
                                None
                            },
                            data_ref(r, &tt, i),
                        )
                    })
                    .collect();
                Tt::Proto(ret, ps)
            }
            _ => {
                // a FUNC needs a proto: find one or make the proto now
                match (0..i).find(|&j| matches!(tt[j], Tt::Proto(..))) {
                    Some(p) => Tt::Func(["f", "g"][r.below(2)], p),
                    None => Tt::Proto(NONE, vec![]),
                }
            }
        };
        tt.push(t);
    }
    let len = tt.len();
    let is_func: Vec<bool> = tt.iter().map(|t| matches!(t, Tt::Func(..))).collect();
    for t in tt.iter_mut() {
        if let Tt::Comp(union, _, _, ms) = t {
            for (k, m) in ms.iter_mut().enumerate() {
                if m.1 == NONE {
                    let j = loop {
                        let j = r.below(len);
                        if !is_func[j] {
                            break j;
                        }
                    };
                    *m = (
                        Some(NAMES[k % NAMES.len()]),
                        j,
                        if *union { 0 } else { 64 * k as u32 },
                    );
                }
            }
        }
    }
    tt
}

/// A string section under construction, deliberately messy: duplicates, unused strings,
/// suffix references and (for split BTF) references to base strings.
struct StrPool<'a> {
    data: Vec<u8>,
    start: u32,
    first: std::collections::HashMap<&'static str, u32>,
    base: Option<&'a [u8]>,
}

impl StrPool<'_> {
    fn put(&mut self, r: &mut impl Source, s: &'static str) -> u32 {
        if let Some(b) = self.base {
            if r.chance(30) {
                let mut needle = s.as_bytes().to_vec();
                needle.push(0);
                if let Some(p) = b.windows(needle.len()).position(|w| w == needle.as_slice()) {
                    if p == 0 || b[p - 1] == 0 {
                        return p as u32;
                    }
                }
            }
        }
        if r.chance(50) {
            if let Some(&o) = self.first.get(s) {
                return o;
            }
        }
        if r.chance(10) {
            self.data.extend_from_slice(b"junk");
            self.data.push(0);
        }
        if r.chance(10) {
            self.data.extend_from_slice(b"zz_");
        }
        let off = self.start + self.data.len() as u32;
        self.data.extend_from_slice(s.as_bytes());
        self.data.push(0);
        self.first.entry(s).or_insert(off);
        off
    }
    fn opt(&mut self, r: &mut impl Source, s: Option<&'static str>) -> u32 {
        s.map_or(0, |s| self.put(r, s))
    }
}

/// Emits `ncu` copies ("compilation units") of the template with per-CU variations: structs and
/// enums replaced by forward declarations, a mutated struct layout, duplicated arrays (the
/// identical_types path, ARRAY quirk included), shuffled order, VAR/DATASEC and DECL_TAGs.
fn emit(tt: &[Tt], r: &mut impl Source, ncu: usize, start_id: u32, pool: &mut StrPool) -> Vec<u32> {
    let mut words = Vec::new();
    let mut next_id = start_id;
    for _ in 0..ncu {
        let mut order: Vec<usize> = (0..tt.len()).collect();
        if r.chance(50) {
            for i in (1..order.len()).rev() {
                order.swap(i, r.below(i + 1));
            }
        }
        let mut ids = vec![0u32; tt.len()];
        for &i in &order {
            ids[i] = next_id;
            next_id += 1;
        }
        let id = |j: usize| if j == NONE { 0 } else { ids[j] };
        let mut extra: Vec<Vec<u32>> = Vec::new();
        let mut struct_ids = Vec::new();
        let mut func_ids = Vec::new();
        let mut data_ids = Vec::new();
        for &i in &order {
            let rec: Vec<u32> = match &tt[i] {
                Tt::Int(n, sz, enc) => vec![
                    pool.put(r, n),
                    info(Kind::Int, 0, false),
                    *sz,
                    kinds::int_data(*enc as u8, 0, (*sz * 8) as u8),
                ],
                Tt::Float(n, sz) => vec![pool.put(r, n), info(Kind::Float, 0, false), *sz],
                Tt::Mod(k, n, t) => vec![pool.opt(r, *n), info(*k, 0, false), id(*t)],
                Tt::Array(e, n) => vec![0, info(Kind::Array, 0, false), 0, id(*e), ids[0], *n],
                Tt::Comp(union, n, sz, ms) => {
                    if n.is_some() && r.chance(20) {
                        vec![pool.opt(r, *n), info(Kind::Fwd, 0, *union), 0]
                    } else {
                        let k = if *union { Kind::Union } else { Kind::Struct };
                        let mutate = r.chance(5);
                        let mut v = vec![pool.opt(r, *n), info(k, ms.len() as u32, false), *sz];
                        for (mi, (mn, mt, off)) in ms.iter().enumerate() {
                            let mut t = id(*mt);
                            if matches!(tt[*mt], Tt::Array(..)) && r.chance(30) {
                                // a duplicate array, sometimes with another element type
                                let (e, n) = match tt[*mt] {
                                    Tt::Array(e, n) => (e, n),
                                    _ => unreachable!(),
                                };
                                let e = if r.chance(50) { r.below(2) } else { e };
                                t = next_id + extra.len() as u32;
                                extra.push(vec![
                                    0,
                                    info(Kind::Array, 0, false),
                                    0,
                                    id(e),
                                    ids[0],
                                    n,
                                ]);
                            }
                            let off = if mutate && mi == 0 { off + 8 } else { *off };
                            v.extend_from_slice(&[pool.opt(r, *mn), t, off]);
                        }
                        struct_ids.push((ids[i], ms.len()));
                        v
                    }
                }
                Tt::Enum(n, wide, vals) => {
                    let fwd = n.is_some() && !vals.is_empty() && r.chance(15);
                    let vals: &[(&str, u64)] = if fwd { &[] } else { vals };
                    let k = if *wide && !fwd {
                        Kind::Enum64
                    } else {
                        Kind::Enum
                    };
                    let mut v = vec![
                        pool.opt(r, *n),
                        info(k, vals.len() as u32, false),
                        if k == Kind::Enum64 { 8 } else { 4 },
                    ];
                    for (vn, val) in vals {
                        v.push(pool.put(r, vn));
                        v.push(*val as u32);
                        if k == Kind::Enum64 {
                            v.push((*val >> 32) as u32);
                        }
                    }
                    v
                }
                Tt::Fwd(n, union) => vec![pool.put(r, n), info(Kind::Fwd, 0, *union), 0],
                Tt::Proto(ret, ps) => {
                    let mut v = vec![0, info(Kind::FuncProto, ps.len() as u32, false), id(*ret)];
                    for (pn, pt) in ps {
                        v.push(pool.opt(r, *pn));
                        v.push(id(*pt));
                    }
                    v
                }
                Tt::Func(n, p) => {
                    func_ids.push(ids[i]);
                    vec![pool.put(r, n), info(Kind::Func, 0, false) | 1, id(*p)]
                }
            };
            if matches!(tt[i], Tt::Int(..) | Tt::Comp(..) | Tt::Mod(Kind::Ptr, ..)) {
                data_ids.push(ids[i]);
            }
            words.extend_from_slice(&rec);
        }
        next_id += extra.len() as u32;
        for e in extra {
            words.extend_from_slice(&e);
        }
        if r.chance(30) && !data_ids.is_empty() {
            let t = data_ids[r.below(data_ids.len())];
            let name = pool.put(r, "v");
            words.extend_from_slice(&[name, info(Kind::Var, 0, false), t, 1]);
            let sec = pool.put(r, ".data");
            words.extend_from_slice(&[sec, info(Kind::Datasec, 1, false), 8, next_id, 0, 4]);
            next_id += 2;
        }
        if r.chance(40) && !struct_ids.is_empty() {
            let (s, n) = struct_ids[r.below(struct_ids.len())];
            let comp = if r.chance(50) {
                u32::MAX
            } else {
                r.below(n) as u32
            };
            let name = pool.put(r, "tag");
            words.extend_from_slice(&[name, info(Kind::DeclTag, 0, false), s, comp]);
            next_id += 1;
        }
        if r.chance(30) && !func_ids.is_empty() {
            let f = func_ids[r.below(func_ids.len())];
            let name = pool.put(r, "ftag");
            words.extend_from_slice(&[name, info(Kind::DeclTag, 0, false), f, u32::MAX]);
            next_id += 1;
        }
    }
    words
}

/// One random case: `(base bytes if split, data bytes)`. `split` forces the shape (else it is
/// drawn, split three times in ten); `dedup_base` deduplicates the generated base (libbpf in
/// the differential test, dwarf2btf in the fuzz targets), as split BTF is built on a
/// deduplicated base.
pub fn random_case(
    r: &mut impl Source,
    split: Option<bool>,
    dedup_base: impl FnOnce(&[u8]) -> Vec<u8>,
) -> (Option<Vec<u8>>, Vec<u8>) {
    let n = 4 + r.below(20);
    let tt = gen_template(r, n, Vec::new());
    if split.unwrap_or_else(|| r.chance(30)) {
        // split: dedup'd base from the template, split from an extended template
        let base = dedup_base(&emit_alone(&tt, r, 2));
        let base_btf = read::parse(&base, None).expect("the deduplicated base parses");
        let (bstrs, bcnt) = (base_btf.strings().as_bytes().to_vec(), base_btf.type_cnt());
        let m = tt.len() + r.below(8);
        let tt2 = gen_template(r, m, tt);
        let mut pool = StrPool {
            data: Vec::new(),
            start: bstrs.len() as u32,
            first: Default::default(),
            base: Some(&bstrs),
        };
        let words = {
            let ncu = 1 + r.below(3);
            emit(&tt2, r, ncu, bcnt, &mut pool)
        };
        (Some(base), raw_words(&words, &pool.data))
    } else {
        (None, emit_alone(&tt, r, 4))
    }
}

/// BTF without a base: 1 to `max_cus` copies of the template.
fn emit_alone(tt: &[Tt], r: &mut impl Source, max_cus: usize) -> Vec<u8> {
    let mut pool = StrPool {
        data: vec![0],
        start: 0,
        first: Default::default(),
        base: None,
    };
    let ncu = 1 + r.below(max_cus);
    let words = emit(tt, r, ncu, 1, &mut pool);
    raw_words(&words, &pool.data)
}
