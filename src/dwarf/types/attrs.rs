//! The attributes the types decoder reads from one DIE (only those are decoded: the rest are
//! skipped by the DIE cursor's plans), and the decoding of their constant forms.

use gimli::{AttributeValue, UnitOffset};

use super::model::DecodeError;
use super::walker::RawRef;
use super::walker::Walker;
use crate::dwarf::dies::{AbbrevPlans, DieCursor, Plan};
use crate::dwarf::name_too_long;
use crate::dwarf::units::R;

/// Whether the type model reads attribute `name` (see [`Walker::apply_attr`]).
pub(super) fn is_read(name: gimli::DwAt) -> bool {
    matches!(
        name,
        gimli::DW_AT_name
            | gimli::DW_AT_type
            | gimli::DW_AT_byte_size
            | gimli::DW_AT_encoding
            | gimli::DW_AT_declaration
            | gimli::DW_AT_data_member_location
            | gimli::DW_AT_data_bit_offset
            | gimli::DW_AT_bit_offset
            | gimli::DW_AT_bit_size
            | gimli::DW_AT_upper_bound
            | gimli::DW_AT_count
            | gimli::DW_AT_const_value
            | gimli::DW_AT_specification
            | gimli::DW_AT_signature
    )
}

/// The attributes the type model reads from one DIE.
#[derive(Default)]
pub(super) struct Attrs<'a> {
    pub(super) name: &'a [u8],
    pub(super) ty: Option<RawRef>,
    pub(super) byte_size: u64,
    pub(super) encoding: u8,
    pub(super) declaration: bool,
    pub(super) member_location: Option<u64>,
    pub(super) data_bit_offset: Option<u64>,
    pub(super) bit_offset: u64,
    pub(super) bit_size: u64,
    pub(super) upper_bound: Option<u64>,
    pub(super) count: Option<u64>,
    pub(super) const_value: u64,
    pub(super) const_str: &'a [u8],
    pub(super) specification: Option<u32>,
    pub(super) signature: Option<RawRef>,
}

impl<'a> Walker<'a, '_> {
    /// Reads the attributes of the DIE whose abbreviation `dies` just read, as `plan` says.
    pub(super) fn read_attrs(
        &mut self,
        dies: &mut DieCursor<'a, '_>,
        plans: &AbbrevPlans,
        plan: Plan,
        offset: u32,
    ) -> Result<Attrs<'a>, DecodeError> {
        let mut a = Attrs::default();
        dies.read(plans, plan, |name, value| {
            self.apply_attr(&mut a, name, value, offset)
        })?;
        Ok(a)
    }

    /// Records one attribute the type model reads (one of [`is_read`]'s), by its raw value.
    fn apply_attr(
        &mut self,
        a: &mut Attrs<'a>,
        name: gimli::DwAt,
        v: AttributeValue<R<'a>>,
        offset: u32,
    ) -> Result<(), DecodeError> {
        match name {
            gimli::DW_AT_name => {
                a.name = self
                    .unit()
                    .string(self.dwarf, v)
                    .map_err(|e| self.err(offset, format!("DW_AT_name: {e}")))?;
                if let Some(why) = name_too_long(a.name) {
                    return Err(self.err(offset, why));
                }
            }
            gimli::DW_AT_type => a.ty = Some(self.type_ref(v, offset)?),
            gimli::DW_AT_byte_size => a.byte_size = udata(v).unwrap_or(0),
            gimli::DW_AT_encoding => {
                // gimli's `Attribute::value` reads it as `u8_value`.
                if let Some(e) = v.u8_value() {
                    a.encoding = e;
                }
            }
            gimli::DW_AT_declaration => a.declaration = flag(v),
            gimli::DW_AT_data_member_location => a.member_location = Some(member_location(v)),
            gimli::DW_AT_data_bit_offset => a.data_bit_offset = Some(udata(v).unwrap_or(0)),
            gimli::DW_AT_bit_offset => a.bit_offset = udata(v).unwrap_or(0),
            gimli::DW_AT_bit_size => a.bit_size = udata(v).unwrap_or(0),
            gimli::DW_AT_upper_bound => a.upper_bound = udata(v),
            gimli::DW_AT_count => a.count = udata(v),
            gimli::DW_AT_const_value => match v {
                v @ (AttributeValue::String(_)
                | AttributeValue::DebugStrRef(_)
                | AttributeValue::DebugLineStrRef(_)
                | AttributeValue::DebugStrOffsetsIndex(_)) => {
                    a.const_str = self.unit().string(self.dwarf, v).unwrap_or(b"")
                }
                v => a.const_value = udata(v).unwrap_or(0),
            },
            gimli::DW_AT_specification => a.specification = self.unit_ref(v, offset).ok(),
            gimli::DW_AT_signature => a.signature = Some(self.unit_ref(v, offset)?),
            _ => {}
        }
        Ok(())
    }

    /// [`Walker::unit_ref`] for `DW_AT_type`, with the common case (a reference into the CU
    /// being walked) first.
    #[inline]
    fn type_ref(&mut self, v: AttributeValue<R<'a>>, offset: u32) -> Result<u32, DecodeError> {
        match v {
            AttributeValue::UnitRef(UnitOffset(o))
                if self.foreign.is_none() && o < self.cu.header.length_including_self() =>
            {
                Ok(o as u32)
            }
            v => self.unit_ref(v, offset),
        }
    }
}

fn udata(v: AttributeValue<R<'_>>) -> Option<u64> {
    Some(match v {
        AttributeValue::Data1(x) => x as u64,
        AttributeValue::Data2(x) => x as u64,
        AttributeValue::Data4(x) => x as u64,
        AttributeValue::Data8(x) => x,
        AttributeValue::Udata(x) => x,
        AttributeValue::Sdata(x) => x as u64,
        AttributeValue::Flag(f) => f as u64,
        _ => return None,
    })
}

fn flag(v: AttributeValue<R<'_>>) -> bool {
    udata(v).is_some_and(|x| x != 0)
}

/// `DW_AT_data_member_location`: a constant, or a `DW_OP_plus_uconst`/`DW_OP_constu` block.
fn member_location(v: AttributeValue<R<'_>>) -> u64 {
    match v {
        AttributeValue::Exprloc(gimli::Expression(e)) | AttributeValue::Block(e) => {
            let bytes = e.slice();
            match bytes.first() {
                Some(&op) if op == gimli::DW_OP_plus_uconst.0 || op == gimli::DW_OP_constu.0 => {
                    let mut r = gimli::EndianSlice::new(&bytes[1..], gimli::LittleEndian);
                    gimli::Reader::read_uleb128(&mut r).unwrap_or(0)
                }
                _ => 0,
            }
        }
        v => udata(v).unwrap_or(0),
    }
}
