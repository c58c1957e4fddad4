//! Sizes of the candidate encodings for the compact pre-dedup store (docs/memory.md): encodes
//! the reference vmlinux without dedup, as the dedup receives it, and counts the bytes each
//! encoding of its records would take. Nothing is timed here: it decides which encodings are
//! worth porting the struct phase to.
//!
//!   cargo bench --bench store_encodings
//!   DWARF2BTF_VMLINUX=/path/to/vmlinux cargo bench --bench store_encodings
//!
//! The encodings, each of every own record, in id order:
//! * raw: the BTF words as they are (today's store);
//! * varint: every word as LEB128, a type id as the zigzag of its distance to the record's
//!   own id (a CU's types reference their neighbours);
//! * interned + varint: the record with its type ids zeroed (its id-free part: name, info,
//!   size, member names and offsets, enum values) interned once, each record an LEB128 part
//!   number followed by its ids as above;
//! * interned + fixed: a u32 part number and an i16 per id (an id further than ±32,767 escapes
//!   to 2 + 4 bytes).
//!
//! Variable-length records need a 4-byte offset per id to be addressed; that index is counted
//! apart.

#[path = "common/kernel_input.rs"]
mod kernel_input;

use std::collections::HashMap;

use dwarf2btf::btf::{read, types::for_each_type_id_mut, Kind};

/// Bytes of `v` as LEB128.
fn leb_len(v: u64) -> u64 {
    u64::from(64 - (v | 1).leading_zeros()).div_ceil(7)
}

/// Zigzag of the distance from `own` to `id`.
fn zigzag(own: u32, id: u32) -> u64 {
    let d = i64::from(id) - i64::from(own);
    ((d << 1) ^ (d >> 63)) as u64
}

#[derive(Default)]
struct Sizes {
    raw: u64,
    varint: u64,
    interned_refs: u64,
    fixed_refs: u64,
    parts: HashMap<Vec<u32>, u32>,
    part_words: u64,
    part_varint: u64,
    by_kind: HashMap<&'static str, (u64, u64, u64)>,
}

impl Sizes {
    fn add(&mut self, id: u32, words: &[u32]) {
        let kind = Kind::from_u32((words[1] >> 24) & 0x1f).expect("a known kind");
        let mut part = words.to_vec();
        let mut ids = Vec::new();
        for_each_type_id_mut(&mut part, |w| {
            ids.push(*w);
            *w = 0;
        });
        let raw = 4 * words.len() as u64;
        let id_bytes: u64 = ids.iter().map(|&t| leb_len(zigzag(id, t))).sum();
        let plain: u64 =
            part.iter().map(|&w| leb_len(u64::from(w))).sum::<u64>() - ids.len() as u64; // the zeroed id slots, counted as ids instead
        self.raw += raw;
        self.varint += plain + id_bytes;
        let next = self.parts.len() as u32;
        let number = *self.parts.entry(part.clone()).or_insert_with(|| {
            self.part_words += part.len() as u64;
            self.part_varint += plain;
            next
        });
        let interned = leb_len(u64::from(number)) + id_bytes;
        self.interned_refs += interned;
        let fixed: u64 = 4 + ids
            .iter()
            .map(|&t| {
                let d = i64::from(t) - i64::from(id);
                if (-32_767..=32_767).contains(&d) {
                    2
                } else {
                    6
                }
            })
            .sum::<u64>();
        self.fixed_refs += fixed;
        let e = self.by_kind.entry(kind.name()).or_default();
        e.0 += 1;
        e.1 += raw;
        e.2 += interned;
    }
}

fn mib(b: u64) -> f64 {
    b as f64 / (1 << 20) as f64
}

fn main() {
    // `cargo bench` passes --bench; `cargo test --benches` runs this too: measure only when
    // asked for by cargo bench.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let input = kernel_input::vmlinux();
    if !input.exists() {
        eprintln!(
            "store_encodings: {} not found (scripts/setup/fetch-kernel.sh fetches it)",
            input.display()
        );
        return;
    }
    let btf = read::parse(&kernel_input::prededup(input), None).expect("the pre-dedup BTF parses");
    let mut sizes = Sizes::default();
    for id in btf.start_id()..btf.type_cnt() {
        let t = btf.type_by_id(id).expect("every id has a record");
        sizes.add(id, t.words);
    }
    let n = u64::from(btf.type_cnt() - btf.start_id());
    let index = 4 * n;
    let per = |b: u64| b as f64 / n as f64;
    println!(
        "{n} pre-dedup types, {} distinct id-free parts",
        sizes.parts.len()
    );
    println!("| encoding | MiB | bytes per type | + 4-byte offset index (MiB) |");
    println!("|---|---:|---:|---:|");
    let rows = [
        ("raw BTF words (today)", sizes.raw, false),
        ("varint, ids relative", sizes.varint, true),
        (
            "interned id-free part (varint) + varint relative ids",
            sizes.part_varint + sizes.interned_refs,
            true,
        ),
        (
            "interned id-free part (raw words) + u32 part + i16 ids",
            4 * sizes.part_words + sizes.fixed_refs,
            true,
        ),
    ];
    for (name, bytes, indexed) in rows {
        let with_index = if indexed {
            format!("{:.1}", mib(bytes + index))
        } else {
            "—".to_string()
        };
        println!(
            "| {name} | {:.1} | {:.1} | {with_index} |",
            mib(bytes),
            per(bytes)
        );
    }
    println!(
        "interned parts alone: {:.1} MiB as words, {:.1} MiB as varints",
        mib(4 * sizes.part_words),
        mib(sizes.part_varint)
    );
    let mut kinds: Vec<_> = sizes.by_kind.into_iter().collect();
    kinds.sort_by_key(|(_, (_, raw, _))| std::cmp::Reverse(*raw));
    println!("| kind | types | raw bytes per type | interned + varint refs per type |");
    println!("|---|---:|---:|---:|");
    for (kind, (count, raw, interned)) in kinds {
        println!(
            "| {kind} | {count} | {:.1} | {:.1} |",
            raw as f64 / count as f64,
            interned as f64 / count as f64
        );
    }
}
