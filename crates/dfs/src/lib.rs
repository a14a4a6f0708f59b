//! # latlab-dfs
//!
//! The Data-Flow Scheduler (DFS) of FLESnet (Salem, Schütt, Schintke, Reinefeld, *Scheduling
//! Data Streams for Low Latency and High Throughput on a Cray XC40 Using Libfabric*, CUG 2019)
//! and its best-effort baseline, as pure, deterministic state machines with time passed in.
//!
//! - [`params`]: the model's sizes and the DFS parameters (Table I defaults).
//! - [`model`]: time-slice assignment (offset-based round-robin), checksums, payloads.
//! - [`compute`]: a compute node — ring buffer per input, credits, completion detection.
//! - [`sender`]: the best-effort sender (FLESnet without DFS).
//! - [`tsm`]: FLESnet today's central time-slice manager (round-robin to builders with
//!   room, discard when none has).
//! - [`ie`]: the DFS Input Engine (Eq. 4 pacing, θ acknowledgements, fallback, proposals).
//! - [`dde`]: the Distributed Deterministic Engine — history manager, proposer, staged
//!   speed-up (Eq. 1), clock synchroniser (Eqs. 2–3).
//! - [`sim`]: a deterministic discrete-event simulator running the same state machines on a
//!   modelled network (`latlab dfs sim`).
//! - [`mpidata`]: what `dfs.run` and `dfs.bench` result files hold.
//! - `mpirun` (feature `mpi`): the MPI runtime (`latlab dfs run`).
//! - `mpibench` (feature `mpi`): the MPI_Put micro-benchmark (`latlab dfs bench`).
//! - [`report`]: the report of `dfs.*` results: pure functions turning a loaded result
//!   file into tables and series ([`report::data`]) and the HTML report sections.
//! - [`paper`]: the paper's numbers the results are held against.
//! - [`experiment`]: the paper's evaluation (`latlab experiment dfs`), its `dfs.experiment`
//!   schema and report sections.
//! - [`launch`]: starting the MPI runtime and benchmark as child jobs under `mpirun`.
//!
//! All times are `i64` nanoseconds of some node's local clock ([`Time`]); no state machine
//! reads a clock.
#![deny(unsafe_code)]

#[macro_use]
mod counters;

pub mod compute;
pub mod dde;
pub mod experiment;
pub mod ie;
pub mod launch;
pub mod model;
#[cfg(feature = "mpi")]
pub mod mpibench;
pub mod mpidata;
#[cfg(feature = "mpi")]
pub mod mpirun;
#[cfg(feature = "ofi")]
pub mod ofiwire;
pub mod paper;
pub mod params;
pub mod report;
pub mod sender;
pub mod sim;
mod stats;
pub mod tsm;

pub use params::Mode;

/// A reading of a node's local clock, in nanoseconds since an arbitrary epoch.
pub type Time = i64;
/// A duration in nanoseconds.
pub type Dur = i64;
