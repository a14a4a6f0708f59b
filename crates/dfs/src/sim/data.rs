//! What a simulation reports: [`SimData`] (the `data` of a `dfs.sim` result) with its
//! rows and five-number summaries, and [`SimOutcome`] (the data plus full histograms).

use super::config::SimConfig;
use crate::compute::ComputeCounters;
use crate::dde::DdeCounters;
use crate::ie::IeCounters;
use latlab_core::hist::LatencyHistogram;
use serde::{Deserialize, Serialize};

pub use latlab_core::stats::FiveNum;

/// One interval as the inputs saw it (medians over inputs) and as the first live DDE
/// proposed it.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct IntervalRow {
    /// Interval index.
    pub index: u64,
    /// Median proposed duration the inputs followed, ms (None: best effort).
    pub proposed_ms: Option<f64>,
    /// Median actual duration, ms.
    pub actual_ms: f64,
    /// Spread of the inputs' actual start times (max − min, true time), ms.
    pub start_spread_ms: f64,
    /// Actual start of the interval (median over inputs, true time since run start), ms.
    pub start_ms: f64,
    /// Whether the proposal carried a staged speed-up.
    pub speedup: bool,
    /// Whether a bandwidth drop was active when input 0 started it.
    pub dropped: bool,
}

/// Buffer fill over all connections at one sample time.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct FillSample {
    /// Simulated time, ms.
    pub t_ms: f64,
    /// Fill in percent of each connection's ring: min, p10, median, p90, max over
    /// connections.
    pub fill: FiveNum,
    /// Mean fill, percent.
    pub mean: f64,
}

/// What a simulation run reports (the `data` of a `dfs.sim` result file).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SimData {
    /// The configuration.
    pub config: SimConfig,
    /// Nodes (inputs + computes).
    pub nodes: usize,
    /// Time-slices built.
    pub time_slices: u64,
    /// Warm-up time-slices excluded from the completion statistics (intervals 0 and 1).
    pub warmup_ts: u64,
    /// Completion duration (last − first arrival) after warm-up, ms.
    pub completion_ms: FiveNum,
    /// Variance of the completion duration after warm-up, ms² (from the histogram).
    pub completion_var_ms2: f64,
    /// Aggregate bandwidth into the compute nodes over the whole run, GB/s.
    pub bandwidth_gbs: f64,
    /// Aggregate bandwidth after warm-up, GB/s.
    pub steady_bandwidth_gbs: f64,
    /// Nominal aggregate injection bandwidth (I × inj), GB/s: the micro-benchmark bound.
    pub nominal_gbs: f64,
    /// Simulated duration of the run, ms.
    pub duration_ms: f64,
    /// Per interval (DFS mode).
    pub intervals: Vec<IntervalRow>,
    /// Buffer fill over time.
    pub fill: Vec<FillSample>,
    /// Buffer fill by rank (Fig. 9): at each sample every compute node's connections are
    /// ordered by fill, descending; entry r summarises the r-th fullest, in percent.
    pub fill_by_rank: Vec<FiveNum>,
    /// Compute-node counters, summed.
    pub compute: ComputeCounters,
    /// Input-engine counters, summed (DFS mode).
    pub ie: IeCounters,
    /// DDE counters, summed over replicas.
    pub dde: DdeCounters,
    /// Contributions sent.
    pub sent: u64,
    /// Events handled (the fabric's own included). A flow's completion rescheduled before
    /// it fell due is moved, not queued again, and counts in `superseded_events` instead
    /// (before 2026-11-25 each was queued and popped as a stale event and counted here:
    /// the old count is `events + superseded_events`).
    pub events: u64,
    /// Completion events replaced before they fell due (never queued).
    #[serde(default)]
    pub superseded_events: u64,
    /// Whether every time-slice completed (FLESnet: was built or discarded).
    pub complete: bool,
    /// Simulated time the warm-up took (from the first send until the warm-up
    /// time-slices' contributions had arrived), ms: it is left out of the completion and
    /// steady-state bandwidth figures.
    #[serde(default)]
    pub warmup_ms: f64,
    /// Completion duration of the first and second half of the time-slices after warm-up,
    /// ms: similar halves say the run was stationary.
    #[serde(default)]
    pub completion_halves_ms: Option<[FiveNum; 2]>,
    /// Time-slices the FLESnet manager discarded because no builder had room.
    #[serde(default)]
    pub discarded: u64,
    /// Completion duration by block of one interval's time-slices, in order: the trend
    /// over the run (empty in results written before it existed).
    #[serde(default)]
    pub completion_blocks: Vec<BlockRow>,
    /// The least-squares trend of the blocks' mean completion after warm-up (None: fewer
    /// than four blocks after warm-up).
    #[serde(default)]
    pub trend: Option<Trend>,
}

/// One block of time-slices (one interval's worth, by time-slice number).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct BlockRow {
    /// First time-slice of the block.
    pub first_ts: u64,
    /// When its last time-slice completed, ms since the first send.
    pub end_ms: f64,
    /// Time-slices completed in it.
    pub count: u64,
    /// Mean completion duration, ms.
    pub mean_ms: f64,
    /// Longest completion duration, ms.
    pub max_ms: f64,
}

/// Whether the completion duration still moves after warm-up: a least-squares line
/// through the post-warm-up blocks' means against their end times.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Trend {
    /// Blocks fitted.
    pub blocks: u64,
    /// Slope, ms of mean completion duration per second of simulated time.
    pub slope_ms_per_s: f64,
    /// The line's change over the fitted span in percent of the blocks' mean.
    pub change_pct: f64,
    /// `|change_pct|` ≤ [`STATIONARY_CHANGE_PCT`].
    pub stationary: bool,
}

/// Largest change of the fitted trend over the run, in percent of the mean, that still
/// counts as stationary.
pub const STATIONARY_CHANGE_PCT: f64 = 10.0;

impl Trend {
    /// The trend of `blocks` (points `(end_ms, mean_ms)`); None with fewer than four.
    pub fn fit(points: &[(f64, f64)]) -> Option<Trend> {
        if points.len() < 4 {
            return None;
        }
        let n = points.len() as f64;
        let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
        let my = points.iter().map(|p| p.1).sum::<f64>() / n;
        let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
        let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
        let slope = if sxx > 0.0 { sxy / sxx } else { 0.0 }; // ms per ms
        let span = points.last()?.0 - points.first()?.0;
        let change_pct = if my > 0.0 {
            slope * span / my * 100.0
        } else {
            0.0
        };
        Some(Trend {
            blocks: points.len() as u64,
            slope_ms_per_s: slope * 1e3,
            change_pct,
            stationary: change_pct.abs() <= STATIONARY_CHANGE_PCT,
        })
    }
}

/// A finished simulation: the data plus the full completion histograms.
#[derive(Clone, Debug)]
pub struct SimOutcome {
    /// Summary data.
    pub data: SimData,
    /// Completion durations after warm-up, ns.
    pub completion: LatencyHistogram,
    /// Completion durations of every time-slice, ns.
    pub completion_all: LatencyHistogram,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flat_series_is_stationary_and_a_growing_one_is_not() {
        let flat: Vec<(f64, f64)> = (0..8)
            .map(|k| (k as f64 * 10.0, 5.0 + (k % 2) as f64 * 0.1))
            .collect();
        let t = Trend::fit(&flat).unwrap();
        assert!(t.stationary, "{t:?}");
        assert!(t.change_pct.abs() < 3.0, "{t:?}");
        // 5 → 6.4 ms over 70 ms: 20 ms per simulated second, +24 % of the mean
        let grow: Vec<(f64, f64)> = (0..8)
            .map(|k| (k as f64 * 10.0, 5.0 + k as f64 * 0.2))
            .collect();
        let t = Trend::fit(&grow).unwrap();
        assert!(!t.stationary, "{t:?}");
        assert!((t.slope_ms_per_s - 20.0).abs() < 1e-9, "{t:?}");
        assert!((t.change_pct - 1.4 / 5.7 * 100.0).abs() < 1e-9, "{t:?}");
        assert!(Trend::fit(&grow[..3]).is_none());
    }
}
