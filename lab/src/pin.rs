//! Pinning replay threads: thread *i* pins itself to CPU *i* mod the CPU count
//! (`sched_setaffinity`, Linux); a thread that cannot be pinned warns once and runs unpinned.

use std::io;
use std::num::NonZeroUsize;
use std::sync::Once;

/// The CPU replay thread `thread` pins itself to: `thread` mod `cpus`.
pub fn cpu_for(thread: usize, cpus: NonZeroUsize) -> usize {
    thread % cpus
}

/// Pins the calling thread to `cpu` (`sched_setaffinity`).
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
pub fn pin_to(cpu: usize) -> io::Result<()> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("CPU {cpu} is beyond CPU_SETSIZE"),
        ));
    }
    // SAFETY: `cpu_set_t` is a plain bit array; all zeroes is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid `cpu_set_t`, and `cpu` < `CPU_SETSIZE`, its bit count (checked
    // above).
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: pid 0 is the calling thread; `set` is an initialized `cpu_set_t` and the size
    // passed is its own, so the kernel reads only within it.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Pinning is implemented for Linux only.
#[cfg(not(target_os = "linux"))]
pub fn pin_to(_cpu: usize) -> io::Result<()> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "thread pinning is implemented for Linux only",
    ))
}

/// Pins replay thread `thread` to [`cpu_for`] it; on failure, warns (once per process) and
/// returns false: the thread runs unpinned and the run is reported unpinned.
pub fn pin_thread(thread: usize, cpus: NonZeroUsize) -> bool {
    static WARNED: Once = Once::new();
    let cpu = cpu_for(thread, cpus);
    match pin_to(cpu) {
        Ok(()) => true,
        Err(e) => {
            WARNED.call_once(|| {
                eprintln!(
                    "dwarf2btf-lab: warning: cannot pin replay thread {thread} to CPU {cpu} \
                     ({e}); running unpinned, and such runs are marked pinned=0 in the CSV"
                );
            });
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_i_goes_to_cpu_i_mod_the_cpu_count() {
        let two = NonZeroUsize::new(2).unwrap();
        let cpus: Vec<usize> = (0..5).map(|i| cpu_for(i, two)).collect();
        assert_eq!(cpus, [0, 1, 0, 1, 0]);
        assert_eq!(cpu_for(7, NonZeroUsize::MIN), 0);
        assert_eq!(cpu_for(3, NonZeroUsize::new(64).unwrap()), 3);
    }
}
