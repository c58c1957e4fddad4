//! What a verification says and for which kernels: the [`Target`] asked about, the
//! [`Verdict`], and its text for `dwarf2btf verify`.

use super::problem::Problem;
use super::target::{HeaderRules, KernelVersion, FULL_RULES_SINCE, TAG_KFLAG_KERNEL};

/// The kernels to judge for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// As the file's own header asks: 6.1's rules for a header shorter than 32 bytes, the
    /// layout-aware rules of 7.1 and later for a 32-byte one.
    OwnHeader,
    /// This kernel release (`--kernel-version`).
    Kernel(KernelVersion),
}

/// What `verify` found, and for which kernels.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// The kernels asked about.
    pub target: Target,
    /// The header rules applied.
    pub rules: HeaderRules,
    /// Why those kernels would reject the BTF; empty when they accept it.
    pub problems: Vec<Problem>,
    /// Judged on its own header by the layout-aware rules: the header problems kernels before
    /// 7.1 have with it (empty when they take the header too).
    pub before_layout: Vec<Problem>,
    /// Judged on its own header: what kernels before 6.15 have against its TYPE_TAGs and
    /// DECL_TAGs with kind_flag 1 (one entry naming the first and how many; empty when it has
    /// none).
    pub before_tag_kflag: Vec<Problem>,
    /// A release before 6.1 that lacks nothing the file uses: verify has no other checks of
    /// it, so no verdict.
    pub undecided: bool,
}

impl Verdict {
    /// A verdict with no problem found yet.
    pub(super) fn empty(target: Target, rules: HeaderRules) -> Self {
        Verdict {
            target,
            rules,
            problems: Vec::new(),
            before_layout: Vec::new(),
            before_tag_kflag: Vec::new(),
            undecided: false,
        }
    }

    /// Whether the kernels asked about accept the BTF (false when there is no verdict).
    pub fn valid(&self) -> bool {
        self.problems.is_empty() && !self.undecided
    }

    /// The lines `dwarf2btf verify` prints for the file `name`: "valid BTF" (saying for which
    /// kernels when not for all of them), or one line per problem; then why kernels before
    /// 7.1 reject what the layout-aware rules accept, and kernels before 6.15 its attribute
    /// tags.
    pub fn report(&self, name: &str) -> String {
        let mut out = String::new();
        let kernels = match self.target {
            Target::Kernel(v) => Some(format!("Linux {v}")),
            Target::OwnHeader if !self.before_layout.is_empty() => Some(self.rules.kernels()),
            Target::OwnHeader if !self.before_tag_kflag.is_empty() => {
                Some(format!("Linux {TAG_KFLAG_KERNEL} and later"))
            }
            Target::OwnHeader => None,
        };
        if let (true, Target::Kernel(v)) = (self.undecided, self.target) {
            out.push_str(&format!(
                "{name}: no verdict for Linux {v}: it uses no kind or flag that {v} lacks, but \
                 verify has the other checks only from {FULL_RULES_SINCE} on\n"
            ));
        }
        if self.valid() {
            let whom = kernels.map(|k| format!(" for {k}")).unwrap_or_default();
            out.push_str(&format!("{name}: valid BTF{whom}\n"));
        }
        for p in &self.problems {
            out.push_str(&format!("{name}: {p}\n"));
        }
        if !self.valid() && self.target == Target::OwnHeader && self.rules == HeaderRules::Layout {
            out.push_str(&format!(
                "{name}: judged by the rules of {} (its header is 32 bytes long)\n",
                self.rules.kernels()
            ));
        }
        for p in &self.before_layout {
            out.push_str(&format!(
                "{name}: {} reject it: {p}\n",
                HeaderRules::Classic.kernels()
            ));
        }
        for p in &self.before_tag_kflag {
            out.push_str(&format!(
                "{name}: kernels before {TAG_KFLAG_KERNEL} reject it: {p}\n"
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(rule: &'static str) -> Problem {
        Problem {
            type_id: None,
            rule,
            message: "why".into(),
        }
    }

    #[test]
    fn reports_say_for_which_kernels() {
        let v = |problems: Vec<Problem>, before_layout: Vec<Problem>, target, rules| Verdict {
            target,
            rules,
            problems,
            before_layout,
            before_tag_kflag: Vec::new(),
            undecided: false,
        };
        let own = Target::OwnHeader;
        let classic = v(vec![], vec![], own, HeaderRules::Classic);
        assert_eq!(classic.report("f"), "f: valid BTF\n");
        let layout = v(
            vec![],
            vec![problem("H2-hdr-extra")],
            own,
            HeaderRules::Layout,
        );
        assert_eq!(
            layout.report("f"),
            "f: valid BTF for Linux 7.1 and later\n\
             f: kernels before 7.1 reject it: header H2-hdr-extra: why\n"
        );
        let bad = v(
            vec![problem("H4-sections")],
            vec![],
            own,
            HeaderRules::Layout,
        );
        assert_eq!(
            bad.report("f"),
            "f: header H4-sections: why\n\
             f: judged by the rules of Linux 7.1 and later (its header is 32 bytes long)\n"
        );
        let for_618 = Target::Kernel("6.18".parse().unwrap());
        let old = v(
            vec![problem("H2-hdr-extra")],
            vec![],
            for_618,
            HeaderRules::Classic,
        );
        assert_eq!(old.report("f"), "f: header H2-hdr-extra: why\n");
        let ok = v(vec![], vec![], for_618, HeaderRules::Classic);
        assert_eq!(ok.report("f"), "f: valid BTF for Linux 6.18\n");
        let tags = Verdict {
            before_tag_kflag: vec![Problem {
                type_id: Some(12),
                ..problem("M6-kflag")
            }],
            ..v(vec![], vec![], own, HeaderRules::Classic)
        };
        assert_eq!(
            tags.report("f"),
            "f: valid BTF for Linux 6.15 and later\n\
             f: kernels before 6.15 reject it: [12] M6-kflag: why\n"
        );
    }
}
