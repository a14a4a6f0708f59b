//! Result files of the injector and the pure functions that read them back.
//!
//! - kind [`RUN_KIND`] (`net.delay`): one appliance run. Histograms per direction
//!   (`a_to_b.excess`, `a_to_b.lateness`, `a_to_b.added`, same for `b_to_a`), counters
//!   (`a_to_b.enqueued`, `.forwarded`, `.dropped_full`, `.dropped_oversize`,
//!   `.send_failures`, `.kernel_rx_drops`, `.max_depth`, `left_in_queue`), data
//!   [`RunData`].
//! - kind [`CHECK_KIND`] (`net.delay.check`): the testbed verification. Histograms `direct`,
//!   `zero`, `delayed`, optionally `netem` (round trips, ns), and `engine.excess` (the
//!   element's own latency at 0 µs); data [`CheckData`], derived by [`check_summary`].

use super::engine::EngineReport;
use super::testbed::CheckOutcome;
use latlab_core::hist::LatencyHistogram;
use latlab_core::parse::Percentile;
use latlab_core::results::{ResultFile, StoredHistogram};
use serde::{Deserialize, Serialize};

/// Kind of an appliance run.
pub const RUN_KIND: &str = "net.delay";
/// Kind of a testbed check.
pub const CHECK_KIND: &str = "net.delay.check";

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
    /// The delay checked, ns.
    pub delay_ns: u64,
    /// Round trips sent / lost per configuration.
    pub sent_lost: Vec<(String, u64, u64)>,
    /// Summary computed from the histograms when the result was written.
    pub summary: CheckSummary,
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
}

fn pct(h: &LatencyHistogram, i: usize) -> i64 {
    h.value_at(Percentile::LADDER[i]) as i64
}

/// The summary of a check from its histograms.
pub fn summarize_check(
    direct: &LatencyHistogram,
    zero: &LatencyHistogram,
    delayed: &LatencyHistogram,
    netem: Option<&LatencyHistogram>,
    engine_excess: &LatencyHistogram,
) -> CheckSummary {
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
    }
}

/// Fills a check's histograms and data.
///
/// # Errors
/// When histograms cannot be merged (different configurations).
pub fn fill_check(
    r: &mut ResultFile,
    c: &CheckOutcome,
    delay_ns: u64,
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
        ("direct", &c.direct),
        ("zero", &c.zero),
        ("delayed", &c.delayed),
    ];
    if let Some(n) = &c.netem {
        hists.push(("netem", n));
    }
    for (name, o) in &hists {
        r.histograms
            .push(StoredHistogram::new(*name, &o.rtt).with_label("measures", "UDP round trip"));
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
    let summary = summarize_check(
        &c.direct.rtt,
        &c.zero.rtt,
        &c.delayed.rtt,
        c.netem.as_ref().map(|n| &n.rtt),
        &excess,
    );
    r.data = serde_json::to_value(CheckData {
        delay_ns,
        sent_lost,
        summary,
    })
    .expect("plain data serialises");
    Ok(())
}

/// Recomputes the summary of a saved check from its histograms.
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
    let get = |n: &str| -> Result<LatencyHistogram, String> {
        r.histogram(n)
            .ok_or_else(|| format!("histogram '{n}' missing"))?
            .map_err(|e| e.to_string())
    };
    let netem = match r.histogram("netem") {
        Some(h) => Some(h.map_err(|e| e.to_string())?),
        None => None,
    };
    Ok(summarize_check(
        &get("direct")?,
        &get("zero")?,
        &get("delayed")?,
        netem.as_ref(),
        &get("engine.excess")?,
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
        );
        assert!((s.median_shift_ns - 20_000).abs() < 100, "{s:?}");
        assert!((s.base_latency_ns - 10_000).abs() < 100);
        assert!((s.netem_median_shift_ns.unwrap() - 25_000).abs() < 100);
        assert!((s.engine_excess_p50_ns as i64 - 900).abs() < 5);
    }
}
