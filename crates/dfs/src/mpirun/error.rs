//! Why an MPI run fails, and what `dfs run` and `dfs bench` can both fail on.

use latlab_sys::mpi_rma::RmaError;

/// What both MPI commands (`dfs run` and `dfs bench`) can fail on besides their own
/// checks: rank 0's rejection of the configuration, an RMA call, a libfabric call. Its
/// messages are those of the error it holds.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TransportError {
    /// Rank 0 rejected the configuration.
    #[error("{0}")]
    Config(String),
    /// An RMA call failed.
    #[error(transparent)]
    Rma(#[from] RmaError),
    /// A libfabric call failed.
    #[cfg(feature = "ofi")]
    #[error(transparent)]
    Ofi(#[from] latlab_sys::ofi::OfiError),
}

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
    /// The configuration was rejected, or an RMA or libfabric call failed.
    #[error(transparent)]
    Transport(#[from] TransportError),
    /// A message could not be decoded.
    #[error("malformed message from rank {0}: {1}")]
    Message(i32, String),
}
