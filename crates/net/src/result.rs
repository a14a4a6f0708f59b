//! Result files of `latlab net` and the pure functions that turn a loaded result into
//! the tables and series a report shows.
//!
//! Kinds: [`crate::probe::RESULT_KIND`] (`net.probe`, data [`ProbeData`]),
//! [`crate::nf::NF_RESULT_KIND`] (`net.nf`, data [`crate::nf::NfData`]),
//! [`crate::calibrate::RESULT_KIND`] (`net.calibrate`) and
//! [`crate::killer_us::RESULT_KIND`] (`net.killer_us`).

use crate::probe::{fell_behind, series, ProbeConfig, ProbeData, ProbeOutcome};
use latlab_core::hist::LatencyHistogram;
use latlab_core::parse::Percentile;
use latlab_core::results::{hlog, Provenance, ResultFile, StoredHistogram, ThreadPlacement};
use latlab_core::stats::{summarize, Summary, DEFAULT_CONFIDENCE};
use latlab_core::units::Nanos;
use std::time::Duration;

/// Thread placements of a probe run, for provenance.
pub fn probe_threads(o: &ProbeOutcome) -> Vec<ThreadPlacement> {
    vec![
        thread_placement("probe tx", o.tx.placement.clone()),
        thread_placement("probe rx", o.rx_placement.clone()),
    ]
}

/// The provenance entry of a net thread with `role`, pinned to `cpu` (or free) under
/// `policy` at `priority`. Net does not watch where its threads actually ran, so no CPU is
/// recorded as observed.
pub fn thread_placement(
    role: impl Into<String>,
    (cpu, policy, priority): (Option<u32>, String, i32),
) -> ThreadPlacement {
    ThreadPlacement {
        observed_cpus: Vec::new(),
        ..ThreadPlacement::pinned(role, cpu, policy, priority)
    }
}

/// Builds the `net.probe` result of a run (histograms, counters, data, warnings).
/// `nf` is the network function's configuration when the caller knows it.
pub fn probe_result(
    cfg: &ProbeConfig,
    o: &ProbeOutcome,
    argv: Vec<String>,
    provenance: Provenance,
    nf: Option<serde_json::Value>,
    duration: Nanos,
) -> ResultFile {
    let config = serde_json::to_value(cfg).unwrap_or(serde_json::Value::Null);
    let mut r = ResultFile::new(crate::probe::RESULT_KIND, argv, config, provenance);
    r.duration_ns = duration.get();
    for (name, h) in &o.histograms {
        r.histograms.push(StoredHistogram::new(name.clone(), h));
    }
    r.counters = o.counters();
    r.warnings.extend(o.warnings.iter().cloned());
    let c = &r.counters;
    let sent_measured = c["sent"] - c["sent_warmup"];
    let received_measured = c["received_unique"] - c["received_warmup"];
    let lost = c["lost_measured"];
    let mean_gap_ns = if cfg.milli_pps > 0 {
        1e12 / cfg.milli_pps as f64
    } else {
        0.0
    };
    let late = cfg.mode == crate::probe::Mode::OpenLoop
        && fell_behind(&o.tx.lateness, o.tx.counters.late_over_gap, mean_gap_ns);
    // a run that stopped at its deadline with probes unsent fell behind too, even when it
    // never reached its measured phase (no lateness recorded)
    let behind = late || o.tx.counters.unsent > 0;
    // the TX thread's own elapsed time: a generator that fell behind took longer than
    // planned, and its achieved rate says so
    let tx_elapsed = o.tx_elapsed_ns as f64;
    let elapsed_ns = if tx_elapsed > 0.0 {
        tx_elapsed * (cfg.duration.get() as f64 / (cfg.duration.get() + cfg.warmup.get()) as f64)
    } else {
        cfg.duration.get() as f64
    };
    let mut data = ProbeData {
        mode: match cfg.mode {
            crate::probe::Mode::OpenLoop => "open_loop".into(),
            crate::probe::Mode::Pingpong => "pingpong".into(),
        },
        sources: o
            .histograms
            .iter()
            .filter_map(|(n, h)| {
                if h.count() == 0 {
                    return None;
                }
                match n.as_str() {
                    series::USER_ACTUAL => Some("user".to_string()),
                    series::KERNEL => Some("kernel".to_string()),
                    series::HARDWARE => Some("hardware".to_string()),
                    _ => None,
                }
            })
            .collect(),
        sent: c["sent"],
        sent_warmup: c["sent_warmup"],
        sent_measured,
        received_measured,
        lost_measured: lost,
        // open loop: the measured sends over the time they took (see `checks`)
        achieved_pps: match o.checks.achieved_pps {
            Some(a) if cfg.mode == crate::probe::Mode::OpenLoop => a,
            _ if elapsed_ns > 0.0 => sent_measured as f64 * 1e9 / elapsed_ns,
            _ => 0.0,
        },
        unsent: o.tx.counters.unsent,
        configured_pps: cfg.milli_pps as f64 / 1000.0,
        generator_behind: behind,
        segment_medians_ns: Default::default(),
        interfaces: o.interfaces.clone(),
        xdp: o.xdp.clone(),
        network: crate::netinfo::collect(),
        nf,
        ci_stop: o.checks.ci_stop(cfg),
        explain: None,
    };
    let p50 = Percentile::LADDER[0];
    for (n, h) in &o.histograms {
        if n.starts_with("segment.") && h.count() > 0 {
            data.segment_medians_ns.insert(n.clone(), h.value_at(p50));
        }
    }
    if late {
        let p99 =
            o.tx.lateness
                .value_at(Percentile::from_fraction(99, 100).expect("valid"));
        r.warnings.insert(
            0,
            format!(
                "GENERATOR FELL BEHIND: lateness p99 {} against a mean gap of {}, {} probes sent more than one gap late — the offered load was not the configured one; latency from the scheduled time includes the generator's own delay (pin --tx-cpu, lower --rate)",
                latlab_core::units::format_ns(p99 as f64),
                latlab_core::units::format_ns(mean_gap_ns),
                o.tx.counters.late_over_gap
            ),
        );
    }
    if o.tx.counters.unsent > 0 {
        r.warnings.insert(
            0,
            format!(
                "STOPPED AT ITS DURATION: {} of {} scheduled probes were not sent; the generator reached {:.0} of {:.0} pps, and the run ended at its warm-up + duration (+{}) instead of sending the rest late",
                o.tx.counters.unsent,
                c["scheduled"],
                data.achieved_pps,
                data.configured_pps,
                latlab_core::units::format_ns(crate::probe::SEND_GRACE.get() as f64)
            ),
        );
    }
    if lost > 0 {
        r.warnings
            .push(format!("{lost} of {sent_measured} measured probes lost"));
    }
    let inconsistent = c["decomposition_out_of_order"] + c["decomposition_residence_too_long"];
    if inconsistent > 0 {
        r.warnings.push(format!(
            "{inconsistent} probes had inconsistent timestamps and were left out of the segments"
        ));
    }
    let missing = c["missing_tx_kernel_timestamp"] + c["missing_rx_kernel_timestamp"];
    if cfg.sources.kernel && missing > 0 {
        r.warnings.push(format!(
            "{missing} measured probes lacked a kernel timestamp (see counters)"
        ));
    }
    if cfg.mode == crate::probe::Mode::OpenLoop && cfg.tx_cpu.is_none() {
        r.warnings
            .push("the TX thread was not pinned (--tx-cpu): lateness includes migrations".into());
    }
    if cfg.fifo.is_some() {
        if let Some(rt) = data.network.rt_runtime_us.filter(|&v| v >= 0) {
            r.warnings.push(format!(
                "SCHED_FIFO threads are throttled (kernel.sched_rt_runtime_us = {rt}): a real-time thread that runs without pause is stopped for the rest of each period"
            ));
        }
    }
    r.data = serde_json::to_value(&data).unwrap_or(serde_json::Value::Null);
    r.self_checks = probe_verdicts(cfg, o);
    r
}

/// The self-checks of a probe run (see [`crate::probe::checks`]): on `user.sched` in the
/// open loop, `user.actual` in the closed loop.
pub fn probe_verdicts(cfg: &ProbeConfig, o: &ProbeOutcome) -> Vec<latlab_core::selfcheck::Verdict> {
    let name = match cfg.mode {
        crate::probe::Mode::OpenLoop => series::USER_SCHED,
        crate::probe::Mode::Pingpong => series::USER_ACTUAL,
    };
    let empty = LatencyHistogram::new(cfg.hist).unwrap_or_default();
    let h = o
        .histograms
        .iter()
        .find(|(n, _)| n == name)
        .map_or(&empty, |(_, h)| h);
    let intervals: Vec<&LatencyHistogram> = o.intervals.iter().map(|(_, s, _)| s).collect();
    crate::probe::checks::verdicts(cfg, &o.checks, h, &intervals)
}

/// The interval log of a probe run: `user.sched` and `user.actual` per interval (by
/// receive time) and `generator.lateness` per interval (by scheduled send time).
pub fn probe_interval_log(
    o: &ProbeOutcome,
    wall_start: std::time::SystemTime,
    interval: Nanos,
) -> Result<Vec<u8>, hlog::HlogError> {
    let mut iv = Vec::new();
    for (start, sched, actual) in &o.intervals {
        for (tag, h) in [(series::USER_SCHED, sched), (series::USER_ACTUAL, actual)] {
            iv.push(hlog::Interval {
                tag: tag.to_string(),
                start: Duration::from_nanos(start.get()),
                duration: Duration::from_nanos(interval.get()),
                hist: h.clone(),
            });
        }
    }
    let last =
        o.tx.lateness_intervals
            .iter()
            .rposition(|h| h.count() > 0)
            .map(|i| i + 1)
            .unwrap_or(0);
    for (i, h) in o.tx.lateness_intervals.iter().take(last).enumerate() {
        iv.push(hlog::Interval {
            tag: series::LATENESS.to_string(),
            start: Duration::from_nanos(interval.get() * i as u64),
            duration: Duration::from_nanos(interval.get()),
            hist: h.clone(),
        });
    }
    hlog::write(
        wall_start,
        "latlab net probe: latency per interval in ns",
        &iv,
    )
}

/// One row of a percentile table.
#[derive(Clone, Debug, PartialEq)]
pub struct SeriesRow {
    /// Histogram name.
    pub name: String,
    /// Its summary.
    pub summary: Summary,
}

/// The percentile rows of a `net.probe` result: every source and segment, in a fixed
/// order, at `percentiles`. Pure.
pub fn probe_rows(r: &ResultFile, percentiles: &[Percentile]) -> Vec<SeriesRow> {
    series::SOURCES
        .iter()
        .chain(&[series::LATENESS])
        .chain(&series::SEGMENTS)
        .filter_map(|n| {
            let h = r.histogram(n)?.ok()?;
            (h.count() > 0).then(|| SeriesRow {
                name: n.to_string(),
                summary: summarize(&h, percentiles, DEFAULT_CONFIDENCE),
            })
        })
        .collect()
}

/// The stored data of a `net.probe` result.
pub fn probe_data(r: &ResultFile) -> Option<ProbeData> {
    serde_json::from_value(r.data.clone()).ok()
}

/// CCDF curves of the sources of a `net.probe` result (`user.sched`, `user.actual`,
/// `kernel.driver_to_driver`, `hardware.nic_to_nic`, those present and non-empty):
/// `(series, points)` with points `(latency_ns, P(X > x))`, cut at the smallest supported
/// tail. Pure.
pub fn probe_curves(r: &ResultFile) -> Vec<(String, Vec<(f64, f64)>)> {
    series::SOURCES
        .iter()
        .filter_map(|n| {
            let h = r.histogram(n)?.ok()?;
            (h.count() > 0).then(|| (n.to_string(), latlab_core::stats::ccdf(&h)))
        })
        .collect()
}

/// Merges histograms of the same name exactly (helper for per-flow totals).
pub fn merged(hs: &[&LatencyHistogram]) -> Option<LatencyHistogram> {
    let mut it = hs.iter();
    let mut acc = (*it.next()?).clone();
    for h in it {
        acc.merge(h).ok()?;
    }
    Some(acc)
}
