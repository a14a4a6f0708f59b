//! The `dfs.sim` result file.

use super::SimOutcome;
use latlab_core::results::{Provenance, ResultFile, StoredHistogram, Timebase};

/// Result kind of `latlab dfs sim`.
pub const RESULT_KIND: &str = "dfs.sim";

/// The timebase of a simulation's provenance: no clock is read, every time is simulated.
pub fn simulated_timebase() -> Timebase {
    Timebase {
        source: "simulated".into(),
        fallback_reason: None,
        tsc: Default::default(),
    }
}

/// A provenance with the simulated timebase and nothing else (tests).
#[cfg(test)]
pub(crate) fn test_provenance() -> Provenance {
    Provenance {
        timebase: simulated_timebase(),
        ..Provenance::default()
    }
}

/// A report input named `file` holding one result of `kind` with `data` (tests).
#[cfg(test)]
pub(crate) fn test_input(
    kind: &str,
    data: &impl serde::Serialize,
    file: &str,
) -> latlab_core::doc::Input {
    let mut r = ResultFile::new(kind, vec![], serde_json::Value::Null, test_provenance());
    r.data = serde_json::to_value(data).unwrap();
    latlab_core::doc::Input::single(file.into(), r)
}

/// Builds the result file of a simulation: configuration, both completion histograms
/// (after warm-up: `completion`; all time-slices: `completion_all`), every counter,
/// warnings for anything lost, duplicated or incomplete, and [`SimData`](super::SimData) in
/// `data`.
pub fn to_result(o: &SimOutcome, argv: Vec<String>, provenance: Provenance) -> ResultFile {
    let d = &o.data;
    let config = serde_json::to_value(&d.config).expect("config serialises");
    let mut r = ResultFile::new(RESULT_KIND, argv, config, provenance);
    r.duration_ns = (d.duration_ms * 1e6) as u64;
    let mode = d.config.mode.name();
    let nodes = d.nodes.to_string();
    r.histograms.push(
        StoredHistogram::new("completion", &o.completion)
            .with_label("mode", mode)
            .with_label("nodes", nodes.clone())
            .with_label(
                "what",
                "time-slice completion duration after warm-up (last - first arrival)",
            ),
    );
    r.histograms.push(
        StoredHistogram::new("completion_all", &o.completion_all)
            .with_label("mode", mode)
            .with_label("nodes", nodes)
            .with_label("what", "time-slice completion duration, every time-slice"),
    );
    let c = &mut r.counters;
    c.insert("time_slices".into(), d.time_slices);
    c.insert("contributions_sent".into(), d.sent);
    for (name, v) in d.compute.result_counters() {
        c.insert(name.into(), v);
    }
    c.insert("released".into(), d.compute.released);
    c.insert("proposals_used".into(), d.ie.proposals_used);
    c.insert("proposals_ignored".into(), d.ie.proposals_ignored);
    c.insert("fallback_intervals".into(), d.ie.fallbacks);
    c.insert("catch_up_sends".into(), d.ie.catch_up_sends);
    c.insert("dde_speedups".into(), d.dde.speedups);
    c.insert("events".into(), d.events);
    c.insert("superseded_events".into(), d.superseded_events);
    c.insert("discarded_time_slices".into(), d.discarded);
    // a time-slice the FLESnet manager discarded was never sent: not lost
    let expected = (d.time_slices - d.discarded) * d.config.topology.inputs as u64;
    if !d.complete {
        r.warnings.push(format!(
            "{} of {} time-slices completed ({} discarded)",
            d.compute.completed, d.time_slices, d.discarded
        ));
    }
    if d.compute.stored != expected {
        r.warnings.push(format!(
            "{} contributions lost ({} stored of {expected})",
            expected.saturating_sub(d.compute.stored),
            d.compute.stored
        ));
    }
    for (n, v) in [
        ("duplicate", d.compute.duplicates),
        ("overrun", d.compute.overruns),
        ("misrouted", d.compute.misrouted),
        ("checksum-failed", d.compute.checksum_failures),
    ] {
        if v > 0 {
            r.warnings.push(format!("{v} {n} contributions"));
        }
    }
    r.data = serde_json::to_value(d).expect("data serialises");
    r
}
