//! The RX side: the receiver's state and counters, the receive loop, and the join of
//! each probe with its ring slot and TX timestamps.

use super::checks::{Feed, LatencySample};
use super::config::{ProbeConfig, ProbeError, Sources};
use super::ring::{Shared, K_HW, K_SCHED, K_SND, RING};
use super::schedule::ns_to_raw;
use crate::decompose::{decompose, Inconsistent, Segments, Stamps};
use crate::explain::SampleLog;
use crate::nf::IoMode;
use crate::wire::{Probe, ProbeRepr, WireError, FLAG_WARMUP};
use latlab_core::hist::LatencyHistogram;
use latlab_core::units::Nanos;
use latlab_explain::GapRecorder;
use latlab_sys::clocks::realtime_ns;
use latlab_sys::net::{self as sysnet, MmsgBatch, Wait};
use latlab_sys::tsc::Clock;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::net::UdpSocket;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Most probes waiting for their TX kernel timestamp.
pub const PENDING_MAX: usize = 1 << 16;

/// Histograms of the RX side.
pub(super) struct RxHists {
    pub(super) user_sched: LatencyHistogram,
    pub(super) user_actual: LatencyHistogram,
    pub(super) kernel: LatencyHistogram,
    pub(super) hardware: LatencyHistogram,
    pub(super) seg: [LatencyHistogram; 8],
    pub(super) flow_sched: Vec<LatencyHistogram>,
    pub(super) flow_actual: Vec<LatencyHistogram>,
    /// Per interval: (user.sched, user.actual).
    pub(super) intervals: Vec<(LatencyHistogram, LatencyHistogram)>,
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
pub(super) struct Pending {
    pub(super) seq: u32,
    pub(super) rx_tsc: u64,
    pub(super) user_rx_rt: u64,
    pub(super) rx_sw: u64,
    pub(super) rx_hw: Option<u64>,
    pub(super) residence: u64,
    pub(super) warmup: bool,
}

/// The receiver's state: everything preallocated.
pub(super) struct Receiver {
    pub(super) clock: Clock,
    pub(super) sources: Sources,
    pub(super) shared: Arc<Shared>,
    pub(super) seen: Vec<u64>,
    pub(super) highest: Vec<Option<u32>>,
    pub(super) pending: VecDeque<Pending>,
    pub(super) pending_timeout: u64,
    pub(super) hists: RxHists,
    pub(super) counters: RxCounters,
    pub(super) run_start: u64,
    pub(super) interval_raw: u64,
    pub(super) n_intervals: usize,
    /// The self-checks' latency windows.
    pub(super) latencies: LatencySample,
    /// The stop rule's copy of every `user.sched` latency, when a rule is set.
    pub(super) feed: Option<Arc<Feed>>,
    /// `--explain`: every measured sample's window (TX stamp, RX stamp).
    pub(super) samples: SampleLog,
    /// `--explain`: the busy receive loop's stalls.
    pub(super) stalls: GapRecorder,
}

impl Receiver {
    pub(super) fn new(
        cfg: &ProbeConfig,
        clock: Clock,
        shared: Arc<Shared>,
    ) -> Result<Receiver, ProbeError> {
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
            latencies: LatencySample::new(cfg),
            feed: None,
            samples: SampleLog::new(if cfg.explain.enabled {
                cfg.max_probes() as usize
            } else {
                0
            }),
            stalls: crate::explain::stall_recorder(&clock, cfg.explain.enabled),
        })
    }

    /// Whether the RX loop is done: the TX side finished and either its drain deadline
    /// passed or every probe sent is in (and none waits for timestamps).
    pub(super) fn finished(&self, now: u64) -> bool {
        if !self.shared.tx_done.load(Ordering::Acquire) {
            return false;
        }
        let all_in = self.counters.unique >= self.shared.sent.load(Ordering::Relaxed);
        now >= self.shared.rx_deadline.load(Ordering::Acquire)
            || (all_in && self.pending.is_empty())
    }

    /// Handles one received datagram.
    pub(super) fn handle(
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
            self.samples.push(r.sent, rx_tsc);
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
                self.latencies.record(r.seq, sched.get());
                if let Some(f) = &self.feed {
                    f.push(sched.get());
                }
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
    pub(super) fn try_finish(&mut self, p: &Pending) -> bool {
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

    pub(super) fn record_segments(&mut self, s: &Segments) {
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
    pub(super) fn poll_pending(&mut self, now: u64, flush: bool) {
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

/// Receives up to `max` datagrams (at most the batch's slots) and hands them to the
/// receiver. With `MSG_WAITFORONE` the kernel tries for more after the first, so the closed
/// loop, which expects exactly one answer, asks for one.
pub(super) fn receive_batch(
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

pub(super) fn rx_loop(
    cfg: &ProbeConfig,
    receiver: &mut Receiver,
    batch: &mut MmsgBatch,
    rx: &UdpSocket,
) {
    let clock = receiver.clock;
    let wait = match cfg.rx_io {
        IoMode::Blocking => Wait::Block,
        IoMode::Busy | IoMode::Xdp => Wait::NonBlocking,
    };
    let mut prev = clock.now();
    loop {
        let empty = receive_batch(receiver, batch, rx, wait, usize::MAX) == 0;
        if empty && wait == Wait::NonBlocking {
            // nothing queued: give the core to a thread sharing it (free when alone)
            std::thread::yield_now();
        }
        let now = clock.now();
        // an empty busy poll that took long: the thread lost its CPU (--explain)
        if empty && wait == Wait::NonBlocking {
            receiver.stalls.record(prev, now);
        }
        prev = now;
        receiver.poll_pending(now, false);
        if receiver.finished(now) {
            break;
        }
    }
    receiver.poll_pending(clock.now(), true);
}
