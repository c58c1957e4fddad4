//! The running kernel's verdict on BTF (`dwarf2btf verify --kernel`, and the tests that compare
//! [`super::verify`] with the kernel): `bpf(BPF_BTF_LOAD)` runs the kernel's full checks on a
//! blob (header, every kind's meta check, type tags, the resolve pass) and returns a file
//! descriptor when it accepts it.
//!
//! The load is tried without a verifier log first: a multi-MiB BTF writes a line per type and
//! member, so a log is only asked for to explain a rejection, and grown (up to [`MAX_LOG`])
//! until it holds the kernel's last words.
//!
//! `BPF_BTF_LOAD` takes no base BTF, so split BTF is checked as [`join_split`] makes it: the
//! base's types and strings followed by the split's, one standalone blob in which every type id
//! and string offset keeps its meaning, under a header like the base's (with its kind layout
//! section, if it has one).
//!
//! Only Linux has the call; it needs CAP_BPF (or CAP_SYS_ADMIN, or root). Elsewhere, and when
//! the kernel refuses for lack of privilege, [`load`] says so with [`LoadError::Refused`] or
//! [`LoadError::Unsupported`] rather than a verdict.

use std::os::fd::OwnedFd;

use super::verify::KernelVersion;
use crate::btf::read::{self, Header};
use crate::btf::write::{HEADER_LEN, LAYOUT_HEADER_LEN};
use crate::btf::Endian;
use crate::error::{BtfError, JoinError, Result};

/// The largest verifier log asked for (the kernel's `BPF_BTF_LOAD` takes BTF up to 16 MiB; the
/// log of a vmlinux-sized blob is a few MiB).
pub const MAX_LOG: usize = 16 << 20;
/// The first log size tried after a rejection.
const FIRST_LOG: usize = 1 << 20;

/// `BPF_BTF_LOAD` from `include/uapi/linux/bpf.h`.
#[cfg(target_os = "linux")]
const BPF_BTF_LOAD: libc::c_long = 18;
/// `ENOSPC`: the kernel's log did not fit the buffer.
const ENOSPC: i32 = 28;

/// Why the kernel gave no verdict, or the verdict was no.
#[derive(Debug)]
pub enum LoadError {
    /// The kernel refused the call for lack of privilege (EPERM or EACCES): run as root.
    Refused(i32),
    /// The call does not exist here (not Linux, or a kernel without `CONFIG_BPF_SYSCALL`).
    Unsupported(String),
    /// The kernel checked the BTF and rejected it.
    Rejected(Rejection),
}

/// The kernel's reasons for rejecting a BTF.
#[derive(Debug, Clone)]
pub struct Rejection {
    /// The errno of the load without a log (the kernel's verdict, e.g. EINVAL).
    pub errno: i32,
    /// The verifier log of the retry with a log.
    pub log: String,
    /// The log did not fit [`MAX_LOG`] bytes: newer kernels then keep its end, 6.1 its start.
    pub log_truncated: bool,
}

impl Rejection {
    /// The log's relevant end: from the last line naming a type (`[id] KIND ...`, followed by
    /// the member lines and the reason) when that is among the last `n` non-empty lines, else
    /// those `n` lines (a header or string-section error names no type).
    pub fn log_tail(&self, n: usize) -> Vec<&str> {
        let mut tail: Vec<&str> = self
            .log
            .lines()
            .rev()
            .filter(|l| !l.trim().is_empty())
            .take(n)
            .collect();
        if let Some(at) = tail.iter().position(|l| l.starts_with('[')) {
            tail.truncate(at + 1);
        }
        tail.reverse();
        tail
    }
}

/// Text for an errno: "Invalid argument (os error 22)".
pub fn errno_text(errno: i32) -> String {
    std::io::Error::from_raw_os_error(errno).to_string()
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoadError::Refused(errno) => write!(
                f,
                "the kernel refused BPF_BTF_LOAD: {}; it needs root (CAP_BPF or CAP_SYS_ADMIN)",
                errno_text(*errno)
            ),
            LoadError::Unsupported(why) => write!(f, "BPF_BTF_LOAD is not available: {why}"),
            LoadError::Rejected(r) => write!(f, "rejected: {}", errno_text(r.errno)),
        }
    }
}

/// The release of the running kernel (`uname -r`), when it can be read.
pub fn release() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .ok()
        .map(|s| s.trim().to_string())
}

/// The running kernel's `MAJOR.MINOR` (from [`release`]), when it can be read: the release
/// whose rules [`super::verify`] applies to agree with [`load`].
pub fn version() -> Option<KernelVersion> {
    release()?.parse().ok()
}

/// Loads raw BTF (the host's byte order) into the running kernel: the descriptor of the loaded
/// object (closed on drop) when the kernel accepts it.
pub fn load(data: &[u8]) -> std::result::Result<OwnedFd, LoadError> {
    let errno = match btf_load(data, None) {
        Ok(fd) => return Ok(fd),
        Err(errno) => errno,
    };
    match errno {
        1 | 13 => return Err(LoadError::Refused(errno)),
        38 => {
            return Err(LoadError::Unsupported(
                "the kernel has no bpf() system call (ENOSYS)".into(),
            ))
        }
        _ => {}
    }
    let mut size = FIRST_LOG;
    loop {
        let mut log = vec![0u8; size];
        let result = btf_load(data, Some(&mut log));
        let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
        let text = String::from_utf8_lossy(&log[..end]).into_owned();
        match result {
            // Accepted on the retry: whatever made the first call fail has passed.
            Ok(fd) => return Ok(fd),
            Err(again) => {
                // Newer kernels say ENOSPC when the log overflowed (keeping its end); before
                // 6.4 the log keeps its start and fills up silently.
                let overflowed = again == ENOSPC || end + 1 >= size;
                if overflowed && size < MAX_LOG {
                    size = (size * 4).min(MAX_LOG);
                    continue;
                }
                return Err(LoadError::Rejected(Rejection {
                    errno,
                    log_truncated: overflowed,
                    log: text,
                }));
            }
        }
    }
}

/// One `bpf(BPF_BTF_LOAD)` call, with a level-1 log into `log` when given.
#[cfg(target_os = "linux")]
fn btf_load(data: &[u8], log: Option<&mut [u8]>) -> std::result::Result<OwnedFd, i32> {
    use std::os::fd::FromRawFd;

    /// The `BPF_BTF_LOAD` member of `union bpf_attr`, up to `btf_log_true_size` (which kernels
    /// before 6.4 do not know; it must be zero going in).
    #[repr(C, align(8))]
    struct BtfLoadAttr {
        btf: u64,
        btf_log_buf: u64,
        btf_size: u32,
        btf_log_size: u32,
        btf_log_level: u32,
        btf_log_true_size: u32,
    }
    let (log_buf, log_size) = match log {
        Some(buf) => (
            buf.as_mut_ptr() as u64,
            buf.len().min(u32::MAX as usize) as u32,
        ),
        None => (0, 0),
    };
    let Ok(btf_size) = u32::try_from(data.len()) else {
        return Err(7); // E2BIG, as the kernel says for anything over 16 MiB
    };
    let mut attr = BtfLoadAttr {
        btf: data.as_ptr() as u64,
        btf_log_buf: log_buf,
        btf_size,
        btf_log_size: log_size,
        btf_log_level: (log_size > 0) as u32,
        btf_log_true_size: 0,
    };
    // SAFETY: `attr` is a valid, fully initialised prefix of `union bpf_attr` whose size is
    // passed along; the kernel reads `btf_size` bytes from `data` and writes at most
    // `btf_log_size` bytes into the log buffer, both borrowed for the whole call.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            BPF_BTF_LOAD,
            &mut attr as *mut BtfLoadAttr,
            std::mem::size_of::<BtfLoadAttr>(),
        )
    };
    if ret < 0 {
        return Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0));
    }
    // SAFETY: on success the kernel returned a new file descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(ret as i32) })
}

#[cfg(not(target_os = "linux"))]
fn btf_load(_data: &[u8], _log: Option<&mut [u8]>) -> std::result::Result<OwnedFd, i32> {
    Err(38)
}

/// Split BTF appended to its base as one standalone blob: the base's types then the split's,
/// the base's strings then the split's. Ids and string offsets of split BTF continue the
/// base's, so each keeps its meaning, and the kernel's check of the whole covers the split
/// part as it would on a module load.
///
/// The header is the base's kind, as a libbpf BTF made like the base would write the union:
/// the classic 24 bytes for a base with a 24-byte header; libbpf 1.8's 32 bytes for a base
/// with the longer header (pahole HEAD's), then with the base's kind layout section (or, when
/// only the split has one, the split's) between the types and the strings, where libbpf puts
/// it. A kernel before 7.1 therefore refuses the joined blob exactly when it would refuse the
/// base.
pub fn join_split(base: &[u8], split: &[u8]) -> Result<Vec<u8>> {
    let bh = read::parse_header(base).map_err(JoinError::Base)?;
    let sh = read::parse_header(split).map_err(JoinError::Split)?;
    if bh.endian != sh.endian {
        return Err(JoinError::ByteOrders.into());
    }
    let layout = match layout_section(base, &bh).map_err(JoinError::Base)? {
        [] => layout_section(split, &sh).map_err(JoinError::Split)?,
        l => l,
    };
    let extended = bh.hdr_len >= LAYOUT_HEADER_LEN || !layout.is_empty();
    let type_len = bh.type_len as u64 + sh.type_len as u64;
    let str_len = bh.str_len as u64 + sh.str_len as u64;
    let sizes = (
        u32::try_from(type_len),
        u32::try_from(str_len),
        u32::try_from(type_len + layout.len() as u64 + str_len),
    );
    let (Ok(type_len), Ok(str_len), Ok(_)) = sizes else {
        return Err(JoinError::TooLarge.into());
    };
    let layout_len = layout.len() as u32;
    let hdr_len = if extended {
        LAYOUT_HEADER_LEN
    } else {
        HEADER_LEN
    };
    let mut words = vec![hdr_len, 0, type_len, type_len + layout_len, str_len];
    if extended {
        // layout_off, layout_len: both 0 without the section, as libbpf leaves them.
        let layout_off = if layout.is_empty() { 0 } else { type_len };
        words.extend([layout_off, layout_len]);
    }
    let mut out = Vec::with_capacity((hdr_len + type_len + layout_len + str_len) as usize);
    out.extend_from_slice(&base[..4]); // magic, version, flags
    for word in words {
        out.extend_from_slice(&match bh.endian {
            Endian::Little => word.to_le_bytes(),
            Endian::Big => word.to_be_bytes(),
        });
    }
    for (data, h) in [(base, &bh), (split, &sh)] {
        out.extend_from_slice(section(data, h, h.type_off, h.type_len));
    }
    out.extend_from_slice(layout);
    for (data, h) in [(base, &bh), (split, &sh)] {
        out.extend_from_slice(section(data, h, h.str_off, h.str_len));
    }
    Ok(out)
}

/// The kind layout section of BTF with a header of at least 32 bytes (`layout_off` and
/// `layout_len` at bytes 24 and 28); empty for a shorter header or a zero `layout_len`.
fn layout_section<'a>(data: &'a [u8], h: &Header) -> Result<&'a [u8], BtfError> {
    if h.hdr_len < LAYOUT_HEADER_LEN {
        return Ok(&[]);
    }
    // In bounds: parse_header checked that the header fits the data.
    let word_at = |off| h.endian.u32_at(data, off).unwrap_or(0);
    let (off, len) = (word_at(24), word_at(28));
    let start = h.hdr_len as u64 + off as u64;
    let end = start + len as u64;
    if end > data.len() as u64 {
        return Err(BtfError::LayoutPastEnd { off, len });
    }
    Ok(&data[start as usize..end as usize])
}

/// A section of BTF whose header [`read::parse_header`] checked (so it is in bounds).
fn section<'a>(data: &'a [u8], h: &Header, off: u32, len: u32) -> &'a [u8] {
    let start = h.hdr_len as usize + off as usize;
    &data[start..start + len as usize]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::btf::write::HeaderForm;
    use crate::btf::{kinds, write, Btf, Kind};
    use crate::error::Error;
    use crate::toolbox::verify;
    use std::sync::Arc;

    #[test]
    fn joined_split_btf_reads_back_with_the_same_ids_and_names() {
        let mut base = Btf::new();
        let int = base.add_int(b"int", 4, kinds::INT_SIGNED).unwrap();
        let base_bytes = write::to_bytes(&base);
        let base = Arc::new(read::parse(&base_bytes, None).unwrap());
        let mut split = Btf::new_split(base.clone());
        let s = split.add_composite(Kind::Struct, Some(b"s"), 4).unwrap();
        split.add_field(Some(b"a"), int, 0, 0).unwrap();
        let split_bytes = write::to_bytes(&split);

        let joined = read::parse(&join_split(&base_bytes, &split_bytes).unwrap(), None).unwrap();
        let reread = read::parse(&split_bytes, Some(base)).unwrap();
        assert_eq!(joined.type_cnt(), reread.type_cnt());
        for id in 1..joined.type_cnt() {
            let (a, b) = (
                joined.type_by_id(id).unwrap(),
                reread.type_by_id(id).unwrap(),
            );
            assert_eq!(a.kind(), b.kind());
            assert_eq!(joined.name(a.name_off()), reread.name(b.name_off()));
        }
        assert_eq!(joined.name(joined.type_by_id(s).unwrap().name_off()), "s");
    }

    /// A base and its split, written with the headers given: (base bytes, split bytes).
    fn pair(base_form: HeaderForm, split_form: HeaderForm) -> (Vec<u8>, Vec<u8>) {
        let mut base = Btf::new();
        let int = base.add_int(b"int", 4, kinds::INT_SIGNED).unwrap();
        let base_bytes = write::to_bytes_as(&base, base_form);
        let base = Arc::new(read::parse(&base_bytes, None).unwrap());
        let mut split = Btf::new_split(base);
        split.add_composite(Kind::Struct, Some(b"s"), 4).unwrap();
        split.add_field(Some(b"a"), int, 0, 0).unwrap();
        (base_bytes, write::to_bytes_as(&split, split_form))
    }

    fn word(data: &[u8], off: usize) -> u32 {
        u32::from_ne_bytes(data[off..off + 4].try_into().unwrap())
    }

    /// With pahole HEAD's `layout` output (a base with the 32-byte header and the kind layout
    /// section, a split with the 32-byte header and no section) the joined blob keeps the
    /// base's header and layout section, and the kernels' rules judge it as they judge the
    /// base: valid for 7.2, the header refused before 7.1.
    #[test]
    fn joined_blob_keeps_the_base_layout_header() {
        let extended = |layout| HeaderForm::Extended { layout };
        let (base, split) = pair(extended(true), extended(false));
        let joined = join_split(&base, &split).unwrap();
        assert_eq!(word(&joined, 4), LAYOUT_HEADER_LEN);
        let (bh, jh) = (
            read::parse_header(&base).unwrap(),
            read::parse_header(&joined).unwrap(),
        );
        let base_layout = layout_section(&base, &bh).unwrap();
        assert!(!base_layout.is_empty());
        assert_eq!(layout_section(&joined, &jh).unwrap(), base_layout);
        assert_eq!(
            word(&joined, 24),
            jh.type_len,
            "layout right after the types"
        );
        let judge = |v: &str| {
            let target = verify::Target::Kernel(v.parse().unwrap());
            verify::judge(&joined, None, target).problems
        };
        assert!(judge("7.2").is_empty(), "{:?}", judge("7.2"));
        let old: Vec<_> = judge("6.18").iter().map(|p| p.rule).collect();
        assert_eq!(old, ["H2-hdr-extra"]);
        let reread = read::parse(&joined, None).unwrap();
        assert_eq!(reread.type_cnt(), 3);

        // A base with the 32-byte header and no layout section: the same header, zero layout
        // fields, which every kernel takes.
        let (base, split) = pair(extended(false), extended(false));
        let joined = join_split(&base, &split).unwrap();
        assert_eq!(word(&joined, 4), LAYOUT_HEADER_LEN);
        assert_eq!((word(&joined, 24), word(&joined, 28)), (0, 0));
        for v in ["6.1", "7.2"] {
            let target = verify::Target::Kernel(v.parse().unwrap());
            assert!(verify::judge(&joined, None, target).valid(), "{v}");
        }

        // A classic base: the classic header, whatever the split's.
        let (base, split) = pair(HeaderForm::Classic, extended(false));
        assert_eq!(word(&join_split(&base, &split).unwrap(), 4), HEADER_LEN);
    }

    /// A layout section past the end of the data is one clear error, not a panic.
    #[test]
    fn a_layout_section_past_the_end_is_an_error() {
        let (mut base, split) = pair(HeaderForm::Extended { layout: true }, HeaderForm::Classic);
        let past = (base.len() as u32).to_ne_bytes();
        base[28..32].copy_from_slice(&past);
        let e = join_split(&base, &split).unwrap_err();
        assert!(
            matches!(
                e,
                Error::Join(JoinError::Base(BtfError::LayoutPastEnd { .. }))
            ),
            "{e:?}"
        );
        let e = e.to_string();
        assert!(
            e.starts_with("invalid BTF: base: the kind layout section"),
            "{e}"
        );
    }

    #[test]
    fn rejection_tail_starts_at_the_failing_type() {
        let r = |log: &str| Rejection {
            errno: 22,
            log: log.into(),
            log_truncated: false,
        };
        let typed = r("[1] INT int\n[2] STRUCT s size=4 vlen=1\n\ta type_id=9 Invalid type_id\n\n");
        assert_eq!(
            typed.log_tail(8),
            [
                "[2] STRUCT s size=4 vlen=1",
                "\ta type_id=9 Invalid type_id"
            ]
        );
        let header = r("magic: 0xeb9f\nversion: 1\n\nInvalid string section\n");
        assert_eq!(header.log_tail(2), ["version: 1", "Invalid string section"]);
    }
}
