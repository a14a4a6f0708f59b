//! The closed loop (`--mode pingpong`): one probe in flight, and the watchdog that wakes
//! a receive blocked past [`PINGPONG_TIMEOUT`].

use super::config::{sock_err, ProbeConfig, ProbeError};
use super::outcome::ThreadPlace;
use super::ring::Shared;
use super::rx::{receive_batch, Receiver};
use super::schedule::ns_to_raw;
use super::tx::Sender;
use super::tx::TxOutcome;
use crate::nf::IoMode;
use crate::wire::FLAG_WARMUP;
use latlab_core::hist::LatencyHistogram;
use latlab_core::units::Nanos;
use latlab_sys::net::{MmsgBatch, Wait};
use latlab_sys::sched;
use latlab_sys::tsc::Clock;
use std::net::UdpSocket;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// How long ping-pong waits for an answer before counting the probe lost.
pub const PINGPONG_TIMEOUT: Nanos = Nanos::from_millis(10);

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
        IoMode::Busy | IoMode::Xdp => Wait::NonBlocking,
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
        let mut prev = clock.now();
        while receiver.counters.unique < target {
            let empty = receive_batch(receiver, batch, rx, wait, 1) == 0;
            let now = clock.now();
            // an empty busy poll that took long: the thread lost its CPU (--explain)
            if empty && wait == Wait::NonBlocking {
                receiver.stalls.record(prev, now);
            }
            prev = now;
            if now.saturating_sub(sent_at) > timeout {
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
        sends: Default::default(),
        stalls: Vec::new(),
        stall_overflow: 0,
        counters: s.counters,
        start,
        end,
        placement: (cfg.tx_cpu, pol, prio),
    }
}

/// Runs the closed loop on its own thread (placed as the TX thread) and, with a blocking
/// receive, watches it from the calling thread; returns the TX outcome, the receiver and
/// the loop thread's placement.
#[allow(clippy::too_many_arguments)]
pub(super) fn run(
    cfg: &ProbeConfig,
    sender: Sender,
    mut receiver: Receiver,
    mut rx_batch: MmsgBatch,
    rx: UdpSocket,
    start: u64,
    shared: &Shared,
    clock: Clock,
) -> Result<(TxOutcome, Receiver, ThreadPlace), ProbeError> {
    let cfgc = cfg.clone();
    let h = std::thread::Builder::new()
        .name("latlab-probe-pingpong".into())
        .spawn(move || -> Result<_, ProbeError> {
            sched::place_current_thread(cfgc.tx_cpu, cfgc.fifo)?;
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
    Ok((tx, receiver, (cpu, pol, prio)))
}
