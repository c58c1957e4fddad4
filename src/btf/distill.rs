//! Distilled base BTF: libbpf v1.7.0's `btf__distill_base`, byte for byte but for one libbpf
//! bug (below).
//!
//! A kernel module's split BTF names its base (vmlinux) types by id, so it only loads on the
//! exact kernel build it was encoded against. Distilling replaces the base by a minimal
//! *distilled base* that a loader can relocate onto any base by name and size
//! (`btf_relocate.c`); pahole's `--btf_features=distilled_base` writes the new split BTF as
//! `.BTF` and the distilled base as `.BTF.base`. This module owns that transformation:
//!
//! 1. **Collect** every base type the split types reference, transitively, in libbpf's
//!    depth-first order. Only INT, FLOAT, FWD, ARRAY, STRUCT, UNION, TYPEDEF, ENUM, ENUM64,
//!    PTR, CONST, VOLATILE, RESTRICT, FUNC_PROTO and TYPE_TAG may be referenced (anything else
//!    is an error, libbpf's `-EINVAL`). The walk does not enter *named* STRUCT/UNION types:
//!    their distilled form has no members.
//! 2. **Distilled base**, in base id order: INT, FLOAT and FWD copied (names re-added); named
//!    STRUCT/UNION as member-less composites of the same size (kind_flag dropped); named ENUM
//!    and ENUM64 as an unsigned value-less ENUM of the same size (an ENUM64 becomes an ENUM; a
//!    size that is not a power of two up to 8 is an error, as in `btf__add_enum`). "Named"
//!    means a non-zero `name_off`, even when it points at an empty string.
//! 3. **New split BTF** on the distilled base: every original split type, in order, then the
//!    remaining collected base types (ARRAY, TYPEDEF, PTR, CONST, VOLATILE, RESTRICT,
//!    FUNC_PROTO, TYPE_TAG and anonymous STRUCT/UNION/ENUM/ENUM64), copied whole, in base id
//!    order. Strings are re-added to the new split BTF (a string present in the distilled base
//!    resolves to the base offset).
//! 4. **Ids**: a collected base type takes its new id (in the distilled base or at the end of
//!    the new split BTF); a split id moves down by the number of base types dropped. The
//!    distilled base's own records are renumbered the same way, which matters only for a FWD
//!    whose type field is non-zero.
//!
//! The input's base may itself be split BTF: libbpf then distills the whole chain below the
//! input as one base, and so does this module. libbpf's `str_off_map` memo is not reproduced:
//! it never changes an offset.
//!
//! # Where this differs from libbpf
//!
//! libbpf's `btf_add_distilled_types` tells the distilled base from the new split BTF by the
//! destination's `start_id == 1`. When no referenced base type belongs in the distilled base
//! (it holds only void; e.g. the split BTF's only base reference is a `void *`), the new split
//! BTF starts at id 1 too and the second pass takes it for the base: the base types that should
//! be appended are skipped, and references to them keep their old base ids, which now name
//! unrelated split types or nothing (libbpf v1.7 and v1.8 do this). This module appends them
//! as in every other case; its output is then valid where libbpf's is corrupt.

use std::sync::Arc;

use super::kinds::Kind;
use super::types::{for_each_str_off_mut, for_each_type_id_mut};
use super::{Btf, Type};
use crate::error::{DistillError, RecordError, Result};

/// Where a collected base type goes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Dest {
    /// Into the distilled base (INT, FLOAT, FWD, named STRUCT/UNION/ENUM/ENUM64).
    Base,
    /// Appended, whole, to the new split BTF.
    Split,
}

/// The destination of a base type referenced from split BTF, `None` for the kinds libbpf
/// refuses to distill (FUNC, VAR, DATASEC, DECL_TAG).
fn destination(t: &Type<'_>) -> Option<Dest> {
    match t.k() {
        Kind::Int | Kind::Float | Kind::Fwd => Some(Dest::Base),
        Kind::Struct | Kind::Union | Kind::Enum | Kind::Enum64 => Some(if t.name_off() != 0 {
            Dest::Base
        } else {
            Dest::Split
        }),
        Kind::Array
        | Kind::Typedef
        | Kind::Ptr
        | Kind::Const
        | Kind::Volatile
        | Kind::Restrict
        | Kind::FuncProto
        | Kind::TypeTag => Some(Dest::Split),
        Kind::Func | Kind::Var | Kind::Datasec | Kind::DeclTag => None,
    }
}

/// Distills the base of `split` (libbpf `btf__distill_base`): returns the distilled base and
/// the new split BTF on top of it (`new_split.base()` is the returned base).
///
/// Errors where libbpf returns `-EINVAL`: `split` has no base; a split type references a base
/// type of a kind that cannot be distilled; a named base ENUM/ENUM64 has a size `btf__add_enum`
/// refuses. Also errors on a type id or string offset out of range, which libbpf's parser lets
/// through in a FUNC_PROTO return type or a FWD type field and then reads out of bounds.
pub fn distill_base(split: &Btf) -> Result<(Arc<Btf>, Btf)> {
    if split.base().is_none() {
        return Err(DistillError::NoBase.into());
    }
    let split_start = split.start_id();
    let n = split.type_cnt();

    // 1. Collect: id_map[id] != 0 marks a referenced base type.
    let mut id_map = vec![0u32; n as usize];
    let mut walk = Walk::default();
    for id in split_start..n {
        walk.mark_refs(split, id, &mut id_map)?;
    }

    // New ids: distilled base types first (in base id order), then the appended types after
    // the original split types.
    let mut appended = Vec::new();
    let mut base_dest = Vec::new();
    for id in 1..split_start {
        if id_map[id as usize] == 0 {
            continue;
        }
        let t = base_type(split, id)?;
        match destination(&t) {
            Some(Dest::Base) => {
                base_dest.push(id);
                id_map[id as usize] = base_dest.len() as u32;
            }
            Some(Dest::Split) => appended.push(id),
            None => unreachable!("the walk refuses undistillable kinds"),
        }
    }
    let base_cnt = base_dest.len() as u32 + 1;
    let first_appended = base_cnt + split.own_len() as u32;
    for (i, &id) in appended.iter().enumerate() {
        id_map[id as usize] = first_appended + i as u32;
    }
    let diff = split_start - base_cnt;
    let remap = |id: &mut u32| {
        let mapped = id_map[*id as usize];
        if mapped != 0 {
            *id = mapped;
        } else if *id >= split_start {
            *id -= diff;
        }
    };

    // 2. The distilled base.
    let mut base = Btf::new();
    base.endian = split.endian;
    let mut words = Vec::new();
    for &id in &base_dest {
        let t = base_type(split, id)?;
        let kind = t.k();
        match kind {
            Kind::Int | Kind::Float | Kind::Fwd => {
                copy_record(&mut base, split, &t, &mut words, remap)?;
            }
            Kind::Struct | Kind::Union => {
                let name = name_of(split, &t)?;
                base.add_composite(kind, Some(name), t.size_or_type())?;
            }
            _ => {
                let name = name_of(split, &t)?;
                base.add_enum(Kind::Enum, Some(name), t.size_or_type(), false)?;
            }
        }
    }
    let base = Arc::new(base);

    // 3. The new split BTF: the split types, then the appended base types.
    let mut out = Btf::new_split(base.clone());
    let own = split.own_types();
    let extra = appended.iter().map(|&id| base_type(split, id));
    for t in own.map(Ok).chain(extra) {
        copy_record(&mut out, split, &t?, &mut words, remap)?;
    }
    Ok((base, out))
}

/// A base type of `split` (ids below `split.start_id()` always resolve in valid BTF).
fn base_type(split: &Btf, id: u32) -> Result<Type<'_>> {
    split
        .type_by_id(id)
        .ok_or_else(|| DistillError::MissingBaseType { id }.into())
}

fn str_of(src: &Btf, off: u32, id: u32) -> Result<&[u8]> {
    src.str_at(off)
        .ok_or_else(|| RecordError::StringPastEnd { id, off }.into())
}

fn name_of<'a>(src: &'a Btf, t: &Type<'_>) -> Result<&'a [u8]> {
    str_of(src, t.name_off(), t.id)
}

/// Appends `t` (a type of `src`) to `dst` with its strings re-added (libbpf `btf_add_type`)
/// and its type ids passed through `remap`; `words` is scratch space.
fn copy_record(
    dst: &mut Btf,
    src: &Btf,
    t: &Type<'_>,
    words: &mut Vec<u32>,
    remap: impl FnMut(&mut u32),
) -> Result<()> {
    words.clear();
    words.extend_from_slice(t.words);
    let mut bad = None;
    for_each_str_off_mut(t.k(), words, |off| {
        if *off != 0 {
            match str_of(src, *off, t.id) {
                Ok(s) => *off = dst.add_str(s),
                Err(e) => bad = Some(e),
            }
        }
    });
    if let Some(e) = bad {
        return Err(e);
    }
    for_each_type_id_mut(words, remap);
    dst.push_record(words)?;
    Ok(())
}

/// The collection walk of `btf_add_distilled_type_ids` with an explicit stack, visiting ids in
/// libbpf's recursive order (so an error names the type libbpf names). `ids` holds the type-id
/// fields of every record on the stack; a frame is `(first field, next field)` and its fields
/// run to the end of `ids` while it is on top.
#[derive(Default)]
struct Walk {
    ids: Vec<u32>,
    frames: Vec<(usize, usize)>,
    scratch: Vec<u32>,
}

impl Walk {
    fn push(&mut self, t: &Type<'_>) {
        let start = self.ids.len();
        self.scratch.clear();
        self.scratch.extend_from_slice(t.words);
        let ids = &mut self.ids;
        for_each_type_id_mut(&mut self.scratch, |id| ids.push(*id));
        self.frames.push((start, start));
    }

    /// Marks (`id_map[id] = id`) every base type reachable from split type `root`.
    fn mark_refs(&mut self, src: &Btf, root: u32, id_map: &mut [u32]) -> Result<()> {
        let split_start = src.start_id();
        let n = src.type_cnt();
        let t = src.type_by_id(root).expect("an own type");
        self.push(&t);
        while let Some(frame) = self.frames.last_mut() {
            let (start, next) = *frame;
            if next == self.ids.len() {
                self.frames.pop();
                self.ids.truncate(start);
                continue;
            }
            frame.1 += 1;
            let id = self.ids[next];
            if id >= n {
                return Err(DistillError::IdPastEnd { id, last: n - 1 }.into());
            }
            if id == 0 || id >= split_start || id_map[id as usize] != 0 {
                continue;
            }
            let t = base_type(src, id)?;
            if destination(&t).is_none() {
                return Err(DistillError::KindNotDistillable { id, kind: t.k() }.into());
            }
            id_map[id as usize] = id;
            if t.k().is_composite() && t.name_off() != 0 {
                continue;
            }
            self.push(&t);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::btf::kinds::{self, INT_SIGNED};
    use crate::error::Error;

    /// Base: [1] int, [2] struct s {int a; int *p}, [3] int *, [4] typedef s_t = s,
    /// [5] enum e (signed, one value), [6] FUNC_PROTO int(void), [7] FUNC f, [8] anon union.
    fn base() -> Arc<Btf> {
        let mut b = Btf::new();
        b.add_int(b"int", 4, INT_SIGNED).unwrap();
        b.add_composite(Kind::Struct, Some(b"s"), 16).unwrap();
        b.add_field(Some(b"a"), 1, 0, 0).unwrap();
        b.add_field(Some(b"p"), 3, 64, 0).unwrap();
        b.add_ref(Kind::Ptr, None, 1).unwrap();
        b.add_ref(Kind::Typedef, Some(b"s_t"), 2).unwrap();
        b.add_enum(Kind::Enum, Some(b"e"), 4, false).unwrap();
        b.add_enum_value(b"E", -1).unwrap();
        b.add_func_proto(1).unwrap();
        b.add_func(b"f", kinds::FUNC_GLOBAL, 6).unwrap();
        b.add_composite(Kind::Union, None, 4).unwrap();
        b.add_field(Some(b"u"), 5, 0, 0).unwrap();
        Arc::new(b)
    }

    #[test]
    fn needs_split_btf() {
        let e = distill_base(&base()).unwrap_err();
        assert!(matches!(e, Error::Distill(DistillError::NoBase)), "{e:?}");
        assert_eq!(
            e.to_string(),
            "invalid BTF: distilling a base needs split BTF; this BTF has no base"
        );
    }

    #[test]
    fn empty_split() {
        let split = Btf::new_split(base());
        let (b, s) = distill_base(&split).unwrap();
        assert_eq!(b.own_len(), 0);
        assert_eq!(b.strings().as_bytes(), b"\0");
        assert_eq!(s.own_len(), 0);
        assert_eq!(s.start_id(), 1);
        assert!(s.strings().is_empty());
    }

    #[test]
    fn distills_and_renumbers() {
        let mut split = Btf::new_split(base());
        let s_t = split.add_ref(Kind::Ptr, None, 4).unwrap(); // [9] s_t *
        split.add_composite(Kind::Struct, Some(b"m"), 8).unwrap(); // [10]
        split.add_field(Some(b"x"), s_t, 0, 0).unwrap();
        split.add_field(Some(b"u"), 8, 32, 0).unwrap();
        let (b, s) = distill_base(&split).unwrap();

        // Reached: typedef s_t -> struct s (not entered), the anonymous union -> enum e; int is
        // only behind struct s. Base: struct s without members, enum e unsigned without values.
        let kinds: Vec<_> = b.own_types().map(|t| t.k()).collect();
        assert_eq!(kinds, [Kind::Struct, Kind::Enum]);
        let st = b.type_by_id(1).unwrap();
        assert_eq!((st.vlen(), st.size_or_type()), (0, 16));
        let en = b.type_by_id(2).unwrap();
        assert_eq!((en.vlen(), en.kflag()), (0, false));
        assert_eq!(b.strings().as_bytes(), b"\0s\0e\0");

        // Split: ptr, m, then typedef s_t and the anonymous union, in base id order.
        assert_eq!(s.start_id(), 3);
        let ptr = s.type_by_id(3).unwrap();
        assert_eq!((ptr.k(), ptr.size_or_type()), (Kind::Ptr, 5));
        let m: Vec<_> = s
            .type_by_id(4)
            .unwrap()
            .members()
            .map(|m| m.type_id)
            .collect();
        assert_eq!(m, [3, 6]);
        let td = s.type_by_id(5).unwrap();
        assert_eq!((td.k(), td.size_or_type()), (Kind::Typedef, 1));
        let un = s.type_by_id(6).unwrap();
        assert_eq!((un.k(), un.name_off()), (Kind::Union, 0));
        assert_eq!(un.members().next().unwrap().type_id, 2);
        assert_eq!(s.strings().as_bytes(), b"m\0x\0u\0s_t\0");
        assert_eq!(s.name(td.name_off()), "s_t");
    }

    #[test]
    fn empty_distilled_base_still_gets_the_appended_types() {
        let mut b = Btf::new();
        b.add_ref(Kind::Ptr, None, 0).unwrap(); // [1] void *
        let mut split = Btf::new_split(Arc::new(b));
        split.add_composite(Kind::Struct, Some(b"m"), 8).unwrap(); // [2]
        split.add_field(Some(b"p"), 1, 0, 0).unwrap();
        let (b, s) = distill_base(&split).unwrap();
        assert_eq!((b.own_len(), s.start_id(), s.own_len()), (0, 1, 2));
        let m = s.type_by_id(1).unwrap();
        assert_eq!(m.members().next().unwrap().type_id, 2);
        let p = s.type_by_id(2).unwrap();
        assert_eq!((p.k(), p.size_or_type()), (Kind::Ptr, 0));
    }

    #[test]
    fn refuses_a_func_in_the_base() {
        let mut split = Btf::new_split(base());
        split.add_decl_tag(b"tag", 7, -1).unwrap();
        let e = distill_base(&split).unwrap_err();
        let func = DistillError::KindNotDistillable {
            id: 7,
            kind: Kind::Func,
        };
        assert!(matches!(e, Error::Distill(d) if d == func), "{e:?}");
        assert!(e.to_string().contains("[7] of kind FUNC"), "{e}");
    }

    #[test]
    fn refuses_an_odd_sized_named_enum() {
        let mut b = Btf::new();
        let e = b.add_str(b"e");
        b.push_record(&[e, kinds::info(Kind::Enum, 0, false), 3])
            .unwrap();
        let mut split = Btf::new_split(Arc::new(b));
        split.add_ref(Kind::Ptr, None, 1).unwrap();
        assert!(distill_base(&split).is_err());
    }
}
