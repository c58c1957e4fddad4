//! What the subcommands use to look at BTF rather than to make it: [`verify`] (would the
//! kernels a file is meant for accept it), [`canon`] (an id-free rendering, for `diff`),
//! [`dump`] (bpftool's listing) and [`kernel`] (the running kernel's own verdict, and split
//! BTF joined to its base for it). The format itself, which the encoding pipeline builds and
//! writes, is `btf`; the toolbox stands on it and nothing below the pipeline uses the toolbox.

pub mod canon;
pub mod dump;
pub mod kernel;
pub mod verify;
