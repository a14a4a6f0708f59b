//! `latlab dfs sim`: a deterministic discrete-event simulation of the same state machines
//! ([`crate::compute`], [`crate::sender`], [`crate::ie`], [`crate::dde`]) on a modelled
//! network, to run the paper's 64–384 nodes on one machine.
//!
//! The model (documented with its defaults in docs/dfs.md):
//! - I input and C compute nodes, each with its own injection and ejection port; ports
//!   share their bandwidth equally among the transfers through them ([`net`]);
//! - a contribution is one transfer of `mts_bytes`; it arrives `latency` (+ jitter) after
//!   its last byte left, and the write completes at the sender's NIC when the target NIC's
//!   acknowledgement is back, `latency` (+ jitter) later, whatever the compute node's CPU
//!   does; an input's NIC keeps at most `max_inflight` writes outstanding (FLESnet's
//!   `max_pending_write_requests`), apart from the ring-slot credits, which the compute
//!   node grants only when it has consumed a time-slice;
//! - control messages (credits, reports, proposals) take `latency` (+ jitter) and no
//!   bandwidth;
//! - compute nodes keep `slots_per_input` slots per input and release a complete time-slice
//!   after a processing time (exponential with mean `processing`), in order;
//! - every node has a clock with a constant offset and drift drawn once from the seed; the
//!   state machines only ever see their node's clock;
//! - seeded noise: every `noise_period` each node's port bandwidth is redrawn uniformly in
//!   `[1 − noise, 1]` of nominal (OS noise, routing, contention from other jobs); optional
//!   slow nodes and bandwidth drops (by time or by interval);
//! - node stalls from a measured gap trace ([`noise`]): a stalled input sends nothing, a
//!   stalled compute node neither sees arrivals nor releases (its NIC still completes
//!   the writes into its memory); and
//!   persistent per-node speed differences (`speed_spread`);
//! - three policies: best effort, DFS, and FLESnet today's time-slice manager
//!   ([`crate::tsm`]), which assigns time-slices produced at a fixed rate to builders with
//!   room and discards the rest.
//!
//! With `fabric` set (`--network dragonfly`) the ports are replaced by the packet-level
//! Dragonfly of [`fabric`] (finite buffers, credits, routing); see docs/dfs.md.
//!
//! The same configuration and seed always give the same result.

mod backend;
mod builders;
mod config;
mod data;
mod engine;
pub mod fabric;
pub mod net;
pub mod noise;
pub mod result;
pub mod rng;
mod slab;
mod spec;
mod timers;

pub use config::{
    BandwidthDrop, DdeFault, DropWindow, NetModel, Role, SimConfig, SimError, SlowNode,
    MAX_DELAY_NS, MAX_SPEED_SPREAD, MAX_STATE_ENTRIES, MIN_NOISE_PERIOD_NS, OFFERED_LOAD_RANGE,
    SIM_DEFAULT_TS_PER_INTERVAL,
};
pub use data::{
    BlockRow, FillSample, FiveNum, IntervalRow, Limits, Senders, Settle, SimData, SimOutcome,
    Trend, BATCHES, STATIONARY_CHANGE_PCT, T_CRIT,
};
pub use noise::{NoiseError, NoiseTrace};

/// Runs a simulation to the end.
pub fn run(cfg: &SimConfig) -> Result<SimOutcome, SimError> {
    run_with_progress(cfg, &mut latlab_core::progress::NoProgress)
}

/// Runs a simulation to the end, telling `progress` the share of time-slices delivered
/// (in percent, as `done` of 100) each time it grows by a percent.
pub fn run_with_progress(
    cfg: &SimConfig,
    progress: &mut dyn latlab_core::progress::Progress,
) -> Result<SimOutcome, SimError> {
    cfg.validate()?;
    engine::Sim::new(cfg).run(progress)
}
