//! The MPI runtime of `--agents` (feature `mpi`).
//!
//! Every step that can fail on one rank ends in an agreement ([`agree`]: an all-gather of
//! each rank's status), so a rank that cannot go on never leaves the others waiting in a
//! later call: all of them stop there, knowing which rank failed and why.
//!
//! 1. Rank 0 resolves the plan and broadcasts it (JSON, with its latlab version); each
//!    rank decodes it and compares versions. *Agreement.*
//! 2. Each agent starts a thread that enters its namespace and checks it can bind its
//!    addresses and that the target does not refuse. *Agreement.* Then the one-way
//!    streams' ends start on threads of their own ([`super::oneway_run`]). *Agreement.*
//! 3. Clock round 0 ([`clock_round`]); rank 0 picks the start on its clock, maps it onto
//!    each agent's clock and sends it; the agents' probes start there.
//! 4. Clock rounds every `round_period_ns` while they run and one after.
//! 5. Each agent's probe finished or failed. *Agreement.* The agents send their results
//!    (result and interval log) to rank 0.
//!
//! MPI is only called from each process's main thread; the probe runs on the agent
//! thread, which alone enters the generator's namespace (so MPI's own connections stay in
//! the namespace mpirun started the rank in).

use super::clock::{self, ClockEstimate, ClockHook, Exchange, SkewedClock};
use super::oneway::{one_way_data, OneWayData, Stamps};
use super::oneway_run::{start_receiver, start_sender};
use super::plan::{own_version, phase_ns, AgentSpec, AgentsPlan};
use crate::run::{ProbeJob, ProbeRecord};
use latlab_core::results::ResultFile;
use mpi::traits::*;
use std::net::UdpSocket;
use std::sync::mpsc;
use std::time::Duration;

/// Bytes of one rank's status in an agreement (longer causes are cut).
const STATUS_BYTES: usize = 768;
/// How long an agent may take to enter its namespace and check its sockets.
const START_TIMEOUT: Duration = Duration::from_secs(20);
const TAG_PING: i32 = 31;
const TAG_PONG: i32 = 32;
const TAG_RESULT: i32 = 33;

/// Why an `--agents` run stopped: the rank that failed and why, as every rank learns it.
#[derive(Debug, thiserror::Error)]
#[error("rank {rank}: {cause}")]
pub struct Failure {
    /// The rank that failed (the lowest, when several did).
    pub rank: usize,
    /// Why.
    pub cause: String,
    /// Whether the command line (or the ranks' set-up) was wrong rather than the run.
    pub usage: bool,
    /// The rank that returns this (so only one rank prints it).
    pub own_rank: usize,
    /// Whether rank 0 has reported it already (through `report` of [`run`]).
    pub said: bool,
}

/// What rank 0 gathers: the plan, each agent's record (rank order) and clock estimate.
#[derive(Debug)]
pub struct Gathered {
    /// The plan that ran.
    pub plan: AgentsPlan,
    /// Each agent's result and interval log.
    pub records: Vec<ProbeRecord>,
    /// Each agent's clock against rank 0's.
    pub clocks: Vec<Option<ClockEstimate>>,
    /// The one-way streams' figures (`None` without streams).
    pub one_way: Option<OneWayData>,
}

/// What an agent sends rank 0 at the end.
#[derive(serde::Serialize, serde::Deserialize)]
struct AgentReport {
    result: ResultFile,
    interval_log: String,
    /// The one-way streams this rank received.
    stamps: Vec<Stamps>,
    /// Measured one-way probes this rank sent, per stream it sends.
    sent: Vec<u64>,
    /// This rank's clock (skewed only under the test hook).
    skew: SkewedClock,
}

/// Runs an `--agents` probe under MPI. `resolve` is called on rank 0 with the number of
/// ranks and returns the plan or a message rejecting the command line. Returns what rank
/// 0 gathered on rank 0, `None` elsewhere.
///
/// When the ranks agree that one failed, `report` is called with the failure on rank 0
/// only, and every rank waits for it (a barrier) before returning, so that the one line
/// is out before any rank exits (mpirun takes the job down when the first rank exits
/// with a failure).
///
/// # Errors
/// [`Failure`] naming the rank that failed, on every rank.
pub fn run(
    resolve: impl FnOnce(usize) -> Result<AgentsPlan, String>,
    argv: Vec<String>,
    started_utc: String,
    report: impl FnOnce(&Failure),
) -> Result<Option<Gathered>, Failure> {
    let universe = mpi::initialize().ok_or(Failure {
        rank: 0,
        cause: "MPI could not be initialised (run under mpirun)".into(),
        usage: false,
        own_rank: 0,
        said: false,
    })?;
    let world = universe.world();
    let (mut out, agreed) = run_ranks(&world, resolve, argv, started_utc);
    if let Err(f) = &mut out {
        if agreed {
            if f.own_rank == 0 {
                report(f);
            }
            f.said = true;
            world.barrier();
        }
    }
    out
}

/// [`run`] once MPI is up; `true` beside a failure every rank returns.
fn run_ranks(
    world: &mpi::topology::SimpleCommunicator,
    resolve: impl FnOnce(usize) -> Result<AgentsPlan, String>,
    argv: Vec<String>,
    started_utc: String,
) -> (Result<Option<Gathered>, Failure>, bool) {
    match run_agreed(world, resolve, argv, started_utc) {
        Ok(g) => (Ok(g), false),
        Err(Agreed(f)) => (Err(f), true),
        Err(Alone(f)) => (Err(f), false),
    }
}

/// A failure every rank returns, or one this rank alone does.
enum Stop {
    Agreed(Failure),
    Alone(Failure),
}
use Stop::{Agreed, Alone};

fn run_agreed(
    world: &mpi::topology::SimpleCommunicator,
    resolve: impl FnOnce(usize) -> Result<AgentsPlan, String>,
    argv: Vec<String>,
    started_utc: String,
) -> Result<Option<Gathered>, Stop> {
    let rank = world.rank() as usize;
    let size = world.size() as usize;
    let fail = |(r, cause): (usize, String), usage: bool| {
        Agreed(Failure {
            rank: r,
            cause,
            usage,
            own_rank: rank,
            said: false,
        })
    };

    // 1. the plan, and the same latlab everywhere
    let bytes = broadcast_bytes(world, || {
        serde_json::to_vec(&resolve(size)).expect("serialisable")
    });
    let decoded: Result<Result<AgentsPlan, String>, _> = serde_json::from_slice(&bytes);
    let mine = own_version(rank);
    let status = match &decoded {
        Ok(Err(_)) => Ok(()),
        Ok(Ok(p)) if p.version != mine => Err(format!(
            "runs latlab {mine}, rank 0 runs latlab {}: every rank must run the same latlab",
            p.version
        )),
        Ok(Ok(_)) => Ok(()),
        Err(e) => Err(format!(
            "cannot read rank 0's plan ({e}); it runs another latlab version than this rank's {mine}"
        )),
    };
    agree(world, status).map_err(|f| fail(f, true))?;
    let plan = match decoded {
        Ok(Ok(p)) => p,
        Ok(Err(m)) => return Err(fail((0, m), true)),
        Err(_) => unreachable!("agreed above"),
    };

    // 2. the agents start, in their namespaces
    let skew = ClockHook::clock_of(plan.clock_hook.as_ref(), rank, mono());
    let spec = plan.agents.iter().find(|a| a.rank == rank).cloned();
    let (go_tx, go_rx) = mpsc::channel::<i64>();
    let (ready_tx, ready_rx) = mpsc::channel::<Result<(), String>>();
    let agent = spec.clone().map(|spec| {
        let argv = argv.clone();
        let started = started_utc.clone();
        std::thread::Builder::new()
            .name("latlab-agent".into())
            .spawn(move || agent_thread(spec, &ready_tx, &go_rx, argv, started))
    });
    let started = match (&agent, &spec) {
        (Some(Err(e)), _) => Err(format!("cannot start the agent's thread: {e}")),
        (Some(Ok(_)), Some(_)) => wait_ready(&ready_rx, "the agent"),
        _ if rank == 0 => Ok(()),
        _ => Err("no agent is planned for this rank".into()),
    };
    if let Err(f) = agree(world, started) {
        drop(go_tx); // the agent thread sees no start and returns
        return Err(fail(f, false));
    }
    // the one-way streams this rank sends and receives (once every agent is in its
    // namespace, so that a missing namespace is blamed on its own agent)
    let p = &plan.total;
    let (warmup, duration) = (p.warmup.get() as i64, p.duration.get() as i64);
    let mut senders = Vec::new();
    let mut receivers = Vec::new();
    let mut one_way_started = Ok(());
    for st in &plan.one_way {
        let (tx, rx) = mpsc::channel();
        let end = if st.sender_rank == rank {
            start_sender(st.clone(), skew, warmup, duration, tx).map(|e| senders.push(e))
        } else if st.receiver_rank == rank {
            let cap = (u64::from(st.pps) * duration as u64 / 1_000_000_000 + 1024) as usize;
            start_receiver(st.clone(), skew, cap, tx).map(|e| receivers.push(e))
        } else {
            continue;
        };
        let what = format!(
            "the one-way stream {} → {}",
            st.sender_rank, st.receiver_rank
        );
        one_way_started = match end {
            Err(e) => Err(format!("cannot start {what}'s thread: {e}")),
            Ok(()) => wait_ready(&rx, &what).map_err(|e| {
                if e.starts_with(&what) {
                    e
                } else {
                    format!("{what}: {e}")
                }
            }),
        };
        if one_way_started.is_err() {
            break;
        }
    }
    if let Err(f) = agree(world, one_way_started) {
        drop(go_tx); // the agent thread sees no start and returns
        for s in senders {
            drop(s.go);
            let _ = s.thread.join();
        }
        for r in receivers {
            r.deadline.store(0, std::sync::atomic::Ordering::Release);
            let _ = r.thread.join();
        }
        return Err(fail(f, false));
    }

    // 3. clocks, then one start for all
    let agents = size - 1;
    let mut rounds: Vec<Vec<Vec<Exchange>>> = vec![Vec::new(); agents];
    clock_round(world, &plan, &skew, &mut rounds);
    let mut starts = vec![0i64; size];
    let start_ref = mono() + plan.start_lead_ns as i64;
    if rank == 0 {
        for (i, r) in rounds.iter().enumerate() {
            let est = clock::estimate(r);
            let phase = phase_ns(&plan.agents[i].job.probe, i, agents) as i64;
            starts[i + 1] = est.map_or(start_ref, |e| e.to_local(start_ref)) + phase;
        }
    }
    world.process_at_rank(0).broadcast_into(&mut starts[..]);
    let local_start = starts[rank];
    if rank != 0 {
        let _ = go_tx.send(skew.monotonic(local_start));
    }
    for s in &senders {
        let _ = s.go.send(local_start);
    }
    let stop_rx =
        skew.monotonic(local_start) + warmup + duration + p.drain.get() as i64 + 300_000_000;
    for r in &receivers {
        r.deadline
            .store(stop_rx, std::sync::atomic::Ordering::Release);
    }

    // 4. clock rounds through the run and one after it
    let run_ns = (p.warmup.get() + p.duration.get()) as i64;
    let period = plan.round_period_ns.max(1) as i64;
    let during = run_ns / period;
    for k in 1..=during {
        // rank 0 on its clock; an agent on its own, from its start (close enough to
        // sleep; the exchanges themselves are timed)
        let at = if rank == 0 { start_ref } else { local_start } + k * period;
        let now = if rank == 0 {
            mono()
        } else {
            skew.local(mono())
        };
        let lead = if rank == 0 { 0 } else { 2_000_000 };
        sleep_ns(at - now - lead);
        clock_round(world, &plan, &skew, &mut rounds);
    }
    let outcome = match agent {
        Some(Ok(h)) => h
            .join()
            .unwrap_or_else(|_| Err("the agent's thread panicked".into())),
        _ => Err(String::new()),
    };
    let sent: Vec<u64> = senders
        .into_iter()
        .map(|s| s.thread.join().ok().and_then(Result::ok).unwrap_or(0))
        .collect();
    let stamps: Vec<Stamps> = receivers
        .into_iter()
        .filter_map(|r| r.thread.join().ok())
        .collect();
    let end_ref = start_ref + run_ns + p.drain.get() as i64 + 50_000_000;
    if rank == 0 {
        sleep_ns(end_ref - mono());
    }
    clock_round(world, &plan, &skew, &mut rounds);

    // 5. every agent finished: results to rank 0
    let status = match (&outcome, rank) {
        (_, 0) => Ok(()),
        (Ok(_), _) => Ok(()),
        (Err(e), _) => Err(e.clone()),
    };
    agree(world, status).map_err(|f| fail(f, false))?;
    if rank != 0 {
        if let Ok(rec) = outcome {
            let report = AgentReport {
                result: rec.result,
                interval_log: String::from_utf8_lossy(&rec.interval_log).into_owned(),
                stamps,
                sent,
                skew,
            };
            let b = serde_json::to_vec(&report).expect("serialisable");
            world.process_at_rank(0).send_with_tag(&b[..], TAG_RESULT);
        }
        return Ok(None);
    }
    let mut records = Vec::new();
    let mut all_stamps = Vec::new();
    let mut sent_by = vec![0u64; size];
    let mut skews = vec![SkewedClock::default(); size];
    for r in 1..size {
        let (b, _) = world
            .process_at_rank(r as i32)
            .receive_vec_with_tag::<u8>(TAG_RESULT);
        let rep: AgentReport = serde_json::from_slice(&b).map_err(|e| {
            // the agents have returned already: no barrier
            Alone(Failure {
                rank: r,
                cause: format!("its result does not decode on rank 0: {e}"),
                usage: false,
                own_rank: 0,
                said: false,
            })
        })?;
        records.push(ProbeRecord {
            result: rep.result,
            interval_log: rep.interval_log.into_bytes(),
        });
        all_stamps.extend(rep.stamps);
        sent_by[r] = rep.sent.iter().sum();
        skews[r] = rep.skew;
    }
    let clocks: Vec<Option<ClockEstimate>> = rounds.iter().map(|r| clock::estimate(r)).collect();
    for s in &mut all_stamps {
        s.sent = sent_by.get(s.sender_rank).copied().unwrap_or(0);
    }
    let one_way = (!plan.one_way.is_empty()).then(|| {
        one_way_data(
            &all_stamps,
            &clocks,
            plan.clock_hook.is_some().then_some(&skews[..]),
        )
    });
    Ok(Some(Gathered {
        plan,
        records,
        clocks,
        one_way,
    }))
}

/// The first word of a thread that starts: whether it could, within [`START_TIMEOUT`].
fn wait_ready(rx: &mpsc::Receiver<Result<(), String>>, what: &str) -> Result<(), String> {
    rx.recv_timeout(START_TIMEOUT).unwrap_or_else(|_| {
        Err(format!(
            "{what} did not start within {} s",
            START_TIMEOUT.as_secs()
        ))
    })
}

fn mono() -> i64 {
    latlab_sys::clocks::monotonic_ns() as i64
}

fn sleep_ns(ns: i64) {
    if ns > 0 {
        std::thread::sleep(Duration::from_nanos(ns as u64));
    }
}

/// The agent's thread: enters the namespace, checks its sockets, waits for the start,
/// probes.
fn agent_thread(
    spec: AgentSpec,
    ready: &mpsc::Sender<Result<(), String>>,
    go: &mpsc::Receiver<i64>,
    argv: Vec<String>,
    started_utc: String,
) -> Result<ProbeRecord, String> {
    let checked = preflight(&spec);
    let failed = checked.is_err();
    let _ = ready.send(checked);
    if failed {
        return Err(String::new());
    }
    let Ok(start) = go.recv() else {
        return Err(String::new());
    };
    let job = ProbeJob {
        probe: spec.job.probe.starting_at(start),
        ..spec.job
    };
    let mut notice = |line: &str| eprintln!("latlab: rank {}: {line}", spec.rank);
    crate::run::probe(&job, argv, started_utc, &mut notice).map_err(|e| e.to_string())
}

/// What stops an agent before it sends anything: its namespace, its addresses, a target
/// that refuses (an ICMP port unreachable for a first datagram).
fn preflight(spec: &AgentSpec) -> Result<(), String> {
    if let Some(ns) = &spec.namespace {
        latlab_sys::netns::enter(ns).map_err(|e| e.to_string())?;
    }
    let cfg = &spec.job.probe;
    if let Some(rx) = cfg.rx_bind {
        UdpSocket::bind(rx).map_err(|e| format!("cannot bind the receive address {rx}: {e}"))?;
    }
    let s = UdpSocket::bind(cfg.tx_bind)
        .map_err(|e| format!("cannot bind the send address {}: {e}", cfg.tx_bind))?;
    let refused = |e: std::io::Error| {
        if e.kind() == std::io::ErrorKind::ConnectionRefused {
            format!(
                "the target {} refuses (port unreachable: is its forwarder or reflector running?)",
                cfg.target
            )
        } else {
            format!("cannot reach the target {}: {e}", cfg.target)
        }
    };
    s.connect(cfg.target).map_err(refused)?;
    // an empty datagram: a network function counts it as malformed and drops it
    s.send(&[]).map_err(refused)?;
    s.set_read_timeout(Some(Duration::from_millis(200)))
        .map_err(|e| e.to_string())?;
    let mut buf = [0u8; 64];
    match s.recv(&mut buf) {
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => Err(refused(e)),
        _ => Ok(()),
    }
}

/// One clock round: rank 0 exchanges `exchanges_per_round` ping-pongs with each agent in
/// turn and appends them to `rounds[agent]` (rank 0 only).
fn clock_round(
    world: &impl Communicator,
    plan: &AgentsPlan,
    skew: &SkewedClock,
    rounds: &mut [Vec<Vec<Exchange>>],
) {
    let rank = world.rank() as usize;
    let n = plan.exchanges_per_round;
    if rank == 0 {
        for (i, r) in rounds.iter_mut().enumerate() {
            let peer = world.process_at_rank(i as i32 + 1);
            let mut got = Vec::with_capacity(n as usize);
            for _ in 0..n {
                let t0 = mono();
                peer.send_with_tag(&t0, TAG_PING);
                let mut stamps = [0i64; 2];
                peer.receive_into_with_tag(&mut stamps[..], TAG_PONG);
                let t3 = mono();
                got.push(Exchange {
                    t0,
                    t1: stamps[0],
                    t2: stamps[1],
                    t3,
                });
            }
            r.push(got);
        }
    } else {
        let root = world.process_at_rank(0);
        for _ in 0..n {
            let mut t0 = 0i64;
            root.receive_into_with_tag(&mut t0, TAG_PING);
            let t1 = skew.local(mono());
            let t2 = skew.local(mono());
            root.send_with_tag(&[t1, t2][..], TAG_PONG);
        }
    }
}

/// Broadcasts rank 0's bytes (made by `make`, called on rank 0 only).
fn broadcast_bytes(world: &impl Communicator, make: impl FnOnce() -> Vec<u8>) -> Vec<u8> {
    let mut msg = if world.rank() == 0 {
        make()
    } else {
        Vec::new()
    };
    let mut len = msg.len() as u64;
    world.process_at_rank(0).broadcast_into(&mut len);
    msg.resize(len as usize, 0);
    world.process_at_rank(0).broadcast_into(&mut msg[..]);
    msg
}

/// Every rank's status to every rank: `Ok` when all are, else the lowest failing rank
/// and its cause (an empty cause from a rank that only follows another's failure is
/// passed over).
fn agree(world: &impl Communicator, status: Result<(), String>) -> Result<(), (usize, String)> {
    let mut mine = [0u8; STATUS_BYTES];
    if let Err(cause) = &status {
        let cause = if cause.is_empty() { "failed" } else { cause };
        mine[0] = 1;
        let b = cause.as_bytes();
        let n = b.len().min(STATUS_BYTES - 1);
        mine[1..=n].copy_from_slice(&b[..n]);
    }
    let mut all = vec![0u8; STATUS_BYTES * world.size() as usize];
    world.all_gather_into(&mine[..], &mut all[..]);
    let failures: Vec<(usize, String)> = all
        .chunks(STATUS_BYTES)
        .enumerate()
        .filter(|(_, c)| c[0] == 1)
        .map(|(r, c)| {
            let end = c[1..]
                .iter()
                .position(|b| *b == 0)
                .map_or(c.len(), |p| p + 1);
            (r, String::from_utf8_lossy(&c[1..end]).into_owned())
        })
        .collect();
    match failures
        .iter()
        .find(|(_, c)| c != "failed")
        .or(failures.first())
    {
        Some(f) => Err(f.clone()),
        None => Ok(()),
    }
}
