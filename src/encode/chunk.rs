//! One worker's unit of work: a batch of consecutive CUs encoded into its own chunk.
//!
//! Per CU, in pahole's order: the types table (then the synthetic `int` and decl tags), the
//! function instances (saved into the shared function table, strings added to the chunk), the
//! variables (VAR + decl tags; their DATASEC entries are buffered). An [`EncodeWatch`] is
//! shown every DWARF function of the names it watches, saved or not. Under `-V`, a CU's notes
//! (dropped `_Atomic` qualifiers, then the variables' messages) join the chunk's messages,
//! which the pipeline prints in CU order. Type ids are local to the chunk; [`super::concat`]
//! shifts them when the chunk joins the run's BTF.

use std::ops::Range;
use std::path::Path;

use gimli::UnitHeader;

use super::types::{encode_cu_types, IndexRole};
use super::variables::{PendingSecinfo, VarEncoder};
use crate::btf::{Btf, Endian};
use crate::config::Features;
use crate::dwarf::cycles::impossible_type;
use crate::dwarf::error::DwarfCause;
use crate::dwarf::foreign::UnitIndex;
use crate::dwarf::functions::{decode_cu_functions, FunctionInfo};
use crate::dwarf::types::{decode_cu_types, CuTypes, DecodeError, TypesScratch};
use crate::dwarf::units::{Cu, DebugSections, R};
use crate::dwarf::variables::decode_cu_variables;
use crate::error::{Error, Result};
use crate::input::arch::Arch;
use crate::input::symbols::{ElfFunction, ElfFunctions};
use crate::measure::{timed, WorkerTimes};
use parking_lot::Mutex;

/// Everything the workers share, read-only.
pub struct EncodeContext<'a, 'd> {
    /// The input ELF's path, for error messages.
    pub path: &'d Path,
    /// The input's DWARF sections.
    pub dwarf: &'d gimli::Dwarf<R<'a>>,
    /// The same sections, which ready each unit for reading (`.debug_info` is usually read
    /// from the file unit by unit, a module's relocated).
    pub sections: &'a DebugSections<'a>,
    /// Every unit header, `.debug_info`'s then `.debug_types`', in order; a CU's index is its
    /// position here. Type units are encoded as CUs too (a type unit no CU references still
    /// holds a type the program declared), and each CU imports the type units it references.
    pub headers: &'d [UnitHeader<R<'a>>],
    /// Every unit, for references that leave a CU.
    pub units: &'d UnitIndex<'a>,
    /// The BTF features on.
    pub features: &'d Features,
    /// DWARF language codes (`DW_LANG_*`) whose CUs are skipped.
    pub lang_exclude: &'d [u16],
    /// The input's byte order, which each chunk's BTF takes.
    pub endian: Endian,
    /// The ELF's functions, which DWARF functions are matched with by name.
    pub funcs: &'d ElfFunctions,
    /// The variable encoder (the ELF's sections and object symbols).
    pub vars: &'d VarEncoder<'a>,
    /// The target's argument-passing facts, for the parameter location analysis.
    pub arch: &'d Arch,
    /// The CU that establishes the array index type, if any CU has an `int` or an array.
    pub index_cu: Option<usize>,
    /// That CU's types, decoded by the pre-scan ([`EncodeContext::find_index_cu`]) and taken
    /// by the worker that encodes it, so that it is not decoded twice.
    pub prescanned: Mutex<Option<CuTypes<'a>>>,
    /// Collect `-V` messages.
    pub verbose: bool,
    /// Called with the `.debug_info` range of each finished CU (to release its pages).
    pub release: &'d (dyn Fn(Range<usize>) + Sync),
    /// Shown every DWARF function of the names it watches.
    pub watch: Option<&'d dyn EncodeWatch>,
    /// Measure the workers' CPU time by activity (`--stats`): two reads of the thread's CPU
    /// clock, each a system call, around every step of every CU.
    pub time_workers: bool,
}

/// A DWARF function with an ELF symbol of its name, found while encoding a CU: what the
/// functions stage saves an instance of.
pub struct FoundFunction<'f, 'a> {
    /// The chunk's BTF, for the strings the instance adds (in pahole's string order).
    pub chunk_btf: &'f mut Btf,
    /// The index of the chunk (batch) being encoded.
    pub chunk: u32,
    /// The CU's index in `.debug_info` order.
    pub cu_index: u32,
    /// Where the CU's local type ids start in the chunk.
    pub type_id_off: u32,
    /// The DWARF function, as decoded.
    pub info: &'f FunctionInfo<'a>,
    /// The ELF function's index in [`ElfFunctions`], and the function.
    pub entry: u32,
    /// The ELF function at `entry`.
    pub elf: ElfFunction<'f>,
}

/// Why a DWARF function is not saved, in the order pahole's encoder checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NotSaved {
    /// A declaration (`DW_AT_declaration`), not a definition.
    Declaration,
    /// A parameter has no name (`ftype__has_arg_names`).
    UnnamedParameter,
    /// The subprogram has no name, of its own or of its origin.
    Nameless,
    /// No ELF function symbol has its name.
    NoElfSymbol,
}

/// A DWARF function as a CU's encoding met it, and whether it was saved: what an
/// [`EncodeWatch`] is shown.
pub struct SeenFunction<'f, 'a> {
    /// The input's DWARF.
    pub dwarf: &'f gimli::Dwarf<R<'a>>,
    /// Its CU.
    pub cu: &'f Cu<'a>,
    /// The CU's index in `.debug_info` order.
    pub cu_index: u32,
    /// The CU's types, which `info`'s type ids index.
    pub types: &'f CuTypes<'a>,
    /// The function, as decoded.
    pub info: &'f FunctionInfo<'a>,
    /// The ELF function's index it was saved under, or why it was not saved.
    pub saved: std::result::Result<u32, NotSaved>,
}

/// The encode stage's hook for a watcher of chosen functions (`dwarf2btf why`): the DWARF
/// functions of the names it watches, as each CU's encoding meets them. The encode stage
/// defines it so that it depends on no later stage; the functions stage's watcher extends it
/// with what that stage decides. Workers call it concurrently.
pub trait EncodeWatch: Sync {
    /// Whether functions named `name` (a DWARF name; an ELF name without its suffix) are
    /// watched.
    fn watches(&self, name: &[u8]) -> bool;

    /// A DWARF subprogram of a watched name, as decoded in its CU, and whether it was saved.
    fn seen(&self, function: &SeenFunction<'_, '_>);
}

/// A batch of CUs, encoded.
pub struct Chunk {
    /// The chunk's BTF, with chunk-local type ids.
    pub btf: Btf,
    /// Local id of the index type when this chunk holds the establishing CU.
    pub index_local: Option<u32>,
    /// DATASEC entries of this chunk's variables (chunk-local VAR ids).
    pub secinfos: Vec<PendingSecinfo>,
    /// `-V` messages, in CU order.
    pub messages: Vec<String>,
    /// CUs in the batch, skipped ones included.
    pub cus: usize,
    /// CUs skipped for their language (`--lang_exclude`).
    pub cus_skipped: usize,
    /// The worker's CPU time on this chunk, by activity.
    pub times: WorkerTimes,
}

impl<'a> EncodeContext<'a, '_> {
    fn cu(&self, index: usize) -> Result<Cu<'a>> {
        let header = self.sections.unit_header(self.headers[index], self.path)?;
        Cu::new(self.dwarf, header, self.endian == Endian::Little).map_err(|e| Error::BadDwarf {
            path: self.path.to_path_buf(),
            offset: header.offset().0 as u64,
            cause: DwarfCause::Read(e),
        })
    }

    /// `f()`, its thread CPU time added to `into` when the workers are timed.
    pub(crate) fn timed<T>(&self, into: &mut std::time::Duration, f: impl FnOnce() -> T) -> T {
        if self.time_workers {
            timed(into, f)
        } else {
            f()
        }
    }

    fn excluded(&self, cu: &Cu<'_>) -> bool {
        cu.language
            .is_some_and(|l| self.lang_exclude.contains(&l.0))
    }

    fn dwarf_error(&self, cu: &Cu<'_>, e: DecodeError) -> Error {
        Error::BadDwarf {
            path: self.path.to_path_buf(),
            offset: if e.die_offset != 0 {
                e.die_offset
            } else {
                cu.offset as u64
            },
            cause: e.cause,
        }
    }

    fn types(&self, cu: &Cu<'a>, scratch: &mut TypesScratch<'a>) -> Result<CuTypes<'a>> {
        decode_cu_types(self.dwarf, self.units, cu, self.features, scratch)
            .map_err(|e| self.dwarf_error(cu, e))
    }

    /// The ELF function a DWARF function is saved under, or why it is not saved.
    fn save_entry(&self, f: &FunctionInfo<'_>) -> std::result::Result<u32, NotSaved> {
        if f.declaration {
            Err(NotSaved::Declaration)
        } else if !f.has_arg_names {
            Err(NotSaved::UnnamedParameter)
        } else if f.name.is_empty() {
            Err(NotSaved::Nameless)
        } else {
            self.funcs.find(f.name).ok_or(NotSaved::NoElfSymbol)
        }
    }

    /// The sequential pre-scan: the first CU that has an `int` or an array (see
    /// [`IndexRole`]), with its decoded types. Usually the very first CU, so this decodes one
    /// CU.
    pub fn find_index_cu(&self) -> Result<Option<(usize, CuTypes<'a>)>> {
        for i in 0..self.headers.len() {
            let cu = self.cu(i)?;
            if self.excluded(&cu) {
                continue;
            }
            let types = self.types(&cu, &mut TypesScratch::default())?;
            if super::types::establishes_index(&types) {
                return Ok(Some((i, types)));
            }
        }
        Ok(None)
    }

    /// Decodes the types of CU `cu_index`, or takes them from the pre-scan.
    fn decode_types(
        &self,
        cu: &Cu<'a>,
        cu_index: usize,
        scratch: &mut TypesScratch<'a>,
    ) -> Result<CuTypes<'a>> {
        if self.index_cu == Some(cu_index) {
            if let Some(types) = self.prescanned.lock().take() {
                return Ok(types);
            }
        }
        self.types(cu, scratch)
    }

    /// Encodes CUs `range` into a new chunk, handing every function with an ELF symbol to
    /// `found`; `scratch` is the calling worker's.
    pub fn encode_batch(
        &self,
        range: Range<usize>,
        chunk_index: u32,
        scratch: &mut TypesScratch<'a>,
        found: &mut impl FnMut(FoundFunction<'_, 'a>),
    ) -> Result<Chunk> {
        let mut btf = Btf::new();
        btf.endian = self.endian;
        let mut chunk = Chunk {
            btf,
            index_local: None,
            secinfos: Vec::new(),
            messages: Vec::new(),
            cus: 0,
            cus_skipped: 0,
            times: WorkerTimes::default(),
        };
        for i in range {
            let cu = self.cu(i)?;
            chunk.cus += 1;
            if self.excluded(&cu) {
                chunk.cus_skipped += 1;
            } else {
                self.encode_cu(&mut chunk, &cu, i, chunk_index, scratch, found)?;
            }
            if cu.header.section() == gimli::SectionId::DebugInfo {
                (self.release)(cu.range());
            }
        }
        Ok(chunk)
    }

    fn encode_cu(
        &self,
        chunk: &mut Chunk,
        cu: &Cu<'a>,
        cu_index: usize,
        chunk_index: u32,
        scratch: &mut TypesScratch<'a>,
        found: &mut impl FnMut(FoundFunction<'_, 'a>),
    ) -> Result<()> {
        let mut times = WorkerTimes::default();
        let types = self.timed(&mut times.decode, || {
            self.decode_types(cu, cu_index, scratch)
        })?;
        if let Some((entry, reason)) = impossible_type(&types) {
            let die_offset = types.die_offset(types.dies[entry], cu.offset as u64);
            return Err(self.dwarf_error(
                cu,
                DecodeError {
                    die_offset,
                    cause: DwarfCause::Malformed(reason.into()),
                },
            ));
        }
        if self.verbose {
            chunk
                .messages
                .extend(types.dropped_atomics.iter().map(|&(die, id)| {
                    format!(
                        "atomic qualifier of {} dropped (DIE .debug_info+{:#x})",
                        types.c_name(id),
                        types.die_offset(die, cu.offset as u64)
                    )
                }));
        }
        let role = match self.index_cu {
            Some(k) if cu_index == k => IndexRole::Establish,
            Some(k) if cu_index > k => IndexRole::After,
            _ => IndexRole::Before,
        };
        let type_id_off = chunk.btf.type_cnt() - 1;
        let index = self.timed(&mut times.encode, || {
            encode_cu_types(
                &mut chunk.btf,
                &types,
                self.features,
                cu.offset as u64,
                role,
            )
        })?;
        if let Some(local) = index {
            chunk.index_local = Some(local);
        }
        if !self.funcs.is_empty() {
            let functions = self
                .timed(&mut times.decode, || {
                    decode_cu_functions(self.dwarf, cu, &types, self.arch, self.features)
                })
                .map_err(|e| self.dwarf_error(cu, e))?;
            self.timed(&mut times.save, || {
                for f in &functions {
                    let saved = self.save_entry(f);
                    if let Some(watch) = self.watch.filter(|w| w.watches(f.name)) {
                        watch.seen(&SeenFunction {
                            dwarf: self.dwarf,
                            cu,
                            cu_index: cu_index as u32,
                            types: &types,
                            info: f,
                            saved,
                        });
                    }
                    let Ok(entry) = saved else {
                        continue;
                    };
                    found(FoundFunction {
                        chunk_btf: &mut chunk.btf,
                        chunk: chunk_index,
                        cu_index: cu_index as u32,
                        type_id_off,
                        info: f,
                        entry,
                        elf: self.funcs.get(entry).expect("find returns valid indices"),
                    });
                }
            });
        }
        let vars = self
            .timed(&mut times.decode, || {
                decode_cu_variables(self.dwarf, cu, &types, self.features)
            })
            .map_err(|e| self.dwarf_error(cu, e))?;
        let msgs = self.timed(&mut times.encode, || {
            self.vars
                .encode_cu(&mut chunk.btf, &vars, type_id_off, &mut chunk.secinfos)
        })?;
        drop(vars);
        scratch.recycle(types);
        chunk.times += times;
        chunk.messages.extend(
            msgs.into_iter()
                .filter(|m| self.verbose || !m.verbose_only)
                .map(|m| m.text),
        );
        Ok(())
    }
}
