//! DWARF expressions, decoded as libdw's `__libdw_intern_expression` decodes them (the
//! `Dwarf_Op` array pahole's `dwarf_getlocations` callers read).
//!
//! [`parse_ops`] turns the bytes of one expression into [`Op`]s: the opcode (`atom`), its
//! first operand (`number`) and, for `DW_OP_entry_value`/`DW_OP_GNU_entry_value` (and
//! `DW_OP_implicit_value`), the operand block. It knows exactly the opcodes libdw knows and
//! reads their operands with libdw's sizes; an opcode libdw does not know, or a truncated
//! operand, fails the whole expression, which ends a location walk
//! ([`super::locations`]). That is why this is not gimli's `Operation` reader: gimli knows a
//! different set of opcodes (`DW_OP_WASM_location`, but not `DW_OP_GNU_variable_value` or
//! `DW_OP_GNU_parameter_ref`), folds `DW_OP_reg0..31` and `DW_OP_regx` into one
//! `Register` (pahole tells them apart), and would not fail where libdw fails. Opcodes are
//! matched against gimli's `DW_OP_*` constants.

use gimli::DwOp;

/// One decoded location operation (libdw's `Dwarf_Op`, trimmed to what pahole reads).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Op<'a> {
    /// The opcode, a `DW_OP_*` value.
    pub atom: u8,
    pub number: u64,
    /// The operand block of `DW_OP_entry_value`/`DW_OP_GNU_entry_value`.
    pub block: &'a [u8],
}

/// `DW_OP_reg0..=DW_OP_reg31` (not `DW_OP_regx`).
pub(super) fn is_reg(atom: u8) -> bool {
    (gimli::DW_OP_reg0..=gimli::DW_OP_reg31).contains(&DwOp(atom))
}

/// `DW_OP_breg0..=DW_OP_breg31` (not `DW_OP_bregx`).
pub(super) fn is_breg(atom: u8) -> bool {
    (gimli::DW_OP_breg0..=gimli::DW_OP_breg31).contains(&DwOp(atom))
}

/// `DW_OP_lit0..=DW_OP_lit31`.
fn is_lit(atom: u8) -> bool {
    (gimli::DW_OP_lit0..=gimli::DW_OP_lit31).contains(&DwOp(atom))
}

/// A constant as pahole counts one: a literal, `DW_OP_constu` or `DW_OP_consts`.
pub(super) fn is_const(atom: u8) -> bool {
    is_lit(atom) || DwOp(atom) == gimli::DW_OP_constu || DwOp(atom) == gimli::DW_OP_consts
}

/// The register operation `DW_OP_regN` for `DW_OP_bregN`.
pub(super) fn breg_to_reg(atom: u8) -> u8 {
    atom - gimli::DW_OP_breg0.0 + gimli::DW_OP_reg0.0
}

/// The register number N of `DW_OP_regN`.
pub(super) fn reg_number(atom: u8) -> u8 {
    atom - gimli::DW_OP_reg0.0
}

/// Sizes of the operands libdw reads for an expression.
#[derive(Clone, Copy, Debug)]
pub(super) struct OpSizes {
    /// `DW_OP_addr`.
    pub addr: usize,
    /// `DW_OP_call_ref`, `DW_OP_implicit_pointer`, ...: the address size in DWARF 2, else the
    /// offset size.
    pub reference: usize,
}

impl OpSizes {
    /// The operand sizes of a unit with this encoding.
    pub(super) fn new(encoding: gimli::Encoding) -> OpSizes {
        OpSizes {
            addr: usize::from(encoding.address_size),
            reference: if encoding.version == 2 {
                usize::from(encoding.address_size)
            } else {
                usize::from(encoding.format.word_size())
            },
        }
    }
}

/// Reads a LEB128 value at `*pos` with gimli's reader and advances `*pos` past it.
fn read_leb<'d, T>(
    data: &'d [u8],
    pos: &mut usize,
    read: impl FnOnce(&mut gimli::EndianSlice<'d, gimli::LittleEndian>) -> gimli::Result<T>,
) -> Option<T> {
    let mut r = gimli::EndianSlice::new(data.get(*pos..)?, gimli::LittleEndian);
    let v = read(&mut r).ok()?;
    *pos = data.len() - r.len();
    Some(v)
}

fn read_uleb(data: &[u8], pos: &mut usize) -> Option<u64> {
    read_leb(data, pos, gimli::Reader::read_uleb128)
}

fn read_sleb(data: &[u8], pos: &mut usize) -> Option<u64> {
    read_leb(data, pos, |r| {
        gimli::Reader::read_sleb128(r).map(|v| v as u64)
    })
}

fn read_fixed(data: &[u8], pos: &mut usize, n: usize, little: bool) -> Option<u64> {
    let bytes = data.get(*pos..pos.checked_add(n)?)?;
    *pos += n;
    let mut v = 0u64;
    if little {
        for &b in bytes.iter().rev() {
            v = v << 8 | u64::from(b);
        }
    } else {
        for &b in bytes {
            v = v << 8 | u64::from(b);
        }
    }
    Some(v)
}

/// Decodes an expression as libdw's `__libdw_intern_expression` does; `None` where libdw
/// fails (an opcode it does not know, a truncated operand), which ends a location walk.
pub(super) fn parse_ops<'a>(
    expr: &'a [u8],
    sizes: OpSizes,
    little: bool,
    out: &mut Vec<Op<'a>>,
) -> Option<()> {
    out.clear();
    let mut pos = 0;
    while pos < expr.len() {
        let atom = expr[pos];
        pos += 1;
        let mut op = Op {
            atom,
            number: 0,
            block: &[],
        };
        match DwOp(atom) {
            gimli::DW_OP_addr => op.number = read_fixed(expr, &mut pos, sizes.addr, little)?,
            gimli::DW_OP_call_ref | gimli::DW_OP_GNU_variable_value => {
                op.number = read_fixed(expr, &mut pos, sizes.reference, little)?
            }
            // No operand.
            gimli::DW_OP_deref
            | gimli::DW_OP_dup
            | gimli::DW_OP_drop
            | gimli::DW_OP_over
            | gimli::DW_OP_swap
            | gimli::DW_OP_rot
            | gimli::DW_OP_xderef
            | gimli::DW_OP_abs
            | gimli::DW_OP_and
            | gimli::DW_OP_div
            | gimli::DW_OP_minus
            | gimli::DW_OP_mod
            | gimli::DW_OP_mul
            | gimli::DW_OP_neg
            | gimli::DW_OP_not
            | gimli::DW_OP_or
            | gimli::DW_OP_plus
            | gimli::DW_OP_shl
            | gimli::DW_OP_shr
            | gimli::DW_OP_shra
            | gimli::DW_OP_xor
            | gimli::DW_OP_eq
            | gimli::DW_OP_ge
            | gimli::DW_OP_gt
            | gimli::DW_OP_le
            | gimli::DW_OP_lt
            | gimli::DW_OP_ne
            | gimli::DW_OP_nop
            | gimli::DW_OP_push_object_address
            | gimli::DW_OP_form_tls_address
            | gimli::DW_OP_call_frame_cfa
            | gimli::DW_OP_stack_value
            | gimli::DW_OP_GNU_push_tls_address
            | gimli::DW_OP_GNU_uninit => {}
            _ if is_lit(atom) || is_reg(atom) => {}
            gimli::DW_OP_const1u
            | gimli::DW_OP_pick
            | gimli::DW_OP_deref_size
            | gimli::DW_OP_xderef_size => op.number = read_fixed(expr, &mut pos, 1, little)?,
            gimli::DW_OP_const1s => {
                op.number = read_fixed(expr, &mut pos, 1, little)? as u8 as i8 as u64
            }
            gimli::DW_OP_const2u => op.number = read_fixed(expr, &mut pos, 2, little)?,
            gimli::DW_OP_const2s | gimli::DW_OP_skip | gimli::DW_OP_bra | gimli::DW_OP_call2 => {
                op.number = read_fixed(expr, &mut pos, 2, little)? as u16 as i16 as u64
            }
            gimli::DW_OP_const4u => op.number = read_fixed(expr, &mut pos, 4, little)?,
            gimli::DW_OP_const4s | gimli::DW_OP_call4 | gimli::DW_OP_GNU_parameter_ref => {
                op.number = read_fixed(expr, &mut pos, 4, little)? as u32 as i32 as u64
            }
            gimli::DW_OP_const8u | gimli::DW_OP_const8s => {
                op.number = read_fixed(expr, &mut pos, 8, little)?
            }
            gimli::DW_OP_constu
            | gimli::DW_OP_plus_uconst
            | gimli::DW_OP_regx
            | gimli::DW_OP_piece
            | gimli::DW_OP_convert
            | gimli::DW_OP_GNU_convert
            | gimli::DW_OP_reinterpret
            | gimli::DW_OP_GNU_reinterpret
            | gimli::DW_OP_addrx
            | gimli::DW_OP_GNU_addr_index
            | gimli::DW_OP_constx
            | gimli::DW_OP_GNU_const_index => op.number = read_uleb(expr, &mut pos)?,
            gimli::DW_OP_consts | gimli::DW_OP_fbreg => op.number = read_sleb(expr, &mut pos)?,
            _ if is_breg(atom) => op.number = read_sleb(expr, &mut pos)?,
            gimli::DW_OP_bregx => {
                op.number = read_uleb(expr, &mut pos)?;
                read_sleb(expr, &mut pos)?;
            }
            gimli::DW_OP_bit_piece | gimli::DW_OP_regval_type | gimli::DW_OP_GNU_regval_type => {
                op.number = read_uleb(expr, &mut pos)?;
                read_uleb(expr, &mut pos)?;
            }
            // A sized block.
            gimli::DW_OP_implicit_value
            | gimli::DW_OP_entry_value
            | gimli::DW_OP_GNU_entry_value => {
                let len = usize::try_from(read_uleb(expr, &mut pos)?).ok()?;
                op.number = len as u64;
                op.block = expr.get(pos..pos.checked_add(len)?)?;
                pos += len;
            }
            gimli::DW_OP_implicit_pointer | gimli::DW_OP_GNU_implicit_pointer => {
                op.number = read_fixed(expr, &mut pos, sizes.reference, little)?;
                read_uleb(expr, &mut pos)?;
            }
            gimli::DW_OP_deref_type | gimli::DW_OP_GNU_deref_type | gimli::DW_OP_xderef_type => {
                op.number = read_fixed(expr, &mut pos, 1, little)?;
                read_uleb(expr, &mut pos)?;
            }
            gimli::DW_OP_const_type | gimli::DW_OP_GNU_const_type => {
                op.number = read_uleb(expr, &mut pos)?;
                let size = read_fixed(expr, &mut pos, 1, little)? as usize;
                expr.get(pos..pos + size)?;
                pos += size;
            }
            _ => return None,
        }
        out.push(op);
    }
    Some(())
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    pub(in crate::dwarf) const SIZES: OpSizes = OpSizes {
        addr: 8,
        reference: 4,
    };

    /// The operations of a valid expression.
    pub(in crate::dwarf) fn ops(bytes: &[u8]) -> Vec<Op<'_>> {
        let mut out = Vec::new();
        parse_ops(bytes, SIZES, true, &mut out).expect("valid expression");
        out
    }

    #[test]
    fn parse_ops_reads_operands_like_libdw() {
        let o = ops(&[0x55, 0x75, 0x7f, 0x9f, 0x91, 0x10, 0x11, 0x7e, 0x93, 0x08]);
        let atoms: Vec<(u8, u64)> = o.iter().map(|o| (o.atom, o.number)).collect();
        assert_eq!(
            atoms,
            [
                (0x55, 0),
                (0x75, u64::MAX),
                (0x9f, 0),
                (0x91, 16),
                (0x11, (-2i64) as u64),
                (0x93, 8)
            ]
        );
        // DW_OP_addr takes the address size, DW_OP_const4s sign-extends.
        let o = ops(&[0x03, 1, 0, 0, 0, 0, 0, 0, 0, 0x0d, 0xff, 0xff, 0xff, 0xff]);
        assert_eq!((o[0].number, o[1].number), (1, u64::MAX));
        // DW_OP_entry_value keeps its block.
        let o = ops(&[0xa3, 0x01, 0x54, 0x9f]);
        assert_eq!(
            (o[0].atom, o[0].block, o[1].atom),
            (0xa3, &[0x54u8][..], 0x9f)
        );
        // Opcodes libdw does not know, and truncated operands, fail the whole expression.
        let mut out = Vec::new();
        assert!(parse_ops(&[0x55, 0x01], SIZES, true, &mut out).is_none());
        assert!(parse_ops(&[0xe9], SIZES, true, &mut out).is_none());
        assert!(parse_ops(&[0x0c, 1, 2], SIZES, true, &mut out).is_none());
        assert!(parse_ops(&[0xa3, 0x05, 0x54], SIZES, true, &mut out).is_none());
        assert!(parse_ops(&[0x10, 0x80], SIZES, true, &mut out).is_none());
        // GCC's DW_OP_GNU_parameter_ref (4-byte operand) is known.
        assert_eq!(ops(&[0xfa, 0x93, 0x01, 0, 0, 0x9f]).len(), 2);
        assert!(ops(&[]).is_empty());
    }
}
