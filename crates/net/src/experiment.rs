//! `latlab experiment killer-us`: the analogue of the paper's Fig. 3 on one host. Every
//! measurement method against an OS-configuration ladder of the network function.
//!
//! Methods (each a histogram of a probe run):
//! - `user-blocking`: user TSC, blocking receive (netperf-like), `user.actual`;
//! - `user-busy`: user TSC, busy-polling receive (TRex-like), `user.actual`;
//! - `kernel`: software timestamps driver to driver, from the blocking run;
//! - `hardware`: NIC timestamps, where the interfaces have them.
//!
//! Ladder: `default` (blocking, unpinned) → `pinned` → `pinned+busy` →
//! `pinned+busy+fifo`, plus `hog` (pinned+busy with a CPU hog on the NF's core), and
//! `testpmd (DPDK, busy)`: the paper's DPDK NF ([`crate::testpmd`]) on the NF's core.

use crate::fit::{self, CpuQuiet, HostFit, RateTrial};
use crate::nf::IoMode;
use crate::orchestrate::{self, Placement, ProbeJob};
use crate::probe::{series, Sources};
use latlab_core::doc::{Curve, Figure, PlotKind};
use latlab_core::hist::LatencyHistogram;
use latlab_core::parse::Percentile;
use latlab_core::results::{ResultFile, StoredHistogram};
use latlab_core::stats::{ccdf, is_supported};
use latlab_core::units::{format_ns, Nanos};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

pub use crate::killer_data::{
    KillerUsConfig, KillerUsData, Step, SummaryRow, TailShare, GEN_MODES, LADDER, METHODS,
    RESULT_KIND, STEPS,
};

/// What the CLI prints.
#[derive(Clone, Debug)]
pub struct Summary {
    /// The table as text.
    pub table_text: String,
    /// Warnings.
    pub warnings: Vec<String>,
    /// Files written, and the figure files the caller draws (see `figures`).
    pub files: Vec<PathBuf>,
    /// The CCDF figures, one per method, with the file each belongs in. The library does
    /// not draw (measuring crates carry no plotting code): the caller renders each with
    /// `latlab_report::write_figure`.
    pub figures: Vec<(PathBuf, Figure)>,
}

/// Errors.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExperimentError {
    /// A child run failed.
    #[error(transparent)]
    Orchestrate(#[from] orchestrate::OrchestrateError),
    /// A file could not be written.
    #[error(transparent)]
    Result(#[from] latlab_core::results::ResultError),
    /// A rung's probe configuration fails the probe's checks.
    #[error(transparent)]
    Probe(#[from] crate::probe::ProbeError),
    /// DPDK's testpmd failed on its rung.
    #[error(transparent)]
    Testpmd(#[from] crate::testpmd::TestpmdError),
    /// SIGINT or SIGTERM arrived; everything the experiment changed was put back.
    #[error("interrupted (real-time throttling and the testbed were restored)")]
    Interrupted,
}

/// `SCHED_FIFO` priority of the generator's threads when running as root: above the NF's
/// ([`STEPS`]' 50), so that neither the NF nor a compile job delays a send.
pub const GEN_FIFO: i32 = 60;

/// How many times a run whose generator fell behind is repeated.
pub const RETRIES: u32 = 1;

/// One method's histograms, one per NF configuration.
type MethodCurves<'a> = (&'a str, &'a str, Vec<(String, LatencyHistogram)>);

/// A CPU hog: a thread spinning on `cpu` until dropped.
struct Hog {
    stop: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl Hog {
    fn start(cpu: u32) -> Hog {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let handle = std::thread::spawn(move || {
            let _ = latlab_sys::sched::pin_current_thread(cpu);
            let mut x = 0u64;
            while !s.load(Ordering::Relaxed) {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                std::hint::black_box(x);
            }
        });
        Hog {
            stop,
            handle: Some(handle),
        }
    }
}

impl Drop for Hog {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// The percentiles of the table.
fn table_percentiles() -> [Percentile; 4] {
    [
        Percentile::LADDER[0],
        Percentile::LADDER[2],
        Percentile::LADDER[3],
        Percentile::LADDER[4],
    ]
}

/// One NF + probe run: where it goes and how it is paced.
struct RunPlan<'a> {
    exe: &'a Path,
    dir: &'a Path,
    placement: Placement,
    gen_cpu: u32,
    nf_cpu: u32,
    gen_fifo: Option<i32>,
    /// `--explain` for the probe (the rate trials run with it too: the recorder costs the
    /// generator time, and the rate they choose must hold for the ladder).
    explain: crate::explain::ExplainSpec,
}

impl RunPlan<'_> {
    /// Runs the NF of `step` and a probe against it (the generator's mode `gen_io`: its
    /// receive path, and with [`IoMode::Xdp`] its send path too) at `milli_pps`
    /// for `duration` after `warmup`, writing `nf-NAME.json` and `probe-NAME.json` (with
    /// `prefix`); returns the probe's result and both files.
    #[allow(clippy::too_many_arguments)]
    fn run(
        &self,
        step: &Step,
        loopback: bool,
        name: &str,
        gen_io: IoMode,
        milli_pps: u64,
        duration: Nanos,
        warmup: Nanos,
        sources: Sources,
    ) -> Result<(ResultFile, [PathBuf; 2]), ExperimentError> {
        let nf_path = self.dir.join(format!("nf-{name}.json"));
        let probe_path = self.dir.join(format!("probe-{name}.json"));
        let hog = step.hog.then(|| Hog::start(self.nf_cpu));
        let started = (
            latlab_sys::host::utc_now_rfc3339(),
            std::time::Instant::now(),
        );
        let nf = if step.testpmd {
            RungNf::Testpmd(crate::testpmd::Testpmd::start(
                crate::testpmd::Pmd::AfPacket,
                self.nf_cpu,
            )?)
        } else {
            RungNf::Latlab(orchestrate::start_nf(
                self.exe,
                self.placement,
                &step.nf_config(self.placement, self.nf_cpu),
                &nf_path,
            )?)
        };
        let mut probe = if step.testpmd {
            crate::testpmd::probe_config()
        } else {
            self.placement.probe_config()
        };
        probe.milli_pps = milli_pps;
        probe.duration = duration;
        probe.warmup = warmup;
        // xdp: whole frames over AF_XDP both ways, one busy loop (user stamps only)
        probe.rx_io = gen_io;
        if gen_io == IoMode::Xdp {
            probe.tx_io = IoMode::Xdp;
        }
        probe.tx_cpu = Some(self.gen_cpu);
        probe.rx_cpu = Some(self.gen_cpu);
        probe.fifo = self.gen_fifo;
        probe.sources = if gen_io == IoMode::Xdp {
            Sources::USER
        } else {
            sources
        };
        // every source this host can give: hardware where the interfaces have it
        probe.hardware_optional = true;
        probe.explain = self.explain;
        let pr = ProbeJob {
            nf: Some(step.describe(loopback, self.nf_cpu)),
            ..ProbeJob::new(probe.validated()?)
        };
        let res = orchestrate::run_probe(self.exe, self.placement, &pr, &probe_path);
        let mut forwarded = None;
        let nf_res = match nf {
            RungNf::Latlab(nf) => nf.finish().map(|_| ()).map_err(ExperimentError::from),
            RungNf::Testpmd(nf) => nf.stop().map_err(ExperimentError::from).and_then(|run| {
                let ns = Nanos::from(started.1.elapsed()).get();
                let argv = vec!["dpdk-testpmd".to_string()];
                let r = crate::testpmd::result(&run, argv, started.0, ns);
                forwarded = r.counters.get("sent").copied();
                Ok(r.save(&nf_path)?)
            }),
        };
        drop(hog);
        let mut res = res?;
        nf_res?;
        // testpmd's own count must cover what the generator received, or some probes did
        // not pass through it (seen intermittently; see docs/net.md)
        let received = res.counters.get("received_unique").copied().unwrap_or(0);
        if let Some(w) = crate::testpmd::bypass_warning(forwarded, received) {
            res.warnings.push(w);
            res.save(&probe_path)?;
        }
        Ok((res, [nf_path, probe_path]))
    }
}

/// The NF of one rung: latlab's, as a child, or testpmd.
enum RungNf {
    Latlab(orchestrate::NfChild),
    Testpmd(crate::testpmd::Testpmd),
}

/// Checks what the host can sustain and chooses the CPUs, the generator's priority, the
/// rate and the duration ([`crate::fit`]); says what it chose on stderr unless quiet.
fn fit_host(
    cfg: &KillerUsConfig,
    exe: &Path,
    dir: &Path,
    placement: Placement,
    files: &mut Vec<PathBuf>,
    started: std::time::Instant,
    runs: u32,
) -> Result<HostFit, ExperimentError> {
    let say = |m: &str| {
        if !cfg.quiet {
            eprintln!("killer-us: {m}");
        }
    };
    let cpus = latlab_sys::sched::allowed_cpus();
    let gen_fifo = latlab_sys::netns::is_root().then_some(GEN_FIFO);
    say(&format!(
        "checking this host: {} CPUs ({}); spinning {} on each to see which is quiet…",
        cpus.len(),
        latlab_sys::sched::format_cpu_list(&cpus),
        format_ns(fit::QUIET_PROBE.get() as f64)
    ));
    let quiet: Vec<CpuQuiet> = fit::probe_cpus(&cpus, gen_fifo);
    for q in &quiet {
        say(&format!("  {}", q.describe()));
    }
    let (nf_cpu, gen_cpu) = fit::choose_cpus(&quiet).unwrap_or_else(orchestrate::cpus);
    let mut reasons = vec![if nf_cpu == gen_cpu {
        format!("One CPU only: the generator and the NF share CPU {gen_cpu}, so the generator's own work is in every latency.")
    } else {
        format!("The generator runs on CPU {gen_cpu}, the quietest, since its lateness decides whether a run can be trusted; the NF runs on CPU {nf_cpu}.")
    }];
    reasons.push(match gen_fifo {
        Some(p) => format!("The generator's threads run at SCHED_FIFO {p}, so that no other task on the host delays a send (a busy-polling receiver on the generator's CPU stays under the normal scheduler, which lets the sender preempt it)."),
        None => "Not root: the generator runs under the normal scheduler, so other tasks on its CPU can delay its sends.".into(),
    });
    let plan = RunPlan {
        exe,
        dir,
        placement,
        gen_cpu,
        nf_cpu,
        gen_fifo,
        // the trials run as the ladder will (the recorder has a cost), so the rate they
        // choose holds for the ladder's runs
        explain: cfg.explain,
    };
    let mut trials = Vec::new();
    // a run's fixed cost beyond its warm-up and measured time, the largest the trials saw
    let mut overhead: Option<Nanos> = None;
    let trial_warmup = Nanos::from_millis(200);
    let milli_pps = if cfg.fit_rate {
        for rate in fit::candidates(cfg.milli_pps) {
            let name = format!("fit-{}pps", rate / 1000);
            let t = std::time::Instant::now();
            let (r, paths) = plan.run(
                &STEPS[0],
                cfg.loopback,
                &name,
                IoMode::Busy,
                rate,
                fit::TRIAL,
                trial_warmup,
                Sources::USER,
            )?;
            let wall = Nanos::from(t.elapsed());
            let cost = Nanos(
                wall.get()
                    .saturating_sub(fit::TRIAL.get() + trial_warmup.get()),
            );
            overhead = Some(overhead.map_or(cost, |o| o.max(cost)));
            files.extend(paths);
            let t = trial_of(rate, &r);
            say(&format!("  trial at {}", t.describe()));
            let passed = t.passes();
            trials.push(t);
            if passed {
                break;
            }
        }
        match fit::choose_rate(&trials) {
            Some(r) => {
                reasons.push(format!("{} pps is the highest rate (of at most {} pps) at which a {} trial kept the generator's lateness p99 within {:.0} % of the mean gap and fewer than {:.1} % of its probes a gap late; the ladder runs at it.", r / 1000, cfg.milli_pps / 1000, format_ns(fit::TRIAL.get() as f64), fit::LATENESS_SHARE * 100.0, fit::LATE_SHARE * 100.0));
                r
            }
            None => {
                let lowest = trials.last().map(|t| t.milli_pps).unwrap_or(cfg.milli_pps);
                reasons.push(format!("No rate down to {} pps kept the generator on schedule in a {} trial: this host is too busy for a trustworthy run now, and the ladder runs at {} pps anyway. Rerun when the host is quieter.", lowest / 1000, format_ns(fit::TRIAL.get() as f64), lowest / 1000));
                lowest
            }
        }
    } else {
        reasons.push(format!(
            "The rate, {} pps, was given with --rate and not checked.",
            cfg.milli_pps / 1000
        ));
        cfg.milli_pps
    };
    // a ladder run costs more than a trial (every timestamp source, a longer warm-up's
    // attribution, testpmd's start): half as much again (measured 2026-11-29: trials 0.75 s,
    // runs 0.8-1.0 s, testpmd's 1.6 s)
    let overhead = overhead.map_or(fit::DEFAULT_RUN_OVERHEAD, |o| Nanos(o.get() / 2 * 3));
    let duration = match cfg.duration_cap {
        Some(cap) => {
            let mut d = fit::quick_duration(milli_pps, cfg.duration, cap);
            if let Some(budget) = cfg.budget {
                let elapsed = Nanos::from(started.elapsed());
                let share = fit::budget_share(budget, elapsed, runs, cfg.warmup, overhead, d);
                if share.duration < d {
                    reasons.push(if share.fits {
                        format!(
                            "The {runs} runs share what is left of --quick's {} budget: {} each after a {} warm-up and about {} of starting and ending each run (half as much again as the rate trials took).",
                            format_ns(budget.get() as f64),
                            format_ns(share.duration.get() as f64),
                            format_ns(cfg.warmup.get() as f64),
                            format_ns(overhead.get() as f64)
                        )
                    } else {
                        format!(
                            "Even runs of {} cannot fit the {runs} runs in --quick's {} budget on this host (about {} of starting and ending each run); the experiment will take longer.",
                            format_ns(share.duration.get() as f64),
                            format_ns(budget.get() as f64),
                            format_ns(overhead.get() as f64)
                        )
                    });
                }
                d = share.duration;
            }
            reasons.push(format!(
                "Each run lasts {} ({} samples at {} pps{}).",
                format_ns(d.get() as f64),
                (d.get() as u128 * milli_pps as u128 / 1_000_000_000_000) as u64,
                milli_pps / 1000,
                if d.get() as u128 * milli_pps as u128
                    >= fit::SAMPLES_FOR_P9999 as u128 * 1_000_000_000_000
                {
                    ", enough for p99.99"
                } else {
                    "; p99.99 needs 100,000 and a quick run stops here"
                }
            ));
            d
        }
        None => cfg.duration,
    };
    for r in &reasons {
        say(r);
    }
    Ok(HostFit {
        cpus,
        quiet,
        nf_cpu,
        gen_cpu,
        gen_fifo,
        trials,
        asked_milli_pps: cfg.milli_pps,
        milli_pps,
        duration,
        run_overhead: overhead,
        runs,
        reasons,
    })
}

/// Why `step` cannot run here (`None`: it can).
fn rung_unavailable(step: &Step, loopback: bool, root: bool) -> Option<String> {
    if step.testpmd {
        if loopback {
            return Some(
                "testpmd forwards between the testbed's veths; this run is on loopback".into(),
            );
        }
        return crate::testpmd::program().err().map(|e| e.to_string());
    }
    if step.xdp {
        return mode_unavailable(IoMode::Xdp, loopback, root).map(str::to_string);
    }
    None
}

/// Why the generator cannot run in mode `io` here (`None`: it can).
fn mode_unavailable(io: IoMode, loopback: bool, root: bool) -> Option<&'static str> {
    match io {
        IoMode::Xdp if loopback => {
            Some("AF_XDP needs the testbed's veths; this run is on loopback")
        }
        IoMode::Xdp if !root => Some("AF_XDP sockets and their XDP program need root"),
        _ => None,
    }
}

/// The rate trial a probe result at `milli_pps` amounts to.
fn trial_of(milli_pps: u64, r: &ResultFile) -> RateTrial {
    let p99 = Percentile::from_fraction(99, 100).expect("valid");
    RateTrial {
        milli_pps,
        lateness_p99_ns: match r.histogram(series::LATENESS) {
            Some(Ok(h)) => h.value_at(p99),
            _ => 0,
        },
        sent: r.counters.get("sent").copied().unwrap_or(0),
        late_over_gap: r.counters.get("late_over_mean_gap").copied().unwrap_or(0),
        lost: r.counters.get("lost_measured").copied().unwrap_or(0),
    }
}

/// Runs the experiment, writing everything under `dir`; `progress` is told as each run
/// (configuration × receive mode) starts. Call
/// [`latlab_sys::signal::install_stop_handler`] first for Ctrl-C to stop it cleanly: it
/// stops between runs, and whatever it changed (real-time throttling, the testbed) is put
/// back on every way out (error, panic, interruption).
pub fn run(
    cfg: &KillerUsConfig,
    exe: &Path,
    dir: &Path,
    argv: Vec<String>,
    progress: &mut dyn latlab_core::progress::Progress,
) -> Result<Summary, ExperimentError> {
    // Ctrl-C reaches the children too (one process group): a run that failed because its
    // probe was interrupted is the interruption, not the probe's (empty) failure.
    run_inner(cfg, exe, dir, argv, progress).map_err(|e| {
        if latlab_sys::signal::stop_requested() {
            ExperimentError::Interrupted
        } else {
            e
        }
    })
}

fn run_inner(
    cfg: &KillerUsConfig,
    exe: &Path,
    dir: &Path,
    argv: Vec<String>,
    progress: &mut dyn latlab_core::progress::Progress,
) -> Result<Summary, ExperimentError> {
    let placement = if cfg.loopback {
        Placement::Loopback
    } else {
        Placement::Testbed
    };
    let started = std::time::Instant::now();
    let _testbed = orchestrate::prepare(placement)?;
    std::fs::create_dir_all(dir).map_err(|source| latlab_core::results::ResultError::Write {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut files = Vec::new();
    // what this host offers: each rung's and generator mode's reason not to run, if any
    let root = latlab_sys::netns::is_root();
    let rung_why: Vec<Option<String>> = STEPS
        .iter()
        .map(|s| rung_unavailable(s, cfg.loopback, root))
        .collect();
    let mode_why: Vec<Option<&str>> = GEN_MODES
        .iter()
        .map(|(_, io)| mode_unavailable(*io, cfg.loopback, root))
        .collect();
    let planned = rung_why.iter().filter(|w| w.is_none()).count()
        * mode_why.iter().filter(|w| w.is_none()).count();
    let fit = fit_host(
        cfg,
        exe,
        dir,
        placement,
        &mut files,
        started,
        planned as u32,
    )?;
    let plan = RunPlan {
        exe,
        dir,
        placement,
        gen_cpu: fit.gen_cpu,
        nf_cpu: fit.nf_cpu,
        gen_fifo: fit.gen_fifo,
        explain: cfg.explain,
    };
    // (config, rx mode) -> result
    let mut runs: Vec<(String, String, ResultFile)> = Vec::new();
    let mut warnings = cfg.notes.clone();
    let mut tails = Vec::new();
    let mut tail_shares: Vec<TailShare> = Vec::new();
    let mut not_measured = Vec::new();
    let mut rt_throttle = Vec::new();
    let mut behind: Vec<crate::killer_data::BehindRun> = Vec::new();
    let mut repeated: Vec<String> = Vec::new();
    let mut explain_lost: Vec<(String, u64)> = Vec::new();
    let mut mode_notes: Vec<String> = Vec::new();
    let mut over_budget: Vec<String> = Vec::new();
    let modes: Vec<(&str, IoMode)> = GEN_MODES
        .iter()
        .copied()
        .zip(&mode_why)
        .filter_map(|((name, io), why)| match why {
            Some(why) => {
                if !cfg.quiet {
                    eprintln!("killer-us: generator mode {name}: not measured: {why}");
                }
                mode_notes.push(format!(
                    "the generator's {name} mode (method user-{name}) was not measured: {why}"
                ));
                None
            }
            None => Some((name, io)),
        })
        .collect();
    let mut left = fit.runs;
    let elapsed = || Nanos::from(started.elapsed());
    for (step, why) in STEPS.into_iter().zip(rung_why) {
        let conf = step.name;
        if let Some(reason) = why {
            if !cfg.quiet {
                eprintln!("killer-us: NF {conf}: not measured: {reason}");
            }
            not_measured.push((conf.to_string(), reason));
            continue;
        }
        let guard = if step.fifo.is_some() {
            match crate::fit::unthrottle_for_fifo("NF") {
                Ok((g, note)) => {
                    if !cfg.quiet {
                        eprintln!("killer-us: NF {conf}: {note}");
                    }
                    rt_throttle.push((conf.to_string(), note));
                    g
                }
                Err(reason) => {
                    if !cfg.quiet {
                        eprintln!("killer-us: NF {conf}: {reason}");
                    }
                    not_measured.push((conf.to_string(), reason));
                    continue;
                }
            }
        } else {
            None
        };
        for &(rx, rx_io) in &modes {
            if latlab_sys::signal::stop_requested() {
                return Err(ExperimentError::Interrupted);
            }
            left = left.saturating_sub(1);
            progress.step(
                &format!("NF {conf}, generator {rx}"),
                runs.len() as u64,
                u64::from(fit.runs),
            );
            let name = format!("{}.rx-{rx}", step.file_name());
            // the AF_XDP generator spins in one SCHED_FIFO loop: throttling would stop it
            // for 50 ms of every second (a FIFO rung has it off already)
            let _xdp_unthrottled = match (rx_io, fit.gen_fifo) {
                (IoMode::Xdp, Some(_)) => match crate::fit::unthrottle_for_fifo("generator") {
                    Ok((g, _)) => g,
                    Err(reason) => {
                        warnings.push(format!("{name}: {reason}"));
                        None
                    }
                },
                _ => None,
            };
            // Another tenant's burst (a compile job, someone's real-time thread) can make
            // the generator fall behind for one run: such a run is repeated once, and the
            // repeat kept.
            let mut attempt = 0;
            let (res, paths) = loop {
                let (res, paths) = plan.run(
                    &step,
                    cfg.loopback,
                    &name,
                    rx_io,
                    fit.milli_pps,
                    fit.duration,
                    cfg.warmup,
                    Sources::ALL,
                )?;
                let fell = crate::result::probe_data(&res).is_some_and(|d| d.generator_behind);
                if crate::testpmd::bypassed(&res)
                    && attempt < RETRIES
                    && !latlab_sys::signal::stop_requested()
                {
                    attempt += 1;
                    repeated.push(name.clone());
                    if !cfg.quiet {
                        eprintln!("killer-us: not every probe of {name} passed through testpmd; running it once more");
                    }
                    continue;
                }
                let in_budget = cfg.budget.map_or(true, |b| {
                    fit::budget_allows(
                        b,
                        elapsed(),
                        left,
                        fit.duration,
                        cfg.warmup,
                        fit.run_overhead,
                    )
                });
                if fell && !in_budget && attempt < RETRIES {
                    over_budget.push(name.clone());
                }
                if fell && in_budget && attempt < RETRIES && !latlab_sys::signal::stop_requested() {
                    attempt += 1;
                    repeated.push(name.clone());
                    if !cfg.quiet {
                        eprintln!("killer-us: the generator fell behind in {name} (the host got busier); running it once more");
                    }
                    continue;
                }
                break (res, paths);
            };
            if crate::testpmd::bypassed(&res) {
                // a latency that skipped the NF is not the NF's: the rung is not measured
                let why = "not measurable on this host: the probes did not all pass through testpmd (its counters fell short of what the generator received, twice), so its latencies would not be testpmd's".to_string();
                if !cfg.quiet {
                    eprintln!("killer-us: NF {conf}: {why}");
                }
                not_measured.push((conf.to_string(), why));
                break;
            }
            if crate::result::probe_data(&res).is_some_and(|d| d.generator_behind) {
                behind.push(crate::killer_data::BehindRun {
                    config: conf.to_string(),
                    run: name.clone(),
                    lateness_p99_ns: trial_of(fit.milli_pps, &res).lateness_p99_ns,
                });
            }
            for w in &res.warnings {
                // the recorder's losses are one finding for the whole ladder (below)
                if w.contains("lost") && !w.contains("kernel events were lost") {
                    warnings.push(format!("{name}: {w}"));
                }
            }
            let kernel_lost = res
                .counters
                .get("explain_lost_events")
                .copied()
                .unwrap_or(0);
            if kernel_lost > 0 {
                explain_lost.push((name.clone(), kernel_lost));
            }
            files.extend(paths);
            tails.extend(crate::explain::tail_line(&name, &res));
            TailShare::add(&mut tail_shares, conf, &res);
            runs.push((conf.to_string(), rx.to_string(), res));
        }
        if not_measured.iter().any(|(c, _)| c == conf) {
            runs.retain(|(c, _, _)| c != conf);
        }
        if let Some(g) = guard {
            if let Err(e) = g.restore() {
                warnings.push(format!("real-time throttling could not be restored after {conf}: {e}; `sysctl -w kernel.sched_rt_runtime_us=950000` restores the default"));
            }
        }
    }
    if !behind.is_empty() {
        warnings.insert(
            0,
            crate::killer_data::behind_warning(&behind, runs.len(), fit.milli_pps),
        );
    }
    if !explain_lost.is_empty() {
        let total: u64 = explain_lost.iter().map(|(_, n)| n).sum();
        let names: Vec<&str> = explain_lost.iter().map(|(n, _)| n.as_str()).collect();
        warnings.push(format!(
            "{total} kernel events were lost in {} of {} runs ({}): the ring overran, so their tails' attributions are partial; the latencies are complete",
            explain_lost.len(),
            runs.len(),
            names.join(", ")
        ));
    }
    let mut notes = cfg.notes.clone();
    notes.extend(mode_notes);
    if !over_budget.is_empty() {
        notes.push(format!(
            "The generator fell behind in {} run(s) that were not repeated, since a repeat would not have fit --quick's budget: {}.",
            over_budget.len(),
            over_budget.join(", ")
        ));
    }
    if !repeated.is_empty() {
        notes.push(format!(
            "The generator fell behind in {} run(s) and each was run once more, the repeat kept: {}.",
            repeated.len(),
            repeated.join(", ")
        ));
    }
    // summary histograms: method × config
    let mut out = ResultFile::new(
        RESULT_KIND,
        argv,
        serde_json::to_value(cfg).unwrap_or_default(),
        runs.first()
            .map(|(_, _, r)| r.provenance.clone())
            .unwrap_or_default(),
    );
    let mut data = KillerUsData {
        placement: if cfg.loopback { "loopback" } else { "testbed" }.into(),
        notes,
        tails,
        tail_shares,
        host_fit: Some(fit.clone()),
        not_measured,
        rt_throttle,
        behind,
        ..Default::default()
    };
    let mut per_method: Vec<MethodCurves<'_>> = Vec::new();
    for (m, desc, rx, series_name) in METHODS {
        let mut curves = Vec::new();
        for conf in LADDER {
            let Some((_, _, r)) = runs.iter().find(|(c, x, _)| c == conf && x == rx) else {
                continue;
            };
            let Some(Ok(h)) = r.histogram(series_name) else {
                continue;
            };
            if h.count() == 0 {
                continue;
            }
            out.histograms.push(
                StoredHistogram::new(format!("{m}/{conf}"), &h)
                    .with_label("method", m)
                    .with_label("config", conf),
            );
            curves.push((conf.to_string(), h));
        }
        if !curves.is_empty() {
            per_method.push((m, desc, curves));
        }
    }
    for (m, _, curves) in &per_method {
        for (conf, h) in curves {
            data.rows.push(summary_row(m, conf, h));
        }
    }
    for conf in LADDER {
        let hs: Vec<&LatencyHistogram> = per_method
            .iter()
            .filter_map(|(_, _, c)| c.iter().find(|(k, _)| k == conf).map(|(_, h)| h))
            .collect();
        data.disagreement.push((
            conf.to_string(),
            disagreement(&hs, 1_000).map(|p| p.to_string()),
        ));
        let user: Vec<&LatencyHistogram> = per_method
            .iter()
            // the socket generator's two receive modes; the AF_XDP generator leaves its
            // own stack out, so it times a shorter span
            .filter(|(m, _, _)| *m == "user-blocking" || *m == "user-busy")
            .filter_map(|(_, _, c)| c.iter().find(|(k, _)| k == conf).map(|(_, h)| h))
            .collect();
        data.disagreement_same_span.push((
            conf.to_string(),
            disagreement(&user, 1_000).map(|p| p.to_string()),
        ));
    }
    // figures (specifications; the caller draws them)
    let mut figures = Vec::new();
    for (m, desc, curves) in &per_method {
        let cs: Vec<Curve> = curves
            .iter()
            .map(|(conf, h)| Curve {
                label: conf.clone(),
                points: ccdf(h),
            })
            .collect();
        let path = dir.join(format!("ccdf-{m}.svg"));
        figures.push((
            path.clone(),
            Figure::Distribution {
                title: format!("killer-us: {desc} — one line per NF configuration"),
                kind: PlotKind::Ccdf,
                curves: cs,
            },
        ));
        data.figures.push(path.display().to_string());
        files.push(path);
    }
    data.files = files.iter().map(|p| p.display().to_string()).collect();
    out.warnings = warnings.clone();
    out.duration_ns = runs.iter().map(|(_, _, r)| r.duration_ns).sum();
    for (_, _, r) in &runs {
        out.add_counters(&r.counters);
    }
    out.data = serde_json::to_value(&data).unwrap_or_default();
    let summary_path = dir.join("killer-us.json");
    out.save(&summary_path)?;
    let saved = ResultFile::load(&summary_path)?;
    let table_text = render_table(&saved);
    let md = dir.join("summary.md");
    latlab_core::results::write_atomically(&md, table_text.as_bytes())?;
    let csv = dir.join("summary.csv");
    latlab_core::results::write_atomically(&csv, render_csv(&saved).as_bytes())?;
    files.push(summary_path);
    files.push(md);
    files.push(csv);
    Ok(Summary {
        table_text,
        warnings,
        files,
        figures,
    })
}

fn summary_row(method: &str, conf: &str, h: &LatencyHistogram) -> SummaryRow {
    SummaryRow {
        method: method.to_string(),
        config: conf.to_string(),
        count: h.count(),
        percentiles: table_percentiles()
            .iter()
            .map(|&p| (p.to_string(), h.value_at(p), is_supported(p, h.count())))
            .collect(),
        max_ns: h.max(),
    }
}

/// The lowest percentile of the ladder (p50 … p99.9999), supported by every histogram,
/// at which the largest and smallest values differ by more than `threshold_ns`. Pure.
pub fn disagreement(hs: &[&LatencyHistogram], threshold_ns: u64) -> Option<Percentile> {
    if hs.len() < 2 {
        return None;
    }
    let mut ladder = vec![Percentile::LADDER[0]];
    ladder.push(Percentile::from_fraction(90, 100).expect("valid"));
    ladder.extend_from_slice(&Percentile::LADDER[2..]);
    for p in ladder {
        if !hs.iter().all(|h| is_supported(p, h.count())) {
            return None;
        }
        let vals: Vec<u64> = hs.iter().map(|h| h.value_at(p)).collect();
        let (lo, hi) = (
            *vals.iter().min().unwrap_or(&0),
            *vals.iter().max().unwrap_or(&0),
        );
        if hi - lo > threshold_ns {
            return Some(p);
        }
    }
    None
}

/// The summary as Markdown (pure): the headline first ([`crate::headline`]), then the
/// full table, where the methods start to disagree, and how the runs were fitted to the
/// host. Every paragraph is a list of sentences, so that more can be appended.
pub fn render_table(r: &ResultFile) -> String {
    let Ok(d) = serde_json::from_value::<KillerUsData>(r.data.clone()) else {
        return String::new();
    };
    let mut s = format!("# killer-us ({})\n\n", d.placement);
    if let Some(h) = crate::headline::headline(r) {
        s.push_str(&h.sentences.join(" "));
        s.push_str(&format!(
            "\n\n{} per NF configuration and method (95 % confidence interval):\n\n| NF config | {} |\n|---|{}\n",
            h.percentile,
            h.methods.join(" | "),
            "---:|".repeat(h.methods.len())
        ));
        for row in &h.rows {
            let cells: Vec<String> = match &row.not_measured {
                Some(_) => h
                    .methods
                    .iter()
                    .map(|_| "not measured".to_string())
                    .collect(),
                None => row
                    .cells
                    .iter()
                    .map(|c| match c {
                        Some(e) if e.supported => format!(
                            "{} ({}–{})",
                            format_ns(e.value_ns as f64),
                            e.ci_low_ns
                                .map(|v| format_ns(v as f64))
                                .unwrap_or_else(|| "open".into()),
                            e.ci_high_ns
                                .map(|v| format_ns(v as f64))
                                .unwrap_or_else(|| "open".into())
                        ),
                        Some(_) => "unsupported".to_string(),
                        None => "—".to_string(),
                    })
                    .collect(),
            };
            s.push_str(&format!("| {} | {} |\n", row.label(), cells.join(" | ")));
        }
        s.push('\n');
    }
    s.push_str("## Every method and NF configuration\n\n| method | NF config | samples | p50 | p99 | p99.9 | p99.99 | max |\n|---|---|---:|---:|---:|---:|---:|---:|\n");
    for row in &d.rows {
        let cells: Vec<String> = row
            .percentiles
            .iter()
            .map(|(_, v, ok)| {
                if *ok {
                    format_ns(*v as f64)
                } else {
                    format!("({}, unsupported)", format_ns(*v as f64))
                }
            })
            .collect();
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} |\n",
            row.method,
            row.config,
            row.count,
            cells.join(" | "),
            format_ns(row.max_ns as f64)
        ));
    }
    s.push_str("\n## Where the methods disagree\n\n");
    s.push_str(&disagreement_sentences(&d).join(" "));
    s.push('\n');
    if let Some(f) = &d.host_fit {
        s.push_str("\n## How the runs were fitted to this host\n\n");
        s.push_str(&f.reasons.join(" "));
        s.push_str("\n\n");
        for q in &f.quiet {
            s.push_str(&format!("- quiet probe: {}\n", q.describe()));
        }
        for t in &f.trials {
            s.push_str(&format!("- rate trial: {}\n", t.describe()));
        }
    }
    if !d.tails.is_empty() {
        s.push_str("\nOutside the system under test (time outside the kernel, the hypervisor's, in each run's samples above its p99):\n\n");
        for t in &d.tails {
            s.push_str(&format!("- {t}\n"));
        }
    }
    for n in &d.notes {
        s.push_str(&format!("\nNote: {n}\n"));
    }
    s
}

/// Where the methods start to disagree by more than 1 µs, as sentences: the user methods
/// among themselves (same span, so any difference is the receive mode's), then all
/// methods (the kernel and hardware methods leave out the host stacks, so they differ
/// from the user methods by design).
pub fn disagreement_sentences(d: &KillerUsData) -> Vec<String> {
    let say = |list: &[(String, Option<String>)]| -> String {
        let parts: Vec<String> = list
            .iter()
            .map(|(conf, p)| match p {
                Some(p) => format!("{conf} from {p}"),
                None => format!("{conf} never (up to the highest supported percentile)"),
            })
            .collect();
        parts.join(", ")
    };
    let mut out = Vec::new();
    if !d.disagreement_same_span.is_empty() {
        out.push(format!(
            "The socket generator's two methods (user-blocking, user-busy) time the same span (user send to user receive), so where they differ by more than 1 µs the receive mode (blocking or busy polling) changed the result: {}.",
            say(&d.disagreement_same_span)
        ));
    }
    if !d.disagreement.is_empty() {
        out.push(format!(
            "Across all methods the difference exceeds 1 µs from these percentiles: {}. Kernel and hardware timestamps leave out the host stacks that the user methods include, so that gap is expected; read the NF's own latency from the kernel or hardware method.",
            say(&d.disagreement)
        ));
    }
    out
}

/// The CCDF curves of a `net.killer_us` result, grouped by method: for each method (in
/// [`METHODS`] order) its description and one `(NF configuration, points)` per ladder
/// step, points `(latency_ns, P(X > x))`. What the figures draw, for a report. Pure.
pub type MethodCcdf = (String, String, Vec<(String, Vec<(f64, f64)>)>);

/// See [`MethodCcdf`].
pub fn method_curves(r: &ResultFile) -> Vec<MethodCcdf> {
    let mut out = Vec::new();
    for (m, desc, _, _) in METHODS {
        let mut curves = Vec::new();
        for conf in LADDER {
            if let Some(Ok(h)) = r.histogram(&format!("{m}/{conf}")) {
                if h.count() > 0 {
                    curves.push((conf.to_string(), ccdf(&h)));
                }
            }
        }
        if !curves.is_empty() {
            out.push((m.to_string(), desc.to_string(), curves));
        }
    }
    out
}

/// The summary table as CSV (pure).
pub fn render_csv(r: &ResultFile) -> String {
    let Ok(d) = serde_json::from_value::<KillerUsData>(r.data.clone()) else {
        return String::new();
    };
    let mut s =
        String::from("method,config,samples,p50_ns,p99_ns,p99.9_ns,p99.99_ns,max_ns,unsupported\n");
    for row in &d.rows {
        let v: Vec<String> = row
            .percentiles
            .iter()
            .map(|(_, v, _)| v.to_string())
            .collect();
        let unsup: Vec<String> = row
            .percentiles
            .iter()
            .filter(|(_, _, ok)| !ok)
            .map(|(p, _, _)| p.clone())
            .collect();
        s.push_str(&format!(
            "{},{},{},{},{},{}\n",
            row.method,
            row.config,
            row.count,
            v.join(","),
            row.max_ns,
            unsup.join(" ")
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_steps_are_the_ladder() {
        let names: Vec<&str> = STEPS.iter().map(|s| s.name).collect();
        assert_eq!(names, LADDER);
        let files: Vec<String> = STEPS.iter().map(Step::file_name).collect();
        assert_eq!(
            files,
            [
                "default",
                "pinned",
                "pinned-busy",
                "pinned-busy-fifo",
                "hog",
                "testpmd-DPDK-busy",
                "AF-XDP-latlab-busy"
            ]
        );
        assert!(STEPS
            .iter()
            .filter(|s| s.testpmd)
            .all(|s| s.busy && s.pinned));
        // the AF_XDP rung's NF is latlab's forwarder over AF_XDP, pinned to the NF's CPU
        let xdp: Vec<&Step> = STEPS.iter().filter(|s| s.xdp).collect();
        assert_eq!(xdp.len(), 1);
        let nf = xdp[0].nf_config(Placement::Testbed, 3);
        assert_eq!(
            (nf.io, nf.cpus.clone(), nf.fifo),
            (IoMode::Xdp, vec![3], None)
        );
        assert_eq!(xdp[0].describe(false, 3)["io"], "xdp");
        // every method reads a run the ladder makes
        for (m, _, run, _) in METHODS {
            assert!(
                GEN_MODES.iter().any(|(g, _)| *g == run),
                "{m} reads run {run}"
            );
        }
    }

    #[test]
    fn the_kernel_bypass_parts_need_the_testbed_and_root() {
        let xdp_step = STEPS.iter().find(|s| s.xdp).unwrap();
        let socket_step = &STEPS[0];
        for (loopback, root) in [(true, true), (true, false), (false, false)] {
            assert!(rung_unavailable(xdp_step, loopback, root).is_some());
            assert!(mode_unavailable(IoMode::Xdp, loopback, root).is_some());
        }
        assert_eq!(rung_unavailable(xdp_step, false, true), None);
        assert_eq!(mode_unavailable(IoMode::Xdp, false, true), None);
        for (loopback, root) in [(true, true), (true, false), (false, false), (false, true)] {
            assert_eq!(rung_unavailable(socket_step, loopback, root), None);
            assert_eq!(mode_unavailable(IoMode::Busy, loopback, root), None);
            assert_eq!(mode_unavailable(IoMode::Blocking, loopback, root), None);
        }
        let why = rung_unavailable(xdp_step, true, true).unwrap();
        assert!(why.contains("loopback"), "{why}");
        assert!(mode_unavailable(IoMode::Xdp, false, false)
            .unwrap()
            .contains("root"));
    }

    #[test]
    fn curves_and_tables_come_from_the_file_alone() {
        let mut h = LatencyHistogram::default();
        for i in 0..1000u64 {
            h.record(Nanos(1_000 + i));
        }
        let mut r = ResultFile::new(
            RESULT_KIND,
            vec![],
            serde_json::Value::Null,
            Default::default(),
        );
        r.histograms
            .push(StoredHistogram::new("kernel/default", &h));
        r.histograms.push(StoredHistogram::new("kernel/hog", &h));
        r.histograms
            .push(StoredHistogram::new("user-busy/pinned", &h));
        let mut d = KillerUsData::default();
        d.rows.push(summary_row("kernel", "default", &h));
        d.disagreement.push(("default".into(), None));
        r.data = serde_json::to_value(&d).unwrap();
        let c = method_curves(&r);
        let names: Vec<&str> = c.iter().map(|(m, _, _)| m.as_str()).collect();
        assert_eq!(names, vec!["user-busy", "kernel"]);
        assert_eq!(c[1].2.len(), 2);
        assert_eq!(c[1].2[0].0, "default");
        let t = render_table(&r);
        assert!(t.contains("| kernel | default | 1000 |"), "{t}");
        assert!(
            t.contains("unsupported"),
            "p99.99 of 1000 samples is unsupported: {t}"
        );
        let csv = render_csv(&r);
        assert_eq!(csv.lines().count(), 2);
    }

    #[test]
    fn disagreement_finds_the_first_percentile() {
        let mut a = LatencyHistogram::default();
        let mut b = LatencyHistogram::default();
        for i in 0..100_000u64 {
            a.record(Nanos(10_000 + i % 100));
            // same body, a tail 5 µs longer from p99.9 up
            b.record(Nanos(if i % 500 == 0 {
                30_000
            } else {
                10_000 + i % 100
            }));
        }
        assert_eq!(disagreement(&[&a, &a], 1_000), None);
        let p = disagreement(&[&a, &b], 1_000).unwrap();
        assert_eq!(p.to_string(), "p99.9");
    }
}
