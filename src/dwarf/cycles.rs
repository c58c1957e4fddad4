//! Type cycles that no C type can form: a chain of typedefs, qualifiers, pointers, type tags,
//! arrays and function types that comes back to where it started without passing through a
//! struct or union. Only hostile or corrupt DWARF has one (a `DW_AT_type` pointing back up the
//! chain); encoded, it would be BTF every kernel rejects, and walks along such a chain (type
//! sizes, prototype comparison) would never end. Struct and union members are not followed:
//! a cycle through a composite (`struct list { struct list *next; }`) is ordinary C.

use super::types::{CuTypes, Entry};

/// The index of an entry of `types` that lies on such a cycle, if there is one.
pub fn find_type_cycle(types: &CuTypes<'_>) -> Option<usize> {
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
            let Some(next) = chain_edge(types, entry, *edge) else {
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
