//! The BTF model's own checks: building, reading back, split BTF on a base, and what each
//! malformed input is refused with.
use super::*;
use crate::error::Error;

#[test]
fn builds_like_libbpf() {
    let mut btf = Btf::new();
    let int = btf.add_int(b"int", 4, kinds::INT_SIGNED).unwrap();
    let s = btf.add_composite(Kind::Struct, Some(b"s"), 8).unwrap();
    btf.add_field(Some(b"a"), int, 0, 0).unwrap();
    btf.add_field(Some(b"b"), int, 35, 3).unwrap();
    let t = btf.type_by_id(s).unwrap();
    assert_eq!(t.k(), Kind::Struct);
    assert_eq!(t.vlen(), 2);
    assert!(t.kflag());
    let m: Vec<_> = t.members().collect();
    assert_eq!(m[1].bit_offset(true), 35);
    assert_eq!(m[1].bitfield_size(true), 3);
    assert_eq!(btf.name(t.name_off()), "s");
    assert!(btf.add_composite(Kind::Union, None, 4).is_ok());
    assert!(btf.add_field(None, int, 8, 0).is_err());
}

#[test]
fn negative_enum_value_sets_signed() {
    let mut btf = Btf::new();
    let e = btf.add_enum(Kind::Enum, Some(b"e"), 4, false).unwrap();
    btf.add_enum_value(b"A", 1).unwrap();
    assert!(!btf.type_by_id(e).unwrap().kflag());
    btf.add_enum_value(b"B", -1).unwrap();
    assert!(btf.type_by_id(e).unwrap().kflag());
    assert!(btf.add_enum_value(b"C", 1 << 33).is_err());
}

#[test]
fn split_continues_base_ids_and_strings() {
    let mut base = Btf::new();
    base.add_int(b"int", 4, kinds::INT_SIGNED).unwrap();
    let base = Arc::new(base);
    let mut split = Btf::new_split(base.clone());
    assert_eq!(split.start_id(), 2);
    assert_eq!(split.add_str(b"int"), 1);
    let p = split.add_ref(Kind::Ptr, None, 1).unwrap();
    assert_eq!(p, 2);
    assert_eq!(split.add_str(b"x"), base.str_end());
    assert_eq!(split.type_by_id(1).unwrap().k(), Kind::Int);
}

#[test]
fn ids_beyond_what_a_btf_can_hold_are_refused() {
    let bad = kinds::MAX_NR_TYPES + 1;
    let mut btf = Btf::new();
    let int = btf.add_int(b"int", 4, kinds::INT_SIGNED).unwrap();
    assert!(btf.add_ref(Kind::Ptr, None, bad).is_err());
    assert!(btf.add_ref(Kind::Typedef, Some(b"t"), bad).is_err());
    assert!(btf.add_type_attr(b"address_space(1)", bad).is_err());
    assert!(btf.add_array(int, bad, 1).is_err());
    assert!(btf.add_array(bad, int, 1).is_err());
    assert!(btf.add_func_proto(bad).is_err());
    assert!(btf.add_var(b"v", 0, bad).is_err());
    assert!(btf.add_decl_tag(b"tag", bad, -1).is_err());
    let proto = btf.add_func_proto(int).unwrap();
    assert!(btf.add_func_param(Some(b"p"), bad).is_err());
    assert!(btf.add_func(b"f", kinds::FUNC_STATIC, bad).is_err());
    btf.add_func(b"f", kinds::FUNC_STATIC, proto).unwrap();
    btf.add_composite(Kind::Struct, Some(b"s"), 4).unwrap();
    assert!(btf.add_field(Some(b"m"), bad, 0, 0).is_err());
    btf.add_datasec(b".data", 4).unwrap();
    assert!(btf.add_datasec_var(bad, 0, 4).is_err());
    // Nothing refused was added: int, the proto, the FUNC, the struct, the DATASEC.
    assert_eq!(btf.type_cnt(), 6);
    // Forward references are how BTF is built (libbpf allows them too), and the array
    // index placeholder is accepted until the concatenation replaces it.
    let ptr = btf.add_ref(Kind::Ptr, None, kinds::MAX_NR_TYPES).unwrap();
    assert_eq!(
        btf.type_by_id(ptr).unwrap().size_or_type(),
        kinds::MAX_NR_TYPES
    );
    assert!(btf.add_array(INDEX_PLACEHOLDER, int, 1).is_ok());
}

#[test]
fn limits_are_typed_and_read_as_before() {
    let mut btf = Btf::new();
    let int = btf.add_int(b"int", 4, kinds::INT_SIGNED).unwrap();
    let s = btf.add_composite(Kind::Struct, None, 4).unwrap();
    for _ in 0..kinds::MAX_VLEN {
        btf.add_field(None, int, 0, 0).unwrap();
    }
    let full = btf.add_field(None, int, 0, 0).unwrap_err();
    assert!(matches!(
        full,
        Error::BtfLimit(LimitError::TooManyMembers { id }) if id == s
    ));
    assert_eq!(
        full.to_string(),
        format!(
            "BTF limit exceeded: type [{s}] would have more than {} members",
            kinds::MAX_VLEN
        )
    );
    let mut held = Btf::new();
    assert!(matches!(
        held.hold_in_store(kinds::MAX_NR_TYPES),
        Err(Error::BtfLimit(LimitError::TooManyTypes))
    ));
}

#[test]
fn refusals_are_typed_and_read_as_before() {
    let refused = |r: Result<u32>| match r {
        Err(Error::Build(e)) => e,
        other => panic!("expected a BuildError, got {other:?}"),
    };
    let mut btf = Btf::new();
    let e = refused(btf.add_int(b"i", 3, 0));
    let name = "i".to_string();
    assert_eq!(e, BuildError::BadInt { name, byte_sz: 3 });
    assert_eq!(
        Error::from(e).to_string(),
        "invalid BTF: INT 'i' of 3 bytes: needs a name and a power-of-two size up to 16"
    );
    let e = refused(btf.add_ref(Kind::Typedef, None, 0));
    assert_eq!(e.to_string(), "TYPEDEF without a name");
    let e = refused(btf.add_ref(Kind::Ptr, None, kinds::MAX_NR_TYPES + 1));
    assert_eq!(
        e.to_string(),
        format!(
            "PTR refers to type id {}, beyond the {} a BTF can hold",
            kinds::MAX_NR_TYPES + 1,
            kinds::MAX_NR_TYPES
        )
    );
    let e = refused(btf.add_enum(Kind::Enum, None, 3, false));
    assert_eq!(
        e.to_string(),
        "ENUM of 3 bytes: needs a power-of-two size up to 8"
    );
    let e = refused(btf.add_decl_tag(b"tag", 0, -2));
    assert_eq!(e, BuildError::BadComponent { component_idx: -2 });
    assert!(matches!(
        btf.add_field(None, 0, 0, 0),
        Err(Error::Build(BuildError::NoPrecedingType {
            what: "member",
            kind: Kind::Struct
        }))
    ));
    btf.add_enum(Kind::Enum, None, 4, false).unwrap();
    assert!(matches!(
        btf.add_enum_value(b"", 1),
        Err(Error::Build(BuildError::UnnamedEnumerator))
    ));
    assert_eq!(
        btf.add_enum_value(b"E", 1 << 33).unwrap_err().to_string(),
        "invalid BTF: enumerator 'E' = 8589934592 does not fit a 32-bit ENUM"
    );
}
