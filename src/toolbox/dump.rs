//! Human-readable listing of BTF (`dwarf2btf dump`).
//!
//! The output starts with a summary: `#`-prefixed lines giving the number of types, the string
//! section size, the base (for split BTF) and the count of each kind present. Then every own type
//! follows in id order in the raw format of `bpftool btf dump file X`:
//!
//! ```text
//! [1] INT 'int' size=4 bits_offset=0 nr_bits=32 encoding=SIGNED
//! [2] PTR '(anon)' type_id=3
//! [3] STRUCT 'foo' size=8 vlen=2
//!         'a' type_id=1 bits_offset=0
//!         'b' type_id=1 bits_offset=32 bitfield_size=3
//! [4] ENUM 'e' encoding=UNSIGNED size=4 vlen=1
//!         'A' val=0
//! [5] FUNC 'f' type_id=6 linkage=static
//! [6] FUNC_PROTO '(anon)' ret_type_id=0 vlen=1
//!         'x' type_id=1
//! [7] VAR 'v' type_id=1, linkage=global
//! [8] DATASEC '.data' size=4 vlen=1
//!         type_id=7 offset=0 size=4 (VAR 'v')
//! ```
//!
//! (entries are indented by one tab). Names are `(anon)` for string offset 0 and `(invalid)` for
//! an offset outside the string section. Records of an unknown kind print as `UNKNOWN` and a
//! record too short for its kind prints its header followed by `<truncated>`: dumping never
//! panics, whatever the input.

use std::borrow::Cow;
use std::io::{self, Write};

use crate::btf::kinds::{self, Kind};
use crate::btf::{Btf, Endian, Type};

fn str_or<'a>(btf: &'a Btf, off: u32) -> Cow<'a, str> {
    if off == 0 {
        return "(anon)".into();
    }
    match btf.str_at(off) {
        Some(s) => String::from_utf8_lossy(s),
        None => "(invalid)".into(),
    }
}

fn int_encoding(enc: u8) -> &'static str {
    match enc {
        0 => "(none)",
        kinds::INT_SIGNED => "SIGNED",
        kinds::INT_CHAR => "CHAR",
        kinds::INT_BOOL => "BOOL",
        _ => "UNKN",
    }
}

fn func_linkage(l: u32) -> &'static str {
    match l {
        0 => "static",
        1 => "global",
        2 => "extern",
        _ => "(unknown)",
    }
}

/// Writes the summary and the listing of `btf`'s own types to `out`.
pub fn dump(btf: &Btf, out: &mut impl Write) -> io::Result<()> {
    let own = btf.own_len();
    let first = btf.start_id();
    if own == 0 {
        writeln!(out, "# 0 types")?;
    } else {
        writeln!(
            out,
            "# {own} types (ids {first}..={}), {} bytes of strings, {}",
            btf.type_cnt() - 1,
            btf.strings().len(),
            match btf.endian {
                Endian::Little => "little-endian",
                Endian::Big => "big-endian",
            }
        )?;
    }
    if let Some(base) = btf.base() {
        writeln!(
            out,
            "# split BTF on a base of {} types and {} bytes of strings",
            base.type_cnt() - 1,
            base.str_end()
        )?;
    }
    let counts = btf.kind_counts();
    if counts[0] != 0 {
        writeln!(out, "#   {:<12} {}", "UNKNOWN", counts[0])?;
    }
    for k in Kind::ALL {
        let n = counts[k as usize];
        if n != 0 {
            writeln!(out, "#   {:<12} {n}", k.name())?;
        }
    }
    for t in btf.own_types() {
        dump_type(btf, &t, out)?;
    }
    Ok(())
}

/// Writes one type in bpftool's raw format, entries included, ending with a newline.
pub fn dump_type(btf: &Btf, t: &Type<'_>, out: &mut impl Write) -> io::Result<()> {
    let kind = t.kind();
    write!(
        out,
        "[{}] {} '{}'",
        t.id,
        kind.map_or("UNKNOWN", Kind::name),
        str_or(btf, t.name_off())
    )?;
    let Some(kind) = kind else {
        return writeln!(out);
    };
    if t.words.len() < kind.record_words(t.vlen()) {
        return writeln!(out, " <truncated>");
    }
    match kind {
        Kind::Int => write!(
            out,
            " size={} bits_offset={} nr_bits={} encoding={}",
            t.size_or_type(),
            t.int_offset(),
            t.int_bits(),
            int_encoding(t.int_encoding())
        )?,
        Kind::Ptr
        | Kind::Const
        | Kind::Volatile
        | Kind::Restrict
        | Kind::Typedef
        | Kind::TypeTag => write!(out, " type_id={}", t.size_or_type())?,
        Kind::Array => {
            let a = t.array();
            write!(
                out,
                " type_id={} index_type_id={} nr_elems={}",
                a.elem, a.index, a.nelems
            )?;
        }
        Kind::Struct | Kind::Union => {
            let kflag = t.kflag();
            write!(out, " size={} vlen={}", t.size_or_type(), t.vlen())?;
            for m in t.members() {
                write!(
                    out,
                    "\n\t'{}' type_id={} bits_offset={}",
                    str_or(btf, m.name_off),
                    m.type_id,
                    m.bit_offset(kflag)
                )?;
                let bits = m.bitfield_size(kflag);
                if bits != 0 {
                    write!(out, " bitfield_size={bits}")?;
                }
            }
        }
        Kind::Enum | Kind::Enum64 => {
            let signed = t.kflag();
            write!(
                out,
                " encoding={} size={} vlen={}",
                if signed { "SIGNED" } else { "UNSIGNED" },
                t.size_or_type(),
                t.vlen()
            )?;
            for e in t.enumerators() {
                let name = str_or(btf, e.name_off);
                match (kind, signed) {
                    (Kind::Enum, true) => write!(out, "\n\t'{name}' val={}", e.raw as u32 as i32)?,
                    (Kind::Enum, false) => write!(out, "\n\t'{name}' val={}", e.raw as u32)?,
                    (_, true) => write!(out, "\n\t'{name}' val={}LL", e.raw as i64)?,
                    (_, false) => write!(out, "\n\t'{name}' val={}ULL", e.raw)?,
                }
            }
        }
        Kind::Fwd => write!(
            out,
            " fwd_kind={}",
            if t.kflag() { "union" } else { "struct" }
        )?,
        Kind::Func => write!(
            out,
            " type_id={} linkage={}",
            t.size_or_type(),
            func_linkage(t.vlen())
        )?,
        Kind::FuncProto => {
            write!(out, " ret_type_id={} vlen={}", t.size_or_type(), t.vlen())?;
            for p in t.params() {
                write!(
                    out,
                    "\n\t'{}' type_id={}",
                    str_or(btf, p.name_off),
                    p.type_id
                )?;
            }
        }
        Kind::Var => write!(
            out,
            " type_id={}, linkage={}",
            t.size_or_type(),
            match t.extra() {
                0 => "static",
                1 => "global",
                2 => "extern",
                _ => "(unknown)",
            }
        )?,
        Kind::Datasec => {
            write!(out, " size={} vlen={}", t.size_or_type(), t.vlen())?;
            for v in t.secinfos() {
                write!(
                    out,
                    "\n\ttype_id={} offset={} size={}",
                    v.type_id, v.offset, v.size
                )?;
                if let Some(vt) = btf.type_by_id(v.type_id) {
                    write!(
                        out,
                        " ({} '{}')",
                        vt.kind().map_or("UNKNOWN", Kind::name),
                        str_or(btf, vt.name_off())
                    )?;
                }
            }
        }
        Kind::Float => write!(out, " size={}", t.size_or_type())?,
        Kind::DeclTag => write!(
            out,
            " type_id={} component_idx={}",
            t.size_or_type(),
            t.decl_tag_component()
        )?,
    }
    writeln!(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(btf: &Btf) -> String {
        let mut v = Vec::new();
        dump(btf, &mut v).unwrap();
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn bpftool_like_lines() {
        let mut b = Btf::new();
        let int = b.add_int(b"int", 4, kinds::INT_SIGNED).unwrap();
        let s = b.add_composite(Kind::Struct, Some(b"foo"), 8).unwrap();
        b.add_field(Some(b"a"), int, 0, 0).unwrap();
        b.add_field(Some(b"b"), int, 32, 3).unwrap();
        b.add_ref(Kind::Ptr, None, s).unwrap();
        b.add_enum(Kind::Enum, Some(b"e"), 4, false).unwrap();
        b.add_enum_value(b"A", -2).unwrap();
        let proto = b.add_func_proto(0).unwrap();
        b.add_func_param(Some(b"x"), int).unwrap();
        b.add_func(b"f", kinds::FUNC_GLOBAL, proto).unwrap();
        let v = b.add_var(b"v", kinds::VAR_GLOBAL_ALLOCATED, int).unwrap();
        b.add_datasec(b".data", 4).unwrap();
        b.add_datasec_var(v, 0, 4).unwrap();
        b.add_datasec_var(4242, 0, 4).unwrap();
        let out = text(&b);
        for line in [
            "[1] INT 'int' size=4 bits_offset=0 nr_bits=32 encoding=SIGNED\n",
            "[2] STRUCT 'foo' size=8 vlen=2\n\t'a' type_id=1 bits_offset=0\n\t'b' type_id=1 bits_offset=32 bitfield_size=3\n",
            "[3] PTR '(anon)' type_id=2\n",
            "[4] ENUM 'e' encoding=SIGNED size=4 vlen=1\n\t'A' val=-2\n",
            "[5] FUNC_PROTO '(anon)' ret_type_id=0 vlen=1\n\t'x' type_id=1\n",
            "[6] FUNC 'f' type_id=5 linkage=global\n",
            "[7] VAR 'v' type_id=1, linkage=global\n",
            "[8] DATASEC '.data' size=4 vlen=2\n\ttype_id=7 offset=0 size=4 (VAR 'v')\n\ttype_id=4242 offset=0 size=4\n",
            "#   STRUCT       1\n",
        ] {
            assert!(out.contains(line), "missing {line:?} in\n{out}");
        }
    }

    #[test]
    fn bad_records_do_not_panic() {
        let mut b = Btf::new();
        // Unknown kind 25, and a STRUCT claiming 3 members with none present.
        b.push_record(&[0, 25 << 24, 0]).unwrap();
        b.push_record(&[7777, kinds::info(Kind::Struct, 3, false), 4])
            .unwrap();
        let out = text(&b);
        assert!(out.contains("[1] UNKNOWN '(anon)'\n"), "{out}");
        assert!(
            out.contains("[2] STRUCT '(invalid)' <truncated>\n"),
            "{out}"
        );
    }
}
