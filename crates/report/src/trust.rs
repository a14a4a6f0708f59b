//! Warnings that matter for trusting a result, computed from the result file alone:
//! unsupported percentiles, values clamped at the histogram's range, lost or dropped samples,
//! generator lateness, the timebase (no invariant TSC, calibration error), unpinned or
//! migrating threads, virtual machines, frequency scaling and unlocked memory, the run's
//! self-checks (a failed one is serious), plus the warnings the measurement itself recorded.

use latlab_core::doc::Input;
use latlab_core::doc::{Severity, Warning};
use latlab_core::parse::Percentile;
use latlab_core::results::ResultFile;
use latlab_core::stats::{highest_supported, is_supported};

/// Counter-name fragments that mean something was lost: any such counter above zero is a
/// serious warning.
pub const LOSS_COUNTERS: [&str; 11] = [
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
];

/// TSC calibration error above which the rate is called into question, in ppm.
pub const CALIBRATION_PPM_LIMIT: f64 = 50.0;

/// Every warning about `input`, most serious first.
pub fn assess(input: &Input) -> Vec<Warning> {
    let mut out = Vec::new();
    let r = &input.merged;
    let mut warn = |severity: Severity, text: String| {
        out.push(Warning {
            severity,
            source: input.label.clone(),
            text,
        });
    };
    for w in &r.warnings {
        warn(Severity::Caution, format!("recorded by the run: {w}"));
    }
    for (name, value) in &r.counters {
        let lname = name.to_ascii_lowercase();
        if *value > 0 && LOSS_COUNTERS.iter().any(|f| lname.contains(f)) {
            warn(
                Severity::Serious,
                format!("counter '{name}' = {value}: samples or events were lost, dropped or late"),
            );
        }
    }
    self_check_warnings(r, &mut warn);
    histogram_warnings(r, &mut warn);
    timebase_warnings(r, &mut warn);
    placement_warnings(r, &mut warn);
    out.sort_by_key(|w| std::cmp::Reverse(w.severity));
    out
}

/// The run's self-checks: each failed one is serious (the run does not count for what it
/// guards), each undecided one a note; the passed ones are named in one note.
fn self_check_warnings(r: &ResultFile, warn: &mut impl FnMut(Severity, String)) {
    use latlab_core::selfcheck::Outcome;
    let mut passed = Vec::new();
    for v in &r.self_checks {
        match v.outcome {
            Outcome::Fail => warn(
                Severity::Serious,
                format!(
                    "self-check '{}' failed: {}; {}",
                    v.check,
                    v.rule(),
                    v.detail
                ),
            ),
            Outcome::Inconclusive => warn(
                Severity::Info,
                format!("self-check '{}' could not decide: {}", v.check, v.detail),
            ),
            Outcome::Pass => passed.push(v.check.as_str()),
        }
    }
    if !passed.is_empty() {
        warn(
            Severity::Info,
            format!("self-checks passed: {}", passed.join(", ")),
        );
    }
}

fn histogram_warnings(r: &ResultFile, warn: &mut impl FnMut(Severity, String)) {
    let top = Percentile::LADDER[Percentile::LADDER.len() - 1];
    for h in &r.histograms {
        if h.saturated > 0 {
            warn(
                Severity::Serious,
                format!(
                    "'{}': {} values beyond the histogram's range ({} ns) were clamped to it",
                    h.name, h.saturated, h.config.highest_ns
                ),
            );
        }
        if h.name.to_ascii_lowercase().contains("lateness") {
            warn(
                Severity::Info,
                format!(
                    "'{}' is generator lateness: latencies measured from the scheduled send time include it",
                    h.name
                ),
            );
        }
        if h.count == 0 {
            warn(Severity::Serious, format!("'{}' holds no samples", h.name));
        } else if !is_supported(top, h.count) {
            let upto = highest_supported(h.count)
                .map(|p| format!("supports percentiles up to {p}"))
                .unwrap_or_else(|| "supports no tail percentile".to_string());
            warn(
                Severity::Info,
                format!(
                    "'{}': {} samples {upto}; higher percentiles are shown as unsupported (at least 10 samples must lie beyond a percentile)",
                    h.name, h.count
                ),
            );
        }
    }
}

fn timebase_warnings(r: &ResultFile, warn: &mut impl FnMut(Severity, String)) {
    let p = &r.provenance;
    let tb = &p.timebase;
    if let Some(reason) = &tb.fallback_reason {
        warn(
            Severity::Serious,
            format!("timed with {} instead of the TSC: {reason}", tb.source),
        );
    }
    if tb.tsc.present && !tb.tsc.invariant {
        warn(
            Severity::Serious,
            "the TSC is not invariant (constant_tsc and nonstop_tsc): TSC intervals may not be time".into(),
        );
    }
    if let Some(ppm) = tb.tsc.calibration_error_ppm {
        if ppm.abs() > CALIBRATION_PPM_LIMIT {
            warn(
                Severity::Caution,
                format!(
                    "TSC calibration error is {ppm:.1} ppm (above {CALIBRATION_PPM_LIMIT} ppm)"
                ),
            );
        }
    }
    if let Some(ppm) = tb.tsc.rate_disagreement_ppm {
        if ppm.abs() > CALIBRATION_PPM_LIMIT {
            warn(
                Severity::Caution,
                format!("the kernel's TSC rate and the calibrated one disagree by {ppm:.1} ppm"),
            );
        }
    }
    if let Some(cs) = &p.host.clocksource {
        if cs != "tsc" && !cs.is_empty() {
            warn(
                Severity::Caution,
                format!("the kernel clocksource is '{cs}', not tsc: clock_gettime is slower and coarser"),
            );
        }
    }
    if let Some(v) = &p.host.virtualization {
        warn(
            Severity::Caution,
            format!("ran in a virtual machine ({v}): hypervisor exits and steal time add latency bare metal does not have"),
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
            format!(
                "CPU frequency governor {} (not 'performance'): frequency changes add variance",
                g.join(", ")
            ),
        );
    }
}

fn placement_warnings(r: &ResultFile, warn: &mut impl FnMut(Severity, String)) {
    let p = &r.provenance;
    for t in &p.threads {
        match t.pinned_cpu {
            None => warn(
                Severity::Caution,
                format!(
                    "thread '{}' was not pinned to a CPU; it ran on CPUs {:?}",
                    t.role, t.observed_cpus
                ),
            ),
            Some(cpu) if t.observed_cpus.iter().any(|c| *c != cpu) => warn(
                Severity::Serious,
                format!(
                    "thread '{}' was pinned to CPU {cpu} but was seen on CPUs {:?}",
                    t.role, t.observed_cpus
                ),
            ),
            Some(_) => {}
        }
    }
    if !p.threads.is_empty() && !p.memory_locked {
        warn(
            Severity::Info,
            "memory was not locked (mlockall): page faults may appear in the tail".into(),
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
        assert!(has("supports percentiles up to p99.9;"), "{text:?}");
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
}
