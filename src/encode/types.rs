//! Type encoding: appends CUs' type tables to a BTF, as pahole's `btf_encoder__encode_cu` does.
//!
//! Invariant (pahole's `tag__check_id_drift`): the BTF id of the CU type with small id `n` is
//! `type_id_off + n`, where `type_id_off` is the type count before the CU. References are
//! therefore translated by adding `type_id_off` (0, void, stays 0).

use crate::btf::{kinds, Btf, Kind, INDEX_PLACEHOLDER};
use crate::config::Features;
use crate::dwarf::types::{CuTypes, Entry};
use crate::error::{Error, Result};

/// How a CU relates to pahole's array index type (`array_index_id`), which is the first `int`
/// of the first CU that has an `int` or an array, or an `int` synthesised after that CU's types
/// when it has arrays but no `int`. A sequential pre-scan finds that CU, so chunks can be
/// encoded in parallel without knowing what earlier chunks did: their ARRAYs get
/// [`INDEX_PLACEHOLDER`] as index, which the concatenation replaces with the real one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IndexRole {
    /// Before the establishing CU: no arrays, no `int`.
    Before,
    /// The CU that establishes the index type.
    Establish,
    /// After it: arrays refer to the established index type.
    After,
}

/// `DW_ATE_*` encodings the base-type rules look at.
mod ate {
    pub(super) const BOOLEAN: u8 = 0x02;
    pub(super) const COMPLEX_FLOAT: u8 = 0x03;
    pub(super) const FLOAT: u8 = 0x04;
    pub(super) const SIGNED: u8 = 0x05;
    pub(super) const SIGNED_CHAR: u8 = 0x06;
    pub(super) const IMAGINARY_FLOAT: u8 = 0x09;
}

/// True when this CU would establish pahole's index type (it has an `int` or an array).
pub fn establishes_index(cu: &CuTypes<'_>) -> bool {
    cu.int_id().is_some() || cu.entries.iter().any(|e| matches!(e, Entry::Array { .. }))
}

/// Appends the types of one CU (then the synthetic `int` when this CU establishes the index
/// type without having one, then struct/union/typedef decl tags) to `btf`. Returns the id of
/// the index type when `role` is [`IndexRole::Establish`]. `die_base` turns unit offsets into
/// section offsets for messages.
pub fn encode_cu_types(
    btf: &mut Btf,
    cu: &CuTypes<'_>,
    features: &Features,
    die_base: u64,
    role: IndexRole,
) -> Result<Option<u32>> {
    let off = btf.type_cnt() - 1;
    let xlate = |id: u32| if id == 0 { 0 } else { off + id };
    for (i, entry) in cu.entries.iter().enumerate() {
        let die = cu.die_offset(cu.dies[i], die_base);
        if let Some((what, reason)) = refused(entry, features) {
            return Err(Error::Encode {
                what,
                die_offset: die,
                reason: reason.into(),
            });
        }
        encode_entry(btf, cu, entry, features, &xlate)
            .map_err(|e| e.while_encoding(|| describe(entry), die))?;
        debug_assert_eq!(btf.type_cnt() - 1, off + i as u32 + 1, "id drift");
    }
    let index = match role {
        IndexRole::Establish => Some(match cu.int_id() {
            Some(id) => off + id,
            None => btf.add_int(b"int", 4, kinds::INT_SIGNED)?,
        }),
        _ => None,
    };
    for (i, entry) in cu.entries.iter().enumerate() {
        let annots = match entry {
            Entry::Composite { annots, .. } | Entry::Typedef { annots, .. } => annots,
            _ => continue,
        };
        for a in &cu.annots[annots.start as usize..annots.end as usize] {
            btf.add_decl_tag(a.value, off + i as u32 + 1, a.component)?;
        }
    }
    Ok(index)
}

/// What `entry` is and why BTF cannot hold it, for the entries refused before anything is
/// added: a DWARF tag BTF has no equivalent for, and (where FLOAT is encoded) the float types
/// pahole refuses too.
fn refused(entry: &Entry<'_>, features: &Features) -> Option<(String, &'static str)> {
    match entry {
        Entry::Unsupported { tag } => Some((
            tag.static_string().unwrap_or("DW_TAG_?").to_string(),
            "BTF has no equivalent for this DWARF tag",
        )),
        Entry::Base {
            encoding: ate::COMPLEX_FLOAT | ate::IMAGINARY_FLOAT,
            ..
        } if features.float => Some((
            describe(entry),
            "complex, interval and imaginary float types are not supported",
        )),
        _ => None,
    }
}

fn encode_entry(
    btf: &mut Btf,
    cu: &CuTypes<'_>,
    entry: &Entry<'_>,
    features: &Features,
    xlate: &impl Fn(u32) -> u32,
) -> Result<()> {
    match entry {
        Entry::Base {
            name,
            byte_size,
            encoding,
        } => add_base_type(btf, name, *byte_size, *encoding, features)?,
        Entry::Modifier { kind, ty } => btf.add_ref(*kind, None, xlate(*ty))?,
        Entry::Typedef { name, ty, .. } => btf.add_ref(Kind::Typedef, Some(name), xlate(*ty))?,
        Entry::TypeTag { value, ty } => btf.add_ref(Kind::TypeTag, Some(value), xlate(*ty))?,
        Entry::Composite {
            union,
            name,
            declaration: true,
            ..
        } => btf.add_fwd(name, *union)?,
        Entry::Composite {
            union,
            name,
            size,
            members,
            ..
        } => {
            let kind = if *union { Kind::Union } else { Kind::Struct };
            let id = btf.add_composite(kind, Some(name), *size)?;
            for m in &cu.members[members.start as usize..members.end as usize] {
                if m.bit_offset == u32::MAX {
                    continue; // static member
                }
                btf.add_field(Some(m.name), xlate(m.ty), m.bit_offset, m.bitfield_size)?;
            }
            id
        }
        Entry::Array { elem, nelems } => btf.add_array(INDEX_PLACEHOLDER, xlate(*elem), *nelems)?,
        Entry::Enum {
            name,
            byte_size,
            signed,
            values,
        } => {
            let vals = &cu.enumerators[values.start as usize..values.end as usize];
            add_enum(btf, name, *byte_size, *signed, vals, features)?
        }
        Entry::FuncProto {
            ret,
            params,
            varargs,
        } => {
            let id = btf.add_func_proto(xlate(*ret))?;
            for &(name, ty) in &cu.params[params.start as usize..params.end as usize] {
                btf.add_func_param(Some(name), xlate(ty))?;
            }
            if *varargs {
                btf.add_func_param(None, 0)?;
            }
            id
        }
        Entry::Unsupported { .. } => unreachable!("rejected by the caller"),
    };
    Ok(())
}

/// pahole's `btf_encoder__add_base_type`: INT (sanitised when its size is not a power of two
/// up to 16) or, with the `float` feature, FLOAT.
fn add_base_type(
    btf: &mut Btf,
    name: &[u8],
    byte_size: u32,
    encoding: u8,
    features: &Features,
) -> Result<u32> {
    let int_encoding = match encoding {
        ate::SIGNED | ate::SIGNED_CHAR => kinds::INT_SIGNED,
        ate::BOOLEAN => kinds::INT_BOOL,
        ate::FLOAT if features.float => return btf.add_float(name, byte_size),
        ate::COMPLEX_FLOAT | ate::IMAGINARY_FLOAT if features.float => {
            unreachable!("refused by encode_cu_types")
        }
        _ => 0,
    };
    if byte_size == 0 || !byte_size.is_power_of_two() || byte_size > 16 {
        return btf.add_int(b"__SANITIZED_FAKE_INT__", 4, int_encoding);
    }
    btf.add_int(name, byte_size, int_encoding)
}

/// pahole's `btf_encoder__add_enum_type`: ENUM64 for enums over 4 bytes when the `enum64`
/// feature is on, ENUM otherwise (values truncated to 32 bits without `enum64`).
fn add_enum(
    btf: &mut Btf,
    name: &[u8],
    byte_size: u32,
    signed: bool,
    values: &[(&[u8], u64)],
    features: &Features,
) -> Result<u32> {
    if byte_size > 4 && features.enum64 {
        let id = btf.add_enum(Kind::Enum64, Some(name), byte_size, signed)?;
        for &(n, v) in values {
            btf.add_enum64_value(n, v)?;
        }
        return Ok(id);
    }
    let id = btf.add_enum(Kind::Enum, Some(name), byte_size, false)?;
    for &(n, v) in values {
        let v = if features.enum64 {
            v as i64
        } else {
            v as u32 as i64
        };
        btf.add_enum_value(n, v)?;
    }
    Ok(id)
}

fn describe(entry: &Entry<'_>) -> String {
    let (what, name): (&str, &[u8]) = match entry {
        Entry::Base { name, .. } => ("base type", name),
        Entry::Modifier { kind, .. } => (kind.name(), b""),
        Entry::Typedef { name, .. } => ("typedef", name),
        Entry::TypeTag { value, .. } => ("type tag", value),
        Entry::Composite {
            union: true, name, ..
        } => ("union", name),
        Entry::Composite { name, .. } => ("struct", name),
        Entry::Enum { name, .. } => ("enum", name),
        Entry::Array { .. } => ("array", b""),
        Entry::FuncProto { .. } => ("function type", b""),
        Entry::Unsupported { .. } => ("type", b""),
    };
    if name.is_empty() {
        what.to_string()
    } else {
        format!("{what} '{}'", String::from_utf8_lossy(name))
    }
}
