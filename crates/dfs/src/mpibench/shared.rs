//! What the MPI and libfabric sides of the benchmark share: the error, the variants and
//! rounds, the Mix's small messages, one sender's measurement.

use crate::mpidata::BenchConfig;
pub use crate::mpirun::TransportError;

/// The Mix variant's small messages per big one: a 16-byte descriptor and two 64-byte
/// SYNC messages (Fig. 5).
pub(crate) const SMALL: [usize; 3] = [16, 64, 64];

/// Why the benchmark failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BenchError {
    /// MPI could not be initialised.
    #[error("MPI initialisation failed (run under mpirun, e.g. mpirun -n 8 latlab dfs bench)")]
    Init,
    /// Fewer than 2 or an odd number of ranks.
    #[error("need an even number of at least 2 MPI ranks (half senders, half receivers), got {0}")]
    Ranks(usize),
    /// The configuration was rejected, or an RMA or libfabric call failed.
    #[error(transparent)]
    Transport(#[from] TransportError),
}

/// One (size, variant) of one sender: size, mix, rounds, total ns, round histogram
/// (base64).
pub(crate) type SenderRun = (u64, bool, u64, u64, String);

/// Rounds per sender of message size `sz` to `nr` receivers.
pub(crate) fn rounds(cfg: &BenchConfig, sz: u64, nr: usize) -> u64 {
    (cfg.bytes_per_size / (sz * nr as u64)).max(cfg.min_rounds)
}

/// The (size, mix) combinations to measure, in order.
pub(crate) fn variants(cfg: &BenchConfig) -> Vec<(u64, bool)> {
    cfg.sizes
        .iter()
        .flat_map(|&sz| [(sz, false), (sz, true)])
        .filter(|&(_, mix)| !mix || cfg.mix)
        .collect()
}
