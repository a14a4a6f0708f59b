//! The TX side: the sender (probe emission, ring publication, TX timestamps from the
//! error queue) and the open-loop send loop.

use super::checks::SendSample;
use super::config::ProbeConfig;
use super::ring::{Shared, K_HW, K_SCHED, K_SND, RING};
use super::schedule::{ns_to_raw, Schedule, SEND_GRACE};
use crate::wire::{ProbeRepr, FLAG_WARMUP};
use latlab_core::hist::LatencyHistogram;
use latlab_explain::{Gap, GapRecorder};
use latlab_sys::clocks::realtime_ns;
use latlab_sys::net::{self as sysnet, TxStamp, TxTimestamp};
use latlab_sys::sched;
use latlab_sys::tsc::Clock;
use serde::{Deserialize, Serialize};
use std::net::UdpSocket;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// The sender's state.
pub(super) struct Sender {
    pub(super) sock: UdpSocket,
    pub(super) clock: Clock,
    pub(super) shared: Arc<Shared>,
    pub(super) kernel: bool,
    pub(super) buf: Vec<u8>,
    /// OPT_ID → sequence number.
    pub(super) id_to_seq: Vec<u32>,
    pub(super) next_id: u32,
    pub(super) ts_buf: Vec<TxTimestamp>,
    pub(super) counters: TxCounters,
    /// `--explain`: stalls of the spin before each send.
    pub(super) stalls: GapRecorder,
    /// `--io xdp`: the AF_XDP send path (the socket is then unused).
    pub(super) xdp: Option<super::xdp::XdpTxPath>,
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
    /// Probes the schedule held that were still unsent when the run reached its end
    /// (`warm-up + duration` + [`SEND_GRACE`]): a generator slower than its rate stops
    /// there and counts the rest here instead of sending it late.
    #[serde(default)]
    pub unsent: u64,
}

impl Sender {
    /// Sends probe `seq`; returns the clock reading taken just before the send call, or
    /// `None` when the send failed.
    pub(super) fn send(&mut self, seq: u32, flow: u16, flags: u8, sched: u64) -> Option<u64> {
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
        if let Some(x) = self.xdp.as_mut() {
            return if x.queue(&self.buf) {
                self.counters.sent += 1;
                self.shared
                    .sent
                    .store(self.counters.sent, Ordering::Relaxed);
                Some(now)
            } else {
                slot.tag.store(0, Ordering::Release);
                self.counters.send_errors += 1;
                None
            };
        }
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
    pub(super) fn drain_errqueue(&mut self) {
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

/// Sends between two polls of the RX ring by a loop that also receives and is behind
/// schedule: at 1 Mpps every 16 µs, 64 frames per poll.
const RX_POLL_EVERY: u64 = 16;

/// The largest early-wake-up margin of the sender, ns: 500 µs, and for a `SCHED_FIFO`
/// sender at most a quarter of the mean gap (see [`open_loop`]).
pub(super) fn fifo_max_margin_ns(fifo: bool, mean_gap_ns: f64) -> u64 {
    if fifo {
        ((mean_gap_ns / 4.0) as u64).min(500_000)
    } else {
        500_000
    }
}

/// The loop ends with its schedule, or at its deadline (`warm-up + duration` +
/// [`SEND_GRACE`] after the start): a probe whose wait finds the deadline passed is not
/// sent, and it and the rest of the schedule (stepped, not sent) are counted unsent.
///
/// With `rx` (`--io xdp`, TX and RX on one CPU) the loop also receives: it polls the RX
/// ring while it waits for the next send (spinning, never sleeping or yielding: an answer
/// is stamped when the poll finds it) and every [`RX_POLL_EVERY`] sends when it is behind,
/// then drains the last answers itself.
pub(super) fn open_loop(
    cfg: &ProbeConfig,
    mut s: Sender,
    start: u64,
    mut rx: Option<&mut super::xdp::RxInline>,
) -> TxOutcome {
    let clock = s.clock;
    let mut lateness = LatencyHistogram::new(cfg.hist).unwrap_or_default();
    let total = cfg.warmup.get() + cfg.duration.get();
    let mean_gap_ns = 1e12 / cfg.milli_pps as f64;
    let gap_raw = ns_to_raw(&clock, mean_gap_ns as u64);
    let mut schedule = Schedule::new(cfg);
    let max = cfg.max_probes();
    // checked where the wait reads the clock: no extra reading per probe
    let deadline = start + ns_to_raw(&clock, total + SEND_GRACE.get());
    let drain_slack = ns_to_raw(&clock, 5_000);
    // Far from the next send, sleep instead of spinning: a spinning SCHED_FIFO thread is
    // throttled by sched_rt_runtime_us (stopped ~50 ms per second). Wake-ups come early
    // by a margin covering the timer slack (0 for real-time threads, 50 µs by default).
    // The margin adapts: a wake-up later than half the margin doubles it (up to 500 µs),
    // so a host with slow timers spins more rather than sending late.
    //
    // A SCHED_FIFO sender never spins more than a quarter of the mean gap: spinning for
    // most of every gap it would use more than the 95 % that real-time throttling allows
    // and be stopped for 50 ms of every second (every probe of those 50 ms late). Where
    // the host's timers wake it later than that, it sends late, and says so.
    let max_margin = ns_to_raw(&clock, fifo_max_margin_ns(cfg.fifo.is_some(), mean_gap_ns));
    let mut sleep_margin =
        ns_to_raw(&clock, if cfg.fifo.is_some() { 30_000 } else { 80_000 }).min(max_margin);
    let spin_after_sleep = ns_to_raw(&clock, 20_000);
    // lateness per interval, preallocated
    let iv_raw = ns_to_raw(&clock, cfg.interval.get().max(1));
    let n_iv = (total / cfg.interval.get().max(1) + 2) as usize;
    let mut lateness_iv: Vec<LatencyHistogram> = (0..n_iv)
        .map(|_| LatencyHistogram::new(cfg.hist).unwrap_or_default())
        .collect();
    let mut sends = SendSample::new(cfg);
    // Per probe at Mpps, no division: the schedule steps its offsets, ns become clock
    // units by one multiplication (within a tick of `ns_to_raw`), the flow and the
    // lateness interval are counters.
    let raw_per_ns = ns_to_raw(&clock, 1_000_000_000) as f64 / 1e9;
    let flows = u64::from(cfg.flows.max(1));
    let mut flow: u64 = 0;
    let mut iv: usize = 0;
    let mut iv_end = start + iv_raw;
    let mut k: u64 = 0;
    // set when the deadline stopped the loop: probe `k` and the rest are unsent
    let mut stopped_at_deadline = false;
    loop {
        let offset_ns = schedule.next_offset_ns();
        if offset_ns >= total {
            break;
        }
        if offset_ns >= s.shared.stop_offset_ns.load(Ordering::Relaxed) {
            sends.stopped(offset_ns);
            break;
        }
        if k >= max {
            s.counters.schedule_truncated = 1;
            break;
        }
        let sched_at = start + (offset_ns as f64 * raw_per_ns + 0.5) as u64;
        let warm = offset_ns < cfg.warmup.get();
        // wait for the scheduled time; drain the error queue while there is slack
        let mut spun_at: Option<u64> = None;
        let past_deadline = loop {
            let now = clock.now();
            // a spin step that took long: the thread lost its CPU (--explain)
            if let Some(p) = spun_at.take() {
                s.stalls.record(p, now);
            }
            if now >= sched_at {
                break now >= deadline;
            }
            // --io xdp: probes queued while they were due go out before any wait
            if let Some(x) = s.xdp.as_mut() {
                if x.unkicked > 0 {
                    x.kick();
                    continue;
                }
            }
            // TX and RX in one loop: wait by polling for answers
            if let Some(r) = rx.as_deref_mut() {
                // an empty poll that took long: the thread lost its CPU (--explain)
                if r.poll() == 0 {
                    spun_at = Some(now);
                }
                continue;
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
                spun_at = Some(now);
            }
        };
        if past_deadline {
            stopped_at_deadline = true;
            break;
        }
        let seq = k as u32;
        let this_flow = flow as u16;
        flow += 1;
        if flow == flows {
            flow = 0;
        }
        let flags = if warm { FLAG_WARMUP } else { 0 };
        // a generator that is behind never has slack: collect TX timestamps anyway, every
        // 16 sends, before the error queue overflows and drops them
        if k % 16 == 15 {
            s.drain_errqueue();
        }
        // behind schedule the wait above never runs: take the answers in between sends
        if k % RX_POLL_EVERY == RX_POLL_EVERY - 1 {
            if let Some(r) = rx.as_deref_mut() {
                r.poll();
            }
        }
        if let Some(sent_at) = s.send(seq, this_flow, flags, sched_at) {
            if warm {
                s.counters.sent_warmup += 1;
            } else {
                let late = sent_at.saturating_sub(sched_at);
                let late_ns = clock.raw_to_nanos(late);
                lateness.record(late_ns);
                // the interval (sched_at - start) / iv_raw, capped at the last one
                while sched_at >= iv_end && iv < n_iv - 1 {
                    iv += 1;
                    iv_end += iv_raw;
                }
                lateness_iv[iv].record(late_ns);
                sends.record(sched_at, sent_at);
                if late > gap_raw {
                    s.counters.late_over_gap += 1;
                }
            }
        }
        k += 1;
    }
    if let Some(x) = s.xdp.as_mut() {
        x.kick();
    }
    let end = clock.now();
    // keep collecting TX timestamps while the last answers arrive
    let drain_end = end + ns_to_raw(&clock, cfg.drain.get());
    s.shared.rx_deadline.store(drain_end, Ordering::Release);
    s.shared.tx_done.store(true, Ordering::Release);
    if stopped_at_deadline {
        // probe k and the rest of the schedule, up to the run's bound: stepped while the
        // RX side drains
        s.counters.unsent = 1 + schedule.count_before(total, max - k - 1);
    }
    // one loop: it has taken every answer (or waited out the drain) already
    let inline = rx.is_some();
    if let Some(r) = rx {
        r.drain(s.xdp.as_mut());
    }
    while !inline && clock.now() < drain_end {
        if let Some(x) = s.xdp.as_mut() {
            // frames a full ring held back, until the kernel has taken them all
            x.tx.kick();
        }
        s.drain_errqueue();
        std::thread::sleep(Duration::from_micros(200));
    }
    s.drain_errqueue();
    let (pol, prio) = sched::current_policy();
    TxOutcome {
        lateness,
        lateness_intervals: lateness_iv,
        sends,
        stalls: s.stalls.gaps().to_vec(),
        stall_overflow: s.stalls.overflow(),
        counters: s.counters,
        start,
        end,
        placement: (cfg.tx_cpu, pol, prio),
    }
}

/// What the TX side measured.
#[derive(Clone, Debug)]
pub struct TxOutcome {
    /// Lateness of measured probes.
    pub lateness: LatencyHistogram,
    /// The same per interval of the run (by scheduled time), from the run's start.
    pub lateness_intervals: Vec<LatencyHistogram>,
    /// What the self-checks need of the measured sends (empty in a closed loop).
    pub sends: SendSample,
    /// Counters.
    pub counters: TxCounters,
    /// Clock reading of the first scheduled send.
    pub start: u64,
    /// Clock reading after the last send.
    pub end: u64,
    /// CPU and policy.
    pub placement: (Option<u32>, String, i32),
    /// `--explain`: the TX thread's stalls (spin steps of at least
    /// [`crate::explain::STALL_THRESHOLD`]).
    pub stalls: Vec<Gap>,
    /// Stalls that did not fit the recorder.
    pub stall_overflow: u64,
}
