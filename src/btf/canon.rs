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

use std::fmt::{self, Write as _};
use std::rc::Rc;

use rustc_hash::FxHashMap;

use super::kinds::{self, Kind};
use super::{Btf, Type};

/// What a top-level item is, so callers can pick which ones to compare.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Category {
    /// Named INT, FLOAT, STRUCT, UNION, ENUM, ENUM64, FWD, TYPEDEF, and anonymous enums.
    Type,
    /// FUNC.
    Func,
    /// VAR.
    Var,
    /// DATASEC.
    Datasec,
}

impl Category {
    /// Every category, in display order.
    pub const ALL: [Category; 4] = [
        Category::Type,
        Category::Func,
        Category::Var,
        Category::Datasec,
    ];

    /// The category of a top-level item of kind `kind`.
    pub fn of_kind(kind: Kind) -> Category {
        match kind {
            Kind::Func => Category::Func,
            Kind::Var => Category::Var,
            Kind::Datasec => Category::Datasec,
            _ => Category::Type,
        }
    }

    /// The plural name used in reports: `types`, `funcs`, `vars`, `datasecs`.
    pub fn name(self) -> &'static str {
        match self {
            Category::Type => "types",
            Category::Func => "funcs",
            Category::Var => "vars",
            Category::Datasec => "datasecs",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for Category {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Category {
    type Err = String;

    /// Accepts singular or plural names: `type`, `funcs`, ...
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let norm = s.trim().to_ascii_lowercase().replace('-', "_");
        let norm = norm.strip_suffix('s').unwrap_or(&norm);
        match norm {
            "type" => Ok(Category::Type),
            "func" => Ok(Category::Func),
            "var" => Ok(Category::Var),
            "datasec" => Ok(Category::Datasec),
            _ => Err(format!(
                "unknown category '{s}' (expected types, funcs, vars or datasecs)"
            )),
        }
    }
}

/// Longest inline (anonymous) expansion kept verbatim (the 6.1 kernel's longest is 10 KB).
const INLINE_LIMIT: usize = 16 * 1024;
/// Longest item kept verbatim (the 6.1 kernel's longest is 20 KB).
const ITEM_LIMIT: usize = 1024 * 1024;
/// Total bytes of inline expansions past which new ones are kept short (the kernel needs 3 MB).
const INLINE_BUDGET: usize = 256 << 20;
/// Total bytes of items past which new ones are kept short.
const ITEM_BUDGET: usize = 1 << 30;
/// What is kept of an over-long rendering before its length and hash.
const KEPT_PREFIX: usize = 256;

/// 64-bit FNV-1a, stable across runs and platforms.
struct Fnv(u64);

impl Fnv {
    fn new() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= b as u64;
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

/// A string builder that degrades to prefix + length + hash past `limit` bytes.
struct Sink {
    buf: String,
    limit: usize,
    total: usize,
    hasher: Option<Fnv>,
}

impl Sink {
    fn new(limit: usize) -> Self {
        Sink {
            buf: String::new(),
            limit,
            total: 0,
            hasher: None,
        }
    }

    fn push(&mut self, s: &str) {
        self.total += s.len();
        if let Some(h) = &mut self.hasher {
            h.write(s.as_bytes());
            return;
        }
        if self.buf.len() + s.len() <= self.limit {
            self.buf.push_str(s);
            return;
        }
        let mut h = Fnv::new();
        h.write(self.buf.as_bytes());
        h.write(s.as_bytes());
        let cut = floor_char_boundary(&self.buf, KEPT_PREFIX);
        self.buf.truncate(cut);
        self.hasher = Some(h);
    }

    fn finish(self) -> String {
        match self.hasher {
            None => self.buf,
            Some(h) => format!(
                "{}... <{} bytes, fnv1a64 {:016x}>",
                self.buf, self.total, h.0
            ),
        }
    }
}

impl fmt::Write for Sink {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.push(s);
        Ok(())
    }
}

/// The largest char boundary of `s` not above `at`.
fn floor_char_boundary(s: &str, at: usize) -> usize {
    if at >= s.len() {
        return s.len();
    }
    let mut i = at;
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Kinds that are always expanded inline, whatever their name.
fn always_inline(kind: Kind) -> bool {
    matches!(
        kind,
        Kind::Ptr
            | Kind::Const
            | Kind::Volatile
            | Kind::Restrict
            | Kind::Array
            | Kind::FuncProto
            | Kind::TypeTag
            | Kind::DeclTag
    )
}

/// The kind of `t` if its record is complete (so the [`Type`] accessors cannot panic).
fn checked_kind(t: &Type<'_>) -> Option<Kind> {
    let kind = t.kind()?;
    (t.words.len() >= kind.record_words(t.vlen())).then_some(kind)
}

/// FUNC (`BTF_FUNC_*`) and VAR (`BTF_VAR_*`) linkages share their numbering.
fn linkage_name(linkage: u32) -> Option<&'static str> {
    match linkage {
        0 => Some("static"),
        1 => Some("global"),
        2 => Some("extern"),
        _ => None,
    }
}

/// A type's name; a bad string offset is named `(invalid)`.
enum Name<'a> {
    Anon,
    Named(std::borrow::Cow<'a, str>),
}

/// The id-independent renderer of one BTF, with its memo of anonymous expansions.
pub struct Canon<'a> {
    btf: &'a Btf,
    /// Rendered expansion of each inline type, by id.
    cache: Vec<Option<Rc<str>>>,
    /// Inline types whose expansion is under way (a reference to one of them is a cycle).
    busy: Vec<bool>,
    /// Explicit DFS stack of [`Canon::ensure`], kept to reuse its allocation.
    stack: Vec<(u32, bool)>,
    /// Bytes rendered so far into `cache`, and into items.
    inline_bytes: usize,
    /// Treat a forward declaration as the type it declares: references to `FWD struct X`
    /// render as `struct X`, and FWD types and empty (declared-only) enums are not items (C-declaration-level comparison,
    /// which is what deduplication's forward resolution preserves).
    fold_fwd: bool,
    item_bytes: usize,
}

impl<'a> Canon<'a> {
    /// A renderer for `btf` (its base types included when it is split).
    pub fn new(btf: &'a Btf) -> Self {
        let n = btf.type_cnt() as usize;
        Canon {
            btf,
            cache: vec![None; n],
            busy: vec![false; n],
            stack: Vec::new(),
            inline_bytes: 0,
            fold_fwd: false,
            item_bytes: 0,
        }
    }

    fn name(&self, t: &Type<'a>) -> Name<'a> {
        if t.name_off() == 0 {
            return Name::Anon;
        }
        match self.btf.str_at(t.name_off()) {
            Some([]) => Name::Anon,
            Some(s) => Name::Named(String::from_utf8_lossy(s)),
            None => Name::Named("(invalid)".into()),
        }
    }

    fn str_or_invalid(&self, off: u32) -> std::borrow::Cow<'a, str> {
        match self.btf.str_at(off) {
            Some(s) => String::from_utf8_lossy(s),
            None => "(invalid)".into(),
        }
    }

    /// Whether references to `t` expand it (anonymous or always-inline kinds, bad records).
    fn is_inline(&self, t: &Type<'a>) -> bool {
        match checked_kind(t) {
            None => true,
            Some(k) => always_inline(k) || matches!(self.name(t), Name::Anon),
        }
    }

    /// The category of `t` if it is a top-level item (see the module documentation).
    pub fn top_level(&self, t: &Type<'a>) -> Option<Category> {
        let kind = checked_kind(t)?;
        let enum_decl = matches!(kind, Kind::Enum | Kind::Enum64) && t.vlen() == 0;
        if self.fold_fwd && (kind == Kind::Fwd || enum_decl) {
            return None;
        }
        if kind == Kind::DeclTag {
            // A decl tag belongs with what it decorates.
            let target = self
                .btf
                .type_by_id(t.size_or_type())
                .and_then(|t| checked_kind(&t));
            return Some(match target {
                Some(Kind::Func) => Category::Func,
                Some(Kind::Var) => Category::Var,
                _ => Category::Type,
            });
        }
        if always_inline(kind) {
            return None;
        }
        match self.name(t) {
            Name::Named(_) => Some(Category::of_kind(kind)),
            Name::Anon if matches!(kind, Kind::Enum | Kind::Enum64) => Some(Category::Type),
            Name::Anon => None,
        }
    }

    /// The canonical reference to type `id`: `kind name` for named types, the full expansion
    /// for anonymous ones.
    pub fn reference(&mut self, id: u32) -> Rc<str> {
        if let Some(t) = self.btf.type_by_id(id) {
            if self.is_inline(&t) {
                self.ensure(id);
                if let Some(s) = &self.cache[id as usize] {
                    return s.clone();
                }
            }
        }
        let mut sink = Sink::new(INLINE_LIMIT);
        self.write_ref(id, &mut sink);
        sink.finish().into()
    }

    /// The canonical item of type `id`, if it is a top-level one.
    pub fn item(&mut self, id: u32) -> Option<(Category, String)> {
        let t = self.btf.type_by_id(id)?;
        let cat = self.top_level(&t)?;
        self.ensure_children(&t);
        let limit = if self.item_bytes > ITEM_BUDGET {
            KEPT_PREFIX
        } else {
            ITEM_LIMIT
        };
        let mut sink = Sink::new(limit);
        self.write_body(&t, &mut sink);
        let text = sink.finish();
        self.item_bytes += text.len();
        Some((cat, text))
    }

    /// Calls `f` on every type id `t` refers to.
    fn for_each_child(t: &Type<'a>, mut f: impl FnMut(u32)) {
        let Some(kind) = checked_kind(t) else {
            return;
        };
        match kind {
            Kind::Int | Kind::Float | Kind::Enum | Kind::Enum64 | Kind::Fwd => {}
            Kind::Ptr
            | Kind::Const
            | Kind::Volatile
            | Kind::Restrict
            | Kind::TypeTag
            | Kind::Typedef
            | Kind::Func
            | Kind::Var
            | Kind::DeclTag => f(t.size_or_type()),
            Kind::Array => {
                let a = t.array();
                f(a.elem);
                f(a.index);
            }
            Kind::Struct | Kind::Union => t.members().for_each(|m| f(m.type_id)),
            Kind::FuncProto => {
                f(t.size_or_type());
                t.params().for_each(|p| f(p.type_id));
            }
            Kind::Datasec => t.secinfos().for_each(|v| f(v.type_id)),
        }
    }

    /// Makes sure every inline type `t` refers to has its expansion cached.
    fn ensure_children(&mut self, t: &Type<'a>) {
        let mut kids = Vec::new();
        Self::for_each_child(t, |c| kids.push(c));
        for c in kids {
            self.ensure(c);
        }
    }

    /// Renders and caches the expansion of inline type `root` and of every inline type below it,
    /// children first, with an explicit stack.
    fn ensure(&mut self, root: u32) {
        let btf = self.btf;
        let pending = |c: &Canon<'a>, id: u32| -> bool {
            let i = id as usize;
            i < c.cache.len()
                && c.cache[i].is_none()
                && !c.busy[i]
                && btf.type_by_id(id).is_some_and(|t| c.is_inline(&t))
        };
        if !pending(self, root) {
            return;
        }
        let mut stack = std::mem::take(&mut self.stack);
        stack.push((root, false));
        while let Some((id, children_done)) = stack.pop() {
            let i = id as usize;
            let Some(t) = btf.type_by_id(id) else {
                continue;
            };
            if children_done {
                let limit = if self.inline_bytes > INLINE_BUDGET {
                    KEPT_PREFIX
                } else {
                    INLINE_LIMIT
                };
                let mut sink = Sink::new(limit);
                self.write_body(&t, &mut sink);
                let text = sink.finish();
                self.inline_bytes += text.len();
                self.cache[i] = Some(text.into());
                self.busy[i] = false;
                continue;
            }
            if !pending(self, id) {
                continue;
            }
            self.busy[i] = true;
            stack.push((id, true));
            Self::for_each_child(&t, |c| {
                if pending(self, c) {
                    stack.push((c, false));
                }
            });
        }
        self.stack = stack;
    }

    /// Writes the reference to `id`; inline types must already be cached.
    /// `func NAME LINKAGE TYPE` / `var NAME LINKAGE TYPE` (`name` with its leading space).
    fn write_linked(&self, what: &str, name: &str, linkage: u32, ty: u32, out: &mut Sink) {
        let _ = write!(out, "{what}{name} ");
        match linkage_name(linkage) {
            Some(l) => out.push(l),
            None => {
                let _ = write!(out, "linkage={linkage}");
            }
        }
        out.push(" ");
        self.write_ref(ty, out);
    }

    fn write_ref(&self, id: u32, out: &mut Sink) {
        if id == 0 {
            out.push("void");
            return;
        }
        let Some(t) = self.btf.type_by_id(id) else {
            let _ = write!(out, "<bad id {id}>");
            return;
        };
        if self.is_inline(&t) {
            match &self.cache[id as usize] {
                Some(s) => out.push(s),
                None if self.busy[id as usize] => out.push("<cycle>"),
                // Unreachable when callers ensure first; rendered rather than panicking.
                None => out.push("<unresolved>"),
            }
            return;
        }
        let Name::Named(name) = self.name(&t) else {
            unreachable!("named types are not inline")
        };
        let prefix = match checked_kind(&t) {
            Some(Kind::Int) => "INT",
            Some(Kind::Float) => "FLOAT",
            Some(Kind::Struct) => "struct",
            Some(Kind::Union) => "union",
            Some(Kind::Enum) => "enum",
            Some(Kind::Enum64) => "enum64",
            Some(Kind::Fwd) if t.kflag() && self.fold_fwd => "union",
            Some(Kind::Fwd) if self.fold_fwd => "struct",
            Some(Kind::Fwd) if t.kflag() => "FWD union",
            Some(Kind::Fwd) => "FWD struct",
            Some(Kind::Typedef) => "typedef",
            Some(Kind::Func) => "func",
            Some(Kind::Var) => "var",
            Some(Kind::Datasec) => "datasec",
            _ => "<?>",
        };
        out.push(prefix);
        out.push(" ");
        out.push(&name);
    }

    /// Writes the full canonical body of `t` (its children must be cached).
    fn write_body(&self, t: &Type<'a>, out: &mut Sink) {
        let Some(kind) = t.kind() else {
            let _ = write!(out, "<unknown kind {}>", kinds::info_kind(t.info()));
            return;
        };
        if checked_kind(t).is_none() {
            let _ = write!(out, "<truncated {kind} record>");
            return;
        }
        let name = self.name(t);
        // ` name` for named types, nothing for anonymous ones.
        let sp_name = match &name {
            Name::Anon => String::new(),
            Name::Named(n) => format!(" {n}"),
        };
        let sp_or_anon = if sp_name.is_empty() {
            " (anon)"
        } else {
            &sp_name
        };
        match kind {
            Kind::Int => {
                let enc = t.int_encoding();
                let _ = write!(
                    out,
                    "INT{} size={} bits={} offset={} enc=",
                    sp_or_anon,
                    t.size_or_type(),
                    t.int_bits(),
                    t.int_offset()
                );
                if enc == 0 {
                    out.push("none");
                } else {
                    let mut first = true;
                    for (bit, s) in [
                        (kinds::INT_SIGNED, "SIGNED"),
                        (kinds::INT_CHAR, "CHAR"),
                        (kinds::INT_BOOL, "BOOL"),
                        (8, "0x8"),
                    ] {
                        if enc & bit != 0 {
                            if !first {
                                out.push("|");
                            }
                            out.push(s);
                            first = false;
                        }
                    }
                }
            }
            Kind::Float => {
                let _ = write!(out, "FLOAT{} size={}", sp_or_anon, t.size_or_type());
            }
            Kind::Ptr | Kind::Const | Kind::Volatile | Kind::Restrict => {
                let kw = match kind {
                    Kind::Ptr => "ptr",
                    Kind::Const => "const",
                    Kind::Volatile => "volatile",
                    _ => "restrict",
                };
                let _ = write!(out, "{kw}{sp_name}(");
                self.write_ref(t.size_or_type(), out);
                out.push(")");
            }
            Kind::TypeTag => {
                let _ = write!(
                    out,
                    "type_tag({:?}{}, ",
                    self.str_or_invalid(t.name_off()),
                    if t.kflag() { " attr" } else { "" }
                );
                self.write_ref(t.size_or_type(), out);
                out.push(")");
            }
            Kind::Array => {
                let a = t.array();
                out.push("array(");
                self.write_ref(a.elem, out);
                let _ = write!(out, " x {}, index ", a.nelems);
                self.write_ref(a.index, out);
                out.push(")");
            }
            Kind::Struct | Kind::Union => {
                let kflag = t.kflag();
                let _ = write!(
                    out,
                    "{}{sp_name} size={} {{",
                    if kind == Kind::Struct {
                        "struct"
                    } else {
                        "union"
                    },
                    t.size_or_type()
                );
                for (i, m) in t.members().enumerate() {
                    out.push(if i == 0 { " " } else { "; " });
                    if m.name_off == 0 {
                        out.push("(anon)");
                    } else {
                        out.push(&self.str_or_invalid(m.name_off));
                    }
                    out.push(": ");
                    self.write_ref(m.type_id, out);
                    let _ = write!(out, " @{}", m.bit_offset(kflag));
                    let bits = m.bitfield_size(kflag);
                    if bits != 0 {
                        let _ = write!(out, ":{bits}");
                    }
                }
                out.push(if t.vlen() == 0 { "}" } else { " }" });
            }
            Kind::Enum | Kind::Enum64 => {
                let signed = t.kflag();
                let _ = write!(
                    out,
                    "{}{sp_name} size={} {} {{",
                    if kind == Kind::Enum { "enum" } else { "enum64" },
                    t.size_or_type(),
                    if signed { "signed" } else { "unsigned" }
                );
                for (i, e) in t.enumerators().enumerate() {
                    out.push(if i == 0 { " " } else { ", " });
                    out.push(&self.str_or_invalid(e.name_off));
                    let _ = match (signed, kind) {
                        (true, Kind::Enum) => write!(out, " = {}", e.raw as u32 as i32),
                        (true, _) => write!(out, " = {}", e.raw as i64),
                        (false, _) => write!(out, " = {}", e.raw),
                    };
                }
                out.push(if t.vlen() == 0 { "}" } else { " }" });
            }
            Kind::Fwd => {
                let _ = write!(
                    out,
                    "FWD {}{}",
                    if t.kflag() { "union" } else { "struct" },
                    sp_or_anon
                );
            }
            Kind::Typedef => {
                let _ = write!(out, "typedef{} = ", sp_or_anon);
                self.write_ref(t.size_or_type(), out);
            }
            Kind::Func => self.write_linked("func", sp_or_anon, t.vlen(), t.size_or_type(), out),
            Kind::FuncProto => {
                out.push("fn(");
                let vlen = t.vlen() as usize;
                for (i, p) in t.params().enumerate() {
                    if i > 0 {
                        out.push(", ");
                    }
                    if p.name_off == 0 && p.type_id == 0 && i + 1 == vlen {
                        out.push("...");
                        continue;
                    }
                    if p.name_off != 0 {
                        let n = self.str_or_invalid(p.name_off);
                        if !n.is_empty() {
                            out.push(&n);
                            out.push(": ");
                        }
                    }
                    self.write_ref(p.type_id, out);
                }
                out.push(") -> ");
                self.write_ref(t.size_or_type(), out);
            }
            Kind::Var => self.write_linked("var", sp_or_anon, t.extra(), t.size_or_type(), out),
            Kind::Datasec => {
                let _ = write!(out, "datasec{} size={} {{", sp_or_anon, t.size_or_type());
                for (i, v) in t.secinfos().enumerate() {
                    out.push(if i == 0 { " " } else { "; " });
                    self.write_ref(v.type_id, out);
                    let _ = write!(out, " @{} size={}", v.offset, v.size);
                }
                out.push(if t.vlen() == 0 { "}" } else { " }" });
            }
            Kind::DeclTag => {
                let _ = write!(
                    out,
                    "decl_tag {:?}{} -> ",
                    self.str_or_invalid(t.name_off()),
                    if t.kflag() { " attr" } else { "" }
                );
                self.write_ref(t.size_or_type(), out);
                let _ = write!(out, " component {}", t.decl_tag_component());
            }
        }
    }
}

/// The canonical items of `btf`'s own types, in id order (see the module documentation).
pub fn canonical_items(btf: &Btf) -> Vec<(Category, String)> {
    canonical_items_of(btf, &Category::ALL)
}

/// The canonical items of `btf`'s own types whose category is in `categories`, in id order.
pub fn canonical_items_of(btf: &Btf, categories: &[Category]) -> Vec<(Category, String)> {
    items_with(Canon::new(btf), categories)
}

fn items_with(mut canon: Canon<'_>, categories: &[Category]) -> Vec<(Category, String)> {
    let btf = canon.btf;
    let mut items = Vec::new();
    for id in btf.start_id()..btf.type_cnt() {
        let Some(t) = btf.type_by_id(id) else {
            continue;
        };
        match canon.top_level(&t) {
            Some(c) if categories.contains(&c) => {}
            _ => continue,
        }
        if let Some(item) = canon.item(id) {
            items.push(item);
        }
    }
    items
}

/// Number of top-level items per category (indexed by `Category as usize`), without rendering.
pub fn item_counts(btf: &Btf) -> [usize; Category::ALL.len()] {
    let canon = Canon::new(btf);
    let mut counts = [0; Category::ALL.len()];
    for t in btf.own_types() {
        if let Some(c) = canon.top_level(&t) {
            counts[c.index()] += 1;
        }
    }
    counts
}

/// What [`diff`] compares and how much it keeps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiffOptions {
    /// Compare as sets (ignore how many times an item occurs) instead of multisets.
    pub set: bool,
    /// The categories of items compared; the others are counted but never rendered.
    pub categories: Vec<Category>,
    /// How many differences the report keeps (in sorted order).
    pub max_shown: usize,
    /// Compare at the C-declaration level: a forward declaration is the type it declares
    /// (see [`Canon`]); needed to compare BTF before deduplication with BTF after it.
    pub fold_fwd: bool,
}

impl Default for DiffOptions {
    /// Multiset comparison of every category, 20 differences shown.
    fn default() -> Self {
        DiffOptions {
            set: false,
            categories: Category::ALL.to_vec(),
            max_shown: 20,
            fold_fwd: false,
        }
    }
}

/// One canonical item whose number of occurrences differs between the two inputs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Difference {
    /// The category of the item.
    pub category: Category,
    /// The canonical item text.
    pub item: String,
    /// Occurrences in the first input (0 or 1 in set mode).
    pub count_a: usize,
    /// Occurrences in the second input (0 or 1 in set mode).
    pub count_b: usize,
}

/// The result of [`diff`]; its `Display` is the `dwarf2btf diff` report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiffReport {
    /// Whether the compared items are equal (as sets or multisets).
    pub equal: bool,
    /// Whether items were compared as sets.
    pub set: bool,
    /// The categories compared.
    pub categories: Vec<Category>,
    /// What the inputs are called in the report (`A`, `B` by default; the CLI puts file names).
    pub labels: [String; 2],
    /// Per-kind type counts of each input, indexed by kind number (as [`Btf::kind_counts`];
    /// index 0 counts records of an unknown kind).
    pub kind_counts: [[usize; 20]; 2],
    /// Top-level items per category of each input, indexed by `Category as usize` (every
    /// category is counted, compared or not).
    pub item_counts: [[usize; Category::ALL.len()]; 2],
    /// Number of distinct items whose counts differ.
    pub distinct_differences: usize,
    /// The same, per category (indexed by `Category as usize`).
    pub differing_per_category: [usize; Category::ALL.len()],
    /// Occurrences in the first input not matched in the second (sum of `count_a - count_b`).
    pub only_in_a: usize,
    /// Occurrences in the second input not matched in the first.
    pub only_in_b: usize,
    /// The first `max_shown` differences, sorted by category then item text (so that the two
    /// versions of a changed type come next to each other).
    pub differences: Vec<Difference>,
}

/// Compares the canonical items of `a` and `b` in the categories of `opts`.
pub fn diff(a: &Btf, b: &Btf, opts: &DiffOptions) -> DiffReport {
    struct Counts {
        cat: Category,
        a: usize,
        b: usize,
    }
    let mut map: FxHashMap<String, Counts> = FxHashMap::default();
    let canon = |btf| {
        let mut c = Canon::new(btf);
        c.fold_fwd = opts.fold_fwd;
        c
    };
    for (cat, item) in items_with(canon(a), &opts.categories) {
        map.entry(item).or_insert(Counts { cat, a: 0, b: 0 }).a += 1;
    }
    for (cat, item) in items_with(canon(b), &opts.categories) {
        if let Some(c) = map.get_mut(item.as_str()) {
            c.b += 1;
        } else {
            map.insert(item, Counts { cat, a: 0, b: 1 });
        }
    }
    let mut diffs: Vec<Difference> = Vec::new();
    let (mut only_a, mut only_b) = (0, 0);
    for (item, c) in map {
        let (ca, cb) = if opts.set {
            (c.a.min(1), c.b.min(1))
        } else {
            (c.a, c.b)
        };
        if ca == cb {
            continue;
        }
        only_a += ca.saturating_sub(cb);
        only_b += cb.saturating_sub(ca);
        diffs.push(Difference {
            category: c.cat,
            item,
            count_a: ca,
            count_b: cb,
        });
    }
    let distinct = diffs.len();
    let mut per_cat = [0; Category::ALL.len()];
    for d in &diffs {
        per_cat[d.category.index()] += 1;
    }
    diffs.sort_unstable_by(|x, y| {
        (x.category, &x.item, x.count_a).cmp(&(y.category, &y.item, y.count_a))
    });
    diffs.truncate(opts.max_shown);
    let mut categories = opts.categories.clone();
    categories.sort();
    categories.dedup();
    DiffReport {
        equal: distinct == 0,
        set: opts.set,
        categories,
        labels: ["A".into(), "B".into()],
        kind_counts: [a.kind_counts(), b.kind_counts()],
        item_counts: [item_counts(a), item_counts(b)],
        distinct_differences: distinct,
        differing_per_category: per_cat,
        only_in_a: only_a,
        only_in_b: only_b,
        differences: diffs,
    }
}

/// Longest item text printed by the plain `Display` (`{:#}` prints everything).
const SHOWN_ITEM_CHARS: usize = 300;

fn shorten(s: &str, full: bool) -> std::borrow::Cow<'_, str> {
    if full || s.len() <= SHOWN_ITEM_CHARS {
        return s.into();
    }
    let cut = floor_char_boundary(s, SHOWN_ITEM_CHARS);
    format!("{}... ({} bytes)", &s[..cut], s.len()).into()
}

/// Where two texts first differ, with a little context of each, if they share their head
/// (kind and name), i.e. look like two versions of the same item.
fn first_difference(a: &str, b: &str) -> Option<(usize, String, String)> {
    let common = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
    let head = |s: &str| s.match_indices(' ').nth(1).map_or(s.len(), |(i, _)| i);
    if common < head(a).min(head(b)) {
        return None;
    }
    let at = floor_char_boundary(a, common).min(floor_char_boundary(b, common));
    let ctx = |s: &str| {
        let from = floor_char_boundary(s, at.saturating_sub(40));
        let to = floor_char_boundary(s, at + 60);
        format!(
            "{}{}{}",
            if from > 0 { "..." } else { "" },
            &s[from..to],
            if to < s.len() { "..." } else { "" }
        )
    };
    Some((at, ctx(a), ctx(b)))
}

impl fmt::Display for DiffReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let full = f.alternate();
        let [la, lb] = &self.labels;
        let w = la.len().max(lb.len()).max(8);
        writeln!(f, "{:<12} {:>w$} {:>w$}", "kind", la, lb)?;
        let mut totals = [0usize; 2];
        let rows = std::iter::once((0, "UNKNOWN")).chain(Kind::ALL.map(|k| (k as usize, k.name())));
        for (i, name) in rows {
            let (ca, cb) = (self.kind_counts[0][i], self.kind_counts[1][i]);
            totals[0] += ca;
            totals[1] += cb;
            if ca == 0 && cb == 0 {
                continue;
            }
            let mark = if ca != cb { "  *" } else { "" };
            writeln!(f, "{name:<12} {ca:>w$} {cb:>w$}{mark}")?;
        }
        let mark = if totals[0] != totals[1] { "  *" } else { "" };
        writeln!(
            f,
            "{:<12} {:>w$} {:>w$}{mark}",
            "total", totals[0], totals[1]
        )?;
        writeln!(f)?;
        writeln!(f, "{:<12} {:>w$} {:>w$}", "items", la, lb)?;
        for c in Category::ALL {
            let (ca, cb) = (
                self.item_counts[0][c.index()],
                self.item_counts[1][c.index()],
            );
            let note = if self.categories.contains(&c) {
                if ca != cb {
                    "  *"
                } else {
                    ""
                }
            } else {
                "  (not compared)"
            };
            writeln!(f, "{:<12} {ca:>w$} {cb:>w$}{note}", c.name())?;
        }
        writeln!(f)?;
        let names: Vec<&str> = self.categories.iter().map(|c| c.name()).collect();
        writeln!(
            f,
            "compared {} as {}",
            if names.is_empty() {
                "nothing".to_string()
            } else {
                names.join(", ")
            },
            if self.set { "sets" } else { "multisets" }
        )?;
        if !self.equal {
            let per_cat: Vec<String> = Category::ALL
                .iter()
                .filter(|c| self.differing_per_category[c.index()] > 0)
                .map(|c| format!("{} {}", c.name(), self.differing_per_category[c.index()]))
                .collect();
            writeln!(
                f,
                "{} differing items ({}); occurrences only in {la}: {}, only in {lb}: {}",
                self.distinct_differences,
                per_cat.join(", "),
                self.only_in_a,
                self.only_in_b
            )?;
            // An item only in A next to one only in B that shares its head (kind and name) is
            // most likely one changed type: point at where the two texts part.
            let mut prev: Option<&Difference> = None;
            for d in &self.differences {
                let sign = if d.count_a > d.count_b { '-' } else { '+' };
                let counts = if d.count_a.max(d.count_b) > 1 || d.count_a.min(d.count_b) > 0 {
                    format!("({la} {}, {lb} {}) ", d.count_a, d.count_b)
                } else {
                    String::new()
                };
                writeln!(
                    f,
                    "{sign} [{}] {counts}{}",
                    d.category.name(),
                    shorten(&d.item, full)
                )?;
                let a_side = |x: &Difference| x.count_a > x.count_b;
                let pair = prev
                    .filter(|p| p.category == d.category && a_side(p) != a_side(d))
                    .map(|p| if a_side(p) { (p, d) } else { (d, p) })
                    .and_then(|(x, y)| first_difference(&x.item, &y.item));
                prev = Some(d);
                if let Some((at, ca, cb)) = pair {
                    writeln!(f, "    first difference at byte {at}:")?;
                    writeln!(f, "      {la}: {ca}")?;
                    writeln!(f, "      {lb}: {cb}")?;
                    prev = None;
                }
            }
            let hidden = self
                .distinct_differences
                .saturating_sub(self.differences.len());
            if hidden > 0 {
                writeln!(f, "... and {hidden} more differing items")?;
            }
        }
        writeln!(f, "{}", if self.equal { "equal" } else { "different" })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> Btf {
        let mut b = Btf::new();
        let int = b.add_int(b"int", 4, kinds::INT_SIGNED).unwrap();
        let p = b.add_ref(Kind::Ptr, None, 3).unwrap();
        let s = b.add_composite(Kind::Struct, Some(b"s"), 16).unwrap();
        assert_eq!(s, 3);
        b.add_field(Some(b"a"), int, 0, 0).unwrap();
        b.add_field(Some(b"b"), int, 35, 3).unwrap();
        b.add_field(Some(b"next"), p, 64, 0).unwrap();
        b
    }

    #[test]
    fn renders_struct_with_bitfield_and_self_pointer() {
        let b = small();
        let items = canonical_items(&b);
        assert_eq!(
            items,
            vec![
                (
                    Category::Type,
                    "INT int size=4 bits=32 offset=0 enc=SIGNED".to_string()
                ),
                (
                    Category::Type,
                    "struct s size=16 { a: INT int @0; b: INT int @35:3; next: ptr(struct s) @64 }"
                        .to_string()
                ),
            ]
        );
    }

    #[test]
    fn anonymous_cycle_and_bad_ids_do_not_panic() {
        let mut b = Btf::new();
        // PTR [1] -> PTR [2] -> PTR [1]: a cycle through anonymous types only.
        b.add_ref(Kind::Ptr, None, 2).unwrap();
        b.add_ref(Kind::Ptr, None, 1).unwrap();
        b.add_ref(Kind::Typedef, Some(b"t"), 1).unwrap();
        b.add_ref(Kind::Typedef, Some(b"bad"), 999).unwrap();
        let items = canonical_items(&b);
        assert_eq!(items[0].1, "typedef t = ptr(ptr(<cycle>))");
        assert_eq!(items[1].1, "typedef bad = <bad id 999>");
        let mut c = Canon::new(&b);
        assert_eq!(&*c.reference(0), "void");
        assert_eq!(&*c.reference(77), "<bad id 77>");
    }

    #[test]
    fn deep_anonymous_chain_is_iterative() {
        let mut b = Btf::new();
        let int = b.add_int(b"int", 4, kinds::INT_SIGNED).unwrap();
        let mut id = int;
        for _ in 0..30_000 {
            id = b.add_ref(Kind::Const, None, id).unwrap();
        }
        b.add_ref(Kind::Typedef, Some(b"deep"), id).unwrap();
        let items = canonical_items(&b);
        let t = &items[1].1;
        assert!(t.starts_with("typedef deep = const(const("), "{t}");
        assert!(t.contains("fnv1a64"), "over-long text is hashed");
    }

    #[test]
    fn category_parses() {
        assert_eq!("funcs".parse::<Category>().unwrap(), Category::Func);
        assert_eq!("Types".parse::<Category>().unwrap(), Category::Type);
        assert!("struct".parse::<Category>().is_err());
    }

    #[test]
    fn sink_hashes_past_limit() {
        let mut s = Sink::new(10);
        s.push("0123456789");
        s.push("abc");
        let out = s.finish();
        assert!(
            out.starts_with("0123456789... <13 bytes, fnv1a64 "),
            "{out}"
        );
    }
}
