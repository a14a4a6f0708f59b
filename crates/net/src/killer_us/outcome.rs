//! What `latlab experiment killer-us` hands back: its summary for the CLI, or its error.

use crate::orchestrate;
use latlab_core::doc::Figure;
use std::path::PathBuf;

/// What the CLI prints.
#[derive(Clone, Debug)]
pub struct Summary {
    /// The table as text.
    pub table_text: String,
    /// Warnings.
    pub warnings: Vec<String>,
    /// Files written, and the figure files the caller draws (see `figures`).
    pub files: Vec<PathBuf>,
    /// The CCDF figures, one per method, with the file each belongs in. The library does
    /// not draw (measuring crates carry no plotting code): the caller renders each with
    /// `latlab_report::write_figure`.
    pub figures: Vec<(PathBuf, Figure)>,
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
    /// SIGINT or SIGTERM arrived; everything the experiment changed was put back.
    #[error("interrupted (real-time throttling and the testbed were restored)")]
    Interrupted,
}
