//! The end of a run: counters summed over the nodes, intervals as the inputs saw them,
//! bandwidths, and the [`SimData`] of the result.

use super::{Sim, GB};
use crate::compute::ComputeCounters;
use crate::dde::{Dde, DdeCounters};
use crate::ie::IeCounters;
use crate::sim::data::{
    BlockRow, FiveNum, IntervalRow, Limits, Senders, SimData, SimOutcome, Trend,
};

impl Sim<'_> {
    /// The occupancy of the writes-in-flight cap and the credit refusals.
    fn limits(&self) -> Limits {
        let total: i64 = self.inflight_ns.iter().sum();
        let inflight_share: Vec<f64> = self
            .inflight_ns
            .iter()
            .map(|&t| {
                if total > 0 {
                    t as f64 / total as f64
                } else {
                    0.0
                }
            })
            .collect();
        Limits {
            at_cap_pct: 100.0 * inflight_share.last().copied().unwrap_or(0.0),
            inflight_share,
            credit_refusals: self.credit_refusals,
        }
    }

    pub(super) fn finish(self) -> SimOutcome {
        let cfg = self.cfg;
        let mut compute = ComputeCounters::default();
        let mut incomplete = 0;
        for c in &self.computes {
            compute += c.node.counters();
            incomplete += c.node.incomplete();
        }
        let mut ie = IeCounters::default();
        for inp in &self.inputs {
            ie += inp.ie.counters();
        }
        let mut dde = DdeCounters::default();
        let mut first_live: Option<&Dde> = None;
        for d in self.ddes.iter().flatten() {
            dde += d.counters();
            first_live.get_or_insert(d);
        }
        let start = self.first_send.unwrap_or(0);
        let total_bytes = self.delivered as f64 * cfg.topology.mts_bytes as f64;
        let dur = (self.last_arrival - start).max(1) as f64;
        let steady = match self.warm_time {
            Some(w) if self.last_arrival > w => {
                let warm_bytes = (self.warmup_ts * self.inputs.len() as u64) as f64
                    * cfg.topology.mts_bytes as f64;
                (total_bytes - warm_bytes) / (self.last_arrival - w) as f64
            }
            _ => total_bytes / dur,
        };
        let t0 = start;
        let intervals = self
            .intervals
            .iter()
            .enumerate()
            .filter(|(_, a)| !a.actual.is_empty())
            .map(|(j, a)| {
                let mut act = a.actual.clone();
                let mut st = a.starts.clone();
                let proposed = if a.proposed.len() == a.actual.len() {
                    let mut p = a.proposed.clone();
                    crate::stats::median_i64(&mut p).map(|v| v as f64 / 1e6)
                } else {
                    None
                };
                let speedup = first_live
                    .and_then(|d| d.proposals().get(&(j as u64)))
                    .is_some_and(|p| p.ssu.speedup);
                let spread = st.iter().max().unwrap() - st.iter().min().unwrap();
                IntervalRow {
                    index: j as u64,
                    proposed_ms: proposed,
                    actual_ms: crate::stats::median_i64(&mut act).unwrap() as f64 / 1e6,
                    start_spread_ms: spread as f64 / 1e6,
                    start_ms: (crate::stats::median_i64(&mut st).unwrap() - t0) as f64 / 1e6,
                    speedup,
                    dropped: a.dropped,
                }
            })
            .collect();
        let completion_ms = FiveNum::from_hist(&self.completion, 1e6);
        let var = if self.completion.count() > 0 {
            let s = self.completion.stdev() / 1e6;
            s * s
        } else {
            0.0
        };
        let total = cfg.total_ts();
        let (complete, discarded) = match &self.fles {
            Some(f) => {
                // the builders are not ring-buffer compute nodes: count what they stored
                compute.stored = self.delivered;
                compute.completed = f.built();
                compute.released = f.built();
                (f.built() + f.tsm.discarded() == total, f.tsm.discarded())
            }
            None => (compute.completed == total && incomplete == 0, 0),
        };
        let halves = (!self.halves[0].is_empty() && !self.halves[1].is_empty()).then(|| {
            [
                FiveNum::from_hist(&self.halves[0], 1e6),
                FiveNum::from_hist(&self.halves[1], 1e6),
            ]
        });
        let blocks: Vec<BlockRow> = self
            .blocks
            .iter()
            .enumerate()
            .filter(|(_, b)| b.count > 0)
            .map(|(k, b)| BlockRow {
                first_ts: k as u64 * self.block_len,
                end_ms: (b.last - start) as f64 / 1e6,
                count: b.count,
                mean_ms: b.sum_ns / b.count as f64 / 1e6,
                max_ms: b.max_ns as f64 / 1e6,
            })
            .collect();
        // whole blocks after warm-up only (the last may be short: whole rounds, not intervals)
        let points: Vec<(f64, f64)> = blocks
            .iter()
            .filter(|b| b.first_ts >= self.warmup_ts && b.count * 2 >= self.block_len)
            .map(|b| (b.end_ms, b.mean_ms))
            .collect();
        let limits = self.limits();
        let data = SimData {
            config: cfg.clone(),
            nodes: cfg.topology.inputs + cfg.topology.computes,
            time_slices: total,
            warmup_ts: self.warmup_ts,
            completion_ms,
            completion_var_ms2: var,
            bandwidth_gbs: total_bytes / dur * 1e9 / GB,
            steady_bandwidth_gbs: steady * 1e9 / GB,
            nominal_gbs: cfg.topology.inputs as f64 * cfg.net.inj_gbs,
            duration_ms: dur / 1e6,
            intervals,
            fill: self.fill,
            fill_by_rank: self
                .rank_counts
                .iter()
                .map(|c| FiveNum::from_counts(c, 100.0 / cfg.topology.slots_per_input as f64))
                .collect(),
            compute,
            ie,
            dde,
            sent: self.sent,
            events: self.events + self.net.internal_events(),
            superseded_events: self.timers.superseded(),
            complete,
            warmup_ms: self.warm_time.map_or(0.0, |w| (w - start) as f64 / 1e6),
            completion_halves_ms: halves,
            discarded,
            trend: Trend::fit(&points),
            limits: Some(limits),
            senders: Senders::from_counts(self.senders.clone()),
            completion_blocks: blocks,
        };
        SimOutcome {
            data,
            completion: self.completion,
            completion_all: self.completion_all,
        }
    }
}
