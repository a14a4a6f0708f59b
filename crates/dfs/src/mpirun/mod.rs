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

mod assemble;
mod compute;
mod error;
mod input;
mod wire;

use assemble::assemble;
use compute::compute_loop;
use input::input_loop;
use latlab_core::results::{Provenance, ResultFile};
use latlab_sys::mpi_rma::Window;
use mpi::traits::*;
use serde::Serialize;
use wire::{LocalClock, RankStats, TAG_STATS};

pub use crate::mpidata::{RunConfig, RunData, RUN_KIND as RESULT_KIND};
pub use error::RunError;

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
