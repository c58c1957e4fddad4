//! Probe BTF for `verify --kernel-version` against real kernels: a minimal valid BTF (an INT,
//! a STRUCT, a FUNC_PROTO and a static FUNC) and copies of it that each add exactly one kind,
//! flag or header form a release may lack. A kernel's `BPF_BTF_LOAD` verdict on each must be
//! verify's for that kernel's release (tests/real_kernel/verify_probes.rs for the running kernel,
//! tests/real_kernel/kernel_61.rs for Debian's 6.1, scripts/check/kernel-build.sh for the built kernels, which
//! load the committed copies in tests/data/probes/).

use std::path::{Path, PathBuf};
use std::process::Command;

use dwarf2btf::btf::write::{self, HeaderForm};
use dwarf2btf::btf::{kinds, Btf, Kind};
use dwarf2btf::toolbox::verify::Feature;

/// One probe: its file name stem, the feature it adds (the baseline's: FUNC) and its bytes.
pub struct Probe {
    /// The file name stem under tests/data/probes.
    pub name: &'static str,
    /// The one kind, flag or header form it adds.
    pub feature: Feature,
    /// The BTF bytes.
    pub data: Vec<u8>,
}

/// The committed copy of the probe `name` (tests/data/probes/NAME.btf), which the scripts load.
pub fn committed(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/probes")
        .join(format!("{name}.btf"))
}

/// `dwarf2btf verify --kernel-version RELEASE FILE`: true when it exits 0 (valid), false when
/// 1 (invalid); any other exit (no verdict, an error) panics.
pub fn verify_valid(file: &Path, release: &str) -> bool {
    let o = super::run(
        Command::new(super::bin())
            .args(["verify", "--kernel-version", release])
            .arg(file),
    );
    match o.status.code() {
        Some(0) => true,
        Some(1) => false,
        _ => panic!(
            "verify --kernel-version {release} {}: {}",
            file.display(),
            super::text(&o)
        ),
    }
}

/// The baseline's types, in the host's byte order as the kernel wants them; returns the
/// BTF and the ids of its INT and STRUCT.
fn baseline() -> (Btf, u32, u32) {
    let mut b = Btf::new();
    let int = b.add_int(b"int", 4, kinds::INT_SIGNED).unwrap();
    let s = b.add_composite(Kind::Struct, Some(b"probe"), 4).unwrap();
    b.add_field(Some(b"a"), int, 0, 0).unwrap();
    let proto = b.add_func_proto(int).unwrap();
    b.add_func_param(Some(b"x"), int).unwrap();
    b.add_func(b"probe_fn", 0, proto).unwrap();
    if cfg!(target_endian = "big") {
        b.endian = dwarf2btf::btf::Endian::Big;
    }
    (b, int, s)
}

/// The baseline with `add` applied, in the classic header.
fn with(add: impl FnOnce(&mut Btf, u32, u32)) -> Vec<u8> {
    let (mut b, int, s) = baseline();
    add(&mut b, int, s);
    write::to_bytes(&b)
}

/// `data` with kind_flag set on its last type (the probes add the feature's type last).
fn kflag_on_last(mut data: Vec<u8>) -> Vec<u8> {
    let btf = dwarf2btf::btf::read::parse(&data, None).unwrap();
    let h = dwarf2btf::btf::read::parse_header(&data).unwrap();
    let mut at = (h.hdr_len + h.type_off) as usize;
    for id in 1..btf.type_cnt() - 1 {
        at += btf.type_by_id(id).unwrap().words.len() * 4;
    }
    let info = at + 4;
    let word = u32::from_ne_bytes(data[info..info + 4].try_into().unwrap()) | 1 << 31;
    data[info..info + 4].copy_from_slice(&word.to_ne_bytes());
    data
}

/// Every probe, the baseline first.
pub fn probes() -> Vec<Probe> {
    let probe = |name, feature, data| Probe {
        name,
        feature,
        data,
    };
    vec![
        probe("baseline", Feature::FuncKinds, with(|_, _, _| {})),
        probe(
            "float",
            Feature::Float,
            with(|b, _, _| {
                b.add_float(b"double", 8).unwrap();
            }),
        ),
        probe(
            "decl_tag",
            Feature::DeclTag,
            with(|b, _, s| {
                b.add_decl_tag(b"probe_tag", s, 0).unwrap();
            }),
        ),
        probe(
            "type_tag",
            Feature::TypeTag,
            with(|b, int, _| {
                let tag = b.add_ref(Kind::TypeTag, Some(b"probe_tag"), int).unwrap();
                b.add_ref(Kind::Ptr, None, tag).unwrap();
            }),
        ),
        probe(
            "enum64",
            Feature::Enum64,
            with(|b, _, _| {
                b.add_enum(Kind::Enum64, Some(b"probe_e64"), 8, false)
                    .unwrap();
                b.add_enum64_value(b"PROBE_BIG", 1 << 40).unwrap();
            }),
        ),
        probe(
            "enum_signed",
            Feature::Enum64,
            with(|b, _, _| {
                b.add_enum(Kind::Enum, Some(b"probe_e"), 4, true).unwrap();
                b.add_enum_value(b"PROBE_NEG", -1).unwrap();
            }),
        ),
        probe(
            "decl_tag_kflag",
            Feature::TagKindFlag,
            kflag_on_last(with(|b, _, s| {
                b.add_decl_tag(b"probe_attr", s, -1).unwrap();
            })),
        ),
        probe(
            "type_tag_kflag",
            Feature::TagKindFlag,
            with(|b, int, _| {
                let tag = b.add_type_attr(b"address_space(1)", int).unwrap();
                b.add_ref(Kind::Ptr, None, tag).unwrap();
            }),
        ),
        probe("layout_header", Feature::LayoutHeader, {
            let (b, _, _) = baseline();
            write::to_bytes_as(&b, HeaderForm::Extended { layout: true })
        }),
    ]
}
