//! Id-independent canonical rendering of BTF types, used by `dwarf2btf diff`.
//!
//! Two BTF blobs describing the same C types can number them differently (encoder order, dedup
//! order, duplicated anonymous types). To compare them, every *top-level item* of a BTF is
//! rendered to a string that mentions no type id, and the two collections of strings are
//! compared as multisets (default) or as sets.
//!
//! # Top-level items
//!
//! * every **named** INT, FLOAT, STRUCT, UNION, ENUM, ENUM64, FWD, TYPEDEF ([`Category::Type`]),
//!   FUNC ([`Category::Func`]), VAR ([`Category::Var`]) and DATASEC ([`Category::Datasec`]);
//! * every **anonymous ENUM/ENUM64** ([`Category::Type`]): C's `enum { A = 1 };` declares
//!   constants other tools look up by name, so they count even when nothing refers to them;
//! * every **DECL_TAG**, rendered attached to its target and in the category of what it
//!   decorates (a tag on a FUNC is a [`Category::Func`] item, on a struct a [`Category::Type`]).
//!
//! Only the BTF's own types are items (for split BTF, base types are referred to but not listed).
//! Other anonymous types (PTR, CONST, VOLATILE, RESTRICT, ARRAY, FUNC_PROTO, TYPE_TAG, anonymous
//! STRUCT/UNION) are never items: they are expanded inline wherever they are referred to, so an
//! anonymous type that nothing refers to is ignored (it has no effect on any C declaration).
//!
//! # References
//!
//! A reference to a named type is `kind name`: `INT int`, `FLOAT double`, `struct task_struct`,
//! `union u`, `enum e`, `enum64 e`, `FWD struct foo`, `FWD union foo`, `typedef u32`,
//! `func f`, `var v`, `datasec .data`. `void` is id 0; an id past the end is `<bad id N>`.
//! Anonymous types are expanded recursively:
//!
//! ```text
//! ptr(T)  const(T)  volatile(T)  restrict(T)  type_tag("user", T)
//! array(T x 16, index INT __ARRAY_SIZE_TYPE__)
//! fn(a: T, T2, ...) -> R                  (unnamed parameters show just their type)
//! struct size=8 { a: T @0; b: T @35:3 }   (member: name: type @bit_offset[:bitfield_size])
//! union size=8 { (anon): T @0 }
//! enum size=4 unsigned { A = 0, B = 1 }
//! ```
//!
//! # Item bodies
//!
//! ```text
//! INT int size=4 bits=32 offset=0 enc=SIGNED
//! FLOAT double size=8
//! struct foo size=16 { a: INT int @0; next: ptr(struct foo) @64 }
//! enum64 e size=8 signed { A = -1 }
//! FWD struct foo
//! typedef u32 = typedef __u32
//! func f static fn(x: INT int) -> void
//! var v global ptr(struct foo)
//! datasec .data..percpu size=64 { var v @0 size=8 }
//! decl_tag "bpf_kfunc" -> func f component -1
//! ```
//!
//! Member bit offsets and bitfield sizes are decoded with the parent's kind_flag, enumerator
//! values are printed signed when the enum's kind_flag says so. Names are those of the string
//! section (a bad string offset renders as `(invalid)`); decl and type tag values are quoted.
//!
//! Anonymous expansions are memoized per id, so each anonymous type is rendered once; the
//! expansion is iterative (no recursion, hence no stack overflow on deep or malformed graphs),
//! and a cycle made only of anonymous types renders as `<cycle>`. A rendering longer than a fixed
//! limit (16 KiB inline, 1 MiB for an item) keeps a prefix and is completed by its length and an
//! FNV-1a hash of the full text (`<prefix>... <N bytes, fnv1a64 HEX>`), which keeps memory
//! bounded on adversarial input while still telling different texts apart; once 256 MiB of
//! inline text (1 GiB of items) has been rendered, the limit drops to 256 bytes. Real kernels are
//! far below these limits (6.1: 10 KB longest inline text, 20 KB longest item, 3 MB in all).
//!
//! # API
//!
//! * [`canonical_items`] / [`canonical_items_of`]: the items of one BTF, in id order;
//! * [`Canon`]: the renderer itself ([`Canon::reference`], [`Canon::item`]), for callers that
//!   want single types;
//! * [`diff`] with [`DiffOptions`] → [`DiffReport`], whose `Display` is what `dwarf2btf diff`
//!   prints (`{:#}` prints the differing items untruncated).
//!
//! # Files
//!
//! `category.rs` names what an item is; `render.rs` is the renderer ([`Canon`]), over `sink.rs`,
//! the bounded string builder; `items.rs` lists and counts a BTF's items; `diff.rs` compares
//! two BTFs' items and prints the report.

mod category;
mod diff;
mod items;
mod render;
mod sink;

pub use category::Category;
pub use diff::{diff, DiffOptions, DiffReport, Difference};
pub use items::{canonical_items, canonical_items_of, item_counts};
pub use render::Canon;
