//! `latlab dfs …` and `latlab experiment dfs` command-line definitions, and their
//! resolution into the library's configurations (which the library checks).

use super::common::{duration_arg, number_in, OutputArgs};
use crate::exit::usage;
use clap::{Args, Subcommand, ValueEnum};
use latlab_core::units::Nanos;
use latlab_dfs::experiment::{ExperimentConfig, FigureFormat, DEFAULT_INTERVALS};
use latlab_dfs::mpidata::BENCH_DEFAULT_MIN_ROUNDS;
use latlab_dfs::params::MAX_DRIFT_PPM;
use latlab_dfs::params::{DfsParams, SsuCriterion, Topology, DEFAULT_MTS_BYTES};
use latlab_dfs::sim::fabric::{FabricParams, Routing};
use latlab_dfs::sim::{
    NetModel, NoiseTrace, SimConfig, MAX_SPEED_SPREAD, OFFERED_LOAD_RANGE,
    SIM_DEFAULT_TS_PER_INTERVAL,
};
use latlab_dfs::tsm::TsmParams;
use latlab_dfs::Mode;
use std::path::PathBuf;
#[cfg(feature = "mpi")]
use {
    latlab_dfs::mpibench::BenchConfig,
    latlab_dfs::mpidata::{
        RUN_DEFAULT_MTS_BYTES, RUN_DEFAULT_TIME_SLICES, RUN_DEFAULT_TS_PER_INTERVAL,
        RUN_MIN_SAMPLE_NS,
    },
    latlab_dfs::mpirun::RunConfig,
};

/// `latlab dfs …`
#[derive(Debug, Subcommand)]
pub enum DfsCommand {
    /// Simulate time-slice building (best effort and/or DFS) on a modelled network:
    /// deterministic, paper scale (64–384 nodes) on one core.
    #[command(after_help = "Examples:
  latlab dfs sim --nodes 128                          (64 inputs + 64 computes, both modes)
  latlab dfs sim --nodes 384 --time-slices 1000 --mode dfs -o big.json
  latlab dfs sim --nodes 192 --time-slices 40000 --mode dfs --drop 15-25:0.75
  latlab dfs sim --inputs 8 --computes 8 --slow input:3:0.5 --drop 20ms-40ms:0.5
  latlab dfs sim --nodes 64 --time-slices 2000 --network dragonfly --routing minimal
  latlab dfs sim --nodes 16 --dde-replicas 2 --kill-dde 0@50ms
  latlab dfs sim --nodes 128 --mode all --speed-spread 0.05     (best effort, DFS and FLESnet)
  latlab dfs sim --nodes 64 --noise-trace noise.json             (stalls from `latlab host noise`)
  latlab dfs sim --nodes 384 --mode all --jobs 2 --ts-per-interval 960 --time-slices 46080

With --mode both (the default) two result files are written, <output>-best-effort.json
and <output>-dfs.json, and the table ends with the best-effort/DFS ratios. The model and
every default are documented in docs/dfs.md. Nodes stall as the shipped gap trace says
(`latlab dfs noise-trace` shows it) unless --noise-trace or --no-stalls says otherwise.")]
    Sim(SimArgs),
    /// Build time-slices over MPI: inputs write contributions into the compute nodes' RMA
    /// windows (MPI_Put), control messages are two-sided. Start under mpirun with
    /// inputs + computes ranks.
    #[command(after_help = "Examples:
  mpirun -n 8 latlab dfs run --inputs 4 --computes 4 --mode dfs
  mpirun --allow-run-as-root --oversubscribe -n 8 latlab dfs run --mode best-effort -o be.json
  mpirun -n 8 latlab dfs run --dde-replicas 2 --kill-dde 0@10 --clock-skew 1ms
  mpirun -n 8 latlab dfs run --transport ofi --ofi-provider 'tcp;ofi_rxm'

Every contribution carries a checksum the compute node verifies; the table reports lost,
duplicated and corrupt contributions (all must be 0) and the result file holds the full
completion-duration histograms. Rank 0 resolves the flags and writes the result.")]
    Run(RunArgs),
    /// MPI_Put many-to-many micro-benchmark (paper §V-A): half the ranks send, half
    /// receive; round duration and bandwidth per sender over message sizes, plain and Mix.
    #[command(after_help = "Examples:
  mpirun -n 8 latlab dfs bench
  mpirun --allow-run-as-root --oversubscribe -n 8 latlab dfs bench --sizes 4K,64K,1M --no-mix
  mpirun -n 8 latlab dfs bench --transport ofi           (fi_write instead of MPI_Put)

Its bandwidth is the reference the DFS runs are compared against (Fig. 7).")]
    Bench(BenchArgs),
    /// The gap histogram the simulator's node stalls are drawn from (--noise-trace), in the
    /// text format it also reads: stalls per second and share of time stalled.
    #[command(after_help = "Examples:
  latlab dfs noise-trace                               (the trace shipped with latlab)
  latlab host noise --cpu 1 --duration 10s --no-kernel -o noise.json
  latlab dfs noise-trace noise.json > my-trace.txt
  latlab dfs sim --nodes 128 --noise-trace my-trace.txt")]
    NoiseTrace(NoiseTraceArgs),
}

/// Which modes to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ModeArg {
    /// FLESnet without DFS.
    BestEffort,
    /// The Data-Flow Scheduler.
    Dfs,
    /// Both, one after the other, same seed.
    Both,
    /// FLESnet today: a central time-slice manager assigns time-slices (produced at
    /// --offered-load) to builders with room and discards the rest (simulator only).
    Flesnet,
    /// Best effort, DFS and FLESnet, one after the other, same seed.
    All,
}

/// Which network model the simulator uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum NetworkArg {
    /// Fluid ports sharing bandwidth instantly and perfectly (fast).
    Fluid,
    /// The packet-level Dragonfly fabric with credit flow control (slow, congests).
    Dragonfly,
}

/// Routing in the Dragonfly fabric.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum RoutingArg {
    /// Minimal paths only.
    Minimal,
    /// UGAL-L: minimal unless its first queue is much longer than a Valiant path's.
    Ugal,
}

/// The simulator's network, shared by `dfs sim` and `experiment dfs`.
#[derive(Debug, Args)]
pub struct NetworkArgs {
    /// Network model: fluid ports (fast default) or the packet-level Dragonfly fabric.
    #[arg(long, value_enum, default_value_t = NetworkArg::Fluid)]
    pub network: NetworkArg,
    /// Routing in the Dragonfly fabric (with --network dragonfly).
    #[arg(long, value_enum, default_value_t = RoutingArg::Ugal)]
    pub routing: RoutingArg,
    /// Dragonfly shape NODES:ROUTERSxCHASSIS:GLOBAL — nodes per router, routers per
    /// chassis × chassis per group, global links per router (Aries: 4:16x6:10).
    #[arg(long, default_value = "4:16x6:10", value_parser = dragonfly_shape)]
    pub dragonfly_shape: [usize; 4],
}

/// Parses NODES:ROUTERSxCHASSIS:GLOBAL.
fn dragonfly_shape(s: &str) -> Result<[usize; 4], String> {
    let err = || format!("'{s}': expected NODES:ROUTERSxCHASSIS:GLOBAL, e.g. 4:16x6:10");
    let (n, rest) = s.split_once(':').ok_or_else(err)?;
    let (rc, g) = rest.split_once(':').ok_or_else(err)?;
    let (r, c) = rc.split_once('x').ok_or_else(err)?;
    let mut v = [0usize; 4];
    for (k, part) in [n, r, c, g].iter().enumerate() {
        v[k] = part.trim().parse().map_err(|_| err())?;
        if v[k] == 0 && k < 3 || v[k] > 1024 {
            return Err(err());
        }
    }
    Ok(v)
}

impl NetworkArgs {
    /// The fabric parameters, or None for the fluid model.
    pub fn fabric(&self) -> Option<FabricParams> {
        let [n, r, c, g] = self.dragonfly_shape;
        (self.network == NetworkArg::Dragonfly).then(|| FabricParams {
            nodes_per_router: n,
            chassis_routers: r,
            group_chassis: c,
            global_per_router: g,
            routing: match self.routing {
                RoutingArg::Minimal => Routing::Minimal,
                RoutingArg::Ugal => Routing::Ugal,
            },
            ..FabricParams::default()
        })
    }
}

/// Sizes and DFS parameters shared by `dfs sim` and `dfs run`.
#[derive(Debug, Args)]
pub struct ModelArgs {
    /// Total nodes, split half inputs, half computes (overrides --inputs/--computes).
    #[arg(long)]
    pub nodes: Option<usize>,
    /// Input nodes.
    #[arg(long, default_value_t = 4)]
    pub inputs: usize,
    /// Compute nodes.
    #[arg(long, default_value_t = 4)]
    pub computes: usize,
    /// Time-slices to build (rounded up to whole rounds of C).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub time_slices: Option<u64>,
    /// Size of one contribution (micro-time-slice), e.g. 65536, 64K, 1M.
    #[arg(long, value_parser = size_arg)]
    pub mts_size: Option<u64>,
    /// Ring slots per input at each compute node (credits).
    #[arg(long, default_value_t = Topology::default().slots_per_input)]
    pub slots: u32,
    /// Time-slices per interval (Table I: 10000; the simulator's default is 1000).
    #[arg(long)]
    pub ts_per_interval: Option<u64>,
    /// History length in intervals (hist_cnt).
    #[arg(long, default_value_t = DfsParams::default().hist_cnt)]
    pub hist_cnt: usize,
    /// Speed-up threshold ssu_TH, percent.
    #[arg(long, default_value_t = DfsParams::default().ssu_th, value_parser = |s: &str| number_in(s, 0.0, 1e6))]
    pub ssu_th: f64,
    /// Speed-up amount ssu_pct, percent.
    #[arg(long, default_value_t = DfsParams::default().ssu_pct, value_parser = |s: &str| number_in(s, 0.0, 99.0))]
    pub ssu_pct: f64,
    /// Statistic compared with ssu_TH: the variance between proposed and measured
    /// durations (the paper's text; a steady overrun counts), Eq. 1's variance as printed
    /// (about the mean deviation), or the mean deviation.
    #[arg(long, value_enum, default_value_t = SsuCriterionArg::MeanSquare)]
    pub ssu_criterion: SsuCriterionArg,
    /// θ: percent of an interval's contributions acknowledged before the next starts.
    #[arg(long, default_value_t = DfsParams::default().theta_pct, value_parser = |s: &str| number_in(s, 0.0, 100.0))]
    pub theta: f64,
    /// Seed of every random draw.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

/// SSU criterion.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum SsuCriterionArg {
    /// VAR_j + μ_j² ≤ ssu_TH: the mean squared deviation from the proposal.
    MeanSquare,
    /// VAR_j ≤ ssu_TH (Eq. 1 as printed).
    Variance,
    /// μ_j ≤ ssu_TH.
    Mean,
}

/// Options of `latlab dfs sim`.
#[derive(Debug, Args)]
pub struct SimArgs {
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub network: NetworkArgs,
    /// Best effort, DFS, or both.
    #[arg(long, value_enum, default_value_t = ModeArg::Both)]
    pub mode: ModeArg,
    /// Injection and ejection bandwidth per node in GB/s.
    #[arg(long, default_value_t = 4.0, value_parser = |s: &str| number_in(s, 0.001, 1e4))]
    pub bandwidth: f64,
    /// One-way latency.
    #[arg(long, default_value = "2us", value_parser = duration_arg)]
    pub latency: Nanos,
    /// Mean of the exponential jitter added to every message.
    #[arg(long, default_value = "2us", value_parser = duration_arg)]
    pub jitter: Nanos,
    /// Writes an input keeps in flight at most.
    #[arg(long, default_value_t = 8)]
    pub max_inflight: u32,
    /// Mean processing time of a complete time-slice before its slots are released.
    #[arg(long, default_value = "20us", value_parser = duration_arg)]
    pub processing: Nanos,
    /// Bandwidth noise: each port redrawn uniformly in [1-noise, 1] of nominal.
    #[arg(long, default_value_t = 0.2, value_parser = |s: &str| number_in(s, 0.0, 0.99))]
    pub noise: f64,
    /// How often the noise is redrawn.
    #[arg(long, default_value = "200us", value_parser = duration_arg)]
    pub noise_period: Nanos,
    /// Largest clock offset between nodes.
    #[arg(long, default_value = "1ms", value_parser = duration_arg)]
    pub clock_offset: Nanos,
    /// Largest clock drift in ppm.
    #[arg(long, default_value_t = 10.0, value_parser = |s: &str| number_in(s, 0.0, MAX_DRIFT_PPM))]
    pub drift_ppm: f64,
    /// A slow node: input:INDEX:FACTOR or compute:INDEX:FACTOR (repeatable).
    #[arg(long, value_name = "ROLE:INDEX:FACTOR")]
    pub slow: Vec<String>,
    /// A bandwidth drop: FIRST-LAST:FACTOR by interval (15-25:0.75) or
    /// FROM-TO:FACTOR by time (10ms-20ms:0.5) (repeatable).
    #[arg(long, value_name = "WINDOW:FACTOR")]
    pub drop: Vec<String>,
    /// DDE replicas on compute nodes 0..N (0: one on every compute node).
    #[arg(long, default_value_t = 0)]
    pub dde_replicas: usize,
    /// Kill DDE replica R at time T: R@T, e.g. 0@50ms (repeatable).
    #[arg(long, value_name = "R@TIME")]
    pub kill_dde: Vec<String>,
    /// Node stalls from a measured gap trace: a `latlab host noise` or `latlab sched`
    /// result, or a text histogram (docs/dfs.md); default: the trace shipped with latlab.
    #[arg(long, value_name = "FILE", conflicts_with = "no_stalls")]
    pub noise_trace: Option<PathBuf>,
    /// Nodes never stall (no gap trace at all).
    #[arg(long)]
    pub no_stalls: bool,
    /// Persistent speed differences: each node's bandwidth × a factor drawn uniformly in
    /// [1 - spread, 1].
    #[arg(long, default_value_t = 0.0, value_parser = |s: &str| number_in(s, 0.0, MAX_SPEED_SPREAD))]
    pub speed_spread: f64,
    /// Warm start: each input starts at a time drawn uniformly in [0, SPREAD] instead of
    /// all together, so the run begins with lags a lockstep start builds only over tens of
    /// simulated seconds (docs/dfs.md, "Warm start"); at most 10s.
    #[arg(long, default_value = "0s", value_parser = duration_arg)]
    pub start_spread: Nanos,
    /// FLESnet mode: rate at which time-slices are produced, as a fraction of the inputs'
    /// nominal bandwidth.
    #[arg(long, default_value_t = TsmParams::default().offered_load,
          value_parser = |s: &str| number_in(s, OFFERED_LOAD_RANGE.0, OFFERED_LOAD_RANGE.1))]
    pub offered_load: f64,
    /// FLESnet mode: time-slices a builder may have pending.
    #[arg(long, default_value_t = TsmParams::default().max_in_flight,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub tsm_max_in_flight: u32,
    /// Modes simulated at once with --mode both/all (default 1: one after the other; each
    /// run is deterministic whatever this is).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub jobs: Option<u32>,
    #[command(flatten)]
    pub out: OutputArgs,
}

/// Options of `latlab dfs noise-trace`.
#[derive(Debug, Args)]
pub struct NoiseTraceArgs {
    /// A `latlab host noise` or `latlab sched` result, or a text histogram; without it the
    /// trace shipped with latlab.
    pub file: Option<PathBuf>,
}

/// Options of `latlab dfs run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub model: ModelArgs,
    /// Best effort or DFS.
    #[arg(long, value_enum, default_value_t = RunModeArg::Dfs)]
    pub mode: RunModeArg,
    /// DDE replicas on compute nodes 0..N (0: one on every compute node).
    #[arg(long, default_value_t = 0)]
    pub dde_replicas: usize,
    /// Stop DDE replica R once it gets a report of interval J: R@J, e.g. 0@10.
    #[arg(long, value_name = "R@INTERVAL")]
    pub kill_dde: Option<String>,
    /// Injected clock offset: rank r's clock runs r × this ahead.
    #[arg(long, default_value = "0ns", value_parser = duration_arg)]
    pub clock_skew: Nanos,
    /// Injected drift: rank r's clock drifts r × this many ppm.
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true,
          value_parser = |s: &str| number_in(s, -MAX_DRIFT_PPM, MAX_DRIFT_PPM))]
    pub drift_ppm: f64,
    /// Buffer-fill sampling period at the compute nodes.
    #[arg(long, default_value = "5ms", value_parser = duration_arg)]
    pub sample: Nanos,
    #[command(flatten)]
    pub transport: TransportArgs,
    #[command(flatten)]
    pub out: OutputArgs,
}

/// What moves the data of `dfs run` and `dfs bench`.
#[derive(Debug, Args)]
pub struct TransportArgs {
    /// mpi: MPI_Put into windows + MPI messages; ofi: libfabric fi_write into registered
    /// memory + fi_send messages (MPI only launches the ranks and exchanges addresses).
    #[arg(long, value_enum, default_value_t = TransportArg::Mpi)]
    pub transport: TransportArg,
    /// libfabric provider for --transport ofi (e.g. tcp;ofi_rxm, shm, sockets); default:
    /// libfabric's first choice, which honours FI_PROVIDER.
    #[arg(long, value_name = "NAME")]
    pub ofi_provider: Option<String>,
}

/// `--transport`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum TransportArg {
    /// MPI one-sided windows and messages.
    Mpi,
    /// libfabric (OFI).
    Ofi,
}

#[cfg(feature = "mpi")]
impl TransportArgs {
    /// The transport asked for; `--ofi-provider` without `--transport ofi` is refused.
    pub fn resolve(&self) -> Result<latlab_dfs::mpidata::TransportConfig, String> {
        use latlab_dfs::mpidata::{Transport, TransportConfig};
        match self.transport {
            TransportArg::Mpi if self.ofi_provider.is_some() => Err(
                "--ofi-provider: only with --transport ofi (e.g. --transport ofi --ofi-provider tcp;ofi_rxm)"
                    .into(),
            ),
            TransportArg::Mpi => Ok(TransportConfig::default()),
            TransportArg::Ofi => Ok(TransportConfig {
                transport: Transport::Ofi,
                provider: self.ofi_provider.clone(),
            }),
        }
    }
}

/// Options of `latlab dfs bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Message sizes, comma separated.
    #[arg(long, value_delimiter = ',', default_value = "1K,4K,16K,64K,256K,1M", value_parser = size_arg)]
    pub sizes: Vec<u64>,
    /// Bytes each sender moves per size (sets the rounds).
    #[arg(long, default_value = "64M", value_parser = size_arg)]
    pub bytes: u64,
    /// At least this many rounds per size.
    #[arg(long, default_value_t = BENCH_DEFAULT_MIN_ROUNDS)]
    pub min_rounds: u64,
    /// Skip the Mix variant (small messages added).
    #[arg(long)]
    pub no_mix: bool,
    #[command(flatten)]
    pub transport: TransportArgs,
    #[command(flatten)]
    pub out: OutputArgs,
}

/// Mode of one MPI run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum RunModeArg {
    /// FLESnet without DFS.
    BestEffort,
    /// The Data-Flow Scheduler.
    Dfs,
}

/// Options of `latlab experiment dfs`.
#[derive(Debug, Args)]
pub struct DfsExperimentArgs {
    /// Where to write result files, figures and the summary (`-o` as in the other
    /// experiments; `--out-dir` still works).
    #[arg(
        long = "output",
        short = 'o',
        visible_alias = "out-dir",
        value_name = "DIR",
        default_value = "latlab-results/dfs-experiment"
    )]
    pub out_dir: PathBuf,
    /// Simulated node counts (half inputs, half computes).
    #[arg(long, value_delimiter = ',', default_value = "64,128,192,384")]
    pub nodes: Vec<usize>,
    /// Intervals simulated per node count (whole intervals of --ts-per-interval; two are
    /// warm-up, and every DFS figure needs 20 paced ones after it).
    #[arg(long, default_value_t = DEFAULT_INTERVALS)]
    pub intervals: u64,
    /// Time-slices per interval of the node-count sweep (the simulator's default 1,000;
    /// Table I: 10,000). The drop runs keep 1,000.
    #[arg(long, default_value_t = SIM_DEFAULT_TS_PER_INTERVAL)]
    pub ts_per_interval: u64,
    /// Intervals of the bandwidth-drop runs (intervals 15-25 made 25 % longer: bandwidth
    /// × 0.8).
    #[arg(long, default_value_t = 55)]
    pub drop_intervals: u64,
    /// Nodes of the bandwidth-drop runs (the paper's Fig. 8 used 192).
    #[arg(long, default_value_t = 192)]
    pub drop_nodes: usize,
    /// Skip the real MPI runs.
    #[arg(long)]
    pub no_mpi: bool,
    /// MPI ranks for the real run (half inputs, half computes).
    #[arg(long, default_value_t = 8)]
    pub ranks: usize,
    /// Time-slices of the real MPI runs.
    #[arg(long, default_value_t = 10_000)]
    pub mpi_time_slices: u64,
    /// Seed of the simulations.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[command(flatten)]
    pub network: NetworkArgs,
    /// Figure format: svg or png.
    #[arg(long, default_value = "svg", value_parser = ["svg", "png"])]
    pub format: String,
    /// Simulations run at once (default: the CPUs available).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub jobs: Option<u32>,
    /// Node count of the sensitivity sweep (best effort vs DFS with one mechanism changed
    /// at a time); 0: no sweep.
    #[arg(long, default_value_t = 128)]
    pub sweep_nodes: usize,
    /// Print only the summary.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

impl ModeArg {
    /// The modes to run, in order.
    pub fn modes(self) -> Vec<Mode> {
        match self {
            ModeArg::BestEffort => vec![Mode::BestEffort],
            ModeArg::Dfs => vec![Mode::Dfs],
            ModeArg::Both => vec![Mode::BestEffort, Mode::Dfs],
            ModeArg::Flesnet => vec![Mode::Flesnet],
            ModeArg::All => vec![Mode::BestEffort, Mode::Dfs, Mode::Flesnet],
        }
    }
}

/// Resolves the shared model flags; `default_mts` and `default_ts_per_interval` differ
/// between the simulator and the MPI runtime. The library checks the result
/// ([`SimConfig::validate`](latlab_dfs::sim::SimConfig::validate),
/// [`RunConfig::validate`](latlab_dfs::mpidata::RunConfig::validate)).
fn resolve_model(
    m: &ModelArgs,
    default_mts: u64,
    default_ts_per_interval: u64,
) -> anyhow::Result<(Topology, DfsParams)> {
    let (inputs, computes) = match m.nodes {
        Some(n) if n < 2 || n % 2 != 0 => {
            return Err(usage(format!(
                "--nodes {n}: need an even number of at least 2 (half inputs, half computes)"
            )))
        }
        Some(n) => (n / 2, n / 2),
        None => (m.inputs, m.computes),
    };
    let topology = Topology {
        inputs,
        computes,
        mts_bytes: m.mts_size.unwrap_or(default_mts),
        slots_per_input: m.slots,
    };
    let params = DfsParams {
        ts_per_intvl: m.ts_per_interval.unwrap_or(default_ts_per_interval),
        hist_cnt: m.hist_cnt,
        ssu_th: m.ssu_th,
        ssu_pct: m.ssu_pct,
        ssu_criterion: match m.ssu_criterion {
            SsuCriterionArg::MeanSquare => SsuCriterion::MeanSquare,
            SsuCriterionArg::Variance => SsuCriterion::Variance,
            SsuCriterionArg::Mean => SsuCriterion::MeanDeviation,
        },
        theta_pct: m.theta,
    };
    Ok((topology, params))
}

impl TryFrom<&SimArgs> for SimConfig {
    type Error = anyhow::Error;

    /// The configuration of the run (its mode is set per run); the library checks it.
    fn try_from(a: &SimArgs) -> anyhow::Result<SimConfig> {
        let (topology, params) =
            resolve_model(&a.model, DEFAULT_MTS_BYTES, SIM_DEFAULT_TS_PER_INTERVAL)?;
        let mut base = SimConfig::new(topology.inputs, topology.computes, Mode::Dfs);
        base.topology = topology;
        base.params = params;
        base.net = NetModel {
            inj_gbs: a.bandwidth,
            ej_gbs: a.bandwidth,
            latency_ns: a.latency.get() as i64,
            jitter_ns: a.jitter.get() as f64,
            max_inflight: a.max_inflight,
            processing_ns: a.processing.get() as f64,
            noise: a.noise,
            noise_period_ns: a.noise_period.get() as i64,
            max_clock_offset_ns: a.clock_offset.get() as i64,
            max_drift_ppm: a.drift_ppm,
        };
        base.seed = a.model.seed;
        if let Some(n) = a.model.time_slices {
            base.time_slices = n;
        }
        base.slow = parse_all("slow", &a.slow)?;
        base.drops = parse_all("drop", &a.drop)?;
        base.dde_replicas = a.dde_replicas;
        base.dde_faults = parse_all("kill-dde", &a.kill_dde)?;
        base.fabric = a.network.fabric();
        base.stalls = match (&a.noise_trace, a.no_stalls) {
            (_, true) => None,
            (None, false) => Some(NoiseTrace::measured_default()),
            (Some(p), false) => Some(NoiseTrace::load(p).map_err(|e| usage(e.to_string()))?),
        };
        base.speed_spread = a.speed_spread;
        base.start_spread_ns = i64::try_from(a.start_spread.get()).unwrap_or(i64::MAX);
        base.tsm = TsmParams {
            offered_load: a.offered_load,
            max_in_flight: a.tsm_max_in_flight,
        };
        Ok(base)
    }
}

#[cfg(feature = "mpi")]
impl TryFrom<&RunArgs> for RunConfig {
    type Error = String;

    fn try_from(a: &RunArgs) -> Result<RunConfig, String> {
        let (topology, params) =
            resolve_model(&a.model, RUN_DEFAULT_MTS_BYTES, RUN_DEFAULT_TS_PER_INTERVAL)
                .map_err(|e| format!("{e:#}"))?;
        let kill_dde = match &a.kill_dde {
            None => None,
            Some(s) => {
                let err = || format!("--kill-dde '{s}': expected REPLICA@INTERVAL, e.g. 0@10");
                let (r, j) = s.split_once('@').ok_or_else(err)?;
                Some((r.parse().map_err(|_| err())?, j.parse().map_err(|_| err())?))
            }
        };
        Ok(RunConfig {
            topology,
            params,
            mode: match a.mode {
                RunModeArg::BestEffort => Mode::BestEffort,
                RunModeArg::Dfs => Mode::Dfs,
            },
            time_slices: a.model.time_slices.unwrap_or(RUN_DEFAULT_TIME_SLICES),
            dde_replicas: a.dde_replicas,
            kill_dde,
            clock_skew_ns: a.clock_skew.get() as i64,
            drift_ppm: a.drift_ppm,
            sample_ns: (a.sample.get() as i64).max(RUN_MIN_SAMPLE_NS),
        })
    }
}

#[cfg(feature = "mpi")]
impl From<&BenchArgs> for BenchConfig {
    fn from(a: &BenchArgs) -> BenchConfig {
        BenchConfig {
            sizes: a.sizes.clone(),
            bytes_per_size: a.bytes,
            min_rounds: a.min_rounds.max(1),
            mix: !a.no_mix,
        }
    }
}

impl From<&DfsExperimentArgs> for ExperimentConfig {
    fn from(a: &DfsExperimentArgs) -> ExperimentConfig {
        ExperimentConfig {
            nodes: a.nodes.clone(),
            intervals: a.intervals,
            ts_per_interval: a.ts_per_interval,
            drop_intervals: a.drop_intervals,
            drop_nodes: a.drop_nodes,
            mpi: !a.no_mpi,
            ranks: a.ranks,
            mpi_time_slices: a.mpi_time_slices,
            seed: a.seed,
            fabric: a.network.fabric(),
            threads: a.jobs.map_or_else(
                || std::thread::available_parallelism().map_or(1, |n| n.get()),
                |j| j as usize,
            ),
            sweep_nodes: a.sweep_nodes,
            format: if a.format == "png" {
                FigureFormat::Png
            } else {
                FigureFormat::Svg
            },
        }
    }
}

/// Parses every `flag` value as a `T`, naming the flag and the value in the error.
fn parse_all<T: std::str::FromStr<Err = String>>(
    flag: &str,
    v: &[String],
) -> anyhow::Result<Vec<T>> {
    v.iter()
        .map(|s| s.parse().map_err(|e| usage(format!("--{flag} '{s}': {e}"))))
        .collect()
}

/// Parses a size in bytes: 65536, 64K, 64KiB, 1M, 1MiB (binary multiples).
pub fn size_arg(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let err = || format!("invalid size '{s}': expected bytes, e.g. 65536, 64K, 1M");
    let (num, mult) = match t.find(|c: char| !c.is_ascii_digit()) {
        None => (t, 1),
        Some(k) => {
            let m = match t[k..].to_ascii_lowercase().as_str() {
                "k" | "kib" | "kb" => 1024,
                "m" | "mib" | "mb" => 1024 * 1024,
                "g" | "gib" | "gb" => 1024 * 1024 * 1024,
                "b" => 1,
                _ => return Err(err()),
            };
            (&t[..k], m)
        }
    };
    let n: u64 = num.parse().map_err(|_| err())?;
    if n == 0 {
        return Err(format!("invalid size '{s}': must be positive"));
    }
    n.checked_mul(mult).ok_or_else(err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(size_arg("65536"), Ok(65536));
        assert_eq!(size_arg("64K"), Ok(65536));
        assert_eq!(size_arg("1MiB"), Ok(1 << 20));
        assert!(size_arg("0").is_err());
        assert!(size_arg("12 parsecs").is_err());
    }
}
