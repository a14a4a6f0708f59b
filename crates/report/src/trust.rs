//! Warnings that matter for trusting a result, computed from the result file alone:
//! unsupported percentiles, values clamped at the histogram's range, lost or dropped samples,
//! generator lateness, the timebase (no invariant TSC, calibration error), unpinned or
//! migrating threads, virtual machines, frequency scaling and unlocked memory, the run's
//! self-checks (a failed one is serious), plus the warnings the measurement itself recorded.
//!
//! [`assess`] lists every finding of one input with the series or run it is about;
//! [`findings`] groups the findings of many inputs so that each distinct one appears once,
//! with everything it applies to and what to do about it — the report's trust box.

use latlab_core::doc::Input;
use latlab_core::doc::{Severity, Warning};
use latlab_core::parse::Percentile;
use latlab_core::results::ResultFile;
use latlab_core::stats::{highest_supported, is_supported};

/// Counter-name fragments that mean something was lost: any such counter above zero is a
/// serious warning (except the [`RATIO_COUNTERS`], judged by their share).
pub const LOSS_COUNTERS: [&str; 14] = [
    "lost",
    "drop",
    "overrun",
    "malformed",
    "missed",
    "miss",
    "duplicate",
    "full",
    "truncated",
    "error",
    "late",
    "timed_out",
    "unanswered",
    "unsent",
];

/// Counters whose names read as losses but that count something else in results of one
/// kind, as `(kind, counter)`: a `net.load` request counted `late` waited for a free
/// connection and is still measured from its scheduled send (the run's own warning says
/// how many), and its `misses` are memcached gets answered with no value.
pub const NOT_LOSSES: [(&str, &str); 2] = [("net.load", "late"), ("net.load", "misses")];

/// Counters judged by their share of another counter: `(counter, of, serious above this
/// share)`. A generator that leaves a few probes more than one mean gap late lost its CPU
/// for a moment (a hypervisor's steal time, an interrupt); only when more than 1 % are
/// late did the offered load stop being the configured one — the same rule as the probe's
/// own "GENERATOR FELL BEHIND" verdict.
pub const RATIO_COUNTERS: [(&str, &str, f64); 1] = [("late_over_mean_gap", "sent", 0.01)];

/// TSC calibration error above which the rate is called into question, in ppm.
pub const CALIBRATION_PPM_LIMIT: f64 = 50.0;

/// One finding about one input: how much it matters, what it is about (the input, or one
/// of its series), what is wrong and what to do about it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// How much it matters.
    pub severity: Severity,
    /// What is wrong, in one sentence that names no series (so that equal findings about
    /// several series read the same).
    pub text: String,
    /// What it applies to: `input` or `input: series`, one per series or run.
    pub subjects: Vec<String>,
    /// What a reader can do about it (empty when the text says it already).
    pub advice: String,
}

impl Finding {
    /// The finding as a report warning: "N series" (or the one subject) as its source, the
    /// text with what it applies to and what to do.
    pub fn to_warning(&self) -> Warning {
        let n = self.subjects.len();
        let source = if n == 1 {
            self.subjects[0].clone()
        } else {
            let what = if self.subjects.iter().all(|s| s.contains(": ")) {
                "series"
            } else {
                "inputs"
            };
            format!("{n} {what}")
        };
        let mut text = self.text.clone();
        if n > 1 {
            const SHOWN: usize = 4;
            let short: Vec<&str> = self
                .subjects
                .iter()
                .take(SHOWN)
                .map(|s| s.rsplit(": ").next().unwrap_or(s))
                .collect();
            let more = if n > SHOWN {
                format!(" and {} more", n - SHOWN)
            } else {
                String::new()
            };
            text.push_str(&format!(" ({}{more})", short.join(", ")));
        }
        if !self.advice.is_empty() {
            text.push_str(&format!(". What to do: {}", self.advice));
        }
        Warning {
            severity: self.severity,
            source,
            text,
        }
    }
}

/// Every finding about every input, each distinct one (same severity, text and advice)
/// once with all the subjects it applies to, most serious first, then in the order first
/// found.
pub fn findings(inputs: &[Input]) -> Vec<Finding> {
    let mut out: Vec<Finding> = Vec::new();
    for f in inputs.iter().flat_map(assess_findings) {
        match out
            .iter_mut()
            .find(|g| g.severity == f.severity && g.text == f.text && g.advice == f.advice)
        {
            Some(g) => {
                for s in f.subjects {
                    if !g.subjects.contains(&s) {
                        g.subjects.push(s);
                    }
                }
            }
            None => out.push(f),
        }
    }
    out.sort_by_key(|f| std::cmp::Reverse(f.severity));
    out
}

/// How many findings of each severity: `(serious, caution, info)`.
pub fn counts(findings: &[Finding]) -> (usize, usize, usize) {
    let n = |s: Severity| findings.iter().filter(|f| f.severity == s).count();
    (
        n(Severity::Serious),
        n(Severity::Caution),
        n(Severity::Info),
    )
}

/// Every warning about `input`, most serious first (one per finding and subject).
pub fn assess(input: &Input) -> Vec<Warning> {
    assess_findings(input)
        .iter()
        .map(Finding::to_warning)
        .collect()
}

/// Every finding about `input`, one subject each, most serious first.
pub fn assess_findings(input: &Input) -> Vec<Finding> {
    let mut out = Vec::new();
    let r = &input.merged;
    let label = input.label.clone();
    let mut warn = |severity: Severity, series: Option<&str>, text: String, advice: &str| {
        out.push(Finding {
            severity,
            text,
            subjects: vec![match series {
                Some(s) => format!("{label}: {s}"),
                None => label.clone(),
            }],
            advice: advice.to_string(),
        });
    };
    for w in &r.warnings {
        warn(
            Severity::Caution,
            None,
            format!("recorded by the run: {w}"),
            "",
        );
    }
    self_check_warnings(r, &mut warn);
    counter_warnings(r, &mut warn);
    histogram_warnings(r, &mut warn);
    timebase_warnings(r, &mut warn);
    placement_warnings(r, &mut warn);
    idle_warnings(r, &mut warn);
    out.sort_by_key(|w| std::cmp::Reverse(w.severity));
    out
}

/// The signature of the closure the checks report through: severity, the series it is
/// about (`None`: the whole input), the text, what to do.
trait Warn: FnMut(Severity, Option<&str>, String, &str) {}
impl<T: FnMut(Severity, Option<&str>, String, &str)> Warn for T {}

/// The run's self-checks: each failed one is serious (the run does not count for what it
/// guards), each undecided one a note; the passed ones are named in one note.
fn self_check_warnings(r: &ResultFile, warn: &mut impl Warn) {
    use latlab_core::selfcheck::Outcome;
    let mut passed = Vec::new();
    for v in &r.self_checks {
        match v.outcome {
            Outcome::Fail => warn(
                Severity::Serious,
                None,
                format!(
                    "self-check '{}' failed: {}; {}",
                    v.check,
                    v.rule(),
                    v.detail
                ),
                "treat the run's figures as not what was asked for; the detail says what to change",
            ),
            Outcome::Inconclusive => warn(
                Severity::Info,
                None,
                format!("self-check '{}' could not decide: {}", v.check, v.detail),
                "",
            ),
            Outcome::Pass => passed.push(v.check.as_str()),
        }
    }
    if !passed.is_empty() {
        warn(
            Severity::Info,
            None,
            format!("self-checks passed: {}", passed.join(", ")),
            "",
        );
    }
}

fn counter_warnings(r: &ResultFile, warn: &mut impl Warn) {
    for (name, value) in &r.counters {
        if *value == 0 {
            continue;
        }
        if let Some((_, of, limit)) = RATIO_COUNTERS.iter().find(|(c, _, _)| c == name) {
            let total = r.counters.get(*of).copied().unwrap_or(0);
            let share = if total > 0 {
                *value as f64 / total as f64
            } else {
                1.0
            };
            let text = format!(
                "counter '{name}' = {value} of {total} '{of}' ({:.2} %)",
                share * 100.0
            );
            if share > *limit {
                warn(
                    Severity::Serious,
                    None,
                    format!("{text}: more than {:.0} % late, so the offered load was not the configured one", limit * 100.0),
                    "lower the rate, or give the generator a CPU of its own",
                );
            } else {
                warn(
                    Severity::Info,
                    None,
                    format!("{text}: a few probes left late because the generator lost its CPU for a moment (below the {:.0} % that would change the offered load)", limit * 100.0),
                    "",
                );
            }
            continue;
        }
        // `lost` counts the warm-up too; `lost_measured` is what the histograms miss
        if r.counters.contains_key(&format!("{name}_measured")) {
            continue;
        }
        let lname = name.to_ascii_lowercase();
        // kernel events the explain recorder lost: the latencies are whole, only the
        // attribution of their tail is partial (and says so in its own section)
        if lname.contains("lost_events") {
            if r.warnings
                .iter()
                .any(|w| w.contains("kernel events were lost"))
            {
                continue; // the run's own warning says it, with the runs it concerns
            }
            warn(
                Severity::Caution,
                None,
                format!("counter '{name}' = {value}: kernel events were lost (the trace ring overran), so the attribution of the tail is partial; the latencies themselves are complete"),
                "for a whole attribution run shorter or at a lower rate, or give the recorder a larger ring (--buffer-kb where the command has it)",
            );
            continue;
        }
        if NOT_LOSSES.contains(&(r.kind.as_str(), name.as_str())) {
            continue;
        }
        if LOSS_COUNTERS.iter().any(|f| lname.contains(f)) {
            warn(
                Severity::Serious,
                None,
                format!("counter '{name}' = {value}: samples or events were lost, dropped or late"),
                "the histograms miss these samples; rerun at a lower rate or on a quieter host",
            );
        }
    }
}

fn histogram_warnings(r: &ResultFile, warn: &mut impl Warn) {
    let top = Percentile::LADDER[Percentile::LADDER.len() - 1];
    for h in &r.histograms {
        let name = Some(h.name.as_str());
        if h.saturated > 0 {
            warn(
                Severity::Serious,
                name,
                format!(
                    "{} values beyond the histogram's range ({} ns) were clamped to it",
                    h.saturated, h.config.highest_ns
                ),
                "rerun with a histogram range that covers the largest value",
            );
        }
        if h.name.to_ascii_lowercase().contains("lateness") {
            warn(
                Severity::Info,
                name,
                "generator lateness: latencies measured from the scheduled send time include it"
                    .into(),
                "",
            );
        }
        if h.count == 0 {
            warn(
                Severity::Serious,
                name,
                "holds no samples".into(),
                "check the run's own warnings: nothing was measured",
            );
        } else if !is_supported(top, h.count) {
            let (what, advice) = match highest_supported(h.count) {
                Some(p) => (
                    format!(
                        "percentiles above {p} are unsupported at fewer than {} samples",
                        thousands(latlab_core::stats::min_samples(next_after(p)))
                    ),
                    format!(
                        "run longer (or at a higher rate) for higher percentiles: a percentile needs 10 samples beyond it, so {} needs {} samples",
                        next_after(p),
                        thousands(latlab_core::stats::min_samples(next_after(p)))
                    ),
                ),
                None => (
                    format!("{} samples support no tail percentile", h.count),
                    "run longer: p50 needs at least 20 samples".to_string(),
                ),
            };
            warn(Severity::Info, name, what, &advice);
        }
    }
}

/// The percentile after `p` on [`Percentile::LADDER`] (or `p` itself at its top).
fn next_after(p: Percentile) -> Percentile {
    let l = &Percentile::LADDER;
    l.iter()
        .position(|q| *q == p)
        .and_then(|i| l.get(i + 1))
        .copied()
        .unwrap_or(p)
}

/// `n` with thousands separators (`100,000`).
fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn timebase_warnings(r: &ResultFile, warn: &mut impl Warn) {
    let p = &r.provenance;
    let tb = &p.timebase;
    if let Some(reason) = &tb.fallback_reason {
        warn(
            Severity::Serious,
            None,
            format!("timed with {} instead of the TSC: {reason}", tb.source),
            "run on a host with an invariant TSC for nanosecond timing",
        );
    }
    if tb.tsc.present && !tb.tsc.invariant {
        warn(
            Severity::Serious,
            None,
            "the TSC is not invariant (constant_tsc and nonstop_tsc): TSC intervals may not be time".into(),
            "run on a host whose TSC is invariant",
        );
    }
    if let Some(ppm) = tb.tsc.calibration_error_ppm {
        if ppm.abs() > CALIBRATION_PPM_LIMIT {
            warn(
                Severity::Caution,
                None,
                format!(
                    "TSC calibration error is {ppm:.1} ppm (above {CALIBRATION_PPM_LIMIT} ppm)"
                ),
                "rerun on a quieter host so the calibration settles",
            );
        }
    }
    if let Some(ppm) = tb.tsc.rate_disagreement_ppm {
        if ppm.abs() > CALIBRATION_PPM_LIMIT {
            warn(
                Severity::Caution,
                None,
                format!("the kernel's TSC rate and the calibrated one disagree by {ppm:.1} ppm"),
                "",
            );
        }
    }
    if let Some(cs) = &p.host.clocksource {
        if cs != "tsc" && !cs.is_empty() {
            warn(
                Severity::Caution,
                None,
                format!("the kernel clocksource is '{cs}', not tsc: clock_gettime is slower and coarser"),
                "",
            );
        }
    }
    if let Some(v) = &p.host.virtualization {
        warn(
            Severity::Caution,
            None,
            format!("ran in a virtual machine ({v}): hypervisor exits and steal time add latency bare metal does not have"),
            "compare configurations measured on this host with each other; measure on bare metal for absolute numbers",
        );
    }
    let scaling: Vec<&String> = p
        .host
        .governors
        .iter()
        .filter(|g| g.as_str() != "performance")
        .collect();
    if !scaling.is_empty() {
        let mut g: Vec<&str> = scaling.iter().map(|s| s.as_str()).collect();
        g.sort_unstable();
        g.dedup();
        warn(
            Severity::Caution,
            None,
            format!(
                "CPU frequency governor {} (not 'performance'): frequency changes add variance",
                g.join(", ")
            ),
            "set the governor to performance (cpupower frequency-set -g performance)",
        );
    }
}

fn placement_warnings(r: &ResultFile, warn: &mut impl Warn) {
    let p = &r.provenance;
    for t in &p.threads {
        match t.pinned_cpu {
            None => warn(
                Severity::Caution,
                None,
                format!(
                    "thread '{}' was not pinned to a CPU; it ran on CPUs {:?}",
                    t.role, t.observed_cpus
                ),
                "pin it to a CPU",
            ),
            Some(cpu) if t.observed_cpus.iter().any(|c| *c != cpu) => warn(
                Severity::Serious,
                None,
                format!(
                    "thread '{}' was pinned to CPU {cpu} but was seen on CPUs {:?}",
                    t.role, t.observed_cpus
                ),
                "check that nothing changes CPU affinities during the run (cgroups, a tuning daemon)",
            ),
            Some(_) => {}
        }
    }
    if !p.threads.is_empty() && !p.memory_locked {
        warn(
            Severity::Info,
            None,
            "memory was not locked (mlockall): page faults may appear in the tail".into(),
            "run as root, or raise the memlock limit (ulimit -l)",
        );
    }
}

/// The CPUs' idle policy: a caution when idle CPUs could enter states with an exit
/// latency (each wake-up from one adds to the latencies measured; on a VM that halts, tens
/// of µs), a note when latlab held the PM QoS target (the system ran with its idle policy
/// changed) or another process did.
fn idle_warnings(r: &ResultFile, warn: &mut impl Warn) {
    let Some(idle) = &r.provenance.idle else {
        return;
    };
    let driver = idle.driver.as_deref().unwrap_or("cpuidle");
    if let Some(us) = idle.held_us {
        warn(
            Severity::Info,
            None,
            format!(
                "latlab held /dev/cpu_dma_latency at {us} µs for the run (--dma-latency): idle \
                 CPUs entered only states that wake within {us} µs, not the system's own idle \
                 policy ({driver})"
            ),
            "compare with a run without --dma-latency to see what the idle policy costs",
        );
    } else if idle.halting_allowed() {
        let mut deep: Vec<String> = Vec::new();
        for s in idle.cpus.iter().flat_map(|c| &c.states) {
            let d = format!("'{}' {} µs", s.name, s.exit_latency_us);
            if s.exit_latency_us > 0 && !s.disabled && !deep.contains(&d) {
                deep.push(d);
            }
        }
        let halts = idle.total_halts();
        warn(
            Severity::Caution,
            None,
            format!(
                "idle CPUs could enter states with an exit latency ({driver}: {}) and did so \
                 {halts} times during the run: a wake-up from them adds to the latencies \
                 measured (tens of µs on a VM whose idle CPUs halt)",
                deep.join(", ")
            ),
            "--dma-latency 0 holds /dev/cpu_dma_latency at 0 for the run, so idle CPUs poll \
             instead; compare both (latlab host hold-idle does the same for other tools)",
        );
    } else if let Some(t) = idle.qos_target_us.filter(|t| *t < 2_000_000_000) {
        warn(
            Severity::Info,
            None,
            format!(
                "another process held the CPU latency target at {t} µs when the run started: \
                 the system's own idle policy ({driver}) was not in force"
            ),
            "",
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use latlab_core::hist::{HistConfig, LatencyHistogram};
    use latlab_core::results::{Provenance, StoredHistogram, ThreadPlacement};
    use latlab_core::units::Nanos;
    use std::path::PathBuf;

    fn input(r: ResultFile) -> Input {
        Input::single(PathBuf::from("run.json"), r)
    }

    fn base() -> ResultFile {
        let mut p = Provenance::default();
        p.host.governors = vec!["performance".into()];
        p.host.clocksource = Some("tsc".into());
        p.timebase.tsc.present = true;
        p.timebase.tsc.invariant = true;
        p.memory_locked = true;
        ResultFile::new("k", vec![], serde_json::Value::Null, p)
    }

    #[test]
    fn clean_result_with_enough_samples_has_no_warnings() {
        let mut r = base();
        let mut h = LatencyHistogram::new(HistConfig::default()).unwrap();
        h.record_n(Nanos(100), 20_000_000);
        r.histograms.push(StoredHistogram::new("lat", &h));
        r.counters.insert("lost".into(), 0);
        assert_eq!(assess(&input(r)), vec![]);
    }

    #[test]
    fn each_trust_problem_is_named() {
        let mut r = base();
        let mut h = LatencyHistogram::new(HistConfig::default()).unwrap();
        h.record_n(Nanos(100), 10_000);
        r.histograms.push(StoredHistogram::new("lat", &h));
        r.counters.insert("lost_probes".into(), 3);
        r.provenance.host.virtualization = Some("kvm".into());
        r.provenance.timebase.tsc.invariant = false;
        r.provenance.threads.push(ThreadPlacement {
            role: "rx".into(),
            pinned_cpu: None,
            observed_cpus: vec![0, 1],
            policy: "other".into(),
            priority: 0,
        });
        let w = assess(&input(r));
        let text: Vec<&str> = w.iter().map(|w| w.text.as_str()).collect();
        let has = |s: &str| text.iter().any(|t| t.contains(s));
        assert!(has("'lost_probes' = 3"), "{text:?}");
        assert!(
            has("percentiles above p99.9 are unsupported at fewer than 100,000 samples"),
            "{text:?}"
        );
        assert!(has("virtual machine (kvm)"), "{text:?}");
        assert!(has("not invariant"), "{text:?}");
        assert!(has("thread 'rx' was not pinned"), "{text:?}");
        // most serious first
        assert_eq!(w[0].severity, Severity::Serious);
        assert_eq!(w.last().unwrap().severity, Severity::Info);
    }

    #[test]
    fn a_failed_self_check_is_serious_and_names_its_statistic() {
        use latlab_core::selfcheck;
        let mut r = base();
        let mut h = LatencyHistogram::new(HistConfig::default()).unwrap();
        h.record_n(Nanos(100), 20_000_000);
        r.histograms.push(StoredHistogram::new("lat", &h));
        r.self_checks = vec![
            selfcheck::throughput(9_000.0, 10_000.0, "pps"),
            selfcheck::stationarity(&[1, 2, 3]),
            selfcheck::constant_arrivals(&[100.0; 60], 100.0),
        ];
        let w = assess(&input(r));
        let text: Vec<(Severity, &str)> = w.iter().map(|w| (w.severity, w.text.as_str())).collect();
        assert_eq!(text.len(), 3, "{text:?}");
        assert_eq!(text[0].0, Severity::Serious);
        assert!(
            text[0].1.starts_with("self-check 'throughput' failed: |achieved / target - 1| = 0.1000 (passes when <= 0.02000); achieved 9000 pps"),
            "{text:?}"
        );
        assert!(text.contains(&(
            Severity::Info,
            "self-check 'stationarity' could not decide: 3 intervals with samples; at least 6 are needed for the trend test to reach the 1 % level (a shorter --interval or a longer run)"
        )), "{text:?}");
        assert!(
            text.contains(&(Severity::Info, "self-checks passed: arrivals")),
            "{text:?}"
        );
    }

    /// The same finding about many series is one finding listing them, and it says what
    /// to do.
    #[test]
    fn equal_findings_are_grouped_with_their_subjects() {
        let mut r = base();
        let mut h = LatencyHistogram::new(HistConfig::default()).unwrap();
        h.record_n(Nanos(100), 100_000);
        for name in ["a", "b", "c", "d", "e"] {
            r.histograms.push(StoredHistogram::new(name, &h));
        }
        let mut few = LatencyHistogram::new(HistConfig::default()).unwrap();
        few.record_n(Nanos(100), 1_000);
        r.histograms.push(StoredHistogram::new("f", &few));
        let i = input(r);
        let f = findings(std::slice::from_ref(&i));
        assert_eq!(f.len(), 2, "{f:#?}");
        assert_eq!(
            f[0].text,
            "percentiles above p99.99 are unsupported at fewer than 1,000,000 samples"
        );
        assert_eq!(f[0].subjects.len(), 5);
        assert!(
            f[0].advice.contains("p99.999 needs 1,000,000 samples"),
            "{f:#?}"
        );
        let w = f[0].to_warning();
        assert_eq!(w.source, "5 series");
        assert!(w.text.contains("(a, b, c, d and 1 more)"), "{}", w.text);
        assert!(w.text.contains("What to do: run longer"), "{}", w.text);
        assert_eq!(f[1].subjects, vec!["run: f".to_string()]);
        assert_eq!(counts(&f), (0, 0, 2));
    }

    /// A late counter is serious only when its share exceeds the limit.
    #[test]
    fn a_late_counter_is_judged_by_its_share() {
        let judged = |late: u64| {
            let mut r = base();
            r.counters.insert("sent".into(), 100_000);
            r.counters.insert("late_over_mean_gap".into(), late);
            assess_findings(&input(r))
        };
        assert_eq!(judged(0), vec![]);
        let few = judged(50);
        assert_eq!(few.len(), 1);
        assert_eq!(few[0].severity, Severity::Info);
        assert!(few[0].text.contains("(0.05 %)"), "{}", few[0].text);
        let many = judged(5_000);
        assert_eq!(many[0].severity, Severity::Serious);
        assert!(many[0].advice.contains("lower the rate"));
    }

    /// Kernel events the explain recorder lost leave the latencies whole: a caution about
    /// the attribution, not a serious loss of samples.
    #[test]
    fn lost_kernel_events_are_a_caution_about_the_attribution() {
        let mut r = base();
        r.counters.insert("explain_lost_events".into(), 1_000);
        r.counters.insert("lost_measured".into(), 3);
        let f = assess_findings(&input(r));
        assert_eq!(f.len(), 2, "{f:#?}");
        let k = f.iter().find(|x| x.text.contains("kernel events")).unwrap();
        assert_eq!(k.severity, Severity::Caution);
        assert!(
            k.text.contains("attribution of the tail is partial"),
            "{}",
            k.text
        );
        let l = f.iter().find(|x| x.text.contains("lost_measured")).unwrap();
        assert_eq!(l.severity, Severity::Serious);
    }

    /// `lost` (warm-up included) is left out where `lost_measured` says what the
    /// histograms miss: one finding, not two.
    #[test]
    fn a_counter_with_a_measured_twin_is_reported_once() {
        let mut r = base();
        r.counters.insert("lost".into(), 7);
        r.counters.insert("lost_measured".into(), 5);
        let f = assess_findings(&input(r));
        assert_eq!(f.len(), 1, "{f:#?}");
        assert!(f[0].text.contains("'lost_measured' = 5"));
    }

    /// A `net.load` request that waited for a connection is late but measured, and a
    /// memcached miss is an answer: neither is a loss there. One never sent, or never
    /// answered, is; and `late` stays a loss in other kinds.
    #[test]
    fn net_load_late_and_misses_are_not_losses_but_unsent_and_unanswered_are() {
        let mut r = base();
        r.kind = "net.load".into();
        for (k, v) in [
            ("late", 55),
            ("misses", 9),
            ("unsent", 3),
            ("unanswered", 2),
            ("timed_out", 1),
        ] {
            r.counters.insert(k.into(), v);
        }
        let f = assess_findings(&input(r.clone()));
        let named = |c: &str| f.iter().any(|x| x.text.contains(&format!("'{c}'")));
        assert!(!named("late") && !named("misses"), "{f:#?}");
        for c in ["unsent", "unanswered", "timed_out"] {
            let x = f
                .iter()
                .find(|x| x.text.contains(&format!("'{c}'")))
                .unwrap();
            assert_eq!(x.severity, Severity::Serious, "{c}");
        }
        r.kind = "net.probe".into();
        let f = assess_findings(&input(r));
        assert!(f
            .iter()
            .any(|x| x.text.contains("'late' = 55") && x.severity == Severity::Serious));
    }

    fn haltpoll() -> latlab_core::results::IdleRecord {
        use latlab_core::results::{CpuIdle, CpuIdleEntries, IdleRecord, IdleState};
        let st = |name: &str, lat| IdleState {
            name: name.into(),
            exit_latency_us: lat,
            ..IdleState::default()
        };
        IdleRecord {
            driver: Some("haltpoll".into()),
            cpus: vec![CpuIdle {
                cpu: 0,
                states: vec![st("POLL", 0), st("haltpoll idle", 1)],
            }],
            qos_target_us: Some(2_000_000_000),
            entries: vec![CpuIdleEntries {
                cpu: 0,
                entries: vec![3, 152],
            }],
            ..IdleRecord::default()
        }
    }

    #[test]
    fn an_idle_policy_that_halts_is_a_caution_and_a_hold_a_note() {
        let idle_findings = |idle| {
            let mut r = base();
            r.provenance.idle = Some(idle);
            assess_findings(&input(r))
                .into_iter()
                .filter(|f| f.text.contains("µs") && f.text.contains("idle"))
                .collect::<Vec<_>>()
        };
        let free = idle_findings(haltpoll());
        assert_eq!(free.len(), 1, "{free:?}");
        assert_eq!(free[0].severity, Severity::Caution);
        assert!(
            free[0].text.contains("'haltpoll idle' 1 µs"),
            "{}",
            free[0].text
        );
        assert!(free[0].text.contains("152 times"), "{}", free[0].text);
        assert!(free[0].advice.contains("--dma-latency 0"));
        let held = idle_findings(latlab_core::results::IdleRecord {
            held_us: Some(0),
            ..haltpoll()
        });
        assert_eq!(held.len(), 1, "{held:?}");
        assert_eq!(held[0].severity, Severity::Info);
        assert!(held[0].text.contains("held /dev/cpu_dma_latency at 0 µs"));
        let other = idle_findings(latlab_core::results::IdleRecord {
            qos_target_us: Some(0),
            ..haltpoll()
        });
        assert_eq!(other.len(), 1, "{other:?}");
        assert_eq!(other[0].severity, Severity::Info);
        let mut polling = haltpoll();
        polling.cpus[0].states[1].disabled = true;
        assert!(idle_findings(polling).is_empty());
    }

    #[test]
    fn thousands_separates() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000), "1,000");
        assert_eq!(thousands(100_000), "100,000");
        assert_eq!(thousands(12_345_678), "12,345,678");
    }
}
