//! One function's fate in the final pass: pahole's six skip reasons ([`SkipReason`]) and the
//! [`Decision`] read from the summary of all its instances. Both the final pass (`-V` lines,
//! what it emits) and a watcher ([`super::watch::FuncWatch`], `dwarf2btf why`) are shown the
//! same decision, so the explanation and the output cannot disagree.

use super::fold::FuncSummary;
use super::signature::Mismatch;
use crate::config::Features;
use crate::functions::instance::{flags, FuncInstance};
use crate::input::symbols::{ElfFunction, ElfFunctionSym};

/// pahole's reasons not to encode a function, in the order the final pass checks them; when
/// several apply, the last one is the one logged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SkipReason {
    /// Some instance has a parameter outside the register the ABI puts it in.
    UnexpectedReg,
    /// Two instances' prototypes differ (with `consistent_func`).
    InconsistentProto,
    /// Some instance passes a packed struct past the register parameters.
    UncertainParmLoc,
    /// Some instance's parameters are in another order than its abstract origin's.
    ReorderedParm,
    /// The canonical instance changed its ABI and lost a parameter.
    OptimizedParms,
    /// The function's ELF symbols have more than one address.
    AmbiguousAddr,
}

impl SkipReason {
    /// Every reason, in the order they are checked.
    pub const ALL: [SkipReason; 6] = [
        SkipReason::UnexpectedReg,
        SkipReason::InconsistentProto,
        SkipReason::UncertainParmLoc,
        SkipReason::ReorderedParm,
        SkipReason::OptimizedParms,
        SkipReason::AmbiguousAddr,
    ];

    /// pahole's words for it in the `-V` line (its spelling included).
    pub fn text(self) -> &'static str {
        match self {
            SkipReason::UnexpectedReg => "unexpected register usage for parameter",
            SkipReason::InconsistentProto => "inconsistet prototype",
            SkipReason::UncertainParmLoc => "uncertain parameter location",
            SkipReason::ReorderedParm => "reordered parameters",
            SkipReason::OptimizedParms => "optimized parameters",
            SkipReason::AmbiguousAddr => "ambiguous address",
        }
    }

    /// The reason in prose: [`SkipReason::text`] with pahole's "inconsistet" spelled right,
    /// for `why`'s own sentences (its `-V` lines keep pahole's words).
    pub fn describe(self) -> &'static str {
        match self {
            SkipReason::InconsistentProto => "inconsistent prototype",
            other => other.text(),
        }
    }

    fn bit(self) -> u8 {
        1 << self as u8
    }
}

/// The final pass's decision on one ELF function, read from the summary of all its instances.
pub struct Decision<'d, 'e> {
    /// The ELF function.
    pub elf: &'d ElfFunction<'e>,
    /// The summary of all its instances.
    pub summary: &'d FuncSummary,
    /// The instance a FUNC is encoded from.
    pub canonical: &'d FuncInstance,
    /// With `true_signature`: the symbol whose name the FUNC takes instead of the function's
    /// (a clone's, `foo.isra.0`), `canonical` being the clone's instance. No skip reason
    /// applies then.
    pub true_signature: Option<ElfFunctionSym<'e>>,
    /// The first instance whose prototype does not match the first instance's, when the pass
    /// compares it.
    pub inconsistent: Option<&'d FuncInstance>,
    /// [`SkipReason::bit`]s of the reasons that apply.
    reasons: u8,
}

impl<'d, 'e> Decision<'d, 'e> {
    /// pahole 1.32's `btf_encoder__add_saved_funcs` rules for one function.
    pub fn new(elf: &'d ElfFunction<'e>, summary: &'d FuncSummary, features: &Features) -> Self {
        let inconsistent = summary.inconsistent(features.true_signature);
        let true_signature = features
            .true_signature
            .then(|| summary.true_signature())
            .flatten()
            .and_then(|i| Some((i, elf.dot_symbol_at(i.head.addr)?)));
        if let Some((canonical, sym)) = true_signature {
            return Decision {
                elf,
                summary,
                canonical,
                true_signature: Some(sym),
                inconsistent,
                reasons: 0,
            };
        }
        let flags = summary.flags();
        let canonical = summary.canonical(features.true_signature);
        let applies = [
            flags & flags::UNEXPECTED_REG != 0,
            features.consistent_func && inconsistent.is_some(),
            flags & flags::UNCERTAIN_PARM_LOC != 0,
            flags & flags::REORDERED_PARM != 0,
            canonical.optimized_skip(features.true_signature),
            elf.ambiguous_addr,
        ];
        let reasons = SkipReason::ALL
            .iter()
            .zip(applies)
            .filter(|(_, on)| *on)
            .fold(0, |acc, (r, _)| acc | r.bit());
        Decision {
            elf,
            summary,
            canonical,
            true_signature: None,
            inconsistent,
            reasons,
        }
    }

    /// With `true_signature`, the first instance whose prototype does not match the first
    /// instance's but which the pass does not compare, having no address where the first has
    /// one.
    pub fn uncompared(&self) -> Option<&'d FuncInstance> {
        if self.inconsistent.is_some() {
            return None;
        }
        self.summary
            .inconsistent(false)
            .filter(|m| m.head.addr == 0 && self.summary.first().head.addr != 0)
    }

    /// Every reason that applies, in check order.
    pub fn reasons(&self) -> impl Iterator<Item = SkipReason> + '_ {
        SkipReason::ALL
            .into_iter()
            .filter(|r| self.reasons & r.bit() != 0)
    }

    /// Why the function is not encoded (the last reason that applies); `None`: it is encoded.
    pub fn skip(&self) -> Option<SkipReason> {
        self.reasons().last()
    }

    /// How the first instance's prototype differs from [`Self::inconsistent`]'s, as pahole's
    /// `funcs__match` reports it.
    pub fn mismatch(&self) -> Option<String> {
        let (a, b) = (self.summary.first(), self.inconsistent?);
        Some(match a.signature().mismatch(&b.signature())? {
            Mismatch::ParamCount => format!(
                "param count mismatch; {} params != {} params",
                a.param_count(),
                b.param_count()
            ),
            Mismatch::Return => "return type mismatch".into(),
            Mismatch::Param(i) => format!(
                "param type mismatch for param#{} {} != {}",
                i + 1,
                String::from_utf8_lossy(a.param_name(i)),
                String::from_utf8_lossy(b.param_name(i))
            ),
        })
    }

    /// pahole's `-V` lines for the function: the prototype difference, if any (even when
    /// `consistent_func` is off), then the reason it is skipped, if it is.
    pub fn log_lines(&self) -> Vec<String> {
        let line = |what: &str| {
            format!(
                "{} : skipping BTF encoding of function due to {what}",
                self.elf.name
            )
        };
        let mismatch = self.mismatch().map(|m| line(&m));
        let skip = self.skip().map(|r| line(r.text()));
        mismatch.into_iter().chain(skip).collect()
    }
}
