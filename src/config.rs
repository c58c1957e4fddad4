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
    ("layout", false),
];

/// Which BTF features are on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Features {
    pub encode_force: bool,
    pub var: bool,
    pub float: bool,
    pub decl_tag: bool,
    pub type_tag: bool,
    pub enum64: bool,
    pub optimized_func: bool,
    pub consistent_func: bool,
    pub decl_tag_kfuncs: bool,
    pub reproducible_build: bool,
    pub distilled_base: bool,
    pub global_var: bool,
    pub attributes: bool,
    pub true_signature: bool,
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
            "layout" => &mut self.layout,
            _ => return None,
        })
    }

    /// Applies every `--btf_features` list in order, starting from all-off. Returns the unknown
    /// names (an error instead when `strict`).
    pub fn from_lists(lists: &[String], strict: bool) -> Result<(Features, Vec<String>)> {
        let mut f = Features::none();
        let mut unknown = Vec::new();
        for list in lists {
            let (plus, list) = match list.strip_prefix('+') {
                Some(rest) => (true, rest),
                None => (false, list.as_str()),
            };
            if plus {
                f.enable_default();
            }
            for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
                if name == "default" {
                    f.enable_default();
                } else if let Some(flag) = f.flag_mut(name) {
                    *flag = true;
                } else if strict {
                    return Err(Error::Usage(format!(
                        "unknown BTF feature '{name}'; known: default, {}",
                        FEATURES.iter().map(|f| f.0).collect::<Vec<_>>().join(", ")
                    )));
                } else {
                    unknown.push(name.to_string());
                }
            }
        }
        Ok((f, unknown))
    }

    fn enable_default(&mut self) {
        for (name, on) in FEATURES {
            if *on {
                *self.flag_mut(name).expect("FEATURES names are known") = true;
            }
        }
    }
}

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
    pub input: PathBuf,
    pub output: PathBuf,
    pub jobs: usize,
    pub features: Features,
    pub lang_exclude: Vec<u16>,
    pub verbose: bool,
    /// Skip deduplication (write the raw per-CU encoding).
    pub no_dedup: bool,
    /// Which function table design the workers share.
    pub func_table: crate::functable::Design,
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

    #[test]
    fn languages() {
        assert_eq!(parse_langs("rust").unwrap(), [0x1c]);
        assert!(parse_langs("klingon").is_err());
    }
}
