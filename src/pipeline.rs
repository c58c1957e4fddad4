//! The encoding run: input → per-CU decoding and encoding → dedup → output.
//!
//! CUs are encoded in DWARF order into one BTF, so type ids follow pahole's layout exactly
//! (CU types, in CU order). What was done is summed up in a [`Summary`].

use std::time::Instant;

use crate::btf::{write, Btf};
use crate::config::Config;
use crate::dwarf::types::decode_cu_types;
use crate::dwarf::units::{unit_headers, Cu, DebugSections};
use crate::encode::encoder::Encoder;
use crate::error::{Error, Result};
use crate::input::elf::{Elf, Mapped};
use crate::output::write_atomic;

/// What a run did, for the closing line and for tests.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    pub cus: usize,
    pub cus_skipped: usize,
    pub types_before_dedup: u32,
    pub types: u32,
    pub bytes: usize,
    /// Nothing was written: the input has no DWARF, or no CU produced a type.
    pub nothing_written: Option<String>,
    pub seconds: f64,
}

/// Encodes `config.input` and writes the BTF to `config.output`.
pub fn run(config: &Config) -> Result<Summary> {
    let start = Instant::now();
    let mapped = Mapped::open(&config.input)?;
    let elf = Elf::parse(&mapped)?;
    let mut summary = Summary::default();
    let Some(btf) = encode(&elf, &mapped, config, &mut summary)? else {
        summary.seconds = start.elapsed().as_secs_f64();
        return Ok(summary);
    };
    summary.types_before_dedup = btf.type_cnt() - 1;
    let bytes = write::to_bytes(&btf);
    summary.types = btf.type_cnt() - 1;
    summary.bytes = bytes.len();
    write_atomic(&config.output, &bytes)?;
    summary.seconds = start.elapsed().as_secs_f64();
    Ok(summary)
}

/// Decodes and encodes every CU; `None` when there is nothing to write.
pub fn encode(
    elf: &Elf<'_>,
    mapped: &Mapped,
    config: &Config,
    summary: &mut Summary,
) -> Result<Option<Btf>> {
    let path = elf.path();
    let Some(sections) = DebugSections::load(elf)? else {
        summary.nothing_written = Some("no DWARF (.debug_info) in the input".into());
        return Ok(None);
    };
    let dwarf = sections.dwarf();
    let mut btf = Btf::new();
    btf.endian = elf.endian;
    let mut encoder = Encoder::default();
    let little = elf.endian == crate::btf::Endian::Little;
    let info_base = sections.info_bytes().as_ptr() as usize;
    let map_range = mapped.bytes().as_ptr_range();
    for header in unit_headers(&dwarf, path)? {
        let cu = Cu::new(&dwarf, header, little).map_err(|e| Error::BadDwarf {
            path: path.to_path_buf(),
            cu_offset: header.offset().0 as u64,
            reason: e.to_string(),
        })?;
        summary.cus += 1;
        if cu
            .language
            .is_some_and(|l| config.lang_exclude.contains(&l.0))
        {
            summary.cus_skipped += 1;
            continue;
        }
        let types = decode_cu_types(&dwarf, &cu, &config.features).map_err(|e| Error::BadDwarf {
            path: path.to_path_buf(),
            cu_offset: if e.die_offset != 0 { e.die_offset } else { cu.offset as u64 },
            reason: e.reason,
        })?;
        encoder.encode_cu_types(&mut btf, &types, &config.features, cu.offset as u64)?;
        // The CU's DWARF is done with: let its pages leave the resident set.
        if map_range.contains(&(info_base as *const u8)) {
            let start = info_base - map_range.start as usize + cu.range().start;
            let len = cu.range().len();
            mapped.release(start.saturating_sub(64 * 1024)..start + len);
        }
    }
    if btf.type_cnt() == 1 {
        summary.nothing_written = Some("no types were encoded".into());
        return Ok(None);
    }
    Ok(Some(btf))
}
