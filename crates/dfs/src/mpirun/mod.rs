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
//! - **Transport:** `--transport ofi` moves the same data and messages over libfabric
//!   ([`latlab_sys::ofi`]): `fi_write` into the compute node's registered ring buffers
//!   (completed with delivery semantics before `WRITTEN` is sent) and `fi_send` messages;
//!   MPI then only launches the ranks, exchanges addresses and keys, and carries the
//!   statistics to rank 0 (see [`crate::ofiwire`]).
//!
//! A DDE "kill" stops the replica inside a live process (it ignores all later reports): a
//! real process crash would take the whole Open MPI job down (no ULFM).

mod assemble;
mod compute;
mod error;
mod input;
mod transport;
mod wire;

use assemble::assemble;
use compute::compute_loop;
use input::input_loop;
use latlab_core::results::{Provenance, ResultFile};
use latlab_sys::mpi_rma::Window;
use mpi::traits::*;
use serde::Serialize;
use wire::{LocalClock, RankStats, TAG_STATS};

pub use crate::mpidata::{RunConfig, RunData, Transport, TransportConfig, RUN_KIND as RESULT_KIND};
pub use error::{RunError, TransportError};

/// Runs under MPI. `resolve` is called on rank 0 only and returns the configuration (or a
/// message rejecting the command line); it is broadcast to every rank, with the transport
/// (for libfabric, the provider rank 0 resolved). Returns the result file on rank 0, `None`
/// elsewhere.
pub fn run(
    resolve: impl FnOnce(usize) -> Result<RunConfig, String>,
    transport: TransportConfig,
    argv: Vec<String>,
    provenance: impl FnOnce() -> Provenance,
) -> Result<Option<ResultFile>, RunError> {
    let universe = mpi::initialize().ok_or(RunError::Init)?;
    let world = universe.world();
    let rank = world.rank() as usize;
    let size = world.size() as usize;
    let (cfg, tc) = broadcast_config(&world, || {
        let c = resolve(size)?;
        c.validate().map_err(|e| e.to_string())?;
        Ok((c, resolve_transport(transport)?))
    })
    .map_err(|e| RunError::Message(0, e.to_string()))?
    .map_err(TransportError::Config)?;
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
    let mut early_stats: Vec<Vec<u8>> = Vec::new();
    let result = match tc.transport {
        Transport::Mpi => {
            let win = Window::allocate(&world, window_bytes).map_err(TransportError::from)?;
            let mut t = transport::Mpi {
                world: &world,
                win: &win,
            };
            let stats = rank_loop(&world, &mut t, &cfg, rank, &mut early_stats);
            let r = gather(&world, stats, early_stats, |all| {
                assemble(&cfg, &tc, size, all, argv, provenance())
            })?;
            world.barrier();
            drop(win);
            r
        }
        #[cfg(feature = "ofi")]
        Transport::Ofi => {
            let provider = tc.provider.as_deref().unwrap_or_default();
            let mut t = ofi_transport(&world, provider, window_bytes, cfg.slot_bytes(), rank >= ni)
                .unwrap_or_else(|e| abort(&world, rank, &e));
            let stats = rank_loop(&world, &mut t, &cfg, rank, &mut early_stats);
            // every rank keeps polling until every rank is done (manual progress)
            t.w.finish()
                .unwrap_or_else(|e| abort(&world, rank, &TransportError::from(e)));
            let r = gather(&world, stats, early_stats, |all| {
                assemble(&cfg, &tc, size, all, argv, provenance())
            })?;
            world.barrier();
            drop(t);
            r
        }
        #[cfg(not(feature = "ofi"))]
        Transport::Ofi => unreachable!("resolve_transport refuses ofi without the feature"),
    };
    Ok(result)
}

/// The other ranks would wait for this one for ever: take the job down.
fn abort(world: &impl Communicator, rank: usize, e: &dyn std::fmt::Display) -> ! {
    eprintln!("latlab: error: rank {rank}: {e}");
    world.abort(1)
}

/// Starts every rank's clock after a barrier and runs the rank's loop.
fn rank_loop(
    world: &mpi::topology::SimpleCommunicator,
    t: &mut impl transport::Transport,
    cfg: &RunConfig,
    rank: usize,
    early_stats: &mut Vec<Vec<u8>>,
) -> RankStats {
    world.barrier();
    let t0 = latlab_sys::clocks::monotonic_ns();
    let clock = LocalClock {
        t0,
        offset: rank as i64 * cfg.clock_skew_ns,
        drift: rank as f64 * cfg.drift_ppm * 1e-6,
    };
    let begin_local = clock.now();
    let stats = if rank < cfg.topology.inputs {
        input_loop(t, cfg, rank, clock, early_stats)
    } else {
        compute_loop(t, cfg, rank, clock, begin_local)
    };
    stats.unwrap_or_else(|e| abort(world, rank, &e))
}

/// Rank 0 collects every rank's statistics (over MPI) and assembles the result.
fn gather(
    world: &mpi::topology::SimpleCommunicator,
    stats: RankStats,
    early_stats: Vec<Vec<u8>>,
    assemble: impl FnOnce(Vec<RankStats>) -> ResultFile,
) -> Result<Option<ResultFile>, RunError> {
    let size = world.size() as usize;
    if world.rank() != 0 {
        let b = serde_json::to_vec(&stats).expect("serialisable");
        world.process_at_rank(0).send_with_tag(&b[..], TAG_STATS);
        return Ok(None);
    }
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
    Ok(Some(assemble(all)))
}

/// Opens and connects this rank's libfabric endpoint: a compute rank registers its ring
/// buffers, an input rank one staging slot; every rank learns every rank's buffer.
#[cfg(feature = "ofi")]
fn ofi_transport(
    world: &mpi::topology::SimpleCommunicator,
    provider: &str,
    window_bytes: usize,
    slot_bytes: usize,
    compute: bool,
) -> Result<transport::Ofi, TransportError> {
    let mut w = crate::ofiwire::OfiWorld::connect(world, provider)?;
    let region =
        w.ep.register(if compute { window_bytes } else { slot_bytes })?;
    let remotes = w.exchange(world, compute.then_some(region))?;
    Ok(transport::Ofi { w, region, remotes })
}

/// Rank 0's check of the transport: libfabric needs the feature `ofi` and an available
/// provider, which is resolved here so that every rank opens the same one.
pub(crate) fn resolve_transport(tc: TransportConfig) -> Result<TransportConfig, String> {
    match tc.transport {
        Transport::Mpi => Ok(TransportConfig::default()),
        #[cfg(feature = "ofi")]
        Transport::Ofi => Ok(TransportConfig {
            transport: Transport::Ofi,
            provider: Some(crate::ofiwire::resolve_provider(tc.provider.as_deref())?),
        }),
        #[cfg(not(feature = "ofi"))]
        Transport::Ofi => Err(NO_OFI.into()),
    }
}

/// Why `--transport ofi` is refused by a build without libfabric.
pub const NO_OFI: &str = "--transport ofi: this latlab was built without libfabric support (feature ofi; needs libfabric-dev: make deps-test)";

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
