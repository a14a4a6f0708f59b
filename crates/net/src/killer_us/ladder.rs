//! The killer-us ladder's runs: every measurable rung with every generator mode, a run
//! whose generator fell behind (or whose probes bypassed testpmd) repeated once, and what
//! each run adds to the summary's warnings and notes.

use super::config::KillerUsConfig;
use super::data::{BehindRun, Step, TailShare};
use super::fit::trial_of;
use super::outcome::ExperimentError;
use super::pace::{self, HostFit};
use super::rung::RunPlan;
use crate::fit;
use crate::nf::IoMode;
use crate::probe::Sources;
use latlab_core::results::ResultFile;
use latlab_core::units::Nanos;
use std::path::PathBuf;

/// How many times a run whose generator fell behind is repeated.
pub const RETRIES: u32 = 1;

/// What the ladder's runs need: the configuration, where and how each run goes, and when
/// the experiment started (for `--quick`'s budget).
pub(super) struct Context<'a> {
    pub cfg: &'a KillerUsConfig,
    pub plan: &'a RunPlan<'a>,
    pub fit: &'a HostFit,
    pub started: std::time::Instant,
}

/// What the ladder's runs gathered.
#[derive(Default)]
pub(super) struct Ladder {
    /// (config, rx mode) -> result
    pub runs: Vec<(String, String, ResultFile)>,
    pub warnings: Vec<String>,
    pub tails: Vec<String>,
    pub tail_shares: Vec<TailShare>,
    pub not_measured: Vec<(String, String)>,
    pub rt_throttle: Vec<(String, String)>,
    pub behind: Vec<BehindRun>,
    repeated: Vec<String>,
    explain_lost: Vec<(String, u64)>,
    mode_notes: Vec<String>,
    over_budget: Vec<String>,
    /// The runs not made yet, for `--quick`'s budget.
    left: u32,
}

impl Ladder {
    /// An empty ladder of `runs` planned runs, its warnings starting with `cfg`'s notes.
    pub fn new(cfg: &KillerUsConfig, runs: u32) -> Ladder {
        Ladder {
            warnings: cfg.notes.clone(),
            left: runs,
            ..Default::default()
        }
    }

    /// The generator modes that can run here (`mode_why[i]`: why mode `i` cannot); the
    /// others are noted.
    pub fn modes(
        &mut self,
        cfg: &KillerUsConfig,
        modes: &[(&'static str, IoMode)],
        mode_why: &[Option<&str>],
    ) -> Vec<(&'static str, IoMode)> {
        modes
            .iter()
            .copied()
            .zip(mode_why)
            .filter_map(|((name, io), why)| match why {
                Some(why) => {
                    if !cfg.quiet {
                        eprintln!("killer-us: generator mode {name}: not measured: {why}");
                    }
                    self.mode_notes.push(format!(
                        "the generator's {name} mode (method user-{name}) was not measured: {why}"
                    ));
                    None
                }
                None => Some((name, io)),
            })
            .collect()
    }

    /// Runs rung `step` with every mode of `modes` (`why`: why the rung cannot run here),
    /// with real-time throttling off for a FIFO rung; a rung with a run that failed its
    /// checks is not measured and its runs are dropped.
    pub fn rung(
        &mut self,
        cx: &Context<'_>,
        step: Step,
        why: Option<String>,
        modes: &[(&str, IoMode)],
        files: &mut Vec<PathBuf>,
        progress: &mut dyn latlab_core::progress::Progress,
    ) -> Result<(), ExperimentError> {
        let cfg = cx.cfg;
        let conf = step.name;
        if let Some(reason) = why {
            if !cfg.quiet {
                eprintln!("killer-us: NF {conf}: not measured: {reason}");
            }
            self.not_measured.push((conf.to_string(), reason));
            return Ok(());
        }
        let guard = if step.fifo.is_some() {
            match fit::unthrottle_for_fifo("NF") {
                Ok((g, note)) => {
                    if !cfg.quiet {
                        eprintln!("killer-us: NF {conf}: {note}");
                    }
                    self.rt_throttle.push((conf.to_string(), note));
                    g
                }
                Err(reason) => {
                    if !cfg.quiet {
                        eprintln!("killer-us: NF {conf}: {reason}");
                    }
                    self.not_measured.push((conf.to_string(), reason));
                    return Ok(());
                }
            }
        } else {
            None
        };
        for &(rx, rx_io) in modes {
            if latlab_sys::signal::stop_requested() {
                return Err(ExperimentError::Interrupted);
            }
            self.left = self.left.saturating_sub(1);
            progress.step(
                &format!("NF {conf}, generator {rx}"),
                self.runs.len() as u64,
                u64::from(cx.fit.runs),
            );
            let name = format!("{}.rx-{rx}", step.file_name());
            // the AF_XDP generator spins in one SCHED_FIFO loop: throttling would stop it
            // for 50 ms of every second (a FIFO rung has it off already)
            let _xdp_unthrottled = match (rx_io, cx.fit.gen_fifo) {
                (IoMode::Xdp, Some(_)) => match fit::unthrottle_for_fifo("generator") {
                    Ok((g, _)) => g,
                    Err(reason) => {
                        self.warnings.push(format!("{name}: {reason}"));
                        None
                    }
                },
                _ => None,
            };
            let (res, paths) = self.run_with_repeats(cx, &step, &name, rx_io)?;
            if crate::testpmd::bypassed(&res) {
                // a latency that skipped the NF is not the NF's: the rung is not measured
                let why = "not measurable on this host: the probes did not all pass through testpmd (its counters fell short of what the generator received, twice), so its latencies would not be testpmd's".to_string();
                if !cfg.quiet {
                    eprintln!("killer-us: NF {conf}: {why}");
                }
                self.not_measured.push((conf.to_string(), why));
                break;
            }
            files.extend(paths);
            self.record(conf, rx, &name, res, cx.fit.milli_pps);
        }
        if self.not_measured.iter().any(|(c, _)| c == conf) {
            self.runs.retain(|(c, _, _)| c != conf);
        }
        if let Some(g) = guard {
            if let Err(e) = g.restore() {
                self.warnings.push(format!("real-time throttling could not be restored after {conf}: {e}; `sysctl -w kernel.sched_rt_runtime_us=950000` restores the default"));
            }
        }
        Ok(())
    }

    /// Runs `step` as run `name`. Another tenant's burst (a compile job, someone's
    /// real-time thread) can make the generator fall behind for one run: such a run is
    /// repeated once, and the repeat kept.
    fn run_with_repeats(
        &mut self,
        cx: &Context<'_>,
        step: &Step,
        name: &str,
        rx_io: IoMode,
    ) -> Result<(ResultFile, [PathBuf; 2]), ExperimentError> {
        let (cfg, fit) = (cx.cfg, cx.fit);
        let mut attempt = 0;
        loop {
            let (res, paths) = cx.plan.run(
                step,
                cfg.loopback,
                name,
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
                self.repeated.push(name.to_string());
                if !cfg.quiet {
                    eprintln!("killer-us: not every probe of {name} passed through testpmd; running it once more");
                }
                continue;
            }
            let in_budget = cfg.budget.map_or(true, |b| {
                pace::budget_allows(
                    b,
                    Nanos::from(cx.started.elapsed()),
                    self.left,
                    fit.duration,
                    cfg.warmup,
                    fit.run_overhead,
                )
            });
            if fell && !in_budget && attempt < RETRIES {
                self.over_budget.push(name.to_string());
            }
            if fell && in_budget && attempt < RETRIES && !latlab_sys::signal::stop_requested() {
                attempt += 1;
                self.repeated.push(name.to_string());
                if !cfg.quiet {
                    eprintln!("killer-us: the generator fell behind in {name} (the host got busier); running it once more");
                }
                continue;
            }
            return Ok((res, paths));
        }
    }

    /// Keeps run `name` of rung `conf` in mode `rx`, with what it adds to the warnings.
    fn record(&mut self, conf: &str, rx: &str, name: &str, res: ResultFile, milli_pps: u64) {
        if crate::result::probe_data(&res).is_some_and(|d| d.generator_behind) {
            self.behind.push(BehindRun {
                config: conf.to_string(),
                run: name.to_string(),
                lateness_p99_ns: trial_of(milli_pps, &res).lateness_p99_ns,
            });
        }
        for w in &res.warnings {
            // the recorder's losses are one finding for the whole ladder (below)
            if w.contains("lost") && !w.contains("kernel events were lost") {
                self.warnings.push(format!("{name}: {w}"));
            }
        }
        let kernel_lost = res
            .counters
            .get("explain_lost_events")
            .copied()
            .unwrap_or(0);
        if kernel_lost > 0 {
            self.explain_lost.push((name.to_string(), kernel_lost));
        }
        self.tails.extend(crate::explain::tail_line(name, &res));
        TailShare::add(&mut self.tail_shares, conf, &res);
        self.runs.push((conf.to_string(), rx.to_string(), res));
    }

    /// The ladder's findings across runs, added to the warnings; returns the summary's
    /// notes (`cfg`'s, then the modes not measured and the runs repeated or not).
    pub fn finish(&mut self, cfg: &KillerUsConfig, milli_pps: u64) -> Vec<String> {
        if !self.behind.is_empty() {
            self.warnings.insert(
                0,
                super::data::behind_warning(&self.behind, self.runs.len(), milli_pps),
            );
        }
        if !self.explain_lost.is_empty() {
            let total: u64 = self.explain_lost.iter().map(|(_, n)| n).sum();
            let names: Vec<&str> = self.explain_lost.iter().map(|(n, _)| n.as_str()).collect();
            self.warnings.push(format!(
                "{total} kernel events were lost in {} of {} runs ({}): the ring overran, so their tails' attributions are partial; the latencies are complete",
                self.explain_lost.len(),
                self.runs.len(),
                names.join(", ")
            ));
        }
        let mut notes = cfg.notes.clone();
        notes.extend(self.mode_notes.iter().cloned());
        if !self.over_budget.is_empty() {
            notes.push(format!(
                "The generator fell behind in {} run(s) that were not repeated, since a repeat would not have fit --quick's budget: {}.",
                self.over_budget.len(),
                self.over_budget.join(", ")
            ));
        }
        if !self.repeated.is_empty() {
            notes.push(format!(
                "The generator fell behind in {} run(s) and each was run once more, the repeat kept: {}.",
                self.repeated.len(),
                self.repeated.join(", ")
            ));
        }
        notes
    }
}
