//! The rules of `toolbox::verify` for type records: the meta checks of each kind (the M rules)
//! and the resolve checks across types (the R rules), on hand-made records appended to the
//! valid sample, one test per family; split BTF, and the limit on problems reported.

use crate::common::verify_sample;

use std::sync::Arc;

use dwarf2btf::btf::{kinds, write, Btf, Kind};
use dwarf2btf::toolbox::verify;
use verify_sample::*;

#[test]
fn unknown_kind_and_info_bits() {
    let p = with_record(|_, _| vec![0, 20 << 24, 0]);
    assert_only_rule(&p, "M1-kind");
    let p = with_record(|_, _| vec![0, 0, 0]);
    assert_only_rule(&p, "M1-kind");
    let p = with_record(|_, ids| vec![0, info(Kind::Ptr, 0, false) | 1 << 16, ids.int]);
    assert_only_rule(&p, "M1-info-bits");
    let p = with_record(|_, ids| vec![0, info(Kind::Ptr, 0, false) | 1 << 30, ids.int]);
    assert_only_rule(&p, "M1-info-bits");

    // An unknown kind in the middle of raw bytes: the rest cannot be sized, so it is reported
    // once and nothing after it is checked.
    let p = patched(|ids| ids.s, 1, |_| 25 << 24);
    assert_eq!(p.len(), 1, "{}", show(&p));
    assert_eq!(p[0].rule, "M1-kind");
    assert_eq!(p[0].type_id, Some(6));

    // A record whose vlen runs past the type section.
    let (mut b, ids) = sample();
    b.push_record(&[0, info(Kind::Struct, 5, false), 4, 0, ids.int, 0])
        .unwrap();
    let p = verify::verify_bytes(&write::to_bytes(&b), None);
    assert_only_rule(&p, "M2-truncated");
    assert_only_rule(&verify::verify(&b), "M2-truncated");
}

#[test]
fn name_rules() {
    let p = with(|b, ids| {
        b.add_composite(Kind::Struct, Some(b"1abc"), 4).unwrap();
        b.add_field(Some(b"a"), ids.int, 0, 0).unwrap();
    });
    assert_only_rule(&p, "M4-name");
    let p = with(|b, ids| {
        b.add_composite(Kind::Struct, Some(b"ok"), 4).unwrap();
        b.add_field(Some(b"a-b"), ids.int, 0, 0).unwrap();
    });
    assert_only_rule(&p, "M4-name");
    // PTR, CONST, ARRAY and FUNC_PROTO must be anonymous.
    let p = with_record(|b, ids| vec![b.add_str(b"p"), info(Kind::Ptr, 0, false), ids.int]);
    assert_only_rule(&p, "M4-name");
    let p = with_record(|b, ids| vec![b.add_str(b"c"), info(Kind::Const, 0, false), ids.int]);
    assert_only_rule(&p, "M4-name");
    let p = with_record(|b, ids| {
        vec![
            b.add_str(b"a"),
            info(Kind::Array, 0, false),
            0,
            ids.int,
            ids.int,
            1,
        ]
    });
    assert_only_rule(&p, "M4-name");
    let p = with_record(|b, ids| vec![b.add_str(b"fp"), info(Kind::FuncProto, 0, false), ids.int]);
    assert_only_rule(&p, "M4-name");
    // TYPEDEF, FWD, FUNC, VAR, DATASEC must be named; TYPE_TAG / DECL_TAG non-empty.
    let p = with_record(|_, ids| vec![0, info(Kind::Typedef, 0, false), ids.int]);
    assert_only_rule(&p, "M4-name");
    let p = with_record(|_, ids| vec![0, info(Kind::TypeTag, 0, false), ids.int]);
    assert_only_rule(&p, "M4-name");
    let p = with_record(|_, ids| vec![0, info(Kind::DeclTag, 0, false), ids.s, u32::MAX]);
    assert_only_rule(&p, "M4-name");
    let p = with_record(|_, ids| vec![0, info(Kind::Var, 0, false), ids.int, 0]);
    assert_only_rule(&p, "M4-name");
    // Dots: fine in every identifier since 6.1.y ("bpf: Accept function names that contain
    // dots"); other punctuation is not.
    let p = with(|b, ids| {
        b.add_func(b"f-cold", 0, ids.proto).unwrap();
    });
    assert_only_rule(&p, "M4-name");
    assert!(with(|b, ids| {
        b.add_func(b"f.cold", 0, ids.proto).unwrap();
        b.add_ref(Kind::Typedef, Some(b"a.b"), ids.int).unwrap();
        b.add_var(b".L.str", 0, ids.int).unwrap();
        b.add_datasec(b".data..percpu", 4).unwrap();
    })
    .is_empty());
    // Enumerators must be named.
    let p = with_record(|b, _| vec![0, info(Kind::Enum, 1, false), 4, b.add_str(b"9"), 0]);
    assert_only_rule(&p, "M4-name");
    let p = with_record(|_, _| vec![0, info(Kind::Enum, 1, false), 4, 0, 0]);
    assert_only_rule(&p, "M4-name");
    // KSYM_NAME_LEN (512 in 6.1) bounds identifiers.
    let long = vec![b'a'; 512];
    assert!(with(|b, ids| {
        b.add_ref(Kind::Typedef, Some(&long), ids.int).unwrap();
    })
    .is_empty());
    let longer = vec![b'a'; 513];
    let p = with(|b, ids| {
        b.add_ref(Kind::Typedef, Some(&longer), ids.int).unwrap();
    });
    assert_only_rule(&p, "M4-name");
    // Name offsets past the string section.
    let p = with_record(|b, ids| vec![b.str_end() + 10, info(Kind::Typedef, 0, false), ids.int]);
    assert_only_rule(&p, "M3-name-offset");
    let p = with_record(|b, ids| vec![0, info(Kind::Struct, 1, false), 4, b.str_end(), ids.int, 0]);
    assert_only_rule(&p, "M3-name-offset");
}

#[test]
fn vlen_and_kflag_rules() {
    let p = with_record(|_, ids| vec![0, info(Kind::Ptr, 1, false), ids.int]);
    assert_only_rule(&p, "M5-vlen");
    let p = with_record(|b, _| vec![b.add_str(b"fl"), info(Kind::Float, 2, false), 4]);
    assert_only_rule(&p, "M5-vlen");
    let p = with_record(|b, _| vec![b.add_str(b"fw"), info(Kind::Fwd, 1, false), 0]);
    assert_only_rule(&p, "M5-vlen");
    let p = with_record(|b, _| {
        vec![
            b.add_str(b"i"),
            info(Kind::Int, 0, true),
            4,
            kinds::int_data(0, 0, 32),
        ]
    });
    assert_only_rule(&p, "M6-kflag");
    let p = with_record(|_, ids| vec![0, info(Kind::Const, 0, true), ids.int]);
    assert_only_rule(&p, "M6-kflag");
    let p = with_record(|_, ids| vec![0, info(Kind::Array, 0, true), 0, ids.int, ids.int, 1]);
    assert_only_rule(&p, "M6-kflag");
    // kind_flag on TYPE_TAG and DECL_TAG (an attribute) is taken by the newest rules, which
    // a file judged on its own gets; by release in tag_kflag_by_release.
    let p = with_record(|b, ids| vec![b.add_str(b"t"), info(Kind::TypeTag, 0, true), ids.int]);
    assert!(p.is_empty(), "{}", show(&p));
    let p = with_record(|b, ids| vec![b.add_str(b"g"), info(Kind::Var, 0, true), ids.int, 0]);
    assert_only_rule(&p, "M6-kflag");
    // kind_flag is meaningful on STRUCT/UNION (bitfields), FWD (union) and ENUM (signed).
    assert!(with(|b, _| {
        b.add_fwd(b"x", true).unwrap();
        b.add_enum(Kind::Enum, None, 4, true).unwrap();
        b.add_enum_value(b"Z", -5).unwrap();
    })
    .is_empty());
}

/// kind_flag 1 on TYPE_TAG and DECL_TAG (an arbitrary `__attribute__`) by release: rejected
/// before 6.15, taken from 6.15 on; other kinds' kind_flag rules do not change.
#[test]
fn tag_kflag_by_release() {
    let (mut b, ids) = sample();
    let tag = b.add_str(b"address_space(1)");
    let type_tag = b
        .push_record(&[tag, info(Kind::TypeTag, 0, true), ids.int])
        .unwrap();
    b.push_record(&[0, info(Kind::Ptr, 0, false), type_tag])
        .unwrap();
    let attr = b.add_str(b"aligned(8)");
    b.push_record(&[attr, info(Kind::DeclTag, 0, true), ids.s, u32::MAX])
        .unwrap();
    let bytes = write::to_bytes(&b);
    let judge = |version: &str| {
        let target = verify::Target::Kernel(version.parse().unwrap());
        verify::judge(&bytes, None, target).problems
    };
    for old in ["6.1", "6.14"] {
        let p = judge(old);
        assert_eq!(p.len(), 2, "{old}:\n{}", show(&p));
        assert_only_rule(&p, "M6-kflag");
        assert!(
            p[0].message.contains("Linux 6.15 and later take"),
            "{}",
            p[0]
        );
    }
    for new in ["6.15", "7.2"] {
        assert!(judge(new).is_empty(), "{new}:\n{}", show(&judge(new)));
    }
    // On its own header: valid, and the kernels before 6.15 named with the first tag.
    let own = verify::judge(&bytes, None, verify::Target::OwnHeader);
    assert!(own.valid(), "{}", show(&own.problems));
    assert_eq!(own.before_tag_kflag.len(), 1);
    let first = &own.before_tag_kflag[0];
    assert_eq!(first.type_id, Some(type_tag));
    assert!(
        first.message
            == "TYPE_TAG 'address_space(1)' has kind_flag 1 (an attribute), as have 1 more tag(s)",
        "{first}"
    );
    assert!(
        own.report("f")
            .contains("f: kernels before 6.15 reject it: ["),
        "{}",
        own.report("f")
    );
    let p = with_record(|_, ids| vec![0, info(Kind::Const, 0, true), ids.int]);
    assert_only_rule(&p, "M6-kflag");
    let (mut b, ids) = sample();
    b.push_record(&[0, info(Kind::Const, 0, true), ids.int])
        .unwrap();
    let target = verify::Target::Kernel("7.2".parse().unwrap());
    assert_only_rule(
        &verify::judge(&write::to_bytes(&b), None, target).problems,
        "M6-kflag",
    );
}

#[test]
fn referenced_ids() {
    // Past BTF_MAX_TYPE: a meta error.
    let p = with_record(|_, _| vec![0, info(Kind::Ptr, 0, false), 0x10_0000]);
    assert_only_rule(&p, "M7-type-id");
    // Zero where a type is required.
    let p = with_record(|_, ids| vec![0, info(Kind::Array, 0, false), 0, 0, ids.int, 1]);
    assert_only_rule(&p, "M7-type-id");
    let p = with_record(|_, ids| vec![0, info(Kind::Array, 0, false), 0, ids.int, 0, 1]);
    assert_only_rule(&p, "M7-type-id");
    let p = with_record(|_, _| vec![0, info(Kind::Struct, 1, false), 4, 0, 0, 0]);
    assert_only_rule(&p, "M7-type-id");
    let p = with_record(|b, _| vec![b.add_str(b"z"), info(Kind::Var, 0, false), 0, 0]);
    assert_only_rule(&p, "M7-type-id");
    let p = with_record(|b, _| vec![b.add_str(b".z"), info(Kind::Datasec, 1, false), 4, 0, 0, 4]);
    assert_only_rule(&p, "M7-type-id");
    // Valid but nonexistent ids: a resolve error.
    let p = with_record(|b, _| vec![0, info(Kind::Ptr, 0, false), b.type_cnt() + 10]);
    assert_only_rule(&p, "R1-type-id");
    let p = with_record(|b, _| vec![0, info(Kind::Struct, 1, false), 8, 0, b.type_cnt() + 1, 0]);
    assert_only_rule(&p, "R1-type-id");
    let p = with_record(|b, _| vec![b.add_str(b"g"), info(Kind::Func, 0, false), 77777]);
    assert_only_rule(&p, "R1-type-id");
    let p = with_record(|_, _| vec![0, info(Kind::FuncProto, 0, false), 99999]);
    assert_only_rule(&p, "R1-type-id");
}

#[test]
fn int_rules() {
    let int = |size: u32, data: u32| {
        move |b: &mut Btf, _: &Ids| vec![b.add_str(b"i"), info(Kind::Int, 0, false), size, data]
    };
    assert_only_rule(&with_record(int(16, kinds::int_data(0, 0, 129))), "M8-int");
    assert_only_rule(&with_record(int(16, kinds::int_data(0, 100, 29))), "M8-int");
    assert_only_rule(&with_record(int(4, kinds::int_data(0, 0, 64))), "M8-int");
    assert_only_rule(&with_record(int(4, kinds::int_data(3, 0, 32))), "M8-int");
    assert_only_rule(&with_record(int(4, 1 << 28 | 32)), "M8-int");
    // The kernel allows bit offsets and odd sizes in INT itself (only members care).
    assert!(with_record(int(4, kinds::int_data(kinds::INT_BOOL, 3, 5))).is_empty());
    assert!(with_record(int(16, kinds::int_data(0, 0, 128))).is_empty());
}

#[test]
fn struct_and_union_member_offsets() {
    // Offsets must not decrease.
    let p = with(|b, ids| {
        b.add_composite(Kind::Struct, Some(b"d"), 8).unwrap();
        b.add_field(Some(b"a"), ids.int, 32, 0).unwrap();
        b.add_field(Some(b"b"), ids.int, 0, 0).unwrap();
    });
    assert_only_rule(&p, "M10-member-offset");
    // Equal offsets are fine (zero-size members).
    assert!(with(|b, ids| {
        b.add_composite(Kind::Struct, Some(b"z"), 4).unwrap();
        b.add_field(Some(b"a"), ids.int, 0, 0).unwrap();
        b.add_field(Some(b"b"), ids.int, 0, 0).unwrap();
    })
    .is_empty());
    // Union members sit at offset 0.
    let p = with_record(|b, ids| {
        vec![
            b.add_str(b"uu"),
            info(Kind::Union, 1, false),
            8,
            b.add_str(b"m"),
            ids.int,
            32,
        ]
    });
    assert_only_rule(&p, "M10-member-offset");
    // An offset past the size.
    let p = with(|b, ids| {
        b.add_composite(Kind::Struct, Some(b"small"), 4).unwrap();
        b.add_field(Some(b"a"), ids.int, 40, 0).unwrap();
    });
    assert_only_rule(&p, "M10-member-offset");
    // A member that starts inside but ends outside: found when resolving.
    let p = with(|b, ids| {
        b.add_composite(Kind::Struct, Some(b"small"), 4).unwrap();
        b.add_field(Some(b"l"), ids.long, 0, 0).unwrap();
    });
    assert_only_rule(&p, "R5-member");
    // A bitfield wider than its int.
    let p = with(|b, ids| {
        b.add_composite(Kind::Struct, Some(b"bf"), 8).unwrap();
        b.add_field(Some(b"w"), ids.int, 0, 40).unwrap();
    });
    assert_only_rule(&p, "R5-member");
    // A struct member by value of an incomplete type.
    let p = with(|b, ids| {
        b.add_composite(Kind::Struct, Some(b"inc"), 8).unwrap();
        b.add_field(Some(b"o"), ids.fwd, 0, 0).unwrap();
    });
    assert_only_rule(&p, "R5-member");
    // A pointer member that is not byte aligned (old-style, kind_flag 0).
    let p = with_record(|b, _| {
        let ptr = b.add_ref(Kind::Ptr, None, 0).unwrap();
        vec![
            b.add_str(b"pp"),
            info(Kind::Struct, 1, false),
            16,
            b.add_str(b"p"),
            ptr,
            4,
        ]
    });
    assert_only_rule(&p, "R5-member");
    // A misaligned FLOAT.
    let p = with_record(|b, ids| {
        vec![
            b.add_str(b"ff"),
            info(Kind::Struct, 1, false),
            16,
            b.add_str(b"f"),
            ids.float,
            32,
        ]
    });
    assert_only_rule(&p, "R5-member");
    // A union member by value.
    assert!(with(|b, ids| {
        b.add_composite(Kind::Struct, Some(b"wrap"), 8).unwrap();
        b.add_field(Some(b"u"), ids.u, 0, 0).unwrap();
    })
    .is_empty());
}

#[test]
fn enum_size() {
    for size in [0, 3, 16] {
        let p = with_record(move |b, _| {
            vec![
                b.add_str(b"en"),
                info(Kind::Enum, 1, false),
                size,
                b.add_str(b"V"),
                1,
            ]
        });
        assert_only_rule(&p, "M11-enum-size");
    }
    let p = with_record(|b, _| {
        vec![
            b.add_str(b"en"),
            info(Kind::Enum64, 1, false),
            16,
            b.add_str(b"V"),
            1,
            0,
        ]
    });
    assert_only_rule(&p, "M11-enum-size");
    // A forward-declared enum (vlen 0) of every legal size.
    for size in [1, 2, 4, 8] {
        assert!(
            with_record(move |b, _| vec![b.add_str(b"en"), info(Kind::Enum, 0, false), size])
                .is_empty()
        );
    }
}

#[test]
fn fwd_rules() {
    let p = with_record(|b, _| vec![b.add_str(b"fw"), info(Kind::Fwd, 0, false), 4]);
    assert_only_rule(&p, "M12-fwd");
    let p = with_record(|_, _| vec![0, info(Kind::Fwd, 0, false), 0]);
    assert_only_rule(&p, "M4-name");
}

#[test]
fn float_size() {
    for size in [0, 1, 3, 10, 32] {
        let p = with_record(move |b, _| vec![b.add_str(b"fl"), info(Kind::Float, 0, false), size]);
        assert_only_rule(&p, "M13-float-size");
    }
}

#[test]
fn func_linkage_and_proto() {
    // BTF_FUNC_EXTERN (2) is not accepted by the kernel.
    let p = with(|b, ids| {
        b.add_func(b"g", 2, ids.proto).unwrap();
    });
    assert_only_rule(&p, "M5-func-linkage");
    let p = with(|b, ids| {
        b.add_func(b"g", 0, ids.int).unwrap();
    });
    assert_only_rule(&p, "R6-func-proto");
    let p = with(|b, _| {
        b.add_func(b"g", 0, 0).unwrap();
    });
    assert_only_rule(&p, "R6-func-proto");
    // A FUNC's parameters must be named (an anonymous FUNC_PROTO's need not be).
    let p = with(|b, ids| {
        let proto = b.add_func_proto(0).unwrap();
        b.add_func_param(None, ids.int).unwrap();
        b.add_func(b"g", 0, proto).unwrap();
    });
    assert_only_rule(&p, "R6-func-param-name");
    assert!(with(|b, ids| {
        b.add_func_proto(0).unwrap();
        b.add_func_param(None, ids.int).unwrap();
    })
    .is_empty());
}

#[test]
fn func_proto_vararg_and_params() {
    // A vararg (type 0) that is not the last parameter.
    let p = with(|b, ids| {
        b.add_func_proto(0).unwrap();
        b.add_func_param(None, 0).unwrap();
        b.add_func_param(Some(b"a"), ids.int).unwrap();
    });
    assert_only_rule(&p, "R7-vararg");
    // A named vararg.
    let p = with(|b, _| {
        b.add_func_proto(0).unwrap();
        b.add_func_param(Some(b"rest"), 0).unwrap();
    });
    assert_only_rule(&p, "R7-vararg");
    // A lone vararg is fine.
    assert!(with(|b, _| {
        b.add_func_proto(0).unwrap();
        b.add_func_param(None, 0).unwrap();
    })
    .is_empty());
    // Return and parameter types need a size.
    let p = with(|b, ids| {
        b.add_func_proto(ids.fwd).unwrap();
    });
    assert_only_rule(&p, "R7-proto-return");
    let p = with(|b, ids| {
        b.add_func_proto(ids.var_v).unwrap();
    });
    assert_only_rule(&p, "R7-proto-return");
    let p = with(|b, ids| {
        b.add_func_proto(0).unwrap();
        b.add_func_param(Some(b"o"), ids.fwd).unwrap();
    });
    assert_only_rule(&p, "R7-proto-param");
    let p = with(|b, ids| {
        b.add_func_proto(0).unwrap();
        b.add_func_param(Some(b"1x"), ids.int).unwrap();
    });
    assert_only_rule(&p, "R7-param-name");
}

#[test]
fn var_linkage_and_type() {
    let p = with_record(|b, ids| vec![b.add_str(b"x"), info(Kind::Var, 0, false), ids.int, 2]);
    assert_only_rule(&p, "M15-var-linkage");
    let p = with(|b, ids| {
        b.add_var(b"x", 0, ids.fwd).unwrap();
    });
    assert_only_rule(&p, "R10-var-type");
    let p = with(|b, ids| {
        b.add_var(b"x", 0, ids.proto).unwrap();
    });
    assert_only_rule(&p, "R10-var-type");
    let p = with(|b, ids| {
        b.add_var(b"x", 0, ids.var_w).unwrap();
    });
    assert_only_rule(&p, "R2-ref-target");
}

#[test]
fn datasec_ordering_and_entries() {
    // Overlapping entries.
    let p = with(|b, ids| {
        b.add_datasec(b".bss", 32).unwrap();
        b.add_datasec_var(ids.var_v, 0, 16).unwrap();
        b.add_datasec_var(ids.var_w, 8, 4).unwrap();
    });
    assert_only_rule(&p, "M14-datasec");
    // Unsorted entries.
    let p = with(|b, ids| {
        b.add_datasec(b".bss", 32).unwrap();
        b.add_datasec_var(ids.var_w, 16, 4).unwrap();
        b.add_datasec_var(ids.var_v, 0, 16).unwrap();
    });
    assert_only_rule(&p, "M14-datasec");
    // Past the section size, size 0 entry, size 0 section.
    let p = with(|b, ids| {
        b.add_datasec(b".bss", 16).unwrap();
        b.add_datasec_var(ids.var_w, 14, 4).unwrap();
    });
    assert_only_rule(&p, "M14-datasec");
    let p = with(|b, ids| {
        b.add_datasec(b".bss", 16).unwrap();
        b.add_datasec_var(ids.var_w, 0, 0).unwrap();
    });
    assert_only_rule(&p, "M14-datasec");
    let p = with_record(|b, _| vec![b.add_str(b".bss"), info(Kind::Datasec, 0, false), 0]);
    assert_only_rule(&p, "M14-datasec");
    // Entries must be VARs, as big as their type.
    let p = with(|b, ids| {
        b.add_datasec(b".bss", 16).unwrap();
        b.add_datasec_var(ids.int, 0, 4).unwrap();
    });
    assert_only_rule(&p, "R8-datasec-var");
    let p = with(|b, ids| {
        b.add_datasec(b".bss", 16).unwrap();
        b.add_datasec_var(ids.var_v, 0, 8).unwrap();
    });
    assert_only_rule(&p, "R8-datasec-size");
    // A DATASEC before its VARs still gets every entry checked.
    let p = with(|b, ids| {
        let ds = b.type_cnt();
        b.add_datasec(b".bss", 16).unwrap();
        b.add_datasec_var(ds + 1, 0, 2).unwrap();
        b.add_var(b"late", 0, ids.int).unwrap();
    });
    assert_only_rule(&p, "R8-datasec-size");
}

#[test]
fn decl_tag_component() {
    let p = with(|b, ids| {
        let name = b.add_str(b"t");
        b.push_record(&[name, info(Kind::DeclTag, 0, false), ids.s, -2i32 as u32])
            .unwrap();
    });
    assert_only_rule(&p, "M16-decl-tag-component");
    // Component past the members of the struct / the parameters of the FUNC.
    let p = with(|b, ids| {
        b.add_decl_tag(b"t", ids.s, 3).unwrap();
    });
    assert_only_rule(&p, "R9-decl-tag-component");
    let p = with(|b, ids| {
        b.add_decl_tag(b"t", ids.func, 3).unwrap();
    });
    assert_only_rule(&p, "R9-decl-tag-component");
    // VAR and TYPEDEF tags take no component.
    let p = with(|b, ids| {
        b.add_decl_tag(b"t", ids.var_v, 0).unwrap();
    });
    assert_only_rule(&p, "R9-decl-tag-component");
    // Only STRUCT, UNION, FUNC, VAR, TYPEDEF can be tagged.
    let p = with(|b, ids| {
        b.add_decl_tag(b"t", ids.int, -1).unwrap();
    });
    assert_only_rule(&p, "R9-decl-tag-target");
    assert!(with(|b, ids| {
        b.add_decl_tag(b"t", ids.u, 1).unwrap();
        b.add_decl_tag(b"t", ids.var_v, -1).unwrap();
    })
    .is_empty());
}

#[test]
fn type_tag_ordering() {
    // PTR -> CONST -> TYPE_TAG -> int: the tag comes after a modifier.
    let p = with(|b, ids| {
        let tag = b.add_ref(Kind::TypeTag, Some(b"user"), ids.int).unwrap();
        let c = b.add_ref(Kind::Const, None, tag).unwrap();
        b.add_ref(Kind::Ptr, None, c).unwrap();
    });
    assert_only_rule(&p, "M17-type-tag-order");
    // A chain through already-checked types is still checked.
    let p = with(|b, ids| {
        let tag = b.add_ref(Kind::TypeTag, Some(b"user"), ids.int).unwrap();
        let v = b.add_ref(Kind::Volatile, None, tag).unwrap();
        b.add_ref(Kind::Const, None, v).unwrap();
    });
    assert_eq!(p.len(), 1, "{}", show(&p));
    assert_eq!(p[0].rule, "M17-type-tag-order");
    // More than 32 modifiers in a row (declared outermost first: the kernel only walks the
    // links it has not checked yet).
    let p = with(|b, ids| {
        let first = b.type_cnt();
        for i in 0..40 {
            let next = if i == 39 { ids.int } else { first + i + 1 };
            b.add_ref(Kind::Const, None, next).unwrap();
        }
    });
    assert_rule(&p, "M17-type-tag-chain");
}

#[test]
fn resolve_loops_and_depth() {
    // A struct containing itself by value.
    let p = with(|b, ids| {
        let me = b.type_cnt();
        b.add_composite(Kind::Struct, Some(b"me"), 8).unwrap();
        b.add_field(Some(b"a"), ids.int, 0, 0).unwrap();
        b.add_field(Some(b"self"), me, 32, 0).unwrap();
    });
    assert_eq!(p.len(), 1, "{}", show(&p));
    assert_eq!(p[0].rule, "R3-loop");
    // Two structs containing each other, through a typedef: reported once.
    let p = with(|b, ids| {
        let a = b.type_cnt();
        b.add_composite(Kind::Struct, Some(b"A"), 8).unwrap();
        b.add_field(Some(b"b"), a + 1, 0, 0).unwrap();
        b.add_composite(Kind::Struct, Some(b"B"), 8).unwrap();
        b.add_field(Some(b"x"), ids.int, 0, 0).unwrap();
        b.add_field(Some(b"a"), a + 2, 32, 0).unwrap();
        b.add_ref(Kind::Typedef, Some(b"A_t"), a).unwrap();
    });
    assert_eq!(p.len(), 1, "{}", show(&p));
    assert_eq!(p[0].rule, "R3-loop");
    // A cycle through a pointer is fine (the sample's `s` has one); a pointer cycle is not.
    let p = with(|b, _| {
        let p = b.type_cnt();
        b.add_ref(Kind::Ptr, None, p + 1).unwrap();
        b.add_ref(Kind::Const, None, p).unwrap();
    });
    assert_rule(&p, "R3-loop");
    // Deeper than MAX_RESOLVE_DEPTH (32) nested structs.
    let p = with(|b, ids| {
        let first = b.type_cnt();
        for i in 0..40 {
            b.add_composite(Kind::Struct, Some(format!("n{i}").as_bytes()), 4)
                .unwrap();
            let inner = if i == 39 { ids.int } else { first + i + 1 };
            b.add_field(Some(b"x"), inner, 0, 0).unwrap();
        }
    });
    assert_rule(&p, "R3-depth");
    // The same nesting declared innermost-first resolves one level at a time.
    assert!(with(|b, ids| {
        for i in 0..40 {
            let inner = b
                .add_composite(Kind::Struct, Some(format!("m{i}").as_bytes()), 4)
                .unwrap();
            let prev = if i == 0 { ids.int } else { inner - 1 };
            b.add_field(Some(b"x"), prev, 0, 0).unwrap();
        }
    })
    .is_empty());
}

#[test]
fn array_index_and_element() {
    let p = with(|b, ids| {
        b.add_array(ids.s, ids.int, 2).unwrap();
    });
    assert_only_rule(&p, "R4-array-index");
    let p = with(|b, ids| {
        b.add_array(ids.float, ids.int, 2).unwrap();
    });
    assert_only_rule(&p, "R4-array-index");
    let p = with(|b, ids| {
        let odd = b.type_cnt();
        let name = b.add_str(b"u3");
        b.push_record(&[name, info(Kind::Int, 0, false), 1, 3])
            .unwrap();
        b.add_array(odd, ids.int, 2).unwrap();
    });
    assert_only_rule(&p, "R4-array-index");
    let p = with(|b, ids| {
        b.add_array(ids.uint, ids.proto, 2).unwrap();
    });
    assert_only_rule(&p, "R4-array-elem");
    let p = with(|b, ids| {
        b.add_array(ids.uint, ids.fwd, 2).unwrap();
    });
    assert_only_rule(&p, "R4-array-elem");
    let p = with(|b, ids| {
        b.add_array(ids.uint, ids.int, 0x4000_0001).unwrap();
    });
    assert_only_rule(&p, "R4-array-overflow");
    // Arrays of arrays, of structs, of pointers, and flexible arrays are fine.
    assert!(with(|b, ids| {
        let a = b.add_array(ids.uint, ids.int, 3).unwrap();
        b.add_array(ids.uint, a, 2).unwrap();
        b.add_array(ids.uint, ids.s, 0).unwrap();
        let p = b.add_ref(Kind::Ptr, None, ids.s).unwrap();
        b.add_array(ids.uint, p, 8).unwrap();
    })
    .is_empty());
}

#[test]
fn ref_targets() {
    let p = with(|b, ids| {
        b.add_ref(Kind::Ptr, None, ids.datasec).unwrap();
    });
    assert_only_rule(&p, "R2-ref-target");
    let p = with(|b, ids| {
        b.add_ref(Kind::Const, None, ids.var_v).unwrap();
    });
    assert_only_rule(&p, "R2-ref-target");
    // `typedef void`, `const struct fwd`, pointers to functions are fine.
    assert!(with(|b, ids| {
        b.add_ref(Kind::Typedef, Some(b"void_t"), 0).unwrap();
        b.add_ref(Kind::Const, None, ids.fwd).unwrap();
        b.add_ref(Kind::Ptr, None, ids.proto).unwrap();
    })
    .is_empty());
}

#[test]
fn broken_types_do_not_cascade() {
    // A member of a broken INT: only the INT is reported.
    let p = with(|b, _| {
        let bad = b.type_cnt();
        let name = b.add_str(b"bad");
        b.push_record(&[name, info(Kind::Int, 0, false), 4, 200])
            .unwrap();
        b.add_composite(Kind::Struct, Some(b"user"), 4).unwrap();
        b.add_field(Some(b"x"), bad, 0, 0).unwrap();
        b.add_ref(Kind::Typedef, Some(b"user_t"), bad + 1).unwrap();
    });
    assert_eq!(p.len(), 1, "{}", show(&p));
    assert_eq!(p[0].rule, "M8-int");
    // One problem per type even when several of its members are wrong.
    let p = with(|b, _| {
        b.add_composite(Kind::Struct, Some(b"two"), 4).unwrap();
        b.add_field(Some(b"1"), 1, 0, 0).unwrap();
        b.add_field(Some(b"2"), 1, 0, 0).unwrap();
    });
    assert_eq!(p.len(), 1, "{}", show(&p));
}

#[test]
fn split_btf() {
    let (base, ids) = sample();
    let base = Arc::new(base);
    let mut split = Btf::new_split(base.clone());
    // Only base strings and types: an empty split string section.
    let p = split.add_ref(Kind::Ptr, None, ids.s).unwrap();
    assert_valid(&split);
    assert!(split.strings().is_empty());
    let name = split.add_str(b"mod_struct");
    assert!(name >= base.str_end());
    split
        .add_composite(Kind::Struct, Some(b"mod_struct"), 24)
        .unwrap();
    split.add_field(Some(b"s"), ids.s, 0, 0).unwrap();
    split.add_field(Some(b"p"), p, 128, 0).unwrap();
    split.add_func(b"mod_f", 0, ids.proto).unwrap();
    assert_valid(&split);
    // The split string section does not start with the empty string, and need not.
    assert_ne!(split.strings().as_bytes()[0], 0);

    let bytes = write::to_bytes(&split);
    // Without its base the same bytes are broken.
    assert!(!verify::verify_bytes(&bytes, None).is_empty());
    // A split type looping through a base struct by value is impossible; a bad split type is
    // reported with its split id.
    let mut bad = Btf::new_split(base.clone());
    bad.push_record(&[0, info(Kind::Ptr, 0, false), 500_000])
        .unwrap();
    let p = check(&bad);
    assert_eq!(p.len(), 1, "{}", show(&p));
    assert_eq!(p[0].rule, "R1-type-id");
    assert_eq!(p[0].type_id, Some(base.type_cnt()));
    let _ = (ids.func, ids.datasec);
}

#[test]
fn problem_limit() {
    let (mut b, ids) = sample();
    for _ in 0..300 {
        b.push_record(&[0, info(Kind::Ptr, 1, false), ids.int])
            .unwrap();
    }
    let p = check(&b);
    assert_eq!(p.len(), verify::MAX_PROBLEMS + 1);
    assert_eq!(p.last().unwrap().rule, verify::RULE_LIMIT);
    assert!(p.last().unwrap().to_string().starts_with("..."));
    assert_eq!(
        p[0].to_string().split(':').next().unwrap(),
        format!("[{}] M5-vlen", b.type_cnt() - 300)
    );
}
