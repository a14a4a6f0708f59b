//! The measuring runs behind `latlab net reflect|forward|probe`, as one library call each.
//!
//! The user-facing command and an orchestrated child (`latlab child JOB`, see
//! [`crate::orchestrate`]) make the same call with the same resolved configuration: an
//! [`NfJob`] or a [`ProbeJob`]. Both serialise, so an orchestrator hands them to a child as
//! a versioned job ([`latlab_core::child::ChildJob`]) instead of re-spelling flags.

use crate::explain;
use crate::nf::{self, NfConfig, NfError, Role};
use crate::probe::{self, ProbeError, ValidProbeConfig};
use latlab_core::results::{ResultError, ResultFile, StoredHistogram, ThreadPlacement};
use latlab_core::units::Nanos;
use latlab_explain::KernelSession;
use latlab_sys::host;
use latlab_sys::tsc::Clock;
use serde::{Deserialize, Serialize};
use std::io::BufRead as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Job name of an NF child (config [`NfJob`]).
pub const NF_JOB: &str = "net.nf";
/// Job name of a probe child (config [`ProbeJob`]).
pub const PROBE_JOB: &str = "net.probe";

/// Errors of a run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// The network function could not start.
    #[error(transparent)]
    Nf(#[from] NfError),
    /// The probe failed.
    #[error(transparent)]
    Probe(#[from] ProbeError),
    /// The interval log could not be written.
    #[error("writing the interval log: {0}")]
    IntervalLog(#[from] latlab_core::results::hlog::HlogError),
    /// A result could not be written.
    #[error(transparent)]
    Result(#[from] ResultError),
}

/// A network-function run: its configuration and when it stops.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NfJob {
    /// The network function.
    pub nf: NfConfig,
    /// Stop after this long (`None`: until stopped otherwise).
    pub duration: Option<Nanos>,
    /// Stop when standard input reaches end of file (how an orchestrator stops its NF).
    pub until_stdin_closes: bool,
    /// `--explain`: attribute the busy threads' stalls (absent in older jobs: off).
    #[serde(default)]
    pub explain: explain::ExplainSpec,
}

/// The command name of a role: `reflect` or `forward` (names the default result file and
/// the result's `data.role`).
pub fn role_name(role: &Role) -> &'static str {
    match role {
        Role::Reflect { .. } => "reflect",
        Role::Forward { .. } => "forward",
    }
}

/// Runs a network function until `job` says stop, or SIGINT/SIGTERM once the caller has
/// installed [`latlab_sys::signal::install_stop_handler`], and returns its `net.nf` result.
/// `ready` is called with the local addresses once every thread listens (the command
/// prints the `ready` line orchestrators wait for there).
///
/// With `--explain` (busy mode), kernel events are recorded while it runs and the busy
/// threads' stalls attributed; `notice` is told in one line when kernel events cannot be
/// had.
pub fn nf(
    job: &NfJob,
    argv: Vec<String>,
    started_utc: String,
    ready: impl FnOnce(&[SocketAddr]),
    notice: &mut dyn FnMut(&str),
) -> Result<ResultFile, RunError> {
    let cfg = &job.nf;
    let what = role_name(&cfg.role);
    let (clock, timebase) = Clock::establish(Nanos::from_millis(100));
    let mut lock_warnings = Vec::new();
    let memory_locked = latlab_sys::sched::lock_memory_or_warn(&mut lock_warnings);
    let udp_before = latlab_sys::netstat::udp_rcvbuf_errors();
    let ks = job.explain.enabled.then(|| {
        KernelSession::start(
            &explain::kernel_request(&clock, timebase.fallback_reason.as_deref(), &job.explain),
            notice,
        )
    });
    let handle = nf::start_recording(cfg, clock, job.explain.enabled)?;
    let t0 = clock.now();
    ready(&handle.local);
    let stop = Arc::new(AtomicBool::new(false));
    if job.until_stdin_closes {
        raise_when_stdin_closes(stop.clone());
    }
    let deadline = job
        .duration
        .map(|d| clock.now() + probe::ns_to_raw(&clock, d.get()));
    loop {
        if stop.load(Ordering::Relaxed)
            || latlab_sys::signal::stop_requested()
            || deadline.is_some_and(|d| clock.now() >= d)
        {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let counters = handle.counters.clone();
    let locals: Vec<String> = handle.local.iter().map(|l| l.to_string()).collect();
    let xdp = handle.xdp.clone();
    let outs = handle.stop();
    let t1 = clock.now();
    let got = ks.map(|k| k.finish(notice));
    let threads: Vec<ThreadPlacement> = outs
        .iter()
        .map(|o| {
            crate::result::thread_placement(
                format!("nf {}", o.name),
                (o.cpu, o.policy.0.clone(), o.policy.1),
            )
        })
        .collect();
    let provenance = host::provenance(timebase, threads, memory_locked, started_utc);
    let mut r = ResultFile::new(
        nf::NF_RESULT_KIND,
        argv,
        serde_json::to_value(cfg).unwrap_or(serde_json::Value::Null),
        provenance,
    );
    r.duration_ns = clock.delta_nanos(t0, t1).get();
    r.warnings.extend(lock_warnings);
    for o in &outs {
        r.histograms.push(
            StoredHistogram::new(format!("nf.residence.{}", o.name), &o.residence)
                .with_label("thread", o.name.clone()),
        );
    }
    for (k, v) in counters.snapshot() {
        r.counters.insert(k, v);
    }
    // drops before the NF could read: full socket buffers in its namespace
    r.counters.insert(
        "udp_rcvbuf_drops".into(),
        latlab_sys::netstat::udp_rcvbuf_errors().saturating_sub(udp_before),
    );
    r.data = serde_json::to_value(nf::NfData {
        role: what.to_string(),
        local: locals,
        threads: outs
            .iter()
            .map(|o| (o.name.clone(), o.cpu, o.policy.0.clone(), o.policy.1))
            .collect(),
        xdp,
    })
    .unwrap_or(serde_json::Value::Null);
    if let Some(got) = &got {
        let threads: Vec<explain::ThreadStalls<'_>> = outs
            .iter()
            .map(|o| explain::ThreadStalls {
                cpu: o.cpu,
                gaps: &o.stalls,
                overflow: o.stall_overflow,
                loop_cost: o.loop_cost,
            })
            .collect();
        let (a, data) =
            explain::attribute_stalls(got, &clock, job.explain.above, &threads, (t0, t1));
        if cfg.io == nf::IoMode::Blocking {
            r.warnings.push("--explain with blocking I/O: a thread waiting in recv cannot be told from one that lost its CPU, so no stalls were recorded (use --io busy)".into());
        }
        explain::record(&mut r, a, data);
    }
    Ok(r)
}

/// A probe run: the probe's configuration and what its result records beside it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProbeJob {
    /// The probe, checked where it was resolved (a job file's, as it is read).
    pub probe: ValidProbeConfig,
    /// The network function's configuration, recorded in the result when the caller knows
    /// it (free-form: orchestrators add what they vary, e.g. a ladder step's name).
    #[serde(default)]
    pub nf: Option<serde_json::Value>,
    /// The command line the result records, when it is not this process's own (the
    /// user's `latlab net probe --testbed …`, measured by a child in the namespace).
    #[serde(default)]
    pub argv: Option<Vec<String>>,
    /// Warnings the result carries beside the run's own (e.g. that real-time throttling
    /// was off, which the caller arranged).
    #[serde(default)]
    pub warnings: Vec<String>,
}

impl ProbeJob {
    /// A job for `probe` with nothing else recorded.
    pub fn new(probe: ValidProbeConfig) -> ProbeJob {
        ProbeJob {
            probe,
            nf: None,
            argv: None,
            warnings: Vec::new(),
        }
    }
}

/// A finished probe run: its result and its interval log, not yet written.
#[derive(Debug)]
pub struct ProbeRecord {
    /// The `net.probe` result.
    pub result: ResultFile,
    /// The interval log (HdrHistogram log text).
    pub interval_log: Vec<u8>,
}

/// Runs a probe as `latlab net probe` does: establishes the clock, locks memory, runs and
/// builds the result and its interval log. `argv` is recorded unless the job names one.
/// With `--explain`, kernel events are recorded around the run and the samples above the
/// threshold attributed; `notice` is told in one line when kernel events cannot be had
/// (the run carries on with the threads' stalls alone).
pub fn probe(
    job: &ProbeJob,
    argv: Vec<String>,
    started_utc: String,
    notice: &mut dyn FnMut(&str),
) -> Result<ProbeRecord, RunError> {
    let cfg = &job.probe;
    let (clock, timebase) = Clock::establish(Nanos::from_millis(100));
    let mut lock_warnings = Vec::new();
    let memory_locked = latlab_sys::sched::lock_memory_or_warn(&mut lock_warnings);
    let wall_start = std::time::SystemTime::now();
    let ks = cfg.explain.enabled.then(|| {
        let mut req =
            explain::kernel_request(&clock, timebase.fallback_reason.as_deref(), &cfg.explain);
        req.drop_idle_switches = explain::probe_idle_switches(
            cfg.mode == probe::Mode::Pingpong,
            cfg.rx_io == nf::IoMode::Blocking,
        );
        KernelSession::start(&req, notice)
    });
    let span_start = clock.now();
    let outcome = probe::run(cfg, clock);
    let span_end = clock.now();
    let got = ks.map(|k| k.finish(notice));
    let outcome = outcome?;
    let provenance = host::provenance(
        timebase,
        crate::result::probe_threads(&outcome),
        memory_locked,
        started_utc,
    );
    let mut result = crate::result::probe_result(
        cfg,
        &outcome,
        job.argv.clone().unwrap_or(argv),
        provenance,
        job.nf.clone(),
        Nanos(outcome.checks.measured_ns),
    );
    result.warnings.extend(lock_warnings);
    result.warnings.extend(job.warnings.iter().cloned());
    if let Some(got) = &got {
        let cpus = explain::online();
        let mut stalls = explain::stalls_of(&outcome.tx.stalls, cfg.tx_cpu, &cpus);
        stalls.extend(explain::stalls_of(&outcome.rx_stalls, cfg.rx_cpu, &cpus));
        let run = explain::RunSamples {
            log: outcome.samples.clone(),
            stalls,
            stall_overflow: outcome.tx.stall_overflow + outcome.rx_stall_overflow,
            span: (span_start, span_end),
            cpus,
        };
        let (a, data) = explain::attribute_samples(got, &clock, cfg.explain.above, &run);
        explain::record(&mut result, a, data);
    }
    let interval_log = crate::result::probe_interval_log(&outcome, wall_start, cfg.interval)?;
    Ok(ProbeRecord {
        result,
        interval_log,
    })
}

/// Where the interval log of a probe result at `result` goes: beside it, `.hlog`.
pub fn interval_log_path(result: &Path) -> PathBuf {
    result.with_extension("hlog")
}

impl ProbeRecord {
    /// Writes the result to `path` (naming its interval log) and the interval log beside
    /// it; returns the interval log's path.
    pub fn save(mut self, path: &Path) -> Result<PathBuf, RunError> {
        let hlog_path = interval_log_path(path);
        self.result.interval_log = hlog_path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned());
        self.result.save(path)?;
        latlab_core::results::write_atomically(&hlog_path, &self.interval_log)?;
        Ok(hlog_path)
    }
}

/// Raises `flag` from a thread of its own once standard input reaches its end (an
/// orchestrator closing it is how `--until-stdin-closes` NFs are told to stop).
pub fn raise_when_stdin_closes(flag: Arc<AtomicBool>) {
    std::thread::spawn(move || {
        let stdin = std::io::stdin();
        let mut line = String::new();
        while stdin
            .lock()
            .read_line(&mut line)
            .map(|n| n > 0)
            .unwrap_or(false)
        {
            line.clear();
        }
        flag.store(true, Ordering::Relaxed);
    });
}
