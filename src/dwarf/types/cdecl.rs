//! C spelling of a CU's types, as a kernel developer writes a declaration: `const char *name`,
//! `unsigned long flags[4]`, `int (*okfn)(struct net *, struct sk_buff *)`, `char __user *buf`.
//!
//! C declarators read inside out: the declarator (the name, with `*`, `[N]` and `(...)` around
//! it) grows as the type is unwrapped from the outside in, until a named type (a base type, a
//! typedef, a struct/union/enum tag) or void ends it as the specifier on the left. A pointer
//! to an array or a function puts its `*` in parentheses.

use super::{CuTypes, Entry};
use crate::btf::Kind;

/// How deep a chain of types is followed before `...` stands for the rest (a malformed
/// cycle of modifiers would not end otherwise).
const MAX_DEPTH: usize = 32;

impl CuTypes<'_> {
    /// The type with small id `id` as C spells it without a name (`struct s *`,
    /// `const counter_t`, `int (*)(void)`).
    pub fn c_name(&self, id: u32) -> String {
        self.c_decl(id, "")
    }

    /// The declaration of `name` with the type of small id `id` (`char *const argv[]`).
    pub fn c_decl(&self, id: u32, name: &str) -> String {
        self.declare(id, name.to_string(), 0)
    }

    fn entry(&self, id: u32) -> Option<&Entry<'_>> {
        id.checked_sub(1).and_then(|i| self.entries.get(i as usize))
    }

    /// `declarator` declared with the type `id`: unwraps one type and recurses inwards.
    fn declare(&self, id: u32, declarator: String, depth: usize) -> String {
        let Some(entry) = self.entry(id) else {
            return with_specifier("void", &declarator);
        };
        if depth > MAX_DEPTH {
            return with_specifier("...", &declarator);
        }
        let inner = |ty: u32, declarator: String| self.declare(ty, declarator, depth + 1);
        match entry {
            Entry::Base { name, .. } | Entry::Typedef { name, .. } => {
                with_specifier(&String::from_utf8_lossy(name), &declarator)
            }
            Entry::Composite { union, name, .. } => with_specifier(
                &tagged(if *union { "union" } else { "struct" }, name),
                &declarator,
            ),
            Entry::Enum { name, .. } => with_specifier(&tagged("enum", name), &declarator),
            Entry::Modifier {
                kind: Kind::Ptr,
                ty,
            } => inner(*ty, format!("*{declarator}")),
            Entry::Modifier { kind, ty } => {
                let q = qualifier(*kind);
                if self.is_pointer(*ty) {
                    // `char *const p`: the qualifier binds to the pointer on its left.
                    inner(*ty, with_specifier(q, &declarator))
                } else {
                    format!("{q} {}", inner(*ty, declarator))
                }
            }
            // `char __user *buf`: the kernel's macros for btf_type_tag("user") and the like.
            Entry::TypeTag { value, ty } => {
                let tag = format!("__{}", String::from_utf8_lossy(value));
                inner(*ty, with_specifier(&tag, &declarator))
            }
            Entry::Array { elem, nelems } => {
                let size = if *nelems == 0 {
                    String::new()
                } else {
                    nelems.to_string()
                };
                inner(*elem, format!("{}[{size}]", grouped(declarator)))
            }
            Entry::FuncProto {
                ret,
                params,
                varargs,
            } => {
                let mut args: Vec<String> = self.params[params.start as usize..params.end as usize]
                    .iter()
                    .map(|(name, ty)| {
                        self.declare(*ty, String::from_utf8_lossy(name).into(), depth + 1)
                    })
                    .collect();
                if *varargs {
                    args.push("...".into());
                }
                let args = if args.is_empty() {
                    "void".to_string()
                } else {
                    args.join(", ")
                };
                inner(*ret, format!("{}({args})", grouped(declarator)))
            }
            Entry::Unsupported { tag } => {
                with_specifier(tag.static_string().unwrap_or("DW_TAG_?"), &declarator)
            }
        }
    }

    fn is_pointer(&self, id: u32) -> bool {
        matches!(
            self.entry(id),
            Some(Entry::Modifier {
                kind: Kind::Ptr,
                ..
            })
        )
    }
}

/// `struct foo`, or `struct {...}` when anonymous.
fn tagged(keyword: &str, name: &[u8]) -> String {
    if name.is_empty() {
        format!("{keyword} {{...}}")
    } else {
        format!("{keyword} {}", String::from_utf8_lossy(name))
    }
}

fn qualifier(kind: Kind) -> &'static str {
    match kind {
        Kind::Const => "const",
        Kind::Volatile => "volatile",
        _ => "restrict",
    }
}

/// The specifier (or qualifier) on the left of a declarator, a space between them.
fn with_specifier(specifier: &str, declarator: &str) -> String {
    if declarator.is_empty() {
        specifier.to_string()
    } else {
        format!("{specifier} {declarator}")
    }
}

/// A pointer declarator in parentheses, before `[N]` or `(...)` binds tighter than its `*`.
fn grouped(declarator: String) -> String {
    if declarator.starts_with('*') {
        format!("({declarator})")
    } else {
        declarator
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A types table built from `entries` (entry `i` has id `i + 1`) and FUNC_PROTO `params`.
    fn table<'a>(entries: Vec<Entry<'a>>, params: Vec<(&'a [u8], u32)>) -> CuTypes<'a> {
        CuTypes {
            entries,
            params,
            ..CuTypes::default()
        }
    }

    fn base(name: &[u8]) -> Entry<'_> {
        Entry::Base {
            name,
            byte_size: 4,
            encoding: 5,
        }
    }

    fn modifier(kind: Kind, ty: u32) -> Entry<'static> {
        Entry::Modifier { kind, ty }
    }

    fn composite(union: bool, name: &[u8]) -> Entry<'_> {
        Entry::Composite {
            union,
            name,
            size: 8,
            declaration: false,
            members: 0..0,
            annots: 0..0,
        }
    }

    #[test]
    fn pointers_and_qualifiers() {
        let t = table(
            vec![
                base(b"char"),               // 1
                modifier(Kind::Const, 1),    // 2 const char
                modifier(Kind::Ptr, 2),      // 3 const char *
                modifier(Kind::Ptr, 1),      // 4 char *
                modifier(Kind::Const, 4),    // 5 char *const
                modifier(Kind::Ptr, 5),      // 6 char *const *
                modifier(Kind::Volatile, 1), // 7 volatile char
                modifier(Kind::Restrict, 4), // 8 char *restrict
                modifier(Kind::Ptr, 0),      // 9 void *
                modifier(Kind::Ptr, 4),      // 10 char **
            ],
            vec![],
        );
        assert_eq!(t.c_decl(3, "name"), "const char *name");
        assert_eq!(t.c_name(3), "const char *");
        assert_eq!(t.c_decl(5, "p"), "char *const p");
        assert_eq!(t.c_name(5), "char *const");
        assert_eq!(t.c_decl(6, "argv"), "char *const *argv");
        assert_eq!(t.c_decl(7, "v"), "volatile char v");
        assert_eq!(t.c_decl(8, "dst"), "char *restrict dst");
        assert_eq!(t.c_decl(9, "data"), "void *data");
        assert_eq!(t.c_name(10), "char **");
        assert_eq!(t.c_name(0), "void");
        assert_eq!(t.c_decl(0, "x"), "void x");
    }

    #[test]
    fn arrays() {
        let t = table(
            vec![
                base(b"unsigned long"),              // 1
                Entry::Array { elem: 1, nelems: 4 }, // 2 unsigned long [4]
                modifier(Kind::Ptr, 2),              // 3 unsigned long (*)[4]
                Entry::Array { elem: 2, nelems: 3 }, // 4 unsigned long [3][4]
                Entry::Array { elem: 1, nelems: 0 }, // 5 unsigned long []
                modifier(Kind::Ptr, 1),              // 6 unsigned long *
                Entry::Array { elem: 6, nelems: 2 }, // 7 unsigned long *[2]
            ],
            vec![],
        );
        assert_eq!(t.c_decl(2, "flags"), "unsigned long flags[4]");
        assert_eq!(t.c_decl(3, "row"), "unsigned long (*row)[4]");
        assert_eq!(t.c_decl(4, "m"), "unsigned long m[3][4]");
        assert_eq!(t.c_decl(5, "tail"), "unsigned long tail[]");
        assert_eq!(t.c_decl(7, "ptrs"), "unsigned long *ptrs[2]");
        assert_eq!(t.c_name(3), "unsigned long (*)[4]");
    }

    #[test]
    fn function_pointers() {
        let t = table(
            vec![
                base(b"int"),                 // 1
                composite(false, b"net"),     // 2
                modifier(Kind::Ptr, 2),       // 3 struct net *
                composite(false, b"sk_buff"), // 4
                modifier(Kind::Ptr, 4),       // 5 struct sk_buff *
                Entry::FuncProto {
                    ret: 1,
                    params: 0..2,
                    varargs: false,
                }, // 6 int (struct net *, struct sk_buff *)
                modifier(Kind::Ptr, 6),       // 7
                Entry::FuncProto {
                    ret: 0,
                    params: 2..2,
                    varargs: false,
                }, // 8 void (void)
                modifier(Kind::Ptr, 8),       // 9
                Entry::FuncProto {
                    ret: 9,
                    params: 2..3,
                    varargs: true,
                }, // 10 void (*(int, ...))(void)
                modifier(Kind::Ptr, 10),      // 11
            ],
            vec![(b"", 3), (b"", 5), (b"level", 1)],
        );
        assert_eq!(
            t.c_decl(7, "okfn"),
            "int (*okfn)(struct net *, struct sk_buff *)"
        );
        assert_eq!(t.c_name(9), "void (*)(void)");
        assert_eq!(
            t.c_decl(11, "pick"),
            "void (*(*pick)(int level, ...))(void)"
        );
    }

    #[test]
    fn tags_typedefs_and_anonymous_types() {
        let t = table(
            vec![
                base(b"char"), // 1
                Entry::TypeTag {
                    value: b"user",
                    ty: 1,
                }, // 2
                modifier(Kind::Ptr, 2), // 3 char __user *
                Entry::Typedef {
                    name: b"u32",
                    ty: 1,
                    annots: 0..0,
                }, // 4
                modifier(Kind::Const, 4), // 5 const u32
                composite(true, b""), // 6 union {...}
                composite(false, b"foo"), // 7 struct foo
                modifier(Kind::Ptr, 7), // 8 struct foo *
                Entry::Enum {
                    name: b"",
                    byte_size: 4,
                    signed: false,
                    values: 0..0,
                }, // 9 enum {...}
            ],
            vec![],
        );
        assert_eq!(t.c_decl(3, "buf"), "char __user *buf");
        assert_eq!(t.c_decl(5, "len"), "const u32 len");
        assert_eq!(t.c_decl(6, "u"), "union {...} u");
        assert_eq!(t.c_name(8), "struct foo *");
        assert_eq!(t.c_name(9), "enum {...}");
    }

    #[test]
    fn a_cycle_ends() {
        let t = table(vec![modifier(Kind::Ptr, 1)], vec![]);
        assert!(t.c_name(1).starts_with("... *"));
    }
}
