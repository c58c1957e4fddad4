//! Which kernels a verdict is for: a kernel release (`verify --kernel-version 7.2`), the header
//! rules that release applies, and the choice of rules for a file judged on its own header.
//!
//! Two rule sets exist. Kernels before 7.1 know the classic 24-byte `struct btf_header`: a
//! longer header is taken only when its bytes past 24 are zero, the type and string sections
//! must tile the data and the strings come last (6.1's `btf_parse_hdr`, `btf_check_sec_info`,
//! `btf_parse_str_sec`). From 7.1 on (the BTF layout series, merged with `bpf-next-7.1`) the
//! kernel knows the 32-byte header with `layout_off` and `layout_len`: the kind layout section,
//! when `layout_len` is non-zero, is a third section in the tiling, and the strings need not
//! come last once the header is 32 bytes long (7.2's kernel/bpf/btf.c, same functions).
//!
//! The type rules ([`TypeRules`]) are 6.1's but for what later releases relaxed and a file
//! meant for them uses: from 6.15 on a TYPE_TAG or DECL_TAG may have kind_flag 1, which marks
//! an arbitrary `__attribute__` (pahole's `attributes` feature writes such type tags for the
//! `address_space(1)` pointers of the BPF arena kfuncs).

use std::fmt;
use std::str::FromStr;

/// A kernel release, `MAJOR.MINOR`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct KernelVersion {
    /// The major number (7 in 7.2).
    pub major: u32,
    /// The minor number (2 in 7.2).
    pub minor: u32,
}

/// The first release with BTF: "bpf: btf: Introduce BPF Type Format (BTF)", 69b693f0aefa.
pub const BTF_KERNEL: KernelVersion = KernelVersion {
    major: 4,
    minor: 18,
};

/// The oldest release whose checks verify ports in full (6.1's `kernel/bpf/btf.c`); of older
/// ones it knows only which kinds and flags they lack (`releases.rs`).
pub const FULL_RULES_SINCE: KernelVersion = KernelVersion { major: 6, minor: 1 };

/// What verify can say of a release.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Judgement {
    /// Every check of the release is known (6.1 and later).
    Full,
    /// Only which kinds and flags it lacks: a missing one is a certain no, else no verdict.
    FeaturesOnly,
    /// The release has no BTF.
    NoBtf,
}

impl Judgement {
    /// How far verify can judge for `version`.
    pub fn of(version: KernelVersion) -> Self {
        if version < BTF_KERNEL {
            Judgement::NoBtf
        } else if version < FULL_RULES_SINCE {
            Judgement::FeaturesOnly
        } else {
            Judgement::Full
        }
    }
}

/// The first release whose `kernel/bpf/btf.c` reads the 32-byte header and the kind layout
/// section: the layout series (lore 20260326145444.2076244-*) was merged for 7.1 ("Introduce
/// BTF layout to ease addition of new BTF kinds", in the `bpf-next-7.1` pull).
pub const LAYOUT_KERNEL: KernelVersion = KernelVersion { major: 7, minor: 1 };

/// The first release whose `btf_ref_type_check_meta` takes a TYPE_TAG with kind_flag 1 and whose
/// `btf_decl_tag_check_meta` no longer checks kind_flag ("bpf: Allow kind_flag for BTF type and
/// decl tags", 53ee0d66d7a6, in the "Main BPF changes for 6.15" pull, tag `bpf-next-6.15`;
/// 6.12's btf.c still rejects both, 7.2's takes both).
pub const TAG_KFLAG_KERNEL: KernelVersion = KernelVersion {
    major: 6,
    minor: 15,
};

impl fmt::Display for KernelVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

impl FromStr for KernelVersion {
    type Err = String;

    /// `MAJOR.MINOR`, optionally followed by more of a release after a `.` or `-` (`6.18.44`,
    /// `6.1.0-57-cloud-amd64`, as `uname -r` prints it).
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("'{s}' is not a kernel version (expected MAJOR.MINOR, e.g. 6.18)");
        let (major, rest) = s.split_once('.').ok_or_else(bad)?;
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let (minor, tail) = rest.split_at(digits);
        if !(tail.is_empty() || tail.starts_with(['.', '-'])) {
            return Err(bad());
        }
        Ok(KernelVersion {
            major: major.parse().map_err(|_| bad())?,
            minor: minor.parse().map_err(|_| bad())?,
        })
    }
}

/// The header and section rules a kernel applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeaderRules {
    /// Before 7.1: the 24-byte header, type and string sections, strings last.
    Classic,
    /// 7.1 and later: the 32-byte header and the kind layout section.
    Layout,
}

impl HeaderRules {
    /// The rules `version` applies.
    pub fn of(version: KernelVersion) -> Self {
        if version >= LAYOUT_KERNEL {
            HeaderRules::Layout
        } else {
            HeaderRules::Classic
        }
    }

    /// The rules for a file judged on its own header: the layout-aware ones when its `hdr_len`
    /// (`None` when it cannot be read) covers the layout fields.
    pub fn for_hdr_len(hdr_len: Option<u32>) -> Self {
        match hdr_len {
            Some(len) if len as usize >= LAYOUT_HDR_LEN => HeaderRules::Layout,
            _ => HeaderRules::Classic,
        }
    }

    /// `sizeof(struct btf_header)` in these kernels: header bytes past it must be zero.
    pub fn known_hdr_len(self) -> usize {
        match self {
            HeaderRules::Classic => CLASSIC_HDR_LEN,
            HeaderRules::Layout => LAYOUT_HDR_LEN,
        }
    }

    /// Whether these kernels read `layout_off` and `layout_len` from a header of `hdr_len`
    /// bytes (`hdr->hdr_len >= sizeof(struct btf_header)` in 7.1's `btf_check_sec_info`).
    pub fn reads_layout(self, hdr_len: usize) -> bool {
        self == HeaderRules::Layout && hdr_len >= LAYOUT_HDR_LEN
    }

    /// Which kernels these rules are those of, for messages.
    pub fn kernels(self) -> String {
        match self {
            HeaderRules::Classic => format!("kernels before {LAYOUT_KERNEL}"),
            HeaderRules::Layout => format!("Linux {LAYOUT_KERNEL} and later"),
        }
    }
}

/// The type (meta) rules of a kernel release where they differ from 6.1's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TypeRules {
    /// TYPE_TAG and DECL_TAG may have kind_flag 1 (from [`TAG_KFLAG_KERNEL`] on).
    pub tag_kflag: bool,
    /// A release before 6.1, whose checks are not ported: the types are checked only for the
    /// kinds and flags it lacks (`releases.rs`).
    pub features_only: Option<KernelVersion>,
}

impl TypeRules {
    /// Every relaxation known: the rules for a file judged on its own header, beside which
    /// the older kernels' objections are named.
    pub const NEWEST: TypeRules = TypeRules {
        tag_kflag: true,
        features_only: None,
    };

    /// The rules `version` applies.
    pub fn of(version: KernelVersion) -> Self {
        TypeRules {
            tag_kflag: version >= TAG_KFLAG_KERNEL,
            features_only: (Judgement::of(version) != Judgement::Full).then_some(version),
        }
    }
}

/// Length of the classic header (6.1's `struct btf_header`).
pub(super) const CLASSIC_HDR_LEN: usize = 24;
/// Length of the header with `layout_off` and `layout_len` (7.1's `struct btf_header`).
pub(super) const LAYOUT_HDR_LEN: usize = 32;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_from_the_option_and_from_uname() {
        let v = |major, minor| Ok(KernelVersion { major, minor });
        assert_eq!("7.2".parse(), v(7, 2));
        assert_eq!("6.18.44-fc-v669".parse(), v(6, 18));
        assert_eq!("6.1.0-57-cloud-amd64".parse(), v(6, 1));
        assert_eq!("7.1-rc3".parse(), v(7, 1));
        for bad in ["7", "7.", ".2", "x.2", "7.2x", "7.-1", ""] {
            assert!(bad.parse::<KernelVersion>().is_err(), "{bad:?} parsed");
        }
        assert_eq!(LAYOUT_KERNEL.to_string(), "7.1");
    }

    #[test]
    fn layout_rules_from_7_1_on() {
        let rules = |s: &str| HeaderRules::of(s.parse().unwrap());
        assert_eq!(rules("6.1"), HeaderRules::Classic);
        assert_eq!(rules("6.18"), HeaderRules::Classic);
        assert_eq!(rules("7.0"), HeaderRules::Classic);
        assert_eq!(rules("7.1"), HeaderRules::Layout);
        assert_eq!(rules("8.0"), HeaderRules::Layout);
        assert_eq!(HeaderRules::for_hdr_len(Some(24)), HeaderRules::Classic);
        assert_eq!(HeaderRules::for_hdr_len(Some(28)), HeaderRules::Classic);
        assert_eq!(HeaderRules::for_hdr_len(Some(32)), HeaderRules::Layout);
        assert_eq!(HeaderRules::for_hdr_len(None), HeaderRules::Classic);
        assert!(!HeaderRules::Layout.reads_layout(28));
        assert!(!HeaderRules::Classic.reads_layout(32));
    }

    #[test]
    fn tag_kflag_from_6_15_on() {
        let tags = |s: &str| TypeRules::of(s.parse().unwrap()).tag_kflag;
        assert!(!tags("6.1"));
        assert!(!tags("6.14"));
        assert!(tags("6.15"));
        assert!(tags("7.2"));
        assert_eq!(TypeRules::of("7.2".parse().unwrap()), TypeRules::NEWEST);
        let old = "5.4".parse().unwrap();
        assert_eq!(TypeRules::of(old).features_only, Some(old));
    }

    #[test]
    fn judgements_by_release() {
        let j = |s: &str| Judgement::of(s.parse().unwrap());
        assert_eq!(j("2.6"), Judgement::NoBtf);
        assert_eq!(j("4.17"), Judgement::NoBtf);
        assert_eq!(j("4.18"), Judgement::FeaturesOnly);
        assert_eq!(j("5.4"), Judgement::FeaturesOnly);
        assert_eq!(j("6.0"), Judgement::FeaturesOnly);
        assert_eq!(j("6.1"), Judgement::Full);
        assert_eq!(j("7.3"), Judgement::Full);
    }
}
