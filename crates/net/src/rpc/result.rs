//! The `net.load` result: the merged histograms and counters of a load run, its self-checks
//! (throughput, arrivals, independence, stationarity) and what tables print from it.

use super::config::{LoadConfig, Protocol};
use super::engine::ThreadOutcome;
use super::record::{series, Counters};
use crate::probe::checks::WINDOW;
use crate::probe::Arrivals;
use latlab_core::hist::LatencyHistogram;
use latlab_core::results::{Provenance, ResultFile, StoredHistogram};
use latlab_core::selfcheck::{self, Verdict};
use latlab_sys::tsc::Clock;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// The result kind.
pub const RESULT_KIND: &str = "net.load";

/// A load run, every thread merged.
pub struct LoadOutcome {
    /// Histograms by name ([`series`]), merged exactly over the threads.
    pub histograms: Vec<(&'static str, LatencyHistogram)>,
    /// Every request's fate, summed.
    pub counters: Counters,
    /// The self-checks.
    pub checks: Vec<Verdict>,
    /// Medians of the measured intervals (the first thread's), ns.
    pub interval_medians_ns: Vec<u64>,
    /// Measured sends per second of the whole run.
    pub achieved_rps: f64,
    /// Wall time of the run.
    pub elapsed: Duration,
    /// Warnings.
    pub warnings: Vec<String>,
    /// `--io adaptive`: the largest margin before a send at which a thread stopped
    /// sleeping, ns.
    pub wake_margin_max_ns: Option<u64>,
}

/// What a `net.load` result keeps beside histograms and counters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LoadData {
    /// The target as given.
    pub target: String,
    /// Its protocol.
    pub protocol: Protocol,
    /// Offered load asked for, requests/s.
    pub configured_rps: f64,
    /// Measured requests sent per second.
    pub achieved_rps: f64,
    /// Fraction of the sent requests that were late (every connection busy).
    pub late_fraction: f64,
    /// Whether every request is accounted for.
    pub balanced: bool,
    /// Medians of the measured intervals, ns.
    pub interval_medians_ns: Vec<u64>,
    /// The server latlab started for the run (`--serve`); none when it loaded a server
    /// someone else runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub served: Option<Served>,
    /// `--io adaptive`: the largest margin before a send at which the generator stopped
    /// sleeping and polled instead, ns (learnt from how late its timed wake-ups came back;
    /// absent for the other modes and in files written before it was learnt, when it was
    /// 30 µs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wake_margin_max_ns: Option<u64>,
}

/// A server latlab started for a run and stopped after it (`latlab net load --serve`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Served {
    /// `memcached` or `nginx`.
    pub server: String,
    /// The executable started.
    pub program: String,
    /// Its pid while it ran.
    pub pid: u32,
    /// The CPU it was pinned to.
    pub cpu: Option<u32>,
    /// The network namespace it ran in (latlab's own when none).
    pub netns: Option<String>,
    /// How it ended: `stopped` (by SIGTERM, no process left) or why not.
    pub stop: String,
}

impl Served {
    /// One line: what, where, how it ended.
    pub fn describe(&self) -> String {
        format!(
            "{} ({}, pid {}) started by latlab{}{}; {}",
            self.server,
            self.program,
            self.pid,
            self.cpu.map(|c| format!(" on CPU {c}")).unwrap_or_default(),
            self.netns
                .as_deref()
                .map(|n| format!(" in namespace {n}"))
                .unwrap_or_default(),
            self.stop
        )
    }
}

/// Records in a `net.load` result the server latlab started for it.
pub fn set_served(r: &mut ResultFile, served: Served) {
    if let Some(mut d) = load_data(r) {
        d.served = Some(served);
        r.data = serde_json::to_value(d).unwrap_or(serde_json::Value::Null);
    }
}

impl LoadOutcome {
    /// Merges the threads' outcomes of a run of `cfg`.
    pub fn merge(
        cfg: &LoadConfig,
        outs: Vec<ThreadOutcome>,
        clock: &Clock,
        elapsed: Duration,
    ) -> LoadOutcome {
        let _ = clock;
        let mut histograms: Vec<(&'static str, LatencyHistogram)> = Vec::new();
        let mut counters = Counters::default();
        let mut warnings = Vec::new();
        let (mut sends, mut span) = (0u64, 0f64);
        for o in &outs {
            for (name, h) in &o.rec.hists {
                match histograms.iter_mut().find(|(n, _)| n == name) {
                    Some((_, m)) => m.merge(h).expect("same configuration"),
                    None => histograms.push((name, h.clone())),
                }
            }
            counters.add(&o.rec.counters);
            for w in &o.warnings {
                if !warnings.contains(w) {
                    warnings.push(w.clone());
                }
            }
            let (n, first, last) = o.rec.send_span();
            sends += n;
            if n > 1 {
                span = span.max((last.saturating_sub(first)) as f64);
            }
        }
        let mean_gap = 1e9 / cfg.rps();
        // a run that stopped at its deadline: every send over the time it sent for (its
        // measured phase also carried warm-up requests sent late)
        let sending_ns = outs.iter().map(|o| o.rec.last_send_ns()).max().unwrap_or(0);
        let achieved_rps = if counters.unsent > 0 && sending_ns > 0 {
            counters.sent as f64 * 1e9 / sending_ns as f64
        } else if sends > 1 {
            sends as f64 * 1e9 / (span + mean_gap)
        } else {
            0.0
        };
        let first = outs.first().map(|o| &o.rec);
        let gaps = first.map(|r| r.gaps_ns()).unwrap_or_default();
        let thread_gap = mean_gap * f64::from(cfg.threads.max(1));
        let mut checks = vec![
            selfcheck::throughput(achieved_rps, cfg.rps(), "requests/s"),
            selfcheck::schedule_sent(counters.scheduled, counters.unsent, "requests"),
            match cfg.arrivals {
                Arrivals::Poisson => selfcheck::poisson_arrivals(&gaps),
                Arrivals::Constant => selfcheck::constant_arrivals(&gaps, thread_gap),
            },
        ];
        let medians = first
            .map(|r| r.interval_medians.clone())
            .unwrap_or_default();
        if let Some(r) = first {
            checks.push(selfcheck::independence(r.windows(), WINDOW));
        }
        checks.push(selfcheck::stationarity(&medians));
        if !counters.balanced() {
            warnings.push(format!("the request counts do not add up: {counters:?}"));
        }
        if counters.late > 0 {
            warnings.push(format!(
                "{} of {} requests were late: every connection had {} requests outstanding when they fell due (they are measured from their scheduled time; more --connections or --pipeline offer the load without waiting)",
                counters.late, counters.sent, cfg.pipeline
            ));
        }
        if counters.unsent > 0 {
            warnings.push(format!(
                "STOPPED AT ITS DURATION: {} of {} scheduled requests were never sent: the server (or the generator) could not keep up with the offered load, and the run ended at its warm-up + duration (+{}) instead of sending the rest late",
                counters.unsent,
                counters.scheduled,
                latlab_core::units::format_ns(crate::probe::SEND_GRACE.get() as f64)
            ));
        }
        let wake_margin_max_ns = outs.iter().filter_map(|o| o.wake_margin_max_ns).max();
        LoadOutcome {
            histograms,
            counters,
            checks,
            interval_medians_ns: medians,
            achieved_rps,
            elapsed,
            warnings,
            wake_margin_max_ns,
        }
    }
}

/// Builds the `net.load` result of a run.
pub fn load_result(
    cfg: &LoadConfig,
    target_text: &str,
    o: &LoadOutcome,
    argv: Vec<String>,
    provenance: Provenance,
) -> ResultFile {
    let config = serde_json::to_value(cfg).unwrap_or(serde_json::Value::Null);
    let mut r = ResultFile::new(RESULT_KIND, argv, config, provenance);
    r.duration_ns = o.elapsed.as_nanos() as u64;
    for name in series::ALL {
        if let Some((_, h)) = o.histograms.iter().find(|(n, _)| *n == name) {
            if h.count() > 0 || name == series::SCHED {
                r.histograms.push(StoredHistogram::new(name, h));
            }
        }
    }
    for (k, v) in o.counters.entries() {
        r.counters.insert(k.into(), v);
    }
    r.warnings.extend(o.warnings.iter().cloned());
    r.self_checks = o.checks.clone();
    let c = &o.counters;
    let data = LoadData {
        target: target_text.into(),
        protocol: cfg.target.protocol,
        configured_rps: cfg.rps(),
        achieved_rps: o.achieved_rps,
        late_fraction: if c.sent > 0 {
            c.late as f64 / c.sent as f64
        } else {
            0.0
        },
        balanced: c.balanced(),
        interval_medians_ns: o.interval_medians_ns.clone(),
        served: None,
        wake_margin_max_ns: o.wake_margin_max_ns,
    };
    r.data = serde_json::to_value(data).unwrap_or(serde_json::Value::Null);
    r
}

/// The data of a `net.load` result, if it is one.
pub fn load_data(r: &ResultFile) -> Option<LoadData> {
    (r.kind == RESULT_KIND)
        .then(|| serde_json::from_value(r.data.clone()).ok())
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file written before the adaptive margin was learnt (or before `served`) reads,
    /// with neither; a new one keeps both.
    #[test]
    fn load_data_of_older_files_reads_without_the_newer_fields() {
        let old = serde_json::json!({
            "target": "memcached://127.0.0.1:21211",
            "protocol": "memcached_tcp",
            "configured_rps": 1000.0,
            "achieved_rps": 999.0,
            "late_fraction": 0.0,
            "balanced": true,
            "interval_medians_ns": [50_000]
        });
        let d: LoadData = serde_json::from_value(old).expect("reads");
        assert!(d.served.is_none() && d.wake_margin_max_ns.is_none());
        let new = LoadData {
            wake_margin_max_ns: Some(87_000),
            ..d
        };
        let back: LoadData = serde_json::from_value(serde_json::to_value(&new).unwrap()).unwrap();
        assert_eq!(back.wake_margin_max_ns, Some(87_000));
        // absent when not adaptive: the file says nothing rather than null
        let none = serde_json::to_value(LoadData {
            wake_margin_max_ns: None,
            ..new
        })
        .unwrap();
        assert!(none.get("wake_margin_max_ns").is_none());
    }
}
