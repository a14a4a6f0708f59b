//! Options of `latlab net delay`, the latency injector.

use super::{duration_arg, OutputArgs};
use clap::{Args, ValueEnum};
use latlab_core::units::Nanos;

/// Where the delay applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum DirectionArg {
    /// Both directions (a round trip gains twice the delay).
    Both,
    /// Frames arriving on the first interface.
    AToB,
    /// Frames arriving on the second interface.
    BToA,
}

/// Options of `latlab net delay`.
#[derive(Debug, Args)]
pub struct DelayArgs {
    /// The two interfaces to join, e.g. eth1,eth2.
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "IFACE",
        required_unless_present = "testbed"
    )]
    pub ifaces: Vec<String>,
    /// Added delay: a duration (20us, 150ns, 1.5ms) or uniform:LO,HI, normal:MEAN,SD,
    /// exp:MEAN.
    #[arg(long, default_value = "0ns")]
    pub delay: String,
    /// Which direction gets the delay.
    #[arg(long, value_enum, default_value_t = DirectionArg::Both)]
    pub direction: DirectionArg,
    /// Queue capacity per direction, frames.
    #[arg(long, default_value_t = 4096, value_parser = clap::value_parser!(u32).range(1..=1_048_576))]
    pub capacity: u32,
    /// Largest frame forwarded, bytes (MTU + 14; larger frames are dropped and counted).
    #[arg(long, default_value_t = 2048, value_parser = clap::value_parser!(u32).range(64..=65_536))]
    pub slot_bytes: u32,
    /// Pin the forwarding thread to this CPU (default: the last allowed CPU).
    #[arg(long)]
    pub cpu: Option<u32>,
    /// Run the forwarding thread (and, with --testbed, client and server) under
    /// SCHED_FIFO at this priority (1-99): the forwarder then owns its CPU.
    #[arg(long, value_name = "PRIO")]
    pub fifo: Option<i32>,
    /// Stop after this long (default: run until Ctrl-C).
    #[arg(long, short = 'd', value_parser = duration_arg)]
    pub duration: Option<Nanos>,
    /// Run inside this network namespace (as created by `ip netns add`).
    #[arg(long, value_name = "NAME")]
    pub netns: Option<String>,
    /// Seed of the delay distribution.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Verify the injector on this host in a namespace testbed instead of joining
    /// interfaces: round trips direct, at 0 and at --delay.
    #[arg(long, conflicts_with_all = ["ifaces", "netns"])]
    pub testbed: bool,
    /// With --testbed: measured time per configuration.
    #[arg(long, default_value = "8s", value_parser = duration_arg)]
    pub check_duration: Nanos,
    /// With --testbed: alternating rounds.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub rounds: u32,
    /// With --testbed: the client busy-polls for replies (its CPU never idles).
    #[arg(long, requires = "testbed")]
    pub busy_client: bool,
    /// With --testbed: also measure sch_netem with the same delay (fails clearly when the
    /// kernel lacks it).
    #[arg(long, requires = "testbed")]
    pub compare_netem: bool,
    #[command(flatten)]
    pub out: OutputArgs,
}
