//! What the end-to-end tests share: the binary, fixtures, the usage-error assertion, the
//! report round trip, and (from `latlab-testutil`) the root check and SKIP lines.

use assert_cmd::Command;
use std::cell::Cell;
use std::ffi::OsStr;
use std::ops::{Deref, DerefMut};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

pub use latlab_testutil::{is_root, require_root, skip};

/// The `latlab` binary under test, holding a shared turn while it runs (see
/// [`system_turn`]).
pub fn latlab() -> Latlab {
    Latlab {
        cmd: Command::cargo_bin("latlab").unwrap(),
        _shared: shared_turn(),
    }
}

/// `latlab` with the words of `line` as its first arguments (split at whitespace: for
/// arguments without spaces); add paths with `.arg`.
pub fn latlab_line(line: &str) -> Latlab {
    let mut c = latlab();
    c.args(line.split_whitespace());
    c
}

/// Runs `cmd`, asserts that it succeeded and returns its stdout.
pub fn run_ok(cmd: &mut Command) -> String {
    ok(&cmd.output().unwrap())
}

/// Its path, for `std::process::Command` (spawned children, `mpirun`, `ip netns exec`).
pub fn latlab_bin() -> PathBuf {
    assert_cmd::cargo::cargo_bin("latlab")
}

/// A checked-in fixture: `tests/fixtures/<name>`.
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// Output bytes as text.
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Asserts that the command succeeded (showing its stderr and stdout otherwise) and returns
/// its stdout, which must be UTF-8.
pub fn ok(out: &Output) -> String {
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}\n{stdout}", text(&out.stderr));
    String::from_utf8(out.stdout.clone()).expect("stdout is UTF-8")
}

/// Asserts a failure with exit `code` and exactly one line on stderr containing every
/// needle.
pub fn assert_one_line_error(out: &Output, code: i32, needles: &[&str]) {
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "stderr: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "not one line: {err}");
    for n in needles {
        assert!(err.contains(n), "'{n}' missing from: {err}");
    }
}

/// Runs `latlab ARGS` and asserts a usage error: exit 2 and one line on stderr containing
/// every needle.
pub fn assert_usage_error<I, S>(args: I, needles: &[&str])
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let args: Vec<S> = args.into_iter().collect();
    let out = latlab().args(&args).output().unwrap();
    let shown: Vec<_> = args.iter().map(|a| a.as_ref().to_string_lossy()).collect();
    assert_eq!(
        out.status.code(),
        Some(2),
        "{shown:?}: {}",
        text(&out.stderr)
    );
    assert_one_line_error(&out, 2, needles);
}

/// Runs `latlab report INPUTS -o HTML EXTRA`, asserts it succeeded and returns the HTML.
pub fn report_html<I, S>(inputs: I, html: &Path, extra: &[&str]) -> String
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    ok(&latlab()
        .arg("report")
        .args(inputs)
        .arg("-o")
        .arg(html)
        .args(extra)
        .output()
        .unwrap());
    std::fs::read_to_string(html).unwrap()
}

/// The sections every report on `host clocks` results has, in order.
pub const CLOCKS_REPORT_SECTIONS: [&str; 6] = [
    "overview",
    "trust",
    "clock-sources",
    "distributions",
    "percentiles",
    "provenance",
];

/// Asserts that the report `html` has a section with each of `ids`.
pub fn assert_sections(html: &str, ids: &[&str]) {
    for id in ids {
        assert!(
            html.contains(&format!("<section id=\"{id}\">")),
            "section {id} missing"
        );
    }
}

/// Asserts that `text` contains every needle.
pub fn assert_contains(text: &str, needles: &[&str]) {
    for n in needles {
        assert!(
            text.contains(n),
            "'{n}' missing from: {}",
            if text.len() > 4000 {
                "(a long text)"
            } else {
                text
            }
        );
    }
}

/// The text of the report section with `id`, up to the next section.
pub fn section<'a>(html: &'a str, id: &str) -> &'a str {
    let start = html
        .find(&format!("<section id=\"{id}\">"))
        .unwrap_or_else(|| panic!("no section {id}"));
    let rest = &html[start..];
    &rest[..rest.find("</section>").unwrap_or(rest.len())]
}

/// `mpirun` usable and latlab built with MPI, or why not.
pub fn mpi_ready() -> Result<(), String> {
    let mpirun = std::process::Command::new("mpirun")
        .arg("--version")
        .output();
    if !mpirun.is_ok_and(|o| o.status.success()) {
        return Err("mpirun not found (install openmpi-bin: make deps-test)".into());
    }
    if !cfg!(feature = "mpi") {
        return Err("latlab built without the mpi feature".into());
    }
    Ok(())
}

/// Runs `latlab ARGS` on `ranks` MPI ranks (as root too, oversubscribed).
pub fn mpirun(ranks: u32, args: &[&str], out: &Path) -> Output {
    let _shared = shared_turn();
    std::process::Command::new("mpirun")
        .args(["--allow-run-as-root", "--oversubscribe", "-n"])
        .arg(ranks.to_string())
        .env("OMPI_MCA_btl_vader_single_copy_mechanism", "none")
        .arg(latlab_bin())
        .args(args)
        .arg("-o")
        .arg(out)
        .output()
        .unwrap()
}

/// Tests that use or change something system-wide run alone: the namespace testbed (built,
/// removed, pushed traffic through), the SCHED_DEADLINE bandwidth pool (reserved or
/// exhausted on purpose), `kernel.sched_rt_runtime_us` (which also switches deadline
/// admission control), real-time threads that starve others, and measurements that busy
/// neighbours would skew (a latency breakdown compares medians, a ping-pong counts losses).
///
/// When these tests lived in separate test binaries, cargo ran each binary after the other.
/// In one binary, such a test holds this turn for its whole run, and every process the other
/// tests start (`latlab`, `mpirun`, Chromium) holds a [`shared_turn`] while it runs, so
/// nothing else runs beside it, while the light tests still run in parallel with each other.
///
/// The turn is also an exclusive `flock` on [`TESTBED_LOCK`], the lock the benchmark scripts
/// take: two test runs at once (two checkouts, or a script beside `make test`) never build,
/// remove or push traffic through one testbed together.
pub fn system_turn() -> SystemTurn {
    let guard = TURN.write().unwrap_or_else(|e| e.into_inner());
    let lock = latlab_sys::flock::FileLock::exclusive(Path::new(TESTBED_LOCK))
        .unwrap_or_else(|e| panic!("{TESTBED_LOCK}: {e}"));
    EXCLUSIVE.with(|e| e.set(true));
    SystemTurn(guard, lock)
}

/// The lock file that serialises every process using the namespace testbed or another
/// system-wide setting (tests and `scripts/`).
pub const TESTBED_LOCK: &str = "/tmp/latlab-testbed.lock";

/// Starts a test that uses something system-wide: returns from it with a SKIP line
/// (naming `why`, as for `format!`) unless it runs as root, then takes the exclusive
/// [`system_turn`], held until the returned guard drops.
macro_rules! system_test {
    ($($why:tt)+) => {{
        $crate::util::require_root!($($why)+);
        $crate::util::system_turn()
    }};
}
pub(crate) use system_test;

/// Returns from the calling test with a SKIP line saying why when `mpirun` or latlab's
/// MPI support is missing (see [`mpi_ready`]).
macro_rules! require_mpi {
    () => {
        if let Err(why) = $crate::util::mpi_ready() {
            $crate::util::skip!("{why}");
        }
    };
}
pub(crate) use require_mpi;

/// A shared turn, held while a process of a test that does not hold the [`system_turn`]
/// runs (`latlab`, `mpirun`, Chromium); `None` in the test that holds it.
pub fn shared_turn() -> Option<RwLockReadGuard<'static, ()>> {
    (!EXCLUSIVE.with(Cell::get)).then(|| TURN.read().unwrap_or_else(|e| e.into_inner()))
}

static TURN: RwLock<()> = RwLock::new(());

thread_local! {
    /// Whether this test's thread holds the [`system_turn`] (its own latlab processes then
    /// need no shared turn).
    static EXCLUSIVE: Cell<bool> = const { Cell::new(false) };
}

/// The exclusive turn of one test: see [`system_turn`].
pub struct SystemTurn(
    #[allow(dead_code)] RwLockWriteGuard<'static, ()>,
    #[allow(dead_code)] latlab_sys::flock::FileLock,
);

impl Drop for SystemTurn {
    fn drop(&mut self) {
        EXCLUSIVE.with(|e| e.set(false));
    }
}

/// A `latlab` command that holds a shared turn (unless its test holds the
/// [`system_turn`]) until the statement that runs it ends; a [`Command`] otherwise.
pub struct Latlab {
    cmd: Command,
    _shared: Option<RwLockReadGuard<'static, ()>>,
}

impl Deref for Latlab {
    type Target = Command;
    fn deref(&self) -> &Command {
        &self.cmd
    }
}

impl DerefMut for Latlab {
    fn deref_mut(&mut self) -> &mut Command {
        &mut self.cmd
    }
}

/// Asserts that an attribution names the test's FIFO hog (`latlab-hog`) as a preempting
/// task.
pub fn assert_hog_found(a: &latlab_core::results::Attribution) {
    assert!(
        a.causes
            .iter()
            .any(|c| c.class == "preempted" && c.name == "latlab-hog"),
        "{:?}",
        a.causes
    );
}

/// Polls `appeared` every 50 ms until `what` is there, failing when `run` (the command
/// `who`) ends first or after 120 s.
pub fn wait_while_running(
    run: &mut std::process::Child,
    who: &str,
    what: &str,
    appeared: impl Fn() -> bool,
) {
    let t0 = std::time::Instant::now();
    while !appeared() {
        if let Some(status) = run.try_wait().unwrap() {
            panic!("{who} ended ({status}) before its {what} appeared");
        }
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(120),
            "no {what} after 120 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Sends `signal` (`-TERM`, `-INT`) to `target` (a pid, or `-PGID` for a process group)
/// and waits up to 30 s for `run` (the command `who`) to end: its status and its stderr
/// (empty when it was not piped).
pub fn signal_and_wait(
    run: &mut std::process::Child,
    who: &str,
    signal: &str,
    target: &str,
) -> (std::process::ExitStatus, String) {
    ok(&std::process::Command::new("kill")
        .args([signal, "--", target])
        .output()
        .unwrap());
    let t0 = std::time::Instant::now();
    let status = loop {
        if let Some(s) = run.try_wait().unwrap() {
            break s;
        }
        if t0.elapsed() > std::time::Duration::from_secs(30) {
            let _ = run.kill();
            panic!("{who} did not stop within 30 s of {signal}");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let mut err = String::new();
    if let Some(mut e) = run.stderr.take() {
        std::io::Read::read_to_string(&mut e, &mut err).unwrap();
    }
    (status, err)
}

/// Asserts that a run that could not keep its schedule stopped at its duration and said so:
/// its `schedule` self-check failed and a warning says STOPPED AT ITS DURATION.
pub fn assert_stopped_at_its_duration(r: &latlab_core::results::ResultFile) {
    let v = r
        .self_checks
        .iter()
        .find(|v| v.check == "schedule")
        .expect("a schedule self-check");
    assert!(!v.passed(), "{}", v.line());
    assert!(
        r.warnings
            .iter()
            .any(|w| w.starts_with("STOPPED AT ITS DURATION")),
        "{:?}",
        r.warnings
    );
}
