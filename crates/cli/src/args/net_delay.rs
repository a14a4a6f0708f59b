//! Options of `latlab net delay`, the latency injector, and their resolution into the
//! engine's or the testbed check's configuration.

use super::common::{positive_duration_arg, DirectionArg, IdleArgs, NetExplainArgs, OutputArgs};
use crate::exit::usage;
use clap::Args;
use latlab_core::units::Nanos;
use latlab_net::delay::engine::{Direction, EngineConfig};
use latlab_net::delay::{testbed::CheckConfig, DelaySpec};
use latlab_sys::sched::format_cpu_list;

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
    #[arg(long, value_name = "PRIO", value_parser = clap::value_parser!(i32).range(1..=99))]
    pub fifo: Option<i32>,
    /// Stop after this long (default: run until Ctrl-C).
    #[arg(long, short = 'd', value_parser = positive_duration_arg)]
    pub duration: Option<Nanos>,
    /// Run inside this network namespace (as created by `ip netns add`).
    #[arg(long, value_name = "NAME")]
    pub netns: Option<String>,
    /// Seed of the delay distribution.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Verify the injector on this host in a namespace testbed instead of joining
    /// interfaces: round trips direct, at 0 and at --delay (a constant: its median and p99
    /// shift; a distribution: the delayed round trips against the 0 µs ones convolved with
    /// it, a Kolmogorov-Smirnov verdict and p10/p50/p90/p99 side by side).
    #[arg(long, conflicts_with_all = ["ifaces", "netns"])]
    pub testbed: bool,
    /// With --testbed: measured time per configuration.
    #[arg(long, default_value = "8s", value_parser = positive_duration_arg)]
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
    #[command(flatten)]
    pub explain: NetExplainArgs,
    #[command(flatten)]
    pub idle: IdleArgs,
    /// With --testbed: leave the CPUs' idle policy as it is. By default, as root, the check
    /// holds /dev/cpu_dma_latency at 0 µs, as `net calibrate` does: it checks the
    /// instrument, and an endpoint that halts while the delay runs adds its wake-up to the
    /// shift it measures.
    #[arg(long, requires = "testbed", conflicts_with = "dma_latency")]
    pub idle_as_is: bool,
}

impl DelayArgs {
    /// The `/dev/cpu_dma_latency` target to hold: for a `--testbed` check the rule of
    /// every instrument check ([`IdleArgs::for_check`]); otherwise `--dma-latency` or none
    /// (an element joining real interfaces leaves the system's idle policy alone unless
    /// asked).
    pub fn dma_latency(&self, root: bool) -> Option<u32> {
        if self.testbed {
            self.idle.for_check(root, self.idle_as_is)
        } else {
            self.idle.dma_latency
        }
    }

    /// `--delay` as a distribution.
    pub fn delay_spec(&self) -> anyhow::Result<DelaySpec> {
        DelaySpec::parse(&self.delay).map_err(|e| usage(format!("--delay: {e}")))
    }

    /// The forwarding thread's CPU: `--cpu` when this process may use it (a usage error
    /// otherwise), else the last of the `allowed` CPUs.
    pub fn engine_cpu(&self, allowed: &[u32]) -> anyhow::Result<Option<u32>> {
        match self.cpu {
            Some(c) if !allowed.contains(&c) => Err(usage(format!(
                "--cpu: CPU {c} is not available to this process (allowed: {})",
                format_cpu_list(allowed)
            ))),
            Some(c) => Ok(Some(c)),
            None => Ok(allowed.last().copied()),
        }
    }

    /// The engine joining the two `--ifaces` with `delay` added.
    pub fn engine_config(&self, delay: DelaySpec) -> anyhow::Result<EngineConfig> {
        if self.ifaces.len() != 2 || self.ifaces[0] == self.ifaces[1] {
            return Err(usage(
                "--ifaces takes two different interfaces, e.g. --ifaces eth1,eth2",
            ));
        }
        let mut cfg = EngineConfig::new(&self.ifaces[0], &self.ifaces[1], delay);
        cfg.direction = match self.direction {
            DirectionArg::Both => Direction::Both,
            DirectionArg::AToB => Direction::AToB,
            DirectionArg::BToA => Direction::BToA,
        };
        cfg.capacity = self.capacity as usize;
        cfg.slot_bytes = self.slot_bytes as usize;
        cfg.seed = self.seed;
        cfg.duration = self.duration;
        cfg.stalls = self.explain.spec().enabled;
        Ok(cfg)
    }

    /// The `--testbed` check of `delay` (a constant or a distribution; `--compare-netem`
    /// only with a constant), the engine on `cpu` and client and server on another of the
    /// `allowed` CPUs where there is one.
    pub fn check_config(
        &self,
        delay: DelaySpec,
        cpu: Option<u32>,
        allowed: &[u32],
    ) -> anyhow::Result<CheckConfig> {
        if self.compare_netem && !matches!(delay, DelaySpec::Constant { .. }) {
            return Err(usage(
                "--compare-netem compares a constant --delay, e.g. 20us",
            ));
        }
        Ok(CheckConfig {
            seed: self.seed,
            duration: self.check_duration,
            rounds: self.rounds,
            compare_netem: self.compare_netem,
            engine_cpu: cpu,
            endpoint_cpu: allowed.iter().copied().find(|c| Some(*c) != cpu).or(cpu),
            fifo: self.fifo,
            busy_client: self.busy_client,
            stalls: self.explain.spec().enabled,
            ..CheckConfig::new(delay)
        })
    }
}
