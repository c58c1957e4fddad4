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
///
/// Most functions have one instance (36,000 of the reference kernel's 43,000): the summary of
/// one instance is that instance alone, its roles read from its flags when asked, so that it
/// costs no allocation beside the instance's own bytes. A summary of more keeps its roles and
/// the instances they point at in one allocation.
#[derive(Clone, Debug)]
pub struct FuncSummary(Repr);

#[derive(Clone, Debug)]
enum Repr {
    One(FuncInstance),
    Many(Box<Many>),
}

/// A summary of more than one instance.
#[derive(Clone, Debug)]
struct Many {
    roles: Roles,
    /// The instances some role points at, each once.
    kept: Box<[FuncInstance]>,
}

/// Which kept instances play which part, and what is folded over all of them.
#[derive(Clone, Copy, Debug)]
struct Roles {
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

/// An index into a summary's kept instances.
type Role = u8;

impl Roles {
    /// The roles in the summary of `instance` alone, which plays every part it qualifies for.
    fn of(instance: &FuncInstance) -> Self {
        let at_symbol = instance.has(flags::AT_SYMBOL).then_some(0);
        Roles {
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
        }
    }
}

/// One side of a merge: its roles and its kept instances.
struct Side {
    roles: Roles,
    kept: Vec<FuncInstance>,
}

impl Side {
    fn at(&self, role: Role) -> &FuncInstance {
        &self.kept[role as usize]
    }
}

impl FuncSummary {
    /// The summary of one instance.
    pub fn of(instance: FuncInstance) -> Self {
        FuncSummary(Repr::One(instance))
    }

    /// An empty value to move out of `&mut self` (never read); it allocates nothing.
    fn placeholder() -> Self {
        FuncSummary(Repr::One(FuncInstance::placeholder()))
    }

    /// The roles (a summary of one instance works them out from its flags).
    fn roles(&self) -> Roles {
        match &self.0 {
            Repr::One(instance) => Roles::of(instance),
            Repr::Many(many) => many.roles,
        }
    }

    /// The kept instances.
    fn kept(&self) -> &[FuncInstance] {
        match &self.0 {
            Repr::One(instance) => std::slice::from_ref(instance),
            Repr::Many(many) => &many.kept,
        }
    }

    fn into_side(self) -> Side {
        match self.0 {
            Repr::One(instance) => Side {
                roles: Roles::of(&instance),
                kept: vec![instance],
            },
            Repr::Many(many) => Side {
                roles: many.roles,
                kept: many.kept.into_vec(),
            },
        }
    }

    /// The summary of both sets of instances.
    pub fn merge(self, other: FuncSummary) -> FuncSummary {
        let sides = [self.into_side(), other.into_side()];
        let picks = Picks::of(&sides);
        let [a, b] = sides;
        let mut kept = Keeper::new(a.kept, b.kept);
        let roles = Roles::merged(&picks, &a.roles, &b.roles, &mut kept);
        FuncSummary(Repr::Many(Box::new(Many {
            roles,
            kept: kept.into_kept(),
        })))
    }

    fn at(&self, role: Role) -> &FuncInstance {
        &self.kept()[role as usize]
    }

    /// The first instance in walk order.
    pub fn first(&self) -> &FuncInstance {
        self.at(self.roles().first)
    }

    /// The first instance whose prototype does not match [`Self::first`]'s, if it comes before
    /// any blocking flag (so the final pass compares it), else `None`. With `true_signature`
    /// and a first instance with an address, instances without one are not compared: pahole
    /// 1.32 reports no prototype difference with them there (the walk puts them last, so the
    /// first mismatch among the instances with an address is the first mismatch, if it has
    /// one).
    pub fn inconsistent(&self, true_signature: bool) -> Option<&FuncInstance> {
        let roles = self.roles();
        let m = self.at(roles.mismatch?);
        if true_signature && self.first().head.addr != 0 && m.head.addr == 0 {
            return None;
        }
        match roles.blocking_at {
            Some(b) if b <= m.head.walk_position() => None,
            _ => Some(m),
        }
    }

    /// The first instance's flags with every instance's [`COMBINED`] flags ORed in.
    pub fn flags(&self) -> u8 {
        self.first().head.flags | self.roles().combined
    }

    /// The canonical instance: the first at an ELF address that is not skipped for optimized
    /// parameters, else the first at an ELF address, else the first.
    pub fn canonical(&self, true_signature: bool) -> &FuncInstance {
        let roles = self.roles();
        let unskipped = if true_signature {
            roles.at_symbol
        } else {
            roles.at_symbol_unskipped
        };
        self.at(unskipped.or(roles.at_symbol).unwrap_or(roles.first))
    }

    /// `btf_encoder__add_true_signature`: the first instance at a `.`-suffixed symbol's
    /// address, unless it or an instance before it has an [`UNTRUSTED`] flag, or it is the
    /// first instance and any instance has one (`saved_functions_combine` ORs the flags of
    /// the instances from the first to each into it, and those of all into the first).
    /// pahole's own per-instance `ambiguous_addr` is never set, so an ambiguous address does
    /// not stop it.
    pub fn true_signature(&self) -> Option<&FuncInstance> {
        let roles = self.roles();
        let mut role = roles.at_dot_symbol?;
        if role == roles.first && roles.untrusted_at.is_some() {
            // The first instance ends up with every instance's flags ORed in: the walk goes
            // on to the next one.
            role = roles.at_dot_symbol2?;
        }
        let candidate = self.at(role);
        match roles.untrusted_at {
            Some(u) if u <= candidate.head.walk_position() => None,
            _ => Some(candidate),
        }
    }

    /// How many instances were folded in.
    pub fn count(&self) -> u32 {
        self.roles().count
    }

    /// How many instances the summary holds.
    pub fn held(&self) -> usize {
        self.kept().len()
    }

    /// The bytes the summary's instances and roles take on the heap.
    pub fn heap_bytes(&self) -> usize {
        let beside = match &self.0 {
            Repr::One(_) => 0,
            Repr::Many(many) => {
                std::mem::size_of::<Many>() + many.kept.len() * std::mem::size_of::<FuncInstance>()
            }
        };
        beside
            + self
                .kept()
                .iter()
                .map(FuncInstance::heap_bytes)
                .sum::<usize>()
    }

    /// The held instances, mutably (the final pass translates their type ids).
    pub fn instances_mut(&mut self) -> impl Iterator<Item = &mut FuncInstance> {
        match &mut self.0 {
            Repr::One(instance) => std::slice::from_mut(instance).iter_mut(),
            Repr::Many(many) => many.kept.iter_mut(),
        }
    }
}

/// A role's instance in one of the two summaries being merged: (side, role).
type Pick = (usize, Role);

/// The instances that play the union's parts, each in the side that holds it.
struct Picks {
    first: Pick,
    mismatch: Option<Pick>,
    at_symbol: Option<Pick>,
    at_symbol_unskipped: Option<Pick>,
    at_dot_symbol: Option<Pick>,
    at_dot_symbol2: Option<Pick>,
}

impl Picks {
    /// Each part of the union as the module docs derive it: the earlier of the two sides'
    /// players in walk order, the mismatch against the union's first, and the first two of
    /// the four `.`-suffixed symbol instances the sides keep.
    fn of(sides: &[Side; 2]) -> Self {
        let (a, b) = (&sides[0].roles, &sides[1].roles);
        let pick = |role: fn(&Roles) -> Option<Role>| {
            earlier(sides, role(a).map(|r| (0, r)), role(b).map(|r| (1, r)))
        };
        let first = earlier(sides, Some((0, a.first)), Some((1, b.first))).expect("both exist");
        let (at_dot_symbol, at_dot_symbol2) = first_two_dot_symbols(sides);
        Picks {
            first,
            mismatch: first_mismatch(sides, first),
            at_symbol: pick(|r| r.at_symbol),
            at_symbol_unskipped: pick(|r| r.at_symbol_unskipped),
            at_dot_symbol,
            at_dot_symbol2,
        }
    }
}

/// Where the picked instance comes in walk order.
fn walk_position(sides: &[Side; 2], pick: Pick) -> WalkPosition {
    sides[pick.0].at(pick.1).head.walk_position()
}

/// Of two picks, the one whose instance comes first in walk order (the first on a tie).
fn earlier(sides: &[Side; 2], x: Option<Pick>, y: Option<Pick>) -> Option<Pick> {
    match (x, y) {
        (Some(x), Some(y)) if walk_position(sides, y) < walk_position(sides, x) => Some(y),
        (x, y) => x.or(y),
    }
}

/// The union's first instance whose prototype does not match `first`'s: in a side whose own
/// first matches, that side's own mismatch; in a side whose first does not, that first.
fn first_mismatch(sides: &[Side; 2], first: Pick) -> Option<Pick> {
    let reference = sides[first.0].at(first.1).signature();
    let of = |side: usize| {
        let s = &sides[side];
        if s.at(s.roles.first).signature().matches(&reference) {
            s.roles.mismatch.map(|r| (side, r))
        } else {
            Some((side, s.roles.first))
        }
    };
    earlier(sides, of(0), of(1))
}

/// The first two, in walk order, of the `.`-suffixed symbol instances the two sides keep.
fn first_two_dot_symbols(sides: &[Side; 2]) -> (Option<Pick>, Option<Pick>) {
    let (a, b) = (&sides[0].roles, &sides[1].roles);
    let mut dots: Vec<Pick> = [
        a.at_dot_symbol.map(|r| (0, r)),
        a.at_dot_symbol2.map(|r| (0, r)),
        b.at_dot_symbol.map(|r| (1, r)),
        b.at_dot_symbol2.map(|r| (1, r)),
    ]
    .into_iter()
    .flatten()
    .collect();
    dots.sort_by_key(|&p| walk_position(sides, p));
    (dots.first().copied(), dots.get(1).copied())
}

impl Roles {
    /// The union's roles: the picked instances moved into `kept` (in the order of the
    /// fields), the positions the earlier of the two sides', the flags and counts summed up.
    fn merged(picks: &Picks, a: &Roles, b: &Roles, kept: &mut Keeper) -> Roles {
        let earliest = |x: Option<WalkPosition>, y| x.into_iter().chain(y).min();
        Roles {
            first: kept.keep(picks.first),
            mismatch: picks.mismatch.map(|p| kept.keep(p)),
            at_symbol: picks.at_symbol.map(|p| kept.keep(p)),
            at_symbol_unskipped: picks.at_symbol_unskipped.map(|p| kept.keep(p)),
            at_dot_symbol: picks.at_dot_symbol.map(|p| kept.keep(p)),
            at_dot_symbol2: picks.at_dot_symbol2.map(|p| kept.keep(p)),
            blocking_at: earliest(a.blocking_at, b.blocking_at),
            untrusted_at: earliest(a.untrusted_at, b.untrusted_at),
            combined: a.combined | b.combined,
            count: a.count + b.count,
        }
    }
}

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
    fn into_kept(self) -> Box<[FuncInstance]> {
        self.out.into_boxed_slice()
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

#[cfg(test)]
mod tests;
