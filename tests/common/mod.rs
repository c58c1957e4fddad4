//! Shared helpers for the integration tests: the binary under test, the oracle tools, the C
//! fixtures compiled at test time, and the reference kernel.

pub mod bad_dwarf;
pub mod compare;
pub mod hand_made;
pub mod judge;
pub mod layout_cases;
pub mod libbpf_oracle;
pub mod probes;
pub mod random_btf;
pub mod rss;
pub mod verify_sample;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// `path` memory-mapped, for the tests that drive the library's stages themselves.
pub fn map(path: &Path) -> dwarf2btf::input::elf::Mapped {
    // SAFETY: the fixtures and the reference kernel are not modified while the tests run:
    // the fixtures are built once into their own directory before any test reads them, and
    // no test writes the kernel images.
    unsafe { dwarf2btf::input::elf::Mapped::open(path) }.unwrap()
}

/// Reads every unit of the relocatable object `path`'s `.debug_info` on its own, relocated, as
/// the encoder does, and checks each against the same range of the whole relocated copy;
/// returns the number of units. Panics when the object cannot be relocated unit by unit.
pub fn assert_units_relocate_as_the_whole_section(path: &Path) -> usize {
    use dwarf2btf::dwarf::unit_copies::UnitCopies;
    use dwarf2btf::input::elf::Elf;
    let mapped = map(path);
    let elf = Elf::parse(&mapped).unwrap();
    let whole = elf.debug_section(".debug_info").unwrap().unwrap();
    let by_range = elf
        .range_relocations(".debug_info")
        .unwrap()
        .unwrap_or_else(|| panic!("{}: not relocatable unit by unit", path.display()));
    let bytes = by_range.bytes();
    let copies = UnitCopies::new(&mapped, bytes, Some(by_range), path);
    let endian = gimli::RunTimeEndian::Little;
    let mut units = gimli::DebugInfo::new(bytes, endian).units();
    let mut count = 0;
    while let Some(header) = units.next().unwrap() {
        let start = header.offset().0;
        let range = start..start + header.length_including_self();
        assert!(
            copies.unit(range.clone()).unwrap() == &whole[range.clone()],
            "{}: the unit at {range:?} relocated on its own differs from the whole copy",
            path.display()
        );
        copies.release(range);
        count += 1;
    }
    count
}

/// The `dwarf2btf` binary built for this test run.
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_dwarf2btf"))
}

/// Path of an external tool; a missing oracle is a failure, never a skip.
pub fn tool(name: &str) -> PathBuf {
    for dir in std::env::var("PATH").unwrap_or_default().split(':') {
        for cand in [Path::new(dir).join(name), Path::new("/usr/sbin").join(name)] {
            if cand.is_file() {
                return cand;
            }
        }
    }
    panic!("`{name}` is not installed: run scripts/setup/install-test-deps.sh");
}

/// The pahole these tests use as an oracle: Debian bookworm's `dwarves`, whose behaviour the
/// fixture tests' expectations (and the legacy-flag configurations) were checked against. Any
/// other version is a failure that names it, not a silent change of oracle.
pub const ORACLE_PAHOLE_VERSION: &str = "v1.24";

/// Debian's pahole, after checking that it is [`ORACLE_PAHOLE_VERSION`].
pub fn oracle_pahole() -> PathBuf {
    let pahole = tool("pahole");
    let out = run(Command::new(&pahole).arg("--version"));
    let version = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert_eq!(
        version,
        ORACLE_PAHOLE_VERSION,
        "the oracle pahole ({}) is not the version these tests were written against",
        pahole.display()
    );
    pahole
}

/// Makes a FIFO at `path`; returns the path.
pub fn mkfifo(path: &Path) -> PathBuf {
    run_ok(Command::new("mkfifo").arg(path));
    path.to_path_buf()
}

/// Debian unstable's pahole 1.32, the release whose output dwarf2btf reproduces: the wrapper
/// `scripts/setup/fetch-pahole-1.32.sh` makes (fetched once into the cache; `scripts/test.sh`
/// fetches it before the tests and passes it as `DWARF2BTF_PAHOLE_1_32`), after checking
/// that it reports v1.32.
pub fn pahole_1_32() -> PathBuf {
    static PATH: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    PATH.get_or_init(|| {
        let path = match std::env::var_os("DWARF2BTF_PAHOLE_1_32") {
            Some(p) => PathBuf::from(p),
            None => {
                let script = concat!(
                    env!("CARGO_MANIFEST_DIR"),
                    "/scripts/setup/fetch-pahole-1.32.sh"
                );
                let o = run_ok(&mut Command::new(script));
                PathBuf::from(String::from_utf8_lossy(&o.stdout).trim())
            }
        };
        let o = run_ok(Command::new(&path).arg("--version"));
        assert_eq!(
            String::from_utf8_lossy(&o.stdout).trim(),
            "v1.32",
            "{}",
            path.display()
        );
        path
    })
    .clone()
}

/// How long one command a test runs may take before the test fails: `$DWARF2BTF_TEST_TIMEOUT`
/// seconds, else 20 minutes (the longest, a 6.1 boot under software emulation, takes a few).
fn command_timeout() -> std::time::Duration {
    let secs = std::env::var("DWARF2BTF_TEST_TIMEOUT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20 * 60);
    std::time::Duration::from_secs(secs)
}

/// Runs a command and returns its output (stdout/stderr captured). A command still running
/// after [`command_timeout`] is killed and the test fails saying so: a hang stalls no run.
pub fn run(cmd: &mut Command) -> Output {
    run_within(cmd, command_timeout())
}

/// [`run`] with the time limit given.
pub fn run_within(cmd: &mut Command, limit: std::time::Duration) -> Output {
    use std::process::Stdio;
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    let pid = child.id() as libc::pid_t;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(child.wait_with_output()));
    let output = match rx.recv_timeout(limit) {
        Ok(output) => output,
        Err(_) => {
            // SAFETY: kill takes no pointer. The child is unreaped unless its waiter returned
            // in this very instant, the only case in which the pid could name another process.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            let stderr = rx
                .recv()
                .unwrap()
                .map(|o| String::from_utf8_lossy(&o.stderr).into_owned())
                .unwrap_or_default();
            panic!("{cmd:?} still ran after {limit:?} and was killed; its stderr:\n{stderr}");
        }
    };
    output.unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"))
}

/// Runs a command that must succeed.
pub fn run_ok(cmd: &mut Command) -> Output {
    let out = run(cmd);
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The calling test's own scratch directory `name`:
/// `target/tmp/<test binary>/<test name>/<name>`.
///
/// Tests of one binary run as threads of one process (and under nextest as processes side by
/// side), so a path shared by two tests is a race: one test reads a file that the other is still
/// writing. Keying every scratch path by the test that asks for it makes that impossible. The
/// test's directory is emptied the first time this process asks for it, so a warm checkout
/// starts from the same nothing as a fresh clone. What a `OnceLock` builds once per binary (the
/// C fixtures, a decompressed oracle) lands in the directory of the test that happened to build
/// it, and is only read after that.
///
/// Panics when called outside a test's own thread (the harness names it after the test): a
/// helper thread has no test to key its files by.
pub fn scratch(name: &str) -> PathBuf {
    let dir = test_scratch_root().join(name);
    std::fs::create_dir_all(&dir)
        .unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
    dir
}

/// The calling test's scratch root, emptied on its first use in this process.
fn test_scratch_root() -> PathBuf {
    use std::collections::BTreeSet;
    use std::sync::Mutex;
    static STARTED: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());
    let thread = std::thread::current();
    let test = thread.name().filter(|name| *name != "main").expect(
        "scratch() is called from a test's own thread, which the harness names after the test",
    );
    let test = test.replace("::", "__");
    let root = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(env!("CARGO_CRATE_NAME"))
        .join(&test);
    if STARTED.lock().unwrap().insert(test) && root.exists() {
        std::fs::remove_dir_all(&root)
            .unwrap_or_else(|e| panic!("cannot empty {}: {e}", root.display()));
    }
    root
}

/// The kernel's pahole flags (scripts/Makefile.btf for pahole >= 1.26).
pub const KERNEL_FEATURES: &str = "--btf_features=encode_force,var,float,enum64,decl_tag,type_tag,optimized_func,consistent_func,decl_tag_kfuncs";

/// Encodes `input` into `output` with dwarf2btf and extra flags.
pub fn encode(input: &Path, output: &Path, flags: &[&str]) -> Output {
    let _ = std::fs::remove_file(output);
    run(&mut encode_command(input, output, flags))
}

/// The command [`encode`] runs.
pub fn encode_command(input: &Path, output: &Path, flags: &[&str]) -> Command {
    let mut cmd = Command::new(bin());
    cmd.arg("-J")
        .arg(format!("--btf_encode_detached={}", output.display()))
        .args(flags)
        .arg(input);
    cmd
}

/// One compiled fixture.
#[derive(Clone, Debug)]
pub struct Fixture {
    /// The flavour: compiler, flags and source (`gcc-O2-g`).
    pub name: &'static str,
    /// The compiled object.
    pub path: PathBuf,
}

const SRC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");

/// The C fixtures, compiled once per test binary with gcc and clang in several flavours.
pub fn fixtures() -> &'static [Fixture] {
    static FIXTURES: OnceLock<Vec<Fixture>> = OnceLock::new();
    FIXTURES.get_or_init(|| {
        let dir = scratch("fixtures");
        let types = format!("{SRC}/types.c");
        let tags = format!("{SRC}/tags.c");
        let builds: [(&str, &str, &[&str], &str); 7] = [
            ("gcc-O2-g", "gcc", &["-O2", "-g", "-c"], &types),
            (
                "gcc-O2-gdwarf-4",
                "gcc",
                &["-O2", "-gdwarf-4", "-c"],
                &types,
            ),
            ("gcc-O0-gz", "gcc", &["-O0", "-g", "-gz=zlib", "-c"], &types),
            (
                "gcc-shared",
                "gcc",
                &["-O2", "-g", "-shared", "-fPIC"],
                &types,
            ),
            ("clang-O2-g", "clang", &["-O2", "-g", "-c"], &types),
            (
                "clang-gdwarf-4",
                "clang",
                &["-O2", "-gdwarf-4", "-c"],
                &types,
            ),
            ("clang-tags", "clang", &["-O2", "-g", "-c"], &tags),
        ];
        builds
            .iter()
            .map(|(name, cc, flags, src)| {
                let ext = if flags.contains(&"-shared") {
                    "so"
                } else {
                    "o"
                };
                let out = dir.join(format!("{name}.{ext}"));
                run_ok(
                    Command::new(tool(cc))
                        .args(*flags)
                        .arg(src)
                        .arg("-o")
                        .arg(&out),
                );
                Fixture { name, path: out }
            })
            .collect()
    })
}

/// Every fixture's BTF as dwarf2btf encodes it with the kernel's flags, written under
/// `scratch(dir)` as NAME.btf: (fixture name, file).
pub fn fixture_btf_files(dir: &str) -> Vec<(&'static str, PathBuf)> {
    let dir = scratch(dir);
    fixtures()
        .iter()
        .map(|f| {
            let out = dir.join(format!("{}.btf", f.name));
            let o = encode(&f.path, &out, &[KERNEL_FEATURES]);
            assert!(o.status.success(), "{}: {}", f.name, text(&o));
            (f.name, out)
        })
        .collect()
}

/// A cached reference input (scripts/setup/fetch-kernel.sh): `$ENV`, else `~/.cache/dwarf2btf/NAME`;
/// `None` when it is not there and the run does not require it (DWARF2BTF_REQUIRE_KERNEL=1
/// turns absence into a failure).
fn reference_input(env: &str, name: &str, fetch: &str) -> Option<PathBuf> {
    let path = std::env::var_os(env).map(PathBuf::from).unwrap_or_else(|| {
        let home = std::env::var_os("HOME").unwrap_or_default();
        Path::new(&home).join(".cache/dwarf2btf").join(name)
    });
    if path.exists() {
        return Some(path);
    }
    assert!(
        std::env::var("DWARF2BTF_REQUIRE_KERNEL").as_deref() != Ok("1"),
        "reference input missing at {}: run {fetch}",
        path.display()
    );
    record_skip(&format!(
        "{name}: {} not found (run {fetch})",
        path.display()
    ));
    None
}

/// Where [`record_skip`] lists what could not be checked; scripts/test.sh empties it before a run and
/// prints it after.
pub fn skip_list() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("skipped.txt")
}

/// Says that a check could not run, and why (`line`: what, then why): on stderr (which the
/// harness only shows for a failing test) and as a line of [`skip_list`], so that the end of
/// scripts/test.sh lists it.
pub fn record_skip(line: &str) {
    use std::io::Write;
    let line = format!("{}: {line}\n", env!("CARGO_CRATE_NAME"));
    eprint!("SKIP {line}");
    // One write with O_APPEND: lines from tests running in parallel do not interleave.
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(skip_list())
        .and_then(|mut f| f.write_all(line.as_bytes()));
    if let Err(e) = written {
        panic!("cannot record a skip in {}: {e}", skip_list().display());
    }
}

/// The build ID of the pinned reference image (Debian linux-image-6.1.0-57-cloud-amd64-dbg),
/// the one tests/data's pahole HEAD outputs were made from; scripts/setup/fetch-kernel.sh checks
/// the same value.
pub const PINNED_BUILD_ID: &str = "01d2640d3a13145ee314eb05b155f141b7b7058b";

/// The GNU build ID of an ELF file, in hex.
pub fn build_id(path: &Path) -> Option<String> {
    use object::Object;
    let file = std::fs::File::open(path).ok()?;
    // SAFETY: the reference inputs are not modified while the tests run.
    let map = unsafe { memmap2::Mmap::map(&file) }.ok()?;
    let elf = object::File::parse(&*map).ok()?;
    let id = elf.build_id().ok()??;
    Some(id.iter().map(|b| format!("{b:02x}")).collect())
}

/// Whether a reference input that is there is the pinned image: when it is not (a fallback
/// kernel, see scripts/setup/fetch-kernel.sh), the checks against pahole HEAD's output for the
/// pinned image skip, saying so — unless DWARF2BTF_REQUIRE_PINNED=1 (scripts/test.sh sets it
/// when the pinned package was fetched), where that is a failure.
fn pinned(what: &str, input: &Path, found: Option<String>) -> bool {
    if found.as_deref() == Some(PINNED_BUILD_ID) {
        return true;
    }
    let why = format!(
        "needs pahole's output for the pinned image (build ID {PINNED_BUILD_ID}), and {} has build ID {}",
        input.display(),
        found.as_deref().unwrap_or("none")
    );
    assert!(
        std::env::var("DWARF2BTF_REQUIRE_PINNED").as_deref() != Ok("1"),
        "{what}: {why}, and DWARF2BTF_REQUIRE_PINNED=1"
    );
    record_skip(&format!("{what}: {why}"));
    false
}

/// The reference vmlinux, if it is the pinned image tests/data describes (see [`pinned`]).
pub fn pinned_vmlinux(what: &str) -> Option<PathBuf> {
    static ID: OnceLock<Option<String>> = OnceLock::new();
    let path = vmlinux()?;
    let id = ID.get_or_init(|| build_id(&path)).clone();
    pinned(what, &path, id).then_some(path)
}

/// The reference modules, if they come from the pinned image's package: scripts/setup/fetch-kernel.sh
/// stamps an unpacked tree with the build ID of the vmlinux in the same package.
pub fn pinned_modules(what: &str) -> Option<PathBuf> {
    let path = modules()?;
    let id = std::fs::read_to_string(path.join(".unpacked"))
        .ok()
        .map(|s| s.trim().to_string());
    pinned(what, &path, id).then_some(path)
}

/// The reference vmlinux.
pub fn vmlinux() -> Option<PathBuf> {
    reference_input(
        "DWARF2BTF_VMLINUX",
        "vmlinux-6.1.0-57-cloud-amd64",
        "scripts/setup/fetch-kernel.sh",
    )
}

/// The reference vmlinux's BTF as the kernel build would encode it (kernel features, no
/// Rust CUs), written under `scratch(dir)`; `None` as for [`vmlinux`].
pub fn vmlinux_btf(dir: &str) -> Option<Vec<u8>> {
    Some(std::fs::read(vmlinux_btf_file(dir)?).unwrap())
}

/// [`vmlinux_btf`]'s file, `scratch(dir)/vmlinux.btf`.
pub fn vmlinux_btf_file(dir: &str) -> Option<PathBuf> {
    let vmlinux = vmlinux()?;
    let out = scratch(dir).join("vmlinux.btf");
    let o = encode(
        &vmlinux,
        &out,
        &[KERNEL_FEATURES, "--lang_exclude=rust", "-j2"],
    );
    assert!(o.status.success(), "{}", text(&o));
    Some(out)
}

/// The split BTF dwarf2btf encodes for the reference module `rel` (a path under the modules'
/// `kernel/`, e.g. `drivers/block/loop.ko`) against `base`, written under `scratch(dir)`;
/// `None` when the modules are not there (as for [`vmlinux`]).
pub fn module_btf_file(dir: &str, rel: &str, base: &Path) -> Option<PathBuf> {
    let ko = modules()?.join("kernel").join(rel);
    let stem = Path::new(rel).file_stem().unwrap().to_string_lossy();
    let out = scratch(dir).join(format!("{stem}.btf"));
    let base = format!("--btf_base={}", base.display());
    let o = encode(&ko, &out, &[KERNEL_FEATURES, "--lang_exclude=rust", &base]);
    assert!(o.status.success(), "{}: {}", ko.display(), text(&o));
    Some(out)
}

/// The reference kernel's modules (a tree of `.ko` under `kernel/`).
pub fn modules() -> Option<PathBuf> {
    reference_input(
        "DWARF2BTF_MODULES",
        "modules-6.1.0-57-cloud-amd64",
        "scripts/setup/fetch-kernel.sh --modules",
    )
}

/// How many random cases a test runs: `$VAR` when set, else `default`.
/// Fewer than `default` (none, with `VAR=0`) is recorded as a skip, so that a run that checked
/// less says so.
pub fn cases_from_env(var: &str, default: u64) -> u64 {
    let cases = std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default);
    if cases < default {
        record_skip(&format!(
            "{var}={cases}: {cases} random cases instead of {default}"
        ));
    }
    cases
}

/// The repository's test data (tests/data, see its README).
fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

/// A test-data file stored xz-compressed, decompressed once per test binary (into the
/// scratch of the test that first asks for it; the others wait for it and then read it).
fn decompressed(name: &str) -> PathBuf {
    use std::collections::BTreeMap;
    use std::sync::Mutex;
    static DONE: Mutex<BTreeMap<String, PathBuf>> = Mutex::new(BTreeMap::new());
    let mut done = DONE.lock().unwrap();
    done.entry(name.to_string())
        .or_insert_with(|| {
            let out = scratch("data").join(name);
            std::fs::create_dir_all(out.parent().unwrap()).unwrap();
            let packed = data(&format!("{name}.xz"));
            let o = run_ok(Command::new(tool("xz")).arg("-dc").arg(&packed));
            std::fs::write(&out, &o.stdout).unwrap();
            out
        })
        .clone()
}

/// pahole 1.32's output for the reference kernel with the kernel's flags (tests/data).
pub fn oracle_btf() -> PathBuf {
    decompressed("vmlinux-6.1.0-57-cloud-amd64.pahole-1.32.btf")
}

/// pahole 1.32's `-V` function skip lines for the reference kernel (tests/data).
pub fn oracle_skipped() -> PathBuf {
    data("vmlinux-6.1.0-57-cloud-amd64.pahole-1.32.skipped.txt")
}

/// pahole 1.32's output for the reference kernel with `true_signature` too (tests/data).
pub fn oracle_true_signature_btf() -> PathBuf {
    decompressed("vmlinux-6.1.0-57-cloud-amd64.pahole-1.32-true-signature.btf")
}

/// pahole HEAD's output for the reference kernel with `layout` too (tests/data): libbpf 1.8's
/// 32-byte header and kind layout section. Its type section has the flattened arrays of the
/// pahole before 1.32: the header and layout section are its reference, not its types.
pub fn oracle_layout_btf() -> PathBuf {
    decompressed("vmlinux-6.1.0-57-cloud-amd64.pahole-head-layout.btf")
}

/// pahole HEAD's BTF of `scripts/check/kernel-build.sh 7.2`'s kernel (tests/data/kernel-build-7.2):
/// `vmlinux` (its `.BTF` section) or `tmp_vmlinux1` (the encoder's detached output).
pub fn oracle_kernel_build_7_2(which: &str) -> PathBuf {
    decompressed(&format!("kernel-build-7.2/{which}.pahole-head.btf"))
}

/// Its `-V` function skip lines.
pub fn oracle_true_signature_skipped() -> PathBuf {
    data("vmlinux-6.1.0-57-cloud-amd64.pahole-1.32-true-signature.skipped.txt")
}

/// The function table line and the owners-per-function line of `--stats`.
#[derive(Debug, PartialEq)]
pub struct TableCounters {
    /// Instances saved into the table.
    pub saved: u64,
    /// Per-owner folds (one per function and owner that saved it).
    pub folds: u64,
    /// Instances saved per owner.
    pub per_owner: Vec<u64>,
    /// Instances the table holds at the end.
    pub held: u64,
    /// (owners, functions)
    pub lengths: Vec<(u64, u64)>,
    /// CUs in the input, from `-V`'s summary line when the run had `-V`.
    pub cus: Option<u64>,
}

impl TableCounters {
    /// The counters of a `--stats` run's stderr (`-V` for the CU count).
    pub fn parse(o: &std::process::Output) -> Self {
        let stderr = String::from_utf8_lossy(&o.stderr);
        let line = |prefix: &str| -> String {
            stderr
                .lines()
                .find(|l| l.starts_with(prefix))
                .unwrap_or_else(|| panic!("no '{prefix}' line in {stderr}"))
                .to_string()
        };
        let table = line("function table (");
        let number_before = |what: &str| -> u64 {
            let end = table
                .find(what)
                .unwrap_or_else(|| panic!("{what}: {table}"));
            let start = table[..end].rfind([' ', ',', ':']).map_or(0, |i| i + 1);
            table[start..end].trim().parse().expect(what)
        };
        let per_owner = table
            .split("(per owner: ")
            .nth(1)
            .and_then(|rest| rest.split(')').next())
            .expect("per owner")
            .split(' ')
            .map(|n| n.parse().expect("per-owner count"))
            .collect();
        let lengths = line("owners per function: ")
            .trim_start_matches("owners per function: ")
            .split(", ")
            .map(|pair| {
                let (len, n) = pair.split_once(": ").expect("owners: functions");
                (len.parse().unwrap(), n.parse().unwrap())
            })
            .collect();
        TableCounters {
            saved: number_before(" instances saved"),
            folds: number_before(" per-owner folds"),
            per_owner,
            held: number_before(" instances held"),
            lengths,
            cus: stderr.lines().find_map(|l| {
                l.strip_prefix("dwarf2btf: ")?
                    .split_once(" CUs (")?
                    .0
                    .parse()
                    .ok()
            }),
        }
    }

    /// Workers (table owners) a run with `jobs` has: one per batch of
    /// [`dwarf2btf::pipeline::BATCH_CUS`] CUs at most, given the CU count of a `-V` run.
    pub fn owners(jobs: u64, cus: u64) -> usize {
        let batch = dwarf2btf::pipeline::BATCH_CUS as u64;
        jobs.min(cus.div_ceil(batch)).max(1) as usize
    }

    /// Checks what must hold whatever the design and -j: `owners` per-owner counts adding up
    /// to the folds, as many folds as the owners-per-function histogram says, and no more
    /// instances held than saved.
    pub fn check(&self, owners: usize) {
        assert_eq!(self.per_owner.len(), owners, "{self:?}");
        assert_eq!(self.per_owner.iter().sum::<u64>(), self.folds, "{self:?}");
        let folds: u64 = self.lengths.iter().map(|(len, n)| len * n).sum();
        assert_eq!(folds, self.folds, "{self:?}");
        assert!(
            self.held <= self.saved && self.held >= self.functions(),
            "{self:?}"
        );
    }

    /// Functions with at least one instance.
    pub fn functions(&self) -> u64 {
        self.lengths.iter().map(|(_, n)| n).sum()
    }
}

/// stdout and stderr of an output, for assertion messages.
pub fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Loads raw BTF into the running kernel through `bpf(BPF_BTF_LOAD)` (the kernel's full
/// checks, resolve pass included; dwarf2btf::toolbox::kernel): Ok(fd) or Err((errno, verifier
/// log)). The errno is ENOSPC (28) when the log overflowed its largest buffer, the refusal's
/// errno when the kernel refused the call (see [`kernel_refused`]), ENOSYS (38) when there is
/// no call to make.
pub fn btf_load(data: &[u8]) -> Result<std::os::fd::OwnedFd, (i32, String)> {
    use dwarf2btf::toolbox::kernel::{load, LoadError};
    load(data).map_err(|e| match e {
        LoadError::Refused(errno) => (errno, String::new()),
        LoadError::Unsupported(why) => (38, why),
        LoadError::Rejected(r) => (if r.log_truncated { 28 } else { r.errno }, r.log),
    })
}

/// Whether `errno` from [`btf_load`] is the kernel refusing the call for lack of privilege
/// (EPERM, EACCES), or the call missing (ENOSYS). Then the caller skips, saying so — unless
/// DWARF2BTF_REQUIRE_KERNEL=1 (scripts/test.sh sets it), where a refusal is a failure: this
/// panics with the reason.
pub fn kernel_refused(errno: i32, what: &str) -> bool {
    if errno != 1 && errno != 13 && errno != 38 {
        return false;
    }
    skip(&format!(
        "{what}: the kernel refused BPF_BTF_LOAD (errno {errno}: no privilege or no call)"
    ));
    true
}

/// Says that a test skips the kernel's check and why (see [`record_skip`]) — or, under
/// DWARF2BTF_REQUIRE_KERNEL=1 (scripts/test.sh as root), fails with that reason.
pub fn skip(why: &str) {
    assert!(
        std::env::var("DWARF2BTF_REQUIRE_KERNEL").as_deref() != Ok("1"),
        "{why}, and DWARF2BTF_REQUIRE_KERNEL=1 requires the kernel's check"
    );
    record_skip(why);
}

/// A copy of raw BTF (host byte order) whose first STRUCT member points at a type id past
/// the last type, which the kernel rejects in its meta checks ("Invalid type_id"), or, with
/// `late`, at the first FUNC, which it rejects only in its resolve pass, after it has logged
/// every type ("Invalid member").
pub fn corrupt_member_type(data: &[u8], late: bool) -> Vec<u8> {
    use dwarf2btf::btf::Kind;
    let (_, member, kinds) = first_member(data);
    let target = if late {
        1 + kinds
            .iter()
            .position(|&k| k == Kind::Func as u32)
            .expect("a FUNC") as u32
    } else {
        0x00ff_fff0
    };
    // A member's words: name_off, type, offset.
    let mut out = data.to_vec();
    out[member + 4..member + 8].copy_from_slice(&target.to_ne_bytes());
    out
}

/// A copy of raw BTF (host byte order) whose first STRUCT member is renamed: it takes the
/// name of its struct.
pub fn rename_first_member(data: &[u8]) -> Vec<u8> {
    let (record, member, _) = first_member(data);
    let mut out = data.to_vec();
    out.copy_within(record..record + 4, member);
    out
}

/// In raw BTF, the byte offsets of the first STRUCT with members and of its first member,
/// and the kind of every type (index 0 is type id 1).
fn first_member(data: &[u8]) -> (usize, usize, Vec<u32>) {
    use dwarf2btf::btf::{kinds, read, Kind};
    let h = read::parse_header(data).unwrap();
    let types = (h.hdr_len + h.type_off) as usize;
    let words = h.endian.words(&data[types..types + h.type_len as usize]);
    let offs = read::record_offsets(&words).unwrap();
    let kinds: Vec<u32> = offs
        .iter()
        .map(|&o| kinds::info_kind(words[o as usize + 1]))
        .collect();
    let rec = offs
        .iter()
        .zip(&kinds)
        .find(|&(&o, &k)| k == Kind::Struct as u32 && kinds::info_vlen(words[o as usize + 1]) > 0)
        .map(|(&o, _)| o as usize)
        .expect("a STRUCT with members");
    // The first member's words follow the 3-word record head.
    (types + rec * 4, types + (rec + 3) * 4, kinds)
}

/// `dwarf2btf verify --kernel FILE [--base BASE]`'s output; `None` when it could not ask the
/// kernel (exit 3: no privilege, no bpf()), a [`skip`].
pub fn verify_kernel_cli(file: &Path, base: Option<&Path>) -> Option<Output> {
    let mut cmd = Command::new(bin());
    cmd.args(["verify", "--kernel"]).arg(file);
    if let Some(base) = base {
        cmd.arg("--base").arg(base);
    }
    let out = run(&mut cmd);
    if out.status.code() == Some(3) {
        skip(String::from_utf8_lossy(&out.stderr).trim());
        return None;
    }
    Some(out)
}
