//! What `latlab experiment killer-us` hands back: its summary for the CLI, or its error.

use crate::orchestrate;
use std::path::PathBuf;

/// What the CLI prints.
#[derive(Clone, Debug)]
pub struct Summary {
    /// The table as text.
    pub table_text: String,
    /// Warnings.
    pub warnings: Vec<String>,
    /// Files written, the figures among them.
    pub files: Vec<PathBuf>,
}

/// Errors.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExperimentError {
    /// A child run failed.
    #[error(transparent)]
    Orchestrate(#[from] orchestrate::OrchestrateError),
    /// A file could not be written.
    #[error(transparent)]
    Result(#[from] latlab_core::results::ResultError),
    /// A rung's probe configuration fails the probe's checks.
    #[error(transparent)]
    Probe(#[from] crate::probe::ProbeError),
    /// DPDK's testpmd failed on its rung.
    #[error(transparent)]
    Testpmd(#[from] crate::testpmd::TestpmdError),
    /// A CCDF figure could not be drawn (the sink's error names the file).
    #[error("{error}")]
    Figure {
        /// The figure's file.
        path: PathBuf,
        /// Why the sink could not draw it.
        error: latlab_core::doc::DrawError,
    },
    /// SIGINT or SIGTERM arrived; everything the experiment changed was put back.
    #[error("interrupted (real-time throttling and the testbed were restored)")]
    Interrupted,
}
