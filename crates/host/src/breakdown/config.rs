//! What `host breakdown` measures (its steps and configuration), and what one measured
//! step yields.

use super::classify::ClassRule;
use latlab_core::hist::{HistConfig, LatencyHistogram};
use latlab_core::units::Nanos;
use latlab_sys::netns::TopologyError;
use serde::{Deserialize, Serialize};
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
    pub(super) fn new(
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
