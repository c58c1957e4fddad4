//! The state of one verification ([`Verifier`]): the lookups and type descriptions every rule
//! family uses, the resolve pass's bookkeeping, and the driver ([`check_types`]) that runs the
//! meta checks, the type-tag chains and the resolve pass in the kernel's order.

use super::names::name_valid;
use super::problem::Sink;
use super::record::{Member, T};
use super::releases;
use super::target::{KernelVersion, TypeRules};
use crate::btf::kinds::{self, Kind};
use crate::btf::Btf;

/// `MAX_RESOLVE_DEPTH` of the kernel's resolver.
pub(super) const MAX_RESOLVE_DEPTH: usize = 32;

/// Why a resolve step failed.
pub(super) enum Fail {
    /// A problem to report, at the given type.
    Report(u32, &'static str, String),
    /// `-EEXIST`: the given id is already on the resolve stack.
    Loop(u32),
    /// `-E2BIG`: the stack is full.
    Depth,
    /// Depends on a type whose problem was already reported.
    Silent,
}

/// Where an own type is in the resolve pass.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Visit {
    NotVisited,
    Visited,
    Resolved,
    Failed,
}

/// `resolve_mode`: which kinds end the walk down from the type that started it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
    Tbd,
    Ptr,
    StructOrArray,
}

/// An entry of the resolve stack (`struct resolve_vertex`).
#[derive(Clone, Copy)]
pub(super) struct Vertex {
    pub(super) id: u32,
    /// STRUCT and DATASEC: the member to go on from once the pushed type is resolved.
    pub(super) next_member: u32,
}

/// The state of one verification: lookups for every family, and the resolve pass's bookkeeping
/// (per own type, by index `id - start_id`).
pub(super) struct Verifier<'a> {
    pub(super) btf: &'a Btf,
    pub(super) start_id: u32,
    pub(super) type_cnt: u32,
    pub(super) ptr_size: u32,
    /// Own types that failed their meta check: never resolved, never looked into.
    pub(super) meta_bad: Vec<bool>,
    pub(super) visit: Vec<Visit>,
    pub(super) res_id: Vec<u32>,
    pub(super) res_size: Vec<u32>,
    pub(super) stack: Vec<Vertex>,
    pub(super) mode: Mode,
    /// What the target kernels relaxed since 6.1.
    pub(super) types: TypeRules,
}

/// Meta checks, type-tag chains and (unless the type section is cut short) the resolve pass.
pub(super) fn check_types(btf: &Btf, sink: &mut Sink, truncated: bool, types: TypeRules) {
    let n = btf.own_len();
    let mut v = Verifier {
        btf,
        start_id: btf.start_id(),
        type_cnt: btf.type_cnt(),
        ptr_size: 8,
        meta_bad: vec![false; n],
        visit: vec![Visit::NotVisited; n],
        res_id: vec![0; n],
        res_size: vec![0; n],
        stack: Vec::with_capacity(MAX_RESOLVE_DEPTH),
        mode: Mode::Tbd,
        types,
    };
    if v.type_cnt > kinds::MAX_TYPE_ID {
        sink.push(
            Some(kinds::MAX_TYPE_ID),
            "M2-too-many-types",
            format!(
                "exceeded the maximum number of types (ids must stay below {:#x})",
                kinds::MAX_TYPE_ID
            ),
        );
    }
    if let Some(version) = types.features_only {
        v.check_features(sink, version);
        return;
    }
    v.ptr_size = v.guess_ptr_size();
    for i in 0..n {
        if sink.full {
            return;
        }
        let id = v.start_id + i as u32;
        let Some(t) = v.ty(id) else { continue };
        if let Some((rule, msg)) = v.check_meta(t) {
            v.meta_bad[i] = true;
            v.visit[i] = Visit::Failed;
            sink.push(Some(id), rule, msg);
        } else if t.is_attribute_tag() {
            match &mut sink.attribute_tags {
                Some((_, count, _)) => *count += 1,
                None => sink.attribute_tags = Some((id, 1, v.desc(t))),
            }
        }
    }
    if truncated {
        return;
    }
    v.check_type_tags(sink);
    v.check_all_types(sink);
}

impl<'a> Verifier<'a> {
    /// For a release before 6.1: the first use of each kind and flag `version` lacks.
    pub(super) fn check_features(&self, sink: &mut Sink, version: KernelVersion) {
        let mut missing = releases::Missing::default();
        for id in self.start_id..self.type_cnt {
            let Some(t) = self.ty(id) else { continue };
            for feature in releases::features_of(t).into_iter().flatten() {
                if releases::introduced(feature).since > version {
                    missing.note(feature, id, || self.desc(t));
                }
            }
        }
        for p in missing.problems(version) {
            sink.push(p.type_id, p.rule, p.message);
        }
    }

    pub(super) fn ty(&self, id: u32) -> Option<T<'a>> {
        if id == 0 {
            return Some(T { id: 0, w: &[] });
        }
        self.btf.type_by_id(id).map(|t| T { id, w: t.words })
    }

    pub(super) fn own_idx(&self, id: u32) -> Option<usize> {
        (id >= self.start_id && id < self.type_cnt).then(|| (id - self.start_id) as usize)
    }

    /// The type, or `Silent` when it is an own type that already failed its meta check.
    pub(super) fn get(&self, id: u32) -> Result<Option<T<'a>>, Fail> {
        match self.own_idx(id) {
            Some(i) if self.meta_bad[i] => Err(Fail::Silent),
            _ => Ok(self.ty(id)),
        }
    }

    pub(super) fn name_bytes(&self, off: u32) -> Option<&'a [u8]> {
        if off > kinds::MAX_NAME_OFFSET {
            return None;
        }
        self.btf.str_at(off)
    }

    pub(super) fn off_ok(&self, off: u32) -> bool {
        self.name_bytes(off).is_some()
    }

    pub(super) fn ident_ok(&self, off: u32) -> bool {
        self.name_bytes(off).is_some_and(name_valid)
    }

    pub(super) fn quoted(&self, off: u32) -> String {
        match self.name_bytes(off) {
            None => format!("<bad name offset {off:#x}>"),
            Some([]) => "(anon)".into(),
            Some(s) => {
                let s = &s[..s.len().min(80)];
                format!("'{}'", String::from_utf8_lossy(s))
            }
        }
    }

    /// "STRUCT 'foo'", "PTR", "void": a type for messages.
    pub(super) fn desc(&self, t: T<'_>) -> String {
        if t.is_void() {
            return "void".into();
        }
        let kind = match t.kind() {
            Some(k) => k.name().to_string(),
            None => format!("kind {}", kinds::info_kind(t.info())),
        };
        if t.name_off() == 0 {
            kind
        } else {
            format!("{kind} {}", self.quoted(t.name_off()))
        }
    }

    pub(super) fn desc_id(&self, id: u32) -> String {
        match self.ty(id) {
            Some(t) => format!("[{id}] {}", self.desc(t)),
            None => format!("[{id}] <nonexistent>"),
        }
    }

    pub(super) fn member_desc(&self, m: Member, i: u32) -> String {
        format!("member #{i} {}", self.quoted(m.name_off))
    }

    /// libbpf's `determine_ptr_size`: the size of `long`, else 8.
    pub(super) fn guess_ptr_size(&self) -> u32 {
        const LONGS: [&[u8]; 5] = [
            b"long int",
            b"long unsigned int",
            b"long",
            b"unsigned long",
            b"unsigned long int",
        ];
        for id in 1..self.type_cnt {
            let Some(t) = self.ty(id) else { break };
            if t.is(Kind::Int)
                && matches!(t.st(), 4 | 8)
                && self
                    .name_bytes(t.name_off())
                    .is_some_and(|n| LONGS.contains(&n))
            {
                return t.st();
            }
        }
        8
    }
}
