//! Hand-made DWARF that no compiler writes: one CU of millions of DIEs of one or a few bytes,
//! in an x86-64 ET_REL (`.debug_abbrev`, `.debug_info`, `.debug_str`, an empty `.symtab`),
//! its debug sections optionally zlib-compressed to exactly the ratio the default
//! decompression limit allows. The shapes that cost the encoder the most memory per byte of
//! DWARF, for the RSS bound docs/bad-input.md states (`tests/cli/rss_bound.rs`).

use std::path::{Path, PathBuf};
use std::process::Command;

/// What the CU holds, `n` times.
#[derive(Clone, Copy, Debug)]
pub enum Shape {
    /// `DW_TAG_base_type` "int" of 4 bytes: seven bytes (abbrev code, `DW_FORM_strp` name,
    /// `DW_FORM_data1` size and encoding).
    BaseTypes,
    /// One `DW_TAG_structure_type` of `n` members of one byte each (an abbrev code, no
    /// attribute: an anonymous member of type void at offset 0).
    Members,
}

/// The ELF file's bytes: `n` DIEs of `shape`, and (`compress`) every debug section
/// zlib-compressed (`SHF_COMPRESSED`) and padded so that it expands exactly
/// `DEFAULT_DECOMPRESS_RATIO` times (or less, when the zlib stream alone is larger). Returns
/// the file and its debug sections' decompressed size.
pub fn tiny_dies(dir: &Path, shape: Shape, n: usize, compress: bool) -> (PathBuf, u64) {
    // Abbrevs: 1 compile unit (children, DW_AT_language data1); 2 base type (name strp,
    // byte_size data1, encoding data1); 3 structure type with children; 4 member, nothing.
    let abbrev = [
        1, 0x11, 1, 0x13, 0x0b, 0, 0, //
        2, 0x24, 0, 0x03, 0x0e, 0x0b, 0x0b, 0x3e, 0x0b, 0, 0, //
        3, 0x13, 1, 0, 0, //
        4, 0x0d, 0, 0, 0, //
        0,
    ];
    // DWARF 4 unit header after the length: version, abbrev offset, address size; then the
    // CU DIE (DW_LANG_C99).
    let mut body = [
        4u16.to_le_bytes().as_slice(),
        &0u32.to_le_bytes(),
        &[8, 1, 0x0c],
    ]
    .concat();
    match shape {
        Shape::BaseTypes => {
            // "int" at .debug_str+1, 4 bytes, DW_ATE_signed.
            let die = [2, 1, 0, 0, 0, 4, 5];
            body.extend(die.iter().cycle().take(die.len() * n));
        }
        Shape::Members => {
            body.push(3);
            body.extend(std::iter::repeat_n(4u8, n));
            body.push(0); // end of the struct's children
        }
    }
    body.push(0); // end of the CU's children
    let mut info = (body.len() as u32).to_le_bytes().to_vec();
    info.extend(body);
    let debug: [(&str, Vec<u8>); 3] = [
        (".debug_abbrev", abbrev.to_vec()),
        (".debug_info", info),
        (".debug_str", b"\0int\0".to_vec()),
    ];
    let decompressed = debug.iter().map(|(_, d)| d.len() as u64).sum();
    let mut sections: Vec<(&str, u32, u64, Vec<u8>)> = Vec::new();
    for (name, data) in debug {
        if compress {
            // SHT_PROGBITS, SHF_COMPRESSED
            sections.push((name, 1, 0x800, compressed(&data)));
        } else {
            sections.push((name, 1, 0, data));
        }
    }
    sections.push((".symtab", 2, 0, vec![0; 24])); // SHT_SYMTAB: the null symbol
    sections.push((".strtab", 3, 0, vec![0])); // SHT_STRTAB
    let path = dir.join(format!(
        "{shape:?}-{n}{}.o",
        if compress { "-zlib" } else { "" }
    ));
    std::fs::write(&path, elf(&sections)).unwrap();
    (path, decompressed)
}

/// An `Elf64_Chdr` (zlib) and a zlib stream of `data`, padded with zeros (which decompression
/// ignores) to `1 / DEFAULT_DECOMPRESS_RATIO` of `data`'s size.
fn compressed(data: &[u8]) -> Vec<u8> {
    let script =
        "import sys, zlib; sys.stdout.buffer.write(zlib.compress(sys.stdin.buffer.read(), 9))";
    let mut child = Command::new(super::tool("python3"))
        .args(["-c", script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let input = data.to_vec();
    let writer = std::thread::spawn(move || std::io::Write::write_all(&mut stdin, &input));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(out.status.success(), "python3 zlib");
    let mut packed = [1u32.to_le_bytes(), [0; 4]].concat(); // ch_type zlib, ch_reserved
    packed.extend((data.len() as u64).to_le_bytes()); // ch_size
    packed.extend(1u64.to_le_bytes()); // ch_addralign
    packed.extend(out.stdout);
    let ratio = dwarf2btf::input::elf::DEFAULT_DECOMPRESS_RATIO as usize;
    packed.resize(packed.len().max(data.len().div_ceil(ratio)), 0);
    packed
}

/// An x86-64 ET_REL of `sections` (name, type, flags, data), with `.shstrtab` last; a
/// `.symtab` links to the section after it.
pub fn elf(sections: &[(&str, u32, u64, Vec<u8>)]) -> Vec<u8> {
    let mut names = vec![0u8];
    let mut file = vec![0u8; 64];
    let mut headers = vec![0u8; 64]; // section 0
    let header = |name: usize, kind: u32, flags: u64, offset: usize, size: usize, link: u32| {
        let mut h = [(name as u32).to_le_bytes(), kind.to_le_bytes()].concat();
        for word in [flags, 0, offset as u64, size as u64] {
            h.extend(word.to_le_bytes());
        }
        let (info, entsize) = if kind == 2 { (1u32, 24u64) } else { (0, 0) };
        h.extend([link.to_le_bytes(), info.to_le_bytes()].concat());
        h.extend(1u64.to_le_bytes()); // sh_addralign
        h.extend(entsize.to_le_bytes());
        h
    };
    for (i, (name, kind, flags, data)) in sections.iter().enumerate() {
        let link = if *kind == 2 { i as u32 + 2 } else { 0 };
        headers.extend(header(
            names.len(),
            *kind,
            *flags,
            file.len(),
            data.len(),
            link,
        ));
        names.extend(name.as_bytes());
        names.push(0);
        file.extend(data);
    }
    let shstrtab = names.len();
    names.extend(b".shstrtab\0");
    headers.extend(header(shstrtab, 3, 0, file.len(), names.len(), 0));
    file.extend(&names);
    file.resize(file.len().next_multiple_of(8), 0);
    let shoff = file.len() as u64;
    file.extend(headers);
    // e_ident (ELFCLASS64, little-endian, version 1), ET_REL, EM_X86_64, e_version.
    let mut ehdr = b"\x7fELF\x02\x01\x01".to_vec();
    ehdr.resize(16, 0);
    ehdr.extend([1u16.to_le_bytes(), 62u16.to_le_bytes()].concat());
    ehdr.extend(1u32.to_le_bytes());
    ehdr.extend([0u64, 0, shoff].map(u64::to_le_bytes).concat()); // entry, phoff, shoff
    ehdr.extend(0u32.to_le_bytes()); // flags
    let (shnum, shstrndx) = (sections.len() as u16 + 2, sections.len() as u16 + 1);
    // ehsize, phentsize, phnum, shentsize, shnum, shstrndx
    ehdr.extend(
        [64u16, 0, 0, 64, shnum, shstrndx]
            .map(u16::to_le_bytes)
            .concat(),
    );
    file[..64].copy_from_slice(&ehdr);
    file
}
