//! Options of `latlab host breakdown`.

use super::{duration_arg, OutputArgs};
use clap::Args;
use latlab_core::units::Nanos;
use std::path::PathBuf;

/// Options of `latlab host breakdown`.
#[derive(Debug, Args)]
pub struct BreakdownArgs {
    /// Measured time per step, e.g. 500ms, 2s.
    #[arg(long, short = 'd', default_value = "2s", value_parser = duration_arg)]
    pub duration: Nanos,
    /// Unrecorded warm-up per step.
    #[arg(long, default_value = "200ms", value_parser = duration_arg)]
    pub warmup: Nanos,
    /// Steps, comma separated (default: all): clock_read, null_syscall, cacheline_pingpong,
    /// futex_same_core, futex_other_core, pipe, eventfd, unix_socket, udp_loopback,
    /// udp_loopback_busy, tcp_loopback, tcp_loopback_busy, veth_netns, latlab_nf.
    #[arg(long, value_delimiter = ',')]
    pub steps: Vec<String>,
    /// Client and server CPUs, e.g. 1,0 (default: the last two CPUs this process may use).
    #[arg(long, value_delimiter = ',', value_name = "CPU")]
    pub cpus: Vec<u32>,
    /// Message size of the pipe, socket, UDP and TCP steps, in bytes.
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u32).range(1..=65_000))]
    pub payload: u32,
    /// Do not lock memory with mlockall (locking is attempted by default).
    #[arg(long)]
    pub no_mlock: bool,
    #[command(flatten)]
    pub out: OutputArgs,
    /// Draw the stacked decomposition of a UDP loopback round trip; FILE defaults to the
    /// result's name with -udp.svg.
    #[arg(long, value_name = "FILE", num_args = 0..=1)]
    pub plot: Option<Option<PathBuf>>,
}
