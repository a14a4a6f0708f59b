//! `--explain` of the net commands: which probe samples are explained (above p99 of the
//! run, or above `--explain-above`), their windows on the CPUs that carried them, the
//! measuring threads' own stalls, and the kernel half ([`latlab_explain::KernelSession`]).
//!
//! The selection is pure ([`select`]); the hot paths only fill preallocated buffers
//! ([`SampleLog`] and [`latlab_explain::GapRecorder`]).

use latlab_core::parse::Percentile;
use latlab_core::results::Attribution;
use latlab_core::units::Nanos;
use latlab_explain::{
    Class, ExplainOptions, Gap, GapRecorder, KernelCollected, KernelRequest, PathWindow, Stall,
    Watch,
};
use latlab_sys::tsc::{Clock, Timesource};
use serde::{Deserialize, Serialize};

/// What `--explain` / `--explain-above` ask for (part of the serialised configurations,
/// so an orchestrator hands it to its children).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExplainSpec {
    /// Explain at all.
    #[serde(default)]
    pub enabled: bool,
    /// The threshold; `None`: everything above the run's p99.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub above: Option<Nanos>,
    /// Record every kernel event latlab knows, not only those the attribution uses
    /// (`--explain-events all`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub all_events: bool,
    /// Record through a tracefs instance, not BPF (`--explain-recorder tracefs`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub tracefs: bool,
}

impl ExplainSpec {
    /// Explain everything above p99.
    pub const P99: ExplainSpec = ExplainSpec {
        enabled: true,
        above: None,
        all_events: false,
        tracefs: false,
    };
}

/// A loop step at least this long is a stall: the thread lost its CPU (a busy loop's
/// iteration costs a few µs at most here, a system call included).
pub const STALL_THRESHOLD: Nanos = Nanos::from_micros(5);

/// Stalls kept per thread (more are counted).
pub const STALL_CAPACITY: usize = 1 << 18;

/// Worst windows kept in the attribution.
pub const WORST: usize = 10;

/// A thread's stall recorder: a real one when explaining, an empty one (that stores
/// nothing) otherwise.
pub fn stall_recorder(clock: &Clock, on: bool) -> GapRecorder {
    if on {
        GapRecorder::new(ticks(clock, STALL_THRESHOLD.get()), STALL_CAPACITY)
    } else {
        GapRecorder::new(u64::MAX, 0)
    }
}

/// Nanoseconds as ticks of `clock`.
pub fn ticks(clock: &Clock, ns: u64) -> u64 {
    (u128::from(ns) * u128::from(tsc_hz(clock)) / 1_000_000_000) as u64
}

/// Ticks per second of `clock`.
pub fn tsc_hz(clock: &Clock) -> u64 {
    match clock.timesource() {
        Timesource::Tsc(rate) => rate.hz(),
        Timesource::Monotonic => 1_000_000_000,
    }
}

/// Every measured sample's window, raw clock readings, in a buffer sized before the run:
/// pushing never allocates; samples beyond the capacity are counted.
#[derive(Clone, Debug, Default)]
pub struct SampleLog {
    samples: Vec<(u64, u64)>,
    overflow: u64,
}

impl SampleLog {
    /// A log for up to `capacity` samples (0: a log that keeps nothing and counts nothing).
    pub fn new(capacity: usize) -> SampleLog {
        let mut samples = vec![(0, 0); capacity];
        samples.clear();
        SampleLog {
            samples,
            overflow: 0,
        }
    }

    /// Records the window `start..end`.
    #[inline(always)]
    pub fn push(&mut self, start: u64, end: u64) {
        if self.samples.len() < self.samples.capacity() {
            self.samples.push((start, end));
        } else if self.samples.capacity() > 0 {
            self.overflow += 1;
        }
    }

    /// The windows recorded.
    pub fn samples(&self) -> &[(u64, u64)] {
        &self.samples
    }

    /// Samples that did not fit.
    pub fn overflow(&self) -> u64 {
        self.overflow
    }
}

/// Which samples a run explains.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selection {
    /// Samples above this length are explained, ticks.
    pub threshold: u64,
    /// `p99` or `--explain-above`.
    pub rule: &'static str,
    /// The baseline of a window: the median sample, ticks.
    pub base: u64,
    /// The explained samples' windows, in the order recorded.
    pub windows: Vec<(u64, u64)>,
}

/// Picks the samples to explain: those longer than `above` (ticks) or, without it, than
/// the p99 of all samples (rank `ceil(0.99·n)`, as every latlab percentile); the baseline
/// is the median (rank `ceil(0.5·n)`). Empty input: nothing selected.
pub fn select(samples: &[(u64, u64)], above: Option<u64>) -> Selection {
    let mut lens: Vec<u64> = samples.iter().map(|&(a, b)| b.saturating_sub(a)).collect();
    lens.sort_unstable();
    let at = |num: u64, den: u64| -> u64 {
        if lens.is_empty() {
            return 0;
        }
        let p = Percentile::from_fraction(num, den).expect("a valid percentile");
        lens[(p.rank(lens.len() as u64) as usize).clamp(1, lens.len()) - 1]
    };
    let (threshold, rule) = match above {
        Some(t) => (t, "--explain-above"),
        None => (at(99, 100), "p99"),
    };
    let windows = if lens.is_empty() {
        Vec::new()
    } else {
        samples
            .iter()
            .copied()
            .filter(|&(a, b)| b.saturating_sub(a) > threshold)
            .collect()
    };
    Selection {
        threshold,
        rule,
        base: at(1, 2),
        windows,
    }
}

/// The p99 (rank `ceil(0.99·n)`) of the lengths of `samples` less those in `drop`
/// (windows given by start and end); 0 when none is left.
pub fn clean_p99(samples: &[(u64, u64)], drop: &[(u64, u64)]) -> u64 {
    let mut drop = drop.to_vec();
    drop.sort_unstable();
    let mut lens: Vec<u64> = samples
        .iter()
        .filter(|s| drop.binary_search(s).is_err())
        .map(|&(a, b)| b.saturating_sub(a))
        .collect();
    if lens.is_empty() {
        return 0;
    }
    lens.sort_unstable();
    let p = Percentile::from_fraction(99, 100).expect("a valid percentile");
    lens[(p.rank(lens.len() as u64) as usize).clamp(1, lens.len()) - 1]
}

/// A thread's stalls on `cpu` (its pinned CPU), or on each of `all` when it is not pinned
/// (its CPU is not read on the hot path).
pub fn stalls_of(gaps: &[Gap], cpu: Option<u32>, all: &[u32]) -> Vec<Stall> {
    let cpus: Vec<u32> = cpu.map_or_else(|| all.to_vec(), |c| vec![c]);
    gaps.iter()
        .flat_map(|g| {
            cpus.iter().map(|&c| Stall {
                cpu: c,
                start: g.start,
                end: g.end,
            })
        })
        .collect()
}

/// The kernel half as every net command asks for it: every online CPU (a probe's path
/// crosses the generator, the softirqs and the NF; on a small host that is all of them).
pub fn kernel_request(
    clock: &Clock,
    fallback_reason: Option<&str>,
    spec: &ExplainSpec,
) -> KernelRequest {
    KernelRequest {
        all_events: spec.all_events,
        not_tsc: (!clock.is_tsc())
            .then(|| fallback_reason.unwrap_or("no reason recorded").to_string()),
        cpus: online(),
        tracefs: spec.tracefs,
        ..KernelRequest::default()
    }
}

/// The `sched_switch` filter of a probe's kernel half (see [`latlab_explain::filter`]): a
/// blocking ping-pong's threads record no stalls (a thread waiting in `recv` cannot be
/// told from one that lost its CPU), so the switches between the idle task and latlab's
/// threads — four of the dozen events of each round trip — are dropped in the kernel. Any
/// other probe records every switch: a busy-polling thread's stall is timed up to its
/// CPU's first kernel event, and so is the open-loop TX spin's.
pub fn probe_idle_switches(pingpong: bool, blocking_rx: bool) -> Option<Watch> {
    (pingpong && blocking_rx).then(latlab_threads)
}

/// The online CPUs, `0..n`.
pub fn online() -> Vec<u32> {
    (0..latlab_sys::sched::online_cpus()).collect()
}

/// latlab's own threads: every one is named `latlab…` (the probe's TX and RX threads, the
/// NF's, the delay engine's), in this process or another.
pub fn latlab_threads() -> Watch {
    Watch {
        tids: Vec::new(),
        comm_prefixes: vec!["latlab".into()],
    }
}

/// What `data.explain` of a net result records beside the attribution.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExplainData {
    /// Samples above this were explained, ns.
    pub threshold_ns: u64,
    /// `p99` (of the run) or `--explain-above`.
    pub threshold_rule: String,
    /// The baseline each window's excess is measured from (the median sample), ns.
    pub baseline_ns: u64,
    /// Samples whose windows were recorded.
    pub samples: u64,
    /// Samples that did not fit the preallocated log (not explained).
    pub samples_not_recorded: u64,
    /// Stalls of the measuring threads (loop steps of at least `stall_threshold_ns`).
    pub stalls: u64,
    /// Stalls that did not fit their recorder.
    pub stalls_not_recorded: u64,
    /// The stall threshold, ns.
    pub stall_threshold_ns: u64,
    /// Kernel events decoded.
    pub kernel_events: u64,
    /// Lines of the kernel's trace that did not decode.
    pub malformed_events: u64,
    /// Whether this run mounted tracefs.
    pub mounted_tracefs: bool,
    /// CPUs whose kernel events were recorded (empty without kernel events).
    pub traced_cpus: Vec<u32>,
    /// The recording instance's `record-cmd` option: `off`, or `on (why)`
    /// (`latlab_sys::ktrace::Recording::record_cmd`); empty without kernel events and in
    /// files written before it was recorded.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub record_cmd: String,
    /// Explained samples with time *outside the kernel* (a stall of the guest).
    #[serde(default)]
    pub outside_windows: u64,
    /// The p99 of the samples less those with time outside the kernel, ns (samples at or
    /// below the threshold were not attributed and count as free of it). Probes only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clean_p99_ns: Option<u64>,
}

/// What a measuring run hands to [`attribute_samples`].
#[derive(Clone, Debug, Default)]
pub struct RunSamples {
    /// Every measured sample's window.
    pub log: SampleLog,
    /// The measuring threads' stalls.
    pub stalls: Vec<Stall>,
    /// Stalls that did not fit their recorders.
    pub stall_overflow: u64,
    /// The run's span, raw clock readings.
    pub span: (u64, u64),
    /// The CPUs that carry a sample.
    pub cpus: Vec<u32>,
}

/// Attributes the selected samples of a run (above `above`, or above its p99): each
/// window on the run's CPUs, with the measuring threads' stalls and the kernel events of
/// `got`.
pub fn attribute_samples(
    got: &KernelCollected,
    clock: &Clock,
    above: Option<Nanos>,
    run: &RunSamples,
) -> (Attribution, ExplainData) {
    let (log, stalls, cpus) = (&run.log, &run.stalls, &run.cpus);
    let sel = select(log.samples(), above.map(|n| ticks(clock, n.get())));
    let windows: Vec<PathWindow> = sel
        .windows
        .iter()
        .map(|&(start, end)| PathWindow {
            cpus: cpus.to_vec(),
            start,
            end,
        })
        .collect();
    let (a, splits, kt) = got.attribute_paths(
        &windows,
        stalls,
        &latlab_threads(),
        &ExplainOptions {
            window: run.span,
            tid: None,
            tsc_hz: tsc_hz(clock),
            base_ticks: sel.base,
            worst: WORST,
        },
    );
    let ns = |t: u64| clock.raw_to_nanos(t).get();
    let outside: Vec<(u64, u64)> = splits
        .iter()
        .filter(|s| s.parts.iter().any(|(c, _)| c.class == Class::OutsideKernel))
        .map(|s| (s.window.start, s.window.end))
        .collect();
    let clean = clean_p99(log.samples(), &outside);
    let data = ExplainData {
        outside_windows: outside.len() as u64,
        clean_p99_ns: (got.recording.is_some()).then(|| ns(clean)),
        // as given, not through the clock's rate and back
        threshold_ns: above.map_or(ns(sel.threshold), |n| n.get()),
        threshold_rule: sel.rule.to_string(),
        baseline_ns: ns(sel.base),
        samples: log.samples().len() as u64,
        samples_not_recorded: log.overflow(),
        stalls: stalls.len() as u64,
        stalls_not_recorded: run.stall_overflow,
        stall_threshold_ns: STALL_THRESHOLD.get(),
        ..kernel_facts(got, kt.as_ref())
    };
    (a, data)
}

/// The kernel half's facts of an [`ExplainData`] (the rest zero).
fn kernel_facts(got: &KernelCollected, kt: Option<&latlab_explain::KernelTimeline>) -> ExplainData {
    ExplainData {
        kernel_events: kt.map_or(0, |k| k.events),
        malformed_events: kt.map_or(0, |k| k.malformed),
        mounted_tracefs: got.mounted_tracefs(),
        record_cmd: got.record_cmd(),
        traced_cpus: if got.recording.is_some() {
            got.cpus.clone()
        } else {
            Vec::new()
        },
        ..ExplainData::default()
    }
}

/// One busy thread's stalls, for [`attribute_stalls`].
#[derive(Clone, Copy, Debug)]
pub struct ThreadStalls<'a> {
    /// Its pinned CPU (`None`: unpinned, its stalls count on every CPU).
    pub cpu: Option<u32>,
    /// Its stalls.
    pub gaps: &'a [Gap],
    /// Stalls that did not fit its recorder.
    pub overflow: u64,
    /// Its cheapest loop step, ticks (the baseline of a stall).
    pub loop_cost: u64,
}

/// Attributes the stalls of busy threads (a network function's, the delay engine's):
/// each stall at least `above` long (default: every stall recorded) is a window on its
/// thread's CPU, split by the rule of [`latlab_explain::path`] with the stall itself as
/// the time the thread lost its CPU; the baseline is the thread's cheapest loop step.
pub fn attribute_stalls(
    got: &KernelCollected,
    clock: &Clock,
    above: Option<Nanos>,
    threads: &[ThreadStalls<'_>],
    span: (u64, u64),
) -> (Attribution, ExplainData) {
    let all = online();
    let min = above.map_or(0, |n| ticks(clock, n.get()));
    let mut windows = Vec::new();
    let mut stalls = Vec::new();
    for t in threads {
        stalls.extend(stalls_of(t.gaps, t.cpu, &all));
        let cpus = t.cpu.map_or_else(|| all.clone(), |c| vec![c]);
        windows.extend(
            t.gaps
                .iter()
                .filter(|g| g.ticks() >= min)
                .map(|g| PathWindow {
                    cpus: cpus.clone(),
                    start: g.start,
                    end: g.end,
                }),
        );
    }
    let base = threads.iter().map(|t| t.loop_cost).min().unwrap_or(0);
    let (a, _, kt) = got.attribute_paths(
        &windows,
        &stalls,
        &latlab_threads(),
        &ExplainOptions {
            window: span,
            tid: None,
            tsc_hz: tsc_hz(clock),
            base_ticks: base,
            worst: WORST,
        },
    );
    let ns = |t: u64| clock.raw_to_nanos(t).get();
    let gaps: u64 = threads.iter().map(|t| t.gaps.len() as u64).sum();
    let overflow: u64 = threads.iter().map(|t| t.overflow).sum();
    let data = ExplainData {
        threshold_ns: above.map_or(STALL_THRESHOLD.get(), |n| n.get()),
        threshold_rule: if above.is_some() {
            "--explain-above".into()
        } else {
            "stall".into()
        },
        baseline_ns: ns(base),
        samples: gaps,
        samples_not_recorded: overflow,
        stalls: gaps,
        stalls_not_recorded: overflow,
        stall_threshold_ns: STALL_THRESHOLD.get(),
        ..kernel_facts(got, kt.as_ref())
    };
    (a, data)
}

/// One line on how much of a run's explained tail lay outside the system under test:
/// `name: 12.3% of the tail's excess outside the kernel (hypervisor), 98.0% explained, 101
/// samples above p99 (incomplete: …)`. `None` for a result without attribution.
pub fn tail_line(name: &str, r: &latlab_core::results::ResultFile) -> Option<String> {
    let a = r.explain.as_ref()?;
    let share = |x: u64| {
        if a.excess_ns == 0 {
            0.0
        } else {
            x as f64 * 100.0 / a.excess_ns as f64
        }
    };
    let mut s = format!(
        "{name}: {:.1}% of the tail's excess outside the kernel (hypervisor), {:.1}% explained, {} samples above p99",
        share(a.class_time_ns("outside_kernel")),
        share(a.explained_ns),
        a.windows
    );
    if let Some(why) = &a.unavailable {
        s.push_str(&format!(" (kernel events unavailable: {why})"));
    } else if a.lost_events > 0 {
        s.push_str(&format!(" ({} kernel events lost: partial)", a.lost_events));
    }
    Some(s)
}

/// Puts an attribution and its data into a result: `explain`, `data.explain`, the
/// counters of what was lost, and a warning for each loss.
pub fn record(r: &mut latlab_core::results::ResultFile, a: Attribution, data: ExplainData) {
    r.counters
        .insert("explain_lost_events".into(), a.lost_events);
    r.counters.insert(
        "explain_samples_not_recorded".into(),
        data.samples_not_recorded,
    );
    r.counters.insert(
        "explain_stalls_not_recorded".into(),
        data.stalls_not_recorded,
    );
    r.warnings.extend(latlab_explain::render::lost_warning(
        &a,
        " (the ring buffer overran)",
    ));
    if data.samples_not_recorded > 0 {
        r.warnings.push(format!(
            "{} samples did not fit the explain log: they are not attributed",
            data.samples_not_recorded
        ));
    }
    r.warnings
        .extend(latlab_explain::render::unavailable_warning(
            &a,
            "only the threads' own stalls were recorded; every cause is unexplained",
        ));
    if let serde_json::Value::Object(m) = &mut r.data {
        m.insert(
            "explain".into(),
            serde_json::to_value(&data).expect("plain data serialises"),
        );
    }
    r.explain = Some(a);
}

/// The `--explain` lines of a net result: which samples, the explained share and the
/// share outside the kernel, what is missing, the top causes. Empty without attribution.
/// `stalls`: the windows are a busy loop's stalls (NF, delay engine), not probe samples.
pub fn summary(r: &latlab_core::results::ResultFile, stalls: bool) -> String {
    use latlab_core::text::ns;
    use latlab_explain::render;
    let Some(a) = &r.explain else {
        return String::new();
    };
    let d = r.data.get("explain");
    let num = |k: &str| {
        d.and_then(|d| d.get(k))
            .and_then(|v| v.as_u64())
            .unwrap_or(0)
    };
    let rule = d
        .and_then(|d| d.get("threshold_rule"))
        .and_then(|v| v.as_str())
        .unwrap_or("");
    // probes explain their slow samples, busy loops their stalls
    let (what, base) = if stalls {
        ("stalls", "one loop step")
    } else {
        ("samples", "the median")
    };
    let mut out = format!(
        "explain: {} {what} above {} ({rule}), excess over {base} ({}): {}\n",
        a.windows,
        ns(num("threshold_ns")),
        ns(num("baseline_ns")),
        render::explained_line(a)
    );
    for line in render::completeness(a) {
        out.push_str(&format!("  {line}\n"));
    }
    for c in a.causes.iter().take(5) {
        let [label, count, total, share] = render::cause_row(c, a.excess_ns);
        out.push_str(&format!("  {label}: {total} ({share}) in {count} {what}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_blocking_ping_pong_drops_idle_switches() {
        let w = probe_idle_switches(true, true).expect("blocking ping-pong");
        assert_eq!(w, latlab_threads());
        assert_eq!(
            probe_idle_switches(true, false),
            None,
            "busy: stalls are timed"
        );
        assert_eq!(
            probe_idle_switches(false, true),
            None,
            "open loop: the TX spin's stalls"
        );
    }

    #[test]
    fn the_default_threshold_is_the_p99_and_the_baseline_the_median() {
        // 200 samples of length 1..=200, given out of order
        let samples: Vec<(u64, u64)> = (1..=200u64)
            .rev()
            .map(|i| (i * 1000, i * 1000 + i))
            .collect();
        let s = select(&samples, None);
        assert_eq!(s.rule, "p99");
        assert_eq!(s.threshold, 198, "rank ceil(0.99·200) = 198");
        assert_eq!(s.base, 100);
        assert_eq!(s.windows, vec![(200_000, 200_200), (199_000, 199_199)]);
        let s = select(&samples, Some(150));
        assert_eq!(s.rule, "--explain-above");
        assert_eq!(s.windows.len(), 50);
        assert!(s.windows.iter().all(|(a, b)| b - a > 150));
        let e = select(&[], None);
        assert!(e.windows.is_empty());
        assert_eq!((e.threshold, e.base), (0, 0));
        // one sample: it is its own p99, nothing lies above it
        assert!(select(&[(5, 9)], None).windows.is_empty());
    }

    #[test]
    fn the_clean_p99_leaves_out_the_stalled_samples() {
        let samples: Vec<(u64, u64)> = (1..=200u64).map(|i| (i * 1000, i * 1000 + i)).collect();
        assert_eq!(clean_p99(&samples, &[]), 198);
        // the three longest had a guest stall: 197 samples left, rank ceil(0.99·197) = 196
        let stalled = [(200_000, 200_200), (199_000, 199_199), (198_000, 198_198)];
        assert_eq!(clean_p99(&samples, &stalled), 196);
        assert_eq!(clean_p99(&[], &[]), 0);
    }

    #[test]
    fn the_sample_log_never_grows_and_counts_what_did_not_fit() {
        let mut l = SampleLog::new(2);
        let p = l.samples.as_ptr();
        for i in 0..5 {
            l.push(i, i + 1);
        }
        assert_eq!(l.samples(), &[(0, 1), (1, 2)]);
        assert_eq!(l.overflow(), 3);
        assert_eq!(l.samples.as_ptr(), p);
        let mut off = SampleLog::new(0);
        off.push(1, 2);
        assert_eq!((off.samples().len(), off.overflow()), (0, 0));
    }

    #[test]
    fn an_unpinned_threads_stalls_count_on_every_cpu() {
        let g = [Gap { start: 10, end: 20 }];
        assert_eq!(stalls_of(&g, Some(1), &[0, 1]).len(), 1);
        let all = stalls_of(&g, None, &[0, 1]);
        assert_eq!(all.iter().map(|s| s.cpu).collect::<Vec<_>>(), [0, 1]);
        let off = stall_recorder(&Clock::monotonic(), false);
        assert_eq!(off.threshold(), u64::MAX);
    }
}
