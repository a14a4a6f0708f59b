//! Result files of the injector and the pure functions that read them back.
//!
//! - kind [`RUN_KIND`] (`net.delay`): one appliance run. Histograms per direction
//!   (`a_to_b.excess`, `a_to_b.lateness`, `a_to_b.added`, same for `b_to_a`), counters
//!   (`a_to_b.enqueued`, `.forwarded`, `.dropped_full`, `.dropped_oversize`,
//!   `.send_failures`, `.kernel_rx_drops`, `.max_depth`, `left_in_queue`), data
//!   [`RunData`].
//! - kind [`CHECK_KIND`] (`net.delay.check`): the testbed verification. Histograms `direct`,
//!   `zero`, `delayed`, optionally `netem` and `also.<ns>` (round trips, ns), and
//!   `engine.excess` (the element's own latency at 0 µs); data [`CheckData`], derived by
//!   [`check_summary`]; with a distribution, the self-check [`DISTRIBUTION_CHECK`].

use super::dist::{self, DistributionCheck, Sample};
use super::engine::EngineReport;
use super::testbed::CheckOutcome;
use super::DelaySpec;
use latlab_core::hist::LatencyHistogram;
use latlab_core::parse::Percentile;
use latlab_core::results::{ResultFile, StoredHistogram};
use latlab_core::selfcheck::{Outcome, PassWhen, Verdict};
use latlab_core::units::format_ns;
use serde::{Deserialize, Serialize};

/// Kind of an appliance run.
pub const RUN_KIND: &str = "net.delay";
/// Kind of a testbed check.
pub const CHECK_KIND: &str = "net.delay.check";
/// Name of the self-check of a distribution's shape (`self_checks`).
pub const DISTRIBUTION_CHECK: &str = "injector_distribution";

/// Per-direction facts of a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DirectionData {
    /// `a_to_b` or `b_to_a`.
    pub name: String,
    /// Queue counters.
    pub queue: super::QueueStats,
    /// Frames the kernel refused to send.
    pub send_failures: u64,
    /// Frames the kernel dropped before the element saw them (socket buffer full).
    pub kernel_rx_drops: u64,
    /// Median of the element's own latency beyond the delay (send done − release), ns.
    pub base_latency_p50_ns: u64,
}

/// The `data` of a `net.delay` result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunData {
    /// Both directions.
    pub directions: Vec<DirectionData>,
    /// Poll iterations.
    pub polls: u64,
    /// Frames still queued at the end (not sent, counted).
    pub left_in_queue: u64,
}

/// Fills a run's histograms, counters, warnings and data.
pub fn fill_run(r: &mut ResultFile, rep: &EngineReport) {
    let p50 = Percentile::LADDER[0];
    let mut dirs = Vec::new();
    for d in &rep.directions {
        for (what, h) in [
            ("excess", &d.excess),
            ("lateness", &d.lateness),
            ("added", &d.added),
        ] {
            r.histograms.push(
                StoredHistogram::new(format!("{}.{what}", d.name), h)
                    .with_label("direction", d.name)
                    .with_label("measures", what),
            );
        }
        let c = &mut r.counters;
        c.insert(format!("{}.enqueued", d.name), d.queue.enqueued);
        c.insert(
            format!("{}.forwarded", d.name),
            d.queue.dequeued - d.send_failures,
        );
        c.insert(format!("{}.dropped_full", d.name), d.queue.dropped_full);
        c.insert(
            format!("{}.dropped_oversize", d.name),
            d.queue.dropped_oversize,
        );
        c.insert(format!("{}.send_failures", d.name), d.send_failures);
        c.insert(format!("{}.kernel_rx_drops", d.name), d.kernel_rx.drops);
        c.insert(format!("{}.max_depth", d.name), d.queue.max_depth);
        let lost = d.lost();
        if lost > 0 {
            r.warnings.push(format!(
                "{}: {lost} frames lost: {} queue full (delay x rate exceeded the queue), {} oversize, {} refused by the kernel on send, {} dropped by the kernel before the element",
                d.name, d.queue.dropped_full, d.queue.dropped_oversize, d.send_failures, d.kernel_rx.drops
            ));
        }
        dirs.push(DirectionData {
            name: d.name.to_string(),
            queue: d.queue,
            send_failures: d.send_failures,
            kernel_rx_drops: d.kernel_rx.drops,
            base_latency_p50_ns: if d.excess.is_empty() {
                0
            } else {
                d.excess.value_at(p50)
            },
        });
    }
    r.counters.insert("left_in_queue".into(), rep.left_in_queue);
    if rep.left_in_queue > 0 {
        r.warnings.push(format!(
            "{} frames were still queued when the run ended and were not sent",
            rep.left_in_queue
        ));
    }
    r.data = serde_json::to_value(RunData {
        directions: dirs,
        polls: rep.polls,
        left_in_queue: rep.left_in_queue,
    })
    .expect("plain data serialises");
}

/// The `data` of a `net.delay.check` result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CheckData {
    /// The delay checked, ns (a distribution's mean).
    pub delay_ns: u64,
    /// The delay checked (absent in older files: the constant `delay_ns`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay: Option<DelaySpec>,
    /// Round trips sent / lost per configuration.
    pub sent_lost: Vec<(String, u64, u64)>,
    /// Summary computed from the histograms when the result was written.
    pub summary: CheckSummary,
}

impl CheckData {
    /// The delay checked.
    pub fn spec(&self) -> DelaySpec {
        self.delay
            .unwrap_or(DelaySpec::Constant { ns: self.delay_ns })
    }
}

/// The shift a constant delay measured besides the checked one
/// ([`super::testbed::CheckConfig::also_ns`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShiftAt {
    /// The added delay, ns.
    pub delay_ns: u64,
    /// Median round trip at it − at 0 µs, ns.
    pub median_shift_ns: i64,
    /// Same at p99.
    pub p99_shift_ns: i64,
}

/// The verdict of a check, from the round-trip histograms.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CheckSummary {
    /// Median round trip through the element at D − at 0 µs, ns.
    pub median_shift_ns: i64,
    /// Same at p99.
    pub p99_shift_ns: i64,
    /// Median round trip through the element at 0 µs − over the direct link: the element's
    /// base latency as a round trip sees it, ns.
    pub base_latency_ns: i64,
    /// The element's own median latency beyond the delay (user-space part), ns.
    pub engine_excess_p50_ns: u64,
    /// netem's median shift against the direct link, ns, when compared.
    pub netem_median_shift_ns: Option<i64>,
    /// netem's p99 shift against the direct link, ns, when compared.
    pub netem_p99_shift_ns: Option<i64>,
    /// With a distribution (not a constant): the delayed round trips against the 0 µs
    /// ones convolved with it ([`super::dist`]). Absent in older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distribution: Option<DistributionCheck>,
    /// The shifts at the extra constant delays, in increasing delay. Absent in older
    /// files.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shifts: Vec<ShiftAt>,
}

impl CheckSummary {
    /// The measured median shift at `delay_ns`: the checked delay's (when `checked_ns`
    /// is it) or an extra one's.
    pub fn median_shift_at(&self, checked_ns: u64, delay_ns: u64) -> Option<i64> {
        if delay_ns == checked_ns {
            return Some(self.median_shift_ns);
        }
        self.shifts
            .iter()
            .find(|s| s.delay_ns == delay_ns)
            .map(|s| s.median_shift_ns)
    }
}

fn pct(h: &LatencyHistogram, i: usize) -> i64 {
    h.value_at(Percentile::LADDER[i]) as i64
}

/// The summary of a check from its histograms: shifts, base latency, and with a
/// distribution `spec` its shape check; `also` are the extra delays' histograms.
pub fn summarize_check(
    direct: &LatencyHistogram,
    zero: &LatencyHistogram,
    delayed: &LatencyHistogram,
    netem: Option<&LatencyHistogram>,
    engine_excess: &LatencyHistogram,
    spec: &DelaySpec,
    also: &[(u64, &LatencyHistogram)],
) -> CheckSummary {
    let mut shifts: Vec<ShiftAt> = also
        .iter()
        .map(|(d, h)| ShiftAt {
            delay_ns: *d,
            median_shift_ns: pct(h, 0) - pct(zero, 0),
            p99_shift_ns: pct(h, 2) - pct(zero, 2),
        })
        .collect();
    shifts.sort_by_key(|s| s.delay_ns);
    CheckSummary {
        median_shift_ns: pct(delayed, 0) - pct(zero, 0),
        p99_shift_ns: pct(delayed, 2) - pct(zero, 2),
        base_latency_ns: pct(zero, 0) - pct(direct, 0),
        engine_excess_p50_ns: if engine_excess.is_empty() {
            0
        } else {
            engine_excess.value_at(Percentile::LADDER[0])
        },
        netem_median_shift_ns: netem.map(|n| pct(n, 0) - pct(direct, 0)),
        netem_p99_shift_ns: netem.map(|n| pct(n, 2) - pct(direct, 2)),
        distribution: (!matches!(spec, DelaySpec::Constant { .. })).then(|| {
            dist::check_distribution(
                &Sample::from_hist(zero),
                &Sample::from_hist(delayed),
                *spec,
                dist::KS_ALPHA,
                dist::SLACK_NS,
            )
        }),
        shifts,
    }
}

/// The self-check of a distribution's shape, as the result's `self_checks` holds it.
pub fn distribution_verdict(c: &DistributionCheck) -> Verdict {
    let q = |name: &str| {
        c.quantiles
            .iter()
            .find(|q| q.name == name)
            .map(|q| {
                format!(
                    "{name} {} measured, {} expected",
                    format_ns(q.measured_ns as f64),
                    format_ns(q.expected_ns as f64)
                )
            })
            .unwrap_or_default()
    };
    Verdict {
        check: DISTRIBUTION_CHECK.into(),
        statistic: format!(
            "Kolmogorov-Smirnov distance to the 0 us round trips convolved with {} (shifts up to {} forgiven)",
            c.spec,
            format_ns(c.slack_ns as f64)
        ),
        value: Some(c.ks_distance),
        threshold: c.bound,
        pass_when: PassWhen::AtMost,
        outcome: if c.measured == 0 || c.base == 0 {
            Outcome::Inconclusive
        } else if c.passed {
            Outcome::Pass
        } else {
            Outcome::Fail
        },
        detail: format!(
            "{} delayed and {} 0 us round trips, bound at significance {}; {}, {}, {}, {}{}",
            c.measured,
            c.base,
            c.alpha,
            q("p10"),
            q("p50"),
            q("p90"),
            q("p99"),
            if c.passed {
                ""
            } else {
                ": the delays the round trips gained do not follow the asked distribution"
            }
        ),
    }
}

/// Fills a check's histograms and data (and with a distribution, its self-check).
///
/// # Errors
/// When histograms cannot be merged (different configurations).
pub fn fill_check(
    r: &mut ResultFile,
    c: &CheckOutcome,
    spec: &DelaySpec,
) -> Result<(), latlab_core::hist::HistError> {
    let mut excess: Option<LatencyHistogram> = None;
    for rep in &c.engine_zero {
        let h = &rep.directions[0].excess;
        match &mut excess {
            None => excess = Some(h.clone()),
            Some(a) => a.merge(h)?,
        }
    }
    let excess = excess.unwrap_or_else(|| c.zero.rtt.clone());
    let mut sent_lost = Vec::new();
    let mut hists = vec![
        ("direct".to_string(), &c.direct),
        ("zero".to_string(), &c.zero),
        ("delayed".to_string(), &c.delayed),
    ];
    if let Some(n) = &c.netem {
        hists.push(("netem".to_string(), n));
    }
    for (d, o) in &c.also {
        hists.push((format!("also.{d}"), o));
    }
    for (name, o) in &hists {
        r.histograms
            .push(StoredHistogram::new(name, &o.rtt).with_label("measures", "UDP round trip"));
        sent_lost.push((name.to_string(), o.sent, o.lost));
        r.counters.insert(format!("{name}.sent"), o.sent);
        r.counters.insert(format!("{name}.lost"), o.lost);
        if o.lost > 0 {
            r.warnings
                .push(format!("{name}: {} of {} round trips lost", o.lost, o.sent));
        }
    }
    r.histograms.push(
        StoredHistogram::new("engine.excess", &excess)
            .with_label("measures", "send done - release, client to server, 0 us"),
    );
    for reps in [&c.engine_zero, &c.engine_delayed] {
        for rep in reps.iter() {
            for d in &rep.directions {
                let lost = d.lost();
                if lost > 0 {
                    r.warnings
                        .push(format!("engine {}: {lost} frames lost", d.name));
                }
            }
        }
    }
    let also: Vec<(u64, &LatencyHistogram)> = c.also.iter().map(|(d, o)| (*d, &o.rtt)).collect();
    let summary = summarize_check(
        &c.direct.rtt,
        &c.zero.rtt,
        &c.delayed.rtt,
        c.netem.as_ref().map(|n| &n.rtt),
        &excess,
        spec,
        &also,
    );
    if let Some(d) = &summary.distribution {
        r.self_checks.push(distribution_verdict(d));
    }
    r.data = serde_json::to_value(CheckData {
        delay_ns: spec.mean_ns(),
        delay: Some(*spec),
        sent_lost,
        summary,
    })
    .expect("plain data serialises");
    Ok(())
}

/// Recomputes the summary of a saved check from its histograms (the checked delay from its
/// data: `delay`, else the constant `delay_ns`).
///
/// # Errors
/// A message when the result is not a check or a histogram is missing.
pub fn check_summary(r: &ResultFile) -> Result<CheckSummary, String> {
    if r.kind != CHECK_KIND {
        return Err(format!(
            "result kind is '{}', expected '{CHECK_KIND}'",
            r.kind
        ));
    }
    summary_of(r, &stored_spec(r))
}

/// The delay a stored check verified: `data.delay`, else the constant `data.delay_ns`
/// (0 when neither is there).
pub fn stored_spec(r: &ResultFile) -> DelaySpec {
    r.data
        .get("delay")
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or(DelaySpec::Constant {
            ns: r.data.get("delay_ns").and_then(|v| v.as_u64()).unwrap_or(0),
        })
}

/// The summary of the check histograms stored in `r` (a `net.delay.check` result, or
/// another that holds a check's histograms), for the checked delay `spec`.
///
/// # Errors
/// A message naming a missing or unreadable histogram.
pub fn summary_of(r: &ResultFile, spec: &DelaySpec) -> Result<CheckSummary, String> {
    let get = |n: &str| -> Result<LatencyHistogram, String> {
        r.histogram(n)
            .ok_or_else(|| format!("histogram '{n}' missing"))?
            .map_err(|e| e.to_string())
    };
    let netem = match r.histogram("netem") {
        Some(h) => Some(h.map_err(|e| e.to_string())?),
        None => None,
    };
    let mut also = Vec::new();
    for h in &r.histograms {
        if let Some(d) = h
            .name
            .strip_prefix("also.")
            .and_then(|d| d.parse::<u64>().ok())
        {
            also.push((d, get(&h.name)?));
        }
    }
    let also_refs: Vec<(u64, &LatencyHistogram)> = also.iter().map(|(d, h)| (*d, h)).collect();
    Ok(summarize_check(
        &get("direct")?,
        &get("zero")?,
        &get("delayed")?,
        netem.as_ref(),
        &get("engine.excess")?,
        spec,
        &also_refs,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use latlab_core::hist::HistConfig;
    use latlab_core::units::Nanos;

    fn h(v: u64, n: u64) -> LatencyHistogram {
        let mut h = LatencyHistogram::new(HistConfig::default()).unwrap();
        h.record_n(Nanos(v), n);
        h
    }

    #[test]
    fn summary_subtracts_the_right_histograms() {
        let s = summarize_check(
            &h(30_000, 100),
            &h(40_000, 100),
            &h(60_000, 100),
            Some(&h(55_000, 100)),
            &h(900, 10),
            &DelaySpec::Constant { ns: 20_000 },
            &[(200_000, &h(240_000, 100))],
        );
        assert!((s.median_shift_ns - 20_000).abs() < 100, "{s:?}");
        assert!((s.base_latency_ns - 10_000).abs() < 100);
        assert!((s.netem_median_shift_ns.unwrap() - 25_000).abs() < 100);
        assert!((s.engine_excess_p50_ns as i64 - 900).abs() < 5);
        assert_eq!(s.distribution, None, "a constant is judged by its shifts");
        assert_eq!(s.shifts.len(), 1);
        assert!((s.shifts[0].median_shift_ns - 200_000).abs() < 300, "{s:?}");
        assert_eq!(s.median_shift_at(20_000, 20_000), Some(s.median_shift_ns));
        assert_eq!(
            s.median_shift_at(20_000, 200_000),
            Some(s.shifts[0].median_shift_ns)
        );
        assert_eq!(s.median_shift_at(20_000, 5_000), None);
    }
}
