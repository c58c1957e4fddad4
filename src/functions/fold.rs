//! Folding a function's instances into a summary ([`FuncSummary`]) that holds exactly what the
//! final pass decides from, so an encoder can merge its own instances as it saves them and the
//! final pass merges one summary per owner instead of every instance.
//!
//! # Why folding cannot change a decision
//!
//! The final pass (`final_pass.rs`, pahole's `btf_encoder__add_saved_funcs`) walks a
//! function's instances in walk order ([`WalkPosition`]: those with an address first, then
//! the others, each in DWARF order) and reads:
//! 1. the first instance `g` (its prototype is the reference, its flags are ORed with all);
//! 2. whether some instance's prototype does not match `g` before any instance so far carries
//!    a blocking flag (unexpected register, reordered parameters), and the first such
//!    instance, whose difference `-V` prints (with `true_signature`, pahole 1.32 compares an
//!    instance without an address only when `g` has none either);
//! 3. the OR of the unexpected-register / uncertain-location / reordered flags;
//! 4. the first instance at one of the function's ELF addresses that is not skipped for
//!    optimized parameters, else the first at such an address (the canonical instance);
//! 5. with `true_signature`, the first instance at a `.`-suffixed symbol's address that
//!    carries no unexpected-register / uncertain-location flag, `g` carrying those of every
//!    instance and any other instance those of the instances from `g` to it.
//!
//! A summary of a set of instances keeps its first instance, its first instance that does not
//! match that first one, the earliest blocking and untrusted flags' positions, the OR of the
//! flags, the first instances of 4 and the first two of 5 (when the first of them is `g` and
//! is not trusted, the walk goes on to the second). Two summaries merge into the summary of
//! the union:
//! - the first is the earlier of the two firsts, `f`;
//! - prototype matching is an equivalence (`signature.rs` shows it is equality of a normal
//!   form), so in a set whose own first matches `f`, the first instance not matching `f` is
//!   its first instance not matching its own first; in a set whose first does not match `f`,
//!   it is that first instance itself. The earlier of the two sides' answers is the union's;
//! - positions are minima, flags an OR, and the first two instances of 5 the first two of
//!   the four the sides keep.
//!
//! Merging is associative and commutative, and a summary of one instance is that instance, so
//! any grouping (per owner as saved, all at the end, any owner order) gives the summary of all
//! instances, from which 1–5 read exactly what the walk over every instance reads.

use super::table::Fold;
use crate::functions::instance::{flags, FuncInstance, WalkPosition};

/// Flags whose instance stops the prototype comparison from then on.
const BLOCKING: u8 = flags::UNEXPECTED_REG | flags::REORDERED_PARM;
/// Flags ORed over all instances into the first.
pub const COMBINED: u8 = flags::UNEXPECTED_REG | flags::UNCERTAIN_PARM_LOC | flags::REORDERED_PARM;
/// Flags that, on an instance or any before it, keep a true signature from being encoded.
const UNTRUSTED: u8 = flags::UNEXPECTED_REG | flags::UNCERTAIN_PARM_LOC;

/// What the final pass needs of a set of instances of one function; see the module docs.
#[derive(Clone, Debug)]
pub struct FuncSummary {
    /// The instances some role below points at, each once.
    kept: Vec<FuncInstance>,
    first: Role,
    /// The first instance whose prototype does not match the first's.
    mismatch: Option<Role>,
    /// The first instance at an address of one of the function's ELF symbols.
    at_symbol: Option<Role>,
    /// The first such instance not skipped for optimized parameters (without true_signature).
    at_symbol_unskipped: Option<Role>,
    /// The first instance at the address of a `.`-suffixed symbol ([`flags::DOT_SYMBOL`]).
    at_dot_symbol: Option<Role>,
    /// The second such instance: the candidate when the first is the first instance and
    /// that one is not trusted.
    at_dot_symbol2: Option<Role>,
    /// Walk position of the first instance with an [`UNTRUSTED`] flag.
    untrusted_at: Option<WalkPosition>,
    /// Walk position of the first instance with a [`BLOCKING`] flag.
    blocking_at: Option<WalkPosition>,
    /// OR of every instance's [`COMBINED`] flags.
    combined: u8,
    /// How many instances were folded in.
    count: u32,
}

/// An index into [`FuncSummary::kept`].
type Role = u8;

impl FuncSummary {
    /// The summary of one instance.
    pub fn of(instance: FuncInstance) -> Self {
        let at_symbol = instance.has(flags::AT_SYMBOL).then_some(0);
        FuncSummary {
            first: 0,
            mismatch: None,
            at_symbol,
            at_symbol_unskipped: at_symbol.filter(|_| !instance.optimized_skip(false)),
            at_dot_symbol: instance.has(flags::DOT_SYMBOL).then_some(0),
            at_dot_symbol2: None,
            untrusted_at: (instance.head.flags & UNTRUSTED != 0)
                .then_some(instance.head.walk_position()),
            blocking_at: (instance.head.flags & BLOCKING != 0)
                .then_some(instance.head.walk_position()),
            combined: instance.head.flags & COMBINED,
            count: 1,
            kept: vec![instance],
        }
    }

    /// The summary of both sets of instances.
    pub fn merge(self, other: FuncSummary) -> FuncSummary {
        let sides = [&self, &other];
        let earlier = |a: Option<Pick>, b: Option<Pick>| match (a, b) {
            (Some(a), Some(b)) => Some(
                if sides[b.0].at(b.1).head.walk_position() < sides[a.0].at(a.1).head.walk_position()
                {
                    b
                } else {
                    a
                },
            ),
            (a, b) => a.or(b),
        };
        let first = earlier(Some((0, self.first)), Some((1, other.first))).expect("both exist");
        let f = sides[first.0].at(first.1);
        let mismatch_of = |side: usize| {
            let s = sides[side];
            if s.at(s.first).signature().matches(&f.signature()) {
                s.mismatch.map(|r| (side, r))
            } else {
                Some((side, s.first))
            }
        };
        let mismatch = earlier(mismatch_of(0), mismatch_of(1));
        let pick = |role: fn(&FuncSummary) -> Option<Role>| {
            earlier(role(&self).map(|r| (0, r)), role(&other).map(|r| (1, r)))
        };
        let at_symbol = pick(|s| s.at_symbol);
        let at_symbol_unskipped = pick(|s| s.at_symbol_unskipped);
        let (at_dot_symbol, at_dot_symbol2) = {
            let pos = |p: &Pick| sides[p.0].at(p.1).head.walk_position();
            let mut dots: Vec<Pick> = [
                self.at_dot_symbol.map(|r| (0, r)),
                self.at_dot_symbol2.map(|r| (0, r)),
                other.at_dot_symbol.map(|r| (1, r)),
                other.at_dot_symbol2.map(|r| (1, r)),
            ]
            .into_iter()
            .flatten()
            .collect();
            dots.sort_by_key(pos);
            (dots.first().copied(), dots.get(1).copied())
        };
        let earliest = |a: Option<WalkPosition>, b: Option<WalkPosition>| match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let mut kept = Keeper::new(self.kept, other.kept);
        FuncSummary {
            first: kept.keep(first),
            mismatch: mismatch.map(|p| kept.keep(p)),
            at_symbol: at_symbol.map(|p| kept.keep(p)),
            at_symbol_unskipped: at_symbol_unskipped.map(|p| kept.keep(p)),
            at_dot_symbol: at_dot_symbol.map(|p| kept.keep(p)),
            at_dot_symbol2: at_dot_symbol2.map(|p| kept.keep(p)),
            blocking_at: earliest(self.blocking_at, other.blocking_at),
            untrusted_at: earliest(self.untrusted_at, other.untrusted_at),
            combined: self.combined | other.combined,
            count: self.count + other.count,
            kept: kept.into_kept(),
        }
    }

    fn at(&self, role: Role) -> &FuncInstance {
        &self.kept[role as usize]
    }

    /// The first instance in walk order.
    pub fn first(&self) -> &FuncInstance {
        self.at(self.first)
    }

    /// The first instance whose prototype does not match [`Self::first`]'s, if it comes before
    /// any blocking flag (so the final pass compares it), else `None`. With `true_signature`
    /// and a first instance with an address, instances without one are not compared: pahole
    /// 1.32 reports no prototype difference with them there (the walk puts them last, so the
    /// first mismatch among the instances with an address is the first mismatch, if it has
    /// one).
    pub fn inconsistent(&self, true_signature: bool) -> Option<&FuncInstance> {
        let m = self.at(self.mismatch?);
        if true_signature && self.first().head.addr != 0 && m.head.addr == 0 {
            return None;
        }
        match self.blocking_at {
            Some(b) if b <= m.head.walk_position() => None,
            _ => Some(m),
        }
    }

    /// The first instance's flags with every instance's [`COMBINED`] flags ORed in.
    pub fn flags(&self) -> u8 {
        self.first().head.flags | self.combined
    }

    /// The canonical instance: the first at an ELF address that is not skipped for optimized
    /// parameters, else the first at an ELF address, else the first.
    pub fn canonical(&self, true_signature: bool) -> &FuncInstance {
        let unskipped = if true_signature {
            self.at_symbol
        } else {
            self.at_symbol_unskipped
        };
        self.at(unskipped.or(self.at_symbol).unwrap_or(self.first))
    }

    /// `btf_encoder__add_true_signature`: the first instance at a `.`-suffixed symbol's
    /// address, unless it or an instance before it has an [`UNTRUSTED`] flag, or it is the
    /// first instance and any instance has one (`saved_functions_combine` ORs the flags of
    /// the instances from the first to each into it, and those of all into the first).
    /// pahole's own per-instance `ambiguous_addr` is never set, so an ambiguous address does
    /// not stop it.
    pub fn true_signature(&self) -> Option<&FuncInstance> {
        let mut role = self.at_dot_symbol?;
        if role == self.first && self.untrusted_at.is_some() {
            // The first instance ends up with every instance's flags ORed in: the walk goes
            // on to the next one.
            role = self.at_dot_symbol2?;
        }
        let candidate = self.at(role);
        match self.untrusted_at {
            Some(u) if u <= candidate.head.walk_position() => None,
            _ => Some(candidate),
        }
    }

    /// How many instances were folded in.
    pub fn count(&self) -> u32 {
        self.count
    }

    /// How many instances the summary holds.
    pub fn held(&self) -> usize {
        self.kept.len()
    }

    /// The bytes the summary's instances take, on the heap and in the summary.
    pub fn heap_bytes(&self) -> usize {
        self.kept.capacity() * std::mem::size_of::<FuncInstance>()
            + self
                .kept
                .iter()
                .map(FuncInstance::heap_bytes)
                .sum::<usize>()
    }

    /// The held instances, mutably (the final pass translates their type ids).
    pub fn instances_mut(&mut self) -> impl Iterator<Item = &mut FuncInstance> {
        self.kept.iter_mut()
    }
}

/// A role's instance in one of the two summaries being merged: (side, role).
type Pick = (usize, Role);

/// Moves the picked instances out of the two merged summaries, each once.
struct Keeper {
    sides: [Vec<Option<FuncInstance>>; 2],
    /// Where each already kept instance went, by (side, old role).
    placed: Vec<(Pick, Role)>,
    out: Vec<FuncInstance>,
}

impl Keeper {
    fn new(a: Vec<FuncInstance>, b: Vec<FuncInstance>) -> Self {
        let wrap = |v: Vec<FuncInstance>| v.into_iter().map(Some).collect();
        Keeper {
            sides: [wrap(a), wrap(b)],
            placed: Vec::new(),
            out: Vec::new(),
        }
    }

    /// The kept instances, with no spare room: summaries live until the final pass.
    fn into_kept(mut self) -> Vec<FuncInstance> {
        self.out.shrink_to_fit();
        self.out
    }

    fn keep(&mut self, pick: Pick) -> Role {
        if let Some(&(_, role)) = self.placed.iter().find(|(p, _)| *p == pick) {
            return role;
        }
        let instance = self.sides[pick.0][pick.1 as usize]
            .take()
            .expect("an instance is moved once");
        let role = self.out.len() as Role;
        self.out.push(instance);
        self.placed.push((pick, role));
        role
    }
}

impl Fold for FuncSummary {
    type Instance = FuncInstance;

    fn new(first: FuncInstance) -> Self {
        FuncSummary::of(first)
    }

    fn add(&mut self, instance: FuncInstance) {
        let this = std::mem::replace(self, FuncSummary::placeholder());
        *self = this.merge(FuncSummary::of(instance));
    }

    fn heap_bytes(&self) -> usize {
        FuncSummary::heap_bytes(self)
    }

    fn instance_heap_bytes(instance: &FuncInstance) -> usize {
        instance.heap_bytes()
    }
}

impl FuncSummary {
    /// An empty value to move out of `&mut self` (never read).
    fn placeholder() -> Self {
        FuncSummary {
            kept: Vec::new(),
            first: 0,
            mismatch: None,
            at_symbol: None,
            at_symbol_unskipped: None,
            at_dot_symbol: None,
            at_dot_symbol2: None,
            blocking_at: None,
            untrusted_at: None,
            combined: 0,
            count: 0,
        }
    }
}

#[cfg(test)]
mod tests;
