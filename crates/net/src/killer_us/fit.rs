//! What the host sustains, checked before the killer-us ladder: which CPUs are quiet, the
//! generator's priority, the highest rate at which the generator keeps its schedule and
//! each run's duration (the quiet-CPU probe is [`crate::fit`]'s, the pure decisions
//! [`super::pace`]'s); each
//! choice with the reason the summary gives for it.

use super::config::KillerUsConfig;
use super::data::STEPS;
use super::outcome::ExperimentError;
use super::pace::{self, HostFit, RateTrial};
use super::rung::RunPlan;
use crate::fit::{self, CpuQuiet};
use crate::nf::IoMode;
use crate::orchestrate::{self, Placement};
use crate::probe::{series, Sources};
use latlab_core::parse::Percentile;
use latlab_core::results::ResultFile;
use latlab_core::units::{format_ns, Nanos};
use std::path::{Path, PathBuf};

/// `SCHED_FIFO` priority of the generator's threads when running as root: above the NF's
/// ([`STEPS`]' 50), so that neither the NF nor a compile job delays a send.
pub const GEN_FIFO: i32 = 60;

/// Says `m` on stderr unless `cfg` is quiet.
fn say(cfg: &KillerUsConfig, m: &str) {
    if !cfg.quiet {
        eprintln!("killer-us: {m}");
    }
}

/// Where the generator and the NF run and at what priority, with the reasons.
struct Cpus {
    cpus: Vec<u32>,
    quiet: Vec<CpuQuiet>,
    nf_cpu: u32,
    gen_cpu: u32,
    gen_fifo: Option<i32>,
}

/// What the rate trials chose: the rate, every trial, and the largest fixed cost of a run
/// beyond its warm-up and measured time that they saw.
struct Rate {
    milli_pps: u64,
    trials: Vec<RateTrial>,
    overhead: Option<Nanos>,
}

/// Checks what the host can sustain and chooses the CPUs, the generator's priority, the
/// rate and the duration ([`crate::fit`], [`super::pace`]); says what it chose on stderr unless quiet.
pub(super) fn fit_host(
    cfg: &KillerUsConfig,
    exe: &Path,
    dir: &Path,
    placement: Placement,
    files: &mut Vec<PathBuf>,
    started: std::time::Instant,
    runs: u32,
) -> Result<HostFit, ExperimentError> {
    let mut reasons = Vec::new();
    let c = fit_cpus(cfg, &mut reasons);
    let plan = RunPlan {
        exe,
        dir,
        placement,
        gen_cpu: c.gen_cpu,
        nf_cpu: c.nf_cpu,
        gen_fifo: c.gen_fifo,
        // the trials run as the ladder will (the recorder has a cost), so the rate they
        // choose holds for the ladder's runs
        explain: cfg.explain,
    };
    let rate = fit_rate(cfg, &plan, files, &mut reasons)?;
    // a ladder run costs more than a trial (every timestamp source, a longer warm-up's
    // attribution, testpmd's start): half as much again (measured 2026-11-29: trials 0.75 s,
    // runs 0.8-1.0 s, testpmd's 1.6 s)
    let overhead = rate
        .overhead
        .map_or(pace::DEFAULT_RUN_OVERHEAD, |o| Nanos(o.get() / 2 * 3));
    let duration = fit_duration(cfg, rate.milli_pps, overhead, started, runs, &mut reasons);
    for r in &reasons {
        say(cfg, r);
    }
    Ok(HostFit {
        cpus: c.cpus,
        quiet: c.quiet,
        nf_cpu: c.nf_cpu,
        gen_cpu: c.gen_cpu,
        gen_fifo: c.gen_fifo,
        trials: rate.trials,
        asked_milli_pps: cfg.milli_pps,
        milli_pps: rate.milli_pps,
        duration,
        run_overhead: overhead,
        runs,
        reasons,
    })
}

/// Probes which CPUs are quiet and places the generator on the quietest, the NF on the
/// next; the generator runs at [`GEN_FIFO`] as root.
fn fit_cpus(cfg: &KillerUsConfig, reasons: &mut Vec<String>) -> Cpus {
    let cpus = latlab_sys::sched::allowed_cpus();
    let gen_fifo = latlab_sys::netns::is_root().then_some(GEN_FIFO);
    say(
        cfg,
        &format!(
            "checking this host: {} CPUs ({}); spinning {} on each to see which is quiet…",
            cpus.len(),
            latlab_sys::sched::format_cpu_list(&cpus),
            format_ns(fit::QUIET_PROBE.get() as f64)
        ),
    );
    let quiet: Vec<CpuQuiet> = fit::probe_cpus(&cpus, gen_fifo);
    for q in &quiet {
        say(cfg, &format!("  {}", q.describe()));
    }
    let (nf_cpu, gen_cpu) = fit::choose_cpus(&quiet).unwrap_or_else(orchestrate::cpus);
    reasons.push(if nf_cpu == gen_cpu {
        format!("One CPU only: the generator and the NF share CPU {gen_cpu}, so the generator's own work is in every latency.")
    } else {
        format!("The generator runs on CPU {gen_cpu}, the quietest, since its lateness decides whether a run can be trusted; the NF runs on CPU {nf_cpu}.")
    });
    reasons.push(match gen_fifo {
        Some(p) => format!("The generator's threads run at SCHED_FIFO {p}, so that no other task on the host delays a send (a busy-polling receiver on the generator's CPU stays under the normal scheduler, which lets the sender preempt it)."),
        None => "Not root: the generator runs under the normal scheduler, so other tasks on its CPU can delay its sends.".into(),
    });
    Cpus {
        cpus,
        quiet,
        nf_cpu,
        gen_cpu,
        gen_fifo,
    }
}

/// Chooses the rate by trials, from the asked rate down ([`pace::candidates`]), unless
/// `--rate` fixed it; every trial's files go into `files`.
fn fit_rate(
    cfg: &KillerUsConfig,
    plan: &RunPlan<'_>,
    files: &mut Vec<PathBuf>,
    reasons: &mut Vec<String>,
) -> Result<Rate, ExperimentError> {
    let mut trials = Vec::new();
    // a run's fixed cost beyond its warm-up and measured time, the largest the trials saw
    let mut overhead: Option<Nanos> = None;
    let trial_warmup = Nanos::from_millis(200);
    let milli_pps = if cfg.fit_rate {
        for rate in pace::candidates(cfg.milli_pps) {
            let name = format!("fit-{}pps", rate / 1000);
            let t = std::time::Instant::now();
            let (r, paths) = plan.run(
                &STEPS[0],
                cfg.loopback,
                &name,
                IoMode::Busy,
                rate,
                pace::TRIAL,
                trial_warmup,
                Sources::USER,
            )?;
            let wall = Nanos::from(t.elapsed());
            let cost = Nanos(
                wall.get()
                    .saturating_sub(pace::TRIAL.get() + trial_warmup.get()),
            );
            overhead = Some(overhead.map_or(cost, |o| o.max(cost)));
            files.extend(paths);
            let t = trial_of(rate, &r);
            say(cfg, &format!("  trial at {}", t.describe()));
            let passed = t.passes();
            trials.push(t);
            if passed {
                break;
            }
        }
        match pace::choose_rate(&trials) {
            Some(r) => {
                reasons.push(format!("{} pps is the highest rate (of at most {} pps) at which a {} trial kept the generator's lateness p99 within {:.0} % of the mean gap and fewer than {:.1} % of its probes a gap late; the ladder runs at it.", r / 1000, cfg.milli_pps / 1000, format_ns(pace::TRIAL.get() as f64), pace::LATENESS_SHARE * 100.0, pace::LATE_SHARE * 100.0));
                r
            }
            None => {
                let lowest = trials.last().map(|t| t.milli_pps).unwrap_or(cfg.milli_pps);
                reasons.push(format!("No rate down to {} pps kept the generator on schedule in a {} trial: this host is too busy for a trustworthy run now, and the ladder runs at {} pps anyway. Rerun when the host is quieter.", lowest / 1000, format_ns(pace::TRIAL.get() as f64), lowest / 1000));
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
    Ok(Rate {
        milli_pps,
        trials,
        overhead,
    })
}

/// Each run's duration: the asked one, or with `--quick` the shortest that gives enough
/// samples, shared out of what is left of the budget.
fn fit_duration(
    cfg: &KillerUsConfig,
    milli_pps: u64,
    overhead: Nanos,
    started: std::time::Instant,
    runs: u32,
    reasons: &mut Vec<String>,
) -> Nanos {
    match cfg.duration_cap {
        Some(cap) => {
            let mut d = pace::quick_duration(milli_pps, cfg.duration, cap);
            if let Some(budget) = cfg.budget {
                let elapsed = Nanos::from(started.elapsed());
                let share = pace::budget_share(budget, elapsed, runs, cfg.warmup, overhead, d);
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
                    >= pace::SAMPLES_FOR_P9999 as u128 * 1_000_000_000_000
                {
                    ", enough for p99.99"
                } else {
                    "; p99.99 needs 100,000 and a quick run stops here"
                }
            ));
            d
        }
        None => cfg.duration,
    }
}

/// The rate trial a probe result at `milli_pps` amounts to.
pub(super) fn trial_of(milli_pps: u64, r: &ResultFile) -> RateTrial {
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
