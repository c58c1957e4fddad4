//! Instances rebuilt from trace records, for the replay's folds: of the recorded shape (the
//! parameter count, the parameters' name bytes, the signature's size, the flags and DWARF
//! order), with the recorded prototype hash inside the signature, so instances whose
//! prototypes did not match in the recorded run do not match in the replay either, and the
//! fold meets the same mismatches.

use dwarf2btf::functions::fold::FuncSummary;
use dwarf2btf::functions::instance::{FuncInstance, InstanceHead};
use dwarf2btf::functions::table::Fold;
use dwarf2btf::functions::trace::SaveRecord;

/// A fold whose instances the replay builds from trace records.
pub trait Replayable: Fold {
    /// The instance `record` describes.
    fn instance(record: &SaveRecord) -> Self::Instance;
}

/// The trivial fold: the earliest DWARF position of an owner's instances, and their count.
pub struct Count {
    first: (u32, u32),
    count: u32,
}

impl Fold for Count {
    type Instance = (u32, u32);
    fn new(first: (u32, u32)) -> Self {
        Count { first, count: 1 }
    }
    fn add(&mut self, order: (u32, u32)) {
        self.first = self.first.min(order);
        self.count += 1;
    }
}

impl Replayable for Count {
    fn instance(record: &SaveRecord) -> (u32, u32) {
        record.order
    }
}

/// Appends `v` as unsigned LEB128 (the signature's own encoding, `functions/packing.rs`).
fn push_leb(out: &mut Vec<u8>, mut v: usize) {
    while v >= 0x80 {
        out.push((v & 0x7f) as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A signature of `params + 1` parts whose bytes are about `bytes` long: the return type's
/// part holds `proto` (and filler up to the size), each parameter's is the one-byte form
/// `0x01`. Equal `(params, bytes, proto)` give equal signatures, unequal `proto` unequal ones.
pub fn signature(params: usize, bytes: usize, proto: u64) -> Vec<u8> {
    let mut head = Vec::with_capacity(4);
    push_leb(&mut head, params + 1);
    let rest = 2 * params;
    // The return part's length: what is left after the count, its own length byte(s) and the
    // parameters' parts, at least the hash's 8 bytes.
    let mut first = bytes.saturating_sub(head.len() + 1 + rest).max(8);
    if first >= 0x80 {
        first = first.saturating_sub(1).max(0x80);
    }
    let mut out = head;
    push_leb(&mut out, first);
    out.extend_from_slice(&proto.to_le_bytes());
    out.resize(out.len() + first - 8, 0);
    for _ in 0..params {
        out.extend_from_slice(&[1, 1]);
    }
    out
}

/// `total` name bytes spread over `params` names (the first ones one longer).
pub fn name_lengths(params: usize, total: usize) -> Vec<usize> {
    (0..params)
        .map(|i| total / params + usize::from(i < total % params))
        .collect()
}

impl Replayable for FuncSummary {
    fn instance(record: &SaveRecord) -> FuncInstance {
        let params = usize::from(record.params);
        let names = vec![b'p'; usize::from(record.name_bytes)];
        let mut at = 0;
        let params: Vec<(&[u8], u32)> = (1..)
            .zip(name_lengths(params, names.len()))
            .map(|(ty, len)| {
                at += len;
                (&names[at - len..at], ty)
            })
            .collect();
        let signature = signature(params.len(), usize::from(record.sig_bytes), record.proto);
        let head = InstanceHead {
            order: record.order,
            chunk: record.batch,
            addr: 0,
            ret: 0,
            flags: record.flags,
        };
        FuncInstance::new(head, &params, &[], &signature)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dwarf2btf::functions::trace::proto_hash;

    #[test]
    fn rebuilt_instances_have_the_recorded_shape() {
        let record = SaveRecord {
            params: 3,
            name_bytes: 11,
            sig_bytes: 40,
            proto: 0xfeed,
            ..SaveRecord::default()
        };
        let instance = FuncSummary::instance(&record);
        let lengths: Vec<usize> = instance.params().map(|(n, _)| n.len()).collect();
        assert_eq!(lengths, [4, 4, 3]);
        assert_eq!(instance.signature_bytes().len(), 40);
        assert_eq!(instance.signature().params(), 3);
        // The recorded size, or the smallest signature that holds the count, the hash and the
        // parameters' one-byte parts.
        for (params, bytes, len) in [(0, 0, 10), (0, 300, 300), (5, 12, 20), (200, 2000, 2000)] {
            let s = signature(params, bytes, 1);
            let read = dwarf2btf::functions::signature::Signature::new(&s);
            assert_eq!(read.params(), params);
            assert_eq!(s.len(), len, "{params} parameters, {bytes} bytes");
        }
    }

    #[test]
    fn unequal_prototypes_meet_in_the_fold() {
        let record = |proto, order| SaveRecord {
            params: 2,
            name_bytes: 6,
            sig_bytes: 30,
            proto,
            order,
            ..SaveRecord::default()
        };
        let a = FuncSummary::instance(&record(proto_hash(b"a"), (0, 1)));
        let b = FuncSummary::instance(&record(proto_hash(b"a"), (0, 2)));
        let c = FuncSummary::instance(&record(proto_hash(b"c"), (0, 3)));
        assert!(a.signature().matches(&b.signature()));
        assert!(!a.signature().matches(&c.signature()));
        let mut fold = FuncSummary::new(a);
        fold.add(b);
        assert!(fold.inconsistent(false).is_none());
        fold.add(c);
        assert!(
            fold.inconsistent(false).is_some(),
            "a mismatch the fold must see"
        );
    }
}
