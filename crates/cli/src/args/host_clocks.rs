//! Options of `latlab host clocks`, and their resolution into a [`ClocksRun`].

use super::common::{duration_arg, pick_names, positive_duration_arg, MlockArgs, OutputArgs};
use crate::exit::usage;
use clap::{Args, ValueEnum};
use latlab_core::hist::HistConfig;
use latlab_core::units::Nanos;
use latlab_host::clocks::{ClockSource, ClocksConfig, ClocksRun, TimebaseChoice};
use std::path::PathBuf;

/// Options of `latlab host clocks`.
#[derive(Debug, Args)]
pub struct ClocksArgs {
    /// How long to read each source, e.g. 250ms, 2s, 1.5m.
    #[arg(long, short = 'd', default_value = "2s", value_parser = positive_duration_arg)]
    pub duration: Nanos,
    /// Clock sources, comma separated: rdtsc, rdtscp, monotonic, monotonic_raw, realtime,
    /// gettimeofday.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "rdtsc,rdtscp,monotonic,monotonic_raw,realtime,gettimeofday"
    )]
    pub sources: Vec<String>,
    /// Pin the reading thread to this CPU.
    #[arg(long)]
    pub cpu: Option<u32>,
    /// Run the reading thread under SCHED_FIFO at this priority (1-99; needs root or
    /// CAP_SYS_NICE).
    #[arg(long, value_name = "PRIO", value_parser = clap::value_parser!(i32).range(1..=99))]
    pub fifo: Option<i32>,
    /// Length of one interval of the time series written to the .hlog interval log.
    #[arg(long, default_value = "1s", value_parser = duration_arg)]
    pub interval: Nanos,
    /// Timebase for timing the run and converting TSC gaps: `auto` uses the TSC when it is
    /// invariant (else CLOCK_MONOTONIC, saying why); `monotonic` forces CLOCK_MONOTONIC, in
    /// which case the TSC sources are skipped.
    #[arg(long, value_enum, default_value_t = TimebaseArg::Auto)]
    pub timebase: TimebaseArg,
    /// TSC calibration window (against CLOCK_MONOTONIC_RAW).
    #[arg(long, default_value = "100ms", value_parser = duration_arg)]
    pub calibration: Nanos,
    /// Significant digits kept by the histograms (1-5).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u8).range(1..=5))]
    pub sigfig: u8,
    #[command(flatten)]
    pub mlock: MlockArgs,
    #[command(flatten)]
    pub out: OutputArgs,
    #[command(flatten)]
    pub isolate: super::common::IsolateArg,
    /// Also draw the CCDF of all sources; FILE defaults to the result's name with .svg.
    #[arg(long, value_name = "FILE", num_args = 0..=1)]
    pub plot: Option<Option<PathBuf>>,
    /// Attribute each slow read (above the source's p99 and at least 1us) to kernel
    /// events on the reading CPU; needs root and tracefs, else the slow reads are kept
    /// unexplained and one line says why.
    #[arg(long)]
    pub explain: bool,
    /// With --explain: a slow read is a gap at or above this, e.g. 50us (implies --explain).
    #[arg(long, value_name = "DUR", value_parser = positive_duration_arg)]
    pub explain_above: Option<Nanos>,
}

/// Timebase choice.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum TimebaseArg {
    /// The invariant TSC where available, else CLOCK_MONOTONIC.
    Auto,
    /// CLOCK_MONOTONIC, always.
    Monotonic,
}

impl TryFrom<&ClocksArgs> for ClocksRun {
    type Error = anyhow::Error;

    fn try_from(a: &ClocksArgs) -> anyhow::Result<ClocksRun> {
        let all: Vec<&str> = ClockSource::ALL.iter().map(|s| s.name()).collect();
        let sources = pick_names(
            &a.sources,
            "--sources",
            "clock source",
            ClockSource::from_name,
            &all,
        )?;
        let r = ClocksRun {
            cfg: ClocksConfig {
                sources,
                duration: a.duration,
                interval: a.interval,
                hist: HistConfig {
                    sigfig: a.sigfig,
                    ..HistConfig::default()
                },
                ..ClocksConfig::default()
            },
            cpu: a.cpu,
            fifo: a.fifo,
            mlock: !a.mlock.no_mlock,
            timebase: match a.timebase {
                TimebaseArg::Monotonic => TimebaseChoice::Monotonic,
                TimebaseArg::Auto => TimebaseChoice::Auto {
                    calibration: a.calibration,
                },
            },
            started_utc: String::new(),
            explain: a.explain || a.explain_above.is_some(),
            explain_above: a.explain_above,
        };
        r.validate().map_err(|e| usage(e.to_string()))?;
        Ok(r)
    }
}
