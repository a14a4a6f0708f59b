//! What a probe run is told: mode, arrivals, timestamp sources, the resolved
//! [`ProbeConfig`] with its one set of checks, and the errors that stop a run.

use crate::nf::IoMode;
use crate::wire;
use latlab_core::hist::{HistConfig, LatencyHistogram};
use latlab_core::selfcheck::CiTarget;
use latlab_core::units::Nanos;
use latlab_sys::sched;
use serde::{Deserialize, Serialize};
use std::io;
use std::net::SocketAddr;

/// Open or closed loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Open loop at a rate.
    OpenLoop,
    /// One probe in flight.
    Pingpong,
}

/// Inter-arrival process of the open loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Arrivals {
    /// Fixed gaps.
    Constant,
    /// Exponential gaps.
    Poisson,
}

/// Which timestamp sources to use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sources {
    /// TSC just before send / just after receive.
    pub user: bool,
    /// `SO_TIMESTAMPING` software TX (SCHED, SND) and RX.
    pub kernel: bool,
    /// `SO_TIMESTAMPING` hardware TX and RX.
    pub hardware: bool,
}

impl Sources {
    /// User timestamps only (`--timestamps user`).
    pub const USER: Sources = Sources {
        user: true,
        kernel: false,
        hardware: false,
    };
    /// User and kernel timestamps (the default of `--timestamps`).
    pub const USER_KERNEL: Sources = Sources {
        user: true,
        kernel: true,
        hardware: false,
    };
    /// Every source (`--timestamps all`).
    pub const ALL: Sources = Sources {
        user: true,
        kernel: true,
        hardware: true,
    };

    /// The accepted forms of `--timestamps`.
    pub const FORMS: &'static str = "a comma-separated list of user, kernel, hardware, or all";

    /// Parses `user,kernel,hardware` or `all`.
    pub fn parse(s: &str) -> Result<Sources, String> {
        let mut out = Sources::default();
        for part in s.split(',').map(str::trim) {
            match part {
                "user" => out.user = true,
                "kernel" => out.kernel = true,
                "hardware" => out.hardware = true,
                "all" => out = Sources::ALL,
                _ => {
                    return Err(format!(
                        "unknown timestamp source '{part}'; accepted: {}",
                        Sources::FORMS
                    ))
                }
            }
        }
        // user timestamps are always taken: they time the run and the schedule
        out.user = true;
        Ok(out)
    }

    /// Names of the sources in use.
    pub fn names(&self) -> Vec<&'static str> {
        let mut v = Vec::new();
        if self.user {
            v.push("user");
        }
        if self.kernel {
            v.push("kernel");
        }
        if self.hardware {
            v.push("hardware");
        }
        v
    }
}

/// The histograms of network latencies: 1 ns to 60 s, three significant digits.
pub const LATENCY_HIST: HistConfig = HistConfig {
    lowest_ns: 1,
    highest_ns: 60 * 1_000_000_000,
    sigfig: 3,
};

/// Everything `probe` needs, resolved.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProbeConfig {
    /// Open or closed loop.
    pub mode: Mode,
    /// Where probes go.
    pub target: SocketAddr,
    /// Local address of the TX socket.
    pub tx_bind: SocketAddr,
    /// Separate RX socket address (a forwarder delivers there); `None` receives answers on
    /// the TX socket (a reflector answers the sender).
    pub rx_bind: Option<SocketAddr>,
    /// Interface the TX socket is bound to (`SO_BINDTODEVICE`): probes leave only by it,
    /// so one addressed to an address of another local interface (the testbed's path
    /// through testpmd) cannot take the loopback path. `None`: the routing decides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_device: Option<String>,
    /// Rate in thousandths of packets per second (open loop).
    pub milli_pps: u64,
    /// Arrival process.
    pub arrivals: Arrivals,
    /// Number of flows (probes go round-robin over flows).
    pub flows: u16,
    /// Ethernet frame size without FCS.
    pub frame: usize,
    /// Measured duration (after warm-up).
    pub duration: Nanos,
    /// Warm-up (sent, counted, not recorded).
    pub warmup: Nanos,
    /// How long to wait for answers after the last send.
    pub drain: Nanos,
    /// Timestamp sources.
    pub sources: Sources,
    /// Continue without hardware timestamps when no interface offers them.
    pub hardware_optional: bool,
    /// Receive mode of the RX thread.
    pub rx_io: IoMode,
    /// Send path: [`IoMode::Xdp`] writes frames into an `AF_XDP` socket; anything else
    /// sends through the UDP socket (absent in older jobs: the socket).
    #[serde(default = "socket_tx")]
    pub tx_io: IoMode,
    /// CPU of the TX thread.
    pub tx_cpu: Option<u32>,
    /// CPU of the RX thread.
    pub rx_cpu: Option<u32>,
    /// `SCHED_FIFO` priority of both threads.
    pub fifo: Option<i32>,
    /// Interval of the time series.
    pub interval: Nanos,
    /// Histogram range and precision.
    pub hist: HistConfig,
    /// Seed of the Poisson schedule.
    pub seed: u64,
    /// Stop rule (`--ci-width p99:5us`): stop at the end of the first measured interval
    /// where the percentile's confidence interval is that narrow; `duration` is then the
    /// maximum.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci_width: Option<CiTarget>,
    /// `--explain`: keep every measured sample's window and the threads' stalls, so the
    /// samples above the threshold can be attributed (absent in older jobs: off).
    #[serde(default)]
    pub explain: crate::explain::ExplainSpec,
    /// `--agents`: the `CLOCK_MONOTONIC` time (ns) where the schedule starts, the same
    /// instant for every agent (absent: 20 ms after the sockets are set up).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_at_monotonic_ns: Option<i64>,
}

impl ProbeConfig {
    /// A default open-loop configuration towards `target` (10 kpps, 64-byte frames, 5 s,
    /// 1 s warm-up, user and kernel timestamps, blocking receive).
    pub fn new(target: SocketAddr) -> ProbeConfig {
        ProbeConfig {
            mode: Mode::OpenLoop,
            target,
            tx_bind: if target.is_ipv4() {
                "0.0.0.0:0".parse().expect("literal")
            } else {
                "[::]:0".parse().expect("literal")
            },
            rx_bind: None,
            tx_device: None,
            milli_pps: 10_000_000,
            arrivals: Arrivals::Constant,
            flows: 1,
            frame: wire::DEFAULT_FRAME,
            duration: Nanos::from_secs(5),
            warmup: Nanos::from_secs(1),
            drain: Nanos::from_millis(200),
            sources: Sources::USER_KERNEL,
            hardware_optional: false,
            rx_io: IoMode::Blocking,
            tx_io: IoMode::Blocking,
            tx_cpu: None,
            rx_cpu: None,
            fifo: None,
            interval: Nanos::SECOND,
            hist: LATENCY_HIST,
            seed: 1,
            ci_width: None,
            explain: crate::explain::ExplainSpec::default(),
            start_at_monotonic_ns: None,
        }
    }

    /// `SCHED_FIFO` priority of the RX thread: [`ProbeConfig::fifo`], except for a
    /// busy-polling RX thread that is not alone on a CPU of its own (unpinned, or on the
    /// TX thread's CPU): FIFO threads of equal priority do not share a CPU, so a spinning
    /// FIFO receiver would never let the sender run. That one stays under the normal
    /// scheduler, where a waking FIFO sender preempts it at once.
    pub fn rx_fifo(&self) -> Option<i32> {
        let shares_cpu = self.rx_cpu.is_none() || self.rx_cpu == self.tx_cpu;
        match self.rx_io {
            IoMode::Busy | IoMode::Xdp if shares_cpu => None,
            _ => self.fifo,
        }
    }

    /// Whether TX and RX run in one loop on one thread (`--io xdp` both ways, the RX thread
    /// on the TX thread's CPU or unpinned): the open loop polls the RX ring while it
    /// waits, with no second thread to switch to.
    pub fn one_loop(&self) -> bool {
        let shares_cpu = self.rx_cpu.is_none() || self.rx_cpu == self.tx_cpu;
        self.tx_io == IoMode::Xdp && self.rx_io == IoMode::Xdp && shares_cpu
    }

    /// Checks what a run needs of the configuration: the one place these checks live.
    /// [`ProbeConfig::validated`] runs them once; a command does that when it resolves its
    /// arguments, to fail before it starts anything. The messages name the command-line
    /// flags.
    ///
    /// # Errors
    /// [`ProbeError::Config`] saying what is wrong.
    pub fn validate(&self) -> Result<(), ProbeError> {
        let bad = |m: String| Err(ProbeError::Config(m));
        if self.flows == 0 {
            return bad("--flows must be at least 1".into());
        }
        if let Some(d) = &self.tx_device {
            if !latlab_sys::net::interface_name_ok(d) {
                return bad(format!(
                    "--tx-device {d:?}: expected an interface name of 1 to 15 characters, e.g. latlab-ga"
                ));
            }
        }
        if let Err(e) = wire::payload_len(self.frame) {
            return bad(format!("--size: {e}"));
        }
        if self.mode == Mode::OpenLoop && self.milli_pps == 0 {
            return bad("--rate must be positive, e.g. 10kpps".into());
        }
        if self.duration.get() == 0 {
            return bad("--duration must be positive, e.g. 5s".into());
        }
        if self.interval.get() == 0 {
            return bad("--interval must be positive, e.g. 1s".into());
        }
        if (self.rx_io == IoMode::Xdp || self.tx_io == IoMode::Xdp) && self.mode != Mode::OpenLoop {
            return bad("--io xdp needs the open loop (--mode open)".into());
        }
        if self.ci_width.is_some() && self.mode != Mode::OpenLoop {
            return bad("--ci-width needs the open loop (--mode open)".into());
        }
        if self.max_probes() > u64::from(u32::MAX) {
            return bad(
                "the run would send more than 2^32 probes; shorten --duration or lower --rate"
                    .into(),
            );
        }
        if self.explain.above.is_some_and(|n| n.get() == 0) {
            return bad("--explain-above must be positive, e.g. 50us".into());
        }
        LatencyHistogram::new(self.hist).map_err(|e| ProbeError::Config(e.to_string()))?;
        Ok(())
    }

    /// This configuration, checked once by [`ProbeConfig::validate`]: what [`run`] takes.
    ///
    /// # Errors
    /// [`ProbeError::Config`] saying what is wrong.
    pub fn validated(self) -> Result<ValidProbeConfig, ProbeError> {
        self.validate()?;
        Ok(ValidProbeConfig(self))
    }

    /// Upper bound of probes the run sends (sizes the sequence bitmap).
    pub fn max_probes(&self) -> u64 {
        match self.mode {
            Mode::Pingpong => {
                // bounded by the fastest possible round trip (~1 µs) over the run
                (self.warmup.get() + self.duration.get()) / 1_000 + 1024
            }
            Mode::OpenLoop => {
                let total = self.warmup.get() + self.duration.get();
                let expected = (total as u128 * self.milli_pps as u128 / 1_000_000_000_000) as u64;
                expected + expected / 5 + 1024
            }
        }
    }
}

/// A [`ProbeConfig`] that passed [`ProbeConfig::validate`], built by
/// [`ProbeConfig::validated`]: what [`run`] and a [`crate::run::ProbeJob`] hold, so that a
/// configuration is checked once, where it is resolved (a command's arguments, an
/// orchestrator's plan), and no caller can hand a run one that was never checked. A job
/// file's copy is checked as it is read (its own edge). Read it through `Deref`; it
/// cannot be changed, except for the start time of [`ValidProbeConfig::starting_at`],
/// which no check looks at.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "ProbeConfig", into = "ProbeConfig")]
pub struct ValidProbeConfig(ProbeConfig);

impl ValidProbeConfig {
    /// The same configuration, its schedule starting at `CLOCK_MONOTONIC` `ns` (an
    /// agent's shared start, [`ProbeConfig::start_at_monotonic_ns`]).
    pub fn starting_at(mut self, ns: i64) -> ValidProbeConfig {
        self.0.start_at_monotonic_ns = Some(ns);
        self
    }

    /// The configuration, to change and check again.
    pub fn into_inner(self) -> ProbeConfig {
        self.0
    }
}

impl std::ops::Deref for ValidProbeConfig {
    type Target = ProbeConfig;
    fn deref(&self) -> &ProbeConfig {
        &self.0
    }
}

impl TryFrom<ProbeConfig> for ValidProbeConfig {
    type Error = ProbeError;
    fn try_from(c: ProbeConfig) -> Result<ValidProbeConfig, ProbeError> {
        c.validated()
    }
}

impl From<ValidProbeConfig> for ProbeConfig {
    fn from(c: ValidProbeConfig) -> ProbeConfig {
        c.0
    }
}

/// Errors that stop a probe run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProbeError {
    /// Bad configuration.
    #[error("{0}")]
    Config(String),
    /// A socket could not be set up.
    #[error("{what}: {source}")]
    Socket {
        /// What was being done.
        what: String,
        /// The OS error.
        source: io::Error,
    },
    /// Hardware timestamps were asked for and the interface cannot give them.
    #[error("hardware timestamps unavailable on interface {interface} (driver {driver}): {reason}; its timestamping capabilities: {capabilities}")]
    NoHardwareTimestamps {
        /// The interface.
        interface: String,
        /// Its driver.
        driver: String,
        /// Why.
        reason: String,
        /// What it offers.
        capabilities: String,
    },
    /// Pinning or scheduling refused.
    #[error(transparent)]
    Sched(#[from] sched::SchedError),
    /// `--io xdp` could not open its AF_XDP port (the message names what is missing).
    #[error(transparent)]
    Xdp(#[from] latlab_sys::xdp::XdpError),
}

fn socket_tx() -> IoMode {
    IoMode::Blocking
}

pub(super) fn sock_err(what: impl Into<String>) -> impl FnOnce(io::Error) -> ProbeError {
    let what = what.into();
    move |source| ProbeError::Socket { what, source }
}
