//! The variable decoder against pahole's reading: sizes by `tag__size`, which DIEs become
//! variables, locations, specifications, annotations, and bad references.
use super::*;
use crate::dwarf::types::Member;
use crate::dwarf::units::slice_offset;

/// The CU's types, decoded as the encoder decodes them.
fn decoded_types<'a>(dwarf: &gimli::Dwarf<R<'a>>, cu: &Cu<'a>, features: &Features) -> CuTypes<'a> {
    let scratch = &mut Default::default();
    crate::dwarf::types::decode_cu_types(dwarf, &Default::default(), cu, features, scratch).unwrap()
}

fn types(entries: Vec<Entry<'static>>) -> CuTypes<'static> {
    CuTypes {
        entries,
        ..Default::default()
    }
}

#[test]
fn sizes_follow_tag_size() {
    let t = types(vec![
        /* 1 */
        Entry::Base {
            name: b"int",
            byte_size: 4,
            encoding: 5,
        },
        /* 2 */
        Entry::Typedef {
            name: b"t",
            ty: 1,
            annots: 0..0,
        },
        /* 3 */
        Entry::Modifier {
            kind: Kind::Const,
            ty: 2,
        },
        /* 4 */
        Entry::Array {
            elem: 3,
            nelems: 10,
        },
        /* 5 */ Entry::Array { elem: 4, nelems: 3 },
        /* 6 */
        Entry::Modifier {
            kind: Kind::Ptr,
            ty: 5,
        },
        /* 7 */
        Entry::Composite {
            union: false,
            name: b"empty",
            size: 1,
            declaration: false,
            members: 0..0,
            annots: 0..0,
        },
        /* 8 */
        Entry::Composite {
            union: false,
            name: b"fwd",
            size: 0,
            declaration: true,
            members: 0..0,
            annots: 0..0,
        },
        /* 9 */ Entry::Array { elem: 1, nelems: 0 },
        /* 10 */
        Entry::Enum {
            name: b"e",
            byte_size: 8,
            signed: false,
            values: 0..0,
        },
        /* 11 */
        Entry::Typedef {
            name: b"v",
            ty: 0,
            annots: 0..0,
        },
        /* 12 */
        Entry::Base {
            name: b"_BitInt",
            byte_size: 3,
            encoding: 7,
        },
        /* 13 */
        Entry::Modifier {
            kind: Kind::Volatile,
            ty: 13,
        },
    ]);
    // (id, address size, size)
    #[rustfmt::skip]
    let expected = [
        (1, 8, 4), (3, 8, 4), (4, 8, 40), (5, 8, 120), (6, 8, 8), (6, 4, 4),
        (7, 8, 0), (8, 8, 0), (9, 8, 0), (10, 8, 8), (11, 8, 0), (0, 8, 0),
    ];
    for (id, addr_size, size) in expected {
        assert_eq!(
            tag_size(&t, id, addr_size),
            size,
            "type {id}, {addr_size}-byte addresses"
        );
    }
    assert_eq!(
        tag_size(&t, 12, 8),
        3,
        "the DWARF size, not the sanitised BTF one"
    );
    assert_eq!(tag_size(&t, 13, 8), u64::MAX, "a loop is over-sized");
    assert_eq!(tag_size(&t, 99, 8), 0);
}

#[test]
fn struct_with_members_keeps_size_one() {
    let mut t = types(vec![Entry::Composite {
        union: false,
        name: b"s",
        size: 1,
        declaration: false,
        members: 0..1,
        annots: 0..0,
    }]);
    t.members.push(Member {
        name: b"c",
        ty: 0,
        bit_offset: 0,
        bitfield_size: 0,
    });
    assert_eq!(tag_size(&t, 1, 8), 1);
}

#[test]
fn slice_offsets() {
    let outer = [0u8; 16];
    assert_eq!(slice_offset(&outer[4..8], &outer), Some(4));
    assert_eq!(slice_offset(&outer, &outer[4..]), None);
    let other = [0u8; 4];
    let far = slice_offset(&other, &outer);
    assert!(far.is_none() || far.unwrap() + 4 <= 16);
}

/// A hand-assembled DWARF 4 CU (little-endian, 8-byte addresses).
struct Asm {
    info: Vec<u8>,
    abbrev: Vec<u8>,
    next_code: u8,
}

const FORM_STRING: u8 = 0x08;
const FORM_REF4: u8 = 0x13;
const FORM_PRESENT: u8 = 0x19;
const FORM_EXPRLOC: u8 = 0x18;
const FORM_DATA1: u8 = 0x0b;
const FORM_SEC_OFFSET: u8 = 0x17;
const AT_NAME: u8 = 0x03;
const AT_TYPE: u8 = 0x49;
const AT_EXTERNAL: u8 = 0x3f;
const AT_LOCATION: u8 = 0x02;
const AT_DECLARATION: u8 = 0x3c;
const AT_SPECIFICATION: u8 = 0x47;
const AT_ARTIFICIAL: u8 = 0x34;
const AT_CONST_VALUE: u8 = 0x1c;

/// An attribute value.
enum V<'s> {
    Str(&'s str),
    Ref(u32),
    Present,
    Expr(&'s [u8]),
    Data1(u8),
    SecOff(u32),
}

impl Asm {
    fn new() -> Self {
        // unit_length (patched), version 4, abbrev offset 0, address size 8.
        let mut info = vec![0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 8];
        info.reserve(256);
        Asm {
            info,
            abbrev: Vec::new(),
            next_code: 1,
        }
    }

    /// Emits a DIE (with a fresh abbreviation); returns its unit offset.
    fn die(&mut self, tag: u16, children: bool, attrs: &[(u8, V<'_>)]) -> u32 {
        let off = self.info.len() as u32;
        let code = self.next_code;
        self.next_code += 1;
        self.abbrev.push(code);
        let t = tag as u32;
        if t < 0x80 {
            self.abbrev.push(t as u8);
        } else {
            // ULEB128 of tags up to 0x1fffff.
            self.abbrev
                .extend([(t & 0x7f) as u8 | 0x80, ((t >> 7) & 0x7f) as u8 | 0x80]);
            self.abbrev.push((t >> 14) as u8);
        }
        self.abbrev.push(children as u8);
        self.info.push(code);
        for (at, v) in attrs {
            let form = match v {
                V::Str(s) => {
                    self.info.extend(s.as_bytes());
                    self.info.push(0);
                    FORM_STRING
                }
                V::Ref(r) => {
                    self.info.extend(r.to_le_bytes());
                    FORM_REF4
                }
                V::Present => FORM_PRESENT,
                V::Expr(e) => {
                    self.info.push(e.len() as u8);
                    self.info.extend(*e);
                    FORM_EXPRLOC
                }
                V::Data1(d) => {
                    self.info.push(*d);
                    FORM_DATA1
                }
                V::SecOff(o) => {
                    self.info.extend(o.to_le_bytes());
                    FORM_SEC_OFFSET
                }
            };
            self.abbrev.extend([*at, form]);
        }
        self.abbrev.extend([0, 0]);
        off
    }

    /// Emits a `DW_TAG_variable` without children; returns its unit offset.
    fn variable(&mut self, attrs: &[(u8, V<'_>)]) -> u32 {
        self.die(gimli::DW_TAG_variable.0, false, attrs)
    }

    fn end_children(&mut self) {
        self.info.push(0);
    }

    fn finish(mut self) -> (Vec<u8>, Vec<u8>) {
        let len = (self.info.len() - 4) as u32;
        self.info[..4].copy_from_slice(&len.to_le_bytes());
        self.abbrev.push(0);
        (self.info, self.abbrev)
    }
}

fn addr_expr(addr: u64, tail: &[u8]) -> Vec<u8> {
    let mut e = vec![gimli::DW_OP_addr.0];
    e.extend(addr.to_le_bytes());
    e.extend(tail);
    e
}

#[test]
fn decodes_variables_like_pahole() {
    let mut a = Asm::new();
    // DW_AT_addr_base = 8: past a DWARF 5 .debug_addr header.
    a.die(
        0x11,
        true,
        &[(AT_NAME, V::Str("t.c")), (0x73, V::SecOff(8))],
    );
    let int = a.die(
        0x24,
        false,
        &[
            (AT_NAME, V::Str("int")),
            (0x0b, V::Data1(4)),
            (0x3e, V::Data1(5)),
        ],
    );
    let plain_expr = addr_expr(0x1000, &[]);
    let plain = a.variable(&[
        (AT_NAME, V::Str("plain")),
        (AT_TYPE, V::Ref(int)),
        (AT_EXTERNAL, V::Present),
        (AT_LOCATION, V::Expr(&plain_expr)),
    ]);
    let decl = a.variable(&[
        (AT_NAME, V::Str("spec")),
        (AT_TYPE, V::Ref(int)),
        (AT_EXTERNAL, V::Present),
        (AT_DECLARATION, V::Present),
    ]);
    let def_expr = addr_expr(0x2000, &[]);
    a.variable(&[
        (AT_SPECIFICATION, V::Ref(decl)),
        (AT_LOCATION, V::Expr(&def_expr)),
    ]);
    let art_expr = addr_expr(0x2100, &[]);
    a.variable(&[
        (AT_NAME, V::Str("artificial")),
        (AT_TYPE, V::Ref(int)),
        (AT_ARTIFICIAL, V::Present),
        (AT_LOCATION, V::Expr(&art_expr)),
    ]);
    let plus = addr_expr(0x3000, &[gimli::DW_OP_plus_uconst.0, 0x10]);
    a.variable(&[
        (AT_NAME, V::Str("plus")),
        (AT_TYPE, V::Ref(int)),
        (AT_LOCATION, V::Expr(&plus)),
    ]);
    let three = addr_expr(
        0x4000,
        &[gimli::DW_OP_plus_uconst.0, 0x10, gimli::DW_OP_stack_value.0],
    );
    a.variable(&[
        (AT_NAME, V::Str("three_ops")),
        (AT_LOCATION, V::Expr(&three)),
    ]);
    let fbreg = [gimli::DW_OP_fbreg.0, 0x10];
    a.variable(&[(AT_NAME, V::Str("stack")), (AT_LOCATION, V::Expr(&fbreg))]);
    a.variable(&[(AT_NAME, V::Str("loclist")), (AT_LOCATION, V::SecOff(0))]);
    let tagged_expr = addr_expr(0x5000, &[]);
    a.die(
        0x34,
        true,
        &[
            (AT_NAME, V::Str("tagged")),
            (AT_TYPE, V::Ref(int)),
            (AT_LOCATION, V::Expr(&tagged_expr)),
        ],
    );
    for (name, value) in [
        ("btf_decl_tag", "t1"),
        ("btf_type_tag", "no"),
        ("btf_decl_tag", "t2"),
    ] {
        a.die(
            0x6000,
            false,
            &[(AT_NAME, V::Str(name)), (AT_CONST_VALUE, V::Str(value))],
        );
    }
    a.end_children();
    let addrx = [gimli::DW_OP_addrx.0, 1];
    a.variable(&[(AT_TYPE, V::Ref(int)), (AT_LOCATION, V::Expr(&addrx))]);
    a.end_children();
    let (info, abbrev) = a.finish();
    let mut debug_addr = vec![0u8; 8];
    debug_addr.extend(0x6000u64.to_le_bytes());
    debug_addr.extend(0x7000u64.to_le_bytes());

    let endian = gimli::RunTimeEndian::Little;
    let dwarf = gimli::Dwarf::<R<'_>> {
        debug_info: gimli::DebugInfo::new(&info, endian),
        debug_abbrev: gimli::DebugAbbrev::new(&abbrev, endian),
        debug_addr: gimli::DebugAddr::from(gimli::EndianSlice::new(&debug_addr, endian)),
        ..Default::default()
    };
    let header = dwarf.units().next().unwrap().unwrap();
    let cu = Cu::new(&dwarf, header, true).unwrap();
    let features = Features::default();
    let types = decoded_types(&dwarf, &cu, &features);
    assert_eq!(types.variables.len(), 10);
    let vars = decode_cu_variables(&dwarf, &cu, &types, &features).unwrap();
    assert_eq!(vars.cu_name, b"t.c");
    let got: Vec<_> = vars
        .vars
        .iter()
        .map(|v| {
            (
                v.name.map(|n| std::str::from_utf8(n).unwrap()),
                v.addr,
                v.external,
                v.ty,
            )
        })
        .collect();
    let int_id = types.type_id_of(int);
    assert_eq!(
        got,
        [
            (Some("plain"), 0x1000, true, int_id),
            (Some("spec"), 0x2000, true, int_id),
            (Some("plus"), 0x3010, false, int_id),
            (Some("three_ops"), 0x4000, false, 0),
            (Some("tagged"), 0x5000, false, int_id),
            (None, 0x7000, false, int_id),
        ]
    );
    assert_eq!(vars.vars[0].size, 4);
    assert_eq!(vars.vars[3].size, 0);
    // The DW_OP_addr operand follows the opcode, after the exprloc length byte.
    let operand = info
        .windows(plain_expr.len())
        .position(|w| w == &plain_expr[..])
        .unwrap() as u64
        + 1;
    assert_eq!(vars.vars[0].addr_site, AddrSite::DebugInfo(operand));
    assert!(plain < 0x100);
    assert_eq!(vars.vars[5].addr_site, AddrSite::DebugAddr(16));
    let tags: Vec<&[u8]> = vars.annots_of(&vars.vars[4]).to_vec();
    assert_eq!(tags, [&b"t1"[..], b"t2"]);
    assert!(vars.vars.iter().filter(|v| v.annots.is_empty()).count() == 5);

    // Without the decl_tag feature there are no annotations.
    let no_tags = Features {
        decl_tag: false,
        ..Features::default()
    };
    let vars = decode_cu_variables(&dwarf, &cu, &types, &no_tags).unwrap();
    assert!(vars.annots.is_empty() && vars.vars.len() == 6);
}

/// A variable for [`decode_vars`]: name, a reference attribute (attribute, unit offset),
/// location expression.
type TestVar<'s> = (&'s str, Option<(u8, u32)>, &'s [u8]);
/// A decoded variable for [`decode_vars`]: name, address, type.
type DecodedVar = (Option<Vec<u8>>, u64, u32);

/// The variables (name, address, type) of a unit whose variables are `vars`, or the
/// error decoding them gives.
fn decode_vars(vars: &[TestVar<'_>]) -> Result<Vec<DecodedVar>, String> {
    let mut a = Asm::new();
    a.die(0x11, true, &[(AT_NAME, V::Str("bad.c"))]);
    for (name, extra, location) in vars {
        let mut attrs = vec![(AT_NAME, V::Str(name)), (AT_LOCATION, V::Expr(location))];
        attrs.extend(extra.map(|(at, unit_offset)| (at, V::Ref(unit_offset))));
        a.variable(&attrs);
    }
    a.end_children();
    let (info, abbrev) = a.finish();
    let endian = gimli::RunTimeEndian::Little;
    let dwarf = gimli::Dwarf::<R<'_>> {
        debug_info: gimli::DebugInfo::new(&info, endian),
        debug_abbrev: gimli::DebugAbbrev::new(&abbrev, endian),
        ..Default::default()
    };
    let header = dwarf.units().next().unwrap().unwrap();
    let cu = Cu::new(&dwarf, header, true).unwrap();
    let features = Features::default();
    let types = decoded_types(&dwarf, &cu, &features);
    let vars =
        decode_cu_variables(&dwarf, &cu, &types, &features).map_err(|e| e.cause.to_string())?;
    Ok(vars
        .vars
        .iter()
        .map(|v| (v.name.map(<[u8]>::to_vec), v.addr, v.ty))
        .collect())
}

/// A specification or type reference past the end of the unit is an error naming it
/// (read as nothing, it made a variable of type void, which the kernel rejects).
#[test]
fn references_past_the_unit_are_errors() {
    let at = addr_expr(0x10, &[]);
    for attr in [AT_SPECIFICATION, AT_TYPE] {
        let got = decode_vars(&[("own", Some((attr, 0xfff0)), &at)]);
        let err = got.expect_err("a reference past the unit");
        assert!(
            err.contains("leads to unit offset 0xfff0, past the end of the unit"),
            "{err}"
        );
    }
}

/// Locations that are not global addresses make no variable, and no panic.
#[test]
fn locations_that_are_not_addresses_make_no_variable() {
    // A truncated address operand; DW_OP_addrx without a .debug_addr.
    let short = [gimli::DW_OP_addr.0, 1, 2];
    let addrx = [gimli::DW_OP_addrx.0, 3];
    let own = addr_expr(0x10, &[]);
    let got = decode_vars(&[
        ("short", None, &short),
        ("noaddr", None, &addrx),
        ("own", None, &own),
    ]);
    assert_eq!(got, Ok(vec![(Some(b"own".to_vec()), 0x10, 0)]));
}
