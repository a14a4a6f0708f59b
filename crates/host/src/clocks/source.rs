//! The clock sources, how one is measured (chunks of back-to-back reads, histogrammed
//! gaps) and what a run stores in its result.

use latlab_core::hist::{HistConfig, LatencyHistogram};
use latlab_core::results::Timebase;
use latlab_core::units::Nanos;
use latlab_explain::GapRecorder;
use latlab_sys::clocks;
use latlab_sys::tsc::{self, Clock};
use serde::{Deserialize, Serialize};
use std::fmt;

/// A clock that can be read back to back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClockSource {
    /// `lfence; rdtsc` — the fenced TSC read latlab uses for timestamps.
    Rdtsc,
    /// `rdtscp` — TSC plus the CPU number, self-ordering against earlier instructions.
    Rdtscp,
    /// `clock_gettime(CLOCK_MONOTONIC)` (vDSO).
    Monotonic,
    /// `clock_gettime(CLOCK_MONOTONIC_RAW)`.
    MonotonicRaw,
    /// `clock_gettime(CLOCK_REALTIME)`.
    Realtime,
    /// `gettimeofday` (microsecond resolution).
    Gettimeofday,
}

impl ClockSource {
    /// Every source, cheapest first.
    pub const ALL: [ClockSource; 6] = [
        ClockSource::Rdtsc,
        ClockSource::Rdtscp,
        ClockSource::Monotonic,
        ClockSource::MonotonicRaw,
        ClockSource::Realtime,
        ClockSource::Gettimeofday,
    ];

    /// The name used on the command line, in tables and as the histogram name.
    pub fn name(self) -> &'static str {
        match self {
            ClockSource::Rdtsc => "rdtsc",
            ClockSource::Rdtscp => "rdtscp",
            ClockSource::Monotonic => "monotonic",
            ClockSource::MonotonicRaw => "monotonic_raw",
            ClockSource::Realtime => "realtime",
            ClockSource::Gettimeofday => "gettimeofday",
        }
    }

    /// Parses a name as printed by [`ClockSource::name`].
    pub fn from_name(s: &str) -> Option<ClockSource> {
        Self::ALL.into_iter().find(|c| c.name() == s)
    }

    /// Whether this source reads the TSC (and so needs a usable TSC rate).
    pub fn is_tsc(self) -> bool {
        matches!(self, ClockSource::Rdtsc | ClockSource::Rdtscp)
    }

    /// Why this source cannot be measured under `timebase`, or `None` when it can: TSC
    /// sources need the TSC timebase, and `rdtscp` needs a CPU that offers it.
    pub fn unavailable(self, timebase: &Timebase) -> Option<String> {
        if self.is_tsc() && timebase.source != "tsc" {
            let why = timebase
                .fallback_reason
                .as_deref()
                .unwrap_or("timebase is not the TSC");
            return Some(format!("TSC not usable: {why}"));
        }
        if self == ClockSource::Rdtscp && !timebase.tsc.rdtscp {
            return Some("the CPU does not offer rdtscp".to_string());
        }
        None
    }

    /// The resolution the OS claims for this clock (`clock_getres`), in ns, where it has one.
    pub fn claimed_resolution_ns(self) -> Option<u64> {
        match self {
            ClockSource::Rdtsc | ClockSource::Rdtscp => None,
            ClockSource::Monotonic => Some(clocks::clock_resolution_ns(clocks::ClockId::Monotonic)),
            ClockSource::MonotonicRaw => {
                Some(clocks::clock_resolution_ns(clocks::ClockId::MonotonicRaw))
            }
            ClockSource::Realtime => Some(clocks::clock_resolution_ns(clocks::ClockId::Realtime)),
            ClockSource::Gettimeofday => Some(1_000),
        }
    }
}

impl fmt::Display for ClockSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What to measure.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClocksConfig {
    /// Sources, measured one after another in this order.
    pub sources: Vec<ClockSource>,
    /// How long to read each source.
    pub duration: Nanos,
    /// Reads per chunk (see module docs).
    pub chunk_reads: usize,
    /// Length of one interval of the time series.
    pub interval: Nanos,
    /// Histogram range and precision.
    pub hist: HistConfig,
    /// `--explain`: keep up to this many slow reads (gaps at or above `slow_floor`) with
    /// their raw readings, in memory allocated before the first read; 0: keep none.
    #[serde(default)]
    pub slow_reads: usize,
    /// The shortest gap kept as a slow read.
    #[serde(default)]
    pub slow_floor: Nanos,
}

/// The most intervals a time series holds; longer runs get longer intervals.
pub const MAX_INTERVALS: u64 = 600;

impl Default for ClocksConfig {
    fn default() -> Self {
        ClocksConfig {
            sources: ClockSource::ALL.to_vec(),
            duration: Nanos::from_secs(2),
            chunk_reads: 4096,
            interval: Nanos::SECOND,
            hist: HistConfig::default(),
            slow_reads: 0,
            slow_floor: Nanos::from_micros(1),
        }
    }
}

impl ClocksConfig {
    /// The interval length actually used: `interval`, stretched so that no more than
    /// [`MAX_INTERVALS`] intervals cover `duration`.
    pub fn effective_interval(&self) -> Nanos {
        let min = self.duration.get().div_ceil(MAX_INTERVALS);
        Nanos(self.interval.get().max(min).max(1))
    }
}

/// Errors that stop a measurement.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClocksError {
    /// A TSC source was asked for but the TSC is not usable here.
    #[error("clock source '{source_name}' needs a usable TSC, but {reason}")]
    TscUnusable {
        /// The source.
        source_name: &'static str,
        /// Why the TSC is not used.
        reason: String,
    },
    /// The configuration cannot be measured.
    #[error("invalid configuration: {0}")]
    Config(String),
}

/// One interval of a source's time series.
#[derive(Clone, Debug)]
pub struct IntervalHist {
    /// Start, relative to the source's first read.
    pub start: Nanos,
    /// Length.
    pub length: Nanos,
    /// Gaps recorded in it.
    pub gaps: LatencyHistogram,
}

/// The outcome of reading one source.
#[derive(Clone, Debug)]
pub struct SourceOutcome {
    /// Which source.
    pub source: ClockSource,
    /// When reading began, relative to the whole run's start.
    pub start_offset: Nanos,
    /// Every recorded read-to-read gap, in ns.
    pub gaps: LatencyHistogram,
    /// The same gaps split into intervals (the time series).
    pub intervals: Vec<IntervalHist>,
    /// Reads taken.
    pub reads: u64,
    /// Wall time from the first to the last read.
    pub elapsed: Nanos,
    /// Time covered by recorded gaps (the rest went to bookkeeping between chunks).
    pub covered: Nanos,
    /// Consecutive reads where the clock went backwards (not recorded as gaps).
    pub backward_steps: u64,
    /// CPUs the reading thread was seen on (checked once per chunk).
    pub cpus: Vec<u32>,
    /// Slow reads kept (`slow_reads` > 0): the two raw readings around each gap at or
    /// above `slow_floor`, in the source's own units.
    pub slow: Vec<latlab_explain::Gap>,
    /// Slow reads that did not fit.
    pub slow_overflow: u64,
    /// `(TSC, raw reading)` taken together before the first and after the last timed read:
    /// maps the source's readings onto the TSC timeline.
    pub anchors: [(u64, u64); 2],
}

impl SourceOutcome {
    /// Reads per second of wall time.
    pub fn reads_per_sec(&self) -> f64 {
        if self.elapsed.get() == 0 {
            0.0
        } else {
            self.reads as f64 * 1e9 / self.elapsed.get() as f64
        }
    }

    /// Fraction of the wall time that was observed through recorded gaps.
    pub fn coverage(&self) -> f64 {
        if self.elapsed.get() == 0 {
            0.0
        } else {
            self.covered.get() as f64 / self.elapsed.get() as f64
        }
    }

    /// The cost of one read: the median read-to-read gap, in ns.
    pub fn read_cost_ns(&self) -> u64 {
        self.gaps
            .value_at(latlab_core::parse::Percentile::LADDER[0])
    }
}

/// Reads `source` back to back for `cfg.duration` on the calling thread (pin it first if
/// that matters) and returns the gap histogram and its time series.
///
/// `clock` is the run's timebase: it converts TSC gaps to ns and times the run. All memory
/// is allocated before the first read.
/// `run_start` is a reading of `clock` taken when the whole run began: the outcome's
/// [`SourceOutcome::start_offset`] and the time series are placed relative to it.
pub fn measure(
    source: ClockSource,
    cfg: &ClocksConfig,
    clock: &Clock,
    run_start: u64,
) -> Result<SourceOutcome, ClocksError> {
    if cfg.chunk_reads < 2 {
        return Err(ClocksError::Config("chunk_reads must be at least 2".into()));
    }
    if cfg.duration.get() == 0 {
        return Err(ClocksError::Config("duration must be positive".into()));
    }
    LatencyHistogram::new(cfg.hist).map_err(|e| ClocksError::Config(e.to_string()))?;
    if source.is_tsc() && !clock.is_tsc() {
        return Err(ClocksError::TscUnusable {
            source_name: source.name(),
            reason: "the run's timebase fell back to CLOCK_MONOTONIC".into(),
        });
    }
    let conv = |earlier: u64, later: u64| clock.delta_nanos(earlier, later);
    let ns = |earlier: u64, later: u64| Nanos(later - earlier);
    match source {
        ClockSource::Rdtsc => Ok(read_loop(
            source,
            cfg,
            clock,
            run_start,
            || tsc::read().0,
            conv,
        )),
        ClockSource::Rdtscp => Ok(read_loop(
            source,
            cfg,
            clock,
            run_start,
            || tsc::read_cpu().0 .0,
            conv,
        )),
        ClockSource::Monotonic => Ok(read_loop(
            source,
            cfg,
            clock,
            run_start,
            clocks::monotonic_ns,
            ns,
        )),
        ClockSource::MonotonicRaw => Ok(read_loop(
            source,
            cfg,
            clock,
            run_start,
            clocks::monotonic_raw_ns,
            ns,
        )),
        ClockSource::Realtime => Ok(read_loop(
            source,
            cfg,
            clock,
            run_start,
            clocks::realtime_ns,
            ns,
        )),
        ClockSource::Gettimeofday => Ok(read_loop(
            source,
            cfg,
            clock,
            run_start,
            clocks::gettimeofday_ns,
            ns,
        )),
    }
}

/// The measuring loop, monomorphised per source so each read inlines.
#[inline(never)]
fn read_loop<R, G>(
    source: ClockSource,
    cfg: &ClocksConfig,
    clock: &Clock,
    run_start: u64,
    mut read: R,
    gap: G,
) -> SourceOutcome
where
    R: FnMut() -> u64,
    G: Fn(u64, u64) -> Nanos,
{
    let interval = cfg.effective_interval();
    let n_intervals = cfg.duration.get().div_ceil(interval.get()) as usize;
    // Everything the loop touches is allocated here.
    let mut intervals: Vec<IntervalHist> = (0..n_intervals)
        .map(|i| {
            let start = Nanos(interval.get() * i as u64);
            let length = Nanos(interval.get().min(cfg.duration.get() - start.get()));
            LatencyHistogram::new(cfg.hist).map(|gaps| IntervalHist {
                start,
                length,
                gaps,
            })
        })
        .collect::<Result<_, _>>()
        .expect("measure() validated the histogram configuration");
    let mut buf = vec![0u64; cfg.chunk_reads];
    let mut cpu_seen = vec![false; 1024];
    // slow reads, in the source's units: TSC ticks or ns
    let floor = if source.is_tsc() {
        let hz = match clock.timesource() {
            tsc::Timesource::Tsc(rate) => rate.hz(),
            tsc::Timesource::Monotonic => 1_000_000_000,
        };
        (u128::from(cfg.slow_floor.get()) * u128::from(hz) / 1_000_000_000) as u64
    } else {
        cfg.slow_floor.get()
    };
    let mut slow = (cfg.slow_reads > 0).then(|| GapRecorder::new(floor, cfg.slow_reads));
    let mut reads = 0u64;
    let mut covered = 0u64;
    let mut backward = 0u64;

    // Warm the buffer and caches: one untimed chunk.
    for slot in buf.iter_mut() {
        *slot = read();
    }
    let anchor0 = (tsc::read().0, read());
    let start = clock.now();
    let end = loop {
        for slot in buf.iter_mut() {
            *slot = read();
        }
        let now = clock.now();
        let elapsed = clock.delta_nanos(start, now);
        // Attribute the chunk to the interval in which it ended.
        let idx = ((elapsed.get() / interval.get()) as usize).min(n_intervals - 1);
        let hist = &mut intervals[idx].gaps;
        for w in buf.windows(2) {
            if w[1] < w[0] {
                backward += 1;
                continue;
            }
            let g = gap(w[0], w[1]);
            covered += g.get();
            hist.record(g);
            if let Some(r) = slow.as_mut() {
                r.record(w[0], w[1]);
            }
        }
        reads += buf.len() as u64;
        if let Some(seen) = cpu_seen.get_mut(latlab_sys::sched::current_cpu() as usize) {
            *seen = true;
        }
        if elapsed >= cfg.duration {
            break now;
        }
    };
    let anchor1 = (tsc::read().0, read());
    let mut gaps = LatencyHistogram::new(cfg.hist).expect("validated");
    for iv in &intervals {
        gaps.merge(&iv.gaps).expect("same configuration");
    }
    SourceOutcome {
        source,
        start_offset: clock.delta_nanos(run_start, start),
        gaps,
        intervals,
        reads,
        elapsed: clock.delta_nanos(start, end),
        covered: Nanos(covered),
        backward_steps: backward,
        cpus: cpu_seen
            .iter()
            .enumerate()
            .filter(|(_, &s)| s)
            .map(|(i, _)| i as u32)
            .collect(),
        slow_overflow: slow.as_ref().map_or(0, GapRecorder::overflow),
        slow: slow.map(|r| r.gaps().to_vec()).unwrap_or_default(),
        anchors: [anchor0, anchor1],
    }
}

impl SourceOutcome {
    /// A raw reading of this source on the TSC timeline: the identity for TSC sources,
    /// else the straight line through [`SourceOutcome::anchors`].
    pub fn raw_to_tsc(&self, raw: u64) -> u64 {
        if self.source.is_tsc() {
            return raw;
        }
        let [(t0, r0), (t1, r1)] = self.anchors;
        let dr = i128::from(r1) - i128::from(r0);
        if dr <= 0 {
            return t0;
        }
        let off = (i128::from(raw) - i128::from(r0)) * (i128::from(t1) - i128::from(t0)) / dr;
        (i128::from(t0) + off).max(0) as u64
    }
}

/// Per-source facts stored in the result's `data` (everything that is not a distribution).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SourceFacts {
    /// Reads taken.
    pub reads: u64,
    /// Reads per second of wall time.
    pub reads_per_sec: f64,
    /// Median read-to-read gap: the cost of one read, ns.
    pub read_cost_ns: u64,
    /// Smallest gap seen, ns.
    pub floor_ns: u64,
    /// Fraction of the run's time observed through recorded gaps.
    pub coverage: f64,
    /// Times the clock went backwards between consecutive reads.
    pub backward_steps: u64,
    /// The resolution the OS claims (`clock_getres`), ns.
    pub claimed_resolution_ns: Option<u64>,
    /// CPUs the reader was seen on.
    pub cpus: Vec<u32>,
    /// Wall time spent reading, ns.
    pub elapsed_ns: u64,
}

/// The `data` section of a `host.clocks` result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClocksData {
    /// Facts per measured source, in measurement order.
    pub sources: Vec<(String, SourceFacts)>,
    /// Sources that were asked for but could not be measured, with the reason.
    pub skipped: Vec<(String, String)>,
}

impl SourceOutcome {
    /// The facts stored for this source.
    pub fn facts(&self) -> SourceFacts {
        SourceFacts {
            reads: self.reads,
            reads_per_sec: self.reads_per_sec(),
            read_cost_ns: self.read_cost_ns(),
            floor_ns: self.gaps.min(),
            coverage: self.coverage(),
            backward_steps: self.backward_steps,
            claimed_resolution_ns: self.source.claimed_resolution_ns(),
            cpus: self.cpus.clone(),
            elapsed_ns: self.elapsed.get(),
        }
    }
}

/// The result kind written by `latlab host clocks`.
pub const RESULT_KIND: &str = "host.clocks";

/// Fills a result with the outcomes: one histogram per source (named after it), counters of
/// backward steps and saturated gaps, per-source facts in `data`, and the warnings a reader
/// needs (low coverage, saturation, backward steps, skipped sources).
pub fn fill_result(
    result: &mut latlab_core::results::ResultFile,
    outcomes: &[SourceOutcome],
    skipped: &[(ClockSource, String)],
) {
    use latlab_core::results::StoredHistogram;
    for o in outcomes {
        let name = o.source.name();
        result.histograms.push(
            StoredHistogram::new(name, &o.gaps)
                .with_label("source", name)
                .with_label("measures", "read-to-read gap"),
        );
        result
            .counters
            .insert(format!("{name}.backward_steps"), o.backward_steps);
        result
            .counters
            .insert(format!("{name}.saturated"), o.gaps.saturated());
        if o.backward_steps > 0 {
            result.warnings.push(format!(
                "{name}: the clock went backwards {} times between consecutive reads (not recorded as gaps)",
                o.backward_steps
            ));
        }
        if o.gaps.saturated() > 0 {
            result.warnings.push(format!(
                "{name}: {} gaps exceeded the histogram range and were recorded as its maximum",
                o.gaps.saturated()
            ));
        }
        if o.coverage() < 0.5 {
            result.warnings.push(format!(
                "{name}: only {:.0}% of the run was observed (bookkeeping between chunks hides the rest)",
                o.coverage() * 100.0
            ));
        }
    }
    for (s, why) in skipped {
        result
            .warnings
            .push(format!("{}: not measured: {why}", s.name()));
    }
    let data = ClocksData {
        sources: outcomes
            .iter()
            .map(|o| (o.source.name().to_string(), o.facts()))
            .collect(),
        skipped: skipped
            .iter()
            .map(|(s, w)| (s.name().to_string(), w.clone()))
            .collect(),
    };
    result.data = serde_json::to_value(data).expect("plain data serialises");
}

/// The time series of every outcome as interval-log entries (tag = source name).
pub fn intervals(outcomes: &[SourceOutcome]) -> Vec<latlab_core::results::hlog::Interval> {
    let mut out = Vec::new();
    for o in outcomes {
        for iv in &o.intervals {
            out.push(latlab_core::results::hlog::Interval {
                tag: o.source.name().to_string(),
                start: (o.start_offset + iv.start).to_std(),
                duration: iv.length.to_std(),
                hist: iv.gaps.clone(),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quick() -> ClocksConfig {
        ClocksConfig {
            duration: Nanos::from_millis(30),
            interval: Nanos::from_millis(10),
            ..Default::default()
        }
    }

    #[test]
    fn names_round_trip() {
        for s in ClockSource::ALL {
            assert_eq!(ClockSource::from_name(s.name()), Some(s));
        }
        assert_eq!(ClockSource::from_name("sundial"), None);
    }

    #[test]
    fn interval_is_stretched_for_long_runs() {
        let cfg = ClocksConfig {
            duration: Nanos::from_secs(3600),
            ..Default::default()
        };
        assert_eq!(cfg.effective_interval(), Nanos::from_secs(6));
        assert_eq!(ClocksConfig::default().effective_interval(), Nanos::SECOND);
    }

    #[test]
    fn monotonic_gaps_are_recorded_and_accounted() {
        let clock = Clock::monotonic();
        let out = measure(ClockSource::Monotonic, &quick(), &clock, clock.now()).unwrap();
        assert!(out.reads >= 2 * 4096);
        // every read but the first of each chunk yields a gap (or a backward step)
        let chunks = out.reads / 4096;
        assert_eq!(out.gaps.count() + out.backward_steps, out.reads - chunks);
        assert_eq!(out.backward_steps, 0, "CLOCK_MONOTONIC never goes back");
        assert!(out.elapsed >= Nanos::from_millis(30));
        assert!(
            out.coverage() > 0.0 && out.coverage() <= 1.0,
            "{}",
            out.coverage()
        );
        assert_eq!(out.intervals.len(), 3);
        let sum: u64 = out.intervals.iter().map(|i| i.gaps.count()).sum();
        assert_eq!(sum, out.gaps.count());
        assert!(!out.cpus.is_empty());
    }

    #[test]
    fn tsc_sources_need_a_tsc_timebase() {
        let err = measure(ClockSource::Rdtsc, &quick(), &Clock::monotonic(), 0).unwrap_err();
        assert!(err.to_string().contains("needs a usable TSC"), "{err}");
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn rdtsc_gaps_are_positive_and_small_at_the_median() {
        let (clock, tb) = Clock::establish(Nanos::from_millis(20));
        if !clock.is_tsc() {
            eprintln!("skipped: TSC not usable here ({:?})", tb.fallback_reason);
            return;
        }
        let out = measure(ClockSource::Rdtsc, &quick(), &clock, clock.now()).unwrap();
        // a read takes more than 0 ns and (on any machine) far less than 10 us
        let med = out.read_cost_ns();
        assert!(med > 0 && med < 10_000, "median gap {med} ns");
        assert!(out.gaps.min() > 0);
    }

    #[test]
    fn availability_follows_the_timebase() {
        let mut tb = Timebase {
            source: "tsc".into(),
            ..Timebase::default()
        };
        tb.tsc.rdtscp = true;
        assert!(ClockSource::ALL
            .iter()
            .all(|s| s.unavailable(&tb).is_none()));
        tb.tsc.rdtscp = false;
        assert_eq!(
            ClockSource::Rdtscp.unavailable(&tb).as_deref(),
            Some("the CPU does not offer rdtscp")
        );
        assert_eq!(ClockSource::Rdtsc.unavailable(&tb), None);
        let tb = Timebase {
            source: "clock_monotonic".into(),
            fallback_reason: Some("not x86_64".into()),
            ..Timebase::default()
        };
        assert_eq!(
            ClockSource::Rdtsc.unavailable(&tb).as_deref(),
            Some("TSC not usable: not x86_64")
        );
        assert_eq!(ClockSource::Monotonic.unavailable(&tb), None);
    }

    #[test]
    fn bad_config_is_rejected() {
        let cfg = ClocksConfig {
            hist: HistConfig {
                sigfig: 9,
                ..HistConfig::default()
            },
            ..quick()
        };
        assert!(matches!(
            measure(ClockSource::Monotonic, &cfg, &Clock::monotonic(), 0),
            Err(ClocksError::Config(_))
        ));
        let cfg = ClocksConfig {
            chunk_reads: 1,
            ..quick()
        };
        assert!(measure(ClockSource::Monotonic, &cfg, &Clock::monotonic(), 0).is_err());
    }
}
