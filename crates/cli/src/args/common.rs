//! What the argument modules share: the output flags of measuring commands, the value
//! parsers of durations, percentiles and confidence levels, and name-list resolution.
//! The argument modules import these from here, never from their parent.

use clap::{Args, ValueEnum};
use latlab_core::parse::{parse_duration, parse_percentile, Percentile};
use latlab_core::units::Nanos;
use std::path::PathBuf;

/// Output options shared by measuring commands.
#[derive(Debug, Args)]
pub struct OutputArgs {
    /// Result file to write (default: latlab-results/<kind>-<UTC time>.json).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Print nothing but errors.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

/// `--dma-latency` of the measuring commands: hold the PM QoS CPU latency target for the
/// run. Not held by default (latlab does not change the measured system silently); the
/// idle states and the target are recorded in every result either way.
#[derive(Clone, Copy, Debug, Default, Args)]
pub struct IdleArgs {
    /// Hold /dev/cpu_dma_latency at US µs while the command runs (as cyclictest and rtla
    /// do): idle CPUs then enter only states that wake within US µs; 0 keeps them
    /// polling (no halting, no VM exit on a guest). Needs root. Default: not held.
    #[arg(long, value_name = "US", value_parser = dma_latency_arg)]
    pub dma_latency: Option<u32>,
}

impl IdleArgs {
    /// The `/dev/cpu_dma_latency` target an instrument check holds (`net calibrate`, `net
    /// delay --testbed`, where-time's injector check): `--dma-latency`, else 0 µs as root
    /// unless `--idle-as-is`; none without root (the hold needs it). An endpoint that
    /// halts while a delay runs adds its wake-up to what the check measures.
    pub fn for_check(&self, root: bool, idle_as_is: bool) -> Option<u32> {
        self.dma_latency.or((root && !idle_as_is).then_some(0))
    }
}

/// The largest `--dma-latency`: the PM QoS interface takes an `i32` of µs, and
/// 2000000000 is its "no request" value.
pub const DMA_LATENCY_MAX_US: u32 = 2_000_000_000;

/// A set of CPUs as the kernel writes them (`1`, `2-3,5`): `--isolate`, `host isolate
/// --cpus`. Whether they are online is checked when the run starts.
pub(crate) fn cpu_set_arg(s: &str) -> Result<CpuSet, String> {
    match latlab_sys::journal::entry::parse_cpu_list(s) {
        Some(v) if !v.is_empty() && v.iter().all(|&c| c < 8192) => Ok(CpuSet(v)),
        _ => Err(format!("'{s}' is not a CPU list; expected e.g. 1 or 2-3,5")),
    }
}

/// CPU numbers, sorted, without repeats.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CpuSet(pub Vec<u32>);

/// `--isolate` of the measuring commands.
#[derive(Clone, Debug, Default, Args)]
pub struct IsolateArg {
    /// Isolate these CPUs for the run (e.g. 1 or 2-3): device IRQs, unbound workqueues,
    /// other user processes and movable kernel threads go to the other CPUs; timer
    /// migration off, vmstat every 10 s, real-time throttling off; all restored after
    /// (also after SIGKILL, by the next latlab command). Needs root. See `latlab host
    /// isolate`.
    #[arg(long, value_name = "CPUS", value_parser = cpu_set_arg)]
    pub isolate: Option<CpuSet>,
}

/// `--dma-latency`: a whole number of µs from 0 to [`DMA_LATENCY_MAX_US`].
pub(crate) fn dma_latency_arg(s: &str) -> Result<u32, String> {
    let x = number_in(s, 0.0, f64::from(DMA_LATENCY_MAX_US))?;
    if x.fract() != 0.0 {
        return Err(format!(
            "'{s}' is not valid; expected a whole number of µs from 0 to {DMA_LATENCY_MAX_US}"
        ));
    }
    Ok(x as u32)
}

/// `--no-mlock` of the measuring commands that lock memory by default.
#[derive(Debug, Args)]
pub struct MlockArgs {
    /// Do not lock memory with mlockall (locking is attempted by default).
    #[arg(long)]
    pub no_mlock: bool,
}

/// Which directions of a two-port element (`latlab net forward`, `latlab net delay`) an
/// option applies to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum DirectionArg {
    /// Both directions.
    Both,
    /// A→B only: what arrives on the first port or interface.
    AToB,
    /// B→A only: what arrives on the second port or interface.
    BToA,
}

pub(crate) fn duration_arg(s: &str) -> Result<Nanos, String> {
    if s.trim_start().starts_with('-') {
        return Err(format!("'{s}' is not valid; a duration cannot be negative"));
    }
    parse_duration(s).map_err(|e| e.to_string())
}

/// A duration that must be positive (how long to measure or run): `0s` is rejected here,
/// before anything starts, so no run begins that could only fail or do nothing.
pub(crate) fn positive_duration_arg(s: &str) -> Result<Nanos, String> {
    match duration_arg(s)? {
        d if d.get() == 0 => Err(format!("'{s}' is not valid; must be positive, e.g. 2s")),
        d => Ok(d),
    }
}

/// A flag's number: finite and in `lo..=hi`. NaN, infinities and values outside the range
/// are rejected with one line giving the accepted form.
pub(crate) fn number_in(s: &str, lo: f64, hi: f64) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && x >= lo && x <= hi => Ok(x),
        _ => Err(format!(
            "'{s}' is not valid; expected a finite number from {lo} to {hi}"
        )),
    }
}

pub(crate) fn percentile_arg(s: &str) -> Result<Percentile, String> {
    parse_percentile(s).map_err(|e| e.to_string())
}

/// `--ci-width`: `pNN:WIDTH` (a percentile below 100, a positive duration).
pub(crate) fn ci_target_arg(s: &str) -> Result<latlab_core::selfcheck::CiTarget, String> {
    latlab_core::selfcheck::CiTarget::parse(s)
}

pub(crate) fn confidence_arg(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(c) if c > 0.0 && c < 1.0 => Ok(c),
        _ => Err(format!(
            "'{s}' is not valid; expected a confidence level between 0 and 1, e.g. 0.95"
        )),
    }
}

/// Resolves a list of names given to `flag` (e.g. `--sources`) into distinct values, in
/// the order first given; an unknown name is a usage error that lists the `accepted` ones.
pub fn pick_names<T: PartialEq>(
    names: &[String],
    flag: &str,
    what: &str,
    from_name: impl Fn(&str) -> Option<T>,
    accepted: &[&str],
) -> anyhow::Result<Vec<T>> {
    let mut out = Vec::new();
    for name in names {
        let v = from_name(name.trim()).ok_or_else(|| {
            crate::exit::usage(format!(
                "{flag}: unknown {what} '{name}'; accepted: {}",
                accepted.join(", ")
            ))
        })?;
        if !out.contains(&v) {
            out.push(v);
        }
    }
    Ok(out)
}

/// `--explain` and `--explain-above` of the net commands.
#[derive(Debug, Args)]
pub struct NetExplainArgs {
    /// Attribute the slow samples to causes: record kernel events on every CPU (needs
    /// root and tracefs; without them, the measuring threads' own stalls only) and split
    /// each slow sample's time above the run's median over what ran meanwhile (see
    /// `latlab explain`).
    #[arg(long)]
    pub explain: bool,
    /// Explain the samples above this latency instead of those above the run's p99
    /// (implies --explain), e.g. 50us.
    #[arg(long, value_name = "DUR", value_parser = positive_duration_arg)]
    pub explain_above: Option<Nanos>,
    /// Which kernel events to record with --explain: `attribution` (those the attribution
    /// uses) or `all` (also `sched_wakeup` and `napi_poll`, two more tracepoint hits per
    /// wake-up and NAPI poll, for reading the raw events).
    #[arg(long, value_enum, value_name = "SET", default_value_t = ExplainEventsArg::Attribution)]
    pub explain_events: ExplainEventsArg,
    /// How to record kernel events with --explain: `bpf` (programs on the raw
    /// tracepoints writing into a ring per CPU; the cheaper, used where it loads) or
    /// `tracefs` (a private tracefs instance streamed from `trace_pipe_raw`).
    #[arg(long, value_enum, value_name = "HOW", default_value_t = ExplainRecorderArg::Bpf)]
    pub explain_recorder: ExplainRecorderArg,
}

/// `--explain-recorder`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ExplainRecorderArg {
    /// BPF programs writing into a ring per CPU (falls back to tracefs where BPF cannot
    /// load).
    Bpf,
    /// A private tracefs instance.
    Tracefs,
}

/// `--explain-events`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ExplainEventsArg {
    /// The events the attribution uses.
    Attribution,
    /// Every event latlab knows.
    All,
}

impl NetExplainArgs {
    /// What the run is asked to explain.
    pub fn spec(&self) -> latlab_net::explain::ExplainSpec {
        latlab_net::explain::ExplainSpec {
            enabled: self.explain || self.explain_above.is_some(),
            above: self.explain_above,
            all_events: self.explain_events == ExplainEventsArg::All,
            tracefs: self.explain_recorder == ExplainRecorderArg::Tracefs,
        }
    }
}

/// Arrival process.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ArrivalsArg {
    /// Fixed gaps.
    Constant,
    /// Exponential gaps.
    Poisson,
}

impl From<ArrivalsArg> for latlab_net::probe::Arrivals {
    fn from(a: ArrivalsArg) -> Self {
        match a {
            ArrivalsArg::Constant => latlab_net::probe::Arrivals::Constant,
            ArrivalsArg::Poisson => latlab_net::probe::Arrivals::Poisson,
        }
    }
}
