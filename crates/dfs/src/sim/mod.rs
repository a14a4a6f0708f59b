//! `latlab dfs sim`: a deterministic discrete-event simulation of the same state machines
//! ([`crate::compute`], [`crate::sender`], [`crate::ie`], [`crate::dde`]) on a modelled
//! network, to run the paper's 64–384 nodes on one machine.
//!
//! The model (documented with its defaults in docs/dfs.md):
//! - I input and C compute nodes, each with its own injection and ejection port; ports
//!   share their bandwidth equally among the transfers through them ([`net`]);
//! - a contribution is one transfer of `mts_bytes`; it arrives `latency` (+ jitter) after
//!   its last byte left, and the input learns of it (acknowledgement, write completion)
//!   `latency` (+ jitter) later; an input keeps at most `max_inflight` writes in flight;
//! - control messages (credits, reports, proposals) take `latency` (+ jitter) and no
//!   bandwidth;
//! - compute nodes keep `slots_per_input` slots per input and release a complete time-slice
//!   after a processing time (exponential with mean `processing`), in order;
//! - every node has a clock with a constant offset and drift drawn once from the seed; the
//!   state machines only ever see their node's clock;
//! - seeded noise: every `noise_period` each node's port bandwidth is redrawn uniformly in
//!   `[1 − noise, 1]` of nominal (OS noise, routing, contention from other jobs); optional
//!   slow nodes and bandwidth drops (by time or by interval).
//!
//! The same configuration and seed always give the same result.

pub mod net;
pub mod result;
pub mod rng;

use crate::compute::{Arrival, ArrivalOutcome, ComputeCounters, ComputeNode};
use crate::dde::{Dde, DdeCounters};
use crate::ie::{IeCounters, InputEngine, Poll, Proposal, Report};
use crate::model;
use crate::params::{DfsParams, Mode, ParamError, Topology};
use crate::sender::{BestEffortSender, Credits};
use latlab_core::hist::{HistConfig, LatencyHistogram};
use latlab_core::units::Nanos;
use net::{Network, Reschedule};
use rng::Rng;
use serde::{Deserialize, Serialize};
use std::cmp::Ordering;
use std::collections::BinaryHeap;

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
}

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
                ts_per_intvl: 1_000,
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
        }
    }

    /// Checks the configuration.
    pub fn validate(&self) -> Result<(), SimError> {
        self.topology.validate()?;
        self.params.validate()?;
        let n = &self.net;
        if !(n.inj_gbs > 0.0 && n.ej_gbs > 0.0) {
            return Err(SimError::Invalid("bandwidths must be positive".into()));
        }
        if n.max_inflight == 0 {
            return Err(SimError::Invalid(
                "max in-flight writes must be at least 1".into(),
            ));
        }
        if !(0.0..1.0).contains(&n.noise) {
            return Err(SimError::Invalid("noise must be in [0, 1)".into()));
        }
        if n.latency_ns < 0 || n.jitter_ns < 0.0 || n.processing_ns < 0.0 {
            return Err(SimError::Invalid(
                "latency, jitter and processing must be ≥ 0".into(),
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
        Ok(())
    }

    fn replicas(&self) -> usize {
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
    /// Any other invalid setting.
    #[error("invalid simulation setting: {0}")]
    Invalid(String),
}

/// Five-number summary plus count (the paper's box plots: min, p10, median, p90, max).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FiveNum {
    /// Samples.
    pub count: u64,
    /// Minimum.
    pub min: f64,
    /// 10th percentile.
    pub p10: f64,
    /// Median.
    pub median: f64,
    /// 90th percentile.
    pub p90: f64,
    /// Maximum.
    pub max: f64,
}

impl FiveNum {
    /// From a histogram, values converted from ns by dividing by `unit`.
    pub fn from_hist(h: &LatencyHistogram, unit: f64) -> FiveNum {
        use latlab_core::parse::Percentile;
        if h.count() == 0 {
            return FiveNum::default();
        }
        let at = |n, d| h.value_at(Percentile::from_fraction(n, d).expect("valid")) as f64 / unit;
        FiveNum {
            count: h.count(),
            min: h.min() as f64 / unit,
            p10: at(1, 10),
            median: at(1, 2),
            p90: at(9, 10),
            max: h.max() as f64 / unit,
        }
    }

    /// From counts per integer value `v` (index), values scaled by `scale`.
    pub fn from_counts(counts: &[u64], scale: f64) -> FiveNum {
        let n: u64 = counts.iter().sum();
        if n == 0 {
            return FiveNum::default();
        }
        let q = |p: f64| {
            let rank = ((p * n as f64).ceil() as u64).clamp(1, n);
            let mut acc = 0;
            for (v, &c) in counts.iter().enumerate() {
                acc += c;
                if acc >= rank {
                    return v as f64 * scale;
                }
            }
            (counts.len() - 1) as f64 * scale
        };
        let min = counts.iter().position(|&c| c > 0).unwrap_or(0) as f64 * scale;
        let max = counts.iter().rposition(|&c| c > 0).unwrap_or(0) as f64 * scale;
        FiveNum {
            count: n,
            min,
            p10: q(0.1),
            median: q(0.5),
            p90: q(0.9),
            max,
        }
    }
}

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
    /// Events processed.
    pub events: u64,
    /// Whether every time-slice completed.
    pub complete: bool,
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

#[derive(Clone, Copy, Debug)]
struct NodeClock {
    offset: i64,
    drift: f64,
}

impl NodeClock {
    fn local(&self, t: i64) -> i64 {
        t + self.offset + (self.drift * t as f64).round() as i64
    }
    fn true_of(&self, local: i64) -> i64 {
        ((local - self.offset) as f64 / (1.0 + self.drift)).ceil() as i64
    }
}

#[derive(Clone, Debug)]
enum Ev {
    Wake(u32),
    FlowDone(u32, u32),
    Arrive(u32, u64),
    Ack(u32, u64),
    Release(u32, u64),
    Credit(u32, u32, u64),
    Report(u32, Box<Report>),
    Proposal(u32, Proposal),
    Sample,
    Noise,
    Scale(f64),
    Kill(u32),
    Restart(u32),
}

struct Entry {
    t: i64,
    seq: u64,
    ev: Ev,
}

impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        self.t == o.t && self.seq == o.seq
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    fn cmp(&self, o: &Self) -> Ordering {
        // min-heap on (t, seq)
        (o.t, o.seq).cmp(&(self.t, self.seq))
    }
}

struct InputNode {
    be: BestEffortSender,
    ie: InputEngine,
    credits: Credits,
    inflight: u32,
    clock: NodeClock,
    wake_at: i64,
    idle: bool,
    done: bool,
}

struct ComputeSide {
    node: ComputeNode,
    clock: NodeClock,
}

struct IntervalAcc {
    proposed: Vec<i64>,
    actual: Vec<i64>,
    starts: Vec<i64>,
    dropped: bool,
}

/// Runs a simulation to the end.
pub fn run(cfg: &SimConfig) -> Result<SimOutcome, SimError> {
    cfg.validate()?;
    Sim::new(cfg).run()
}

struct Sim<'a> {
    cfg: &'a SimConfig,
    now: i64,
    seq: u64,
    heap: BinaryHeap<Entry>,
    rng: Rng,
    net: Network,
    inputs: Vec<InputNode>,
    computes: Vec<ComputeSide>,
    ddes: Vec<Option<Dde>>,
    resched: Vec<Reschedule>,
    completion: LatencyHistogram,
    completion_all: LatencyHistogram,
    warmup_ts: u64,
    delivered: u64,
    first_send: Option<i64>,
    last_arrival: i64,
    warm_time: Option<i64>,
    sent: u64,
    events: u64,
    intervals: Vec<IntervalAcc>,
    fill: Vec<FillSample>,
    rank_counts: Vec<Vec<u64>>,
    scale_interval: f64,
    scale_time: f64,
    input0_interval: Option<u64>,
    sample_ns: i64,
    scratch: Vec<u32>,
}

const GB: f64 = 1e9;

impl<'a> Sim<'a> {
    fn new(cfg: &'a SimConfig) -> Sim<'a> {
        let t = cfg.topology;
        let (ni, nc) = (t.inputs, t.computes);
        let mut rng = Rng::new(cfg.seed);
        let inj = cfg.net.inj_gbs; // GB/s == bytes/ns
        let ej = cfg.net.ej_gbs;
        let mut inj_v = vec![inj; ni + nc];
        let mut ej_v = vec![ej; ni + nc];
        for s in &cfg.slow {
            match s.role {
                Role::Input => inj_v[s.index] *= s.factor,
                Role::Compute => ej_v[ni + s.index] *= s.factor,
            }
        }
        let total = cfg.total_ts();
        let clock = |rng: &mut Rng| NodeClock {
            offset: rng
                .range(
                    -(cfg.net.max_clock_offset_ns as f64),
                    cfg.net.max_clock_offset_ns as f64,
                )
                .round() as i64,
            drift: rng.range(-cfg.net.max_drift_ppm, cfg.net.max_drift_ppm) * 1e-6,
        };
        let inputs: Vec<InputNode> = (0..ni)
            .map(|i| InputNode {
                be: BestEffortSender::new(i, nc, total),
                ie: InputEngine::new(i, nc, cfg.params, total),
                credits: Credits::new(nc, t.slots_per_input),
                inflight: 0,
                clock: clock(&mut rng),
                wake_at: i64::MAX,
                idle: false,
                done: false,
            })
            .collect();
        let computes: Vec<ComputeSide> = (0..nc)
            .map(|c| ComputeSide {
                node: ComputeNode::new(c, ni, nc, t.slots_per_input),
                clock: clock(&mut rng),
            })
            .collect();
        let ddes = (0..cfg.replicas())
            .map(|_| Some(Dde::new(ni, cfg.params)))
            .collect();
        let len = cfg.params.interval_len(nc);
        let warmup_ts = if total > 3 * len { 2 * len } else { 0 };
        let hc = HistConfig {
            lowest_ns: 1,
            highest_ns: 3_600 * 1_000_000_000,
            sigfig: 3,
        };
        let expected_ns = (total as f64 * t.mts_bytes as f64 / inj).max(1.0);
        let sample_ns = if cfg.sample_ns > 0 {
            cfg.sample_ns
        } else {
            ((expected_ns / 400.0) as i64).max(1_000)
        };
        let mut s = Sim {
            cfg,
            now: 0,
            seq: 0,
            heap: BinaryHeap::new(),
            rng,
            net: Network::new(inj_v, ej_v),
            inputs,
            computes,
            ddes,
            resched: Vec::new(),
            completion: LatencyHistogram::new(hc).expect("valid config"),
            completion_all: LatencyHistogram::new(hc).expect("valid config"),
            warmup_ts,
            delivered: 0,
            first_send: None,
            last_arrival: 0,
            warm_time: None,
            sent: 0,
            events: 0,
            intervals: Vec::new(),
            fill: Vec::new(),
            rank_counts: vec![vec![0; t.slots_per_input as usize + 1]; ni],
            scale_interval: 1.0,
            scale_time: 1.0,
            input0_interval: None,
            sample_ns,
            scratch: Vec::new(),
        };
        // seed every DDE's clock synchroniser from the start barrier (all leave it at t = 0)
        for (r, d) in s.ddes.iter_mut().enumerate() {
            let d = d.as_mut().expect("fresh");
            let cl = s.computes[r].clock;
            for (i, inp) in s.inputs.iter().enumerate() {
                d.clock_mut().seed(i, inp.clock.local(0), cl.local(0));
            }
        }
        s
    }

    fn push(&mut self, t: i64, ev: Ev) {
        self.seq += 1;
        self.heap.push(Entry {
            t,
            seq: self.seq,
            ev,
        });
    }

    fn msg_delay(&mut self) -> i64 {
        self.cfg.net.latency_ns + self.rng.exp(self.cfg.net.jitter_ns).round() as i64
    }

    fn flush_resched(&mut self) {
        let r = std::mem::take(&mut self.resched);
        for &(id, t, v) in &r {
            self.push(t, Ev::FlowDone(id, v));
        }
        self.resched = r;
        self.resched.clear();
    }

    fn run(mut self) -> Result<SimOutcome, SimError> {
        for i in 0..self.inputs.len() {
            self.push(0, Ev::Wake(i as u32));
            self.inputs[i].wake_at = 0;
        }
        self.push(0, Ev::Sample);
        if self.cfg.net.noise > 0.0 && self.cfg.net.noise_period_ns > 0 {
            self.push(0, Ev::Noise);
        }
        for d in &self.cfg.drops {
            if let DropWindow::Time { from_ns, to_ns } = d.window {
                self.push(from_ns, Ev::Scale(d.factor));
                self.push(to_ns, Ev::Scale(1.0 / d.factor));
            }
        }
        for f in &self.cfg.dde_faults {
            if f.replica < self.ddes.len() {
                self.push(f.kill_ns, Ev::Kill(f.replica as u32));
                if let Some(r) = f.restart_ns {
                    self.push(r, Ev::Restart(f.replica as u32));
                }
            }
        }
        let total = self.cfg.total_ts();
        let need = total * self.inputs.len() as u64;
        while let Some(e) = self.heap.pop() {
            self.now = e.t;
            self.events += 1;
            match e.ev {
                Ev::Wake(i) => {
                    let inp = &mut self.inputs[i as usize];
                    if inp.wake_at == e.t {
                        inp.wake_at = i64::MAX;
                        self.poll(i as usize);
                    }
                }
                Ev::FlowDone(id, v) => {
                    if self.net.is_current(id, v) {
                        let (i, ts) = self.net.finish(id, self.now, &mut self.resched);
                        self.flush_resched();
                        let d = self.msg_delay();
                        self.push(self.now + d, Ev::Arrive(i as u32, ts));
                    }
                }
                Ev::Arrive(i, ts) => self.arrive(i as usize, ts),
                Ev::Ack(i, ts) => self.ack(i as usize, ts),
                Ev::Release(c, local) => {
                    if let Some(ack) = self.computes[c as usize].node.release(local) {
                        for i in 0..self.inputs.len() {
                            let d = self.msg_delay();
                            self.push(self.now + d, Ev::Credit(i as u32, c, ack));
                        }
                    }
                }
                Ev::Credit(i, c, ack) => {
                    let inp = &mut self.inputs[i as usize];
                    inp.credits.on_ack_pointer(c as usize, ack);
                    if inp.idle {
                        self.poll(i as usize);
                    }
                }
                Ev::Report(r, rep) => self.report(r as usize, &rep),
                Ev::Proposal(i, p) => {
                    self.inputs[i as usize].ie.on_proposal(p);
                    self.poll(i as usize);
                }
                Ev::Sample => {
                    self.sample();
                    if self.delivered < need {
                        self.push(self.now + self.sample_ns, Ev::Sample);
                    }
                }
                Ev::Noise => {
                    self.noise();
                    if self.delivered < need {
                        self.push(self.now + self.cfg.net.noise_period_ns, Ev::Noise);
                    }
                }
                Ev::Scale(f) => {
                    self.scale_time *= f;
                    self.apply_scale();
                }
                Ev::Kill(r) => self.ddes[r as usize] = None,
                Ev::Restart(r) => {
                    self.ddes[r as usize] = Some(Dde::restarted(self.inputs.len(), self.cfg.params))
                }
            }
        }
        Ok(self.finish())
    }

    fn apply_scale(&mut self) {
        let s = self.scale_time * self.scale_interval;
        self.net.set_scale(s, self.now, &mut self.resched);
        self.flush_resched();
    }

    fn noise(&mut self) {
        let ni = self.inputs.len();
        let nc = self.computes.len();
        let base_inj = self.cfg.net.inj_gbs;
        let base_ej = self.cfg.net.ej_gbs;
        let lo = 1.0 - self.cfg.net.noise;
        for n in 0..ni + nc {
            let slow = |role, idx| {
                self.cfg
                    .slow
                    .iter()
                    .filter(|s| s.role == role && s.index == idx)
                    .map(|s| s.factor)
                    .product::<f64>()
            };
            if n < ni {
                let f = self.rng.range(lo, 1.0) * slow(Role::Input, n);
                self.net
                    .set_inj(n, base_inj * f, self.now, &mut self.resched);
            } else {
                let f = self.rng.range(lo, 1.0) * slow(Role::Compute, n - ni);
                self.net.set_ej(n, base_ej * f, self.now, &mut self.resched);
            }
        }
        self.flush_resched();
    }

    fn poll(&mut self, i: usize) {
        let nc = self.computes.len();
        let ni = self.inputs.len();
        let max_inflight = self.cfg.net.max_inflight;
        let bytes = self.cfg.topology.mts_bytes;
        loop {
            let inp = &mut self.inputs[i];
            if inp.done {
                return;
            }
            if inp.inflight >= max_inflight {
                inp.idle = true;
                return;
            }
            let local = inp.clock.local(self.now);
            let ts = match self.cfg.mode {
                Mode::BestEffort => match inp.be.next(&inp.credits) {
                    Some(ts) => {
                        inp.be.sent();
                        ts
                    }
                    None => {
                        inp.idle = !inp.be.finished();
                        return;
                    }
                },
                Mode::Dfs => {
                    let credits = &inp.credits;
                    let p = inp.ie.poll(local, &mut |ts| credits.allows(ts));
                    if i == 0 {
                        self.check_interval_drop();
                    }
                    let inp = &mut self.inputs[i];
                    match p {
                        Poll::Send(ts) => {
                            inp.ie.sent(ts, local);
                            ts
                        }
                        Poll::WaitUntil(tl) => {
                            inp.idle = true;
                            let t = inp.clock.true_of(tl).max(self.now + 1);
                            if t < inp.wake_at {
                                inp.wake_at = t;
                                self.push(t, Ev::Wake(i as u32));
                            }
                            return;
                        }
                        Poll::Idle => {
                            inp.idle = true;
                            return;
                        }
                        Poll::Done => {
                            inp.done = true;
                            return;
                        }
                    }
                }
            };
            let inp = &mut self.inputs[i];
            inp.idle = false;
            inp.inflight += 1;
            self.sent += 1;
            self.first_send.get_or_insert(self.now);
            let cn = model::compute_of(ts, nc);
            self.net
                .start(i, ni + cn, bytes, (i, ts), self.now, &mut self.resched);
            self.flush_resched();
        }
    }

    fn check_interval_drop(&mut self) {
        let cur = self.inputs[0].ie.current_interval();
        if cur == self.input0_interval {
            return;
        }
        self.input0_interval = cur;
        let Some(j) = cur else { return };
        let mut f = 1.0;
        for d in &self.cfg.drops {
            if let DropWindow::Intervals { first, last } = d.window {
                if (first..=last).contains(&j) {
                    f *= d.factor;
                }
            }
        }
        if f != self.scale_interval {
            self.scale_interval = f;
            self.apply_scale();
        }
        let acc = self.interval_acc(j);
        acc.dropped = f < 1.0;
    }

    fn interval_acc(&mut self, j: u64) -> &mut IntervalAcc {
        while self.intervals.len() as u64 <= j {
            self.intervals.push(IntervalAcc {
                proposed: Vec::new(),
                actual: Vec::new(),
                starts: Vec::new(),
                dropped: false,
            });
        }
        &mut self.intervals[j as usize]
    }

    fn arrive(&mut self, i: usize, ts: u64) {
        let nc = self.computes.len();
        let c = model::compute_of(ts, nc);
        let bytes = self.cfg.topology.mts_bytes;
        let cs = &mut self.computes[c];
        let local = cs.clock.local(self.now);
        let sum = model::descriptor_checksum(i as u32, ts, bytes);
        let out = cs.node.on_arrival(
            Arrival {
                input: i,
                ts,
                carried_checksum: sum,
                computed_checksum: sum,
            },
            local,
        );
        if matches!(out, ArrivalOutcome::Stored | ArrivalOutcome::Completed(_)) {
            self.delivered += 1;
            self.last_arrival = self.now;
            if self.warm_time.is_none()
                && self.delivered >= self.warmup_ts * self.inputs.len() as u64
            {
                self.warm_time = Some(self.now);
            }
        }
        if let ArrivalOutcome::Completed(comp) = out {
            let d = comp.duration().max(0) as u64;
            self.completion_all.record(Nanos(d));
            if ts >= self.warmup_ts {
                self.completion.record(Nanos(d));
            }
            let p = self.rng.exp(self.cfg.net.processing_ns).round() as i64;
            self.push(self.now + p, Ev::Release(c as u32, comp.local));
        }
        let d = self.msg_delay();
        self.push(self.now + d, Ev::Ack(i as u32, ts));
    }

    fn ack(&mut self, i: usize, ts: u64) {
        let inp = &mut self.inputs[i];
        inp.inflight -= 1;
        if self.cfg.mode == Mode::Dfs {
            let local = inp.clock.local(self.now);
            inp.ie.on_ack(ts, local);
            while let Some(r) = self.inputs[i].ie.take_report() {
                let cl = self.inputs[i].clock;
                let a = r.actual;
                let start_true = cl.true_of(a.start);
                let end_true = cl.true_of(a.start + a.duration);
                let acc = self.interval_acc(a.index);
                acc.actual.push(end_true - start_true);
                acc.starts.push(start_true);
                if let Some(pd) = a.proposed_duration {
                    acc.proposed.push(pd);
                }
                for r_idx in 0..self.ddes.len() {
                    if self.ddes[r_idx].is_some() {
                        let d = self.msg_delay();
                        self.push(self.now + d, Ev::Report(r_idx as u32, Box::new(r)));
                    }
                }
            }
        }
        self.poll(i);
    }

    fn report(&mut self, r: usize, rep: &Report) {
        let local = self.computes[r].clock.local(self.now);
        let Some(d) = self.ddes[r].as_mut() else {
            return;
        };
        let out = d.on_report(rep, local);
        for (i, p) in out {
            let d = self.msg_delay();
            self.push(self.now + d, Ev::Proposal(i as u32, p));
        }
    }

    fn sample(&mut self) {
        let slots = self.cfg.topology.slots_per_input as usize;
        let mut counts = vec![0u64; slots + 1];
        let mut sum = 0u64;
        let mut n = 0u64;
        for c in &self.computes {
            self.scratch.clear();
            for i in 0..self.inputs.len() {
                let f = c.node.fill(i).min(slots as u32);
                self.scratch.push(f);
                counts[f as usize] += 1;
                sum += f as u64;
                n += 1;
            }
            self.scratch.sort_unstable_by(|a, b| b.cmp(a));
            for (rank, &f) in self.scratch.iter().enumerate() {
                self.rank_counts[rank][f as usize] += 1;
            }
        }
        let scale = 100.0 / slots as f64;
        self.fill.push(FillSample {
            t_ms: self.now as f64 / 1e6,
            fill: FiveNum::from_counts(&counts, scale),
            mean: sum as f64 * scale / n.max(1) as f64,
        });
    }

    fn finish(self) -> SimOutcome {
        let cfg = self.cfg;
        let mut compute = ComputeCounters::default();
        let mut incomplete = 0;
        for c in &self.computes {
            let k = c.node.counters();
            compute.stored += k.stored;
            compute.checksum_failures += k.checksum_failures;
            compute.duplicates += k.duplicates;
            compute.overruns += k.overruns;
            compute.misrouted += k.misrouted;
            compute.completed += k.completed;
            compute.released += k.released;
            incomplete += c.node.incomplete();
        }
        let mut ie = IeCounters::default();
        for inp in &self.inputs {
            let k = inp.ie.counters();
            ie.proposals_used += k.proposals_used;
            ie.proposals_ignored += k.proposals_ignored;
            ie.proposals_late += k.proposals_late;
            ie.fallbacks += k.fallbacks;
            ie.best_effort_intervals += k.best_effort_intervals;
            ie.catch_up_sends += k.catch_up_sends;
            ie.stray_acks += k.stray_acks;
        }
        let mut dde = DdeCounters::default();
        let mut first_live: Option<&Dde> = None;
        for d in self.ddes.iter().flatten() {
            let k = d.counters();
            dde.reports += k.reports;
            dde.duplicate_reports += k.duplicate_reports;
            dde.unified += k.unified;
            dde.proposals += k.proposals;
            dde.sent += k.sent;
            dde.speedups += k.speedups;
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
            events: self.events,
            complete: compute.completed == total && incomplete == 0,
        };
        SimOutcome {
            data,
            completion: self.completion,
            completion_all: self.completion_all,
        }
    }
}
