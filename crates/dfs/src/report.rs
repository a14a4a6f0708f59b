//! Pure functions turning loaded `dfs.*` result files into the tables and series a report
//! needs (the paper's Figs. 6–9 and the summary table of `latlab experiment dfs`).

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
    let expected = d.time_slices * d.config.topology.inputs as u64;
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
    use latlab_core::results::{Provenance, Timebase};

    fn provenance() -> Provenance {
        Provenance {
            host: Default::default(),
            timebase: Timebase {
                source: "simulated".into(),
                fallback_reason: None,
                tsc: Default::default(),
            },
            threads: vec![],
            memory_locked: false,
            started_utc: "2026-01-01T00:00:00Z".into(),
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
        assert_eq!(d, be.data);
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
