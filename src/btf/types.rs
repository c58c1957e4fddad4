//! Read-only views of one BTF type record and of its vlen entries.
//!
//! A record is a slice of native-order `u32` words exactly as laid out on disk; the views only
//! decode fields, they never copy.

use super::kinds::{self, Kind};
use super::store;

/// One type record, borrowed from its [`super::Btf`].
#[derive(Clone, Copy, Debug)]
pub struct Type<'a> {
    /// The type id.
    pub id: u32,
    /// The record's words: `name_off`, `info`, `size_or_type`, then kind-specific data.
    pub words: &'a [u32],
}

/// A STRUCT/UNION member.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Member {
    /// The member's name, as an offset into the string section (0: anonymous).
    pub name_off: u32,
    /// The member's type id.
    pub type_id: u32,
    /// The raw offset word (`bitfield_size << 24 | bit_offset` when the parent has kind_flag).
    pub offset: u32,
}

/// An ENUM or ENUM64 enumerator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Enumerator {
    /// The enumerator's name, as an offset into the string section.
    pub name_off: u32,
    /// The value's raw bits (ENUM: the 32-bit word zero-extended).
    pub raw: u64,
}

/// A FUNC_PROTO parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Param {
    /// The parameter's name, as an offset into the string section (0: unnamed).
    pub name_off: u32,
    /// The parameter's type id (0 with no name: the `...` of a variadic function).
    pub type_id: u32,
}

/// A DATASEC entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VarSecinfo {
    /// The type id of the entry (a VAR).
    pub type_id: u32,
    /// Its offset in the section, in bytes.
    pub offset: u32,
    /// Its size, in bytes.
    pub size: u32,
}

/// An ARRAY's trailing data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Array {
    /// The element type id.
    pub elem: u32,
    /// The index type id.
    pub index: u32,
    /// The number of elements (0 for a flexible array).
    pub nelems: u32,
}

impl<'a> Type<'a> {
    /// The name, as an offset into the string section (0: anonymous).
    pub fn name_off(&self) -> u32 {
        self.words[0]
    }
    /// The raw `info` word (kind, vlen, kind_flag).
    pub fn info(&self) -> u32 {
        self.words[1]
    }
    /// The kind, or `None` for a kind number the kernel does not know.
    pub fn kind(&self) -> Option<Kind> {
        Kind::from_u32(kinds::info_kind(self.info()))
    }
    /// The kind; panics only on records a [`super::Btf`] could not hold (checked at parse).
    pub fn k(&self) -> Kind {
        self.kind().expect("BTF records are checked at parse time")
    }
    /// The vlen: the number of members, enumerators, parameters or section entries
    /// (FUNC: the linkage).
    pub fn vlen(&self) -> u32 {
        kinds::info_vlen(self.info())
    }
    /// The kind_flag bit of `info`.
    pub fn kflag(&self) -> bool {
        kinds::info_kflag(self.info())
    }
    /// `size` for sized kinds, `type` for reference kinds.
    pub fn size_or_type(&self) -> u32 {
        self.words[2]
    }
    /// The word right after the common header (INT data, VAR linkage, DECL_TAG component).
    pub fn extra(&self) -> u32 {
        self.words[3]
    }
    /// An INT's encoding bits ([`kinds::INT_SIGNED`], [`kinds::INT_CHAR`],
    /// [`kinds::INT_BOOL`]).
    pub fn int_encoding(&self) -> u8 {
        (self.extra() >> 24) as u8 & 0x0f
    }
    /// An INT's bit offset (`BTF_INT_OFFSET`).
    pub fn int_offset(&self) -> u8 {
        (self.extra() >> 16) as u8
    }
    /// An INT's width in bits (`BTF_INT_BITS`).
    pub fn int_bits(&self) -> u8 {
        self.extra() as u8
    }
    /// A DECL_TAG's `component_idx`: -1 for the tagged type or function itself, else the
    /// index of the member or parameter it tags.
    pub fn decl_tag_component(&self) -> i32 {
        self.extra() as i32
    }
    /// An ARRAY's data record.
    pub fn array(&self) -> Array {
        Array {
            elem: self.words[3],
            index: self.words[4],
            nelems: self.words[5],
        }
    }
    fn entries(&self, per: usize) -> impl Iterator<Item = &'a [u32]> + 'a {
        let start = 3 + self.k().extra_words();
        self.words[start..].chunks_exact(per)
    }
    /// A STRUCT's or UNION's members, in order.
    pub fn members(&self) -> impl Iterator<Item = Member> + 'a {
        self.entries(3).map(|w| Member {
            name_off: w[0],
            type_id: w[1],
            offset: w[2],
        })
    }
    /// An ENUM's or ENUM64's enumerators, in order.
    pub fn enumerators(&self) -> impl Iterator<Item = Enumerator> + 'a {
        let wide = self.k() == Kind::Enum64;
        self.entries(if wide { 3 } else { 2 })
            .map(move |w| Enumerator {
                name_off: w[0],
                raw: if wide {
                    w[1] as u64 | (w[2] as u64) << 32
                } else {
                    w[1] as u64
                },
            })
    }
    /// A FUNC_PROTO's parameters, in order.
    pub fn params(&self) -> impl Iterator<Item = Param> + 'a {
        self.entries(2).map(|w| Param {
            name_off: w[0],
            type_id: w[1],
        })
    }
    /// A DATASEC's entries, in order.
    pub fn secinfos(&self) -> impl Iterator<Item = VarSecinfo> + 'a {
        self.entries(3).map(|w| VarSecinfo {
            type_id: w[0],
            offset: w[1],
            size: w[2],
        })
    }
}

impl Member {
    /// The member's bit offset, decoded with the parent's kind_flag.
    pub fn bit_offset(&self, kflag: bool) -> u32 {
        if kflag {
            self.offset & 0x00ff_ffff
        } else {
            self.offset
        }
    }
    /// The bitfield size (0 when not a bitfield or when the parent has no kind_flag).
    pub fn bitfield_size(&self, kflag: bool) -> u32 {
        if kflag {
            self.offset >> 24
        } else {
            0
        }
    }
}

/// Calls `f` with the word index of every type-id field of a record whose info word is
/// `info`, in libbpf's `btf_field_iter` IDS order (FWD's `type` word included, as libbpf does;
/// the record store's [`store::for_each_id_word`] leaves it in the template).
pub fn for_each_type_id_word(info: u32, mut f: impl FnMut(usize)) {
    if kinds::info_kind(info) == kinds::kind::FWD {
        f(2);
    } else {
        store::for_each_id_word(info, f);
    }
}

/// Calls `f` on every type-id field of a record (its kind and vlen as its info word says), in
/// libbpf's `btf_field_iter` IDS order.
pub fn for_each_type_id_mut(words: &mut [u32], mut f: impl FnMut(&mut u32)) {
    for_each_type_id_word(words[1], |i| f(&mut words[i]));
}

/// Calls `f` on every string-offset field of a record, in libbpf's STRS order.
pub fn for_each_str_off_mut(kind: Kind, words: &mut [u32], mut f: impl FnMut(&mut u32)) {
    f(&mut words[0]);
    let per = match kind {
        Kind::Struct | Kind::Union | Kind::Enum64 => 3,
        Kind::Enum | Kind::FuncProto => 2,
        _ => return,
    };
    for e in words[3..].chunks_exact_mut(per) {
        f(&mut e[0]);
    }
}
