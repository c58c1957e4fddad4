//! The target's argument-passing ABI, from the ELF `e_machine`: how many parameters travel in
//! registers, which DWARF registers those are, and whether an aggregate may take two of them.
//!
//! Ported from pahole's `dwarf_loader.c` (dwarves 1436dafff5c2): `arch__nr_register_params`,
//! `arch__set_register_params` and `arch__agg_use_two_regs`. The DWARF stage reads these facts
//! to decide which parameters sit where the ABI says (`crate::dwarf::functions`).

/// The argument-passing facts of a target, from its ELF `e_machine`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arch {
    /// How many parameters the ABI passes in registers (`arch__nr_register_params`); 0 for
    /// an unknown machine, which turns most of the location analysis off.
    pub nr_register_params: usize,
    /// DWARF register numbers of the argument registers, in order
    /// (`arch__set_register_params`); empty where pahole has no table (MIPS, PowerPC,
    /// RISC-V, SPARC, ARC), so no register ever matches an expected one there.
    pub regs: &'static [u16],
    /// Aggregates up to two registers wide travel in two registers (`arch__agg_use_two_regs`;
    /// false on s390 only).
    pub agg_use_two_regs: bool,
}

impl Arch {
    /// pahole's tables for `e_machine`.
    pub fn from_elf_machine(e_machine: u16) -> Arch {
        const EM_SPARC: u16 = 2;
        const EM_MIPS: u16 = 8;
        const EM_PPC: u16 = 20;
        const EM_PPC64: u16 = 21;
        const EM_S390: u16 = 22;
        const EM_ARM: u16 = 40;
        const EM_SPARCV9: u16 = 43;
        const EM_ARC: u16 = 45;
        const EM_X86_64: u16 = 62;
        const EM_AARCH64: u16 = 183;
        const EM_RISCV: u16 = 243;
        // rdi, rsi, rdx, rcx, r8, r9.
        const X86_64: &[u16] = &[5, 4, 1, 2, 8, 9];
        const S390: &[u16] = &[2, 3, 4, 5, 6];
        const ARM: &[u16] = &[0, 1, 2, 3, 4, 5, 6, 7];
        let nr_register_params = match e_machine {
            EM_S390 => 5,
            EM_SPARC | EM_SPARCV9 | EM_X86_64 => 6,
            EM_AARCH64 | EM_ARC | EM_ARM | EM_MIPS | EM_PPC | EM_PPC64 | EM_RISCV => 8,
            _ => 0,
        };
        let regs = match e_machine {
            EM_S390 => S390,
            EM_X86_64 => X86_64,
            EM_ARM | EM_AARCH64 => ARM,
            _ => &[],
        };
        Arch {
            nr_register_params,
            regs,
            agg_use_two_regs: e_machine != EM_S390,
        }
    }

    /// `cu->register_params[idx]` as a DWARF register number, [`UNKNOWN_REG`] when there is
    /// none.
    pub fn reg(&self, idx: usize) -> i32 {
        self.regs.get(idx).map_or(UNKNOWN_REG, |&r| r as i32)
    }
}

/// pahole's `PARAMETER_UNKNOWN_REG`: no register (an argument slot without a known register,
/// or a parameter whose location names none).
pub const UNKNOWN_REG: i32 = -1;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arch_tables() {
        let x86 = Arch::from_elf_machine(62);
        assert_eq!(
            (x86.nr_register_params, x86.regs, x86.agg_use_two_regs),
            (6, &[5u16, 4, 1, 2, 8, 9][..], true)
        );
        assert_eq!(x86.reg(5), 9);
        assert_eq!(x86.reg(6), UNKNOWN_REG);
        let arm64 = Arch::from_elf_machine(183);
        assert_eq!((arm64.nr_register_params, arm64.regs.len()), (8, 8));
        let s390 = Arch::from_elf_machine(22);
        assert_eq!(
            (s390.nr_register_params, s390.regs, s390.agg_use_two_regs),
            (5, &[2u16, 3, 4, 5, 6][..], false)
        );
        let riscv = Arch::from_elf_machine(243);
        assert_eq!((riscv.nr_register_params, riscv.regs.len()), (8, 0));
        assert_eq!(riscv.reg(0), UNKNOWN_REG);
        assert_eq!(Arch::from_elf_machine(3).nr_register_params, 0);
    }
}
