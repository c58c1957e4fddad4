//! Concatenation of worker chunks into the run's BTF, in chunk (= DWARF) order.
//!
//! This is libbpf's `btf__add_btf`: records are copied, every string is re-added to the
//! destination (so the string section stays in first-insertion order, exactly as if one
//! encoder had encoded every CU in order), and type ids are shifted by the destination's type
//! count. The array index placeholder becomes the real index type.

use crate::btf::store::Store;
use crate::btf::types::for_each_str_off_mut;
use crate::btf::{kinds, Btf, INDEX_PLACEHOLDER};
use crate::error::{ConcatError, Result};

/// What the concatenation keeps from one chunk to the next: the array index type once a
/// chunk has established it, and its buffers, which it reuses.
#[derive(Default)]
pub struct Concat {
    index_type: Option<u32>,
    /// Per byte of the chunk's strings: the string's offset in the destination, at string
    /// starts.
    string_map: Vec<u32>,
    /// The record being translated.
    words: Vec<u32>,
}

impl Concat {
    /// Appends every type of `chunk` to `dst`, the records into `store` (held by `dst`, see
    /// [`Btf::hold_in_store`]) and the strings into `dst`; returns the id offset added to the
    /// chunk's ids.
    ///
    /// `chunk_index` is the chunk's own index type (local id) when the index type arrays use
    /// is established inside it.
    pub fn append(
        &mut self,
        dst: &mut Btf,
        store: &mut Store,
        chunk: &Btf,
        chunk_index: Option<u32>,
    ) -> Result<u32> {
        let offset = dst.type_cnt() - 1;
        if let Some(local) = chunk_index {
            self.index_type = Some(local + offset);
        }
        map_strings(dst, chunk, &mut self.string_map);
        let (strmap, words, index_type) = (&self.string_map, &mut self.words, self.index_type);
        for t in chunk.own_types() {
            let kind = t.kind().ok_or(ConcatError::UnknownKind {
                id: t.id,
                kind: kinds::info_kind(t.info()),
            })?;
            words.clear();
            words.extend_from_slice(t.words);
            for_each_str_off_mut(kind, words, |off| *off = strmap[*off as usize]);
            let mut missing_index = false;
            let id = store.push_in_place(words, |id| match id {
                0 => 0,
                INDEX_PLACEHOLDER => index_type.unwrap_or_else(|| {
                    missing_index = true;
                    0
                }),
                local => local + offset,
            })?;
            if missing_index {
                return Err(ConcatError::ArrayBeforeIndexType.into());
            }
            dst.hold_in_store(1)?;
            debug_assert_eq!(id + 1, dst.type_cnt());
        }
        Ok(offset)
    }
}

/// Adds the chunk's strings to `dst` in the chunk's order; fills `map` with local → global
/// offsets (indexed by local offset; only string starts are meaningful).
fn map_strings(dst: &mut Btf, chunk: &Btf, map: &mut Vec<u32>) {
    let bytes = chunk.strings().as_bytes();
    map.clear();
    map.resize(bytes.len() + 1, 0);
    let mut start = 0usize;
    for end in memchr::memchr_iter(0, bytes) {
        map[start] = if end == start {
            0
        } else {
            dst.add_str(&bytes[start..end])
        };
        start = end + 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::btf::Kind;
    use crate::error::Error;

    #[test]
    fn concatenation_shifts_ids_and_reuses_strings() {
        let mut a = Btf::new();
        let int = a.add_int(b"int", 4, kinds::INT_SIGNED).unwrap();
        a.add_ref(Kind::Ptr, None, int).unwrap();
        let mut b = Btf::new();
        let c = b.add_int(b"char", 1, 0).unwrap();
        let i2 = b.add_int(b"int", 4, kinds::INT_SIGNED).unwrap();
        b.add_array(INDEX_PLACEHOLDER, c, 4).unwrap();
        b.add_ref(Kind::Ptr, None, i2).unwrap();
        let (mut dst, mut store) = (Btf::new(), Store::new());
        let mut concat = Concat::default();
        let to = &mut store;
        assert_eq!(concat.append(&mut dst, to, &a, Some(int)).unwrap(), 0);
        assert_eq!(concat.append(&mut dst, to, &b, None).unwrap(), 2);
        assert_eq!(dst.type_cnt(), 7);
        dst.take_back_held(&store);
        let arr = dst.type_by_id(5).unwrap().array();
        assert_eq!((arr.elem, arr.index), (3, 1));
        assert_eq!(dst.type_by_id(6).unwrap().size_or_type(), 4);
        assert_eq!(dst.strings().as_bytes(), b"\0int\0char\0");
    }

    #[test]
    fn array_before_index_is_an_error() {
        let mut b = Btf::new();
        let c = b.add_int(b"char", 1, 0).unwrap();
        b.add_array(INDEX_PLACEHOLDER, c, 4).unwrap();
        let (mut dst, mut store) = (Btf::new(), Store::new());
        let append = Concat::default().append(&mut dst, &mut store, &b, None);
        assert!(matches!(
            append,
            Err(Error::Concat(ConcatError::ArrayBeforeIndexType))
        ));
    }
}
