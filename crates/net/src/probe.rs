//! `latlab net probe`: the generator and receiver.
//!
//! ## Open loop
//! The TX thread sends probe `k` at `start + offset(k)` on the run's clock, where
//! `offset(k)` is `k / rate` (constant) or a sum of exponential gaps (Poisson), all
//! precomputed from a seed. It spins until the scheduled time and sends at once when
//! late: nothing is skipped, and the lateness (actual − scheduled send) is histogrammed.
//! Latency is recorded twice: from the **scheduled** send time (what a user of an
//! open-loop system sees, free of coordinated omission) and from the **actual** send.
//!
//! The TX thread publishes each probe's schedule, its send time and — as they arrive on
//! the socket's error queue, matched by `OPT_ID` — its kernel/hardware TX timestamps into
//! a ring of atomics. The RX thread joins a received probe with its ring slot; probes
//! whose TX timestamps are not there yet wait in a bounded pending queue.
//!
//! Waiting threads yield the CPU (`sched_yield`) while they have slack: the TX thread
//! while its next send is more than 5 µs away, a busy RX thread when a poll finds nothing.
//! Alone on a core this costs one system call; on a small machine it lets TX and RX share
//! a core (measured: without the TX yield, a blocking RX thread on the same core made the
//! generator fall seconds behind at 100 kpps).
//!
//! ## Closed loop (`pingpong`)
//! One thread sends a probe, waits for its answer (up to [`PINGPONG_TIMEOUT`]), sends the
//! next: the method of sockperf and netperf, for comparison.
//!
//! ## Counting
//! Every probe has a unique sequence number; a bitmap over all of them makes
//! duplicates exact, a per-flow highest sequence makes reordering exact, and
//! `lost = sent − unique received`. Warm-up probes are sent, received and counted but not
//! recorded in the histograms.

use crate::decompose::{decompose, Inconsistent, Segments, Stamps};
use crate::nf::IoMode;
use crate::rng::Rng;
use crate::wire::{self, Probe, ProbeRepr, WireError, FLAG_WARMUP};
use latlab_core::hist::{HistConfig, LatencyHistogram};
use latlab_core::parse::{Percentile, Rate};
use latlab_core::units::Nanos;
use latlab_sys::clocks::realtime_ns;
use latlab_sys::net::{self as sysnet, sof, MmsgBatch, TxStamp, TxTimestamp, Wait};
use latlab_sys::sched;
use latlab_sys::tsc::{Clock, Timesource};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, VecDeque};
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How long ping-pong waits for an answer before counting the probe lost.
pub const PINGPONG_TIMEOUT: Nanos = Nanos::from_millis(10);
/// Slots of the TX→RX ring; a probe answered later than this many sends is still
/// counted but has no schedule/kernel join.
pub const RING: usize = 1 << 17;
/// Most probes waiting for their TX kernel timestamp.
pub const PENDING_MAX: usize = 1 << 16;

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
            tx_cpu: None,
            rx_cpu: None,
            fifo: None,
            interval: Nanos::SECOND,
            hist: HistConfig {
                lowest_ns: 1,
                highest_ns: 60 * 1_000_000_000,
                sigfig: 3,
            },
            seed: 1,
        }
    }

    /// Checks what a run needs of the configuration: the one place these checks live.
    /// [`run`] calls it first; a command calls it when it resolves its arguments, to fail
    /// before it starts anything. The messages name the command-line flags.
    ///
    /// # Errors
    /// [`ProbeError::Config`] saying what is wrong.
    pub fn validate(&self) -> Result<(), ProbeError> {
        let bad = |m: String| Err(ProbeError::Config(m));
        if self.flows == 0 {
            return bad("--flows must be at least 1".into());
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
        if self.max_probes() > u64::from(u32::MAX) {
            return bad(
                "the run would send more than 2^32 probes; shorten --duration or lower --rate"
                    .into(),
            );
        }
        LatencyHistogram::new(self.hist).map_err(|e| ProbeError::Config(e.to_string()))?;
        Ok(())
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
}

fn sock_err(what: impl Into<String>) -> impl FnOnce(io::Error) -> ProbeError {
    let what = what.into();
    move |source| ProbeError::Socket { what, source }
}

/// Converts ns to raw clock units.
pub(crate) fn ns_to_raw(clock: &Clock, ns: u64) -> u64 {
    match clock.timesource() {
        Timesource::Tsc(rate) => rate.to_ticks(Nanos(ns)).0,
        Timesource::Monotonic => ns,
    }
}

/// One ring slot, written by the TX thread, read by the RX thread.
#[derive(Default)]
struct Slot {
    /// seq + 1 once `sched`, `sent`, `user_rt` are written.
    tag: AtomicU64,
    sched: AtomicU64,
    sent: AtomicU64,
    user_rt: AtomicU64,
    /// (seq + 1) << 3 | bits: 1 = SCHED, 2 = SND software, 4 = SND hardware.
    ktag: AtomicU64,
    k_sched: AtomicU64,
    k_snd: AtomicU64,
    k_hw: AtomicU64,
}

const K_SCHED: u64 = 1;
const K_SND: u64 = 2;
const K_HW: u64 = 4;

/// State shared by the TX and RX threads.
struct Shared {
    ring: Vec<Slot>,
    tx_done: AtomicBool,
    /// Clock reading at which the RX side stops waiting (set when TX is done).
    rx_deadline: AtomicU64,
    sent: AtomicU64,
    /// Closed loop: clock reading of the send whose answer the ping-pong thread is waiting
    /// for (0: not waiting), for the watchdog that wakes it when the answer is overdue.
    pp_waiting_since: AtomicU64,
}

/// The named histograms of a run.
pub mod series {
    /// Latency from the scheduled send time (user TSC).
    pub const USER_SCHED: &str = "user.sched";
    /// Latency from the actual send (user TSC).
    pub const USER_ACTUAL: &str = "user.actual";
    /// Generator lateness: actual − scheduled send.
    pub const LATENESS: &str = "generator.lateness";
    /// Driver → driver (software TX SND → software RX).
    pub const KERNEL: &str = "kernel.driver_to_driver";
    /// NIC → NIC (hardware TX → hardware RX).
    pub const HARDWARE: &str = "hardware.nic_to_nic";
    /// Segment: user → qdisc.
    pub const SEG_TX_QDISC: &str = "segment.tx_user_to_qdisc";
    /// Segment: qdisc → driver.
    pub const SEG_TX_DRIVER: &str = "segment.tx_qdisc_to_driver";
    /// Segment: user → driver (TX stack).
    pub const SEG_TX_STACK: &str = "segment.tx_stack";
    /// Segment: driver → driver (wire + NF).
    pub const SEG_WIRE_NF: &str = "segment.wire_nf";
    /// Segment: wire without the NF residence.
    pub const SEG_WIRE: &str = "segment.wire";
    /// Segment: NF residence.
    pub const SEG_NF: &str = "segment.nf_residence";
    /// Segment: driver → user (RX stack).
    pub const SEG_RX_STACK: &str = "segment.rx_stack";
    /// User → user on the realtime clock (the sum of the segments).
    pub const SEG_E2E: &str = "segment.end_to_end";
}

/// Histograms of the RX side.
struct RxHists {
    user_sched: LatencyHistogram,
    user_actual: LatencyHistogram,
    kernel: LatencyHistogram,
    hardware: LatencyHistogram,
    seg: [LatencyHistogram; 8],
    flow_sched: Vec<LatencyHistogram>,
    flow_actual: Vec<LatencyHistogram>,
    /// Per interval: (user.sched, user.actual).
    intervals: Vec<(LatencyHistogram, LatencyHistogram)>,
}

/// Counters of the RX side.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RxCounters {
    /// Datagrams received.
    pub datagrams: u64,
    /// Malformed datagrams by reason.
    pub malformed: [u64; 5],
    /// Probes with a sequence number this run never sent.
    pub foreign: u64,
    /// Unique probes received.
    pub unique: u64,
    /// Unique warm-up probes received.
    pub unique_warmup: u64,
    /// Duplicates.
    pub duplicates: u64,
    /// Probes that arrived after a later probe of the same flow.
    pub reordered: u64,
    /// Probes whose ring slot was reused before they arrived (no schedule join).
    pub beyond_ring: u64,
    /// Probes decomposed into segments.
    pub decomposed: u64,
    /// Probes whose timestamps were out of order.
    pub inconsistent_order: u64,
    /// Probes whose NF residence exceeded driver → driver.
    pub inconsistent_residence: u64,
    /// Probes without an RX kernel timestamp.
    pub missing_rx_kernel: u64,
    /// Probes whose TX kernel timestamp never arrived.
    pub missing_tx_kernel: u64,
    /// Probes without an RX hardware timestamp.
    pub missing_rx_hardware: u64,
    /// Probes that could not wait for their TX timestamp (pending queue full).
    pub pending_overflow: u64,
    /// Receive errors.
    pub recv_errors: u64,
}

/// A received probe waiting for its TX kernel timestamps.
#[derive(Clone, Copy)]
struct Pending {
    seq: u32,
    rx_tsc: u64,
    user_rx_rt: u64,
    rx_sw: u64,
    rx_hw: Option<u64>,
    residence: u64,
    warmup: bool,
}

/// The receiver's state: everything preallocated.
struct Receiver {
    clock: Clock,
    sources: Sources,
    shared: Arc<Shared>,
    seen: Vec<u64>,
    highest: Vec<Option<u32>>,
    pending: VecDeque<Pending>,
    pending_timeout: u64,
    hists: RxHists,
    counters: RxCounters,
    run_start: u64,
    interval_raw: u64,
    n_intervals: usize,
}

impl Receiver {
    fn new(cfg: &ProbeConfig, clock: Clock, shared: Arc<Shared>) -> Result<Receiver, ProbeError> {
        let h = || LatencyHistogram::new(cfg.hist).map_err(|e| ProbeError::Config(e.to_string()));
        let flows = usize::from(cfg.flows);
        let total = cfg.warmup.get() + cfg.duration.get() + cfg.drain.get();
        let n_intervals = (total / cfg.interval.get().max(1) + 2) as usize;
        let mut intervals = Vec::with_capacity(n_intervals);
        for _ in 0..n_intervals {
            intervals.push((h()?, h()?));
        }
        let per_flow = flows > 1;
        Ok(Receiver {
            clock,
            sources: cfg.sources,
            shared,
            seen: vec![0; (cfg.max_probes() as usize).div_ceil(64)],
            highest: vec![None; flows],
            pending: VecDeque::with_capacity(PENDING_MAX),
            pending_timeout: ns_to_raw(&clock, 200_000_000),
            hists: RxHists {
                user_sched: h()?,
                user_actual: h()?,
                kernel: h()?,
                hardware: h()?,
                seg: [h()?, h()?, h()?, h()?, h()?, h()?, h()?, h()?],
                flow_sched: if per_flow {
                    (0..flows).map(|_| h()).collect::<Result<_, _>>()?
                } else {
                    Vec::new()
                },
                flow_actual: if per_flow {
                    (0..flows).map(|_| h()).collect::<Result<_, _>>()?
                } else {
                    Vec::new()
                },
                intervals,
            },
            counters: RxCounters::default(),
            run_start: 0,
            interval_raw: ns_to_raw(&clock, cfg.interval.get().max(1)),
            n_intervals,
        })
    }

    /// Handles one received datagram.
    fn handle(
        &mut self,
        frame: &[u8],
        truncated: bool,
        ts: sysnet::RxTimestamps,
        rx_tsc: u64,
        user_rx_rt: u64,
    ) {
        self.counters.datagrams += 1;
        if truncated {
            self.counters.malformed[WireError::Oversized.index()] += 1;
            return;
        }
        let p = match Probe::new_checked(frame) {
            Ok(p) => p,
            Err(e) => {
                self.counters.malformed[e.index()] += 1;
                return;
            }
        };
        let r = ProbeRepr::parse(&p);
        let seq = r.seq as usize;
        let flow = usize::from(r.flow);
        if seq / 64 >= self.seen.len() || flow >= self.highest.len() {
            self.counters.foreign += 1;
            return;
        }
        let bit = 1u64 << (seq % 64);
        if self.seen[seq / 64] & bit != 0 {
            self.counters.duplicates += 1;
            return;
        }
        self.seen[seq / 64] |= bit;
        let warmup = r.flags & FLAG_WARMUP != 0;
        self.counters.unique += 1;
        if warmup {
            self.counters.unique_warmup += 1;
        }
        match self.highest[flow] {
            Some(h) if r.seq < h => self.counters.reordered += 1,
            _ => self.highest[flow] = Some(r.seq),
        }
        // user timestamps
        let slot = &self.shared.ring[seq % RING];
        let joined = slot.tag.load(Ordering::Acquire) == r.seq as u64 + 1;
        if !warmup {
            let actual = self.clock.delta_nanos(r.sent, rx_tsc);
            self.hists.user_actual.record(actual);
            let iv = (rx_tsc.saturating_sub(self.run_start) / self.interval_raw) as usize;
            let iv = iv.min(self.n_intervals - 1);
            self.hists.intervals[iv].1.record(actual);
            if !self.hists.flow_actual.is_empty() {
                self.hists.flow_actual[flow].record(actual);
            }
            if joined {
                let sched = self
                    .clock
                    .delta_nanos(slot.sched.load(Ordering::Relaxed), rx_tsc);
                self.hists.user_sched.record(sched);
                self.hists.intervals[iv].0.record(sched);
                if !self.hists.flow_sched.is_empty() {
                    self.hists.flow_sched[flow].record(sched);
                }
            } else {
                self.counters.beyond_ring += 1;
            }
        }
        if !(self.sources.kernel || self.sources.hardware) || !joined {
            return;
        }
        if self.sources.hardware && ts.hardware_ns.is_none() {
            self.counters.missing_rx_hardware += 1;
        }
        let rx_sw = match ts.software_ns {
            Some(t) => t,
            None if self.sources.kernel => {
                self.counters.missing_rx_kernel += 1;
                return;
            }
            None => 0,
        };
        let pend = Pending {
            seq: r.seq,
            rx_tsc,
            user_rx_rt,
            rx_sw,
            rx_hw: ts.hardware_ns,
            residence: u64::from(r.residence_ns),
            warmup,
        };
        if !self.try_finish(&pend) {
            if self.pending.len() >= PENDING_MAX {
                self.counters.pending_overflow += 1;
            } else {
                self.pending.push_back(pend);
            }
        }
    }

    /// Joins a probe with its TX kernel timestamps; false when they are not there yet.
    fn try_finish(&mut self, p: &Pending) -> bool {
        let slot = &self.shared.ring[p.seq as usize % RING];
        let k = slot.ktag.load(Ordering::Acquire);
        if k >> 3 != u64::from(p.seq) + 1 {
            return false;
        }
        let need_sw = self.sources.kernel;
        let need_hw = self.sources.hardware && p.rx_hw.is_some();
        if (need_sw && k & K_SND == 0) || (need_hw && k & K_HW == 0) {
            return false;
        }
        if p.warmup {
            return true;
        }
        if need_hw {
            if let Some(rx_hw) = p.rx_hw {
                let tx_hw = slot.k_hw.load(Ordering::Relaxed);
                self.hists
                    .hardware
                    .record(Nanos(rx_hw.saturating_sub(tx_hw)));
            }
        }
        if need_sw {
            let tx_snd = slot.k_snd.load(Ordering::Relaxed);
            self.hists
                .kernel
                .record(Nanos(p.rx_sw.saturating_sub(tx_snd)));
            let stamps = Stamps {
                user_tx: slot.user_rt.load(Ordering::Relaxed),
                tx_sched: (k & K_SCHED != 0).then(|| slot.k_sched.load(Ordering::Relaxed)),
                tx_driver: tx_snd,
                rx_driver: p.rx_sw,
                user_rx: p.user_rx_rt,
                nf_residence: p.residence,
            };
            match decompose(&stamps) {
                Ok(s) => {
                    self.counters.decomposed += 1;
                    self.record_segments(&s);
                }
                Err(Inconsistent::OutOfOrder) => self.counters.inconsistent_order += 1,
                Err(Inconsistent::ResidenceTooLong) => self.counters.inconsistent_residence += 1,
            }
        }
        true
    }

    fn record_segments(&mut self, s: &Segments) {
        let v = [
            s.tx_user_to_qdisc,
            s.tx_qdisc_to_driver,
            s.tx_stack(),
            s.wire_nf(),
            s.wire,
            s.nf_residence,
            s.rx_stack,
            s.end_to_end,
        ];
        for (h, x) in self.hists.seg.iter_mut().zip(v) {
            h.record(Nanos(x));
        }
    }

    /// Finishes pending probes whose TX timestamps arrived; gives up on old ones.
    fn poll_pending(&mut self, now: u64, flush: bool) {
        while let Some(p) = self.pending.front().copied() {
            if self.try_finish(&p) {
                self.pending.pop_front();
            } else if flush || now.saturating_sub(p.rx_tsc) > self.pending_timeout {
                self.pending.pop_front();
                if !p.warmup {
                    self.counters.missing_tx_kernel += 1;
                }
            } else {
                break;
            }
        }
    }
}

/// The sender's state.
struct Sender {
    sock: UdpSocket,
    clock: Clock,
    shared: Arc<Shared>,
    kernel: bool,
    buf: Vec<u8>,
    /// OPT_ID → sequence number.
    id_to_seq: Vec<u32>,
    next_id: u32,
    ts_buf: Vec<TxTimestamp>,
    counters: TxCounters,
}

/// Counters of the TX side.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TxCounters {
    /// Probes sent.
    pub sent: u64,
    /// Warm-up probes sent.
    pub sent_warmup: u64,
    /// Send calls that failed (the probe is counted lost).
    pub send_errors: u64,
    /// TX timestamps read from the error queue.
    pub tx_timestamps: u64,
    /// TX timestamps whose id matched no recent probe.
    pub tx_timestamps_unmatched: u64,
    /// Error-queue read failures.
    pub errqueue_errors: u64,
    /// Measured probes sent later than the mean inter-arrival time.
    pub late_over_gap: u64,
    /// 1 when the schedule held more probes than the run's preallocated bound (the rest
    /// were not sent; only a Poisson schedule far above its mean can do this).
    pub schedule_truncated: u64,
}

impl Sender {
    /// Sends probe `seq`; returns the clock reading taken just before the send call, or
    /// `None` when the send failed.
    fn send(&mut self, seq: u32, flow: u16, flags: u8, sched: u64) -> Option<u64> {
        ProbeRepr {
            flags,
            flow,
            seq,
            sent: 0,
            residence_ns: 0,
        }
        .emit(&mut self.buf);
        let slot = &self.shared.ring[seq as usize % RING];
        slot.tag.store(0, Ordering::Relaxed);
        slot.ktag.store(0, Ordering::Relaxed);
        let user_rt = if self.kernel { realtime_ns() } else { 0 };
        let now = self.clock.now();
        ProbeRepr::stamp_sent(&mut self.buf, now);
        slot.sched.store(sched, Ordering::Relaxed);
        slot.sent.store(now, Ordering::Relaxed);
        slot.user_rt.store(user_rt, Ordering::Relaxed);
        slot.tag.store(u64::from(seq) + 1, Ordering::Release);
        // a watchdog's wake-up signal (closed loop) may interrupt the send: retry it
        let sent = loop {
            match self.sock.send(&self.buf) {
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                r => break r,
            }
        };
        match sent {
            Ok(_) => {
                if self.kernel {
                    self.id_to_seq[self.next_id as usize % RING] = seq;
                    self.next_id = self.next_id.wrapping_add(1);
                }
                self.counters.sent += 1;
                self.shared
                    .sent
                    .store(self.counters.sent, Ordering::Relaxed);
                Some(now)
            }
            Err(_) => {
                slot.tag.store(0, Ordering::Release);
                self.counters.send_errors += 1;
                None
            }
        }
    }

    /// Reads the error queue and publishes TX timestamps.
    fn drain_errqueue(&mut self) {
        if !self.kernel {
            return;
        }
        loop {
            let n = match sysnet::read_tx_timestamps(&self.sock, &mut self.ts_buf) {
                Ok(n) => n,
                Err(_) => {
                    self.counters.errqueue_errors += 1;
                    return;
                }
            };
            for t in &self.ts_buf[..n] {
                self.counters.tx_timestamps += 1;
                // ids older than the ring cannot be matched
                if self.next_id.wrapping_sub(t.id) as usize > RING || t.id >= self.next_id {
                    self.counters.tx_timestamps_unmatched += 1;
                    continue;
                }
                let seq = self.id_to_seq[t.id as usize % RING];
                let slot = &self.shared.ring[seq as usize % RING];
                let tag = (u64::from(seq) + 1) << 3;
                let cur = slot.ktag.load(Ordering::Relaxed);
                let mut bits = if cur >> 3 == u64::from(seq) + 1 {
                    cur & 7
                } else {
                    0
                };
                match (t.kind, t.software_ns, t.hardware_ns) {
                    (TxStamp::Sched, Some(sw), _) => {
                        slot.k_sched.store(sw, Ordering::Relaxed);
                        bits |= K_SCHED;
                    }
                    (TxStamp::Send, sw, hw) => {
                        if let Some(sw) = sw {
                            slot.k_snd.store(sw, Ordering::Relaxed);
                            bits |= K_SND;
                        }
                        if let Some(hw) = hw {
                            slot.k_hw.store(hw, Ordering::Relaxed);
                            bits |= K_HW;
                        }
                    }
                    _ => {}
                }
                slot.ktag.store(tag | bits, Ordering::Release);
            }
            if n < self.ts_buf.len() {
                return;
            }
        }
    }
}

/// What the TX side measured.
#[derive(Clone, Debug)]
pub struct TxOutcome {
    /// Lateness of measured probes.
    pub lateness: LatencyHistogram,
    /// The same per interval of the run (by scheduled time), from the run's start.
    pub lateness_intervals: Vec<LatencyHistogram>,
    /// Counters.
    pub counters: TxCounters,
    /// Clock reading of the first scheduled send.
    pub start: u64,
    /// Clock reading after the last send.
    pub end: u64,
    /// CPU and policy.
    pub placement: (Option<u32>, String, i32),
}

/// The outcome of a probe run.
#[derive(Clone, Debug)]
pub struct ProbeOutcome {
    /// TX side.
    pub tx: TxOutcome,
    /// RX counters.
    pub rx: RxCounters,
    /// Named histograms (see [`series`]); per-flow ones as `flowN.user.sched` etc.
    pub histograms: Vec<(String, LatencyHistogram)>,
    /// Per interval: (start ns since the first scheduled send, user.sched, user.actual).
    pub intervals: Vec<(Nanos, LatencyHistogram, LatencyHistogram)>,
    /// RX placement.
    pub rx_placement: (Option<u32>, String, i32),
    /// Warnings found while setting up (e.g. hardware timestamps unavailable).
    pub warnings: Vec<String>,
    /// Hardware timestamping state per interface.
    pub interfaces: Vec<InterfaceFacts>,
    /// UDP datagrams dropped for full socket receive buffers in this network namespace
    /// during the run (`/proc/net/snmp` `RcvbufErrors`; other sockets count too).
    pub udp_rcvbuf_drops: u64,
    /// Time from the first scheduled send to the last send, ns.
    pub tx_elapsed_ns: u64,
    /// Packets the kernel dropped for full input backlogs during the run (host-wide,
    /// `/proc/net/softnet_stat`; other traffic counts too).
    pub backlog_drops: u64,
}

/// Facts about one interface that carried probes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct InterfaceFacts {
    /// Name.
    pub name: String,
    /// Driver.
    pub driver: String,
    /// `SO_TIMESTAMPING` capabilities by name.
    pub timestamping: Vec<String>,
    /// PTP hardware clock index.
    pub phc_index: Option<u32>,
    /// Whether hardware timestamping was enabled on it for this run.
    pub hardware_enabled: bool,
}

/// The interface the kernel routes `to` through (`ip route get`), if it can tell.
pub fn egress_interface(to: &SocketAddr) -> Option<String> {
    let out = std::process::Command::new("ip")
        .args(["route", "get", &to.ip().to_string()])
        .output()
        .ok()?;
    let s = String::from_utf8_lossy(&out.stdout);
    let mut it = s.split_whitespace();
    while let Some(w) = it.next() {
        if w == "dev" {
            return it.next().map(str::to_string);
        }
    }
    None
}

/// Facts of interface `name`.
pub fn interface_facts(name: &str) -> InterfaceFacts {
    let info = sysnet::ts_info(name).unwrap_or_default();
    InterfaceFacts {
        name: name.to_string(),
        driver: sysnet::driver_name(name).unwrap_or_else(|e| format!("unknown ({e})")),
        timestamping: info
            .capability_names()
            .into_iter()
            .map(str::to_string)
            .collect(),
        phc_index: info.phc_index,
        hardware_enabled: false,
    }
}

/// Checks and enables hardware timestamping on `name`.
fn enable_hardware(name: &str) -> Result<(), ProbeError> {
    let info = sysnet::ts_info(name).unwrap_or_default();
    let facts = interface_facts(name);
    let caps = if facts.timestamping.is_empty() {
        "none".to_string()
    } else {
        facts.timestamping.join(", ")
    };
    let err = |reason: String| ProbeError::NoHardwareTimestamps {
        interface: name.to_string(),
        driver: facts.driver.clone(),
        reason,
        capabilities: caps.clone(),
    };
    if !info.hardware_capable() {
        return Err(err(
            "the driver offers no hardware transmit/receive timestamping".into(),
        ));
    }
    sysnet::enable_hw_timestamping(name).map_err(|e| err(format!("SIOCSHWTSTAMP failed: {e}")))?;
    Ok(())
}

/// Runs a probe: sets sockets up, starts the RX thread, sends on the calling thread's
/// spawned TX thread, and returns everything measured.
pub fn run(cfg: &ProbeConfig, clock: Clock) -> Result<ProbeOutcome, ProbeError> {
    cfg.validate()?;
    let payload = wire::payload_len(cfg.frame).map_err(ProbeError::Config)?;
    let mut sources = cfg.sources;
    let mut warnings = Vec::new();
    let mut interfaces = Vec::new();
    let ifaces: Vec<String> = [Some(cfg.target)]
        .into_iter()
        .flatten()
        .filter_map(|a| egress_interface(&a))
        .collect();
    for i in &ifaces {
        interfaces.push(interface_facts(i));
    }
    if sources.hardware {
        let mut ok = !ifaces.is_empty();
        for (i, f) in ifaces.iter().zip(interfaces.iter_mut()) {
            match enable_hardware(i) {
                Ok(()) => f.hardware_enabled = true,
                Err(e) => {
                    if !cfg.hardware_optional {
                        return Err(e);
                    }
                    warnings.push(format!("{e}; continuing with the other sources"));
                    ok = false;
                }
            }
        }
        if ifaces.is_empty() {
            let e = ProbeError::NoHardwareTimestamps {
                interface: "(unknown)".into(),
                driver: "unknown".into(),
                reason: format!("no route to {} was found", cfg.target),
                capabilities: "unknown".into(),
            };
            if !cfg.hardware_optional {
                return Err(e);
            }
            warnings.push(format!("{e}; continuing with the other sources"));
        }
        sources.hardware = ok;
    }
    let kernel_any = sources.kernel || sources.hardware;
    // from here on, the sources that can actually run
    let resolved = ProbeConfig {
        sources,
        ..cfg.clone()
    };
    let cfg = &resolved;
    let drops_before = crate::netinfo::softnet_dropped();
    let udp_before = crate::netinfo::udp_rcvbuf_errors();

    // sockets
    let tx = UdpSocket::bind(cfg.tx_bind).map_err(sock_err(format!("binding {}", cfg.tx_bind)))?;
    tx.connect(cfg.target)
        .map_err(sock_err(format!("connecting to {}", cfg.target)))?;
    let rx = match cfg.rx_bind {
        Some(a) => UdpSocket::bind(a).map_err(sock_err(format!("binding the RX socket to {a}")))?,
        None => tx.try_clone().map_err(sock_err("duplicating the socket"))?,
    };
    // room for a 50 ms stall of the RX thread at 100 kpps (see the NF's buffer)
    let _ = sysnet::set_recv_buffer(&rx, 16 << 20);
    // TX timestamps queue on the TX socket's error queue, charged to its receive buffer:
    // too small a buffer drops timestamps whenever the TX thread is held up
    let _ = sysnet::set_recv_buffer(&tx, 8 << 20);
    let _ = sysnet::set_send_buffer(&tx, 4 << 20);
    let mut tx_flags = 0;
    let mut rx_flags = 0;
    if sources.kernel {
        tx_flags |= sof::TX_SOFTWARE | sof::TX_SCHED | sof::SOFTWARE;
        rx_flags |= sof::RX_SOFTWARE | sof::SOFTWARE;
    }
    if sources.hardware {
        tx_flags |= sof::TX_HARDWARE | sof::RAW_HARDWARE;
        rx_flags |= sof::RX_HARDWARE | sof::RAW_HARDWARE;
    }
    if kernel_any {
        tx_flags |= sof::OPT_ID | sof::OPT_TSONLY;
        if cfg.rx_bind.is_none() {
            sysnet::set_timestamping(&tx, tx_flags | rx_flags)
                .map_err(sock_err("enabling SO_TIMESTAMPING"))?;
        } else {
            sysnet::set_timestamping(&tx, tx_flags)
                .map_err(sock_err("enabling SO_TIMESTAMPING on the TX socket"))?;
            sysnet::set_timestamping(&rx, rx_flags)
                .map_err(sock_err("enabling SO_TIMESTAMPING on the RX socket"))?;
        }
    }
    match cfg.rx_io {
        // The closed loop blocks without a timeout: a timed wait arms and cancels a kernel
        // timer on every receive, inside the round trip it measures; a watchdog wakes it
        // when an answer is overdue (see `run`).
        IoMode::Blocking if cfg.mode == Mode::Pingpong => rx
            .set_read_timeout(None)
            .map_err(sock_err("setting the receive timeout"))?,
        IoMode::Blocking => rx
            .set_read_timeout(Some(Duration::from_millis(20)))
            .map_err(sock_err("setting the receive timeout"))?,
        IoMode::Busy => {
            rx.set_nonblocking(true)
                .map_err(sock_err("making the RX socket non-blocking"))?;
            let _ = sysnet::set_busy_poll(&rx, 50);
        }
    }

    let shared = Arc::new(Shared {
        ring: (0..RING).map(|_| Slot::default()).collect(),
        tx_done: AtomicBool::new(false),
        rx_deadline: AtomicU64::new(u64::MAX),
        sent: AtomicU64::new(0),
        pp_waiting_since: AtomicU64::new(0),
    });
    let mut receiver = Receiver::new(cfg, clock, shared.clone())?;
    let sender = Sender {
        sock: tx,
        clock,
        shared: shared.clone(),
        kernel: kernel_any,
        buf: vec![0u8; payload],
        id_to_seq: vec![0; RING],
        next_id: 0,
        ts_buf: vec![
            TxTimestamp {
                id: 0,
                kind: TxStamp::Send,
                software_ns: None,
                hardware_ns: None,
            };
            64
        ],
        counters: TxCounters::default(),
    };
    let mut rx_batch = MmsgBatch::new(
        match cfg.rx_io {
            IoMode::Blocking => 1,
            IoMode::Busy => 32,
        },
        2048,
        kernel_any,
    );
    // The clock reading where the schedule starts: far enough ahead for both threads to
    // be placed and waiting.
    let start = clock.now() + ns_to_raw(&clock, 20_000_000);
    receiver.run_start = start;

    if cfg.mode == Mode::Pingpong {
        let cfgc = cfg.clone();
        let h = std::thread::Builder::new()
            .name("latlab-probe-pingpong".into())
            .spawn(move || -> Result<_, ProbeError> {
                place(cfgc.tx_cpu, cfgc.fifo)?;
                let tx = pingpong(&cfgc, sender, &mut receiver, &mut rx_batch, &rx, start);
                let placement = (cfgc.tx_cpu, sched::current_policy());
                Ok((tx, receiver, placement))
            })
            .map_err(sock_err("spawning the ping-pong thread"))?;
        if cfg.rx_io == IoMode::Blocking {
            // The watchdog: the ping-pong thread's receive has no timeout, so wake it
            // (EINTR) when an answer is later than PINGPONG_TIMEOUT; checked every
            // PINGPONG_TIMEOUT, so a lost probe costs at most twice that.
            let timeout = ns_to_raw(&clock, PINGPONG_TIMEOUT.get());
            while !h.is_finished() {
                std::thread::sleep(Duration::from_nanos(PINGPONG_TIMEOUT.get()));
                let since = shared.pp_waiting_since.load(Ordering::Acquire);
                if since != 0 && clock.now().saturating_sub(since) > timeout {
                    let _ = latlab_sys::signal::interrupt(&h);
                }
            }
        }
        let (tx, receiver, (cpu, (pol, prio))) = h
            .join()
            .map_err(|_| ProbeError::Config("the ping-pong thread panicked".into()))??;
        let mut o = finish(cfg, tx, receiver, (cpu, pol, prio), warnings, interfaces);
        o.backlog_drops = crate::netinfo::softnet_dropped().saturating_sub(drops_before);
        o.udp_rcvbuf_drops = crate::netinfo::udp_rcvbuf_errors().saturating_sub(udp_before);
        return Ok(o);
    }

    let cfg_rx = cfg.clone();
    let rx_thread = std::thread::Builder::new()
        .name("latlab-probe-rx".into())
        .spawn(move || -> Result<_, ProbeError> {
            place(cfg_rx.rx_cpu, cfg_rx.fifo)?;
            rx_loop(&cfg_rx, &mut receiver, &mut rx_batch, &rx);
            Ok((receiver, sched::current_policy()))
        })
        .map_err(sock_err("spawning the RX thread"))?;
    let cfg_tx = cfg.clone();
    let shared_tx = shared.clone();
    let tx_thread = std::thread::Builder::new()
        .name("latlab-probe-tx".into())
        .spawn(move || -> Result<_, ProbeError> {
            let placed = place(cfg_tx.tx_cpu, cfg_tx.fifo);
            if let Err(e) = placed {
                shared_tx.tx_done.store(true, Ordering::Release);
                shared_tx.rx_deadline.store(0, Ordering::Release);
                return Err(e);
            }
            let out = open_loop(&cfg_tx, sender, start);
            Ok(out)
        })
        .map_err(sock_err("spawning the TX thread"))?;
    let tx_res = tx_thread
        .join()
        .map_err(|_| ProbeError::Config("the TX thread panicked".into()))?;
    if tx_res.is_err() {
        shared.rx_deadline.store(0, Ordering::Release);
        shared.tx_done.store(true, Ordering::Release);
    }
    let rx_res = rx_thread
        .join()
        .map_err(|_| ProbeError::Config("the RX thread panicked".into()))?;
    let tx = tx_res?;
    let (receiver, (pol, prio)) = rx_res?;
    let mut o = finish(
        cfg,
        tx,
        receiver,
        (cfg.rx_cpu, pol, prio),
        warnings,
        interfaces,
    );
    o.backlog_drops = crate::netinfo::softnet_dropped().saturating_sub(drops_before);
    o.udp_rcvbuf_drops = crate::netinfo::udp_rcvbuf_errors().saturating_sub(udp_before);
    Ok(o)
}

fn place(cpu: Option<u32>, fifo: Option<i32>) -> Result<(), ProbeError> {
    if let Some(c) = cpu {
        sched::pin_current_thread(c)?;
    }
    if let Some(p) = fifo {
        sched::set_fifo(p)?;
    }
    Ok(())
}

/// The send times of an open-loop run, relative to its start: `k / rate` (constant) or a
/// running sum of seeded exponential gaps (Poisson). Pure and deterministic for a seed.
pub struct Schedule {
    arrivals: Arrivals,
    milli_pps: u64,
    mean_gap_ns: f64,
    rng: Rng,
    k: u64,
    acc: f64,
}

impl Schedule {
    /// The schedule of `cfg`.
    pub fn new(cfg: &ProbeConfig) -> Schedule {
        Schedule {
            arrivals: cfg.arrivals,
            milli_pps: cfg.milli_pps.max(1),
            mean_gap_ns: 1e12 / cfg.milli_pps.max(1) as f64,
            rng: Rng::new(cfg.seed),
            k: 0,
            acc: 0.0,
        }
    }

    /// The offset (ns) of the next probe.
    pub fn next_offset_ns(&mut self) -> u64 {
        let k = self.k;
        self.k += 1;
        match self.arrivals {
            Arrivals::Constant => Rate::offset_of(self.milli_pps, k).get(),
            Arrivals::Poisson => {
                if k > 0 {
                    self.acc += self.rng.exponential(self.mean_gap_ns);
                }
                self.acc as u64
            }
        }
    }
}

/// The open-loop TX loop.
fn open_loop(cfg: &ProbeConfig, mut s: Sender, start: u64) -> TxOutcome {
    let clock = s.clock;
    let mut lateness = LatencyHistogram::new(cfg.hist).unwrap_or_default();
    let total = cfg.warmup.get() + cfg.duration.get();
    let mean_gap_ns = 1e12 / cfg.milli_pps as f64;
    let gap_raw = ns_to_raw(&clock, mean_gap_ns as u64);
    let mut schedule = Schedule::new(cfg);
    let max = cfg.max_probes();
    let drain_slack = ns_to_raw(&clock, 5_000);
    // Far from the next send, sleep instead of spinning: a spinning SCHED_FIFO thread is
    // throttled by sched_rt_runtime_us (stopped ~50 ms per second). Wake-ups come early
    // by a margin covering the timer slack (0 for real-time threads, 50 µs by default).
    // The margin adapts: a wake-up later than half the margin doubles it (up to 500 µs),
    // so a host with slow timers spins more rather than sending late.
    let mut sleep_margin = ns_to_raw(&clock, if cfg.fifo.is_some() { 30_000 } else { 80_000 });
    let max_margin = ns_to_raw(&clock, 500_000);
    let spin_after_sleep = ns_to_raw(&clock, 20_000);
    // lateness per interval, preallocated
    let iv_raw = ns_to_raw(&clock, cfg.interval.get().max(1));
    let n_iv = (total / cfg.interval.get().max(1) + 2) as usize;
    let mut lateness_iv: Vec<LatencyHistogram> = (0..n_iv)
        .map(|_| LatencyHistogram::new(cfg.hist).unwrap_or_default())
        .collect();
    let mut k: u64 = 0;
    loop {
        let offset_ns = schedule.next_offset_ns();
        if offset_ns >= total {
            break;
        }
        if k >= max {
            s.counters.schedule_truncated = 1;
            break;
        }
        let sched_at = start + ns_to_raw(&clock, offset_ns);
        let warm = offset_ns < cfg.warmup.get();
        // wait for the scheduled time; drain the error queue while there is slack
        loop {
            let now = clock.now();
            if now >= sched_at {
                break;
            }
            let left = sched_at - now;
            if left > sleep_margin + spin_after_sleep {
                s.drain_errqueue();
                let target = sched_at - sleep_margin;
                let nap = clock.delta_nanos(clock.now(), target);
                std::thread::sleep(Duration::from_nanos(nap.get()));
                let over = clock.now().saturating_sub(target);
                if over > sleep_margin / 2 {
                    sleep_margin = (sleep_margin * 2).min(max_margin);
                }
            } else if left > drain_slack {
                // slack: collect TX timestamps, and let the RX thread run if it shares
                // this core
                s.drain_errqueue();
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
        }
        let seq = k as u32;
        let flow = (k % u64::from(cfg.flows)) as u16;
        let flags = if warm { FLAG_WARMUP } else { 0 };
        // a generator that is behind never has slack: collect TX timestamps anyway, every
        // 16 sends, before the error queue overflows and drops them
        if k % 16 == 15 {
            s.drain_errqueue();
        }
        if let Some(sent_at) = s.send(seq, flow, flags, sched_at) {
            if warm {
                s.counters.sent_warmup += 1;
            } else {
                let late = sent_at.saturating_sub(sched_at);
                let late_ns = clock.raw_to_nanos(late);
                lateness.record(late_ns);
                let iv = (((sched_at - start) / iv_raw) as usize).min(n_iv - 1);
                lateness_iv[iv].record(late_ns);
                if late > gap_raw {
                    s.counters.late_over_gap += 1;
                }
            }
        }
        k += 1;
    }
    let end = clock.now();
    // keep collecting TX timestamps while the last answers arrive
    let drain_end = end + ns_to_raw(&clock, cfg.drain.get());
    s.shared.rx_deadline.store(drain_end, Ordering::Release);
    s.shared.tx_done.store(true, Ordering::Release);
    while clock.now() < drain_end {
        s.drain_errqueue();
        std::thread::sleep(Duration::from_micros(200));
    }
    s.drain_errqueue();
    let (pol, prio) = sched::current_policy();
    TxOutcome {
        lateness,
        lateness_intervals: lateness_iv,
        counters: s.counters,
        start,
        end,
        placement: (cfg.tx_cpu, pol, prio),
    }
}

/// Receives up to `max` datagrams (at most the batch's slots) and hands them to the
/// receiver. With `MSG_WAITFORONE` the kernel tries for more after the first, so the closed
/// loop, which expects exactly one answer, asks for one.
fn receive_batch(
    receiver: &mut Receiver,
    batch: &mut MmsgBatch,
    rx: &UdpSocket,
    wait: Wait,
    max: usize,
) -> usize {
    let n = match batch.recv(rx, max.min(batch.slots()), wait) {
        Ok(n) => n,
        Err(_) => {
            receiver.counters.recv_errors += 1;
            0
        }
    };
    if n == 0 {
        return 0;
    }
    let rx_tsc = receiver.clock.now();
    let rt = if receiver.sources.kernel {
        realtime_ns()
    } else {
        0
    };
    for i in 0..n {
        receiver.handle(
            batch.packet(i),
            batch.truncated(i),
            batch.timestamps(i),
            rx_tsc,
            rt,
        );
    }
    n
}

fn rx_loop(cfg: &ProbeConfig, receiver: &mut Receiver, batch: &mut MmsgBatch, rx: &UdpSocket) {
    let clock = receiver.clock;
    let wait = match cfg.rx_io {
        IoMode::Blocking => Wait::Block,
        IoMode::Busy => Wait::NonBlocking,
    };
    loop {
        if receive_batch(receiver, batch, rx, wait, usize::MAX) == 0 && wait == Wait::NonBlocking {
            // nothing queued: give the core to a thread sharing it (free when alone)
            std::thread::yield_now();
        }
        let now = clock.now();
        receiver.poll_pending(now, false);
        if receiver.shared.tx_done.load(Ordering::Acquire) {
            let all_in = receiver.counters.unique >= receiver.shared.sent.load(Ordering::Relaxed);
            if now >= receiver.shared.rx_deadline.load(Ordering::Acquire)
                || (all_in && receiver.pending.is_empty())
            {
                break;
            }
        }
    }
    receiver.poll_pending(clock.now(), true);
}

/// The closed loop: send, wait for the answer, repeat.
fn pingpong(
    cfg: &ProbeConfig,
    mut s: Sender,
    receiver: &mut Receiver,
    batch: &mut MmsgBatch,
    rx: &UdpSocket,
    start: u64,
) -> TxOutcome {
    let clock = s.clock;
    let lateness = LatencyHistogram::new(cfg.hist).unwrap_or_default();
    let timeout = ns_to_raw(&clock, PINGPONG_TIMEOUT.get());
    let warm_end = start + ns_to_raw(&clock, cfg.warmup.get());
    let end_at = warm_end + ns_to_raw(&clock, cfg.duration.get());
    let wait = match cfg.rx_io {
        IoMode::Blocking => Wait::Block,
        IoMode::Busy => Wait::NonBlocking,
    };
    let max = cfg.max_probes();
    while clock.now() < start {
        std::hint::spin_loop();
    }
    let mut k: u64 = 0;
    loop {
        let now = clock.now();
        if now >= end_at || k >= max {
            break;
        }
        let warm = now < warm_end;
        let flags = if warm { FLAG_WARMUP } else { 0 };
        let flow = (k % u64::from(cfg.flows)) as u16;
        let seq = k as u32;
        k += 1;
        let Some(sent_at) = s.send(seq, flow, flags, now) else {
            continue;
        };
        if warm {
            s.counters.sent_warmup += 1;
        }
        let target = receiver.counters.unique + 1;
        s.shared
            .pp_waiting_since
            .store(sent_at.max(1), Ordering::Release);
        while receiver.counters.unique < target {
            receive_batch(receiver, batch, rx, wait, 1);
            if clock.now().saturating_sub(sent_at) > timeout {
                break;
            }
        }
        s.shared.pp_waiting_since.store(0, Ordering::Release);
        s.drain_errqueue();
        receiver.poll_pending(clock.now(), false);
    }
    let end = clock.now();
    let drain_end = end + ns_to_raw(&clock, cfg.drain.get().min(50_000_000));
    while clock.now() < drain_end && !receiver.pending.is_empty() {
        s.drain_errqueue();
        receiver.poll_pending(clock.now(), false);
    }
    receiver.poll_pending(clock.now(), true);
    let (pol, prio) = sched::current_policy();
    TxOutcome {
        lateness,
        lateness_intervals: Vec::new(),
        counters: s.counters,
        start,
        end,
        placement: (cfg.tx_cpu, pol, prio),
    }
}

fn finish(
    cfg: &ProbeConfig,
    tx: TxOutcome,
    r: Receiver,
    rx_placement: (Option<u32>, String, i32),
    warnings: Vec<String>,
    interfaces: Vec<InterfaceFacts>,
) -> ProbeOutcome {
    let h = r.hists;
    let mut hs: Vec<(String, LatencyHistogram)> = vec![
        (series::USER_SCHED.into(), h.user_sched),
        (series::USER_ACTUAL.into(), h.user_actual),
    ];
    if cfg.mode == Mode::OpenLoop {
        hs.push((series::LATENESS.into(), tx.lateness.clone()));
    } else {
        // closed loop has no schedule: "scheduled" is the actual send
        hs.remove(0);
    }
    if cfg.sources.kernel {
        hs.push((series::KERNEL.into(), h.kernel));
        let names = [
            series::SEG_TX_QDISC,
            series::SEG_TX_DRIVER,
            series::SEG_TX_STACK,
            series::SEG_WIRE_NF,
            series::SEG_WIRE,
            series::SEG_NF,
            series::SEG_RX_STACK,
            series::SEG_E2E,
        ];
        for (n, hh) in names.iter().zip(h.seg) {
            hs.push(((*n).into(), hh));
        }
    }
    if cfg.sources.hardware && h.hardware.count() > 0 {
        hs.push((series::HARDWARE.into(), h.hardware));
    }
    for (i, (a, b)) in h.flow_sched.into_iter().zip(h.flow_actual).enumerate() {
        if cfg.mode == Mode::OpenLoop {
            hs.push((format!("flow{i}.user.sched"), a));
        }
        hs.push((format!("flow{i}.user.actual"), b));
    }
    let raw_iv = r.interval_raw;
    let clock = r.clock;
    let tx_elapsed_ns = clock.delta_nanos(tx.start, tx.end).get();
    let last_used = h
        .intervals
        .iter()
        .rposition(|(a, b)| a.count() + b.count() > 0)
        .map(|i| i + 1)
        .unwrap_or(0);
    let intervals = h
        .intervals
        .into_iter()
        .take(last_used)
        .enumerate()
        .map(|(i, (a, b))| (clock.raw_to_nanos(raw_iv * i as u64), a, b))
        .collect();
    ProbeOutcome {
        tx,
        rx: r.counters,
        histograms: hs,
        intervals,
        rx_placement,
        warnings,
        interfaces,
        backlog_drops: 0,
        udp_rcvbuf_drops: 0,
        tx_elapsed_ns,
    }
}

/// Kind of a probe result.
pub const RESULT_KIND: &str = "net.probe";

/// Kind-specific data stored in a `net.probe` result.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProbeData {
    /// `open_loop` or `pingpong`.
    pub mode: String,
    /// Sources that produced data.
    pub sources: Vec<String>,
    /// Probes sent (all / warm-up).
    pub sent: u64,
    /// Warm-up probes sent.
    pub sent_warmup: u64,
    /// Measured probes sent.
    pub sent_measured: u64,
    /// Measured probes received (unique).
    pub received_measured: u64,
    /// Measured probes lost (`sent_measured − received_measured`).
    pub lost_measured: u64,
    /// The achieved send rate during the measured phase, packets/s.
    pub achieved_pps: f64,
    /// The configured rate, packets/s (open loop).
    pub configured_pps: f64,
    /// Whether the generator fell behind its schedule.
    pub generator_behind: bool,
    /// Medians of the segments (ns), when decomposed.
    pub segment_medians_ns: BTreeMap<String, u64>,
    /// Interfaces that carried probes.
    pub interfaces: Vec<InterfaceFacts>,
    /// Network facts of the host (sysctls, IRQ affinity).
    pub network: crate::netinfo::NetworkFacts,
    /// The network function's configuration, when the run's orchestrator knows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nf: Option<serde_json::Value>,
}

/// Whether the lateness distribution says the generator fell behind: its p99 is above
/// half the mean gap, or more than 1 % of probes were sent later than one mean gap.
pub fn fell_behind(lateness: &LatencyHistogram, late_over_gap: u64, mean_gap_ns: f64) -> bool {
    if lateness.count() == 0 {
        return false;
    }
    let p99 = lateness.value_at(Percentile::from_fraction(99, 100).expect("valid")) as f64;
    p99 > mean_gap_ns / 2.0 || late_over_gap * 100 > lateness.count()
}

impl ProbeOutcome {
    /// Counters for the result file.
    pub fn counters(&self) -> BTreeMap<String, u64> {
        let t = &self.tx.counters;
        let r = &self.rx;
        let mut c = BTreeMap::new();
        let sent_measured = t.sent - t.sent_warmup;
        let recv_measured = r.unique - r.unique_warmup;
        for (k, v) in [
            ("sent", t.sent),
            ("sent_warmup", t.sent_warmup),
            ("send_errors", t.send_errors),
            ("received_unique", r.unique),
            ("received_warmup", r.unique_warmup),
            ("lost", t.sent.saturating_sub(r.unique)),
            ("lost_measured", sent_measured.saturating_sub(recv_measured)),
            ("duplicates", r.duplicates),
            ("reordered", r.reordered),
            ("foreign", r.foreign),
            ("beyond_ring", r.beyond_ring),
            ("datagrams_received", r.datagrams),
            ("recv_errors", r.recv_errors),
            ("late_over_mean_gap", t.late_over_gap),
            ("schedule_truncated", t.schedule_truncated),
            ("tx_timestamps", t.tx_timestamps),
            ("tx_timestamps_unmatched", t.tx_timestamps_unmatched),
            ("errqueue_errors", t.errqueue_errors),
            ("decomposed", r.decomposed),
            ("decomposition_out_of_order", r.inconsistent_order),
            ("decomposition_residence_too_long", r.inconsistent_residence),
            ("missing_rx_kernel_timestamp", r.missing_rx_kernel),
            ("missing_tx_kernel_timestamp", r.missing_tx_kernel),
            ("missing_rx_hardware_timestamp", r.missing_rx_hardware),
            ("pending_overflow", r.pending_overflow),
            ("kernel_backlog_drops", self.backlog_drops),
            ("udp_rcvbuf_drops", self.udp_rcvbuf_drops),
        ] {
            c.insert(k.to_string(), v);
        }
        for e in WireError::ALL {
            c.insert(e.counter().to_string(), r.malformed[e.index()]);
        }
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nf::{self, NfConfig};

    #[test]
    fn sources_parse() {
        let s = Sources::parse("kernel").unwrap();
        assert!(s.user && s.kernel && !s.hardware);
        assert!(Sources::parse("all").unwrap().hardware);
        assert!(Sources::parse("user,nic").unwrap_err().contains("accepted"));
    }

    #[test]
    fn lateness_verdict() {
        let mut h = LatencyHistogram::default();
        for _ in 0..100 {
            h.record(Nanos(100));
        }
        assert!(!fell_behind(&h, 0, 10_000.0));
        for _ in 0..10 {
            h.record(Nanos(20_000));
        }
        assert!(fell_behind(&h, 10, 10_000.0));
    }

    fn reflector() -> (nf::NfHandle, SocketAddr) {
        let nf = nf::start(
            &NfConfig::reflect("127.0.0.1:0".parse().unwrap()),
            Clock::monotonic(),
        )
        .unwrap();
        let a = nf.local[0];
        (nf, a)
    }

    #[test]
    fn open_loop_through_a_reflector_counts_and_decomposes_every_probe() {
        let (nf, to) = reflector();
        let mut cfg = ProbeConfig::new(to);
        cfg.milli_pps = 2_000_000; // 2 kpps
        cfg.duration = Nanos::from_millis(500);
        cfg.warmup = Nanos::from_millis(100);
        cfg.flows = 3;
        let clock = Clock::monotonic();
        let out = run(&cfg, clock).unwrap();
        nf.stop();
        let c = out.counters();
        assert_eq!(c["sent"], 1200, "{c:?}");
        assert_eq!(c["sent_warmup"], 200);
        assert_eq!(c["lost"], 0, "{c:?}");
        assert_eq!(c["duplicates"], 0);
        let get = |n: &str| &out.histograms.iter().find(|(k, _)| k == n).unwrap().1;
        assert_eq!(get(series::USER_ACTUAL).count(), 1000);
        assert_eq!(get(series::USER_SCHED).count(), 1000);
        assert_eq!(get(series::LATENESS).count(), 1000);
        let per_iv: u64 = out.tx.lateness_intervals.iter().map(|h| h.count()).sum();
        assert_eq!(
            per_iv, 1000,
            "every measured probe in one lateness interval"
        );
        // the interval log holds the three series and reads back
        let log =
            crate::result::probe_interval_log(&out, std::time::SystemTime::now(), cfg.interval)
                .unwrap();
        let back = latlab_core::results::hlog::read(&log, cfg.hist).unwrap();
        let count = |tag: &str| -> u64 {
            back.iter()
                .filter(|i| i.tag == tag)
                .map(|i| i.hist.count())
                .sum()
        };
        assert_eq!(count(series::LATENESS), 1000);
        assert_eq!(count(series::USER_ACTUAL), 1000);
        assert_eq!(get("flow2.user.actual").count(), 334); // k = 200, 203, …, 1198
                                                           // every measured probe decomposed, none inconsistent: the segments add up
        assert_eq!(
            c["decomposed"] + c["missing_rx_kernel_timestamp"] + c["missing_tx_kernel_timestamp"],
            1000,
            "{c:?}"
        );
        assert_eq!(c["decomposition_out_of_order"], 0, "{c:?}");
        assert_eq!(c["decomposition_residence_too_long"], 0, "{c:?}");
        assert_eq!(get(series::SEG_E2E).count(), c["decomposed"]);
        assert!(c["decomposed"] >= 990, "{c:?}");
        // scheduled latency is never below actual latency
        assert!(
            get(series::USER_SCHED).value_at(Percentile::LADDER[0])
                >= get(series::USER_ACTUAL).value_at(Percentile::LADDER[0])
        );
    }

    #[test]
    fn pingpong_through_a_reflector() {
        let (nf, to) = reflector();
        let mut cfg = ProbeConfig::new(to);
        cfg.mode = Mode::Pingpong;
        cfg.duration = Nanos::from_millis(200);
        cfg.warmup = Nanos::from_millis(50);
        let out = run(&cfg, Clock::monotonic()).unwrap();
        nf.stop();
        let c = out.counters();
        assert!(c["sent"] > 100, "{c:?}");
        assert_eq!(c["lost"], 0, "{c:?}");
        let n = out
            .histograms
            .iter()
            .find(|(k, _)| k == series::USER_ACTUAL)
            .unwrap()
            .1
            .count();
        assert_eq!(n, c["sent"] - c["sent_warmup"]);
    }

    /// The closed loop blocks without a receive timeout; when nobody answers, the
    /// watchdog must wake it after PINGPONG_TIMEOUT (to 2x), so every probe is counted
    /// lost and the run still ends on time.
    #[test]
    fn pingpong_without_answers_is_woken_and_counts_every_probe_lost() {
        // a bound socket that never answers (and so no ICMP error either)
        let silent = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let mut cfg = ProbeConfig::new(silent.local_addr().unwrap());
        cfg.mode = Mode::Pingpong;
        cfg.sources = Sources::parse("user").unwrap();
        cfg.duration = Nanos::from_millis(300);
        cfg.warmup = Nanos::ZERO;
        let t0 = std::time::Instant::now();
        let out = run(&cfg, Clock::monotonic()).unwrap();
        let took = t0.elapsed();
        let c = out.counters();
        let per = PINGPONG_TIMEOUT.get() / 1_000_000;
        // each probe waits between one and two timeouts (plus scheduling slack)
        assert!(
            c["sent"] >= 300 / (3 * per) && c["sent"] <= 300 / per + 1,
            "{c:?}"
        );
        assert_eq!(c["lost"], c["sent"], "{c:?}");
        assert!(took < std::time::Duration::from_secs(3), "took {took:?}");
    }

    /// Feeds the receiver a scripted arrival order: duplicates, reordering and losses
    /// must come out exactly.
    #[test]
    fn receiver_counts_duplicates_reordering_and_foreign_probes_exactly() {
        let mut cfg = ProbeConfig::new("127.0.0.1:9".parse().unwrap());
        cfg.flows = 2;
        cfg.sources = Sources::parse("user").unwrap();
        cfg.milli_pps = 1_000_000;
        cfg.duration = Nanos::from_millis(100);
        cfg.warmup = Nanos::ZERO;
        let clock = Clock::monotonic();
        let shared = Arc::new(Shared {
            ring: (0..RING).map(|_| Slot::default()).collect(),
            tx_done: AtomicBool::new(false),
            rx_deadline: AtomicU64::new(u64::MAX),
            sent: AtomicU64::new(0),
            pp_waiting_since: AtomicU64::new(0),
        });
        let mut r = Receiver::new(&cfg, clock, shared.clone()).unwrap();
        let mut buf = [0u8; wire::HEADER_LEN];
        // sent: seq 0..10, flow = seq % 2; seq 3 and 8 are lost
        for seq in 0..10u32 {
            let slot = &shared.ring[seq as usize];
            slot.sched.store(100, Ordering::Relaxed);
            slot.sent.store(100, Ordering::Relaxed);
            slot.tag.store(u64::from(seq) + 1, Ordering::Release);
        }
        let arrivals = [0u32, 1, 2, 5, 4, 6, 6, 7, 9, 2];
        for seq in arrivals {
            ProbeRepr {
                flags: 0,
                flow: (seq % 2) as u16,
                seq,
                sent: 100,
                residence_ns: 0,
            }
            .emit(&mut buf);
            r.handle(&buf, false, Default::default(), 1_000, 0);
        }
        // a sequence number this run never sent, and garbage
        ProbeRepr {
            seq: 1 << 30,
            ..Default::default()
        }
        .emit(&mut buf);
        r.handle(&buf, false, Default::default(), 1_000, 0);
        r.handle(&[1, 2, 3], false, Default::default(), 1_000, 0);
        let c = &r.counters;
        assert_eq!(c.unique, 8); // 0 1 2 4 5 6 7 9
        assert_eq!(c.duplicates, 2); // the second 6 and the second 2
                                     // flow 0 (even): 0 2 4 6 — in order; flow 1 (odd): 1 5 7 9 — in order;
                                     // 4 after 5 is reordering only across flows, so not counted
        assert_eq!(c.reordered, 0);
        assert_eq!(c.foreign, 1);
        assert_eq!(c.malformed[WireError::TooShort.index()], 1);
        assert_eq!(10 - c.unique, 2, "seq 3 and 8 lost");
        assert_eq!(r.hists.user_actual.count(), 8);
        assert_eq!(r.hists.user_sched.count(), 8);
        // now a late probe within its flow (no ring slot: counted, no schedule join)
        ProbeRepr {
            flow: 0,
            seq: 12,
            sent: 100,
            ..Default::default()
        }
        .emit(&mut buf);
        r.handle(&buf, false, Default::default(), 1_000, 0);
        ProbeRepr {
            flow: 0,
            seq: 10,
            sent: 100,
            ..Default::default()
        }
        .emit(&mut buf);
        r.handle(&buf, false, Default::default(), 1_000, 0);
        assert_eq!(r.counters.reordered, 1, "10 after 12 in flow 0");
        assert_eq!(r.counters.unique, 10);
        assert_eq!(r.counters.beyond_ring, 2);
    }

    #[test]
    fn poisson_run_sends_exactly_its_seeded_schedule() {
        let (nf, to) = reflector();
        let mut cfg = ProbeConfig::new(to);
        cfg.arrivals = Arrivals::Poisson;
        cfg.milli_pps = 5_000_000;
        cfg.duration = Nanos::from_millis(300);
        cfg.warmup = Nanos::from_millis(50);
        cfg.seed = 77;
        let total = cfg.duration.get() + cfg.warmup.get();
        let mut sch = Schedule::new(&cfg);
        let mut expected = 0u64;
        let mut gaps = Vec::new();
        let mut last = 0;
        while let Some(o) = Some(sch.next_offset_ns()).filter(|&o| o < total) {
            gaps.push(o - last);
            last = o;
            expected += 1;
        }
        let out = run(&cfg, Clock::monotonic()).unwrap();
        nf.stop();
        assert_eq!(out.counters()["sent"], expected);
        // exponential gaps: mean near 200 µs and a coefficient of variation near 1
        let n = gaps.len() as f64;
        let mean = gaps.iter().sum::<u64>() as f64 / n;
        let var = gaps.iter().map(|&g| (g as f64 - mean).powi(2)).sum::<f64>() / n;
        assert!((mean - 200_000.0).abs() < 30_000.0, "{mean}");
        assert!((var.sqrt() / mean - 1.0).abs() < 0.2);
        // constant: exactly rate × time
        let mut c = cfg.clone();
        c.arrivals = Arrivals::Constant;
        let mut sch = Schedule::new(&c);
        assert_eq!(sch.next_offset_ns(), 0);
        assert_eq!(sch.next_offset_ns(), 200_000);
    }

    #[test]
    fn lost_probes_are_counted_exactly() {
        // nothing listens: every probe is lost
        let sink = UdpSocket::bind("127.0.0.1:0").unwrap();
        let to = sink.local_addr().unwrap();
        let mut cfg = ProbeConfig::new(to);
        cfg.rx_bind = Some("127.0.0.1:0".parse().unwrap());
        cfg.milli_pps = 1_000_000;
        cfg.duration = Nanos::from_millis(100);
        cfg.warmup = Nanos::ZERO;
        cfg.drain = Nanos::from_millis(20);
        let out = run(&cfg, Clock::monotonic()).unwrap();
        let c = out.counters();
        assert_eq!(c["sent"], 100);
        assert_eq!(c["lost_measured"], 100);
    }

    #[test]
    fn hardware_on_loopback_is_one_clear_error() {
        let (nf, to) = reflector();
        let mut cfg = ProbeConfig::new(to);
        cfg.sources = Sources::parse("hardware").unwrap();
        let e = run(&cfg, Clock::monotonic()).unwrap_err().to_string();
        assert!(e.contains("interface lo"), "{e}");
        assert!(e.contains("software-receive"), "{e}");
        cfg.hardware_optional = true;
        cfg.duration = Nanos::from_millis(50);
        cfg.warmup = Nanos::ZERO;
        let out = run(&cfg, Clock::monotonic()).unwrap();
        assert!(out.warnings[0].contains("continuing"), "{:?}", out.warnings);
        nf.stop();
    }
}
