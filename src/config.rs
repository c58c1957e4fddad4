//! Encoding configuration: `--btf_features` parsing with pahole's rules, and the run's `Config`.
//!
//! As in pahole, `--btf_features` is opt-in: naming any feature starts from "all off", `default`
//! turns on the default set, a leading `+` means "default plus these", and the option may be
//! given several times (the lists accumulate). Unknown names are ignored unless
//! `--btf_features_strict` is given.

use std::path::PathBuf;

use crate::error::{Error, Result};

/// The BTF features pahole knows, in pahole's order, with whether `default` enables each.
pub const FEATURES: &[(&str, bool)] = &[
    ("encode_force", true),
    ("var", true),
    ("float", true),
    ("decl_tag", true),
    ("type_tag", true),
    ("enum64", true),
    ("optimized_func", true),
    ("consistent_func", true),
    ("decl_tag_kfuncs", true),
    ("reproducible_build", false),
    ("distilled_base", false),
    ("global_var", false),
    ("attributes", false),
    ("true_signature", false),
    ("force_cu_merging", false),
    ("layout", false),
];

/// Which BTF features are on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Features {
    /// `encode_force`: skip variables with an invalid BTF name or a void type instead of
    /// failing.
    pub encode_force: bool,
    /// `var`: encode the per-CPU variables (those in `.data..percpu`).
    pub var: bool,
    /// `float`: encode DWARF float base types as FLOAT (else as INT).
    pub float: bool,
    /// `decl_tag`: encode `btf_decl_tag` annotations, and the `bpf_kfunc` tags of kfuncs, as
    /// DECL_TAG.
    pub decl_tag: bool,
    /// `type_tag`: encode the `btf_type_tag` annotations of pointers as TYPE_TAG.
    pub type_tag: bool,
    /// `enum64`: encode enums wider than 4 bytes as ENUM64 (else as ENUM, values truncated to
    /// 32 bits).
    pub enum64: bool,
    /// `optimized_func`: accepted and recorded; the encoder does not read it.
    pub optimized_func: bool,
    /// `consistent_func`: skip a function whose instances disagree on its prototype.
    pub consistent_func: bool,
    /// `decl_tag_kfuncs`: find the kfuncs in the ELF's BTF id sets and, with `decl_tag`, tag
    /// them (`bpf_kfunc`, `bpf_fastcall`).
    pub decl_tag_kfuncs: bool,
    /// `reproducible_build`: accepted and recorded; the output is always reproducible.
    pub reproducible_build: bool,
    /// `distilled_base`: split BTF written into an ELF goes with a distilled base in
    /// `.BTF.base`.
    pub distilled_base: bool,
    /// `global_var`: encode the variables of every included section, not only per-CPU ones.
    pub global_var: bool,
    /// `attributes`: give the pointers of arena kfuncs the `address_space(1)` type tag.
    pub attributes: bool,
    /// `true_signature`: a function whose instance sits at a `.`-suffixed clone symbol
    /// (`foo.isra.0`) is encoded under the clone's name with that instance's prototype, and
    /// optimized parameters no longer skip a function; a function whose signature clang
    /// changed gets its real prototype (`dwarf/functions/analysis.rs`).
    pub true_signature: bool,
    /// `force_cu_merging`: pahole 1.32 loads every CU into one, as it does by itself for
    /// inputs whose CUs reference each other (`DW_FORM_ref_addr`). dwarf2btf resolves such
    /// references per CU (`dwarf/foreign.rs`), so the feature changes nothing: the BTF has
    /// the types of pahole's merged output, in the per-CU order (pahole's merged order
    /// differs from its own per-CU one: on the reference vmlinux the same 94,605 types, in
    /// another order, 21.6 s and 2.5 GB).
    pub force_cu_merging: bool,
    /// `layout`: write libbpf 1.8's 32-byte header, and for base BTF the kind layout section
    /// it points at (a `btf_layout` record per kind), as pahole HEAD does
    /// (`btf::write::HeaderForm`).
    pub layout: bool,
}

impl Default for Features {
    /// pahole's behaviour without any `--btf_features`: per-CPU vars, decl and type tags and
    /// enum64 on; floats, consistent_func and kfunc tags off.
    fn default() -> Self {
        Features {
            var: true,
            decl_tag: true,
            type_tag: true,
            enum64: true,
            ..Features::none()
        }
    }
}

impl Features {
    /// Every feature off (the starting point once `--btf_features` is given).
    pub fn none() -> Self {
        Features {
            encode_force: false,
            var: false,
            float: false,
            decl_tag: false,
            type_tag: false,
            enum64: false,
            optimized_func: false,
            consistent_func: false,
            decl_tag_kfuncs: false,
            reproducible_build: false,
            distilled_base: false,
            global_var: false,
            attributes: false,
            true_signature: false,
            force_cu_merging: false,
            layout: false,
        }
    }

    fn flag_mut(&mut self, name: &str) -> Option<&mut bool> {
        Some(match name {
            "encode_force" => &mut self.encode_force,
            "var" => &mut self.var,
            "float" => &mut self.float,
            "decl_tag" => &mut self.decl_tag,
            "type_tag" => &mut self.type_tag,
            "enum64" => &mut self.enum64,
            "optimized_func" => &mut self.optimized_func,
            "consistent_func" => &mut self.consistent_func,
            "decl_tag_kfuncs" => &mut self.decl_tag_kfuncs,
            "reproducible_build" => &mut self.reproducible_build,
            "distilled_base" => &mut self.distilled_base,
            "global_var" => &mut self.global_var,
            "attributes" => &mut self.attributes,
            "true_signature" => &mut self.true_signature,
            "force_cu_merging" => &mut self.force_cu_merging,
            "layout" => &mut self.layout,
            _ => return None,
        })
    }

    /// Applies the feature options in command-line order, as pahole does: the state starts
    /// from pahole's defaults ([`Features::default`]); the first `--btf_features` list resets
    /// every feature to off (later lists accumulate); a legacy flag sets its one feature
    /// wherever it stands, so one given before the first list is overwritten by it. Returns the
    /// unknown names (an error instead for a strict list).
    pub fn from_args(args: &[FeatureArg<'_>]) -> Result<(Features, Vec<String>)> {
        let mut f = Features::default();
        let mut lists_seen = false;
        let mut unknown = Vec::new();
        for arg in args {
            match *arg {
                FeatureArg::List { list, strict } => {
                    if !lists_seen {
                        f = Features::none();
                        lists_seen = true;
                    }
                    f.apply_list(list, strict, &mut unknown)?;
                }
                FeatureArg::Legacy(flag) => f.apply_legacy(flag, &mut lists_seen)?,
            }
        }
        Ok((f, unknown))
    }

    /// Applies `--btf_features` lists in order, starting from all-off (pahole's lists only).
    pub fn from_lists(lists: &[String], strict: bool) -> Result<(Features, Vec<String>)> {
        let args: Vec<FeatureArg<'_>> = lists
            .iter()
            .map(|list| FeatureArg::List { list, strict })
            .collect();
        Features::from_args(&args)
    }

    /// One `--btf_features` list: `default`, a leading `+` (default plus these), names.
    fn apply_list(&mut self, list: &str, strict: bool, unknown: &mut Vec<String>) -> Result<()> {
        let list = match list.strip_prefix('+') {
            Some(rest) => {
                self.enable_default();
                rest
            }
            None => list,
        };
        for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            if name == "default" {
                self.enable_default();
            } else if let Some(flag) = self.flag_mut(name) {
                *flag = true;
            } else if strict {
                return Err(Error::Usage(format!(
                    "unknown BTF feature '{name}'; supported: {}",
                    supported_features()
                )));
            } else {
                unknown.push(name.to_string());
            }
        }
        Ok(())
    }

    /// One legacy flag (see [`LEGACY_FLAGS`]).
    fn apply_legacy(&mut self, flag: &str, lists_seen: &mut bool) -> Result<()> {
        let (_, effect, _) = LEGACY_FLAGS
            .iter()
            .find(|(name, _, _)| *name == flag)
            .ok_or_else(|| Error::Usage(format!("unknown legacy flag --{flag}")))?;
        match *effect {
            Legacy::Set(name, on) => {
                *self
                    .flag_mut(name)
                    .expect("LEGACY_FLAGS names are features") = on;
            }
            // pahole runs `parse_btf_features("all")`: the reset of the first list, then a
            // name it does not know.
            Legacy::ResetOnly => {
                if !*lists_seen {
                    *self = Features::none();
                    *lists_seen = true;
                }
            }
        }
        Ok(())
    }

    fn enable_default(&mut self) {
        for (name, on) in FEATURES {
            if *on {
                *self.flag_mut(name).expect("FEATURES names are known") = true;
            }
        }
    }
}

/// A feature option as it stands on the command line, in order.
#[derive(Clone, Copy, Debug)]
pub enum FeatureArg<'a> {
    /// `--btf_features=LIST` (`strict` for `--btf_features_strict`).
    List {
        /// The comma-separated feature names.
        list: &'a str,
        /// Whether the list came with `--btf_features_strict`.
        strict: bool,
    },
    /// A legacy flag, named as in [`LEGACY_FLAGS`] (without the leading `--`).
    Legacy(&'a str),
}

/// What a legacy flag does to the feature set.
#[derive(Clone, Copy, Debug)]
pub enum Legacy {
    /// Sets one feature on or off.
    Set(&'static str, bool),
    /// `--btf_gen_all`: what pahole ≥ 1.27 does with it (reset to all-off if no list came first).
    ResetOnly,
}

/// pahole's flags from before `--btf_features`, still used by kernels up to 6.6 (6.1's
/// `scripts/pahole-flags.sh` passes `--btf_gen_floats --skip_encoding_btf_inconsistent_proto
/// --btf_gen_optimized`): flag, effect, help.
pub const LEGACY_FLAGS: &[(&str, Legacy, &str)] = &[
    (
        "btf_gen_floats",
        Legacy::Set("float", true),
        "Encode floating-point types (= feature float)",
    ),
    (
        "btf_gen_optimized",
        Legacy::Set("optimized_func", true),
        "= feature optimized_func",
    ),
    (
        "btf_gen_all",
        Legacy::ResetOnly,
        "Obsolete since pahole 1.27: resets the features as an empty --btf_features would",
    ),
    (
        "btf_encode_force",
        Legacy::Set("encode_force", true),
        "= feature encode_force",
    ),
    (
        "skip_encoding_btf_inconsistent_proto",
        Legacy::Set("consistent_func", true),
        "Skip functions with inconsistent prototypes (= feature consistent_func)",
    ),
    (
        "skip_encoding_btf_vars",
        Legacy::Set("var", false),
        "Do not encode per-CPU variables (turns feature var off)",
    ),
    (
        "skip_encoding_btf_decl_tag",
        Legacy::Set("decl_tag", false),
        "Do not encode decl tags (turns feature decl_tag off)",
    ),
    (
        "skip_encoding_btf_type_tag",
        Legacy::Set("type_tag", false),
        "Do not encode type tags (turns feature type_tag off)",
    ),
    (
        "skip_encoding_btf_enum64",
        Legacy::Set("enum64", false),
        "Encode 64-bit enums as ENUM (turns feature enum64 off)",
    ),
    (
        "reproducible_build",
        Legacy::Set("reproducible_build", true),
        "Accepted for pahole compatibility (output is always reproducible)",
    ),
    (
        "btf_attributes",
        Legacy::Set("attributes", true),
        "= feature attributes",
    ),
];

/// The features dwarf2btf implements, in pahole's order, as `--supported_btf_features`
/// prints them.
pub fn supported_features() -> String {
    FEATURES.iter().map(|f| f.0).collect::<Vec<_>>().join(",")
}

/// How many times its compressed size a compressed section may expand to, by default (plus
/// [`DECOMPRESS_SLACK`]). Real debug sections expand 2.5 to 3.2 times on average (zlib and zstd,
/// kernel modules); a section whose header claims more is refused before anything is
/// allocated, so a few KiB of crafted input cannot ask for gigabytes.
pub const DEFAULT_DECOMPRESS_RATIO: u64 = 64;

/// What the compressed sections of one file may expand to beyond the ratio, together, so that
/// tiny sections (a few bytes of `.debug_abbrev`) never hit the ratio. It is the file's, not
/// each section's: thousands of sections of a few dozen bytes (an ET_REL may have many
/// `.debug_info`, which are concatenated) cannot each take a MiB.
pub const DECOMPRESS_SLACK: u64 = 1 << 20;

/// The pahole release whose command line and encoding dwarf2btf implements. `--version`
/// prints it as pahole does, because kernel builds turn `$(PAHOLE) --version` into
/// `CONFIG_PAHOLE_VERSION` and choose the flags (and whether BTF is built at all) from it.
pub const PAHOLE_VERSION: (u32, u32) = (1, 32);

/// A DWARF source language as `--lang`/`--lang_exclude` name it.
pub fn lang_from_name(name: &str) -> Option<u16> {
    Some(match name {
        "c89" => 0x01,
        "c" => 0x02,
        "ada83" => 0x03,
        "c++" => 0x04,
        "cobol74" => 0x05,
        "cobol85" => 0x06,
        "fortran77" => 0x07,
        "fortran90" => 0x08,
        "pascal83" => 0x09,
        "modula2" => 0x0a,
        "java" => 0x0b,
        "c99" => 0x0c,
        "ada95" => 0x0d,
        "fortran95" => 0x0e,
        "pli" => 0x0f,
        "objc" => 0x10,
        "objc++" => 0x11,
        "upc" => 0x12,
        "d" => 0x13,
        "python" => 0x14,
        "opencl" => 0x15,
        "go" => 0x16,
        "modula3" => 0x17,
        "haskell" => 0x18,
        "c++03" => 0x19,
        "c++11" => 0x1a,
        "ocaml" => 0x1b,
        "rust" => 0x1c,
        "c11" => 0x1d,
        "swift" => 0x1e,
        "julia" => 0x1f,
        "dylan" => 0x20,
        "c++14" => 0x21,
        "fortran03" => 0x22,
        "fortran08" => 0x23,
        "renderscript" => 0x24,
        "bliss" => 0x25,
        "asm" => 0x8001,
        _ => return None,
    })
}

/// Parses a `--lang_exclude` list into DWARF language codes.
pub fn parse_langs(list: &str) -> Result<Vec<u16>> {
    list.split(',')
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(|n| {
            lang_from_name(&n.to_ascii_lowercase())
                .ok_or_else(|| Error::Usage(format!("unknown language '{n}' in --lang_exclude")))
        })
        .collect()
}

/// Everything one encoding run needs to know.
#[derive(Clone, Debug)]
pub struct Config {
    /// The ELF file (vmlinux or a module) whose DWARF is encoded.
    pub input: PathBuf,
    /// Where the BTF goes: a raw BTF file, or the input's own `.BTF` section.
    pub output: Output,
    /// Base BTF (raw, or an ELF with `.BTF`) to encode split BTF against, as for modules.
    pub base: Option<PathBuf>,
    /// Encoders (the function table's owners), run on at most one thread per CPU beside the
    /// main thread that merges their chunks; the dedup runs on as many threads as the
    /// encoding did (`jobs + 1`, at most one per CPU).
    pub jobs: usize,
    /// The BTF features on.
    pub features: Features,
    /// DWARF language codes (`DW_LANG_*`) whose compile units are skipped (`--lang_exclude`).
    pub lang_exclude: Vec<u16>,
    /// `-V`: print pahole's verbose messages (skipped functions and variables, ...).
    pub verbose: bool,
    /// Skip deduplication (write the raw per-CU encoding).
    pub no_dedup: bool,
    /// Which function table design the workers share.
    pub func_table: Design,
    /// How many times its compressed size a compressed debug section may expand to (plus
    /// the file's 1 MiB slack, shared by its sections); 0: no limit (`--max_decompress_ratio`).
    pub max_decompress_ratio: u64,
    /// `--stats`: also measure what the run cannot count itself, the resident DWARF (which
    /// reads `/proc/self/smaps` at every release of the input's pages).
    pub stats: bool,
    /// Record every save into the function table ([`crate::pipeline::Summary::saves`]).
    pub trace_saves: bool,
    /// `-q`: no progress line.
    pub quiet: bool,
}

/// Where an encoding run writes its BTF.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Output {
    /// A raw BTF file (`--btf_encode_detached=FILE`).
    Detached(PathBuf),
    /// The input ELF's `.BTF` section, added or replaced (`-J` alone).
    InPlace,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_feature_list_parses() {
        let list = "encode_force,var,float,enum64,decl_tag,type_tag,optimized_func,consistent_func,decl_tag_kfuncs".to_string();
        let (f, unknown) = Features::from_lists(&[list], true).unwrap();
        assert!(unknown.is_empty());
        assert!(f.float && f.consistent_func && f.decl_tag_kfuncs && !f.global_var);
    }

    #[test]
    fn plus_means_default_and_more() {
        let (f, _) = Features::from_lists(&["+global_var".into()], false).unwrap();
        assert!(f.global_var && f.float && !f.layout);
    }

    #[test]
    fn unknown_is_ignored_unless_strict() {
        let (f, unknown) = Features::from_lists(&["float,nope".into()], false).unwrap();
        assert!(f.float && !f.var);
        assert_eq!(unknown, ["nope"]);
        assert!(Features::from_lists(&["nope".into()], true).is_err());
    }

    fn legacy(args: &[FeatureArg<'_>]) -> Features {
        Features::from_args(args).unwrap().0
    }

    #[test]
    fn legacy_flags_of_the_6_1_kernel() {
        use FeatureArg::Legacy;
        let f = legacy(&[
            Legacy("btf_gen_floats"),
            Legacy("skip_encoding_btf_inconsistent_proto"),
            Legacy("btf_gen_optimized"),
        ]);
        let expected = Features {
            float: true,
            consistent_func: true,
            optimized_func: true,
            ..Features::default()
        };
        assert_eq!(f, expected);
        assert!(f.var && f.type_tag && !f.decl_tag_kfuncs);
    }

    #[test]
    fn a_legacy_flag_before_the_first_list_is_overwritten() {
        use FeatureArg::{Legacy, List};
        let list = List {
            list: "var",
            strict: false,
        };
        assert!(!legacy(&[Legacy("btf_gen_floats"), list]).float);
        assert!(legacy(&[list, Legacy("btf_gen_floats")]).float);
        assert!(!legacy(&[list, Legacy("skip_encoding_btf_vars")]).var);
    }

    #[test]
    fn btf_gen_all_resets_like_an_empty_list() {
        assert_eq!(
            legacy(&[FeatureArg::Legacy("btf_gen_all")]),
            Features::none()
        );
    }

    #[test]
    fn true_signature_is_enabled_by_name() {
        let (f, unknown) = Features::from_lists(&["+true_signature".into()], true).unwrap();
        assert!(f.true_signature && f.var && f.enum64);
        assert!(unknown.is_empty());
    }

    #[test]
    fn layout_is_a_feature_like_the_others() {
        let (f, unknown) = Features::from_lists(&["+layout".into()], true).unwrap();
        assert!(f.layout && f.float && unknown.is_empty());
        assert!(supported_features().split(',').any(|n| n == "layout"));
    }

    #[test]
    fn languages() {
        assert_eq!(parse_langs("rust").unwrap(), [0x1c]);
        assert!(parse_langs("klingon").is_err());
    }
}

/// Which table design a run uses (`--func-table`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Design {
    /// `shared`: one table over the ELF functions, per-owner nodes pushed lock-free.
    #[default]
    Shared,
    /// `dashmap`: per-owner states behind `dashmap`'s sharded locks.
    Dashmap,
    /// `save-merge`: each worker appends to its own list; one pass groups them at the end.
    SaveMerge,
    /// `private`: each worker folds into an index of its own (the control: folding at save
    /// time without a shared index).
    Private,
}

impl Design {
    /// Every design, in the order `--func-table`'s help lists them.
    pub const ALL: [Design; 4] = [
        Design::Shared,
        Design::Dashmap,
        Design::SaveMerge,
        Design::Private,
    ];

    /// The name `--func-table` takes.
    pub fn name(self) -> &'static str {
        match self {
            Design::Shared => "shared",
            Design::Dashmap => "dashmap",
            Design::SaveMerge => "save-merge",
            Design::Private => "private",
        }
    }
}

impl std::str::FromStr for Design {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Design::ALL
            .into_iter()
            .find(|d| d.name() == s)
            .ok_or_else(|| {
                format!(
                    "unknown function table design '{s}' (shared, dashmap, save-merge, private)"
                )
            })
    }
}
