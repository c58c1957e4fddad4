//! The running kernel accepts the deduplicated vmlinux BTF, byte for byte, through
//! `bpf(BPF_BTF_LOAD)` (the kernel's full checks, resolve pass included). Skips, saying so,
//! only when the kernel refuses the call for lack of privilege.

mod common;

use common::*;

/// Loads raw BTF into the kernel; Ok(fd) or Err((errno, verifier log)).
fn btf_load(data: &[u8]) -> Result<i32, (i32, String)> {
    let mut log = vec![0u8; 16 << 20];
    // SAFETY: plain-old-data options struct; zeroed is its documented initial state, and
    // `sz` is set as libbpf's OPTS macros do.
    let mut opts: libbpf_sys::bpf_btf_load_opts = unsafe { std::mem::zeroed() };
    opts.sz = std::mem::size_of::<libbpf_sys::bpf_btf_load_opts>() as _;
    opts.log_buf = log.as_mut_ptr().cast();
    opts.log_size = log.len() as u32;
    opts.log_level = 1;
    // SAFETY: `data` and `log` outlive the call; libbpf reads `data.len()` bytes and writes
    // at most `log_size` bytes of log.
    let fd = unsafe { libbpf_sys::bpf_btf_load(data.as_ptr().cast(), data.len() as _, &mut opts) };
    if fd >= 0 {
        return Ok(fd);
    }
    let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
    Err((-fd, String::from_utf8_lossy(&log[..end]).into_owned()))
}

#[test]
fn kernel_accepts_deduplicated_vmlinux_btf() {
    let Some(vmlinux) = vmlinux() else { return };
    let out = scratch("btf_load").join("vmlinux.btf");
    let o = encode(
        &vmlinux,
        &out,
        &[KERNEL_FEATURES, "--lang_exclude=rust", "-j2"],
    );
    assert!(o.status.success(), "{}", text(&o));
    let data = std::fs::read(&out).unwrap();
    match btf_load(&data) {
        Ok(fd) => {
            // SAFETY: `fd` is a file descriptor the kernel just returned to us.
            unsafe { libc_close(fd) };
        }
        Err((errno, _)) if errno == 1 || errno == 13 => {
            eprintln!(
                "SKIP: the kernel refused BPF_BTF_LOAD for lack of privilege (errno {errno})"
            );
        }
        Err((errno, log)) => {
            let tail: String = log.lines().rev().take(20).collect::<Vec<_>>().join("\n");
            panic!("BPF_BTF_LOAD rejected the BTF (errno {errno}); log tail:\n{tail}");
        }
    }
}

/// The check can fail: a BTF with a struct member pointing at a nonexistent type is refused.
#[test]
fn kernel_rejects_corrupted_btf() {
    use dwarf2btf::btf::{kinds, write, Btf, Kind};
    let mut btf = Btf::new();
    let int = btf.add_int(b"int", 4, kinds::INT_SIGNED).unwrap();
    btf.add_composite(Kind::Struct, Some(b"s"), 4).unwrap();
    btf.add_field(Some(b"a"), int + 41, 0, 0).unwrap();
    let data = write::to_bytes(&btf);
    match btf_load(&data) {
        Ok(_) => panic!("the kernel accepted a member of a nonexistent type"),
        Err((errno, _)) if errno == 1 || errno == 13 => {
            eprintln!("SKIP: BPF_BTF_LOAD not permitted (errno {errno})");
        }
        Err((errno, log)) => assert!(errno == 22, "errno {errno}: {log}"),
    }
}

extern "C" {
    #[link_name = "close"]
    fn libc_close(fd: i32) -> i32;
}
