//! Which release brought each BTF kind and flag into `kernel/bpf/btf.c`, with the commit that
//! did: the table `verify --kernel-version` judges releases before 6.1 by.
//!
//! verify ports 6.1's checks in full, and what later releases changed (`target.rs`). Of the
//! releases before 6.1 it knows only this table, so for them it answers only what the table
//! can prove: a file that uses a kind or flag the release lacks is rejected (the release's
//! `btf_check_meta` or the kind's `check_meta` refuses it: an unknown kind, a kind_flag or
//! vlen it does not allow), naming the first type that uses it; a file that uses none gets
//! no verdict (`Judgement::FeaturesOnly` in `target.rs`): the other checks of those releases were not
//! ported. Before 4.18 there is no BTF at all.

use super::problem::Problem;
use super::record::T;
use super::target::{KernelVersion, BTF_KERNEL, LAYOUT_KERNEL, TAG_KFLAG_KERNEL};
use crate::btf::kinds::Kind;

/// A kind, flag or header form that some releases do not know.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Feature {
    /// BTF itself (`BPF_BTF_LOAD`, vmlinux BTF came later but reads the same format).
    Btf,
    /// The FUNC and FUNC_PROTO kinds.
    FuncKinds,
    /// kind_flag 1 on STRUCT and UNION (bitfield offsets) and on FWD (a union forward).
    AggregateKindFlag,
    /// The VAR and DATASEC kinds.
    VarDatasec,
    /// A FUNC's linkage in its vlen (1: global; before, vlen had to be 0).
    FuncLinkage,
    /// The FLOAT kind.
    Float,
    /// The DECL_TAG kind (merged as TAG, renamed in the same release).
    DeclTag,
    /// The TYPE_TAG kind.
    TypeTag,
    /// The ENUM64 kind, and kind_flag 1 on ENUM (signed values), from the same commit.
    Enum64,
    /// kind_flag 1 on TYPE_TAG and DECL_TAG (an arbitrary attribute).
    TagKindFlag,
    /// The 32-byte header with the kind layout section.
    LayoutHeader,
}

/// When a [`Feature`] came, and with which commit.
#[derive(Clone, Copy, Debug)]
pub struct Introduced {
    /// What came.
    pub feature: Feature,
    /// The first release that has it.
    pub since: KernelVersion,
    /// The commit (or series) that taught `kernel/bpf/btf.c` to accept it.
    pub commit: &'static str,
    /// What it is, for messages.
    pub what: &'static str,
}

const fn v(major: u32, minor: u32) -> KernelVersion {
    KernelVersion { major, minor }
}

/// Every feature, in the order the releases brought them.
pub const INTRODUCED: [Introduced; 11] = [
    Introduced {
        feature: Feature::Btf,
        since: BTF_KERNEL,
        commit: "69b693f0aefa (\"bpf: btf: Introduce BPF Type Format (BTF)\")",
        what: "BTF",
    },
    Introduced {
        feature: Feature::FuncKinds,
        since: v(5, 0),
        commit: "2667a2626f4d (\"bpf: btf: Add BTF_KIND_FUNC and BTF_KIND_FUNC_PROTO\")",
        what: "the kinds FUNC and FUNC_PROTO",
    },
    Introduced {
        feature: Feature::AggregateKindFlag,
        since: v(5, 0),
        commit: "9d5f9f701b18 (\"bpf: btf: fix struct/union/fwd types with kind_flag\")",
        what: "kind_flag 1 on STRUCT, UNION and FWD",
    },
    Introduced {
        feature: Feature::VarDatasec,
        since: v(5, 2),
        commit: "1dc92851849c (\"bpf: kernel side support for BTF Var and DataSec\")",
        what: "the kinds VAR and DATASEC",
    },
    Introduced {
        feature: Feature::FuncLinkage,
        since: v(5, 6),
        commit: "51c39bb1d5d1 (\"bpf: Introduce function-by-function verification\")",
        what: "a FUNC's linkage in vlen (global functions)",
    },
    Introduced {
        feature: Feature::Float,
        since: v(5, 13),
        commit: "b1828f0b0482 (\"bpf: Add BTF_KIND_FLOAT support\")",
        what: "the kind FLOAT",
    },
    Introduced {
        feature: Feature::DeclTag,
        since: v(5, 16),
        commit: "b5ea834dde6b (\"bpf: Support for new btf kind BTF_KIND_TAG\")",
        what: "the kind DECL_TAG",
    },
    Introduced {
        feature: Feature::TypeTag,
        since: v(5, 17),
        commit: "8c42d2fa4eea (\"bpf: Support BTF_KIND_TYPE_TAG for btf_type_tag attributes\")",
        what: "the kind TYPE_TAG",
    },
    Introduced {
        feature: Feature::Enum64,
        since: v(6, 0),
        commit: "6089fb325cf7 (\"bpf: Add btf enum64 support\")",
        what: "the kind ENUM64 and kind_flag 1 on ENUM (signed values)",
    },
    Introduced {
        feature: Feature::TagKindFlag,
        since: TAG_KFLAG_KERNEL,
        commit: "53ee0d66d7a6 (\"bpf: Allow kind_flag for BTF type and decl tags\")",
        what: "kind_flag 1 on TYPE_TAG and DECL_TAG",
    },
    Introduced {
        feature: Feature::LayoutHeader,
        since: LAYOUT_KERNEL,
        commit: "the BTF layout series (lore 20260326145444.2076244-*, merged with bpf-next-7.1)",
        what: "the 32-byte header and the kind layout section",
    },
];

/// The table's entry for `feature`.
pub fn introduced(feature: Feature) -> &'static Introduced {
    INTRODUCED
        .iter()
        .find(|i| i.feature == feature)
        .expect("every feature is in the table")
}

/// The features the record `t` uses that a release may lack (at most two: a kind and a flag
/// that came later; header forms are the header checks' business).
pub(super) fn features_of(t: T<'_>) -> [Option<Feature>; 2] {
    let Some(kind) = t.kind() else {
        return [None, None];
    };
    let flagged = t.kflag();
    let flag = |f: Feature| flagged.then_some(f);
    match kind {
        Kind::Func => [
            Some(Feature::FuncKinds),
            (t.vlen() != 0).then_some(Feature::FuncLinkage),
        ],
        Kind::FuncProto => [Some(Feature::FuncKinds), None],
        Kind::Var | Kind::Datasec => [Some(Feature::VarDatasec), None],
        Kind::Float => [Some(Feature::Float), None],
        Kind::DeclTag => [Some(Feature::DeclTag), flag(Feature::TagKindFlag)],
        Kind::TypeTag => [Some(Feature::TypeTag), flag(Feature::TagKindFlag)],
        Kind::Enum64 => [Some(Feature::Enum64), None],
        Kind::Enum => [flag(Feature::Enum64), None],
        Kind::Struct | Kind::Union | Kind::Fwd => [flag(Feature::AggregateKindFlag), None],
        _ => [None, None],
    }
}

/// The first use of each feature a release lacks, and how many records use it.
#[derive(Default)]
pub(super) struct Missing {
    /// Per feature lacking (in [`INTRODUCED`] order): the first record's id and description,
    /// and the count.
    uses: Vec<(Feature, u32, String, u32)>,
}

impl Missing {
    /// Notes that record `id` (described as `desc`) uses `feature`, which the release lacks.
    pub(super) fn note(&mut self, feature: Feature, id: u32, desc: impl FnOnce() -> String) {
        match self.uses.iter_mut().find(|u| u.0 == feature) {
            Some(u) => u.3 += 1,
            None => self.uses.push((feature, id, desc(), 1)),
        }
    }

    /// One problem per feature lacking, oldest feature first, for `version`.
    pub(super) fn problems(mut self, version: KernelVersion) -> Vec<Problem> {
        let rank = |f: Feature| INTRODUCED.iter().position(|i| i.feature == f);
        self.uses.sort_by_key(|u| rank(u.0));
        self.uses
            .into_iter()
            .map(|(feature, id, desc, count)| {
                let i = introduced(feature);
                let others = match count {
                    1 => String::new(),
                    n => format!(", as do {} more type(s)", n - 1),
                };
                Problem {
                    type_id: Some(id),
                    rule: "V1-release",
                    message: format!(
                        "{desc} uses {}{others}: Linux {version} lacks it (it came with {}, {})",
                        i.what, i.since, i.commit
                    ),
                }
            })
            .collect()
    }
}

/// The problem of a release without BTF.
pub(super) fn no_btf(version: KernelVersion) -> Problem {
    let i = introduced(Feature::Btf);
    Problem {
        type_id: None,
        rule: "V1-release",
        message: format!(
            "Linux {version} has no BTF (it came with {}, {})",
            i.since, i.commit
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_in_release_order_and_complete() {
        for pair in INTRODUCED.windows(2) {
            assert!(pair[0].since <= pair[1].since, "{pair:?}");
        }
        for (i, entry) in INTRODUCED.iter().enumerate() {
            assert!(
                INTRODUCED[i + 1..]
                    .iter()
                    .all(|e| e.feature != entry.feature),
                "{:?} twice",
                entry.feature
            );
        }
    }
}
