//! What a fatal signal leaves behind: nothing. While an output's temporary file exists, SIGINT,
//! SIGTERM and SIGHUP remove it before the process dies of the signal as it would have; a
//! SIGBUS (a mapped input truncated by someone else while it is read) removes it too and ends
//! the run with one line saying so, instead of a bare "Bus error".
//!
//! The handlers touch only async-signal-safe calls (`unlink`, `write`, `signal`, `raise`,
//! `_exit`) and one atomic pointer: the temporary file's path, as a C string. Whoever swaps a
//! path out of the pointer owns it: a handler (which never frees it: the process ends), or
//! the guard that registered it, which frees it when the output is done. Neither can free a
//! string the other still reads.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::Once;

/// The temporary file a signal must remove, or null.
static TEMP: AtomicPtr<libc::c_char> = AtomicPtr::new(std::ptr::null_mut());

/// Said on SIGBUS (a mapped file shrank under the process).
const SIGBUS_LINE: &[u8] =
    b"dwarf2btf: an input file was truncated while it was being read (SIGBUS)\n";

/// While alive, a fatal signal removes the temporary file `path`.
pub(crate) struct RemoveOnSignal(());

/// Installs the handlers (once; later calls do nothing). The encoder calls it before it maps
/// its input, so that a truncated input is reported, not only a temporary file removed.
pub fn install() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let handler = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
        for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGBUS] {
            // SAFETY: `on_signal` is an `extern "C" fn(c_int)`, the handler type signal()
            // takes, and it only makes async-signal-safe calls (module docs).
            unsafe { libc::signal(sig, handler) };
        }
    });
}

/// Registers `tmp` as the file a fatal signal removes (installing the handlers if need be).
pub(crate) fn remove_on_signal(tmp: &Path) -> RemoveOnSignal {
    install();
    if let Ok(c) = CString::new(tmp.as_os_str().as_bytes()) {
        free_path(TEMP.swap(c.into_raw(), Ordering::SeqCst));
    }
    RemoveOnSignal(())
}

impl Drop for RemoveOnSignal {
    fn drop(&mut self) {
        free_path(TEMP.swap(std::ptr::null_mut(), Ordering::SeqCst));
    }
}

/// Frees a path swapped out of [`TEMP`] (null: a handler took it, or there was none).
fn free_path(path: *mut libc::c_char) {
    if !path.is_null() {
        // SAFETY: every non-null value of TEMP comes from `CString::into_raw`, and the swap
        // that returned it made the caller its only owner (handlers swap before they read).
        drop(unsafe { CString::from_raw(path) });
    }
}

extern "C" fn on_signal(sig: libc::c_int) {
    let tmp = TEMP.swap(std::ptr::null_mut(), Ordering::SeqCst);
    if !tmp.is_null() {
        // SAFETY: `tmp` came from `CString::into_raw`, and the swap made this handler its
        // owner, so no one frees it: a valid NUL-terminated string; unlink is
        // async-signal-safe.
        unsafe { libc::unlink(tmp) };
    }
    if sig == libc::SIGBUS {
        // SAFETY: write and _exit are async-signal-safe; the buffer is a static byte string.
        // Returning would fault again on the same access.
        unsafe {
            libc::write(2, SIGBUS_LINE.as_ptr().cast(), SIGBUS_LINE.len());
            libc::_exit(2);
        }
    }
    // SAFETY: signal and raise are async-signal-safe: the default action, re-raised, ends the
    // process as the signal would have, so the caller sees the usual status.
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
        libc::raise(sig);
    }
}
