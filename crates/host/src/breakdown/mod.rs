//! `latlab host breakdown`: what each step a request crosses inside a host costs, from a
//! clock read up to a round trip across two network namespaces, each as a full histogram
//! and classified Good / Bad / Ugly (*Where Has My Time Gone?* §2.2 and §1; the paper's
//! text stops before its own breakdown, so the step list is latlab's, in its spirit).
//!
//! Steps ([`Step`]), cheapest first: clock read, null system call, cross-core cache-line
//! ping-pong, futex wake-up round trips (same core, other core), pipe, eventfd and UNIX
//! socket round trips, UDP and TCP loopback round trips (blocking and busy-polling), and a
//! UDP round trip across a veth pair between two network namespaces, answered by the
//! kernel's socket layer (`veth_netns`) or by latlab's user-space NF (`latlab_nf`). See
//! the `steps` module (private) for how a sample is timed, [`classify`] for the class rule and
//! [`decompose`] for the stacked UDP decomposition.
//!
//! The library measures and fills a [`ResultFile`]; [`table`] and
//! [`decompose::decompose_udp`] turn a loaded result back into what a report shows.

pub mod classify;
pub mod decompose;
pub mod sections;
mod session;
mod steps;

pub use session::{run, RunError};

use classify::{ClassRule, Classification};
use decompose::Decomposition;
use latlab_core::hist::{HistConfig, LatencyHistogram};
use latlab_core::parse::Percentile;
use latlab_core::results::{ResultFile, StoredHistogram};
use latlab_core::stats::is_supported;
use latlab_core::units::Nanos;
use latlab_sys::netns::{Namespaces, TopologyError};
use latlab_sys::tsc::Clock;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// The result kind written by `latlab host breakdown`.
pub const RESULT_KIND: &str = "host.breakdown";

/// One step of the breakdown.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Step {
    /// Two back-to-back TSC reads.
    ClockRead,
    /// `getppid` as a raw system call.
    NullSyscall,
    /// A counter passed through one cache line between two spinning cores.
    CachelinePingpong,
    /// Futex wake-up round trip, both threads on one core.
    FutexSameCore,
    /// Futex wake-up round trip, threads on two cores.
    FutexOtherCore,
    /// Round trip through two pipes.
    Pipe,
    /// Round trip through two eventfds.
    Eventfd,
    /// Round trip over a UNIX stream socket pair.
    UnixSocket,
    /// UDP round trip over loopback, blocking receive.
    UdpLoopback,
    /// UDP round trip over loopback, busy-polling (non-blocking) receive.
    UdpLoopbackBusy,
    /// TCP round trip over loopback, blocking receive.
    TcpLoopback,
    /// TCP round trip over loopback, busy-polling receive.
    TcpLoopbackBusy,
    /// UDP round trip across a veth pair between two network namespaces.
    VethNetns,
    /// UDP round trip across a veth pair between two namespaces, answered by latlab's
    /// user-space NF (the reflector of `latlab net reflect`).
    LatlabNf,
}

impl Step {
    /// Every step, cheapest first (the default order).
    pub const ALL: [Step; 14] = [
        Step::ClockRead,
        Step::NullSyscall,
        Step::CachelinePingpong,
        Step::FutexSameCore,
        Step::FutexOtherCore,
        Step::Pipe,
        Step::Eventfd,
        Step::UnixSocket,
        Step::UdpLoopback,
        Step::UdpLoopbackBusy,
        Step::TcpLoopback,
        Step::TcpLoopbackBusy,
        Step::VethNetns,
        Step::LatlabNf,
    ];

    /// The name used on the command line, in tables and as the histogram name.
    pub fn name(self) -> &'static str {
        match self {
            Step::ClockRead => "clock_read",
            Step::NullSyscall => "null_syscall",
            Step::CachelinePingpong => "cacheline_pingpong",
            Step::FutexSameCore => "futex_same_core",
            Step::FutexOtherCore => "futex_other_core",
            Step::Pipe => "pipe",
            Step::Eventfd => "eventfd",
            Step::UnixSocket => "unix_socket",
            Step::UdpLoopback => "udp_loopback",
            Step::UdpLoopbackBusy => "udp_loopback_busy",
            Step::TcpLoopback => "tcp_loopback",
            Step::TcpLoopbackBusy => "tcp_loopback_busy",
            Step::VethNetns => "veth_netns",
            Step::LatlabNf => "latlab_nf",
        }
    }

    /// Parses a name as printed by [`Step::name`].
    pub fn from_name(s: &str) -> Option<Step> {
        Self::ALL.into_iter().find(|x| x.name() == s)
    }

    /// What one sample is, in words.
    pub fn description(self) -> &'static str {
        match self {
            Step::ClockRead => "one TSC read (gap between back-to-back reads)",
            Step::NullSyscall => "one null system call (getppid)",
            Step::CachelinePingpong => "cache-line round trip between two spinning cores",
            Step::FutexSameCore => "futex wake-up round trip, same core",
            Step::FutexOtherCore => "futex wake-up round trip, other core",
            Step::Pipe => "pipe round trip, other core",
            Step::Eventfd => "eventfd round trip, other core",
            Step::UnixSocket => "UNIX stream socket round trip, other core",
            Step::UdpLoopback => "UDP loopback round trip, blocking",
            Step::UdpLoopbackBusy => "UDP loopback round trip, busy-polling",
            Step::TcpLoopback => "TCP loopback round trip, blocking",
            Step::TcpLoopbackBusy => "TCP loopback round trip, busy-polling",
            Step::VethNetns => "UDP round trip over veth between two namespaces",
            Step::LatlabNf => "UDP round trip over veth to latlab's user-space NF (reflector)",
        }
    }

    /// Whether the step runs two threads on two different CPUs.
    pub fn needs_two_cpus(self) -> bool {
        !matches!(
            self,
            Step::ClockRead | Step::NullSyscall | Step::FutexSameCore
        )
    }

    /// Whether the step needs root (network namespaces).
    pub fn needs_root(self) -> bool {
        matches!(self, Step::VethNetns | Step::LatlabNf)
    }
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What to measure.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BreakdownConfig {
    /// Steps, in this order.
    pub steps: Vec<Step>,
    /// Measured time per step.
    pub duration: Nanos,
    /// Unrecorded warm-up per step (caches, ARP, connection set-up).
    pub warmup: Nanos,
    /// At most this many samples per step.
    pub max_samples: u64,
    /// CPU of the client (and of single-thread steps); `None`: not pinned.
    pub client_cpu: Option<u32>,
    /// CPU of the server thread in two-core steps.
    pub server_cpu: Option<u32>,
    /// Message size of pipe, socket, UDP and TCP steps, bytes.
    pub payload: usize,
    /// Histogram range and precision.
    pub hist: HistConfig,
    /// The Good/Bad/Ugly thresholds.
    pub rule: ClassRule,
}

impl Default for BreakdownConfig {
    fn default() -> Self {
        BreakdownConfig {
            steps: Step::ALL.to_vec(),
            duration: Nanos::from_secs(2),
            warmup: Nanos(200_000_000),
            max_samples: 50_000_000,
            client_cpu: None,
            server_cpu: None,
            payload: 32,
            hist: HistConfig::default(),
            rule: ClassRule::default(),
        }
    }
}

/// Errors that stop a step.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BreakdownError {
    /// Bad configuration.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// An I/O step failed.
    #[error("{0}: {1}")]
    Io(String, #[source] std::io::Error),
    /// Building the namespaces failed.
    #[error(transparent)]
    Netns(#[from] TopologyError),
    /// Entering a namespace failed.
    #[error(transparent)]
    Enter(#[from] latlab_sys::netns::NetnsError),
}

/// One measured step.
#[derive(Clone, Debug)]
pub struct StepOutcome {
    /// Which step (set by [`measure`]).
    pub step: Step,
    /// Every sample, ns.
    pub hist: LatencyHistogram,
    /// Samples taken.
    pub samples: u64,
    /// Measured wall time.
    pub elapsed: Nanos,
    /// CPU of the client / single thread.
    pub client_cpu: Option<u32>,
    /// CPU of the server thread.
    pub server_cpu: Option<u32>,
}

impl StepOutcome {
    fn new(
        hist: LatencyHistogram,
        samples: u64,
        elapsed: Nanos,
        client_cpu: Option<u32>,
        server_cpu: Option<u32>,
    ) -> StepOutcome {
        StepOutcome {
            step: Step::ClockRead,
            hist,
            samples,
            elapsed,
            client_cpu,
            server_cpu,
        }
    }
}

/// Why a step cannot run here, or `None` when it can. `cpus` are the CPUs this process
/// may use.
pub fn unavailable(step: Step, cfg: &BreakdownConfig, root: bool, cpus: &[u32]) -> Option<String> {
    if step.needs_root() && !root {
        return Some("needs root to create network namespaces".into());
    }
    if step.needs_two_cpus() {
        let distinct = match (cfg.client_cpu, cfg.server_cpu) {
            (Some(a), Some(b)) => a != b,
            _ => cpus.len() >= 2,
        };
        if !distinct {
            return Some("needs two distinct CPUs (--cpus A,B)".into());
        }
    }
    None
}

/// The (client, server) CPUs used: the configured ones, else the last two allowed CPUs
/// (CPU 0 usually takes more interrupts).
pub fn placement(cfg: &BreakdownConfig, cpus: &[u32]) -> (Option<u32>, Option<u32>) {
    match (cfg.client_cpu, cfg.server_cpu) {
        (Some(a), Some(b)) => (Some(a), Some(b)),
        _ => match cpus {
            [.., a, b] => (Some(*b), Some(*a)),
            [a] => (Some(*a), Some(*a)),
            [] => (None, None),
        },
    }
}

/// Measures one step on this host. Namespaces needed by a step are created and removed
/// here.
///
/// # Errors
/// [`BreakdownError`] naming what failed.
pub fn measure(
    step: Step,
    cfg: &BreakdownConfig,
    clock: &Clock,
    cpus: &[u32],
) -> Result<StepOutcome, BreakdownError> {
    if cfg.duration.get() == 0 {
        return Err(BreakdownError::Config("duration must be positive".into()));
    }
    LatencyHistogram::new(cfg.hist).map_err(|e| BreakdownError::Config(e.to_string()))?;
    let (c, s) = placement(cfg, cpus);
    let p = cfg.payload;
    let io = |what: &str| {
        let what = what.to_string();
        move |e| BreakdownError::Io(what, e)
    };
    let mut o = match step {
        Step::ClockRead => steps::clock_read(cfg, clock, c)?,
        Step::NullSyscall => steps::single(cfg, clock, c, || {
            std::hint::black_box(latlab_sys::ipc::null_syscall());
        })?,
        Step::CachelinePingpong => {
            let (a, b) = steps::LineSide::pair();
            steps::round_trip(cfg, clock, c, s, || Ok(a), || Ok(b))?
        }
        Step::FutexSameCore => {
            let (a, b) = steps::FutexSide::pair();
            steps::round_trip(cfg, clock, c, c, || Ok(a), || Ok(b))?
        }
        Step::FutexOtherCore => {
            let (a, b) = steps::FutexSide::pair();
            steps::round_trip(cfg, clock, c, s, || Ok(a), || Ok(b))?
        }
        Step::Pipe => {
            let (a, b) = steps::pipe_pair(p).map_err(io("creating pipes"))?;
            steps::round_trip(cfg, clock, c, s, || Ok(a), || Ok(b))?
        }
        Step::Eventfd => {
            let (a, b) = steps::eventfd_pair().map_err(io("creating eventfds"))?;
            steps::round_trip(cfg, clock, c, s, || Ok(a), || Ok(b))?
        }
        Step::UnixSocket => {
            let (a, b) = steps::unix_pair(p).map_err(io("creating a UNIX socket pair"))?;
            steps::round_trip(cfg, clock, c, s, || Ok(a), || Ok(b))?
        }
        Step::UdpLoopback | Step::UdpLoopbackBusy => {
            let busy = step == Step::UdpLoopbackBusy;
            let (a, b) = steps::udp_loopback_pair(p, busy).map_err(io("creating UDP sockets"))?;
            steps::round_trip(cfg, clock, c, s, || Ok(a), || Ok(b))?
        }
        Step::TcpLoopback | Step::TcpLoopbackBusy => {
            let busy = step == Step::TcpLoopbackBusy;
            let (a, b) = steps::tcp_loopback_pair(p, busy).map_err(io("connecting over TCP"))?;
            steps::round_trip(cfg, clock, c, s, || Ok(a), || Ok(b))?
        }
        Step::VethNetns => veth_round_trip(cfg, clock, c, s)?,
        Step::LatlabNf => nf_round_trip(cfg, clock, c, s)?,
    };
    o.step = step;
    Ok(o)
}

/// Addresses of the veth step (a /30 unlikely to clash; the namespaces are private).
const VETH_CLIENT: &str = "10.199.77.1";
const VETH_SERVER: &str = "10.199.77.2";
const VETH_PORT: u16 = 7_777;

fn veth_round_trip(
    cfg: &BreakdownConfig,
    clock: &Clock,
    c: Option<u32>,
    s: Option<u32>,
) -> Result<StepOutcome, BreakdownError> {
    let a = latlab_sys::netns::unique_name("bd-a");
    let b = latlab_sys::netns::unique_name("bd-b");
    let ns = Namespaces::create(&[a.clone(), b.clone()])?;
    ns.veth(&a, "latlab-bd0", &b, "latlab-bd1")?;
    ns.addr(&a, "latlab-bd0", &format!("{VETH_CLIENT}/30"))?;
    ns.addr(&b, "latlab-bd1", &format!("{VETH_SERVER}/30"))?;
    let p = cfg.payload;
    let server_addr: std::net::SocketAddr = format!("{VETH_SERVER}:{VETH_PORT}")
        .parse()
        .expect("valid literal address");
    let client_addr: std::net::SocketAddr = format!("{VETH_CLIENT}:{VETH_PORT}")
        .parse()
        .expect("valid literal address");
    let (na, nb) = (a.clone(), b.clone());
    let out = steps::round_trip(
        cfg,
        clock,
        c,
        s,
        move || {
            latlab_sys::netns::enter(&na).map_err(std::io::Error::other)?;
            let x = steps::UdpSide::bind(&client_addr.to_string(), p, false)?;
            x.connect(server_addr)?;
            Ok(x)
        },
        move || {
            latlab_sys::netns::enter(&nb).map_err(std::io::Error::other)?;
            let x = steps::UdpSide::bind(&server_addr.to_string(), p, false)?;
            x.connect(client_addr)?;
            Ok(x)
        },
    );
    drop(ns);
    out
}

/// Addresses of the NF step (another private /30).
const NF_CLIENT: &str = "10.199.78.1";
const NF_SERVER: &str = "10.199.78.2";
const NF_PORT: u16 = 7_778;

/// A UDP round trip from a client namespace to latlab's reflector (`latlab_net::nf`, the
/// NF behind `latlab net reflect`) in a second namespace, across a veth pair: the
/// `veth_netns` round trip with latlab's user-space NF in place of a plain echo server.
/// The reflector runs blocking, pinned to the server CPU, on its own thread; the client
/// sends a valid probe (the NF drops anything else) and waits for it to come back.
fn nf_round_trip(
    cfg: &BreakdownConfig,
    clock: &Clock,
    c: Option<u32>,
    s: Option<u32>,
) -> Result<StepOutcome, BreakdownError> {
    use latlab_net::nf;
    let a = latlab_sys::netns::unique_name("bd-nfa");
    let b = latlab_sys::netns::unique_name("bd-nfb");
    let ns = Namespaces::create(&[a.clone(), b.clone()])?;
    ns.veth(&a, "latlab-bn0", &b, "latlab-bn1")?;
    ns.addr(&a, "latlab-bn0", &format!("{NF_CLIENT}/30"))?;
    ns.addr(&b, "latlab-bn1", &format!("{NF_SERVER}/30"))?;
    let server_addr: std::net::SocketAddr = format!("{NF_SERVER}:{NF_PORT}")
        .parse()
        .expect("valid literal address");
    let client_addr = format!("{NF_CLIENT}:{NF_PORT}");
    let nf_cfg = nf::NfConfig {
        cpus: s.into_iter().collect(),
        ..nf::NfConfig::reflect(server_addr)
    };
    // The reflector's socket is bound, and its thread spawned, from a thread inside the
    // server namespace; the NF thread inherits that namespace.
    let nclock = *clock;
    let nb = b.clone();
    let handle = std::thread::spawn(move || -> Result<nf::NfHandle, BreakdownError> {
        latlab_sys::netns::enter(&nb)?;
        nf::start(&nf_cfg, nclock).map_err(|e| {
            BreakdownError::Io(
                "starting latlab's reflector".into(),
                std::io::Error::other(e.to_string()),
            )
        })
    })
    .join()
    .expect("NF start thread panicked")?;
    let payload = cfg.payload.max(latlab_net::wire::HEADER_LEN);
    let na = a.clone();
    let out = steps::client_only(cfg, clock, c, s, move || {
        latlab_sys::netns::enter(&na).map_err(std::io::Error::other)?;
        let x = steps::UdpSide::bind(&client_addr, payload, false)?.with_message(|buf| {
            latlab_net::wire::ProbeRepr::default().emit(buf);
        });
        x.connect(server_addr)?;
        Ok(x)
    });
    let counters = handle.counters.clone();
    drop(handle.stop());
    drop(ns);
    let malformed = counters.malformed_total();
    if out.is_ok() && malformed > 0 {
        return Err(BreakdownError::Config(format!(
            "latlab's reflector dropped {malformed} datagrams as malformed"
        )));
    }
    out
}

/// Facts about one measured step, kept in the result's `data`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepFacts {
    /// Step name (= histogram name).
    pub name: String,
    /// What one sample is.
    pub description: String,
    /// Samples recorded.
    pub samples: u64,
    /// Measured wall time, ns.
    pub elapsed_ns: u64,
    /// Client / single-thread CPU.
    pub client_cpu: Option<u32>,
    /// Server CPU.
    pub server_cpu: Option<u32>,
    /// Good / Bad / Ugly with its reason.
    pub classification: Classification,
}

/// A step that was not measured, and why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SkippedStep {
    /// Step name.
    pub name: String,
    /// Why.
    pub reason: String,
}

/// The kind-specific `data` of a `host.breakdown` result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BreakdownData {
    /// Measured steps, in run order.
    pub steps: Vec<StepFacts>,
    /// Steps not measured.
    pub skipped: Vec<SkippedStep>,
    /// The class rule applied.
    pub rule: ClassRule,
    /// The UDP loopback round trips decomposed (see [`decompose`]).
    pub decomposition: Vec<Decomposition>,
}

/// Stores every outcome's histogram (named after the step), the class of each, skipped
/// steps as warnings, and the decomposition into `result`.
pub fn fill_result(
    result: &mut ResultFile,
    outcomes: &[StepOutcome],
    skipped: &[(Step, String)],
    rule: &ClassRule,
) {
    let mut steps = Vec::new();
    let mut medians = BTreeMap::new();
    for o in outcomes {
        let name = o.step.name();
        result.histograms.push(
            StoredHistogram::new(name, &o.hist)
                .with_label("step", name)
                .with_label("measures", o.step.description()),
        );
        result
            .counters
            .insert(format!("{name}.saturated"), o.hist.saturated());
        let Some(classification) = classify::classify(&o.hist, rule) else {
            result
                .warnings
                .push(format!("{name}: no samples were recorded"));
            continue;
        };
        medians.insert(name.to_string(), classification.p50_ns);
        steps.push(StepFacts {
            name: name.to_string(),
            description: o.step.description().to_string(),
            samples: o.samples,
            elapsed_ns: o.elapsed.get(),
            client_cpu: o.client_cpu,
            server_cpu: o.server_cpu,
            classification,
        });
    }
    for (s, why) in skipped {
        result
            .warnings
            .push(format!("{}: not measured: {why}", s.name()));
    }
    let data = BreakdownData {
        steps,
        skipped: skipped
            .iter()
            .map(|(s, r)| SkippedStep {
                name: s.name().to_string(),
                reason: r.clone(),
            })
            .collect(),
        rule: *rule,
        decomposition: decompose::decompose_udp(&medians),
    };
    result.data = serde_json::to_value(data).expect("plain data serialises");
}

/// One row of the breakdown table, from a loaded result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TableRow {
    /// Step name.
    pub step: String,
    /// What one sample is.
    pub description: String,
    /// Median, ns.
    pub p50_ns: u64,
    /// p99, ns.
    pub p99_ns: u64,
    /// p99.99, ns; `None` when fewer samples than needed to support it.
    pub p9999_ns: Option<u64>,
    /// Maximum, ns.
    pub max_ns: u64,
    /// Samples.
    pub samples: u64,
    /// Good, Bad or Ugly.
    pub class: classify::Class,
    /// The rule's reason.
    pub reason: String,
}

/// Errors reading a breakdown result back.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// Not a `host.breakdown` result.
    #[error("result kind is '{0}', expected '{RESULT_KIND}'")]
    WrongKind(String),
    /// `data` does not parse.
    #[error("the result's data is not a breakdown: {0}")]
    Data(#[from] serde_json::Error),
    /// A histogram is missing or does not decode.
    #[error("histogram '{0}': {1}")]
    Histogram(String, String),
}

/// Reads the kind-specific data of a breakdown result.
///
/// # Errors
/// [`ReadError`] for another kind or malformed data.
pub fn data(r: &ResultFile) -> Result<BreakdownData, ReadError> {
    if r.kind != RESULT_KIND {
        return Err(ReadError::WrongKind(r.kind.clone()));
    }
    Ok(serde_json::from_value(r.data.clone())?)
}

/// The breakdown table (one row per measured step, in run order), computed from the
/// result's histograms.
///
/// # Errors
/// [`ReadError`] for another kind, malformed data or a missing histogram.
pub fn table(r: &ResultFile) -> Result<Vec<TableRow>, ReadError> {
    let d = data(r)?;
    let p9999 = Percentile::LADDER[4];
    let mut rows = Vec::new();
    for s in &d.steps {
        let h = r
            .histogram(&s.name)
            .ok_or_else(|| ReadError::Histogram(s.name.clone(), "missing".into()))?
            .map_err(|e| ReadError::Histogram(s.name.clone(), e.to_string()))?;
        let c = classify::classify(&h, &d.rule)
            .ok_or_else(|| ReadError::Histogram(s.name.clone(), "empty".into()))?;
        rows.push(TableRow {
            step: s.name.clone(),
            description: s.description.clone(),
            p50_ns: c.p50_ns,
            p99_ns: c.p99_ns,
            p9999_ns: is_supported(p9999, h.count()).then(|| h.value_at(p9999)),
            max_ns: h.max(),
            samples: h.count(),
            class: c.class,
            reason: c.reason,
        });
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for s in Step::ALL {
            assert_eq!(Step::from_name(s.name()), Some(s));
        }
        assert_eq!(Step::from_name("nope"), None);
    }

    #[test]
    fn availability_rules() {
        let cfg = BreakdownConfig::default();
        assert!(unavailable(Step::VethNetns, &cfg, false, &[0, 1]).is_some());
        assert!(unavailable(Step::VethNetns, &cfg, true, &[0, 1]).is_none());
        assert!(unavailable(Step::Pipe, &cfg, false, &[0]).is_some());
        assert!(unavailable(Step::ClockRead, &cfg, false, &[0]).is_none());
        assert!(unavailable(Step::LatlabNf, &cfg, true, &[0, 1]).is_none());
        assert!(unavailable(Step::LatlabNf, &cfg, false, &[0, 1])
            .unwrap()
            .contains("root"));
    }

    #[test]
    fn placement_prefers_last_two_cpus() {
        let cfg = BreakdownConfig::default();
        assert_eq!(placement(&cfg, &[0, 1, 2, 3]), (Some(3), Some(2)));
        assert_eq!(placement(&cfg, &[5]), (Some(5), Some(5)));
        let cfg = BreakdownConfig {
            client_cpu: Some(0),
            server_cpu: Some(2),
            ..cfg
        };
        assert_eq!(placement(&cfg, &[0, 1, 2, 3]), (Some(0), Some(2)));
    }

    fn quick() -> BreakdownConfig {
        BreakdownConfig {
            duration: Nanos(20_000_000),
            warmup: Nanos(5_000_000),
            ..BreakdownConfig::default()
        }
    }

    #[test]
    fn single_thread_steps_record_samples() {
        let clock = Clock::monotonic();
        let cpus = latlab_sys::sched::allowed_cpus();
        for step in [Step::ClockRead, Step::NullSyscall, Step::FutexSameCore] {
            let o = measure(step, &quick(), &clock, &cpus).unwrap();
            assert_eq!(o.step, step);
            assert!(o.samples > 10, "{step}: {}", o.samples);
            assert_eq!(o.hist.count(), o.samples);
        }
    }

    #[test]
    fn round_trip_steps_end_cleanly() {
        let clock = Clock::monotonic();
        let cpus = latlab_sys::sched::allowed_cpus();
        let cfg = quick();
        for step in [
            Step::Pipe,
            Step::Eventfd,
            Step::UnixSocket,
            Step::UdpLoopback,
            Step::TcpLoopback,
            Step::FutexOtherCore,
        ] {
            if unavailable(step, &cfg, false, &cpus).is_some() {
                eprintln!("skipped {step}: needs two CPUs");
                continue;
            }
            let o = measure(step, &cfg, &clock, &cpus).unwrap();
            assert!(o.samples > 0, "{step}");
        }
    }

    #[test]
    fn nf_step_round_trips_through_latlabs_reflector() {
        let cpus = latlab_sys::sched::allowed_cpus();
        let cfg = quick();
        let root = latlab_sys::netns::is_root();
        if let Some(why) = unavailable(Step::LatlabNf, &cfg, root, &cpus) {
            eprintln!("skipped latlab_nf: {why}");
            return;
        }
        let clock = Clock::monotonic();
        let o = measure(Step::LatlabNf, &cfg, &clock, &cpus).unwrap();
        assert_eq!(o.step, Step::LatlabNf);
        assert!(o.samples > 0);
        assert_eq!(o.hist.count(), o.samples);
    }

    #[test]
    fn result_round_trips_into_a_table() {
        let clock = Clock::monotonic();
        let cpus = latlab_sys::sched::allowed_cpus();
        let o = measure(Step::NullSyscall, &quick(), &clock, &cpus).unwrap();
        let mut r = ResultFile::new(
            RESULT_KIND,
            vec![],
            serde_json::json!({}),
            latlab_sys::host::provenance(
                Clock::establish_monotonic("test").1,
                vec![],
                false,
                "2026-01-01T00:00:00Z".into(),
            ),
        );
        fill_result(
            &mut r,
            &[o],
            &[(Step::VethNetns, "needs root".into())],
            &ClassRule::default(),
        );
        let rows = table(&r).unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].step, "null_syscall");
        assert!(rows[0].p50_ns <= rows[0].p99_ns && rows[0].p99_ns <= rows[0].max_ns);
        let d = data(&r).unwrap();
        assert_eq!(d.skipped[0].name, "veth_netns");
        assert!(r.warnings.iter().any(|w| w.contains("veth_netns")));
    }
}
