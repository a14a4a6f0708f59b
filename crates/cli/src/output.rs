//! Where results go and how progress is shown.

use indicatif::{ProgressBar, ProgressStyle};
use latlab_core::progress::Progress;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

/// Default directory for result files.
pub const RESULTS_DIR: &str = "latlab-results";

/// The default result path for `kind` (e.g. `host-clocks`) at UTC time `rfc3339`:
/// `latlab-results/host-clocks-20261122T140305Z.json`.
pub fn default_result_path(kind: &str, rfc3339: &str) -> PathBuf {
    let stamp: String = rfc3339.chars().filter(|c| *c != '-' && *c != ':').collect();
    Path::new(RESULTS_DIR).join(format!("{kind}-{stamp}.json"))
}

/// `path` itself if no file is there yet, else the first free `stem-N.ext` (default names
/// have one-second resolution; two runs in the same second must not overwrite each other).
pub fn unique(path: PathBuf) -> PathBuf {
    if !path.exists() {
        return path;
    }
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let ext = path
        .extension()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    (1..)
        .map(|n| path.with_file_name(format!("{stem}-{n}.{ext}")))
        .find(|p| !p.exists())
        .expect("some suffix is free")
}

/// The file a run writes to: a path the user named (`-o`, `--output`) is used as given and
/// an existing file there is replaced; a default path is made [`unique`], so runs that
/// named nothing never overwrite each other. Every command that writes files follows this.
pub fn named_or_unique(path: PathBuf, named: bool) -> PathBuf {
    if named {
        path
    } else {
        unique(path)
    }
}

/// Where a measuring command writes.
pub struct Outputs {
    /// When the run started (RFC 3339, UTC); also names the default result file.
    pub started_utc: String,
    /// The result file: `-o FILE`, else `latlab-results/<kind>-<UTC>.json` (made unique).
    pub result: PathBuf,
    /// The figure of `--plot [FILE]`: FILE, else the result's name with `.svg`.
    pub plot: Option<PathBuf>,
}

/// Resolves `-o` and `--plot` for a run of `kind` starting now; a `--plot` file that is
/// neither .svg nor .png is a usage error naming the flag.
pub fn outputs(
    kind: &str,
    out: &crate::args::OutputArgs,
    plot: Option<&Option<PathBuf>>,
) -> anyhow::Result<Outputs> {
    let started_utc = latlab_sys::host::utc_now_rfc3339();
    let result = result_path(out, kind, &started_utc);
    let plot = plot.map(|p| p.clone().unwrap_or_else(|| sibling(&result, "svg")));
    if let Some(p) = &plot {
        latlab_report::ImageFormat::from_path(p)
            .map_err(|e| crate::exit::usage(format!("--plot: {e}")))?;
    }
    Ok(Outputs {
        started_utc,
        result,
        plot,
    })
}

/// The result file of a run of `kind` started at `started_utc`: `-o FILE` as given, else
/// `latlab-results/<kind>-<UTC>.json` (made unique).
pub fn result_path(out: &crate::args::OutputArgs, kind: &str, started_utc: &str) -> PathBuf {
    match &out.output {
        Some(p) => named_or_unique(p.clone(), true),
        None => named_or_unique(default_result_path(kind, started_utc), false),
    }
}

/// `path` with its extension replaced.
pub fn sibling(path: &Path, ext: &str) -> PathBuf {
    path.with_extension(ext)
}

/// Whether a progress bar is shown: never when `quiet`, never when stderr is not a
/// terminal (piped or redirected output gets no progress), and not for work expected to
/// take under ~2 s.
pub fn shows_progress(quiet: bool, stderr_is_terminal: bool, expected_secs: f64) -> bool {
    !quiet && stderr_is_terminal && expected_secs >= 2.0
}

/// A progress bar on stderr for `steps` steps expected to take `expected_secs`
/// (`f64::INFINITY` when unknown but long), with the current step and an ETA; hidden as
/// [`shows_progress`] says. It redraws only when told (no ticking thread that would
/// disturb a measurement).
pub fn progress(steps: u64, expected_secs: f64, quiet: bool) -> ProgressBar {
    if !shows_progress(quiet, std::io::stderr().is_terminal(), expected_secs) {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::new(steps);
    pb.set_style(
        ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} {msg} (ETA {eta})")
            .expect("static template")
            .progress_chars("=> "),
    );
    pb.set_prefix("measuring");
    pb
}

/// The progress callback of a library that names each step as it starts: shows the name
/// on `pb` and advances it by one.
pub fn named_steps(pb: &ProgressBar) -> impl FnMut(&str) + '_ {
    move |name| {
        pb.set_message(name.to_string());
        pb.inc(1);
    }
}

/// A library's [`Progress`] drawn on a bar: each step sets the bar's length, position and
/// message; the bar is cleared when dropped.
pub struct Bar(pub ProgressBar);

impl Bar {
    /// A bar for long work of a number of steps the library will say (hidden when quiet
    /// or when stderr is not a terminal).
    pub fn new(quiet: bool) -> Bar {
        Bar(progress(0, f64::INFINITY, quiet))
    }
}

impl Progress for Bar {
    fn step(&mut self, name: &str, done: u64, total: u64) {
        if self.0.length() != Some(total) {
            self.0.set_length(total);
        }
        self.0.set_message(name.to_string());
        self.0.set_position(done.min(total));
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        self.0.finish_and_clear();
    }
}

/// A bar for one long measurement whose library reports no steps (a long `net probe`): a
/// thread redraws it once a second from the wall clock, with the ETA of the planned
/// duration. Shown only as [`shows_progress`] says; the thread sleeps between redraws,
/// is placed on a CPU the measurement does not use when there is one (`avoid`), and is
/// stopped and the bar cleared when this is dropped.
pub struct TimedBar {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl TimedBar {
    /// `label` for `expected` of work; `avoid`: CPUs the measurement pins its threads to.
    pub fn start(
        label: &str,
        expected: std::time::Duration,
        quiet: bool,
        avoid: &[u32],
    ) -> TimedBar {
        use std::sync::atomic::{AtomicBool, Ordering};
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let secs = expected.as_secs_f64();
        if !shows_progress(quiet, std::io::stderr().is_terminal(), secs) {
            return TimedBar { stop, thread: None };
        }
        let pb = ProgressBar::new(expected.as_secs().max(1));
        pb.set_style(
            ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} s {msg} (ETA {eta})")
                .expect("static template")
                .progress_chars("=> "),
        );
        pb.set_prefix("measuring");
        pb.set_message(label.to_string());
        let quiet_cpu = (0..latlab_sys::sched::online_cpus()).find(|c| !avoid.contains(c));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("latlab-progress".into())
            .spawn(move || {
                if let Some(c) = quiet_cpu {
                    let _ = latlab_sys::sched::pin_current_thread(c);
                }
                let t0 = std::time::Instant::now();
                while !flag.load(Ordering::Acquire) {
                    pb.set_position(t0.elapsed().as_secs().min(pb.length().unwrap_or(0)));
                    std::thread::park_timeout(std::time::Duration::from_secs(1));
                }
                pb.finish_and_clear();
            })
            .ok();
        TimedBar { stop, thread }
    }
}

impl Drop for TimedBar {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Release);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}

/// `--plot`: draws the CCDF of `series` (every histogram when empty) of `saved`, the
/// result just written to `result`, into `plot`, and says where unless `quiet`.
pub fn plot_ccdf(
    (result, saved): (&Path, latlab_core::results::ResultFile),
    series: &[String],
    title: &str,
    plot: &Path,
    quiet: bool,
) -> anyhow::Result<()> {
    use anyhow::Context as _;
    latlab_report::figures::plot_files(
        &[(result.to_path_buf(), saved)],
        series,
        latlab_report::PlotKind::Ccdf,
        title,
        plot,
    )
    .with_context(|| format!("drawing {}", plot.display()))?;
    if !quiet {
        println!("plot: {}", plot.display());
    }
    Ok(())
}

/// The one line on the run's idle policy (`idle: haltpoll, CPUs 0,1 halted … ; not held`)
/// that measuring commands print before the result's path, when the result records one,
/// and the one on what `--isolate` changed, when it isolated CPUs.
pub fn print_idle(r: &latlab_core::results::ResultFile) {
    if let Some(idle) = &r.provenance.idle {
        println!("{}", idle.summary());
    }
    if let Some(iso) = &r.provenance.isolation {
        println!("{}", iso.summary());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_is_shown_only_on_a_terminal_when_not_quiet_for_long_work() {
        assert!(shows_progress(false, true, 2.0));
        assert!(shows_progress(false, true, f64::INFINITY));
        assert!(!shows_progress(true, true, 60.0), "-q");
        assert!(!shows_progress(false, false, 60.0), "stderr piped");
        assert!(!shows_progress(false, true, 1.0), "short work");
    }

    #[test]
    fn a_timed_bar_starts_no_thread_when_quiet_or_piped() {
        let long = std::time::Duration::from_secs(60);
        assert!(TimedBar::start("probing", long, true, &[]).thread.is_none());
        if !std::io::stderr().is_terminal() {
            assert!(TimedBar::start("probing", long, false, &[0])
                .thread
                .is_none());
        }
    }

    #[test]
    fn the_bar_follows_the_library_steps() {
        // a hidden bar still keeps its state: what a visible one would draw
        let mut b = Bar(ProgressBar::hidden());
        b.step("NF default, generator receive blocking", 0, 10);
        assert_eq!((b.0.position(), b.0.length()), (0, Some(10)));
        b.step("NF hog, generator receive busy", 3, 10);
        assert_eq!((b.0.position(), b.0.length()), (3, Some(10)));
        assert_eq!(b.0.message(), "NF hog, generator receive busy");
        // a library that learns more steps on the way, and one that overshoots
        b.step("extra", 11, 12);
        assert_eq!((b.0.position(), b.0.length()), (11, Some(12)));
        b.step("past", 20, 12);
        assert_eq!(b.0.position(), 12);
        // with -q, or piped, the bar draws nothing: hidden
        assert!(Bar::new(true).0.is_hidden());
    }

    #[test]
    fn default_names_are_filesystem_safe() {
        let p = default_result_path("host-clocks", "2026-11-22T14:03:05Z");
        assert_eq!(
            p,
            Path::new("latlab-results/host-clocks-20261122T140305Z.json")
        );
        let dir = std::env::temp_dir().join(format!("latlab-unique-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let first = dir.join("r.json");
        assert_eq!(unique(first.clone()), first);
        std::fs::write(&first, "x").unwrap();
        assert_eq!(unique(first.clone()), dir.join("r-1.json"));
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(
            sibling(&p, "hlog"),
            Path::new("latlab-results/host-clocks-20261122T140305Z.hlog")
        );
    }
}
