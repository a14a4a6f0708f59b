//! A whole `host clocks` run: place the reading thread, establish the timebase, measure
//! every source, and write the versioned result and its interval log — before anything is
//! printed. The CLI resolves its arguments into a [`ClocksRun`], calls [`run`] and prints
//! from the file written.

use super::source::{
    fill_result, intervals, measure, ClockSource, ClocksConfig, ClocksError, SourceOutcome,
    RESULT_KIND,
};
use latlab_core::results::{
    hlog, write_atomically, CpuSteal, ResultError, ResultFile, ThreadPlacement,
};
use latlab_core::units::Nanos;
use latlab_explain::{
    ExplainOptions, KernelCollected, KernelRequest, KernelSession, ThreadWindow, Window,
};
use latlab_sys::host;
use latlab_sys::sched::{self, SchedError};
use latlab_sys::tsc::{Clock, Timesource};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// How the run's timebase is established.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TimebaseChoice {
    /// The TSC when it is usable (calibrated over `calibration`), else `CLOCK_MONOTONIC`.
    Auto {
        /// The calibration window.
        calibration: Nanos,
    },
    /// `CLOCK_MONOTONIC`, as asked.
    Monotonic,
}

/// A resolved `host clocks` run.
#[derive(Clone, Debug, PartialEq)]
pub struct ClocksRun {
    /// What to measure.
    pub cfg: ClocksConfig,
    /// Pin the reading thread to this CPU.
    pub cpu: Option<u32>,
    /// Run the reading thread under `SCHED_FIFO` at this priority.
    pub fifo: Option<i32>,
    /// Lock memory first (page faults would show as gaps).
    pub mlock: bool,
    /// How the timebase is established.
    pub timebase: TimebaseChoice,
    /// Run start (RFC 3339, UTC), for provenance.
    pub started_utc: String,
    /// `--explain`: attribute each slow read to kernel events.
    pub explain: bool,
    /// `--explain-above`: slow means a gap at or above this (default: above the source's
    /// p99 and at least [`SLOW_FLOOR`]).
    pub explain_above: Option<Nanos>,
}

/// The shortest gap `--explain` keeps without `--explain-above`: below it a gap is the
/// read itself or a cache miss, not an interruption the kernel could log.
pub const SLOW_FLOOR: Nanos = Nanos::from_micros(1);
/// Slow reads kept per source (more are counted).
pub const SLOW_CAPACITY: usize = 1 << 18;

impl ClocksRun {
    /// Checks what [`run`] needs: positive duration and interval, at least one source.
    ///
    /// # Errors
    /// [`ClocksError::Config`] naming the setting.
    pub fn validate(&self) -> Result<(), ClocksError> {
        if self.cfg.duration.get() == 0 {
            return Err(ClocksError::Config(
                "--duration must be positive, e.g. 2s".into(),
            ));
        }
        if self.cfg.interval.get() == 0 {
            return Err(ClocksError::Config(
                "--interval must be positive, e.g. 1s".into(),
            ));
        }
        if self.cfg.sources.is_empty() {
            return Err(ClocksError::Config("no clock source to measure".into()));
        }
        Ok(())
    }
}

/// Errors of a whole run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// Placing the reading thread failed (`--cpu`, `--fifo`).
    #[error("{flag}: {source}")]
    Placement {
        /// The flag that asked for it.
        flag: &'static str,
        /// What the OS said.
        #[source]
        source: SchedError,
    },
    /// Measuring a source failed.
    #[error("measuring {source_name}: {source}")]
    Measure {
        /// The source.
        source_name: &'static str,
        /// Why.
        #[source]
        source: ClocksError,
    },
    /// Writing the result or the interval log failed.
    #[error(transparent)]
    Write(#[from] ResultError),
    /// Encoding the interval log failed.
    #[error("encoding the interval log: {0}")]
    Hlog(#[from] latlab_core::results::hlog::HlogError),
}

/// What [`run`] wrote.
#[derive(Clone, Debug)]
pub struct Written {
    /// The result file.
    pub result: PathBuf,
    /// The interval log beside it.
    pub interval_log: PathBuf,
}

/// Runs the measurement on the calling thread and writes `out` (and `out` with the
/// extension `hlog`). `progress` is told each source's name before it is measured.
///
/// # Errors
/// See [`RunError`].
pub fn run(
    r: &ClocksRun,
    argv: Vec<String>,
    out: &Path,
    progress: &mut dyn FnMut(&str),
    notice: &mut dyn FnMut(&str),
) -> Result<Written, RunError> {
    // Placement first, so that a refused --cpu or --fifo fails fast and the calibration
    // runs where the measurement will.
    if let Some(cpu) = r.cpu {
        sched::pin_current_thread(cpu).map_err(|source| RunError::Placement {
            flag: "--cpu",
            source,
        })?;
    }
    if let Some(prio) = r.fifo {
        sched::set_fifo(prio).map_err(|source| RunError::Placement {
            flag: "--fifo",
            source,
        })?;
    }
    let (clock, timebase) = match r.timebase {
        TimebaseChoice::Monotonic => Clock::establish_monotonic("--timebase monotonic was given"),
        TimebaseChoice::Auto { calibration } => Clock::establish(calibration),
    };
    let mut warnings = Vec::new();
    let memory_locked = r.mlock && sched::lock_memory_or_warn(&mut warnings);

    // Measure.
    let mut cfg = r.cfg.clone();
    if r.explain {
        cfg.slow_reads = SLOW_CAPACITY;
        cfg.slow_floor = r.explain_above.unwrap_or(SLOW_FLOOR);
    }
    let cfg = &cfg;
    let ks = r.explain.then(|| {
        KernelSession::start(
            &KernelRequest {
                not_tsc: (!clock.is_tsc()).then(|| {
                    timebase
                        .fallback_reason
                        .clone()
                        .unwrap_or_else(|| "--timebase monotonic".into())
                }),
                cpus: (0..sched::online_cpus()).collect(),
                ..KernelRequest::default()
            },
            notice,
        )
    });
    let steal_before = host::steal_ns();
    let mut skipped = Vec::new();
    let runnable: Vec<ClockSource> = cfg
        .sources
        .iter()
        .copied()
        .filter(|s| match s.unavailable(&timebase) {
            Some(why) => {
                skipped.push((*s, why));
                false
            }
            None => true,
        })
        .collect();
    let wall_start = std::time::SystemTime::now();
    let run_start = clock.now();
    let mut outcomes = Vec::new();
    for s in &runnable {
        progress(s.name());
        outcomes.push(
            measure(*s, cfg, &clock, run_start).map_err(|source| RunError::Measure {
                source_name: s.name(),
                source,
            })?,
        );
    }
    let run_end = clock.now();
    let got = ks.map(|k| k.finish(notice));
    let steal = CpuSteal::between(&steal_before, &host::steal_ns());

    // Provenance and the result file.
    let (policy, priority) = sched::current_policy();
    let mut observed: Vec<u32> = outcomes
        .iter()
        .flat_map(|o| o.cpus.iter().copied())
        .collect();
    observed.sort_unstable();
    observed.dedup();
    let thread = ThreadPlacement {
        observed_cpus: observed,
        ..ThreadPlacement::pinned("clock reader", r.cpu, policy, priority)
    };
    let provenance = host::provenance(
        timebase.clone(),
        vec![thread],
        memory_locked,
        r.started_utc.clone(),
    );
    let (timebase_name, calibration) = match r.timebase {
        TimebaseChoice::Auto { calibration } => ("auto", Some(calibration.get())),
        TimebaseChoice::Monotonic => ("monotonic", None),
    };
    let config = serde_json::json!({
        "sources": cfg.sources.iter().map(|s| s.name()).collect::<Vec<_>>(),
        "duration_ns": cfg.duration.get(),
        "chunk_reads": cfg.chunk_reads,
        "interval_ns": cfg.effective_interval().get(),
        "histogram": cfg.hist,
        "cpu": r.cpu,
        "fifo_priority": r.fifo,
        "mlock": r.mlock,
        "timebase": timebase_name,
        "calibration_window_ns": calibration,
    });
    let mut result = ResultFile::new(RESULT_KIND, argv, config, provenance);
    result.duration_ns = clock.delta_nanos(run_start, run_end).get();
    fill_result(&mut result, &outcomes, &skipped);
    if let Some(got) = got {
        explain_slow_reads(
            r,
            &mut result,
            &outcomes,
            &got,
            &clock,
            (run_start, run_end),
            steal,
        );
    }
    result.warnings.extend(warnings);
    trust_warnings(&mut result, r.cpu.is_some());
    let hlog_path = out.with_extension("hlog");
    result.interval_log = hlog_path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned());
    result.save(out)?;
    let log = hlog::write(
        wall_start,
        "latlab host clocks: read-to-read gaps in ns",
        &intervals(&outcomes),
    )?;
    write_atomically(&hlog_path, &log)?;
    Ok(Written {
        result: out.to_path_buf(),
        interval_log: hlog_path,
    })
}

/// Attributes every slow read of every source (at or above `--explain-above`, else above
/// the source's p99 and at least [`SLOW_FLOOR`]) on the reading CPU, as one attribution.
fn explain_slow_reads(
    r: &ClocksRun,
    result: &mut ResultFile,
    outcomes: &[SourceOutcome],
    got: &KernelCollected,
    clock: &Clock,
    span: (u64, u64),
    steal: Vec<CpuSteal>,
) {
    let tid = latlab_sys::rt::gettid();
    let hz = match clock.timesource() {
        Timesource::Tsc(rate) => rate.hz(),
        Timesource::Monotonic => 1_000_000_000,
    };
    let p99 = latlab_core::parse::Percentile::from_fraction(99, 100).expect("valid");
    let mut windows = Vec::new();
    let mut per_source = serde_json::Map::new();
    let mut overflow = 0;
    for o in outcomes {
        let threshold = r
            .explain_above
            .unwrap_or_else(|| Nanos(o.gaps.value_at(p99).saturating_add(1)).max(SLOW_FLOOR));
        let cpu = r.cpu.or(o.cpus.first().copied()).unwrap_or(0);
        let mut n = 0u64;
        for g in &o.slow {
            let ns = if o.source.is_tsc() {
                clock.delta_nanos(g.start, g.end)
            } else {
                Nanos(g.end - g.start)
            };
            if ns >= threshold {
                n += 1;
                windows.push(ThreadWindow::whole(
                    Some(tid),
                    Window {
                        cpu,
                        start: o.raw_to_tsc(g.start),
                        end: o.raw_to_tsc(g.end),
                    },
                ));
            }
        }
        overflow += o.slow_overflow;
        per_source.insert(
            o.source.name().into(),
            serde_json::json!({"threshold_ns": threshold.get(), "windows": n, "cpu": cpu,
                               "slow_reads_not_kept": o.slow_overflow}),
        );
    }
    // a window's baseline: one read of the cheapest source
    let base_ns = outcomes
        .iter()
        .map(SourceOutcome::read_cost_ns)
        .min()
        .unwrap_or(0);
    let got = got.attribute_threads(
        &windows,
        &ExplainOptions {
            window: span,
            tid: Some(tid),
            tsc_hz: hz,
            base_ticks: (u128::from(base_ns) * u128::from(hz) / 1_000_000_000) as u64,
            worst: 10,
        },
    );
    let mut a = got.attribution;
    a.steal = steal;
    if overflow > 0 {
        result.warnings.push(format!(
            "{overflow} slow reads did not fit the explain buffer: counted, not attributed"
        ));
    }
    result
        .warnings
        .extend(latlab_explain::render::unavailable_warning(
            &a,
            "every slow read is unexplained",
        ));
    result.explain = Some(a);
    if let Some(d) = result.data.as_object_mut() {
        d.insert("explain".into(), serde_json::Value::Object(per_source));
    }
}

/// Warnings about the conditions of the run that a reader must weigh.
fn trust_warnings(result: &mut ResultFile, pinned: bool) {
    let p = &result.provenance;
    let mut w = Vec::new();
    if let Some(vm) = &p.host.virtualization {
        w.push(format!(
            "running under a hypervisor ({vm}): VM exits and steal time appear as gaps"
        ));
    }
    if !pinned {
        w.push(
            "the reader thread was not pinned (--cpu): migrations may appear as gaps".to_string(),
        );
    }
    if let Some(reason) = &p.timebase.fallback_reason {
        w.push(format!(
            "timebase is CLOCK_MONOTONIC, not the TSC: {reason}"
        ));
    }
    if let Some(d) = p.timebase.tsc.rate_disagreement_ppm {
        if d.abs() > 100.0 {
            w.push(format!(
                "the kernel's TSC rate and the calibration disagree by {d:.0} ppm"
            ));
        }
    }
    result.warnings.extend(w);
}

/// The defaults a `host clocks` run starts from.
impl Default for ClocksRun {
    fn default() -> Self {
        ClocksRun {
            cfg: ClocksConfig::default(),
            cpu: None,
            fifo: None,
            mlock: true,
            timebase: TimebaseChoice::Auto {
                calibration: Nanos(100_000_000),
            },
            started_utc: String::new(),
            explain: false,
            explain_above: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_names_the_setting() {
        let mut r = ClocksRun::default();
        assert!(r.validate().is_ok());
        r.cfg.duration = Nanos(0);
        assert!(r.validate().unwrap_err().to_string().contains("--duration"));
        let mut r = ClocksRun::default();
        r.cfg.interval = Nanos(0);
        assert!(r.validate().unwrap_err().to_string().contains("--interval"));
    }
}
