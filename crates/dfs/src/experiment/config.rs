//! What the experiment is told ([`ExperimentConfig`], checked once by
//! [`ExperimentConfig::validate`]) and how it fails ([`ExperimentError`]).

use crate::report::ReportError;
use crate::sim::SimError;
use latlab_core::results::{Provenance, ResultFile};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Figure file format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FigureFormat {
    /// SVG.
    Svg,
    /// PNG.
    Png,
}

impl FigureFormat {
    /// The file extension.
    pub fn ext(self) -> &'static str {
        match self {
            FigureFormat::Svg => "svg",
            FigureFormat::Png => "png",
        }
    }
}

/// Intervals per node count unless told otherwise: the two warm-up intervals and more
/// than the 20 paced ones every DFS figure needs (DFS's proposals can start an interval
/// or two late).
pub const DEFAULT_INTERVALS: u64 = 24;

/// What the experiment runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExperimentConfig {
    /// Simulated node counts (half inputs, half computes).
    pub nodes: Vec<usize>,
    /// Intervals simulated per node count.
    pub intervals: u64,
    /// Time-slices per interval of the node-count sweep.
    pub ts_per_interval: u64,
    /// Intervals of the bandwidth-drop runs.
    pub drop_intervals: u64,
    /// Nodes of the bandwidth-drop runs.
    pub drop_nodes: usize,
    /// Whether to run the real MPI part.
    pub mpi: bool,
    /// MPI ranks of the real runs (half inputs, half computes).
    pub ranks: usize,
    /// Time-slices of the real MPI runs.
    pub mpi_time_slices: u64,
    /// Seed of the simulations.
    pub seed: u64,
    /// The packet-level Dragonfly fabric for every simulation (None: the fluid model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fabric: Option<crate::sim::fabric::FabricParams>,
    /// Figure format.
    pub format: FigureFormat,
    /// Simulations run at once (threads).
    #[serde(default = "one")]
    pub threads: usize,
    /// Node count of the sensitivity sweep (0: no sweep).
    #[serde(default)]
    pub sweep_nodes: usize,
}

fn one() -> usize {
    1
}

/// Why the experiment failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExperimentError {
    /// The configuration is rejected.
    #[error("{0}")]
    Config(String),
    /// A simulation's configuration is rejected.
    #[error(transparent)]
    Sim(#[from] SimError),
    /// A file could not be written or created.
    #[error("writing {}: {detail}", path.display())]
    Write {
        /// The file or directory.
        path: PathBuf,
        /// What went wrong.
        detail: String,
    },
    /// A result file just written could not be read back.
    #[error("reading {}: {detail}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        detail: String,
    },
    /// A figure could not be drawn.
    #[error("drawing {0}: {1}")]
    Figure(&'static str, latlab_core::doc::DrawError),
}

impl ExperimentConfig {
    /// Checks the configuration (once, before anything runs).
    ///
    /// # Errors
    /// [`ExperimentError::Config`] naming the setting.
    pub fn validate(&self) -> Result<(), ExperimentError> {
        let bad = |s: &str| Err(ExperimentError::Config(s.into()));
        let even = |n: usize| n >= 2 && n % 2 == 0;
        if !self.nodes.iter().all(|&n| even(n)) {
            return bad("--nodes: every count must be even and at least 2, e.g. 64,128");
        }
        if !even(self.drop_nodes) {
            return bad("--drop-nodes: need an even number of at least 2");
        }
        if self.sweep_nodes != 0 && !even(self.sweep_nodes) {
            return bad("--sweep-nodes: need an even number of at least 2, or 0 for no sweep");
        }
        if self.threads == 0 {
            return bad("--jobs must be at least 1");
        }
        if !even(self.ranks) {
            return bad("--ranks: need an even number of at least 2");
        }
        if self.ts_per_interval == 0 {
            return bad("--ts-per-interval must be at least 1");
        }
        if self.mpi && self.mpi_time_slices == 0 {
            return bad("--mpi-time-slices must be at least 1");
        }
        // the simulator's own size check, per node count (16 slots per input)
        let sweep = (self.sweep_nodes > 0).then_some(&self.sweep_nodes);
        for &n in self.nodes.iter().chain([&self.drop_nodes]).chain(sweep) {
            let half = (n / 2) as u128;
            if half * half * 16 > crate::sim::MAX_STATE_ENTRIES {
                return Err(ExperimentError::Config(format!(
                    "{n} nodes (--nodes, --drop-nodes, --sweep-nodes): {half} inputs × {half} computes × 16 slots exceed the simulator's {} ring entries; at most 8192 nodes",
                    crate::sim::MAX_STATE_ENTRIES
                )));
            }
            if half * u128::from(self.ts_per_interval) > crate::sim::MAX_STATE_ENTRIES {
                return Err(ExperimentError::Config(format!(
                    "--ts-per-interval {}: {half} inputs × {} records exceed the simulator's {}",
                    self.ts_per_interval,
                    self.ts_per_interval,
                    crate::sim::MAX_STATE_ENTRIES
                )));
            }
        }
        if self.intervals < 4 || self.drop_intervals < 30 {
            return bad("--intervals must be at least 4 and --drop-intervals at least 30");
        }
        if let Some(f) = self.fabric {
            let sweep = (self.sweep_nodes > 0).then_some(&self.sweep_nodes);
            for &n in self.nodes.iter().chain([&self.drop_nodes]).chain(sweep) {
                crate::sim::fabric::Dragonfly::new(f, n)
                    .map_err(|e| ExperimentError::Config(e.to_string()))?;
            }
        }
        Ok(())
    }

    /// The `config` of the `dfs.experiment` result.
    pub(super) fn result_config(&self) -> serde_json::Value {
        serde_json::json!({
            "nodes": self.nodes, "intervals": self.intervals, "ts_per_interval": self.ts_per_interval, "drop_intervals": self.drop_intervals,
            "mpi": self.mpi, "ranks": self.ranks, "mpi_time_slices": self.mpi_time_slices, "seed": self.seed,
            "network": self.fabric.map_or(serde_json::json!("fluid"), |f| serde_json::json!({"dragonfly": f})),
            "threads": self.threads, "sweep_nodes": self.sweep_nodes,
        })
    }
}

/// What the caller supplies besides the configuration.
pub struct Context<'a> {
    /// Recorded in every result file.
    pub argv: Vec<String>,
    /// Provenance of the simulations and the summary (host facts, a simulated timebase).
    pub provenance: &'a dyn Fn() -> Provenance,
    /// Progress lines (the caller decides whether to show them).
    pub progress: &'a dyn Fn(&str),
    /// Seconds since some fixed start (the caller's monotonic clock): the wall time of
    /// each simulation, for its events per second.
    pub elapsed: &'a (dyn Fn() -> f64 + Sync),
    /// Draws the figure files (the CLI passes `latlab-report`'s; this crate never draws).
    pub figures: &'a dyn latlab_core::doc::FigureSink,
}

/// Loads `p` and reads its data with `data`.
pub(super) fn read<T>(
    p: &Path,
    data: impl Fn(&ResultFile) -> Result<T, ReportError>,
) -> Result<T, ExperimentError> {
    let err = |detail: String| ExperimentError::Read {
        path: p.to_path_buf(),
        detail,
    };
    let r = ResultFile::load(p).map_err(|e| err(e.to_string()))?;
    data(&r).map_err(|e| err(e.to_string()))
}

pub(super) fn write_error(path: &Path, e: impl std::fmt::Display) -> ExperimentError {
    ExperimentError::Write {
        path: path.to_path_buf(),
        detail: e.to_string(),
    }
}
