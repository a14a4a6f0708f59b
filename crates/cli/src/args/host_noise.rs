//! Options of `latlab host noise` and `latlab explain`.

use super::common::{duration_arg, MlockArgs, OutputArgs};
use clap::Args;
use latlab_core::units::Nanos;
use latlab_host::noise::NoiseRun;
use std::path::PathBuf;

/// Options of `latlab host noise`.
#[derive(Debug, Args)]
pub struct NoiseArgs {
    /// The CPU to measure (the spinning thread is pinned to it).
    #[arg(long)]
    pub cpu: u32,
    /// How long to spin, e.g. 2s, 1m (at most 1h).
    #[arg(long, short = 'd', default_value = "5s", value_parser = duration_arg)]
    pub duration: Nanos,
    /// Shortest read-to-read step counted as a gap, e.g. 5us.
    #[arg(long, default_value = "5us", value_parser = duration_arg)]
    pub threshold: Nanos,
    /// Run the spinning thread under SCHED_FIFO at this priority (1-99; needs root or
    /// CAP_SYS_NICE).
    #[arg(long, value_name = "PRIO", value_parser = clap::value_parser!(i32).range(1..=99))]
    pub fifo: Option<i32>,
    /// Do not record kernel events: gaps only, every one unexplained.
    #[arg(long)]
    pub no_kernel: bool,
    /// Kernel ring-buffer size per CPU, KiB (64-4194304).
    #[arg(long, default_value_t = 32768, value_parser = clap::value_parser!(u32).range(64..=4_194_304))]
    pub buffer_kb: u32,
    /// Worst gaps listed with the kernel events under them.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(0..=1000))]
    pub worst: u32,
    #[command(flatten)]
    pub mlock: MlockArgs,
    #[command(flatten)]
    pub out: OutputArgs,
    #[command(flatten)]
    pub idle: super::common::IdleArgs,
    #[command(flatten)]
    pub isolate: super::common::IsolateArg,
}

/// The one resolve step of `latlab host noise` (the library validates the result once).
impl From<&NoiseArgs> for NoiseRun {
    fn from(a: &NoiseArgs) -> NoiseRun {
        NoiseRun {
            cpu: a.cpu,
            duration: a.duration,
            threshold: a.threshold,
            fifo: a.fifo,
            kernel: !a.no_kernel,
            buffer_kb: a.buffer_kb,
            worst: a.worst as usize,
            mlock: !a.mlock.no_mlock,
            ..NoiseRun::default()
        }
    }
}

/// Options of `latlab explain`.
#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// Result files carrying an attribution (e.g. from `latlab host noise`).
    #[arg(required = true, value_name = "RESULT")]
    pub results: Vec<PathBuf>,
    /// Print the attributions as JSON (one object per result, in an array when there are
    /// several).
    #[arg(long)]
    pub json: bool,
    /// For each top cause, what removes it: the flag or command (runtime, e.g. --isolate)
    /// or the kernel boot parameter (boot-only), its share of the excess, the knob and its
    /// kernel documentation.
    #[arg(long, conflicts_with = "json")]
    pub advise: bool,
}
