//! Pure functions turning loaded `dfs.*` result files into the tables and series a report
//! needs (the paper's Figs. 6–9 and the summary table of `latlab experiment dfs`).

use crate::mpidata::{BenchData, RunData, BENCH_KIND, RUN_KIND};
use crate::params::Mode;
use crate::sim::result::RESULT_KIND as SIM_KIND;
use crate::sim::{FiveNum, SimData};
use latlab_core::results::ResultFile;
use serde::{Deserialize, Serialize};

/// Why a result file cannot be read as a DFS result.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReportError {
    /// Not a DFS result.
    #[error("result kind is '{0}', expected '{1}'")]
    Kind(String, &'static str),
    /// Its data does not match this version's structures.
    #[error("result data does not parse: {0}")]
    Data(#[from] serde_json::Error),
}

/// The [`SimData`] of a `dfs.sim` result.
pub fn sim_data(r: &ResultFile) -> Result<SimData, ReportError> {
    if r.kind != SIM_KIND {
        return Err(ReportError::Kind(r.kind.clone(), SIM_KIND));
    }
    Ok(serde_json::from_value(r.data.clone())?)
}

/// The [`RunData`] of a `dfs.run` result (MPI runtime).
pub fn run_data(r: &ResultFile) -> Result<RunData, ReportError> {
    if r.kind != RUN_KIND {
        return Err(ReportError::Kind(r.kind.clone(), RUN_KIND));
    }
    Ok(serde_json::from_value(r.data.clone())?)
}

/// The [`BenchData`] of a `dfs.bench` result.
pub fn bench_data(r: &ResultFile) -> Result<BenchData, ReportError> {
    if r.kind != BENCH_KIND {
        return Err(ReportError::Kind(r.kind.clone(), BENCH_KIND));
    }
    Ok(serde_json::from_value(r.data.clone())?)
}

/// Aggregate bandwidth of the benchmark at message size `size` (plain or Mix), GB/s: the
/// reference an MPI run with that contribution size is compared against.
pub fn bench_reference(b: &BenchData, size: u64, mix: bool) -> Option<f64> {
    b.rows
        .iter()
        .find(|r| r.size == size && r.mix == mix)
        .map(|r| r.aggregate_gbs)
}

/// The summary row of an MPI run; `reference_gbs` is the benchmark's aggregate bandwidth
/// (None: percent column is 0).
pub fn run_summary(d: &RunData, reference_gbs: Option<f64>) -> SummaryRow {
    SummaryRow {
        runtime: "mpi".into(),
        mode: d.config.mode,
        nodes: d.ranks,
        time_slices: d.time_slices,
        completion_ms: d.completion_ms,
        bandwidth_gbs: d.bandwidth_gbs,
        bandwidth_pct_of_reference: reference_gbs.map_or(0.0, |r| 100.0 * d.bandwidth_gbs / r),
        lost: d.lost,
        bad: d.compute.duplicates
            + d.compute.overruns
            + d.compute.misrouted
            + d.compute.checksum_failures,
    }
}

/// Compares two summary rows (best effort, DFS) of any runtime.
pub fn compare_rows(be: &SummaryRow, dfs: &SummaryRow, be_var: f64, dfs_var: f64) -> Comparison {
    let r = |a: f64, b: f64| if b > 0.0 { a / b } else { f64::INFINITY };
    Comparison {
        nodes: dfs.nodes,
        median_ratio: r(be.completion_ms.median, dfs.completion_ms.median),
        p90_ratio: r(be.completion_ms.p90, dfs.completion_ms.p90),
        variance_ratio: r(be_var, dfs_var),
        bandwidth_ratio: r(dfs.bandwidth_gbs, be.bandwidth_gbs),
    }
}

/// What the bandwidth-drop run shows (Fig. 8): mean proposed duration before the drop, the
/// peak proposal during or just after it, the last proposal, and the intervals after the
/// drop that carried a staged speed-up.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DropSummary {
    /// Mean proposed duration of the intervals before the drop (from interval 5), ms.
    pub before_ms: f64,
    /// Mean actual duration inside the drop window, ms.
    pub actual_in_drop_ms: f64,
    /// Largest proposed duration from the drop start to 3 intervals after it, ms.
    pub peak_ms: f64,
    /// Proposed duration of the last interval, ms.
    pub last_ms: f64,
    /// Intervals after the drop with a speed-up.
    pub speedups_after: Vec<u64>,
}

/// Summarises a DFS run with a drop in intervals `first..=last`.
pub fn drop_summary(d: &SimData, first: u64, last: u64) -> Option<DropSummary> {
    let rows = &d.intervals;
    let prop = |lo: u64, hi: u64| -> Vec<f64> {
        rows.iter()
            .filter(|r| r.index >= lo && r.index < hi)
            .filter_map(|r| r.proposed_ms)
            .collect()
    };
    let mean = |v: &[f64]| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
    let before = mean(&prop(5, first))?;
    let actual: Vec<f64> = rows
        .iter()
        .filter(|r| r.index > first && r.index <= last)
        .map(|r| r.actual_ms)
        .collect();
    Some(DropSummary {
        before_ms: before,
        actual_in_drop_ms: mean(&actual)?,
        peak_ms: prop(first, last + 4).into_iter().fold(0.0, f64::max),
        last_ms: rows.iter().rev().find_map(|r| r.proposed_ms)?,
        speedups_after: rows
            .iter()
            .filter(|r| r.index > last && r.speedup)
            .map(|r| r.index)
            .collect(),
    })
}

/// One row of the run summary table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SummaryRow {
    /// Where it ran ("sim" or "mpi").
    pub runtime: String,
    /// Best effort or DFS.
    pub mode: Mode,
    /// Nodes (inputs + computes).
    pub nodes: usize,
    /// Time-slices built.
    pub time_slices: u64,
    /// Completion duration after warm-up, ms.
    pub completion_ms: FiveNum,
    /// Aggregate bandwidth after warm-up, GB/s.
    pub bandwidth_gbs: f64,
    /// Bandwidth relative to the reference (nominal injection or micro-benchmark), percent.
    pub bandwidth_pct_of_reference: f64,
    /// Contributions lost (sent but not stored).
    pub lost: u64,
    /// Duplicates, overruns, misrouted and checksum failures together.
    pub bad: u64,
}

/// The summary row of a simulation.
pub fn sim_summary(d: &SimData) -> SummaryRow {
    // time-slices the FLESnet manager discarded were never sent
    let expected = (d.time_slices - d.discarded) * d.config.topology.inputs as u64;
    SummaryRow {
        runtime: "sim".into(),
        mode: d.config.mode,
        nodes: d.nodes,
        time_slices: d.time_slices,
        completion_ms: d.completion_ms,
        bandwidth_gbs: d.steady_bandwidth_gbs,
        bandwidth_pct_of_reference: 100.0 * d.steady_bandwidth_gbs / d.nominal_gbs,
        lost: expected.saturating_sub(d.compute.stored),
        bad: d.compute.duplicates
            + d.compute.overruns
            + d.compute.misrouted
            + d.compute.checksum_failures,
    }
}

/// Best effort against DFS at one node count.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// Nodes.
    pub nodes: usize,
    /// Median completion duration, best effort / DFS.
    pub median_ratio: f64,
    /// 90th-percentile completion duration, best effort / DFS.
    pub p90_ratio: f64,
    /// Completion-duration variance, best effort / DFS.
    pub variance_ratio: f64,
    /// Aggregate bandwidth, DFS / best effort.
    pub bandwidth_ratio: f64,
}

/// Compares a best-effort and a DFS summary (same node count).
pub fn compare(be: &SimData, dfs: &SimData) -> Comparison {
    let r = |a: f64, b: f64| if b > 0.0 { a / b } else { f64::INFINITY };
    Comparison {
        nodes: dfs.nodes,
        median_ratio: r(be.completion_ms.median, dfs.completion_ms.median),
        p90_ratio: r(be.completion_ms.p90, dfs.completion_ms.p90),
        variance_ratio: r(be.completion_var_ms2, dfs.completion_var_ms2),
        bandwidth_ratio: r(dfs.steady_bandwidth_gbs, be.steady_bandwidth_gbs),
    }
}

/// Fig. 8 series: (interval, proposed ms, actual ms, speed-up, drop active).
pub fn interval_series(d: &SimData) -> Vec<(u64, Option<f64>, f64, bool, bool)> {
    d.intervals
        .iter()
        .map(|r| (r.index, r.proposed_ms, r.actual_ms, r.speedup, r.dropped))
        .collect()
}

/// Fig. 9 time series: (time ms, mean fill %, median fill %, max fill %).
pub fn fill_series(d: &SimData) -> Vec<(f64, f64, f64, f64)> {
    d.fill
        .iter()
        .map(|s| (s.t_ms, s.mean, s.fill.median, s.fill.max))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::{self, SimConfig};
    use latlab_core::results::Provenance;

    fn provenance() -> Provenance {
        Provenance {
            started_utc: "2026-01-01T00:00:00Z".into(),
            ..crate::sim::result::test_provenance()
        }
    }

    #[test]
    fn round_trips_through_a_result_file_and_compares() {
        let mut cfg = SimConfig::new(2, 2, Mode::BestEffort);
        cfg.time_slices = 200;
        cfg.params.ts_per_intvl = 20;
        let be = sim::run(&cfg).unwrap();
        cfg.mode = Mode::Dfs;
        let dfs = sim::run(&cfg).unwrap();
        let rf = crate::sim::result::to_result(&be, vec!["x".into()], provenance());
        let text = rf.to_json();
        let back = ResultFile::from_json(&text, std::path::Path::new("x.json")).unwrap();
        let d = sim_data(&back).unwrap();
        // (serde_json reads a float back to the last bit only with float_roundtrip: compare
        // with the data read from its own JSON text)
        let same: SimData =
            serde_json::from_str(&serde_json::to_string(&be.data).unwrap()).unwrap();
        assert_eq!(d, same);
        let row = sim_summary(&d);
        assert_eq!((row.nodes, row.lost, row.bad), (4, 0, 0));
        assert_eq!(
            row.completion_ms.count,
            back.histogram("completion").unwrap().unwrap().count()
        );
        let c = compare(&be.data, &dfs.data);
        assert!(
            (c.median_ratio - be.data.completion_ms.median / dfs.data.completion_ms.median).abs()
                < 1e-12
        );
        assert_eq!(interval_series(&dfs.data).len(), 10);
        assert!(!fill_series(&dfs.data).is_empty());
        let mut wrong = back.clone();
        wrong.kind = "host.clocks".into();
        assert!(matches!(sim_data(&wrong), Err(ReportError::Kind(..))));
    }
}
