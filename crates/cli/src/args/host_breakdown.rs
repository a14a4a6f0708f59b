//! Options of `latlab host breakdown`, and their resolution into a [`BreakdownConfig`].

use super::common::{
    duration_arg, pick_names, positive_duration_arg, IdleArgs, MlockArgs, OutputArgs,
};
use crate::exit::usage;
use clap::Args;
use latlab_core::units::Nanos;
use latlab_host::breakdown::{BreakdownConfig, Step};
use latlab_sys::sched;
use std::path::PathBuf;

/// Options of `latlab host breakdown`.
#[derive(Debug, Args)]
pub struct BreakdownArgs {
    /// Measured time per step, e.g. 500ms, 2s.
    #[arg(long, short = 'd', default_value = "2s", value_parser = positive_duration_arg)]
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
    #[command(flatten)]
    pub mlock: MlockArgs,
    #[command(flatten)]
    pub out: OutputArgs,
    #[command(flatten)]
    pub idle: IdleArgs,
    #[command(flatten)]
    pub isolate: super::common::IsolateArg,
    /// Draw the stacked decomposition of a UDP loopback round trip; FILE defaults to the
    /// result's name with -udp.svg.
    #[arg(long, value_name = "FILE", num_args = 0..=1)]
    pub plot: Option<Option<PathBuf>>,
}

impl TryFrom<&BreakdownArgs> for BreakdownConfig {
    type Error = anyhow::Error;

    fn try_from(a: &BreakdownArgs) -> anyhow::Result<BreakdownConfig> {
        let all: Vec<&str> = Step::ALL.iter().map(|s| s.name()).collect();
        let mut steps = pick_names(&a.steps, "--steps", "step", Step::from_name, &all)?;
        if steps.is_empty() {
            steps = Step::ALL.to_vec();
        }
        let (client_cpu, server_cpu) = match a.cpus.as_slice() {
            [c, s] => (Some(*c), Some(*s)),
            [] => (None, None),
            _ => {
                return Err(usage(
                    "--cpus takes two CPUs, client then server, e.g. --cpus 1,0",
                ))
            }
        };
        let cfg = BreakdownConfig {
            steps,
            duration: a.duration,
            warmup: a.warmup,
            client_cpu,
            server_cpu,
            payload: a.payload as usize,
            ..BreakdownConfig::default()
        };
        cfg.validate(&sched::allowed_cpus())
            .map_err(|e| usage(e.to_string()))?;
        Ok(cfg)
    }
}
