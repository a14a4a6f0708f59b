//! The `--dma-latency` hold of the measuring commands and of child jobs.

/// Holds the PM QoS CPU latency target at `us` for as long as the returned hold lives
/// (`--dma-latency`); without root, exit 3 naming the flag.
pub fn hold(us: u32) -> anyhow::Result<latlab_sys::idle::DmaLatencyHold> {
    latlab_sys::idle::DmaLatencyHold::new(us).map_err(crate::exit::dma_latency)
}
