//! `latlab dfs run`: the state machines over MPI (feature `mpi`).
//!
//! Ranks `0..I` are input nodes, ranks `I..I+C` compute nodes; DDE replicas run on the first
//! `replicas` compute nodes. Rank 0 resolves the configuration and broadcasts it.
//!
//! - **Data, one-sided:** every compute node exposes one RMA window holding, per input, a
//!   ring of `slots` slots of `header + mts` bytes. An input writes a contribution (header
//!   with input, time-slice, length and checksum, then the payload) into its slot with
//!   `MPI_Put` + `MPI_Win_flush` ([`latlab_sys::mpi_rma`]).
//! - **Control, two-sided:** the input then sends `WRITTEN(ts)` (FLESnet's SYNC carrying the
//!   descriptor); the compute node reads the slot, verifies header and checksum, feeds
//!   [`ComputeNode`], answers `ACK(ts)` (the IE's acknowledgement) and, whenever its ack
//!   pointer moves, `CREDIT(ack)` to every input. Inputs send `REPORT` (actual interval
//!   meta-data) to every live DDE replica and receive `PROPOSAL`s; at the end `FINISHED`
//!   and the per-rank statistics go to rank 0, which writes the result.
//! - Every rank's clock is `CLOCK_MONOTONIC` plus an optional injected offset
//!   (`rank × clock_skew`) and drift, so the clock synchroniser has something to recover
//!   even on one host.
//!
//! A DDE "kill" stops the replica inside a live process (it ignores all later reports): a
//! real process crash would take the whole Open MPI job down (no ULFM).

use crate::compute::{Arrival, ArrivalOutcome, ComputeCounters, ComputeNode};
use crate::dde::{Dde, DdeCounters};
use crate::ie::{ActualMeta, IeCounters, InputEngine, Poll, Proposal, Report};
use crate::model::{self, ContributionHeader, HEADER_BYTES};
use crate::params::Mode;
use crate::sender::{BestEffortSender, Credits};
use crate::sim::{FillSample, FiveNum, IntervalRow};
use crate::Time;
use latlab_core::hist::{HistConfig, LatencyHistogram};
use latlab_core::results::{Provenance, ResultFile, StoredHistogram};
use latlab_core::units::Nanos;
use latlab_sys::mpi_rma::{RmaError, Window};
use mpi::traits::*;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub use crate::mpidata::{RunConfig, RunData, RUN_KIND as RESULT_KIND};

/// Why an MPI run failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// MPI could not be initialised (or already was).
    #[error("MPI initialisation failed (run under mpirun, e.g. mpirun -n 8 latlab dfs run ...)")]
    Init,
    /// The number of ranks does not match inputs + computes.
    #[error("started with {ranks} MPI ranks but --inputs {inputs} + --computes {computes} = {need}; run mpirun -n {need}")]
    Ranks {
        /// Ranks started.
        ranks: usize,
        /// Inputs wanted.
        inputs: usize,
        /// Computes wanted.
        computes: usize,
        /// Their sum.
        need: usize,
    },
    /// Rank 0 rejected the configuration.
    #[error("{0}")]
    Config(String),
    /// An RMA call failed.
    #[error(transparent)]
    Rma(#[from] RmaError),
    /// A message could not be decoded.
    #[error("malformed message from rank {0}: {1}")]
    Message(i32, String),
}

const TAG_WRITTEN: i32 = 1;
const TAG_ACK: i32 = 2;
const TAG_CREDIT: i32 = 3;
const TAG_REPORT: i32 = 4;
const TAG_PROPOSAL: i32 = 5;
const TAG_FINISHED: i32 = 6;
const TAG_STATS: i32 = 7;

fn u64s(b: &[u8]) -> impl Iterator<Item = u64> + '_ {
    b.chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
}

fn enc(v: &[u64], out: &mut Vec<u8>) {
    out.clear();
    for x in v {
        out.extend_from_slice(&x.to_le_bytes());
    }
}

/// Statistics each rank sends to rank 0 at the end.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct RankStats {
    rank: usize,
    /// input: contributions sent
    sent: u64,
    /// input: first send / last ack (shared monotonic clock, ns)
    start_ns: u64,
    end_ns: u64,
    ie: IeCounters,
    reports: Vec<ActualMeta>,
    /// local clock minus monotonic at start (to convert report times)
    clock_offset_ns: i64,
    clock_drift: f64,
    compute: ComputeCounters,
    incomplete: u64,
    completion_b64: Option<String>,
    completion_all_b64: Option<String>,
    first_arrival_ns: u64,
    last_arrival_ns: u64,
    fill: Vec<(u64, Vec<u32>)>,
    dde: Option<DdeCounters>,
    dde_killed: bool,
    speedups: Vec<u64>,
}

/// A node-local clock: monotonic time plus injected offset and drift.
#[derive(Clone, Copy, Debug)]
struct LocalClock {
    t0: u64,
    offset: i64,
    drift: f64,
}

impl LocalClock {
    fn now(&self) -> Time {
        let m = latlab_sys::clocks::monotonic_ns();
        let since = (m - self.t0) as i64;
        self.t0 as i64 + since + self.offset + (self.drift * since as f64) as i64
    }
    fn mono_of(&self, local: Time) -> u64 {
        let since = ((local - self.offset - self.t0 as i64) as f64 / (1.0 + self.drift)) as i64;
        (self.t0 as i64 + since).max(0) as u64
    }
}

fn idle_wait(idle: &mut u32) {
    *idle += 1;
    if *idle > 200 {
        std::thread::sleep(std::time::Duration::from_micros(50));
    } else {
        std::thread::yield_now();
    }
}

/// Runs under MPI. `resolve` is called on rank 0 only and returns the configuration (or a
/// message rejecting the command line); it is broadcast to every rank. Returns the result
/// file on rank 0, `None` elsewhere.
pub fn run(
    resolve: impl FnOnce(usize) -> Result<RunConfig, String>,
    argv: Vec<String>,
    provenance: impl FnOnce() -> Provenance,
) -> Result<Option<ResultFile>, RunError> {
    let universe = mpi::initialize().ok_or(RunError::Init)?;
    let world = universe.world();
    let rank = world.rank() as usize;
    let size = world.size() as usize;
    let cfg = broadcast_config(&world, || {
        let c = resolve(size)?;
        c.validate().map_err(|e| e.to_string())?;
        Ok(c)
    })
    .map_err(|e| RunError::Message(0, e.to_string()))?
    .map_err(RunError::Config)?;
    let (ni, nc) = (cfg.topology.inputs, cfg.topology.computes);
    if ni + nc != size {
        return Err(RunError::Ranks {
            ranks: size,
            inputs: ni,
            computes: nc,
            need: ni + nc,
        });
    }
    let window_bytes = if rank >= ni {
        ni * cfg.topology.slots_per_input as usize * cfg.slot_bytes()
    } else {
        0
    };
    let win = Window::allocate(&world, window_bytes)?;
    world.barrier();
    let t0 = latlab_sys::clocks::monotonic_ns();
    let clock = LocalClock {
        t0,
        offset: rank as i64 * cfg.clock_skew_ns,
        drift: rank as f64 * cfg.drift_ppm * 1e-6,
    };
    let begin_local = clock.now();
    let mut early_stats: Vec<Vec<u8>> = Vec::new();
    let stats = if rank < ni {
        input_loop(&world, &win, &cfg, rank, clock, &mut early_stats)
    } else {
        compute_loop(&world, &win, &cfg, rank, clock, begin_local)
    };
    let stats = match stats {
        Ok(s) => s,
        Err(e) => {
            // the other ranks would wait for this one for ever: take the job down
            eprintln!("latlab: error: rank {rank}: {e}");
            world.abort(1);
        }
    };
    let mut result = None;
    if rank == 0 {
        let mut all = vec![stats];
        for b in &early_stats {
            let s: RankStats =
                serde_json::from_slice(b).map_err(|e| RunError::Message(-1, e.to_string()))?;
            all.push(s);
        }
        let mut buf = Vec::new();
        while all.len() < size {
            let (m, st) = world.any_process().matched_probe_with_tag(TAG_STATS);
            let n = st.count(u8::equivalent_datatype()) as usize;
            buf.resize(n, 0);
            m.matched_receive_into(&mut buf[..]);
            let s: RankStats = serde_json::from_slice(&buf)
                .map_err(|e| RunError::Message(st.source_rank(), e.to_string()))?;
            all.push(s);
        }
        result = Some(assemble(&cfg, size, all, argv, provenance()));
    } else {
        let b = serde_json::to_vec(&stats).expect("serialisable");
        world.process_at_rank(0).send_with_tag(&b[..], TAG_STATS);
    }
    world.barrier();
    drop(win);
    Ok(result)
}

/// Rank 0 resolves (and checks) the configuration and broadcasts it; every rank returns
/// the same configuration, or rank 0's reason for rejecting it. `Err` when the broadcast
/// bytes do not decode.
pub(crate) fn broadcast_config<T: Serialize + serde::de::DeserializeOwned>(
    world: &impl Communicator,
    resolve: impl FnOnce() -> Result<T, String>,
) -> Result<Result<T, String>, serde_json::Error> {
    let mut msg: Vec<u8> = Vec::new();
    if world.rank() == 0 {
        msg = serde_json::to_vec(&resolve()).expect("serialisable");
    }
    let mut len = msg.len() as u64;
    world.process_at_rank(0).broadcast_into(&mut len);
    msg.resize(len as usize, 0);
    world.process_at_rank(0).broadcast_into(&mut msg[..]);
    serde_json::from_slice(&msg)
}

/// Receives the next pending message, if any, into `rx` (grown as needed): its length and
/// status.
fn receive_pending(
    world: &impl Communicator,
    rx: &mut Vec<u8>,
) -> Option<(usize, mpi::point_to_point::Status)> {
    let (m, st) = world.any_process().immediate_matched_probe()?;
    let n = st.count(u8::equivalent_datatype()) as usize;
    if rx.len() < n {
        rx.resize(n, 0);
    }
    m.matched_receive_into(&mut rx[..n]);
    Some((n, st))
}

fn send(world: &impl Communicator, to: usize, tag: i32, b: &[u8]) {
    world.process_at_rank(to as i32).send_with_tag(b, tag);
}

fn input_loop(
    world: &mpi::topology::SimpleCommunicator,
    win: &Window<'_>,
    cfg: &RunConfig,
    rank: usize,
    clock: LocalClock,
    early_stats: &mut Vec<Vec<u8>>,
) -> Result<RankStats, RunError> {
    let (ni, nc) = (cfg.topology.inputs, cfg.topology.computes);
    let total = cfg.total_ts();
    let input = rank;
    let slots = cfg.topology.slots_per_input as usize;
    let sb = cfg.slot_bytes();
    let mts = cfg.topology.mts_bytes as usize;
    let mut credits = Credits::new(nc, cfg.topology.slots_per_input);
    let mut be = BestEffortSender::new(input, nc, total);
    let mut ie = InputEngine::new(input, nc, cfg.params, total);
    let mut buf = vec![0u8; sb];
    let mut rx = vec![0u8; 256];
    let mut tx = Vec::with_capacity(64);
    let mut acked = 0u64;
    let mut sent = 0u64;
    let mut reports = Vec::new();
    let mut replicas_alive = vec![true; cfg.replicas()];
    let start_ns = latlab_sys::clocks::monotonic_ns();
    let mut idle = 0u32;
    let mut wait_until: Option<Time> = None;
    loop {
        let mut progress = false;
        // control messages
        while let Some((n, st)) = receive_pending(world, &mut rx) {
            progress = true;
            let from = st.source_rank();
            let b = &rx[..n];
            match st.tag() {
                TAG_ACK => {
                    let mut it = u64s(b);
                    let (Some(ts), Some(ack)) = (it.next(), it.next()) else {
                        return Err(RunError::Message(from, "short ACK".into()));
                    };
                    credits.on_ack_pointer(from as usize - ni, ack);
                    acked += 1;
                    if cfg.mode == Mode::Dfs {
                        ie.on_ack(ts, clock.now());
                        while let Some(r) = ie.take_report() {
                            reports.push(r.actual);
                            let b = serde_json::to_vec(&r).expect("serialisable");
                            for (k, alive) in replicas_alive.iter().enumerate() {
                                if *alive {
                                    send(world, ni + k, TAG_REPORT, &b);
                                }
                            }
                        }
                    }
                }
                TAG_CREDIT => {
                    let ack = u64s(b).next().unwrap_or(0);
                    credits.on_ack_pointer(from as usize - ni, ack);
                }
                TAG_PROPOSAL => {
                    if b.is_empty() {
                        // the replica announces that it stopped
                        replicas_alive[from as usize - ni] = false;
                    } else {
                        let p: Proposal = serde_json::from_slice(b)
                            .map_err(|e| RunError::Message(from, e.to_string()))?;
                        ie.on_proposal(p);
                        wait_until = None;
                    }
                }
                // rank 0 collects statistics at the end; a rank that finished early sends
                // them while rank 0 is still sending
                TAG_STATS if rank == 0 => early_stats.push(b.to_vec()),
                t => {
                    return Err(RunError::Message(
                        from,
                        format!("unexpected tag {t} at an input"),
                    ))
                }
            }
        }
        // send what is due
        let mut done = false;
        if wait_until.map_or(true, |t| clock.now() >= t) {
            wait_until = None;
            loop {
                let ts = match cfg.mode {
                    Mode::BestEffort => match be.next(&credits) {
                        Some(ts) => {
                            be.sent();
                            ts
                        }
                        None => {
                            done = be.finished() && acked == sent;
                            break;
                        }
                    },
                    Mode::Dfs => {
                        let now = clock.now();
                        match ie.poll(now, &mut |ts| credits.allows(ts)) {
                            Poll::Send(ts) => {
                                ie.sent(ts, now);
                                ts
                            }
                            Poll::WaitUntil(t) => {
                                wait_until = Some(t);
                                break;
                            }
                            Poll::Idle => break,
                            Poll::Done => {
                                done = true;
                                break;
                            }
                        }
                    }
                };
                progress = true;
                let cn = model::compute_of(ts, nc);
                let k = model::local_index(ts, nc) as usize;
                model::fill_payload(input as u32, ts, &mut buf[HEADER_BYTES..]);
                ContributionHeader {
                    input: input as u32,
                    ts,
                    len: mts as u64,
                    checksum: model::checksum(&buf[HEADER_BYTES..]),
                }
                .write(&mut buf[..HEADER_BYTES]);
                let off = (input * slots + k % slots) * sb;
                win.put_flush((ni + cn) as i32, off, &buf)?;
                enc(&[ts], &mut tx);
                send(world, ni + cn, TAG_WRITTEN, &tx);
                sent += 1;
            }
        }
        if done {
            break;
        }
        if progress {
            idle = 0;
        } else {
            idle_wait(&mut idle);
        }
    }
    let end_ns = latlab_sys::clocks::monotonic_ns();
    for cn in 0..nc {
        send(world, ni + cn, TAG_FINISHED, &[]);
    }
    Ok(RankStats {
        rank,
        sent,
        start_ns,
        end_ns,
        ie: ie.counters(),
        reports,
        clock_offset_ns: clock.offset,
        clock_drift: clock.drift,
        ..RankStats::default()
    })
}

fn compute_loop(
    world: &mpi::topology::SimpleCommunicator,
    win: &Window<'_>,
    cfg: &RunConfig,
    rank: usize,
    clock: LocalClock,
    begin_local: Time,
) -> Result<RankStats, RunError> {
    let (ni, nc) = (cfg.topology.inputs, cfg.topology.computes);
    let c = rank - ni;
    let slots = cfg.topology.slots_per_input as usize;
    let sb = cfg.slot_bytes();
    let mut node = ComputeNode::new(c, ni, nc, cfg.topology.slots_per_input);
    let mut dde = (c < cfg.replicas()).then(|| Dde::new(ni, cfg.params));
    if let Some(d) = dde.as_mut() {
        for i in 0..ni {
            // all ranks left the same barrier: seed with the injected offsets
            let input_begin = begin_local - (rank as i64 - i as i64) * cfg.clock_skew_ns;
            d.clock_mut().seed(i, input_begin, begin_local);
        }
    }
    let mut killed = false;
    let hc = HistConfig::default();
    let mut completion = LatencyHistogram::new(hc).expect("valid");
    let mut completion_all = LatencyHistogram::new(hc).expect("valid");
    let len = cfg.params.interval_len(nc);
    let warmup_ts = warmup(cfg.total_ts(), len);
    let mut slot = vec![0u8; sb];
    let mut rx = vec![0u8; 4096];
    let mut tx = Vec::with_capacity(64);
    let mut finished = 0usize;
    let mut first_arrival = 0u64;
    let mut last_arrival = 0u64;
    let expected = cfg.total_ts() / nc as u64;
    let mut fill: Vec<(u64, Vec<u32>)> = Vec::with_capacity(4096);
    let mut next_sample = latlab_sys::clocks::monotonic_ns();
    let mut idle = 0u32;
    let mut speedups = Vec::new();
    loop {
        let mut progress = false;
        while let Some((n, st)) = receive_pending(world, &mut rx) {
            progress = true;
            let from = st.source_rank() as usize;
            match st.tag() {
                TAG_WRITTEN => {
                    let ts = u64s(&rx[..n]).next().unwrap_or(u64::MAX);
                    let k = model::local_index(ts, nc) as usize;
                    let off = (from * slots + k % slots) * sb;
                    win.sync()?;
                    win.read_local(off, &mut slot)?;
                    let hdr = ContributionHeader::read(&slot);
                    let computed = model::checksum(&slot[HEADER_BYTES..]);
                    let carried = match hdr {
                        Some(h)
                            if h.input as usize == from
                                && h.ts == ts
                                && h.len as usize == slot.len() - HEADER_BYTES =>
                        {
                            h.checksum
                        }
                        // a wrong or missing header counts as a checksum failure
                        _ => !computed,
                    };
                    let now = clock.now();
                    let mono = latlab_sys::clocks::monotonic_ns();
                    if first_arrival == 0 {
                        first_arrival = mono;
                    }
                    last_arrival = mono;
                    let out = node.on_arrival(
                        Arrival {
                            input: from,
                            ts,
                            carried_checksum: carried,
                            computed_checksum: computed,
                        },
                        now,
                    );
                    enc(&[ts, node.ack_pointer()], &mut tx);
                    send(world, from, TAG_ACK, &tx);
                    if let ArrivalOutcome::Completed(comp) = out {
                        let d = Nanos(comp.duration().max(0) as u64);
                        completion_all.record(d);
                        if ts >= warmup_ts {
                            completion.record(d);
                        }
                        if let Some(ack) = node.release(comp.local) {
                            enc(&[ack], &mut tx);
                            for i in 0..ni {
                                send(world, i, TAG_CREDIT, &tx);
                            }
                        }
                    }
                }
                TAG_REPORT => {
                    let r: Report = serde_json::from_slice(&rx[..n])
                        .map_err(|e| RunError::Message(from as i32, e.to_string()))?;
                    if let Some((k, at)) = cfg.kill_dde {
                        if k == c && r.actual.index >= at && !killed {
                            killed = true;
                            // tell the inputs this replica is gone (a heartbeat timeout in
                            // FLESnet's later versions); reports to it stop
                            for i in 0..ni {
                                send(world, i, TAG_PROPOSAL, &[]);
                            }
                        }
                    }
                    if !killed {
                        if let Some(d) = dde.as_mut() {
                            for (i, p) in d.on_report(&r, clock.now()) {
                                let b = serde_json::to_vec(&p).expect("serialisable");
                                send(world, i, TAG_PROPOSAL, &b);
                            }
                        }
                    }
                }
                TAG_FINISHED => finished += 1,
                t => {
                    return Err(RunError::Message(
                        from as i32,
                        format!("unexpected tag {t} at a compute node"),
                    ))
                }
            }
        }
        let mono = latlab_sys::clocks::monotonic_ns();
        if mono >= next_sample {
            fill.push((mono, (0..ni).map(|i| node.fill(i)).collect()));
            next_sample = mono + cfg.sample_ns.max(1) as u64;
        }
        if finished == ni && node.counters().released >= expected {
            break;
        }
        if finished == ni && !progress {
            // every input is done: whatever is still incomplete stays incomplete (counted)
            break;
        }
        if progress {
            idle = 0;
        } else {
            idle_wait(&mut idle);
        }
    }
    if let Some(d) = &dde {
        speedups = d
            .proposals()
            .iter()
            .filter(|(_, p)| p.ssu.speedup)
            .map(|(j, _)| *j)
            .collect();
    }
    Ok(RankStats {
        rank,
        compute: node.counters(),
        incomplete: node.incomplete(),
        completion_b64: Some(completion.to_base64()),
        completion_all_b64: Some(completion_all.to_base64()),
        first_arrival_ns: first_arrival,
        last_arrival_ns: last_arrival,
        fill,
        dde: dde.as_ref().map(|d| d.counters()),
        dde_killed: killed,
        speedups,
        clock_offset_ns: clock.offset,
        clock_drift: clock.drift,
        ..RankStats::default()
    })
}

fn warmup(total: u64, len: u64) -> u64 {
    if total > 3 * len {
        2 * len
    } else {
        0
    }
}

fn assemble(
    cfg: &RunConfig,
    ranks: usize,
    mut all: Vec<RankStats>,
    argv: Vec<String>,
    provenance: Provenance,
) -> ResultFile {
    all.sort_by_key(|s| s.rank);
    let ni = cfg.topology.inputs;
    let hc = HistConfig::default();
    let mut completion = LatencyHistogram::new(hc).expect("valid");
    let mut completion_all = LatencyHistogram::new(hc).expect("valid");
    let mut compute = ComputeCounters::default();
    let mut ie = IeCounters::default();
    let mut dde = DdeCounters::default();
    let mut dde_killed = 0;
    let mut sent = 0;
    let mut incomplete = 0;
    let mut start = u64::MAX;
    let mut end = 0u64;
    let mut warnings = Vec::new();
    let mut speed: BTreeMap<u64, bool> = BTreeMap::new();
    for s in &all {
        if s.rank < ni {
            sent += s.sent;
            start = start.min(s.start_ns);
            ie += s.ie;
        } else {
            compute += s.compute;
            incomplete += s.incomplete;
            end = end.max(s.last_arrival_ns);
            for (b64, h) in [
                (&s.completion_b64, &mut completion),
                (&s.completion_all_b64, &mut completion_all),
            ] {
                match b64
                    .as_deref()
                    .map(|b| LatencyHistogram::from_base64(b, hc, 0))
                {
                    Some(Ok(x)) => {
                        if h.merge(&x).is_err() {
                            warnings.push(format!("rank {}: histogram merge failed", s.rank));
                        }
                    }
                    _ => warnings.push(format!("rank {}: histogram missing or corrupt", s.rank)),
                }
            }
            if let Some(d) = s.dde {
                dde += d;
            }
            if s.dde_killed {
                dde_killed += 1;
            }
            for j in &s.speedups {
                speed.insert(*j, true);
            }
        }
    }
    // intervals from the inputs' reports, times in the shared monotonic clock
    /// (starts, durations, proposed durations) of one interval over the inputs
    type Acc = (Vec<i64>, Vec<i64>, Vec<i64>);
    let mut by_j: BTreeMap<u64, Acc> = BTreeMap::new();
    for s in all.iter().filter(|s| s.rank < ni) {
        let cl = LocalClock {
            t0: start.min(s.start_ns),
            offset: s.clock_offset_ns,
            drift: s.clock_drift,
        };
        for a in &s.reports {
            let e = by_j.entry(a.index).or_default();
            let st = cl.mono_of(a.start) as i64;
            e.0.push(st);
            e.1.push(cl.mono_of(a.start + a.duration) as i64 - st);
            if let Some(p) = a.proposed_duration {
                e.2.push(p);
            }
        }
    }
    let intervals = by_j
        .into_iter()
        .map(|(j, (mut st, mut act, mut prop))| {
            let spread = st.iter().max().unwrap_or(&0) - st.iter().min().unwrap_or(&0);
            let full = prop.len() == act.len();
            IntervalRow {
                index: j,
                proposed_ms: if full {
                    crate::stats::median_i64(&mut prop).map(|v| v as f64 / 1e6)
                } else {
                    None
                },
                actual_ms: crate::stats::median_i64(&mut act).unwrap_or(0) as f64 / 1e6,
                start_spread_ms: spread as f64 / 1e6,
                start_ms: (crate::stats::median_i64(&mut st).unwrap_or(0) - start as i64) as f64
                    / 1e6,
                speedup: speed.contains_key(&j),
                dropped: false,
            }
        })
        .collect();
    // buffer fill: merge every compute node's samples into 1 ms-ish buckets by time order
    let slots = cfg.topology.slots_per_input as f64;
    let mut fill = Vec::new();
    let computes: Vec<&RankStats> = all.iter().filter(|s| s.rank >= ni).collect();
    let nsamples = computes.iter().map(|s| s.fill.len()).min().unwrap_or(0);
    for k in 0..nsamples {
        let mut counts = vec![0u64; cfg.topology.slots_per_input as usize + 1];
        let mut sum = 0u64;
        let mut n = 0u64;
        let mut t = 0u64;
        for s in &computes {
            let (ts, v) = &s.fill[k];
            t = t.max(*ts);
            for &f in v {
                let top = counts.len() - 1;
                counts[(f as usize).min(top)] += 1;
                sum += f as u64;
                n += 1;
            }
        }
        fill.push(FillSample {
            t_ms: t.saturating_sub(start) as f64 / 1e6,
            fill: FiveNum::from_counts(&counts, 100.0 / slots),
            mean: sum as f64 * 100.0 / slots / n.max(1) as f64,
        });
    }
    let total = cfg.total_ts();
    let expected = total * ni as u64;
    let dur_ns = end.saturating_sub(start).max(1);
    let bytes = compute.stored as f64 * cfg.topology.mts_bytes as f64;
    let lost = expected.saturating_sub(compute.stored);
    let verified = compute.completed == total
        && incomplete == 0
        && lost == 0
        && compute.checksum_failures == 0
        && compute.duplicates == 0
        && compute.overruns == 0
        && compute.misrouted == 0;
    let var = if completion.count() > 0 {
        (completion.stdev() / 1e6).powi(2)
    } else {
        0.0
    };
    let data = RunData {
        config: cfg.clone(),
        ranks,
        time_slices: total,
        warmup_ts: warmup(total, cfg.params.interval_len(cfg.topology.computes)),
        completion_ms: FiveNum::from_hist(&completion, 1e6),
        completion_var_ms2: var,
        bandwidth_gbs: bytes / dur_ns as f64,
        duration_ms: dur_ns as f64 / 1e6,
        intervals,
        fill,
        compute,
        ie,
        dde,
        dde_killed,
        sent,
        expected,
        lost,
        verified,
    };
    let mut r = ResultFile::new(
        RESULT_KIND,
        argv,
        serde_json::to_value(cfg).expect("serialisable"),
        provenance,
    );
    r.duration_ns = dur_ns;
    let mode = cfg.mode.name();
    r.histograms.push(
        StoredHistogram::new("completion", &completion)
            .with_label("mode", mode)
            .with_label("runtime", "mpi"),
    );
    r.histograms.push(
        StoredHistogram::new("completion_all", &completion_all)
            .with_label("mode", mode)
            .with_label("runtime", "mpi"),
    );
    let c = &mut r.counters;
    c.insert("time_slices".into(), total);
    c.insert("contributions_expected".into(), expected);
    c.insert("contributions_sent".into(), sent);
    c.insert("contributions_stored".into(), compute.stored);
    c.insert("contributions_lost".into(), lost);
    c.insert("checksum_failures".into(), compute.checksum_failures);
    c.insert("duplicates".into(), compute.duplicates);
    c.insert("overruns".into(), compute.overruns);
    c.insert("misrouted".into(), compute.misrouted);
    c.insert("completed".into(), compute.completed);
    c.insert("incomplete".into(), incomplete);
    c.insert("proposals_used".into(), ie.proposals_used);
    c.insert("fallback_intervals".into(), ie.fallbacks);
    c.insert("dde_killed".into(), dde_killed as u64);
    if !verified {
        warnings.push(format!(
            "not verified: {} of {total} time-slices completed, {lost} contributions lost, {} checksum failures, {} duplicates, {} overruns, {} misrouted",
            compute.completed, compute.checksum_failures, compute.duplicates, compute.overruns, compute.misrouted
        ));
    }
    r.warnings = warnings;
    r.data = serde_json::to_value(&data).expect("serialisable");
    r
}
