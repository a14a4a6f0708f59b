//! `latlab net probe --agents`: one probe's offered load from many agents, started under
//! `mpirun` (feature `mpi`).
//!
//! Rank 0 coordinates and does not generate: it resolves and checks the configuration,
//! splits the load ([`split`]), broadcasts the plan (JSON, with its latlab version),
//! measures every agent's clock against its own ([`clock`]), starts the agents on one
//! absolute schedule and gathers their results. Ranks `1..K` are the agents: agent `i`
//! (rank `i + 1`) probes from its own generator namespace of the testbed (`latlab net
//! testbed up --generators N`) or from the addresses it is given. Keeping rank 0 out of
//! the load keeps the reference clock's exchanges off the generators' CPUs, and makes the
//! merged result the plain sum of the agents'.
//!
//! What is pure lives in `plan`, [`clock`] and `result`; the MPI runtime is `run` (feature
//! `mpi`).

pub mod clock;
#[cfg(feature = "mpi")]
mod mpirun;
pub mod oneway;
#[cfg(feature = "mpi")]
mod oneway_run;
mod plan;
mod result;

#[cfg(feature = "mpi")]
pub use mpirun::{run, Failure, Gathered};
pub use plan::{
    agent_seed, own_version, phase_ns, plan, split, AgentSpec, AgentsPlan, SplitError, CLOCK_HOOK,
    VERSION_HOOK,
};
pub use result::{agents_data, assemble, AgentSummary, AgentsData, CLOCK_NOTE};
