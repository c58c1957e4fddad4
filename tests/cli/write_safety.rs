//! Output writes that cannot lose data (src/output): when a write fails — a full file system,
//! the file size limit, a read-only directory — or the process is killed while writing, the
//! input (for `-J FILE`) and an existing detached output are byte-identical to what they
//! were, the error is one line with a non-zero exit, and no temporary file is left (after
//! SIGKILL one may be, named `.NAME.btf.PID`: nothing can remove it then).

use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use crate::common::*;

/// Set in the environment of a test run again inside its own mount namespace.
const IN_MOUNT_NAMESPACE: &str = "DWARF2BTF_TEST_IN_MOUNT_NAMESPACE";

/// Whether the calling test, `test`, is to go on here: true inside a private mount namespace
/// (`unshare --mount`), where its tmpfs mounts end with the process however it ends (a
/// killed run leaves nothing mounted on the machine). Outside one, the test runs itself
/// again in one (this binary, `--exact test`), checks that it passed there, and is done:
/// false. Where namespaces are not permitted, the skip is recorded and the answer is false.
fn in_own_mount_namespace(test: &str) -> bool {
    if std::env::var_os(IN_MOUNT_NAMESPACE).is_some() {
        return true;
    }
    let exe = std::env::current_exe().unwrap();
    // The harness names a test by its path below the crate root: `write_safety::TEST`.
    let module = module_path!().split_once("::").map_or("", |(_, m)| m);
    let path = format!("{module}::{test}");
    let o = Command::new("unshare")
        .args(["--mount", "--propagation", "private"])
        .arg(&exe)
        .args(["--exact", &path, "--nocapture", "--test-threads=1"])
        .env(IN_MOUNT_NAMESPACE, "1")
        .output();
    match o {
        Ok(o) if o.status.success() => {
            let out = text(&o);
            print!("{out}");
            assert!(
                out.contains("test result: ok. 1 passed"),
                "{test} did not run in its own mount namespace:\n{out}"
            );
        }
        Ok(o) if String::from_utf8_lossy(&o.stderr).starts_with("unshare: ") => {
            record_skip(&format!(
                "{test}: no private mount namespace: {}",
                text(&o).trim()
            ));
        }
        Ok(o) => panic!("{test}, in its own mount namespace:\n{}", text(&o)),
        Err(e) => record_skip(&format!("{test}: cannot run unshare: {e}")),
    }
    false
}

/// A tmpfs mounted for one test (in its own mount namespace: [`in_own_mount_namespace`]),
/// unmounted when dropped.
struct Tmpfs(PathBuf);

impl Tmpfs {
    /// Mounts a tmpfs of `size` bytes on a fresh scratch directory `name`; `None` (a visible
    /// skip) when mounting is not permitted here.
    fn mount(what: &str, name: &str, size: usize) -> Option<Tmpfs> {
        assert!(
            std::env::var_os(IN_MOUNT_NAMESPACE).is_some(),
            "{what}: a tmpfs is mounted only in a test's own mount namespace"
        );
        let dir = scratch(name);
        let o = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&dir)
            .output();
        match o {
            Ok(o) if o.status.success() => Some(Tmpfs(dir)),
            Ok(o) => {
                record_skip(&format!(
                    "{what}: cannot mount a tmpfs: {}",
                    text(&o).trim()
                ));
                None
            }
            Err(e) => {
                record_skip(&format!("{what}: cannot run mount: {e}"));
                None
            }
        }
    }

    fn remount_read_only(&self) {
        run_ok(
            Command::new("mount")
                .args(["-o", "remount,ro"])
                .arg(&self.0),
        );
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).output();
    }
}

/// The files in `dir` whose names start with a dot: the temporary files.
fn temp_files(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect()
}

/// A failed run: exit 2, one `dwarf2btf: ` line on stderr containing `expect`; returns it.
fn one_error_line(o: &Output, expect: &str) -> String {
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("dwarf2btf: "), "{stderr}");
    assert!(stderr.contains(expect), "expected '{expect}' in: {stderr}");
    stderr
}

/// The fixture every test here writes from.
fn input_bytes() -> Vec<u8> {
    let fx = fixtures().iter().find(|f| f.name == "gcc-O2-g").unwrap();
    std::fs::read(&fx.path).unwrap()
}

/// `-J FILE` in place and `--btf_encode_detached=OUT` over an existing OUT, in `dir`, both
/// failing with `expect`; then the input and OUT are unchanged and no temporary file is left.
/// `wrap` runs the command (through a shell that sets a limit, say).
fn check_failed_writes(dir: &Path, expect: &str, wrap: &dyn Fn(&mut Command) -> Output) {
    let input = dir.join("input.o");
    let out = dir.join("out.btf");
    let before = std::fs::read(&input).unwrap();
    let old_out = std::fs::read(&out).unwrap();
    let in_place = wrap(Command::new(bin()).arg("-J").arg(&input));
    let line = one_error_line(&in_place, expect);
    assert!(line.contains(&input.display().to_string()), "{line}");
    let detached = wrap(
        Command::new(bin())
            .arg("-J")
            .arg(format!("--btf_encode_detached={}", out.display()))
            .arg(&input),
    );
    let line = one_error_line(&detached, expect);
    assert!(line.contains(&out.display().to_string()), "{line}");
    assert!(
        std::fs::read(&input).unwrap() == before,
        "the input was modified"
    );
    assert!(
        std::fs::read(&out).unwrap() == old_out,
        "the existing output was modified"
    );
    assert_eq!(
        temp_files(dir),
        Vec::<String>::new(),
        "temporary files left"
    );
}

/// The input and an old output in `dir`.
fn populate(dir: &Path) {
    std::fs::write(dir.join("input.o"), input_bytes()).unwrap();
    std::fs::write(dir.join("out.btf"), b"an older output, to be kept\n").unwrap();
}

/// A full file system (a tmpfs filled up): ENOSPC while writing the temporary file.
#[test]
fn full_file_system() {
    let what = "full_file_system";
    if !in_own_mount_namespace(what) {
        return;
    }
    let Some(fs) = Tmpfs::mount(what, "write_full", 256 << 10) else {
        return;
    };
    populate(&fs.0);
    // Fill what is left.
    let mut filler = std::fs::File::create(fs.0.join("filler")).unwrap();
    let block = vec![0u8; 4096];
    while filler.write_all(&block).is_ok() {}
    drop(filler);
    check_failed_writes(&fs.0, "No space left on device", &|c| run(c));
}

/// The file size limit (RLIMIT_FSIZE, `ulimit -f`) below what the output needs, with
/// SIGXFSZ ignored as a build system may: EFBIG while writing the temporary file.
#[test]
fn file_size_limit() {
    let dir = scratch("write_fsize");
    for f in temp_files(&dir) {
        std::fs::remove_file(dir.join(f)).unwrap();
    }
    populate(&dir);
    // In 1024-byte blocks: the raw BTF (several KB) and the rewritten input do not fit.
    check_failed_writes(&dir, "File too large", &|c| {
        let program = c.get_program().to_owned();
        let args: Vec<_> = c.get_args().map(|a| a.to_owned()).collect();
        run(Command::new("bash")
            .args(["-c", "trap '' XFSZ; ulimit -f 2; exec \"$@\"", "bash"])
            .arg(program)
            .args(args))
    });
}

/// A read-only directory (a read-only tmpfs: root writes through mode bits): no temporary file
/// can be created.
#[test]
fn read_only_directory() {
    let what = "read_only_directory";
    if !in_own_mount_namespace(what) {
        return;
    }
    let Some(fs) = Tmpfs::mount(what, "write_ro", 1 << 20) else {
        return;
    };
    populate(&fs.0);
    fs.remount_read_only();
    check_failed_writes(&fs.0, "Read-only file system", &|c| run(c));
}

/// SIGKILL, which no process can act on, while the temporary file is complete and its flush
/// held back (strace's delay injection, so the moment does not depend on how fast the copy
/// is): the input is byte-identical to the original, and what is left beside it is only a file
/// named as a temporary file. A run let finish gives the complete new file and nothing else.
#[test]
fn killed_while_writing() {
    let what = "killed_while_writing";
    let work = scratch("write_killed_run");
    let target = work.join("big.o");
    let original = input_bytes();
    std::fs::write(&target, &original).unwrap();
    run_ok(Command::new(bin()).arg("-J").arg(&target));
    let complete = std::fs::read(&target).unwrap();
    assert!(complete != original);
    assert_eq!(temp_files(&work), Vec::<String>::new());

    std::fs::write(&target, &original).unwrap();
    let args = ["-J".as_ref(), target.as_os_str()];
    let Some(mut child) = held_at(what, "fsync:delay_enter=2000000", None, &args) else {
        return;
    };
    let pid = writer_of_temp_file(&work);
    // SAFETY: kill has no memory-safety preconditions.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
    assert_eq!(child.wait().unwrap().signal(), Some(libc::SIGKILL));
    assert_eq!(
        std::fs::read(&target).unwrap(),
        original,
        "the input changed"
    );
    let leftovers = temp_files(&work);
    assert_eq!(leftovers.len(), 1, "{leftovers:?}");
    assert!(leftovers[0].starts_with(".big.o.btf."), "{leftovers:?}");
}

/// What `strace` saw of one run: the calls that make a write durable, in order.
fn traced(what: &str, dir: &Path, args: &[&std::ffi::OsStr]) -> Option<Vec<String>> {
    let log = dir.join("strace.log");
    let o = run(Command::new(tool("strace"))
        .args(["-f", "-s", "4096", "-o"])
        .arg(&log)
        .args([
            "-e",
            "trace=openat,fchmod,fsync,fdatasync,rename,renameat,renameat2",
        ])
        .arg(bin())
        .args(args));
    if !o.status.success() && text(&o).contains("Operation not permitted") {
        record_skip(&format!(
            "{what}: strace is not permitted here: {}",
            text(&o).trim()
        ));
        return None;
    }
    assert!(o.status.success(), "{}", text(&o));
    // "PID call(args) = result", without the PID; a call another thread interrupted comes as
    // "PID call(args <unfinished ...>" and later "PID <... call resumed>rest": joined.
    let mut lines = Vec::new();
    let mut pending: std::collections::HashMap<String, String> = Default::default();
    for l in std::fs::read_to_string(&log).unwrap().lines() {
        let (pid, call) = l.split_once(' ').unwrap_or(("", l));
        let call = call.trim_start();
        if let Some(head) = call.strip_suffix(" <unfinished ...>") {
            pending.insert(pid.to_string(), head.to_string());
        } else if let Some(rest) = call.strip_prefix("<... ") {
            let rest = rest.split_once(" resumed>").map_or(rest, |(_, r)| r);
            let head = pending.remove(pid).unwrap_or_default();
            lines.push(format!("{head}{rest}"));
        } else {
            lines.push(call.to_string());
        }
    }
    std::fs::remove_file(&log).unwrap();
    Some(lines)
}

/// Checks the order in `calls`: the temporary file (whose name contains `tmp_marker`) is
/// created exclusively, given `mode` if any, flushed, renamed over `target`, and then the
/// directory is opened and flushed.
fn check_durable_order(calls: &[String], tmp_marker: &str, target: &Path, mode: Option<&str>) {
    let find = |from: usize, pred: &dyn Fn(&str) -> bool, what: &str| -> usize {
        calls[from..]
            .iter()
            .position(|l| pred(l))
            .map(|i| from + i)
            .unwrap_or_else(|| panic!("no {what} after call {from}:\n{}", calls.join("\n")))
    };
    let fd_of = |line: &str| line.rsplit("= ").next().unwrap().trim().to_string();
    let open = find(
        0,
        &|l| l.starts_with("openat(") && l.contains(tmp_marker),
        "temporary file",
    );
    assert!(calls[open].contains("O_EXCL"), "{}", calls[open]);
    // Readable by its owner alone while it is written: it may copy a file others cannot read.
    assert!(
        calls[open].ends_with(&format!(", 0600) = {}", fd_of(&calls[open]))),
        "{}",
        calls[open]
    );
    let fd = fd_of(&calls[open]);
    let mut at = open;
    if let Some(mode) = mode {
        // strace shows the file type bits too (0100751).
        let call = format!("fchmod({fd}, ");
        let bits = format!("{mode})");
        at = find(at, &|l| l.starts_with(&call) && l.contains(&bits), "fchmod");
    }
    let sync = find(
        at,
        &|l| l.starts_with(&format!("fsync({fd})")),
        "fsync of the file",
    );
    let target = format!("\"{}\"", target.display());
    let rename = find(
        sync,
        &|l| l.starts_with("rename") && l.contains(tmp_marker) && l.contains(&target),
        "rename",
    );
    let dir = format!(
        "\"{}\"",
        target.trim_matches('"').rsplit_once('/').unwrap().0
    );
    let open_dir = find(
        rename,
        &|l| l.starts_with("openat(") && l.contains(&format!("{dir},")),
        "opening the directory",
    );
    let dir_fd = fd_of(&calls[open_dir]);
    find(
        open_dir,
        &|l| l.starts_with(&format!("fsync({dir_fd})")),
        "fsync of the directory",
    );
}

/// The system calls of a write in place and of a detached write over an existing file: the
/// temporary file is flushed before the rename, the directory after it, and the mode kept.
#[test]
fn writes_are_flushed_before_and_after_the_rename() {
    use std::os::unix::fs::PermissionsExt;
    let what = "writes_are_flushed_before_and_after_the_rename";
    let dir = scratch("write_strace");
    let input = dir.join("input.o");
    std::fs::write(&input, input_bytes()).unwrap();
    std::fs::set_permissions(&input, std::fs::Permissions::from_mode(0o751)).unwrap();
    let Some(calls) = traced(what, &dir, &["-J".as_ref(), input.as_os_str()]) else {
        return;
    };
    check_durable_order(&calls, "/.input.o.btf.", &input, Some("751"));

    let out = dir.join("out.btf");
    std::fs::write(&out, b"old").unwrap();
    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o640)).unwrap();
    let detached = format!("--btf_encode_detached={}", out.display());
    let Some(calls) = traced(
        what,
        &dir,
        &["-J".as_ref(), detached.as_ref(), input.as_os_str()],
    ) else {
        return;
    };
    check_durable_order(&calls, "/.out.btf.tmp.", &out, Some("640"));
    let mode = std::fs::metadata(&out).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o640, "the detached output's mode was not kept");
}

/// The user and group the tests run dwarf2btf as when they need someone other than root.
const NOBODY: u32 = 65534;

/// Mode, owner and group of `path`.
fn ownership(path: &Path) -> (u32, u32, u32) {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).unwrap();
    (m.mode() & 0o7777, m.uid(), m.gid())
}

/// Sets `path`'s owner, group and mode (the mode last: chown clears the set-ID bits).
fn set_ownership(path: &Path, (mode, uid, gid): (u32, u32, u32)) {
    use std::os::unix::fs::PermissionsExt;
    std::os::unix::fs::chown(path, Some(uid), Some(gid)).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// Whether this process is root; when not, `what` is recorded as skipped (a failure under
/// DWARF2BTF_REQUIRE_KERNEL=1, which scripts/test.sh sets as root).
fn root_or_skip(what: &str) -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        return true;
    }
    skip(&format!("{what}: needs root to give files to another user"));
    false
}

/// Encodes `input` into the existing (or symlinked) `out` with `--btf_encode_detached`, which
/// must succeed; unlike `encode`, `out` is not removed first: what it is matters here.
fn encode_over(input: &Path, out: &Path) {
    run_ok(
        Command::new(bin())
            .arg(format!("--btf_encode_detached={}", out.display()))
            .arg(input),
    );
}

/// Run as root on files that belong to someone else, `-J` in place and a detached output over
/// an existing file keep the owner, the group and the mode, set-ID bits included: the file
/// still belongs to its user.
#[test]
fn rewriting_as_root_keeps_owner_group_and_mode() {
    if !root_or_skip("rewriting_as_root_keeps_owner_group_and_mode") {
        return;
    }
    let dir = scratch("write_owner_root");
    populate(&dir);
    let (input, out) = (dir.join("input.o"), dir.join("out.btf"));
    for (path, kept) in [
        (&input, (0o4755, NOBODY, NOBODY)),
        (&out, (0o2640, NOBODY, 0)),
    ] {
        set_ownership(path, kept);
    }
    run_ok(Command::new(bin()).arg("-J").arg(&input));
    encode_over(&input, &out);
    assert_eq!(ownership(&input), (0o4755, NOBODY, NOBODY), "in place");
    assert_eq!(ownership(&out), (0o2640, NOBODY, 0), "detached");
}

/// A directory `NOBODY` can reach whatever directory the checkout lies in (a fresh clone
/// under `mktemp -d` is 0700), holding a copy of the binary for it to run: removed on drop.
fn reachable_by_nobody() -> (tempfile::TempDir, PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::Builder::new()
        .prefix("dwarf2btf-nobody.")
        .tempdir_in("/tmp")
        .unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let copy = dir.path().join("dwarf2btf");
    std::fs::copy(bin(), &copy).unwrap();
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755)).unwrap();
    (dir, copy)
}

/// Runs `bin` with `args` as `NOBODY` (setpriv, no supplementary groups).
fn as_nobody(bin: &Path, args: &[&std::ffi::OsStr]) -> Output {
    run(Command::new(tool("setpriv"))
        .arg(format!("--reuid={NOBODY}"))
        .arg(format!("--regid={NOBODY}"))
        .arg("--clear-groups")
        .arg(bin)
        .args(args))
}

/// Run as another user, dwarf2btf writes only what that user may open for writing, as pahole
/// does (`open(O_WRONLY)`): root's file and the user's own read-only file are refused, in
/// place and as a detached output, and keep their bytes, owner and mode, although the
/// directory would let the user rename over them. A file the user may write is rewritten, and
/// a set-group-ID bit for a group the user cannot give it is dropped.
#[test]
fn rewriting_as_another_user_needs_write_access_and_drops_the_set_id_bits() {
    if !root_or_skip("rewriting_as_another_user_needs_write_access_and_drops_the_set_id_bits") {
        return;
    }
    let (dir, bin) = reachable_by_nobody();
    let dir = dir.path();
    let roots = dir.join("roots.o");
    let own_read_only = dir.join("read-only.o");
    let out = dir.join("out.btf");
    let own = dir.join("own.o");
    for f in [&roots, &own_read_only, &own] {
        std::fs::write(f, input_bytes()).unwrap();
    }
    std::fs::write(&out, b"root's output\n").unwrap();
    set_ownership(&roots, (0o644, 0, 0));
    set_ownership(&out, (0o644, 0, 0));
    set_ownership(&own_read_only, (0o444, NOBODY, NOBODY));
    set_ownership(&own, (0o2755, NOBODY, 0));
    let detached = format!("--btf_encode_detached={}", out.display());
    let refused: [(&Path, Vec<&std::ffi::OsStr>); 3] = [
        (&roots, vec!["-J".as_ref(), roots.as_os_str()]),
        (
            &own_read_only,
            vec!["-J".as_ref(), own_read_only.as_os_str()],
        ),
        (&out, vec![detached.as_ref(), own.as_os_str()]),
    ];
    for (target, args) in refused {
        let before = (std::fs::read(target).unwrap(), ownership(target));
        let o = as_nobody(&bin, &args);
        one_error_line(&o, "Permission denied");
        assert_eq!((std::fs::read(target).unwrap(), ownership(target)), before);
    }
    let o = as_nobody(&bin, &["-J".as_ref(), own.as_os_str()]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(ownership(&own), (0o755, NOBODY, NOBODY));
    assert!(temp_files(dir).is_empty(), "{:?}", temp_files(dir));
}

/// A file with other hard links is not rewritten (the rename would give this name new
/// contents and leave the others with the old): one error line, and every name unchanged.
#[test]
fn hard_linked_outputs_are_refused() {
    let dir = scratch("write_hard_links");
    populate(&dir);
    for name in ["input.o", "out.btf"] {
        std::fs::hard_link(dir.join(name), dir.join(format!("{name}.link"))).unwrap();
    }
    check_failed_writes(&dir, "has 2 hard links", &|cmd| run(cmd));
    for name in ["input.o", "out.btf"] {
        assert_eq!(
            std::fs::read(dir.join(name)).unwrap(),
            std::fs::read(dir.join(format!("{name}.link"))).unwrap()
        );
    }
}

/// Symlinks as outputs are written through: `-J` on a link rewrites its target, and a
/// detached output through a dangling link creates the link's target. The links stay links.
#[test]
fn symlinked_outputs_write_their_targets() {
    let dir = scratch("write_symlinks");
    populate(&dir);
    let (input, target) = (dir.join("input.o"), dir.join("target.btf"));
    let direct = dir.join("direct.btf");
    encode_over(&input, &direct);
    let dangling = dir.join("dangling.btf");
    std::os::unix::fs::symlink("target.btf", &dangling).unwrap();
    encode_over(&input, &dangling);
    assert!(std::fs::symlink_metadata(&dangling)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(
        std::fs::read(&target).unwrap(),
        std::fs::read(&direct).unwrap()
    );

    let linked_input = dir.join("linked.o");
    std::os::unix::fs::symlink("input.o", &linked_input).unwrap();
    let before = std::fs::read(&input).unwrap();
    run_ok(Command::new(bin()).arg("-J").arg(&linked_input));
    assert!(std::fs::symlink_metadata(&linked_input)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_ne!(
        std::fs::read(&input).unwrap(),
        before,
        "the link's target was not rewritten"
    );
}

/// A new output gets the mode `open(O_CREAT, 0666)` would give it under the caller's umask,
/// once written (the temporary file is 0600 until then: see check_durable_order).
#[test]
fn new_outputs_follow_the_umask() {
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch("write_umask");
    let input = dir.join("input.o");
    std::fs::write(&input, input_bytes()).unwrap();
    for (umask, mode) in [("022", 0o644), ("027", 0o640), ("077", 0o600)] {
        let out = dir.join(format!("new-{umask}.btf"));
        let script =
            format!("umask {umask} && exec \"$0\" -J --btf_encode_detached=\"$1\" \"$2\"",);
        let o = run(Command::new("sh")
            .args(["-c", &script])
            .arg(bin())
            .arg(&out)
            .arg(&input));
        assert!(o.status.success(), "{}", text(&o));
        let got = std::fs::metadata(&out).unwrap().permissions().mode() & 0o7777;
        assert_eq!(got, mode, "umask {umask}");
    }
}

/// Outputs that are not regular files are written in place, as pahole writes them, never
/// replaced by a renamed file: standard output into a pipe (`/dev/stdout`), a FIFO, a
/// character device (a `mknod` of /dev/null's numbers, as root); a directory is refused.
#[test]
fn outputs_that_are_not_regular_files_are_written_in_place() {
    use std::os::unix::fs::FileTypeExt;
    let dir = scratch("write_special");
    let input = dir.join("input.o");
    std::fs::write(&input, input_bytes()).unwrap();
    let plain = dir.join("plain.btf");
    encode_over(&input, &plain);
    let expected = std::fs::read(&plain).unwrap();

    let o = run(Command::new(bin())
        .arg("--btf_encode_detached=/dev/stdout")
        .arg(&input));
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(o.stdout, expected, "/dev/stdout into a pipe");

    let fifo = mkfifo(&dir.join("fifo"));
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read(fifo).unwrap())
    };
    encode_over(&input, &fifo);
    assert_eq!(reader.join().unwrap(), expected, "through the FIFO");
    assert!(std::fs::symlink_metadata(&fifo)
        .unwrap()
        .file_type()
        .is_fifo());

    if root_or_skip("outputs_that_are_not_regular_files_are_written_in_place: mknod") {
        let null = dir.join("null");
        let made = Command::new("mknod")
            .arg(&null)
            .args(["c", "1", "3"])
            .status();
        assert!(made.unwrap().success());
        encode_over(&input, &null);
        assert!(std::fs::symlink_metadata(&null)
            .unwrap()
            .file_type()
            .is_char_device());
    }

    let o = run(Command::new(bin())
        .arg(format!("--btf_encode_detached={}", dir.display()))
        .arg(&input));
    one_error_line(&o, "is a directory");
    assert!(temp_files(&dir).is_empty(), "{:?}", temp_files(&dir));
}

/// Runs dwarf2btf with `args` under strace, with `inject` (strace's fault injection, e.g.
/// `fsync:delay_enter=2000000`) applied to the calls on `path` only, when given; returns the
/// child, or `None` (recorded as a skip) when ptrace is not permitted here.
fn held_at(
    what: &str,
    inject: &str,
    path: Option<&Path>,
    args: &[&std::ffi::OsStr],
) -> Option<std::process::Child> {
    let probe = run(Command::new(tool("strace")).args(["-o", "/dev/null", "true"]));
    if !probe.status.success() {
        record_skip(&format!(
            "{what}: strace cannot trace here: {}",
            text(&probe).trim()
        ));
        return None;
    }
    let syscall = inject.split(':').next().unwrap();
    let mut strace = Command::new(tool("strace"));
    strace.args(["-f", "-o", "/dev/null"]);
    if let Some(path) = path {
        strace.arg("-P").arg(path);
    }
    let child = strace
        .arg(format!("--trace={syscall}"))
        .arg(format!("--inject={inject}"))
        .arg(bin())
        .args(args)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    Some(child)
}

/// Waits until a temporary file appears in `dir`; returns the id of the process that made it
/// (its name ends in that id).
fn writer_of_temp_file(dir: &Path) -> i32 {
    let start = Instant::now();
    loop {
        if let Some(name) = temp_files(dir).first() {
            return name.rsplit('.').next().unwrap().parse().unwrap();
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no temporary file appeared"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// SIGINT, SIGTERM or SIGHUP while the temporary file exists (its flush held back, so the
/// timing is certain): the process removes the file and dies of the signal, leaving the
/// input as it was, in place and detached.
#[test]
fn signals_remove_the_temporary_file() {
    let what = "signals_remove_the_temporary_file";
    let dir = scratch("write_signals");
    let input = dir.join("input.o");
    let out = dir.join("out.btf");
    let detached = format!("--btf_encode_detached={}", out.display());
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        for in_place in [true, false] {
            std::fs::write(&input, input_bytes()).unwrap();
            let _ = std::fs::remove_file(&out);
            let args: Vec<&std::ffi::OsStr> = if in_place {
                vec!["-J".as_ref(), input.as_os_str()]
            } else {
                vec![detached.as_ref(), input.as_os_str()]
            };
            let Some(mut child) = held_at(what, "fsync:delay_enter=2000000", None, &args) else {
                return;
            };
            let pid = writer_of_temp_file(&dir);
            // SAFETY: kill has no memory-safety preconditions.
            assert_eq!(unsafe { libc::kill(pid, sig) }, 0);
            let status = child.wait().unwrap();
            assert_eq!(
                status.signal(),
                Some(sig),
                "signal {sig}, in place: {in_place}"
            );
            assert_eq!(temp_files(&dir), Vec::<String>::new(), "signal {sig}");
            assert_eq!(
                std::fs::read(&input).unwrap(),
                input_bytes(),
                "signal {sig}"
            );
            assert!(!out.exists(), "signal {sig}: an output was written");
        }
    }
}

/// An input truncated by someone else while dwarf2btf reads it (here right after it is mapped,
/// strace holding the mmap's return back): one line saying so and exit 2, not a bare "Bus
/// error", and no output or temporary file.
#[test]
fn an_input_truncated_while_read_is_reported() {
    let what = "an_input_truncated_while_read_is_reported";
    let dir = scratch("write_truncated");
    let input = dir.join("input.o");
    std::fs::write(&input, input_bytes()).unwrap();
    let out = dir.join("out.btf");
    let detached = format!("--btf_encode_detached={}", out.display());
    let args = [detached.as_ref(), input.as_os_str()];
    let Some(child) = held_at(what, "mmap:delay_exit=3000000", Some(&input), &args) else {
        return;
    };
    std::thread::sleep(Duration::from_millis(1500));
    std::fs::File::options()
        .write(true)
        .open(&input)
        .unwrap()
        .set_len(0)
        .unwrap();
    let o = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    let ours: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("dwarf2btf"))
        .collect();
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert_eq!(
        ours,
        ["dwarf2btf: an input file was truncated while it was being read (SIGBUS)"]
    );
    assert!(!out.exists());
    assert_eq!(temp_files(&dir), Vec::<String>::new());
}
