//! `latlab net probe`: the generator and receiver.
//!
//! ## Open loop
//! The TX thread sends probe `k` at `start + offset(k)` on the run's clock, where
//! `offset(k)` is `k / rate` (constant) or a sum of exponential gaps (Poisson), all
//! precomputed from a seed. It spins until the scheduled time and sends at once when
//! late: nothing is skipped while the run lasts, and the lateness (actual − scheduled
//! send) is histogrammed. The run lasts `warm-up + duration` plus
//! [`SEND_GRACE`]: a generator slower than its rate stops there rather than sending the
//! rest late, and counts the probes its schedule still held as `unsent`.
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
//! Over AF_XDP both ways with no CPU of its own for RX ([`ProbeConfig::one_loop`]) there
//! is no RX thread: the TX loop polls the RX ring while it waits and every 16 sends when
//! behind, and never sleeps or yields (see `xdp::RxInline` for why).
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

pub mod checks;
mod config;
mod outcome;
mod pingpong;
mod ring;
mod rx;
mod schedule;
pub mod series;
mod setup;
#[cfg(test)]
mod tests;
mod tx;
mod xdp;

pub use self::config::{
    Arrivals, Mode, ProbeConfig, ProbeError, Sources, ValidProbeConfig, LATENCY_HIST,
};
pub use self::outcome::{fell_behind, ProbeData, ProbeOutcome, RESULT_KIND};
pub use self::pingpong::PINGPONG_TIMEOUT;
pub use self::ring::RING;
pub use self::rx::{RxCounters, PENDING_MAX};
pub(crate) use self::schedule::ns_to_raw;
pub use self::schedule::{Schedule, SEND_GRACE};
pub use self::tx::{TxCounters, TxOutcome};
pub use self::xdp::XDP_SOURCE_PORT;

use self::config::sock_err;
use self::outcome::finish;
use self::ring::Shared;
use self::rx::{rx_loop, Receiver};
use self::setup::Interfaces;
use self::tx::{open_loop, Sender};
use crate::nf::IoMode;
use crate::wire;
use latlab_sys::net::{MmsgBatch, TxStamp, TxTimestamp};
use latlab_sys::sched;
use latlab_sys::tsc::Clock;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Runs a probe: sets sockets up, starts the RX thread, sends on the calling thread's
/// spawned TX thread, and returns everything measured. The configuration was checked
/// when it was made a [`ValidProbeConfig`].
pub fn run(cfg: &ValidProbeConfig, clock: Clock) -> Result<ProbeOutcome, ProbeError> {
    let payload = wire::payload_len(cfg.frame).map_err(ProbeError::Config)?;
    let Interfaces {
        sources,
        warnings,
        interfaces,
    } = setup::interfaces(cfg)?;
    let kernel_any = sources.kernel || sources.hardware;
    // from here on, the sources that can actually run
    let resolved = ProbeConfig {
        sources,
        ..ProbeConfig::clone(cfg)
    };
    let cfg = &resolved;
    let drops_before = latlab_sys::netstat::softnet_dropped();
    let udp_before = latlab_sys::netstat::udp_rcvbuf_errors();

    let (tx, rx) = setup::sockets(cfg, kernel_any)?;
    let xdp::XdpPaths {
        tx: xdp_tx,
        rx: mut xdp_rx,
        provenance: xdp_provenance,
    } = xdp::open_paths(cfg)?;

    let shared = Arc::new(Shared::new());
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
        stalls: crate::explain::stall_recorder(&clock, cfg.explain.enabled),
        xdp: xdp_tx,
    };
    let mut rx_batch = MmsgBatch::new(
        match cfg.rx_io {
            IoMode::Blocking => 1,
            IoMode::Busy => 32,
            IoMode::Xdp => 1,
        },
        2048,
        kernel_any,
    );
    // The clock reading where the schedule starts: far enough ahead for both threads to
    // be placed and waiting.
    // (An agent of `--agents` is given the start on CLOCK_MONOTONIC: one absolute
    // schedule for every agent.)
    let lead_ns = match cfg.start_at_monotonic_ns {
        Some(at) => (at - latlab_sys::clocks::monotonic_ns() as i64).max(0) as u64,
        None => 20_000_000,
    };
    let start = clock.now() + ns_to_raw(&clock, lead_ns);
    receiver.run_start = start;

    if cfg.mode == Mode::Pingpong {
        let (tx, receiver, rx_placement) =
            pingpong::run(cfg, sender, receiver, rx_batch, rx, start, &shared, clock)?;
        let mut o = finish(cfg, tx, receiver, rx_placement, warnings, interfaces);
        o.backlog_drops = latlab_sys::netstat::softnet_dropped().saturating_sub(drops_before);
        o.udp_rcvbuf_drops = latlab_sys::netstat::udp_rcvbuf_errors().saturating_sub(udp_before);
        return Ok(o);
    }

    // the stop rule's monitor, fed a copy of every latency by the RX thread; whatever
    // way this function returns, the threads waiting for the TX side see it done
    let _end = checks::EndOnDrop(shared.clone());
    let monitor = checks::start_monitor(cfg, &shared, clock, start)
        .map_err(sock_err("spawning the stop rule's thread"))?;
    if let Some((feed, _)) = &monitor {
        receiver.feed = Some(feed.clone());
    }
    let one_loop = cfg.one_loop() && xdp_rx.is_some();
    let mut parked = None;
    let rx_thread = if one_loop {
        parked = Some(receiver);
        None
    } else {
        let cfg_rx = cfg.clone();
        let mut xdp_rx = xdp_rx.take();
        Some(
            std::thread::Builder::new()
                .name("latlab-probe-rx".into())
                .spawn(move || -> Result<_, ProbeError> {
                    sched::place_current_thread(cfg_rx.rx_cpu, cfg_rx.rx_fifo())?;
                    match xdp_rx.as_mut() {
                        Some(x) => xdp::rx_loop(&mut receiver, x),
                        None => rx_loop(&cfg_rx, &mut receiver, &mut rx_batch, &rx),
                    }
                    Ok((receiver, sched::current_policy()))
                })
                .map_err(sock_err("spawning the RX thread"))?,
        )
    };
    // TX and RX in one loop: the receiver and its ring go to the TX thread
    let mut inline = match (parked, xdp_rx) {
        (Some(receiver), Some(rx)) => Some(xdp::RxInline { receiver, rx }),
        _ => None,
    };
    let cfg_tx = cfg.clone();
    let shared_tx = shared.clone();
    let tx_thread = std::thread::Builder::new()
        .name("latlab-probe-tx".into())
        .spawn(move || -> Result<_, ProbeError> {
            let placed = sched::place_current_thread(cfg_tx.tx_cpu, cfg_tx.fifo);
            if let Err(e) = placed {
                shared_tx.tx_done.store(true, Ordering::Release);
                shared_tx.rx_deadline.store(0, Ordering::Release);
                return Err(e.into());
            }
            let out = open_loop(&cfg_tx, sender, start, inline.as_mut());
            let rx = inline.map(|i| (i.receiver, sched::current_policy()));
            Ok((out, rx))
        })
        .map_err(sock_err("spawning the TX thread"))?;
    let tx_res = tx_thread
        .join()
        .map_err(|_| ProbeError::Config("the TX thread panicked".into()))?;
    if tx_res.is_err() {
        shared.rx_deadline.store(0, Ordering::Release);
        shared.tx_done.store(true, Ordering::Release);
    }
    let rx_res = match rx_thread {
        Some(t) => Some(
            t.join()
                .map_err(|_| ProbeError::Config("the RX thread panicked".into()))?,
        ),
        None => None,
    };
    let monitored = match monitor {
        Some((_, h)) => h
            .join()
            .map_err(|_| ProbeError::Config("the stop rule's thread panicked".into()))?,
        None => Default::default(),
    };
    let (tx, inline_rx) = tx_res?;
    let (receiver, (pol, prio)) = match (rx_res, inline_rx) {
        (Some(r), _) => r?,
        (None, Some(r)) => r,
        (None, None) => {
            return Err(ProbeError::Config(
                "the probe ran without a receiver".into(),
            ))
        }
    };
    // one loop: the receiver ran on the TX thread's CPU
    let rx_cpu = if one_loop { cfg.tx_cpu } else { cfg.rx_cpu };
    let mut o = finish(cfg, tx, receiver, (rx_cpu, pol, prio), warnings, interfaces);
    o.checks.monitor = monitored;
    o.xdp = xdp_provenance;
    if one_loop {
        o.xdp
            .push("generator: TX and RX in one loop on one thread (no RX thread)".into());
    }
    o.backlog_drops = latlab_sys::netstat::softnet_dropped().saturating_sub(drops_before);
    o.udp_rcvbuf_drops = latlab_sys::netstat::udp_rcvbuf_errors().saturating_sub(udp_before);
    Ok(o)
}
