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
    /// RDMA writes an input's NIC keeps outstanding at most (FLESnet's
    /// `max_pending_write_requests`); a write completes at the sender's NIC, not when the
    /// compute node has seen it. Not the credits: those are the ring slots.
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
    /// A warm start: each input starts at a time drawn once, uniformly in
    /// [0, start_spread_ns], instead of all at 0, so the run begins with lags between the
    /// inputs that a lockstep start builds only over tens of simulated seconds (0: all
    /// start together; docs/dfs.md, "Warm start").
    #[serde(default)]
    pub start_spread_ns: i64,
}

/// Longest accepted message latency, mean jitter and mean processing time, ns (1 s): a
/// simulated run advances through every noise period and stall, so an hour of latency
/// would be billions of events before the first time-slice completes.
pub const MAX_DELAY_NS: i64 = 1_000_000_000;
/// Shortest accepted noise period when there is noise, ns (1 µs): shorter periods are
/// events, not a model of anything, and a 1-ns period never lets the run advance.
pub const MIN_NOISE_PERIOD_NS: i64 = 1_000;
/// Most per-run state entries accepted (inputs × computes × slots, and inputs × time-slices
/// per interval): 2²⁸, a few GiB at most; beyond it the allocation alone fails (an abort,
/// not an error line).
pub const MAX_STATE_ENTRIES: u128 = 1 << 28;

/// Largest accepted `--start-spread`, ns (10 s).
pub const MAX_START_SPREAD_NS: i64 = 10_000_000_000;

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
            start_spread_ns: 0,
        }
    }

    /// Checks the configuration.
    pub fn validate(&self) -> Result<(), SimError> {
        self.topology.validate()?;
        self.params.validate()?;
        let n = &self.net;
        in_range("--drift-ppm", n.max_drift_ppm, 0.0, MAX_DRIFT_PPM)?;
        in_range("--speed-spread", self.speed_spread, 0.0, MAX_SPEED_SPREAD)?;
        if !(0..=MAX_START_SPREAD_NS).contains(&self.start_spread_ns) {
            return Err(SimError::Invalid(format!(
                "--start-spread {} ns is not in 0..=10s, e.g. 65ms",
                self.start_spread_ns
            )));
        }
        let (lo, hi) = OFFERED_LOAD_RANGE;
        in_range("--offered-load", self.tsm.offered_load, lo, hi)?;
        if self.tsm.max_in_flight == 0 {
            return Err(ParamError::Zero("--tsm-max-in-flight").into());
        }
        if let Some(t) = &self.stalls {
            t.validate()?;
        }
        self.validate_net()?;
        self.validate_size()?;
        if self.time_slices == 0 {
            return Err(SimError::Invalid("--time-slices must be at least 1".into()));
        }
        let replicas_max = self.topology.computes;
        if self.dde_replicas > replicas_max {
            return Err(SimError::Invalid(format!(
                "--dde-replicas {}: at most one per compute node (0..={replicas_max}; 0: every compute node)",
                self.dde_replicas
            )));
        }
        for s in &self.slow {
            let (role, max) = match s.role {
                Role::Input => ("input", self.topology.inputs),
                Role::Compute => ("compute", self.topology.computes),
            };
            if s.index >= max || !(s.factor > 0.0 && s.factor <= 1.0) {
                return Err(SimError::Invalid(format!(
                    "--slow {role}:{}:{}: the index must be below {max} and the factor in (0, 1], e.g. input:3:0.5",
                    s.index, s.factor
                )));
            }
        }
        for f in &self.dde_faults {
            if f.replica >= self.replicas() {
                return Err(SimError::Invalid(format!(
                    "--kill-dde {}: no such DDE replica (replicas 0..{})",
                    f.replica,
                    self.replicas()
                )));
            }
        }
        for d in &self.drops {
            if !(d.factor > 0.0 && d.factor <= 1.0) {
                return Err(SimError::Invalid(format!(
                    "--drop: factor {} must be in (0, 1], e.g. 15-25:0.75",
                    d.factor
                )));
            }
        }
        if let Some(f) = self.fabric {
            Dragonfly::new(f, self.topology.inputs + self.topology.computes)?;
        }
        Ok(())
    }

    /// The network model's numbers: positive finite bandwidths, delays in 0..=1 s, a noise
    /// amplitude in [0, 1) redrawn at least 1 µs apart.
    fn validate_net(&self) -> Result<(), SimError> {
        let n = &self.net;
        let bad = |s: String| Err(SimError::Invalid(s));
        if !(n.inj_gbs > 0.0 && n.ej_gbs > 0.0 && n.inj_gbs.is_finite() && n.ej_gbs.is_finite()) {
            return bad("--bandwidth must be positive and finite, e.g. 4".into());
        }
        if n.max_inflight == 0 {
            return bad("--max-inflight must be at least 1".into());
        }
        if !(0.0..1.0).contains(&n.noise) {
            return bad(format!("--noise {} must be in [0, 1), e.g. 0.2", n.noise));
        }
        let max = MAX_DELAY_NS as f64;
        for (flag, v) in [
            ("--latency", n.latency_ns as f64),
            ("--jitter", n.jitter_ns),
            ("--processing", n.processing_ns),
        ] {
            if !(v.is_finite() && (0.0..=max).contains(&v)) {
                return bad(format!("{flag}: {v} ns is not in 0..=1s, e.g. 2us"));
            }
        }
        if n.max_clock_offset_ns < 0 {
            return bad("--clock-offset must be ≥ 0".into());
        }
        if n.noise_period_ns < 0
            || n.noise > 0.0 && n.noise_period_ns > 0 && n.noise_period_ns < MIN_NOISE_PERIOD_NS
        {
            return bad(format!(
                "--noise-period {} ns: must be 0 (never redrawn) or at least 1us, e.g. 200us",
                n.noise_period_ns
            ));
        }
        Ok(())
    }

    /// The state the run allocates must fit: inputs × computes × slots (the compute nodes'
    /// rings) and inputs × time-slices per interval (the input engines' interval records).
    fn validate_size(&self) -> Result<(), SimError> {
        let t = &self.topology;
        let rings = t.inputs as u128 * t.computes as u128 * u128::from(t.slots_per_input);
        if rings > MAX_STATE_ENTRIES {
            return Err(SimError::Invalid(format!(
                "{} inputs × {} computes × {} slots = {rings} ring entries: at most {MAX_STATE_ENTRIES} fit (lower --nodes/--inputs/--computes or --slots)",
                t.inputs, t.computes, t.slots_per_input
            )));
        }
        let records = t.inputs as u128 * u128::from(self.params.ts_per_intvl);
        if records > MAX_STATE_ENTRIES {
            return Err(SimError::Invalid(format!(
                "--ts-per-interval {}: {} inputs × {} = {records} records, at most {MAX_STATE_ENTRIES} fit",
                self.params.ts_per_intvl, t.inputs, self.params.ts_per_intvl
            )));
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

#[cfg(test)]
mod tests {
    use super::*;

    fn invalid(f: impl FnOnce(&mut SimConfig)) -> String {
        let mut c = SimConfig::new(4, 4, Mode::Dfs);
        f(&mut c);
        match c.validate() {
            Err(e) => e.to_string(),
            Ok(()) => panic!("accepted {c:?}"),
        }
    }

    #[test]
    fn every_model_number_is_checked_and_named_by_its_flag() {
        assert!(SimConfig::new(4, 4, Mode::Dfs).validate().is_ok());
        assert!(invalid(|c| c.net.max_drift_ppm = f64::NAN).contains("--drift-ppm"));
        assert!(invalid(|c| c.net.inj_gbs = f64::NAN).contains("--bandwidth"));
        assert!(invalid(|c| c.net.noise = f64::NAN).contains("--noise"));
        assert!(invalid(|c| c.net.jitter_ns = f64::INFINITY).contains("--jitter"));
        assert!(invalid(|c| c.net.processing_ns = -1.0).contains("--processing"));
        assert!(invalid(|c| c.net.latency_ns = MAX_DELAY_NS + 1).contains("--latency"));
        assert!(invalid(|c| c.net.noise_period_ns = 10).contains("--noise-period"));
        assert!(invalid(|c| c.net.max_clock_offset_ns = -1).contains("--clock-offset"));
        assert!(invalid(|c| c.dde_replicas = 5).contains("--dde-replicas"));
        assert!(invalid(|c| c.topology.slots_per_input = u32::MAX).contains("ring entries"));
        assert!(invalid(|c| c.params.ts_per_intvl = u64::MAX).contains("--ts-per-interval"));
        assert!(invalid(|c| c.speed_spread = f64::NAN).contains("--speed-spread"));
        assert!(invalid(|c| c.start_spread_ns = -1).contains("--start-spread"));
        assert!(invalid(|c| c.start_spread_ns = MAX_START_SPREAD_NS + 1).contains("--start-spread"));
        assert!(invalid(|c| c.tsm.offered_load = -1.0).contains("--offered-load"));
        assert!(invalid(|c| c.slow.push(SlowNode {
            role: Role::Compute,
            index: 0,
            factor: f64::NAN
        }))
        .contains("--slow compute:0:NaN"));
        assert!(invalid(|c| c.drops.push(BandwidthDrop {
            window: DropWindow::Intervals { first: 1, last: 2 },
            factor: 0.0
        }))
        .contains("--drop"));
        // noise 0 with a 1-ns period redraws nothing: accepted
        let mut c = SimConfig::new(4, 4, Mode::Dfs);
        c.net.noise = 0.0;
        c.net.noise_period_ns = 1;
        assert!(c.validate().is_ok());
    }
}
