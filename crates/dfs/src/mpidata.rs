//! Configuration and data of the MPI runtime and benchmark result files (`dfs.run`,
//! `dfs.bench`), compiled with or without the `mpi` feature so that reports can read them.

use crate::compute::ComputeCounters;
use crate::dde::DdeCounters;
use crate::ie::IeCounters;
use crate::model::HEADER_BYTES;
use crate::params::{DfsParams, Mode, ParamError, Topology};
use crate::sim::{FillSample, FiveNum, IntervalRow};
use serde::{Deserialize, Serialize};

/// Result kind of `latlab dfs run`.
pub const RUN_KIND: &str = "dfs.run";
/// Result kind of `latlab dfs bench`.
pub const BENCH_KIND: &str = "dfs.bench";

/// What moves the data of `dfs run` and `dfs bench`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Transport {
    /// MPI one-sided windows (`MPI_Put` + `MPI_Win_flush`) and two-sided MPI messages.
    #[default]
    Mpi,
    /// libfabric (OFI): `fi_write` into registered memory and `fi_send` messages; MPI
    /// only launches the ranks and exchanges addresses and keys.
    Ofi,
}

impl Transport {
    /// `mpi` or `ofi`.
    pub fn name(self) -> &'static str {
        match self {
            Transport::Mpi => "mpi",
            Transport::Ofi => "ofi",
        }
    }
}

/// The transport of one run: which one, and for libfabric the provider (asked for, or
/// the one rank 0 resolved and every rank opens).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TransportConfig {
    /// MPI or libfabric.
    pub transport: Transport,
    /// libfabric provider (`tcp;ofi_rxm`, `shm`, `sockets`, ...); `None`: MPI, or
    /// libfabric's first choice (which honours `FI_PROVIDER`).
    pub provider: Option<String>,
}

/// Everything an MPI run needs (resolved on rank 0, broadcast to all).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunConfig {
    /// Node counts and buffer sizes.
    pub topology: Topology,
    /// DFS parameters.
    pub params: DfsParams,
    /// Best effort or DFS.
    pub mode: Mode,
    /// Time-slices to build (rounded up to whole rounds).
    pub time_slices: u64,
    /// DDE replicas on compute nodes 0..n (0: every compute node).
    pub dde_replicas: usize,
    /// Stop DDE replica `.0` once it receives a report of interval `.1`.
    pub kill_dde: Option<(usize, u64)>,
    /// Injected clock offset per rank, ns (rank r's clock runs `r × skew` ahead).
    pub clock_skew_ns: i64,
    /// Injected drift per rank in ppm (rank r drifts `r × drift` ppm).
    pub drift_ppm: f64,
    /// Buffer-fill sampling period, ns.
    pub sample_ns: i64,
}

/// The MPI runtime's contribution size unless told otherwise: 16 KiB (a workstation's
/// memory, not an XC40's).
pub const RUN_DEFAULT_MTS_BYTES: u64 = 16 * 1024;
/// The MPI runtime's time-slices per interval unless told otherwise.
pub const RUN_DEFAULT_TS_PER_INTERVAL: u64 = 500;
/// The MPI runtime's time-slices unless told otherwise.
pub const RUN_DEFAULT_TIME_SLICES: u64 = 10_000;
/// The shortest buffer-fill sampling period of the MPI runtime, ns.
pub const RUN_MIN_SAMPLE_NS: i64 = 100_000;
/// The benchmark's fewest rounds per size unless told otherwise.
pub const BENCH_DEFAULT_MIN_ROUNDS: u64 = 20;

impl RunConfig {
    /// The runtime's defaults for `inputs` × `computes` in `mode`: Table I parameters
    /// except [`RUN_DEFAULT_TS_PER_INTERVAL`] and [`RUN_DEFAULT_MTS_BYTES`],
    /// [`RUN_DEFAULT_TIME_SLICES`], one DDE replica per compute node, no injected faults or
    /// clock errors, buffer fill sampled every 5 ms.
    pub fn new(inputs: usize, computes: usize, mode: Mode) -> RunConfig {
        RunConfig {
            topology: Topology {
                inputs,
                computes,
                mts_bytes: RUN_DEFAULT_MTS_BYTES,
                ..Topology::default()
            },
            params: DfsParams {
                ts_per_intvl: RUN_DEFAULT_TS_PER_INTERVAL,
                ..DfsParams::default()
            },
            mode,
            time_slices: RUN_DEFAULT_TIME_SLICES,
            dde_replicas: 0,
            kill_dde: None,
            clock_skew_ns: 0,
            drift_ppm: 0.0,
            sample_ns: 5_000_000,
        }
    }

    /// Checks sizes, the time-slice count, the injected drift and DFS parameters (once, on
    /// rank 0, before the run starts).
    pub fn validate(&self) -> Result<(), ParamError> {
        self.topology.validate()?;
        if self.mode == crate::Mode::Flesnet {
            return Err(ParamError::Unsupported(
                "--mode flesnet: the time-slice manager runs in the simulator only (latlab dfs sim)",
            ));
        }
        if self.time_slices == 0 {
            return Err(ParamError::Zero("--time-slices"));
        }
        crate::params::in_range(
            "--drift-ppm",
            self.drift_ppm,
            -crate::params::MAX_DRIFT_PPM,
            crate::params::MAX_DRIFT_PPM,
        )?;
        self.params.validate()
    }

    /// Total time-slices (whole rounds).
    pub fn total_ts(&self) -> u64 {
        let c = self.topology.computes as u64;
        self.time_slices.div_ceil(c) * c
    }

    /// DDE replicas actually run.
    pub fn replicas(&self) -> usize {
        match self.dde_replicas {
            0 => self.topology.computes,
            n => n.min(self.topology.computes),
        }
    }

    /// Bytes of one ring slot (header + mts).
    pub fn slot_bytes(&self) -> usize {
        HEADER_BYTES + self.topology.mts_bytes as usize
    }
}

/// What an MPI run reports (the `data` of a `dfs.run` result).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunData {
    /// The configuration.
    pub config: RunConfig,
    /// MPI ranks.
    pub ranks: usize,
    /// Time-slices built.
    pub time_slices: u64,
    /// Warm-up time-slices excluded from the completion statistics.
    pub warmup_ts: u64,
    /// Completion duration after warm-up, ms.
    pub completion_ms: FiveNum,
    /// Its variance, ms².
    pub completion_var_ms2: f64,
    /// Aggregate bandwidth into the compute nodes, GB/s (first send to last arrival).
    pub bandwidth_gbs: f64,
    /// Wall duration of the data phase, ms.
    pub duration_ms: f64,
    /// Per interval (DFS).
    pub intervals: Vec<IntervalRow>,
    /// Buffer fill over time.
    pub fill: Vec<FillSample>,
    /// Compute counters, summed.
    pub compute: ComputeCounters,
    /// Input-engine counters, summed.
    pub ie: IeCounters,
    /// DDE counters, summed over replicas.
    pub dde: DdeCounters,
    /// DDE replicas stopped during the run.
    pub dde_killed: usize,
    /// Contributions sent.
    pub sent: u64,
    /// Contributions expected (time-slices × inputs).
    pub expected: u64,
    /// Contributions lost (expected − stored).
    pub lost: u64,
    /// Whether every time-slice completed with every checksum verified and nothing lost,
    /// duplicated, overrun or misrouted.
    pub verified: bool,
    /// What moved the data (files written before the libfabric transport: `mpi`).
    #[serde(default)]
    pub transport: Transport,
    /// The libfabric provider that moved it (transport `ofi` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
}

/// Benchmark configuration (resolved on rank 0, broadcast).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BenchConfig {
    /// Message sizes in bytes.
    pub sizes: Vec<u64>,
    /// Bytes each sender should move per size (sets the number of rounds).
    pub bytes_per_size: u64,
    /// At least this many rounds per size.
    pub min_rounds: u64,
    /// Also run the Mix variant.
    pub mix: bool,
}

impl BenchConfig {
    /// Checks that there is something to measure.
    pub fn validate(&self) -> Result<(), String> {
        if self.sizes.is_empty() {
            return Err("sizes: give at least one size, e.g. 4K,64K".into());
        }
        Ok(())
    }
}

/// One size (and variant) of the benchmark.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BenchRow {
    /// Message size, bytes.
    pub size: u64,
    /// Mix variant (small messages added).
    pub mix: bool,
    /// Rounds per sender.
    pub rounds: u64,
    /// Mean round duration over senders, µs.
    pub round_us_mean: f64,
    /// Round durations of all senders, µs (min, p10, median, p90, max).
    pub round_us: FiveNum,
    /// Bandwidth per sender (big messages only), GB/s: mean, min and max over senders.
    pub bw_per_sender_gbs: (f64, f64, f64),
    /// Aggregate bandwidth (sum over senders), GB/s.
    pub aggregate_gbs: f64,
}

/// The data of a `dfs.bench` result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BenchData {
    /// Configuration.
    pub config: BenchConfig,
    /// Senders.
    pub senders: usize,
    /// Receivers.
    pub receivers: usize,
    /// One row per size and variant.
    pub rows: Vec<BenchRow>,
    /// What moved the data (files written before the libfabric transport: `mpi`).
    #[serde(default)]
    pub transport: Transport,
    /// The libfabric provider that moved it (transport `ofi` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
}
