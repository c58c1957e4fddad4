//! `dwarf2btf diff`: the canonical items of two BTFs compared as multisets (or sets), and the
//! report, with per-kind and per-category counts and the first differing items.

use std::fmt;

use rustc_hash::FxHashMap;

use super::category::Category;
use super::items::item_counts;
use super::render::Canon;
use super::sink::floor_char_boundary;
use crate::btf::kinds::Kind;
use crate::btf::Btf;

/// What [`diff`] compares and how much it keeps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiffOptions {
    /// Compare as sets (ignore how many times an item occurs) instead of multisets.
    pub set: bool,
    /// The categories of items compared; the others are counted but never rendered.
    pub categories: Vec<Category>,
    /// How many differences the report keeps (in sorted order).
    pub max_shown: usize,
    /// Compare at the C-declaration level: a forward declaration is the type it declares
    /// (see [`Canon`]); needed to compare BTF before deduplication with BTF after it.
    pub fold_fwd: bool,
}

impl Default for DiffOptions {
    /// Multiset comparison of every category, 20 differences shown.
    fn default() -> Self {
        DiffOptions {
            set: false,
            categories: Category::ALL.to_vec(),
            max_shown: 20,
            fold_fwd: false,
        }
    }
}

/// One canonical item whose number of occurrences differs between the two inputs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Difference {
    /// The category of the item.
    pub category: Category,
    /// The canonical item text.
    pub item: String,
    /// Occurrences in the first input (0 or 1 in set mode).
    pub count_a: usize,
    /// Occurrences in the second input (0 or 1 in set mode).
    pub count_b: usize,
}

/// The result of [`diff`]; its `Display` is the `dwarf2btf diff` report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiffReport {
    /// Whether the compared items are equal (as sets or multisets).
    pub equal: bool,
    /// Whether items were compared as sets.
    pub set: bool,
    /// The categories compared.
    pub categories: Vec<Category>,
    /// What the inputs are called in the report (`A`, `B` by default; the CLI puts file names).
    pub labels: [String; 2],
    /// Per-kind type counts of each input, indexed by kind number (as [`Btf::kind_counts`];
    /// index 0 counts records of an unknown kind).
    pub kind_counts: [[usize; 20]; 2],
    /// Top-level items per category of each input, indexed by `Category as usize` (every
    /// category is counted, compared or not).
    pub item_counts: [[usize; Category::ALL.len()]; 2],
    /// Number of distinct items whose counts differ.
    pub distinct_differences: usize,
    /// The same, per category (indexed by `Category as usize`).
    pub differing_per_category: [usize; Category::ALL.len()],
    /// Occurrences in the first input not matched in the second (sum of `count_a - count_b`).
    pub only_in_a: usize,
    /// Occurrences in the second input not matched in the first.
    pub only_in_b: usize,
    /// The first `max_shown` differences, sorted by category then item text (so that the two
    /// versions of a changed type come next to each other).
    pub differences: Vec<Difference>,
}

/// Compares the canonical items of `a` and `b` in the categories of `opts`.
pub fn diff(a: &Btf, b: &Btf, opts: &DiffOptions) -> DiffReport {
    struct Counts {
        cat: Category,
        a: usize,
        b: usize,
    }
    let mut map: FxHashMap<String, Counts> = FxHashMap::default();
    let canon = |btf| {
        let mut c = Canon::new(btf);
        c.fold_fwd = opts.fold_fwd;
        c
    };
    for (cat, item) in canon(a).into_items(&opts.categories) {
        map.entry(item).or_insert(Counts { cat, a: 0, b: 0 }).a += 1;
    }
    for (cat, item) in canon(b).into_items(&opts.categories) {
        if let Some(c) = map.get_mut(item.as_str()) {
            c.b += 1;
        } else {
            map.insert(item, Counts { cat, a: 0, b: 1 });
        }
    }
    let mut diffs: Vec<Difference> = Vec::new();
    let (mut only_a, mut only_b) = (0, 0);
    for (item, c) in map {
        let (ca, cb) = if opts.set {
            (c.a.min(1), c.b.min(1))
        } else {
            (c.a, c.b)
        };
        if ca == cb {
            continue;
        }
        only_a += ca.saturating_sub(cb);
        only_b += cb.saturating_sub(ca);
        diffs.push(Difference {
            category: c.cat,
            item,
            count_a: ca,
            count_b: cb,
        });
    }
    let distinct = diffs.len();
    let mut per_cat = [0; Category::ALL.len()];
    for d in &diffs {
        per_cat[d.category.index()] += 1;
    }
    diffs.sort_unstable_by(|x, y| {
        (x.category, &x.item, x.count_a).cmp(&(y.category, &y.item, y.count_a))
    });
    diffs.truncate(opts.max_shown);
    let mut categories = opts.categories.clone();
    categories.sort();
    categories.dedup();
    DiffReport {
        equal: distinct == 0,
        set: opts.set,
        categories,
        labels: ["A".into(), "B".into()],
        kind_counts: [a.kind_counts(), b.kind_counts()],
        item_counts: [item_counts(a), item_counts(b)],
        distinct_differences: distinct,
        differing_per_category: per_cat,
        only_in_a: only_a,
        only_in_b: only_b,
        differences: diffs,
    }
}

/// Longest item text printed by the plain `Display` (`{:#}` prints everything).
const SHOWN_ITEM_CHARS: usize = 300;

fn shorten(s: &str, full: bool) -> std::borrow::Cow<'_, str> {
    if full || s.len() <= SHOWN_ITEM_CHARS {
        return s.into();
    }
    let cut = floor_char_boundary(s, SHOWN_ITEM_CHARS);
    format!("{}... ({} bytes)", &s[..cut], s.len()).into()
}

/// Where two texts first differ, with a little context of each, if they share their head
/// (kind and name), i.e. look like two versions of the same item.
fn first_difference(a: &str, b: &str) -> Option<(usize, String, String)> {
    let common = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
    let head = |s: &str| s.match_indices(' ').nth(1).map_or(s.len(), |(i, _)| i);
    if common < head(a).min(head(b)) {
        return None;
    }
    let at = floor_char_boundary(a, common).min(floor_char_boundary(b, common));
    let ctx = |s: &str| {
        let from = floor_char_boundary(s, at.saturating_sub(40));
        let to = floor_char_boundary(s, at + 60);
        format!(
            "{}{}{}",
            if from > 0 { "..." } else { "" },
            &s[from..to],
            if to < s.len() { "..." } else { "" }
        )
    };
    Some((at, ctx(a), ctx(b)))
}

impl fmt::Display for DiffReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let full = f.alternate();
        let [la, lb] = &self.labels;
        let w = la.len().max(lb.len()).max(8);
        writeln!(f, "{:<12} {:>w$} {:>w$}", "kind", la, lb)?;
        let mut totals = [0usize; 2];
        let rows = std::iter::once((0, "UNKNOWN")).chain(Kind::ALL.map(|k| (k as usize, k.name())));
        for (i, name) in rows {
            let (ca, cb) = (self.kind_counts[0][i], self.kind_counts[1][i]);
            totals[0] += ca;
            totals[1] += cb;
            if ca == 0 && cb == 0 {
                continue;
            }
            let mark = if ca != cb { "  *" } else { "" };
            writeln!(f, "{name:<12} {ca:>w$} {cb:>w$}{mark}")?;
        }
        let mark = if totals[0] != totals[1] { "  *" } else { "" };
        writeln!(
            f,
            "{:<12} {:>w$} {:>w$}{mark}",
            "total", totals[0], totals[1]
        )?;
        writeln!(f)?;
        writeln!(f, "{:<12} {:>w$} {:>w$}", "items", la, lb)?;
        for c in Category::ALL {
            let (ca, cb) = (
                self.item_counts[0][c.index()],
                self.item_counts[1][c.index()],
            );
            let note = if self.categories.contains(&c) {
                if ca != cb {
                    "  *"
                } else {
                    ""
                }
            } else {
                "  (not compared)"
            };
            writeln!(f, "{:<12} {ca:>w$} {cb:>w$}{note}", c.name())?;
        }
        writeln!(f)?;
        let names: Vec<&str> = self.categories.iter().map(|c| c.name()).collect();
        writeln!(
            f,
            "compared {} as {}",
            if names.is_empty() {
                "nothing".to_string()
            } else {
                names.join(", ")
            },
            if self.set { "sets" } else { "multisets" }
        )?;
        if !self.equal {
            let per_cat: Vec<String> = Category::ALL
                .iter()
                .filter(|c| self.differing_per_category[c.index()] > 0)
                .map(|c| format!("{} {}", c.name(), self.differing_per_category[c.index()]))
                .collect();
            writeln!(
                f,
                "{} differing items ({}); occurrences only in {la}: {}, only in {lb}: {}",
                self.distinct_differences,
                per_cat.join(", "),
                self.only_in_a,
                self.only_in_b
            )?;
            // An item only in A next to one only in B that shares its head (kind and name) is
            // most likely one changed type: point at where the two texts part.
            let mut prev: Option<&Difference> = None;
            for d in &self.differences {
                let sign = if d.count_a > d.count_b { '-' } else { '+' };
                let counts = if d.count_a.max(d.count_b) > 1 || d.count_a.min(d.count_b) > 0 {
                    format!("({la} {}, {lb} {}) ", d.count_a, d.count_b)
                } else {
                    String::new()
                };
                writeln!(
                    f,
                    "{sign} [{}] {counts}{}",
                    d.category.name(),
                    shorten(&d.item, full)
                )?;
                let a_side = |x: &Difference| x.count_a > x.count_b;
                let pair = prev
                    .filter(|p| p.category == d.category && a_side(p) != a_side(d))
                    .map(|p| if a_side(p) { (p, d) } else { (d, p) })
                    .and_then(|(x, y)| first_difference(&x.item, &y.item));
                prev = Some(d);
                if let Some((at, ca, cb)) = pair {
                    writeln!(f, "    first difference at byte {at}:")?;
                    writeln!(f, "      {la}: {ca}")?;
                    writeln!(f, "      {lb}: {cb}")?;
                    prev = None;
                }
            }
            let hidden = self
                .distinct_differences
                .saturating_sub(self.differences.len());
            if hidden > 0 {
                writeln!(
                    f,
                    "... and {hidden} more differing items (--all shows them)"
                )?;
            }
        }
        writeln!(f, "{}", if self.equal { "equal" } else { "different" })
    }
}
