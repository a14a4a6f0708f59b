//! What a simulation is told: the network and node model, slow nodes, bandwidth drops,
//! DDE faults ([`SimConfig`]), and its check ([`SimConfig::validate`]).

use super::fabric::{Dragonfly, FabricError, FabricParams};
use super::noise::{NoiseError, NoiseTrace};
use crate::params::{in_range, DfsParams, Mode, ParamError, Topology, MAX_DRIFT_PPM};
use crate::tsm::TsmParams;
use serde::{Deserialize, Serialize};

/// Network and node model parameters.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct NetModel {
    /// Injection bandwidth per node in GB/s (10⁹ bytes per second).
    pub inj_gbs: f64,
    /// Ejection bandwidth per node in GB/s.
    pub ej_gbs: f64,
    /// One-way latency in ns.
    pub latency_ns: i64,
    /// Mean of the exponential jitter added to every message's latency, ns.
    pub jitter_ns: f64,
    /// Writes an input keeps in flight at most.
    pub max_inflight: u32,
    /// Mean processing time of a complete time-slice before its slots are released, ns.
    pub processing_ns: f64,
    /// Bandwidth noise amplitude (0..1): port bandwidth redrawn in [1 − noise, 1].
    pub noise: f64,
    /// How often the noise is redrawn, ns (0: never).
    pub noise_period_ns: i64,
    /// Largest clock offset between nodes, ns (drawn uniformly in ±).
    pub max_clock_offset_ns: i64,
    /// Largest clock drift, parts per million (drawn uniformly in ±).
    pub max_drift_ppm: f64,
}

impl Default for NetModel {
    /// Loosely an XC40 Aries node under many-to-many load: ~4 GB/s per sender (Fig. 4 of the
    /// paper, the mpi-benchmarks figures in the design notes), microsecond latency.
    fn default() -> Self {
        NetModel {
            inj_gbs: 4.0,
            ej_gbs: 4.0,
            latency_ns: 2_000,
            jitter_ns: 2_000.0,
            max_inflight: 8,
            processing_ns: 20_000.0,
            noise: 0.2,
            noise_period_ns: 200_000,
            max_clock_offset_ns: 1_000_000,
            max_drift_ppm: 10.0,
        }
    }
}

/// Which ports a slow node affects.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// An input node (its injection port).
    Input,
    /// A compute node (its ejection port).
    Compute,
}

/// A node whose port runs at a fraction of nominal bandwidth for the whole run.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SlowNode {
    /// Input or compute node.
    pub role: Role,
    /// Its index among the inputs or computes.
    pub index: usize,
    /// Bandwidth factor (0 < factor ≤ 1).
    pub factor: f64,
}

/// When a bandwidth drop applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DropWindow {
    /// From the start of interval `first` to the end of interval `last` (as input 0 sees
    /// them).
    Intervals {
        /// First interval affected.
        first: u64,
        /// Last interval affected.
        last: u64,
    },
    /// Between two simulated times, ns.
    Time {
        /// Start, ns.
        from_ns: i64,
        /// End, ns.
        to_ns: i64,
    },
}

/// A temporary drop of every port's bandwidth.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct BandwidthDrop {
    /// When.
    pub window: DropWindow,
    /// Remaining bandwidth fraction (0.75 = a 25 % drop).
    pub factor: f64,
}

/// A DDE replica failure (and optional restart) at simulated times.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DdeFault {
    /// Replica index (compute node index).
    pub replica: usize,
    /// Time it stops, ns.
    pub kill_ns: i64,
    /// Time a fresh replica starts in its place, ns.
    pub restart_ns: Option<i64>,
}

/// The simulator's time-slices per interval unless told otherwise (Table I has 10,000;
/// see docs/dfs.md).
pub const SIM_DEFAULT_TS_PER_INTERVAL: u64 = 1_000;

/// Everything a simulation run needs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SimConfig {
    /// Node counts and buffer sizes.
    pub topology: Topology,
    /// DFS parameters.
    pub params: DfsParams,
    /// Best effort or DFS.
    pub mode: Mode,
    /// Time-slices to build (rounded up to whole rounds).
    pub time_slices: u64,
    /// Network and node model.
    pub net: NetModel,
    /// Slow nodes.
    pub slow: Vec<SlowNode>,
    /// Bandwidth drops.
    pub drops: Vec<BandwidthDrop>,
    /// DDE replicas (on compute nodes 0..n); 0 = one on every compute node.
    pub dde_replicas: usize,
    /// DDE failures.
    pub dde_faults: Vec<DdeFault>,
    /// Buffer-fill sampling period, ns (0: about 400 samples over the expected run).
    pub sample_ns: i64,
    /// Seed of every random draw.
    pub seed: u64,
    /// The packet-level Dragonfly fabric in place of the fluid ports (None: fluid).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fabric: Option<FabricParams>,
    /// Node stalls drawn from a measured gap trace, per node (None: nodes never stall).
    #[serde(default)]
    pub stalls: Option<NoiseTrace>,
    /// Persistent speed differences: each node's port bandwidth is multiplied by a factor
    /// drawn once, uniformly in [1 − spread, 1] (0: all nodes equal).
    #[serde(default)]
    pub speed_spread: f64,
    /// The FLESnet policy's parameters ([`Mode::Flesnet`]).
    #[serde(default)]
    pub tsm: TsmParams,
}

/// Largest accepted `--speed-spread`.
pub const MAX_SPEED_SPREAD: f64 = 0.9;
/// Accepted `--offered-load` range (fraction of the nominal injection bandwidth).
pub const OFFERED_LOAD_RANGE: (f64, f64) = (0.01, 2.0);

impl SimConfig {
    /// Defaults for `inputs` × `computes` in `mode`: Table I parameters except an interval
    /// of 1,000 time-slices (see docs/dfs.md), 64 KiB mts, 16 slots per input.
    pub fn new(inputs: usize, computes: usize, mode: Mode) -> SimConfig {
        SimConfig {
            topology: Topology {
                inputs,
                computes,
                ..Topology::default()
            },
            params: DfsParams {
                ts_per_intvl: SIM_DEFAULT_TS_PER_INTERVAL,
                ..DfsParams::default()
            },
            mode,
            time_slices: 30_000,
            net: NetModel::default(),
            slow: Vec::new(),
            drops: Vec::new(),
            dde_replicas: 0,
            dde_faults: Vec::new(),
            sample_ns: 0,
            seed: 1,
            fabric: None,
            stalls: Some(NoiseTrace::measured_default()),
            speed_spread: 0.0,
            tsm: TsmParams::default(),
        }
    }

    /// Checks the configuration.
    pub fn validate(&self) -> Result<(), SimError> {
        self.topology.validate()?;
        self.params.validate()?;
        let n = &self.net;
        in_range("--drift-ppm", n.max_drift_ppm, 0.0, MAX_DRIFT_PPM)?;
        in_range("--speed-spread", self.speed_spread, 0.0, MAX_SPEED_SPREAD)?;
        let (lo, hi) = OFFERED_LOAD_RANGE;
        in_range("--offered-load", self.tsm.offered_load, lo, hi)?;
        if self.tsm.max_in_flight == 0 {
            return Err(ParamError::Zero("--tsm-max-in-flight").into());
        }
        if let Some(t) = &self.stalls {
            t.validate()?;
        }
        if n.max_clock_offset_ns < 0 || n.noise_period_ns < 0 {
            return Err(SimError::Invalid(
                "clock offset and noise period must be ≥ 0".into(),
            ));
        }
        if !(n.inj_gbs > 0.0 && n.ej_gbs > 0.0 && n.inj_gbs.is_finite() && n.ej_gbs.is_finite()) {
            return Err(SimError::Invalid(
                "bandwidths must be positive and finite".into(),
            ));
        }
        if n.max_inflight == 0 {
            return Err(SimError::Invalid(
                "max in-flight writes must be at least 1".into(),
            ));
        }
        if !(0.0..1.0).contains(&n.noise) {
            return Err(SimError::Invalid("noise must be in [0, 1)".into()));
        }
        if n.latency_ns < 0
            || !(n.jitter_ns >= 0.0 && n.jitter_ns.is_finite())
            || !(n.processing_ns >= 0.0 && n.processing_ns.is_finite())
        {
            return Err(SimError::Invalid(
                "latency, jitter and processing must be finite and ≥ 0".into(),
            ));
        }
        if self.time_slices == 0 {
            return Err(SimError::Invalid("time-slices must be at least 1".into()));
        }
        for s in &self.slow {
            let max = match s.role {
                Role::Input => self.topology.inputs,
                Role::Compute => self.topology.computes,
            };
            if s.index >= max || !(s.factor > 0.0 && s.factor <= 1.0) {
                return Err(SimError::Invalid(format!(
                    "slow node {:?} {} factor {}: index must be < {max}, factor in (0, 1]",
                    s.role, s.index, s.factor
                )));
            }
        }
        for f in &self.dde_faults {
            if f.replica >= self.replicas() {
                return Err(SimError::Invalid(format!(
                    "DDE replica {} does not exist (replicas 0..{})",
                    f.replica,
                    self.replicas()
                )));
            }
        }
        for d in &self.drops {
            if !(d.factor > 0.0 && d.factor <= 1.0) {
                return Err(SimError::Invalid(format!(
                    "bandwidth drop factor {} must be in (0, 1]",
                    d.factor
                )));
            }
        }
        if let Some(f) = self.fabric {
            Dragonfly::new(f, self.topology.inputs + self.topology.computes)?;
        }
        Ok(())
    }

    pub(crate) fn replicas(&self) -> usize {
        match self.dde_replicas {
            0 => self.topology.computes,
            n => n.min(self.topology.computes),
        }
    }

    /// Total time-slices actually built (whole rounds).
    pub fn total_ts(&self) -> u64 {
        let c = self.topology.computes as u64;
        self.time_slices.div_ceil(c) * c
    }
}

/// Why a simulation cannot run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SimError {
    /// A parameter is out of range.
    #[error(transparent)]
    Param(#[from] ParamError),
    /// The noise trace is unusable.
    #[error(transparent)]
    Noise(#[from] NoiseError),
    /// Any other invalid setting.
    #[error("invalid simulation setting: {0}")]
    Invalid(String),
    /// The Dragonfly fabric cannot be built.
    #[error(transparent)]
    Fabric(#[from] FabricError),
}
