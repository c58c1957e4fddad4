//! DWARF whose references or names BTF cannot hold is refused with one line naming the DIE,
//! where it used to give BTF every kernel rejects (and dwarf2btf's own `verify` flags): a
//! struct containing itself by value, references past the end of their unit or into the
//! middle of a DIE (types, abstract origins, variables), names longer than the kernel takes.
//! Each case is a real object compiled here with one reference or name changed.

use std::path::{Path, PathBuf};

use crate::common::bad_dwarf::*;
use crate::common::*;

const STRUCTS: &str = "struct inner { int a; long b; };
struct outer { struct inner in; int c; };
struct outer g;
int f(struct outer *o) { return o->c + g.c; }
";

fn structs(name: &str) -> (PathBuf, Vec<Die>) {
    let obj = compile(name, STRUCTS, "gcc", &["-g", "-O2", "-gdwarf-4"]);
    let dies = read_dies(&obj);
    (obj, dies)
}

/// The member `member` of the struct whose DIE is `of`.
fn member<'d>(dies: &'d [Die], of: &Die, member: &str) -> &'d Die {
    dies.iter()
        .skip_while(|d| d.offset != of.offset)
        .find(|d| d.tag == "DW_TAG_member" && d.named(member))
        .unwrap_or_else(|| panic!("no member {member}"))
}

/// The encoder succeeds on `obj` and its BTF passes `verify`.
fn encodes_valid(obj: &Path) {
    let out = obj.with_extension("btf");
    let o = encode(obj, &out, &[]);
    assert!(o.status.success(), "{}", text(&o));
    let v = run(std::process::Command::new(bin()).arg("verify").arg(&out));
    assert!(v.status.success(), "{}", text(&v));
}

#[test]
fn a_struct_containing_itself_by_value_is_refused() {
    let (obj, dies) = structs("self.c");
    encodes_valid(&obj);
    let outer = die_named(&dies, "DW_TAG_structure_type", "outer");
    let inner_member = member(&dies, outer, "in");
    let at = inner_member.attr_at("DW_AT_type");
    let p = with_ref4(&obj, "self-contained.o", at, outer.offset as u32);
    assert_clean_failure(&p, "this type contains itself by value");
    // `struct b`'s member `ok` made an `a_t` instead of an `a_t *`: through a typedef and an
    // array, each struct holds the other.
    let src = "typedef struct a a_t;\nstruct b { a_t *ok; int n; };\nstruct a { struct b b[2]; };\nstruct a x;\n";
    let obj = compile("mutual.c", src, "gcc", &["-g", "-gdwarf-4"]);
    encodes_valid(&obj);
    let dies = read_dies(&obj);
    let typedef = die_named(&dies, "DW_TAG_typedef", "a_t");
    let p = with_ref4(
        &obj,
        "mutual-by-value.o",
        member(&dies, die_named(&dies, "DW_TAG_structure_type", "b"), "ok").attr_at("DW_AT_type"),
        typedef.offset as u32,
    );
    assert_clean_failure(&p, "this type contains itself by value");
}

#[test]
fn a_member_type_past_the_unit_is_refused() {
    let (obj, dies) = structs("past.c");
    let inner = die_named(&dies, "DW_TAG_structure_type", "inner");
    let at = member(&dies, inner, "a").attr_at("DW_AT_type");
    let p = with_ref4(&obj, "past-unit.o", at, 0x10_0000);
    assert_clean_failure(
        &p,
        "leads to unit offset 0x100000, past the end of the unit",
    );
}

#[test]
fn a_member_type_into_the_middle_of_a_die_is_refused() {
    let (obj, dies) = structs("middle.c");
    let inner = die_named(&dies, "DW_TAG_structure_type", "inner");
    let int = die_named(&dies, "DW_TAG_base_type", "int");
    let at = member(&dies, inner, "a").attr_at("DW_AT_type");
    let p = with_ref4(&obj, "mid-die.o", at, int.offset as u32 + 1);
    assert_clean_failure(
        &p,
        &format!(
            "DW_AT_type leads to unit offset {:#x}, where no DIE starts",
            int.offset + 1
        ),
    );
}

#[test]
fn a_variable_type_into_the_middle_of_a_die_is_refused() {
    let (obj, dies) = structs("variable.c");
    let g = die_named(&dies, "DW_TAG_variable", "g");
    let outer = die_named(&dies, "DW_TAG_structure_type", "outer");
    let p = with_ref4(
        &obj,
        "var-mid-die.o",
        g.attr_at("DW_AT_type"),
        outer.offset as u32 + 2,
    );
    assert_clean_failure(&p, "variable type (DW_AT_type) leads to unit offset");
}

/// A parameter's abstract origin pointed into the middle of its function's DIE used to be
/// read there: the parameter took whatever the bytes parsed as.
#[test]
fn an_abstract_origin_into_the_middle_of_a_die_is_refused() {
    let src = "struct s { int a; long b; };
static __attribute__((noinline)) int helper(struct s *p, int unused) { return p->a; }
int api(struct s *p) { return helper(p, 3) + 1; }
int api2(struct s *p, int x) { return helper(p, x) + 2; }
";
    let obj = compile("origin.c", src, "gcc", &["-g", "-O2", "-gdwarf-4"]);
    encodes_valid(&obj);
    let dies = read_dies(&obj);
    // The out-of-line helper: a subprogram with an abstract origin, parameters following.
    let concrete = dies
        .iter()
        .position(|d| d.tag == "DW_TAG_subprogram" && d.attr("DW_AT_abstract_origin").is_some())
        .expect("a concrete out-of-line instance");
    let parm = dies[concrete..]
        .iter()
        .find(|d| d.tag == "DW_TAG_formal_parameter")
        .expect("its parameter");
    let p = with_ref4(
        &obj,
        "parm-origin-mid-die.o",
        parm.attr_at("DW_AT_abstract_origin"),
        dies[concrete].offset as u32 + 3,
    );
    assert_clean_failure(&p, "DW_AT_abstract_origin leads to unit offset");
    let p = with_ref4(
        &obj,
        "origin-past-unit.o",
        dies[concrete].attr_at("DW_AT_abstract_origin"),
        0x10_0000,
    );
    assert_clean_failure(&p, "past the end of the unit");
}

/// Names longer than the kernel's `KSYM_NAME_LEN` (512) in a struct, a member, a function and
/// a parameter; 512 bytes pass, and verify.
#[test]
fn names_longer_than_the_kernel_takes_are_refused() {
    let name = |n: usize| "x".repeat(n);
    let cases = |n: usize| {
        let x = name(n);
        [
            format!("struct {x} {{ int a; }};\nstruct {x} *p;\n"),
            format!("struct s {{ int {x}; }};\nstruct s *p;\n"),
            format!("int {x}(int a) {{ return a + 1; }}\n"),
            format!("int f(int {x}) {{ return {x} + 1; }}\n"),
        ]
    };
    for (i, src) in cases(512).iter().enumerate() {
        encodes_valid(&compile(&format!("name512_{i}.c"), src, "gcc", &["-g"]));
    }
    for (i, src) in cases(513).iter().enumerate() {
        let obj = compile(&format!("name513_{i}.c"), src, "gcc", &["-g"]);
        assert_clean_failure(&obj, "DW_AT_name is 513 bytes long");
    }
}
