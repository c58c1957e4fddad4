//! One encoder: appends CUs' type tables to a BTF, as pahole's `btf_encoder__encode_cu` does.
//!
//! Invariant (pahole's `tag__check_id_drift`): the BTF id of the CU type with small id `n` is
//! `type_id_off + n`, where `type_id_off` is the type count before the CU. References are
//! therefore translated by adding `type_id_off` (0, void, stays 0).

use crate::btf::{kinds, Btf, Kind};
use crate::config::Features;
use crate::dwarf::types::{CuTypes, Entry};
use crate::error::{Error, Result};

/// State an encoder carries from one CU to the next.
#[derive(Clone, Debug, Default)]
pub struct Encoder {
    /// The BTF id arrays use as index type, once one is known (`array_index_id`).
    index_type: Option<u32>,
    /// Set once any CU had an array (`need_index_type`).
    need_index_type: bool,
}

/// `DW_ATE_*` encodings the base-type rules look at.
mod ate {
    pub const BOOLEAN: u8 = 0x02;
    pub const COMPLEX_FLOAT: u8 = 0x03;
    pub const FLOAT: u8 = 0x04;
    pub const SIGNED: u8 = 0x05;
    pub const SIGNED_CHAR: u8 = 0x06;
    pub const IMAGINARY_FLOAT: u8 = 0x09;
}

impl Encoder {
    /// Appends the types of one CU (then the synthetic `int`, then struct/union/typedef decl
    /// tags) to `btf`. `die_base` turns unit offsets into section offsets for messages.
    pub fn encode_cu_types(
        &mut self,
        btf: &mut Btf,
        cu: &CuTypes<'_>,
        features: &Features,
        die_base: u64,
    ) -> Result<()> {
        let off = btf.type_cnt() - 1;
        let index_type = match self.index_type {
            Some(id) => id,
            None => match cu.int_id() {
                Some(id) => {
                    self.index_type = Some(off + id);
                    off + id
                }
                None => off + cu.entries.len() as u32 + 1,
            },
        };
        let xlate = |id: u32| if id == 0 { 0 } else { off + id };
        for (i, entry) in cu.entries.iter().enumerate() {
            let die = die_base + cu.dies[i] as u64;
            let ctx = |e: Error| match e {
                Error::BadBtf(reason) | Error::BtfLimit(reason) => Error::Encode {
                    what: describe(entry),
                    die_offset: die,
                    reason,
                },
                e => e,
            };
            if let Entry::Unsupported { tag } = entry {
                return Err(Error::Encode {
                    what: tag.static_string().unwrap_or("DW_TAG_?").to_string(),
                    die_offset: die,
                    reason: "BTF has no equivalent for this DWARF tag".into(),
                });
            }
            self.encode_entry(btf, cu, entry, index_type, features, &xlate)
                .map_err(ctx)?;
            debug_assert_eq!(btf.type_cnt() - 1, off + i as u32 + 1, "id drift");
        }
        if self.need_index_type && self.index_type.is_none() {
            let id = btf.add_int(b"int", 4, kinds::INT_SIGNED)?;
            self.index_type = Some(id);
        }
        for (i, entry) in cu.entries.iter().enumerate() {
            let annots = match entry {
                Entry::Composite { annots, .. } | Entry::Typedef { annots, .. } => annots,
                _ => continue,
            };
            for a in &cu.annots[annots.start as usize..annots.end as usize] {
                btf.add_decl_tag(a.value, off + i as u32 + 1, a.component)?;
            }
        }
        Ok(())
    }

    fn encode_entry(
        &mut self,
        btf: &mut Btf,
        cu: &CuTypes<'_>,
        entry: &Entry<'_>,
        index_type: u32,
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
            Entry::Array { elem, nelems } => {
                self.need_index_type = true;
                btf.add_array(index_type, xlate(*elem), *nelems)?
            }
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
            return Err(Error::BadBtf(
                "complex, interval and imaginary float types are not supported".into(),
            ))
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
        let v = if features.enum64 { v as i64 } else { v as u32 as i64 };
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
