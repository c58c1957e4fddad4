//! The id-independent renderer: the canonical reference to a type and the canonical item of
//! a top-level type (see the module documentation of `canon`), with anonymous expansions
//! memoized per id and rendered iteratively, children first.

use std::fmt::Write as _;
use std::rc::Rc;

use super::category::Category;
use super::sink::{Sink, KEPT_PREFIX};
use crate::btf::kinds::{self, Kind};
use crate::btf::{Btf, Type};

/// Longest inline (anonymous) expansion kept verbatim (the 6.1 kernel's longest is 10 KB).
const INLINE_LIMIT: usize = 16 * 1024;
/// Longest item kept verbatim (the 6.1 kernel's longest is 20 KB).
const ITEM_LIMIT: usize = 1024 * 1024;
/// Total bytes of inline expansions past which new ones are kept short (the kernel needs 3 MB).
const INLINE_BUDGET: usize = 256 << 20;
/// Total bytes of items past which new ones are kept short.
const ITEM_BUDGET: usize = 1 << 30;
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
    pub(super) fold_fwd: bool,
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
        let text = self.budgeted_body(&t, ITEM_LIMIT, self.item_bytes, ITEM_BUDGET);
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
                let text = self.budgeted_body(&t, INLINE_LIMIT, self.inline_bytes, INLINE_BUDGET);
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

    /// Writes the reference to `id`; inline types must already be cached.
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

    /// The canonical body of `t` (its children must be cached), kept verbatim up to `limit`
    /// bytes, or only up to [`KEPT_PREFIX`] once `spent` bytes of its sort, more than
    /// `budget`, have been rendered.
    fn budgeted_body(&self, t: &Type<'a>, limit: usize, spent: usize, budget: usize) -> String {
        let limit = if spent > budget { KEPT_PREFIX } else { limit };
        let mut sink = Sink::new(limit);
        self.write_body(t, &mut sink);
        sink.finish()
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

    /// The items of the BTF's own types whose category is in `categories`, in id order.
    pub(super) fn into_items(mut self, categories: &[Category]) -> Vec<(Category, String)> {
        let btf = self.btf;
        let mut items = Vec::new();
        for id in btf.start_id()..btf.type_cnt() {
            let Some(t) = btf.type_by_id(id) else {
                continue;
            };
            match self.top_level(&t) {
                Some(c) if categories.contains(&c) => {}
                _ => continue,
            }
            if let Some(item) = self.item(id) {
                items.push(item);
            }
        }
        items
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
        let items = Canon::new(&b).into_items(&Category::ALL);
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
        let items = Canon::new(&b).into_items(&Category::ALL);
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
        let items = Canon::new(&b).into_items(&Category::ALL);
        let t = &items[1].1;
        assert!(t.starts_with("typedef deep = const(const("), "{t}");
        assert!(t.contains("fnv1a64"), "over-long text is hashed");
    }
}
