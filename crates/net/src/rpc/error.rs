//! The errors of a load run.

use std::net::SocketAddr;

/// Errors of a load run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// The configuration is not usable (the message names the flag).
    #[error("{0}")]
    Config(String),
    /// The target cannot be reached.
    #[error("--target: cannot connect to {addr}: {source}")]
    Connect {
        /// The target's address.
        addr: SocketAddr,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Setting the keys before the run failed.
    #[error("preloading the keys failed: {0}")]
    Preload(String),
    /// An OS error.
    #[error("{0}: {1}")]
    Io(String, #[source] std::io::Error),
}

impl LoadError {
    /// Whether it is the user's input that is wrong (a bad configuration, a target that
    /// refuses): the CLI exits with 2.
    pub fn is_bad_input(&self) -> bool {
        matches!(self, LoadError::Config(_) | LoadError::Connect { .. })
    }
}
