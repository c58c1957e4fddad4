//! The meta phase: `btf_check_meta` and every kind's `check_meta` callback (one function per
//! kind, below the dispatching [`Verifier::check_meta`]), and `btf_check_type_tags` (rules `M1`..`M17`).
//!
//! A meta check looks at one record alone: its own fields, its names, and that the ids it holds
//! are in range — never at the types they refer to (that is the resolve pass). The first rule a
//! record breaks is its problem; a record that fails here is left out of the later checks.

use super::problem::Sink;
use super::record::{roundup_bytes, T};
use super::target::TAG_KFLAG_KERNEL;
use super::verifier::Verifier;
use crate::btf::kinds::{self, Kind};

/// `BTF_INT_MASK`: bits of the INT data word that may be set.
const INT_MASK: u32 = 0x0fff_ffff;

/// The first rule a record breaks, and what is wrong.
type Bad = (&'static str, String);
/// A meta check's verdict.
type Meta = Result<(), Bad>;

/// A type id a record may hold (`BTF_TYPE_ID_VALID`); whether it exists is checked later.
fn id_ok(id: u32) -> bool {
    id <= kinds::MAX_TYPE_ID
}

impl Verifier<'_> {
    /// The meta check of one record: `None` when it passes, else the rule it breaks and why.
    pub(super) fn check_meta(&self, t: T<'_>) -> Option<Bad> {
        let kind = match self.meta_common(t) {
            Ok(kind) => kind,
            Err(bad) => return Some(bad),
        };
        let verdict = match kind {
            Kind::Int => self.meta_int(t),
            Kind::Ptr
            | Kind::Typedef
            | Kind::Volatile
            | Kind::Const
            | Kind::Restrict
            | Kind::TypeTag => self.meta_ref(t, kind),
            Kind::Array => self.meta_array(t),
            Kind::Struct | Kind::Union => self.meta_struct(t, kind),
            Kind::Enum | Kind::Enum64 => self.meta_enum(t, kind),
            Kind::Fwd => self.meta_fwd(t),
            Kind::Func => self.meta_func(t),
            Kind::FuncProto => self.meta_func_proto(t),
            Kind::Var => self.meta_var(t),
            Kind::Datasec => self.meta_datasec(t),
            Kind::Float => self.meta_float(t),
            Kind::DeclTag => self.meta_decl_tag(t),
        };
        verdict.err()
    }

    /// `btf_check_meta`: what every record must satisfy (a known kind, no stray `info` bits, a
    /// valid name offset, exactly the length its kind and vlen give). Returns the kind.
    fn meta_common(&self, t: T<'_>) -> Result<Kind, Bad> {
        let w = t.w;
        if w.len() < 3 {
            return Err((
                "M2-truncated",
                format!(
                    "only {} bytes left in the type section, a type needs at least 12",
                    w.len() * 4
                ),
            ));
        }
        let info = t.info();
        if info & !kinds::INFO_MASK != 0 {
            return Err((
                "M1-info-bits",
                format!(
                    "info {info:#010x} has bits outside {:#010x} set",
                    kinds::INFO_MASK
                ),
            ));
        }
        let Some(kind) = t.kind() else {
            return Err((
                "M1-kind",
                format!("invalid kind {}", kinds::info_kind(info)),
            ));
        };
        if !self.off_ok(t.name_off()) {
            return Err((
                "M3-name-offset",
                format!("{kind}: invalid name offset {:#x}", t.name_off()),
            ));
        }
        let meta_left = w.len() - 3;
        let needed = kind.record_words(t.vlen()) - 3;
        if meta_left < needed {
            return Err((
                "M2-truncated",
                format!(
                    "{kind} with vlen {} needs {} more bytes, only {} left in the type section",
                    t.vlen(),
                    needed * 4,
                    meta_left * 4
                ),
            ));
        }
        if meta_left > needed {
            return Err((
                "M2-truncated",
                format!(
                    "{kind} record has {} bytes more than its kind and vlen account for",
                    (meta_left - needed) * 4
                ),
            ));
        }
        Ok(kind)
    }

    /// `t` breaks `rule`; the message starts with the type.
    fn bad(&self, t: T<'_>, rule: &'static str, msg: String) -> Meta {
        Err((rule, format!("{}: {msg}", self.desc(t))))
    }

    /// The kinds whose vlen must be 0.
    fn vlen0(&self, t: T<'_>) -> Meta {
        if t.vlen() != 0 {
            return Err((
                "M5-vlen",
                format!("{}: vlen {} != 0", self.desc(t), t.vlen()),
            ));
        }
        Ok(())
    }

    /// The kinds whose kind_flag must be 0.
    fn kflag0(&self, t: T<'_>) -> Meta {
        if t.kflag() {
            return Err(("M6-kflag", format!("{}: kind_flag must be 0", self.desc(t))));
        }
        Ok(())
    }

    /// `btf_int_check_meta`.
    fn meta_int(&self, t: T<'_>) -> Meta {
        self.vlen0(t)?;
        self.kflag0(t)?;
        let data = t.word(3);
        if data & !INT_MASK != 0 {
            return self.bad(t, "M8-int", format!("invalid int data {data:#010x}"));
        }
        let nr_bits = t.int_bits() + t.int_offset();
        if nr_bits > 128 {
            return self.bad(
                t,
                "M8-int",
                format!("bits + offset = {nr_bits} exceeds 128"),
            );
        }
        if roundup_bytes(nr_bits) > t.st() {
            return self.bad(
                t,
                "M8-int",
                format!(
                    "bits + offset = {nr_bits} exceed the size of {} bytes",
                    t.st()
                ),
            );
        }
        let enc = data >> 24;
        if !matches!(enc, 0 | 1 | 2 | 4) {
            return self.bad(
                t,
                "M8-int",
                format!("unsupported encoding {enc:#x} (0, SIGNED, CHAR or BOOL)"),
            );
        }
        Ok(())
    }

    /// A TYPE_TAG's or DECL_TAG's kind_flag: 1 marks an arbitrary `__attribute__`, which the
    /// kernels from 6.15 on take and the older ones reject.
    fn tag_kflag(&self, t: T<'_>) -> Meta {
        if t.kflag() && !self.types.tag_kflag {
            return Err((
                "M6-kflag",
                format!(
                    "{}: kind_flag must be 0 (1 marks an attribute, which Linux {} and later \
                     take)",
                    self.desc(t),
                    TAG_KFLAG_KERNEL
                ),
            ));
        }
        Ok(())
    }

    /// `btf_ref_type_check_meta`: PTR, TYPEDEF, VOLATILE, CONST, RESTRICT, TYPE_TAG.
    fn meta_ref(&self, t: T<'_>, kind: Kind) -> Meta {
        self.vlen0(t)?;
        if kind == Kind::TypeTag {
            self.tag_kflag(t)?;
        } else {
            self.kflag0(t)?;
        }
        if !id_ok(t.st()) {
            return self.bad(t, "M7-type-id", format!("invalid type id {:#x}", t.st()));
        }
        let bad_name = match kind {
            Kind::Typedef => !self.ident_ok(t.name_off()),
            Kind::TypeTag => self.name_bytes(t.name_off()).is_none_or(|s| s.is_empty()),
            _ => t.name_off() != 0,
        };
        if bad_name {
            let want = match kind {
                Kind::Typedef => "a C identifier",
                Kind::TypeTag => "a non-empty tag value",
                _ => "no name",
            };
            return self.bad(t, "M4-name", format!("invalid name: must have {want}"));
        }
        Ok(())
    }

    /// `btf_array_check_meta`.
    fn meta_array(&self, t: T<'_>) -> Meta {
        if t.name_off() != 0 {
            return self.bad(t, "M4-name", "invalid name: an ARRAY has no name".into());
        }
        self.vlen0(t)?;
        self.kflag0(t)?;
        if t.st() != 0 {
            return self.bad(
                t,
                "M9-array-size",
                format!("size field is {}, must be 0", t.st()),
            );
        }
        let (elem, index) = (t.word(3), t.word(4));
        if elem == 0 || !id_ok(elem) {
            return self.bad(t, "M7-type-id", format!("invalid element type id {elem}"));
        }
        if index == 0 || !id_ok(index) {
            return self.bad(t, "M7-type-id", format!("invalid index type id {index}"));
        }
        Ok(())
    }

    /// `btf_struct_check_meta`: STRUCT and UNION, and their members' names, ids and offsets.
    fn meta_struct(&self, t: T<'_>, kind: Kind) -> Meta {
        if t.name_off() != 0 && !self.ident_ok(t.name_off()) {
            return self.bad(
                t,
                "M4-name",
                "invalid name: must be empty or a C identifier".into(),
            );
        }
        let is_union = kind == Kind::Union;
        let mut last = 0u32;
        for i in 0..t.vlen() {
            let m = t.member(i);
            if !self.off_ok(m.name_off) {
                return self.bad(
                    t,
                    "M3-name-offset",
                    format!("member #{i}: invalid name offset {:#x}", m.name_off),
                );
            }
            let md = || self.member_desc(m, i);
            if m.name_off != 0 && !self.ident_ok(m.name_off) {
                return self.bad(
                    t,
                    "M4-name",
                    format!("{}: invalid name: must be empty or a C identifier", md()),
                );
            }
            if m.type_id == 0 || !id_ok(m.type_id) {
                return self.bad(
                    t,
                    "M7-type-id",
                    format!("{}: invalid type id {}", md(), m.type_id),
                );
            }
            let off = if t.kflag() {
                m.offset & 0x00ff_ffff
            } else {
                m.offset
            };
            if is_union && off != 0 {
                return self.bad(
                    t,
                    "M10-member-offset",
                    format!("{}: union member at bit offset {off}, must be 0", md()),
                );
            }
            if last > off {
                return self.bad(
                    t,
                    "M10-member-offset",
                    format!(
                        "{}: bit offset {off} is below the previous member's {last}",
                        md()
                    ),
                );
            }
            if roundup_bytes(off) > t.st() {
                return self.bad(
                    t,
                    "M10-member-offset",
                    format!(
                        "{}: bit offset {off} is past the size of {} bytes",
                        md(),
                        t.st()
                    ),
                );
            }
            last = off;
        }
        Ok(())
    }

    /// `btf_enum_check_meta` and `btf_enum64_check_meta`.
    fn meta_enum(&self, t: T<'_>, kind: Kind) -> Meta {
        if t.st() > 8 || !t.st().is_power_of_two() {
            return self.bad(
                t,
                "M11-enum-size",
                format!("size {} (must be 1, 2, 4 or 8)", t.st()),
            );
        }
        if t.name_off() != 0 && !self.ident_ok(t.name_off()) {
            return self.bad(
                t,
                "M4-name",
                "invalid name: must be empty or a C identifier".into(),
            );
        }
        let per = if kind == Kind::Enum { 2 } else { 3 };
        for i in 0..t.vlen() {
            let off = t.entry(0, per, i, 0);
            if !self.off_ok(off) {
                return self.bad(
                    t,
                    "M3-name-offset",
                    format!("enumerator #{i}: invalid name offset {off:#x}"),
                );
            }
            if off == 0 || !self.ident_ok(off) {
                return self.bad(
                    t,
                    "M4-name",
                    format!(
                        "enumerator #{i} {}: invalid name: must be a C identifier",
                        self.quoted(off)
                    ),
                );
            }
        }
        Ok(())
    }

    /// `btf_fwd_check_meta`.
    fn meta_fwd(&self, t: T<'_>) -> Meta {
        self.vlen0(t)?;
        if t.st() != 0 {
            return self.bad(t, "M12-fwd", format!("type field is {}, must be 0", t.st()));
        }
        if !self.ident_ok(t.name_off()) {
            return self.bad(t, "M4-name", "invalid name: must be a C identifier".into());
        }
        Ok(())
    }

    /// `btf_func_check_meta`.
    fn meta_func(&self, t: T<'_>) -> Meta {
        if !self.ident_ok(t.name_off()) {
            return self.bad(t, "M4-name", "invalid name: must be a C identifier".into());
        }
        if t.vlen() > kinds::FUNC_GLOBAL {
            return self.bad(
                t,
                "M5-func-linkage",
                format!(
                    "linkage (vlen) {} is not supported (0 static, 1 global)",
                    t.vlen()
                ),
            );
        }
        self.kflag0(t)
    }

    /// `btf_func_proto_check_meta` (the parameters are checked after the resolve pass).
    fn meta_func_proto(&self, t: T<'_>) -> Meta {
        if t.name_off() != 0 {
            return self.bad(
                t,
                "M4-name",
                "invalid name: a FUNC_PROTO has no name".into(),
            );
        }
        self.kflag0(t)
    }

    /// `btf_var_check_meta`.
    fn meta_var(&self, t: T<'_>) -> Meta {
        self.vlen0(t)?;
        self.kflag0(t)?;
        if !self.ident_ok(t.name_off()) {
            return self.bad(
                t,
                "M4-name",
                "invalid name: must be a C identifier (dots allowed)".into(),
            );
        }
        if t.st() == 0 || !id_ok(t.st()) {
            return self.bad(t, "M7-type-id", format!("invalid type id {}", t.st()));
        }
        let linkage = t.word(3);
        if linkage != kinds::VAR_STATIC && linkage != kinds::VAR_GLOBAL_ALLOCATED {
            return self.bad(
                t,
                "M15-var-linkage",
                format!("linkage {linkage} is not supported (0 static, 1 global allocated)"),
            );
        }
        Ok(())
    }

    /// `btf_datasec_check_meta`: the entries are sorted, do not overlap and fit the size.
    fn meta_datasec(&self, t: T<'_>) -> Meta {
        let size = t.st();
        if size == 0 {
            return self.bad(t, "M14-datasec", "size is 0".into());
        }
        self.kflag0(t)?;
        if !self.ident_ok(t.name_off()) {
            return self.bad(
                t,
                "M4-name",
                "invalid name: must be an identifier (dots allowed)".into(),
            );
        }
        let (mut last_end, mut sum) = (0u64, 0u64);
        for i in 0..t.vlen() {
            let (vt, off, sz) = (
                t.entry(0, 3, i, 0),
                t.entry(0, 3, i, 1),
                t.entry(0, 3, i, 2),
            );
            let e = || format!("entry #{i} (type {vt}, offset {off}, size {sz})");
            if vt == 0 || !id_ok(vt) {
                return self.bad(t, "M7-type-id", format!("{}: invalid type id", e()));
            }
            if (off as u64) < last_end || off >= size {
                return self.bad(
                    t,
                    "M14-datasec",
                    format!(
                        "{}: invalid offset (entries must be sorted, not overlap \
                         and lie within the size {size})",
                        e()
                    ),
                );
            }
            if sz == 0 || sz > size {
                return self.bad(t, "M14-datasec", format!("{}: invalid size", e()));
            }
            last_end = off as u64 + sz as u64;
            if last_end > size as u64 {
                return self.bad(
                    t,
                    "M14-datasec",
                    format!("{}: ends past the size {size}", e()),
                );
            }
            sum += sz as u64;
        }
        if (size as u64) < sum {
            return self.bad(
                t,
                "M14-datasec",
                format!("entries total {sum} bytes, more than the size {size}"),
            );
        }
        Ok(())
    }

    /// `btf_float_check_meta`.
    fn meta_float(&self, t: T<'_>) -> Meta {
        self.vlen0(t)?;
        self.kflag0(t)?;
        if !matches!(t.st(), 2 | 4 | 8 | 12 | 16) {
            return self.bad(
                t,
                "M13-float-size",
                format!("size {} (must be 2, 4, 8, 12 or 16)", t.st()),
            );
        }
        Ok(())
    }

    /// `btf_decl_tag_check_meta`.
    fn meta_decl_tag(&self, t: T<'_>) -> Meta {
        if self.name_bytes(t.name_off()).is_none_or(|s| s.is_empty()) {
            return self.bad(t, "M4-name", "invalid value: must be non-empty".into());
        }
        self.vlen0(t)?;
        self.tag_kflag(t)?;
        let comp = t.word(3) as i32;
        if comp < -1 {
            return self.bad(
                t,
                "M16-decl-tag-component",
                format!("component_idx {comp} (must be >= -1)"),
            );
        }
        Ok(())
    }

    // -----------------------------------------------------------------------------------------
    // Type-tag chains (btf_check_type_tags)
    // -----------------------------------------------------------------------------------------

    /// Along every modifier chain, TYPE_TAGs must come first, and a chain has at most 32 links.
    /// A chain into a nonexistent id stops silently (the resolve pass reports it as R1).
    pub(super) fn check_type_tags(&self, sink: &mut Sink) {
        // 0 unchecked, 1 good, 2 bad (own types, by index).
        let mut state = vec![0u8; self.meta_bad.len()];
        for i in 0..self.meta_bad.len() {
            if sink.full {
                return;
            }
            let id = self.start_id + i as u32;
            let Some(t) = self.ty(id) else { continue };
            if self.meta_bad[i] || !t.is_modifier() || state[i] == 2 {
                continue;
            }
            let mut in_tags = t.is(Kind::TypeTag);
            let mut limit = 32;
            let mut cur = id;
            let mut path = Vec::new();
            let mut good = true;
            while let Some(ct) = self.ty(cur) {
                if !ct.is_modifier() {
                    break;
                }
                path.push(cur);
                if limit == 0 {
                    sink.push(
                        Some(id),
                        "M17-type-tag-chain",
                        format!("{}: modifier chain longer than 32 or cyclic", self.desc(t)),
                    );
                    // Every link of this chain leads into the same chain: report it once.
                    for &p in &path {
                        if let Some(c) = self.own_idx(p) {
                            state[c] = 2;
                        }
                    }
                    good = false;
                    break;
                }
                limit -= 1;
                if ct.is(Kind::TypeTag) {
                    if !in_tags {
                        let chain: Vec<String> = path.iter().map(|&p| self.desc_id(p)).collect();
                        sink.push(
                            Some(id),
                            "M17-type-tag-order",
                            format!(
                                "type tags must precede other modifiers: {}",
                                chain.join(" -> ")
                            ),
                        );
                        good = false;
                        break;
                    }
                } else {
                    in_tags = false;
                }
                if cur != id && cur < id {
                    // Already checked (own, lower id) or base.
                    if self.own_idx(cur).is_some_and(|c| state[c] == 2) {
                        good = false;
                    }
                    break;
                }
                cur = ct.st();
            }
            state[i] = if good { 1 } else { 2 };
        }
    }
}
