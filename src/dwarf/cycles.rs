//! Type cycles that no C type can form. Only hostile or corrupt DWARF has one (a `DW_AT_type`
//! pointing back up a chain); encoded, it would be BTF every kernel rejects, and walks along
//! such a chain (type sizes, prototype comparison) would never end.
//!
//! - [`find_type_cycle`]: a chain of typedefs, qualifiers, pointers, type tags, arrays and
//!   function types that comes back to where it started without passing through a struct or
//!   union. Members are not followed: a cycle through a composite
//!   (`struct list { struct list *next; }`) is ordinary C.
//! - [`find_containment_cycle`]: a struct or union that contains itself by value, through its
//!   members, typedefs, qualifiers, type tags and arrays (not pointers or function types):
//!   its size would be infinite.

use super::types::{CuTypes, Entry};
use crate::btf::Kind;

/// A type of `types` that no C type can be and BTF forbids, with why: the index of its entry.
pub fn impossible_type(types: &CuTypes<'_>) -> Option<(usize, &'static str)> {
    if let Some(entry) = find_type_cycle(types) {
        return Some((
            entry,
            "this type refers back to itself through typedefs, qualifiers, pointers, arrays or \
             function types alone (no struct or union breaks the cycle): no C type can, and BTF \
             forbids it",
        ));
    }
    find_containment_cycle(types).map(|entry| {
        (
            entry,
            "this type contains itself by value (through members, typedefs, qualifiers or \
             arrays, with no pointer between): its size would be infinite, and BTF forbids it",
        )
    })
}

/// The index of an entry of `types` on a cycle of typedefs, qualifiers, pointers, type tags,
/// arrays and function types alone, if there is one.
fn find_type_cycle(types: &CuTypes<'_>) -> Option<usize> {
    find_cycle(types, chain_edge)
}

/// The index of an entry of `types` that contains itself by value, if there is one.
fn find_containment_cycle(types: &CuTypes<'_>) -> Option<usize> {
    find_cycle(types, containment_edge)
}

/// The index of an entry on a cycle of the graph whose edges `edge_of` gives (the `edge`-th
/// type id that entry `index` refers to, or `None` past the last), if there is one. Generic
/// over the edge function so that it inlines into the walk: every CU runs both walks.
fn find_cycle<E>(types: &CuTypes<'_>, edge_of: E) -> Option<usize>
where
    E: Fn(&CuTypes<'_>, usize, usize) -> Option<u32>,
{
    const NEW: u8 = 0;
    const ON_PATH: u8 = 1;
    const DONE: u8 = 2;
    let mut state = vec![NEW; types.entries.len()];
    // Depth-first, with an explicit stack of (entry, next edge to follow).
    let mut stack: Vec<(usize, usize)> = Vec::new();
    for start in 0..types.entries.len() {
        if state[start] != NEW {
            continue;
        }
        state[start] = ON_PATH;
        stack.push((start, 0));
        while let Some(&mut (entry, ref mut edge)) = stack.last_mut() {
            let Some(next) = edge_of(types, entry, *edge) else {
                state[entry] = DONE;
                stack.pop();
                continue;
            };
            *edge += 1;
            // Ids are 1-based; 0 is void, and ids past the table are not types of this CU.
            let Some(target) = (next as usize).checked_sub(1) else {
                continue;
            };
            match state.get(target) {
                Some(&NEW) => {
                    state[target] = ON_PATH;
                    stack.push((target, 0));
                }
                Some(&ON_PATH) => return Some(target),
                _ => {}
            }
        }
    }
    None
}

/// The `edge`-th type id that entry `index` refers to along a chain, or `None` past the last.
fn chain_edge(types: &CuTypes<'_>, index: usize, edge: usize) -> Option<u32> {
    match &types.entries[index] {
        Entry::Modifier { ty, .. } | Entry::Typedef { ty, .. } | Entry::TypeTag { ty, .. } => {
            (edge == 0).then_some(*ty)
        }
        Entry::Array { elem, .. } => (edge == 0).then_some(*elem),
        Entry::FuncProto { ret, params, .. } => match edge {
            0 => Some(*ret),
            n => {
                let param = params.start as usize + n - 1;
                (param < params.end as usize).then(|| types.params[param].1)
            }
        },
        _ => None,
    }
}

/// The `edge`-th type id that entry `index` holds by value: a composite's members (static
/// members, which take no room, lead to void), the type a typedef, non-pointer qualifier or
/// type tag names, an array's element.
fn containment_edge(types: &CuTypes<'_>, index: usize, edge: usize) -> Option<u32> {
    match &types.entries[index] {
        Entry::Composite { members, .. } => {
            let member = types.members.get(members.start as usize + edge)?;
            (members.start as usize + edge < members.end as usize).then_some(
                if member.bit_offset == u32::MAX {
                    0
                } else {
                    member.ty
                },
            )
        }
        Entry::Modifier {
            kind: Kind::Ptr, ..
        }
        | Entry::FuncProto { .. } => None,
        Entry::Modifier { ty, .. } | Entry::Typedef { ty, .. } | Entry::TypeTag { ty, .. } => {
            (edge == 0).then_some(*ty)
        }
        Entry::Array { elem, .. } => (edge == 0).then_some(*elem),
        _ => None,
    }
}
