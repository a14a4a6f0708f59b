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
    /// How often each sender-side limit bound: the writes-in-flight cap and the
    /// credits (None in results written before it was measured).
    #[serde(default)]
    pub limits: Option<Limits>,
    /// Concurrent senders per compute node after the warm-up (None: the fabric, or an
    /// older result).
    #[serde(default)]
    pub senders: Option<Senders>,
}

/// How many inputs write into a compute node at once: at every buffer-fill sample after the
/// warm-up, for every compute node, the inputs with a transfer in flight into its ejection
/// port. Spread evenly, each compute node has I × (writes in flight per input) / C
/// senders (8 with the defaults: the offset round-robin's ideal); a convoy (inputs walking
/// the order in lockstep) shows as many more on a few nodes while the others have none.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Senders {
    /// (sample, compute node) pairs with k concurrent senders, k = 0..=inputs.
    pub counts: Vec<u64>,
    /// Mean senders per compute node.
    pub mean: f64,
    /// Median, p90 and largest (pairs, nearest rank).
    pub p50: u64,
    /// p90.
    pub p90: u64,
    /// Largest.
    pub max: u64,
    /// Share of pairs with no sender (an idle ejection port), percent.
    pub idle_pct: f64,
}

impl Senders {
    /// The summary of `counts`; None when nothing was sampled.
    pub fn from_counts(counts: Vec<u64>) -> Option<Senders> {
        let n: u64 = counts.iter().sum();
        if n == 0 {
            return None;
        }
        let rank = |q: f64| {
            let want = ((q * n as f64).ceil() as u64).max(1);
            let mut acc = 0;
            for (k, &c) in counts.iter().enumerate() {
                acc += c;
                if acc >= want {
                    return k as u64;
                }
            }
            counts.len() as u64 - 1
        };
        let sum: u64 = counts.iter().enumerate().map(|(k, &c)| k as u64 * c).sum();
        Some(Senders {
            mean: sum as f64 / n as f64,
            p50: rank(0.5),
            p90: rank(0.9),
            max: counts.iter().rposition(|&c| c > 0).unwrap_or(0) as u64,
            idle_pct: 100.0 * counts[0] as f64 / n as f64,
            counts,
        })
    }
}

impl SimData {
    /// Intervals after the warm-up that the inputs sent paced (by a proposal or the
    /// fallback rule; medians over inputs): what a DFS figure stands on.
    pub fn paced_intervals(&self) -> u64 {
        let len = self
            .config
            .params
            .interval_len(self.config.topology.computes);
        let first = self.warmup_ts.div_ceil(len.max(1));
        self.intervals
            .iter()
            .filter(|r| r.index >= first && r.proposed_ms.is_some())
            .count() as u64
    }

    /// Contributions sent unpaced after their interval's proposed end, percent of all sent.
    pub fn catch_up_pct(&self) -> f64 {
        100.0 * self.ie.catch_up_sends as f64 / self.sent.max(1) as f64
    }
}

/// How often the two limits on an input's sending bound. The writes-in-flight cap
/// (`max_inflight`) is the NIC's limit on outstanding RDMA writes (FLESnet's
/// `max_pending_write_requests`); the credits are the compute node's ring slots for the
/// input (`slots_per_input`), freed when the compute node has consumed the time-slice.
/// A variant that changes a limit which never bound changes nothing.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Limits {
    /// Share of input time with k writes in flight, k = 0..=max_inflight (each input from
    /// its start to its last write completion; the shares sum to 1).
    pub inflight_share: Vec<f64>,
    /// Share of input time at the cap (the last entry of `inflight_share`), percent.
    pub at_cap_pct: f64,
    /// Contributions that were next to send (best effort: the head of the sequence; DFS:
    /// due in the pacing) but had no credit at their compute node, counted once per
    /// attempt: 0 means the ring slots never bound.
    pub credit_refusals: u64,
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
/// through the post-warm-up blocks' means against their end times, and, where that line
/// still moves, where the series settles (MSER).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Trend {
    /// Blocks fitted.
    pub blocks: u64,
    /// Slope, ms of mean completion duration per second of simulated time.
    pub slope_ms_per_s: f64,
    /// The line's change over the fitted span in percent of the blocks' mean.
    pub change_pct: f64,
    /// Standard error of the slope, ms/s, from the line through [`BATCHES`] batch means
    /// of the blocks (batching absorbs most of the blocks' autocorrelation); 0 with fewer
    /// than 2 × [`BATCHES`] blocks (then only the change counts).
    #[serde(default)]
    pub slope_se_ms_per_s: f64,
    /// `|change_pct|` ≤ [`STATIONARY_CHANGE_PCT`], or the slope is within
    /// [`T_CRIT`] standard errors of 0 (no trend the run can tell from noise).
    pub stationary: bool,
    /// Where the series settles: the MSER warm-up truncation of the blocks and the trend
    /// of what follows it.
    #[serde(default)]
    pub settle: Option<Settle>,
}

/// MSER (White 1997: the truncation point `d` minimising the standard error of the mean
/// of the blocks after it, Σ(y − ȳ)² / (n − d)², searched in the first half of the
/// blocks as the rule has it) and the trend of the blocks after `d`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Settle {
    /// Blocks dropped as transient.
    pub dropped_blocks: u64,
    /// End time of the last dropped block, ms (the series is taken as settled after it).
    pub from_ms: f64,
    /// Mean of the blocks kept, ms.
    pub mean_ms: f64,
    /// Trend of the blocks kept, ms of mean completion per simulated second.
    pub slope_ms_per_s: f64,
    /// Its standard error (as [`Trend::slope_se_ms_per_s`]).
    pub slope_se_ms_per_s: f64,
    /// Its change over the blocks kept, percent of their mean.
    pub change_pct: f64,
    /// The blocks kept are stationary (the same test as [`Trend::stationary`]).
    pub stationary: bool,
    /// MSER's cut lies inside the first half: at its end, the run is too short to tell a
    /// steady state from the end of a transient (the usual MSER rule).
    pub reliable: bool,
}

/// Largest change of the fitted trend over the run, in percent of the mean, that still
/// counts as stationary.
pub const STATIONARY_CHANGE_PCT: f64 = 10.0;

/// Batch means the slope's standard error is computed from.
pub const BATCHES: usize = 10;

/// Two-sided 95 % quantile of Student's t with `BATCHES − 2` = 8 degrees of freedom.
pub const T_CRIT: f64 = 2.306;

/// A least-squares line: (slope per ms, change in percent of the mean, mean).
fn line(points: &[(f64, f64)]) -> (f64, f64, f64) {
    let n = points.len() as f64;
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let slope = if sxx > 0.0 { sxy / sxx } else { 0.0 }; // ms per ms
    let span = points.last().map_or(0.0, |p| p.0) - points.first().map_or(0.0, |p| p.0);
    let change_pct = if my > 0.0 {
        slope * span / my * 100.0
    } else {
        0.0
    };
    (slope, change_pct, my)
}

/// Standard error of the slope (per ms) of the line through [`BATCHES`] batch means;
/// None with fewer than two points per batch.
fn slope_se(points: &[(f64, f64)]) -> Option<f64> {
    let k = points.len() / BATCHES;
    if k < 2 {
        return None;
    }
    let q: Vec<(f64, f64)> = points
        .chunks_exact(k)
        .take(BATCHES)
        .map(|c| {
            let n = c.len() as f64;
            (
                c.iter().map(|p| p.0).sum::<f64>() / n,
                c.iter().map(|p| p.1).sum::<f64>() / n,
            )
        })
        .collect();
    let n = q.len() as f64;
    let mx = q.iter().map(|p| p.0).sum::<f64>() / n;
    let my = q.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = q.iter().map(|p| (p.0 - mx).powi(2)).sum();
    if sxx <= 0.0 {
        return None;
    }
    let slope = q.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum::<f64>() / sxx;
    let res: f64 = q
        .iter()
        .map(|p| (p.1 - my - slope * (p.0 - mx)).powi(2))
        .sum();
    Some((res / (n - 2.0) / sxx).sqrt())
}

/// The stationarity test: small change, or a slope the run cannot tell from 0.
fn stationary(slope: f64, change_pct: f64, se: Option<f64>) -> bool {
    change_pct.abs() <= STATIONARY_CHANGE_PCT || se.is_some_and(|se| slope.abs() <= T_CRIT * se)
}

impl Trend {
    /// The trend of `blocks` (points `(end_ms, mean_ms)`); None with fewer than four.
    pub fn fit(points: &[(f64, f64)]) -> Option<Trend> {
        if points.len() < 4 {
            return None;
        }
        let (slope, change_pct, _) = line(points);
        let se = slope_se(points);
        Some(Trend {
            blocks: points.len() as u64,
            slope_ms_per_s: slope * 1e3,
            change_pct,
            slope_se_ms_per_s: se.map_or(0.0, |s| s * 1e3),
            stationary: stationary(slope, change_pct, se),
            settle: Settle::find(points),
        })
    }
}

impl Settle {
    /// MSER over `points` (at least four kept).
    fn find(points: &[(f64, f64)]) -> Option<Settle> {
        let n = points.len();
        if n < 8 {
            return None;
        }
        // suffix sums give every truncation's variance in one pass; the cut is searched in
        // the first half only (a late cut would chase the last wobble of a short run)
        let half = n / 2;
        let (mut s1, mut s2) = (0.0, 0.0);
        let mut best = (f64::INFINITY, 0);
        for d in (0..n).rev() {
            s1 += points[d].1;
            s2 += points[d].1 * points[d].1;
            if d <= half {
                let m = (n - d) as f64;
                let ss = (s2 - s1 * s1 / m).max(0.0);
                let v = ss / (m * m);
                if v <= best.0 {
                    best = (v, d);
                }
            }
        }
        let d = best.1;
        let kept = &points[d..];
        let (slope, change_pct, mean) = line(kept);
        let se = slope_se(kept);
        Some(Settle {
            dropped_blocks: d as u64,
            from_ms: if d == 0 { 0.0 } else { points[d - 1].0 },
            mean_ms: mean,
            slope_ms_per_s: slope * 1e3,
            slope_se_ms_per_s: se.map_or(0.0, |s| s * 1e3),
            change_pct,
            stationary: stationary(slope, change_pct, se),
            reliable: d < half,
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

    /// A deterministic wobble in [-1, 1] (no generator needed).
    fn wobble(k: usize) -> f64 {
        ((k * 7919) % 101) as f64 / 50.0 - 1.0
    }

    #[test]
    fn a_transient_then_a_plateau_settles_where_the_plateau_starts() {
        // 40 blocks rising 2 -> 8 ms, then 60 flat at 8 ms ± 0.5: the whole run trends,
        // MSER drops about the rise and what follows is stationary
        let pts: Vec<(f64, f64)> = (0..100)
            .map(|k| {
                let y = if k < 40 { 2.0 + 0.15 * k as f64 } else { 8.0 };
                (k as f64 * 20.0 + 20.0, y + 0.5 * wobble(k))
            })
            .collect();
        let t = Trend::fit(&pts).unwrap();
        assert!(!t.stationary, "{t:?}");
        let s = t.settle.unwrap();
        assert!((35..=45).contains(&s.dropped_blocks), "{s:?}");
        assert!(s.reliable && s.stationary, "{s:?}");
        assert!((s.mean_ms - 8.0).abs() < 0.3, "{s:?}");
        assert_eq!(s.from_ms, pts[s.dropped_blocks as usize - 1].0);
    }

    #[test]
    fn noise_around_a_level_is_stationary_even_when_its_line_moves_over_ten_percent() {
        // 1.5 ms swinging ±0.4 ms over 110 blocks (slow wandering, as DFS's spread does)
        // plus scatter: the fitted line changes by over 10 % but within about one standard
        // error of its slope, so the run cannot tell it from a flat series
        let pts: Vec<(f64, f64)> = (0..200)
            .map(|k| {
                let swing = 0.4 * (std::f64::consts::TAU * k as f64 / 110.0).sin();
                (k as f64 * 20.0, 1.5 + swing + 0.1 * wobble(k * 13 + 5))
            })
            .collect();
        let t = Trend::fit(&pts).unwrap();
        assert!(t.change_pct.abs() > STATIONARY_CHANGE_PCT, "{t:?}");
        assert!(t.slope_se_ms_per_s > 0.0);
        assert!(t.stationary, "{t:?}");
        // a steady growth of the same size as the scatter over the run is not
        let grow: Vec<(f64, f64)> = pts
            .iter()
            .enumerate()
            .map(|(k, &(x, y))| (x, y + 1.5 * (k as f64 / 200.0).sqrt()))
            .collect();
        let t = Trend::fit(&grow).unwrap();
        assert!(!t.stationary, "{t:?}");
        assert!(
            t.slope_ms_per_s.abs() > T_CRIT * t.slope_se_ms_per_s,
            "{t:?}"
        );
    }
}
