//! Rank 0's end of a run: every rank's statistics merged into the `dfs.run` result.

use super::wire::{warmup, LocalClock, RankStats};
use crate::compute::ComputeCounters;
use crate::dde::DdeCounters;
use crate::ie::IeCounters;
use crate::mpidata::{RunConfig, RunData, TransportConfig, RUN_KIND as RESULT_KIND};
use crate::sim::{FillSample, FiveNum, IntervalRow};
use latlab_core::hist::{HistConfig, LatencyHistogram};
use latlab_core::results::{Provenance, ResultFile, StoredHistogram};
use std::collections::BTreeMap;

pub(super) fn assemble(
    cfg: &RunConfig,
    tc: &TransportConfig,
    ranks: usize,
    mut all: Vec<RankStats>,
    argv: Vec<String>,
    provenance: Provenance,
) -> ResultFile {
    all.sort_by_key(|s| s.rank);
    let ni = cfg.topology.inputs;
    let hc = HistConfig::default();
    let mut completion = LatencyHistogram::new(hc).expect("valid");
    let mut completion_all = LatencyHistogram::new(hc).expect("valid");
    let mut compute = ComputeCounters::default();
    let mut ie = IeCounters::default();
    let mut dde = DdeCounters::default();
    let mut dde_killed = 0;
    let mut sent = 0;
    let mut incomplete = 0;
    let mut start = u64::MAX;
    let mut end = 0u64;
    let mut warnings = Vec::new();
    let mut speed: BTreeMap<u64, bool> = BTreeMap::new();
    for s in &all {
        if s.rank < ni {
            sent += s.sent;
            start = start.min(s.start_ns);
            ie += s.ie;
        } else {
            compute += s.compute;
            incomplete += s.incomplete;
            end = end.max(s.last_arrival_ns);
            for (b64, h) in [
                (&s.completion_b64, &mut completion),
                (&s.completion_all_b64, &mut completion_all),
            ] {
                match b64
                    .as_deref()
                    .map(|b| LatencyHistogram::from_base64(b, hc, 0))
                {
                    Some(Ok(x)) => {
                        if h.merge(&x).is_err() {
                            warnings.push(format!("rank {}: histogram merge failed", s.rank));
                        }
                    }
                    _ => warnings.push(format!("rank {}: histogram missing or corrupt", s.rank)),
                }
            }
            if let Some(d) = s.dde {
                dde += d;
            }
            if s.dde_killed {
                dde_killed += 1;
            }
            for j in &s.speedups {
                speed.insert(*j, true);
            }
        }
    }
    // intervals from the inputs' reports, times in the shared monotonic clock
    /// (starts, durations, proposed durations) of one interval over the inputs
    type Acc = (Vec<i64>, Vec<i64>, Vec<i64>);
    let mut by_j: BTreeMap<u64, Acc> = BTreeMap::new();
    for s in all.iter().filter(|s| s.rank < ni) {
        let cl = LocalClock {
            t0: start.min(s.start_ns),
            offset: s.clock_offset_ns,
            drift: s.clock_drift,
        };
        for a in &s.reports {
            let e = by_j.entry(a.index).or_default();
            let st = cl.mono_of(a.start) as i64;
            e.0.push(st);
            e.1.push(cl.mono_of(a.start + a.duration) as i64 - st);
            if let Some(p) = a.proposed_duration {
                e.2.push(p);
            }
        }
    }
    let intervals = by_j
        .into_iter()
        .map(|(j, (mut st, mut act, mut prop))| {
            let spread = st.iter().max().unwrap_or(&0) - st.iter().min().unwrap_or(&0);
            let full = prop.len() == act.len();
            IntervalRow {
                index: j,
                proposed_ms: if full {
                    crate::stats::median_i64(&mut prop).map(|v| v as f64 / 1e6)
                } else {
                    None
                },
                actual_ms: crate::stats::median_i64(&mut act).unwrap_or(0) as f64 / 1e6,
                start_spread_ms: spread as f64 / 1e6,
                start_ms: (crate::stats::median_i64(&mut st).unwrap_or(0) - start as i64) as f64
                    / 1e6,
                speedup: speed.contains_key(&j),
                dropped: false,
            }
        })
        .collect();
    // buffer fill: merge every compute node's samples into 1 ms-ish buckets by time order
    let slots = cfg.topology.slots_per_input as f64;
    let mut fill = Vec::new();
    let computes: Vec<&RankStats> = all.iter().filter(|s| s.rank >= ni).collect();
    let nsamples = computes.iter().map(|s| s.fill.len()).min().unwrap_or(0);
    for k in 0..nsamples {
        let mut counts = vec![0u64; cfg.topology.slots_per_input as usize + 1];
        let mut sum = 0u64;
        let mut n = 0u64;
        let mut t = 0u64;
        for s in &computes {
            let (ts, v) = &s.fill[k];
            t = t.max(*ts);
            for &f in v {
                let top = counts.len() - 1;
                counts[(f as usize).min(top)] += 1;
                sum += f as u64;
                n += 1;
            }
        }
        fill.push(FillSample {
            t_ms: t.saturating_sub(start) as f64 / 1e6,
            fill: FiveNum::from_counts(&counts, 100.0 / slots),
            mean: sum as f64 * 100.0 / slots / n.max(1) as f64,
        });
    }
    let total = cfg.total_ts();
    let expected = total * ni as u64;
    let dur_ns = end.saturating_sub(start).max(1);
    let bytes = compute.stored as f64 * cfg.topology.mts_bytes as f64;
    let lost = expected.saturating_sub(compute.stored);
    let verified = compute.completed == total
        && incomplete == 0
        && lost == 0
        && compute.checksum_failures == 0
        && compute.duplicates == 0
        && compute.overruns == 0
        && compute.misrouted == 0;
    let var = if completion.count() > 0 {
        (completion.stdev() / 1e6).powi(2)
    } else {
        0.0
    };
    let data = RunData {
        config: cfg.clone(),
        ranks,
        time_slices: total,
        warmup_ts: warmup(total, cfg.params.interval_len(cfg.topology.computes)),
        completion_ms: FiveNum::from_hist(&completion, 1e6),
        completion_var_ms2: var,
        bandwidth_gbs: bytes / dur_ns as f64,
        duration_ms: dur_ns as f64 / 1e6,
        intervals,
        fill,
        compute,
        ie,
        dde,
        dde_killed,
        sent,
        expected,
        lost,
        verified,
        transport: tc.transport,
        provider: tc.provider.clone(),
    };
    let mut r = ResultFile::new(
        RESULT_KIND,
        argv,
        serde_json::to_value(cfg).expect("serialisable"),
        provenance,
    );
    r.duration_ns = dur_ns;
    let mode = cfg.mode.name();
    r.histograms.push(
        StoredHistogram::new("completion", &completion)
            .with_label("mode", mode)
            .with_label("runtime", "mpi")
            .with_label("transport", tc.transport.name()),
    );
    r.histograms.push(
        StoredHistogram::new("completion_all", &completion_all)
            .with_label("mode", mode)
            .with_label("runtime", "mpi")
            .with_label("transport", tc.transport.name()),
    );
    let c = &mut r.counters;
    c.insert("time_slices".into(), total);
    c.insert("contributions_expected".into(), expected);
    c.insert("contributions_sent".into(), sent);
    for (name, v) in compute.result_counters() {
        c.insert(name.into(), v);
    }
    c.insert("contributions_lost".into(), lost);
    c.insert("incomplete".into(), incomplete);
    c.insert("proposals_used".into(), ie.proposals_used);
    c.insert("fallback_intervals".into(), ie.fallbacks);
    c.insert("dde_killed".into(), dde_killed as u64);
    if !verified {
        warnings.push(format!(
            "not verified: {} of {total} time-slices completed, {lost} contributions lost, {} checksum failures, {} duplicates, {} overruns, {} misrouted",
            compute.completed, compute.checksum_failures, compute.duplicates, compute.overruns, compute.misrouted
        ));
    }
    r.warnings = warnings;
    r.data = serde_json::to_value(&data).expect("serialisable");
    r
}
