//! The error of the library's runs and experiments: each variant keeps the error it came
//! from, so the CLI can map refusals, bad input and run-time failures to their exit codes.

use crate::cmdline::CmdError;
use crate::run::RunError;
use latlab_core::results::ResultError;

/// Why a run, a cache-cost sweep or the experiment failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No invariant TSC with `rdtscp`: no sched run can be made.
    #[error("latlab sched needs an invariant TSC with rdtscp ({0})")]
    NoTsc(String),
    /// A bad configuration or command line (the caller's usage error).
    #[error("{0}")]
    Config(String),
    /// A command line of the experiment did not parse.
    #[error(transparent)]
    Cmd(#[from] CmdError),
    /// The run failed or was refused.
    #[error(transparent)]
    Run(#[from] RunError),
    /// A result file could not be written or read back.
    #[error(transparent)]
    Result(#[from] ResultError),
    /// A run's data could not be read back.
    #[error(transparent)]
    Data(#[from] crate::result::DataError),
    /// An I/O failure, with what was being done.
    #[error("{what}: {source}")]
    Io {
        /// What was being done, e.g. `creating out/`.
        what: String,
        /// The failure.
        source: std::io::Error,
    },
    /// The testbed traffic of the experiment failed.
    #[error(transparent)]
    Net(#[from] latlab_net::orchestrate::OrchestrateError),
    /// A figure could not be drawn (the error of the caller's [`crate::figures::Draw`]).
    #[error(transparent)]
    Draw(Box<dyn std::error::Error + Send + Sync>),
    /// Serializing a result's data failed.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

impl Error {
    /// An [`Error::Io`] saying what was being done.
    pub fn io(what: impl Into<String>, source: std::io::Error) -> Error {
        Error::Io {
            what: what.into(),
            source,
        }
    }
}
