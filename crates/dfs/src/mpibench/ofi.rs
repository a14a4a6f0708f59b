//! The libfabric side of `latlab dfs bench` (feature `ofi`): the rounds of
//! [`super`] as `fi_write`s.
//!
//! Every receiver registers one region with a slot per sender (the largest size plus the
//! Mix variant's small messages); every sender registers one source region holding the
//! big message and the small ones. Addresses and keys are exchanged over MPI once. In a
//! round a sender writes one message into every receiver's slot (receivers in offset order
//! starting at its index, Mix: plus a 16-byte and two 64-byte writes) and waits until all
//! of them are complete at their targets (delivery completion, like `MPI_Win_flush_all`).
//! Receivers only poll (libfabric progress is manual here). Each variant ends with every
//! rank's [`OfiWorld::finish`] and an MPI barrier.

use super::shared::{rounds, variants, SenderRun, TransportError, SMALL};
use crate::mpidata::BenchConfig;
use crate::ofiwire::OfiWorld;
use latlab_core::hist::{HistConfig, LatencyHistogram};
use latlab_core::units::Nanos;
use mpi::traits::*;

/// Measures every variant on this rank; a sender returns its runs, a receiver none.
pub(crate) fn measure(
    world: &mpi::topology::SimpleCommunicator,
    cfg: &BenchConfig,
    provider: &str,
    rank: usize,
    ns: usize,
) -> Result<Vec<SenderRun>, TransportError> {
    let nr = world.size() as usize - ns;
    let max = *cfg.sizes.iter().max().unwrap_or(&1) as usize;
    let small: usize = SMALL.iter().sum();
    let slot = max + small;
    let mut w = OfiWorld::connect(world, provider)?;
    let sender = rank < ns;
    let region = w.ep.register(if sender { slot } else { ns * slot })?;
    if sender {
        let mut src = vec![0x5au8; max];
        src.resize(slot, 0xa5);
        w.ep.fill(region, 0, &src)?;
    }
    let remotes = w.exchange(world, (!sender).then_some(region))?;
    let hc = HistConfig::default();
    let mut runs = Vec::new();
    for (sz, mix) in variants(cfg) {
        let rounds = rounds(cfg, sz, nr);
        let mut h = LatencyHistogram::new(hc).expect("valid");
        world.barrier();
        let start = latlab_sys::clocks::monotonic_ns();
        if sender {
            for _ in 0..rounds {
                let t = latlab_sys::clocks::monotonic_ns();
                for m in 0..nr {
                    let target = ns + (rank + m) % nr;
                    let peer = w.peer(target);
                    let off = rank * slot;
                    let remote = &remotes[target];
                    w.ep.write(peer, region, 0, sz as usize, remote, off)?;
                    if mix {
                        let mut o = max;
                        for &n in &SMALL {
                            w.ep.write(peer, region, o, n, remote, off + o)?;
                            o += n;
                        }
                    }
                }
                w.ep.wait_writes()?;
                h.record(Nanos(latlab_sys::clocks::monotonic_ns() - t));
            }
        }
        let total = latlab_sys::clocks::monotonic_ns() - start;
        w.finish()?;
        world.barrier();
        if sender {
            runs.push((sz, mix, rounds, total, h.to_base64()));
        }
    }
    Ok(runs)
}
