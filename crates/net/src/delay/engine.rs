//! The forwarding engine: one thread, pinned, busy-polling two `AF_PACKET` sockets and
//! moving every frame that arrives on one interface out of the other once its
//! [`DelayQueue`] releases it.
//!
//! Frames are received straight into queue memory; the loop reads the TSC, receives a
//! burst (at most [`BURST`] frames) from each side, then sends every frame that is due.
//! Nothing allocates, locks or logs in the loop. For each forwarded frame it records:
//!
//! - **excess**: send completed − release time, the element's own latency on top of the
//!   configured delay (its *base latency*, user-space part: polling, copy, `send`);
//! - **lateness**: send started − release time (how late the poll loop noticed);
//! - **added**: release − arrival, the delay actually applied (for distributions).
//!
//! The kernel's part (driver → socket, socket → driver) is not visible from here; the
//! testbed measures the whole element end to end (round trip at 0 delay against a plain
//! veth link).

use super::{DelayQueue, DelaySpec, QueueStats, Sampler};
use latlab_core::hist::{HistConfig, LatencyHistogram};
use latlab_core::units::Nanos;
use latlab_sys::packet::{PacketSocket, PacketStats};
use latlab_sys::tsc::Clock;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, Ordering};

/// Frames received from one side per poll before sending.
pub const BURST: usize = 32;

/// Which directions get the added delay (the other is forwarded at once).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Direction {
    /// Both directions: a round trip gains twice the delay.
    Both,
    /// Frames arriving on A, leaving on B.
    AToB,
    /// Frames arriving on B, leaving on A.
    BToA,
}

/// What the engine does.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EngineConfig {
    /// Interface A.
    pub a: String,
    /// Interface B.
    pub b: String,
    /// The added delay.
    pub delay: DelaySpec,
    /// Where it applies.
    pub direction: Direction,
    /// Queue capacity per direction, frames.
    pub capacity: usize,
    /// Largest frame, bytes (a larger one is counted as oversize and dropped).
    pub slot_bytes: usize,
    /// Seed of the delay distribution.
    pub seed: u64,
    /// Stop after this long (`None`: until the stop flag).
    pub duration: Option<Nanos>,
    /// Socket receive buffer, bytes.
    pub rcvbuf_bytes: usize,
    /// Histogram range and precision.
    pub hist: HistConfig,
    /// `--explain`: record the loop's stalls (absent in older files: off).
    #[serde(default)]
    pub stalls: bool,
}

impl EngineConfig {
    /// Defaults for interfaces `a` and `b` and a delay.
    pub fn new(a: &str, b: &str, delay: DelaySpec) -> EngineConfig {
        EngineConfig {
            a: a.to_string(),
            b: b.to_string(),
            delay,
            direction: Direction::Both,
            capacity: 4_096,
            slot_bytes: 2_048,
            seed: 1,
            duration: None,
            rcvbuf_bytes: 4 << 20,
            hist: HistConfig::default(),
            stalls: false,
        }
    }
}

/// Errors of the engine.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    /// Opening a socket failed.
    #[error(transparent)]
    Socket(#[from] latlab_sys::packet::PacketError),
    /// Receiving or sending failed.
    #[error("{what} on '{interface}': {source}")]
    Io {
        /// recv or send.
        what: &'static str,
        /// The interface.
        interface: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// Bad configuration.
    #[error("invalid configuration: {0}")]
    Config(String),
}

/// What one direction did.
#[derive(Clone, Debug)]
pub struct DirectionReport {
    /// `a_to_b` or `b_to_a`.
    pub name: &'static str,
    /// Queue counters.
    pub queue: QueueStats,
    /// Frames the kernel refused to send (`EAGAIN`/`ENOBUFS`): lost, counted.
    pub send_failures: u64,
    /// Kernel counters of the receiving socket (its drops: receive buffer full).
    pub kernel_rx: PacketStats,
    /// Send completed − release, ns.
    pub excess: LatencyHistogram,
    /// Send started − release, ns.
    pub lateness: LatencyHistogram,
    /// Release − arrival, ns (the delay applied).
    pub added: LatencyHistogram,
}

/// What a run did.
#[derive(Clone, Debug)]
pub struct EngineReport {
    /// A → B, then B → A.
    pub directions: [DirectionReport; 2],
    /// How long the loop ran.
    pub elapsed: Nanos,
    /// Poll iterations.
    pub polls: u64,
    /// Frames still queued when the run ended (counted, not sent).
    pub left_in_queue: u64,
    /// With [`EngineConfig::stalls`]: the loop's stalls (an empty receive phase or a spin
    /// step of at least [`crate::explain::STALL_THRESHOLD`]: the thread lost its CPU).
    pub stalls: Vec<latlab_explain::Gap>,
    /// Stalls that did not fit the recorder.
    pub stall_overflow: u64,
    /// The cheapest step recorded, ticks.
    pub loop_cost: u64,
}

impl DirectionReport {
    /// Frames lost in this direction: queue full, oversize, refused by the kernel on send,
    /// dropped by the kernel before the element.
    pub fn lost(&self) -> u64 {
        self.queue.dropped_full
            + self.queue.dropped_oversize
            + self.send_failures
            + self.kernel_rx.drops
    }
}

impl EngineReport {
    /// Frames lost in both directions ([`DirectionReport::lost`]).
    pub fn lost(&self) -> u64 {
        self.directions.iter().map(DirectionReport::lost).sum()
    }
}

struct Side {
    rx: PacketSocket,
    q: DelayQueue,
    sampler: Sampler,
    delayed: bool,
    send_failures: u64,
    excess: LatencyHistogram,
    lateness: LatencyHistogram,
    added: LatencyHistogram,
}

/// Runs the engine on the calling thread (pin it and enter the namespace first) until
/// `stop` is raised or the configured duration passes. `on_ready` is called once both
/// sockets are open.
///
/// # Errors
/// [`EngineError`] when a socket cannot be opened or a receive/send fails hard.
pub fn run(
    cfg: &EngineConfig,
    clock: &Clock,
    stop: &AtomicBool,
    on_ready: impl FnOnce(),
) -> Result<EngineReport, EngineError> {
    if cfg.capacity == 0 || cfg.slot_bytes < 64 {
        return Err(EngineError::Config(
            "capacity must be positive and slots at least 64 bytes".into(),
        ));
    }
    if cfg.a == cfg.b {
        return Err(EngineError::Config("the two interfaces must differ".into()));
    }
    let hist = || LatencyHistogram::new(cfg.hist).map_err(|e| EngineError::Config(e.to_string()));
    let sock_a = PacketSocket::open(&cfg.a, cfg.rcvbuf_bytes)?;
    let sock_b = PacketSocket::open(&cfg.b, cfg.rcvbuf_bytes)?;
    let mk = |rx: PacketSocket, delayed: bool, seed: u64| -> Result<Side, EngineError> {
        Ok(Side {
            rx,
            q: DelayQueue::new(cfg.capacity, cfg.slot_bytes),
            sampler: Sampler::new(cfg.delay, seed),
            delayed,
            send_failures: 0,
            excess: hist()?,
            lateness: hist()?,
            added: hist()?,
        })
    };
    let ab = matches!(cfg.direction, Direction::Both | Direction::AToB);
    let ba = matches!(cfg.direction, Direction::Both | Direction::BToA);
    // sides[0] receives on A (and its frames leave on B), sides[1] receives on B.
    let mut sides = [
        mk(sock_a, ab, cfg.seed)?,
        mk(sock_b, ba, cfg.seed ^ 0x5555)?,
    ];
    // ns -> clock units: exact for the constant case, a factor for sampled delays.
    let per_sec = clock.raw_to_nanos(1_000_000_000).get().max(1) as u128;
    let to_raw = |ns: u64| ((u128::from(ns) * 1_000_000_000u128) / per_sec) as u64;
    let const_raw = match cfg.delay {
        DelaySpec::Constant { ns } => Some(to_raw(ns)),
        _ => None,
    };
    let raw_per_ns = 1e9 / per_sec as f64;
    let mut scratch = vec![0u8; cfg.slot_bytes];
    on_ready();
    let start = clock.now();
    let end = cfg.duration.map(|d| start + to_raw(d.get()));
    let mut polls = 0u64;
    // Estimated cost of one receive phase (clock units, EWMA). When the next frame is due
    // sooner than twice that, the loop spins on the clock instead of receiving, so that a
    // frame leaves at its release time, not up to a poll later.
    let mut rx_cost: u64 = to_raw(1_000);
    let spin_cap = to_raw(50_000);
    let mut stalls = crate::explain::stall_recorder(clock, cfg.stalls);
    loop {
        polls += 1;
        let now = clock.now();
        let next_due = match (sides[0].q.next_release(), sides[1].q.next_release()) {
            (Some(x), Some(y)) => Some(x.min(y)),
            (x, y) => x.or(y),
        };
        let window = (2 * rx_cost).min(spin_cap);
        if let Some(due) = next_due.filter(|&r| r > now && r - now <= window) {
            let mut prev = now;
            loop {
                let t = clock.now();
                stalls.record(prev, t);
                if t >= due {
                    break;
                }
                prev = t;
                std::hint::spin_loop();
            }
        } else {
            let got = receive(&mut sides, &mut scratch, clock, const_raw, raw_per_ns)?;
            let after = clock.now();
            if got == 0 {
                // an empty receive phase that took long: the thread lost its CPU
                stalls.record(now, after);
            }
            let took = after.saturating_sub(now);
            rx_cost = rx_cost - rx_cost / 16 + took / 16;
        }
        let now = clock.now();
        for i in 0..2 {
            flush(&mut sides, i, now, clock)?;
        }
        if polls % 1024 == 0 {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            if let Some(e) = end {
                if clock.now() >= e {
                    break;
                }
            }
        }
    }
    let elapsed = clock.delta_nanos(start, clock.now());
    let left = sides.iter().map(|s| s.q.len() as u64).sum();
    let names = ["a_to_b", "b_to_a"];
    let mut reports = Vec::new();
    for (s, name) in sides.into_iter().zip(names) {
        reports.push(DirectionReport {
            name,
            queue: s.q.stats(),
            send_failures: s.send_failures,
            kernel_rx: s.rx.stats().unwrap_or_default(),
            excess: s.excess,
            lateness: s.lateness,
            added: s.added,
        });
    }
    let [r0, r1]: [DirectionReport; 2] = reports.try_into().expect("two directions");
    Ok(EngineReport {
        directions: [r0, r1],
        elapsed,
        polls,
        left_in_queue: left,
        stalls: stalls.gaps().to_vec(),
        stall_overflow: stalls.overflow(),
        loop_cost: stalls.min_step(),
    })
}

/// One receive phase: up to [`BURST`] frames from each side into its queue; returns the
/// frames received.
fn receive(
    sides: &mut [Side; 2],
    scratch: &mut [u8],
    clock: &Clock,
    const_raw: Option<u64>,
    raw_per_ns: f64,
) -> Result<usize, EngineError> {
    let mut frames = 0;
    for i in 0..2 {
        for _ in 0..BURST {
            let s = &mut sides[i];
            let got = match s.q.tail_slot() {
                Some(slot) => s.rx.recv(slot),
                None => s.rx.recv(scratch),
            };
            let n = match got {
                Ok(Some(n)) => n,
                Ok(None) => break,
                Err(source) => {
                    return Err(EngineError::Io {
                        what: "recv",
                        interface: s.rx.interface().to_string(),
                        source,
                    })
                }
            };
            frames += 1;
            let now = clock.now();
            if s.q.len() == s.q.capacity() {
                s.q.count_full_drop();
                continue;
            }
            let d = if !s.delayed {
                0
            } else if let Some(c) = const_raw {
                c
            } else {
                (s.sampler.sample() as f64 * raw_per_ns) as u64
            };
            s.q.commit(n, now, d);
            // A frame with no delay left (0 µs, or behind due ones) leaves at once, not
            // after the rest of the receive phase.
            if s.q.peek_due(now).is_some() {
                flush(sides, i, now, clock)?;
            }
        }
    }
    Ok(frames)
}

/// Sends every frame of `sides[i]`'s queue that is due at `now` out of the other side.
fn flush(sides: &mut [Side; 2], i: usize, now: u64, clock: &Clock) -> Result<(), EngineError> {
    let (first, second) = sides.split_at_mut(1);
    let (from, to) = if i == 0 {
        (&mut first[0], &second[0])
    } else {
        (&mut second[0], &first[0])
    };
    while let Some(due) = from.q.peek_due(now) {
        let t0 = clock.now();
        let sent = to.rx.send(due.frame).map_err(|source| EngineError::Io {
            what: "send",
            interface: to.rx.interface().to_string(),
            source,
        })?;
        let t1 = clock.now();
        let (arrival, release) = (due.arrival, due.release);
        from.q.pop();
        if !sent {
            from.send_failures += 1;
            continue;
        }
        from.excess.record(clock.delta_nanos(release, t1));
        from.lateness
            .record(clock.delta_nanos(release, t0.max(release)));
        from.added.record(clock.delta_nanos(arrival, release));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lost_frames_add_every_cause_over_both_directions() {
        let h = LatencyHistogram::new(HistConfig::default()).unwrap();
        let dir = |name, full, oversize, send_failures, kernel| DirectionReport {
            name,
            queue: QueueStats {
                dropped_full: full,
                dropped_oversize: oversize,
                enqueued: 100,
                ..QueueStats::default()
            },
            send_failures,
            kernel_rx: PacketStats {
                drops: kernel,
                ..PacketStats::default()
            },
            excess: h.clone(),
            lateness: h.clone(),
            added: h.clone(),
        };
        let a = dir("a_to_b", 1, 2, 3, 4);
        assert_eq!(a.lost(), 10);
        let rep = EngineReport {
            directions: [a, dir("b_to_a", 0, 0, 5, 0)],
            elapsed: Nanos(0),
            polls: 0,
            left_in_queue: 0,
            stalls: Vec::new(),
            stall_overflow: 0,
            loop_cost: 0,
        };
        assert_eq!(rep.lost(), 15);
    }
}
