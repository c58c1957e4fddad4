//! Test-only oracle: libbpf v1.7.0 (vendored by `libbpf-sys`) deduplicating the same BTF as
//! `dwarf2btf::dedup`, either from raw bytes or built through libbpf's `btf__add_*` API, and
//! distilling split BTF as `dwarf2btf::btf::distill` does.
//!
//! All `unsafe` in the test suite lives here, around the FFI calls.

use std::ffi::CString;
use std::ptr;

use dwarf2btf::btf::{Btf, Kind};
use libbpf_sys as sys;

/// An owned libbpf `struct btf`.
pub struct LibBtf(*mut sys::btf);

impl Drop for LibBtf {
    fn drop(&mut self) {
        // SAFETY: the pointer came from a libbpf constructor and is freed exactly once.
        unsafe { sys::btf__free(self.0) }
    }
}

fn check_ptr(p: *mut sys::btf) -> Result<LibBtf, i32> {
    // libbpf >= 1.0 returns NULL and sets errno on failure.
    if p.is_null() {
        Err(-std::io::Error::last_os_error().raw_os_error().unwrap_or(22))
    } else {
        Ok(LibBtf(p))
    }
}

impl LibBtf {
    /// `btf__new` / `btf__new_split` over a copy of `data`.
    pub fn parse(data: &[u8], base: Option<&LibBtf>) -> Result<LibBtf, i32> {
        // SAFETY: libbpf copies `data` (len bytes, valid for the call); `base` outlives the
        // returned split BTF in every caller (it is kept alongside it).
        let p = unsafe {
            match base {
                None => sys::btf__new(data.as_ptr().cast(), data.len() as u32),
                Some(b) => sys::btf__new_split(data.as_ptr().cast(), data.len() as u32, b.0),
            }
        };
        check_ptr(p)
    }

    /// `btf__new_empty` / `btf__new_empty_split`.
    pub fn empty(base: Option<&LibBtf>) -> LibBtf {
        // SAFETY: plain constructors; `base` outlives the result in every caller.
        let p = unsafe {
            match base {
                None => sys::btf__new_empty(),
                Some(b) => sys::btf__new_empty_split(b.0),
            }
        };
        check_ptr(p).expect("btf__new_empty")
    }

    /// `btf__add_btf(self, src)`.
    pub fn add_btf(&mut self, src: &LibBtf) -> Result<(), i32> {
        // SAFETY: both pointers are live libbpf objects.
        let r = unsafe { sys::btf__add_btf(self.0, src.0) };
        if r < 0 {
            Err(r)
        } else {
            Ok(())
        }
    }

    /// `btf__dedup(self, opts)`.
    pub fn dedup(&mut self, force_collisions: bool) -> Result<(), i32> {
        let opts = sys::btf_dedup_opts {
            sz: std::mem::size_of::<sys::btf_dedup_opts>() as _,
            btf_ext: ptr::null_mut(),
            force_collisions,
            ..Default::default()
        };
        // SAFETY: `opts` is a properly sized options struct living across the call.
        let r = unsafe { sys::btf__dedup(self.0, &opts) };
        if r < 0 {
            Err(r)
        } else {
            Ok(())
        }
    }

    /// A copy of `btf__raw_data`.
    pub fn raw(&self) -> Vec<u8> {
        let mut sz = 0u32;
        // SAFETY: libbpf returns a buffer of `sz` bytes owned by the btf, copied right away.
        unsafe {
            let p = sys::btf__raw_data(self.0, &mut sz);
            assert!(!p.is_null(), "btf__raw_data");
            std::slice::from_raw_parts(p.cast::<u8>(), sz as usize).to_vec()
        }
    }

    /// Applies one builder operation through libbpf's `btf__add_*` API.
    pub fn apply(&mut self, op: &Op) -> Result<(), i32> {
        let b = self.0;
        let c = |s: &str| CString::new(s).expect("no NUL in names");
        let opt = |s: Option<&str>| s.map(c);
        let p = |s: &Option<CString>| s.as_ref().map_or(ptr::null(), |s| s.as_ptr());
        // SAFETY: `b` is a live libbpf btf; every string pointer is a NUL-terminated CString
        // (or NULL where libbpf allows an anonymous type) that lives across the call.
        let r = unsafe {
            match *op {
                Op::Int(n, sz, enc) => sys::btf__add_int(b, c(n).as_ptr(), sz as _, enc as _),
                Op::Float(n, sz) => sys::btf__add_float(b, c(n).as_ptr(), sz as _),
                Op::Ptr(t) => sys::btf__add_ptr(b, t as _),
                Op::Const(t) => sys::btf__add_const(b, t as _),
                Op::Volatile(t) => sys::btf__add_volatile(b, t as _),
                Op::Restrict(t) => sys::btf__add_restrict(b, t as _),
                Op::Typedef(n, t) => sys::btf__add_typedef(b, c(n).as_ptr(), t as _),
                Op::TypeTag(n, t) => sys::btf__add_type_tag(b, c(n).as_ptr(), t as _),
                Op::Fwd(n, union) => sys::btf__add_fwd(b, c(n).as_ptr(), union as _),
                Op::Array(idx, elem, n) => sys::btf__add_array(b, idx as _, elem as _, n as _),
                Op::Struct(n, sz) => {
                    let n = opt(n);
                    sys::btf__add_struct(b, p(&n), sz as _)
                }
                Op::Union(n, sz) => {
                    let n = opt(n);
                    sys::btf__add_union(b, p(&n), sz as _)
                }
                Op::Field(n, t, off, bsz) => {
                    let n = opt(n);
                    sys::btf__add_field(b, p(&n), t as _, off as _, bsz as _)
                }
                Op::Enum(n, sz) => {
                    let n = opt(n);
                    sys::btf__add_enum(b, p(&n), sz as _)
                }
                Op::EnumVal(n, v) => sys::btf__add_enum_value(b, c(n).as_ptr(), v),
                Op::Enum64(n, sz, signed) => {
                    let n = opt(n);
                    sys::btf__add_enum64(b, p(&n), sz as _, signed)
                }
                Op::Enum64Val(n, v) => sys::btf__add_enum64_value(b, c(n).as_ptr(), v),
                Op::FuncProto(ret) => sys::btf__add_func_proto(b, ret as _),
                Op::Param(n, t) => {
                    let n = opt(n);
                    sys::btf__add_func_param(b, p(&n), t as _)
                }
                Op::Func(n, linkage, proto) => {
                    sys::btf__add_func(b, c(n).as_ptr(), linkage as _, proto as _)
                }
                Op::Var(n, linkage, t) => sys::btf__add_var(b, c(n).as_ptr(), linkage as _, t as _),
                Op::Datasec(n, sz) => sys::btf__add_datasec(b, c(n).as_ptr(), sz as _),
                Op::SecVar(v, off, sz) => {
                    sys::btf__add_datasec_var_info(b, v as _, off as _, sz as _)
                }
                Op::DeclTag(n, t, comp) => sys::btf__add_decl_tag(b, c(n).as_ptr(), t as _, comp),
            }
        };
        if r < 0 {
            Err(r)
        } else {
            Ok(())
        }
    }
}

/// One `btf__add_*` call, mirrored by dwarf2btf's builder in the tests.
#[derive(Clone, Copy, Debug)]
pub enum Op {
    /// name, size, encoding
    Int(&'static str, u32, u32),
    /// name, size
    Float(&'static str, u32),
    /// pointee
    Ptr(u32),
    /// type
    Const(u32),
    /// type
    Volatile(u32),
    /// type
    Restrict(u32),
    /// name, type
    Typedef(&'static str, u32),
    /// value, type
    TypeTag(&'static str, u32),
    /// name, is_union
    Fwd(&'static str, bool),
    /// index type, element type, nelems (libbpf's argument order)
    Array(u32, u32, u32),
    /// name, size
    Struct(Option<&'static str>, u32),
    /// name, size
    Union(Option<&'static str>, u32),
    /// name, type, bit offset, bitfield size
    Field(Option<&'static str>, u32, u32, u32),
    /// An ENUM; without values it is an enum forward declaration.
    Enum(Option<&'static str>, u32),
    /// name, value (of the last ENUM)
    EnumVal(&'static str, i64),
    /// name, size, signed
    Enum64(Option<&'static str>, u32, bool),
    /// name, value (of the last ENUM64)
    Enum64Val(&'static str, u64),
    /// return type
    FuncProto(u32),
    /// name, type (of the last FUNC_PROTO)
    Param(Option<&'static str>, u32),
    /// name, linkage, proto
    Func(&'static str, u32, u32),
    /// name, linkage, type
    Var(&'static str, u32, u32),
    /// name, size
    Datasec(&'static str, u32),
    /// var, offset, size (of the last DATASEC)
    SecVar(u32, u32, u32),
    /// value, target, component index
    DeclTag(&'static str, u32, i32),
}

impl Op {
    /// The same call through dwarf2btf's builder.
    pub fn add_to(&self, btf: &mut Btf) -> dwarf2btf::Result<()> {
        let b = |s: &'static str| s.as_bytes();
        let o = |s: Option<&'static str>| s.map(str::as_bytes);
        match *self {
            Op::Int(n, sz, enc) => btf.add_int(b(n), sz, enc as u8).map(drop),
            Op::Float(n, sz) => btf.add_float(b(n), sz).map(drop),
            Op::Ptr(t) => btf.add_ref(Kind::Ptr, None, t).map(drop),
            Op::Const(t) => btf.add_ref(Kind::Const, None, t).map(drop),
            Op::Volatile(t) => btf.add_ref(Kind::Volatile, None, t).map(drop),
            Op::Restrict(t) => btf.add_ref(Kind::Restrict, None, t).map(drop),
            Op::Typedef(n, t) => btf.add_ref(Kind::Typedef, Some(b(n)), t).map(drop),
            Op::TypeTag(n, t) => btf.add_ref(Kind::TypeTag, Some(b(n)), t).map(drop),
            Op::Fwd(n, u) => btf.add_fwd(b(n), u).map(drop),
            Op::Array(idx, elem, n) => btf.add_array(idx, elem, n).map(drop),
            Op::Struct(n, sz) => btf.add_composite(Kind::Struct, o(n), sz).map(drop),
            Op::Union(n, sz) => btf.add_composite(Kind::Union, o(n), sz).map(drop),
            Op::Field(n, t, off, bsz) => btf.add_field(o(n), t, off, bsz),
            Op::Enum(n, sz) => btf.add_enum(Kind::Enum, o(n), sz, false).map(drop),
            Op::EnumVal(n, v) => btf.add_enum_value(b(n), v),
            Op::Enum64(n, sz, s) => btf.add_enum(Kind::Enum64, o(n), sz, s).map(drop),
            Op::Enum64Val(n, v) => btf.add_enum64_value(b(n), v),
            Op::FuncProto(r) => btf.add_func_proto(r).map(drop),
            Op::Param(n, t) => btf.add_func_param(o(n), t),
            Op::Func(n, l, p) => btf.add_func(b(n), l, p).map(drop),
            Op::Var(n, l, t) => btf.add_var(b(n), l, t).map(drop),
            Op::Datasec(n, sz) => btf.add_datasec(b(n), sz).map(drop),
            Op::SecVar(v, off, sz) => btf.add_datasec_var(v, off, sz),
            Op::DeclTag(n, t, c) => btf.add_decl_tag(b(n), t, c).map(drop),
        }
    }
}

/// libbpf: parse `data` (split on `base` if given), dedup, raw bytes; `Err(errno)` on failure.
pub fn dedup_bytes(data: &[u8], base: Option<&[u8]>, force: bool) -> Result<Vec<u8>, i32> {
    let base = base.map(|b| LibBtf::parse(b, None)).transpose()?;
    let mut btf = LibBtf::parse(data, base.as_ref())?;
    btf.dedup(force)?;
    Ok(btf.raw())
}

/// libbpf "built" mode: `btf__new_empty[_split]` + `btf__add_btf(parsed data)`, so the string
/// section is deduplicated by construction and dedup skips its string phase. Returns the raw
/// bytes before and after dedup.
pub fn dedup_built(
    data: &[u8],
    base: Option<&[u8]>,
    force: bool,
) -> Result<(Vec<u8>, Vec<u8>), i32> {
    let base = base.map(|b| LibBtf::parse(b, None)).transpose()?;
    let src = LibBtf::parse(data, base.as_ref())?;
    let mut btf = LibBtf::empty(base.as_ref());
    btf.add_btf(&src)?;
    let pre = btf.raw();
    btf.dedup(force)?;
    Ok((pre, btf.raw()))
}

/// libbpf: build with `ops` through the add API (split on `base` bytes if given), then return
/// the raw bytes before and after dedup.
pub fn dedup_ops(ops: &[Op], base: Option<&[u8]>, force: bool) -> Result<(Vec<u8>, Vec<u8>), i32> {
    let base = base.map(|b| LibBtf::parse(b, None)).transpose()?;
    let mut btf = LibBtf::empty(base.as_ref());
    for op in ops {
        btf.apply(op)?;
    }
    let pre = btf.raw();
    btf.dedup(force)?;
    Ok((pre, btf.raw()))
}

/// libbpf `btf__distill_base` of `data`, parsed as split BTF on the chain `bases` (lowest
/// first; none: `data` is base BTF): the raw distilled base and new split BTF, or the errno.
pub fn distill_bytes(data: &[u8], bases: &[&[u8]]) -> Result<(Vec<u8>, Vec<u8>), i32> {
    let mut chain: Vec<LibBtf> = Vec::new();
    for b in bases {
        let btf = LibBtf::parse(b, chain.last())?;
        chain.push(btf);
    }
    let src = LibBtf::parse(data, chain.last())?;
    let (mut base, mut split) = (ptr::null_mut(), ptr::null_mut());
    // SAFETY: `src` and the chain under it are live libbpf objects; the two out-pointers are
    // valid for writes and are only written on success.
    let r = unsafe { sys::btf__distill_base(src.0, &mut base, &mut split) };
    if r < 0 {
        return Err(r);
    }
    // Owned from here on; the split BTF does not own its base, so both are freed separately.
    let (base, split) = (LibBtf(base), LibBtf(split));
    Ok((base.raw(), split.raw()))
}

/// libbpf `btf__relocate`: `split`, parsed on the distilled base `dist_base`, moved onto the
/// chain `bases` (lowest first); the raw relocated split BTF, or the errno.
pub fn relocate_bytes(dist_base: &[u8], split: &[u8], bases: &[&[u8]]) -> Result<Vec<u8>, i32> {
    let mut chain: Vec<LibBtf> = Vec::new();
    for b in bases {
        let btf = LibBtf::parse(b, chain.last())?;
        chain.push(btf);
    }
    let target = chain.last().expect("relocating needs a base");
    let dist = LibBtf::parse(dist_base, None)?;
    let btf = LibBtf::parse(split, Some(&dist))?;
    // SAFETY: `btf` and `target` (with the chain under it) are live libbpf objects; `btf` is
    // dropped before `dist` and the chain.
    let r = unsafe { sys::btf__relocate(btf.0, target.0) };
    if r < 0 {
        return Err(r);
    }
    Ok(btf.raw())
}

/// A large realistic dedup input for development and benchmarks: `copies` copies of a deduped
/// BTF appended one after the other (libbpf `btf__add_btf` semantics: ids shifted, strings
/// re-added), where in every copy after the first each 7th named struct/union is replaced by a
/// FWD of the same name, so that dedup has forward declarations to resolve.
pub fn concat_copies(src: &dwarf2btf::btf::Btf, copies: u32) -> dwarf2btf::btf::Btf {
    use dwarf2btf::btf::{kinds, types};
    let mut dst = Btf::new();
    let n = src.type_cnt() - 1;
    for copy in 0..copies {
        let shift = copy * n;
        let mut named = 0u32;
        for t in src.own_types() {
            let mut words = t.words.to_vec();
            let k = t.k();
            if copy > 0 && k.is_composite() && t.name_off() != 0 {
                named += 1;
                if named.is_multiple_of(7) {
                    words = vec![t.name_off(), kinds::info(Kind::Fwd, 0, k == Kind::Union), 0];
                }
            }
            let k = Kind::from_u32(kinds::info_kind(words[1])).expect("valid kind");
            types::for_each_str_off_mut(k, &mut words, |s| {
                if *s != 0 {
                    *s = dst.add_str(src.str_at(*s).expect("valid string"));
                }
            });
            types::for_each_type_id_mut(&mut words, |id| {
                if *id != 0 {
                    *id += shift;
                }
            });
            dst.push_record(&words).expect("fits");
        }
    }
    dst
}
