//! What the self-checks need from a run, kept in memory allocated before it starts, and
//! the verdicts computed from it afterwards (the statistics are `latlab_core::selfcheck`'s).
//!
//! - The TX thread keeps a [`SendSample`]: every `stride`-th gap between measured sends
//!   (at most [`GAP_CAP`], spread over the run) and the span of the measured sends, for the
//!   arrival and throughput checks.
//! - The RX thread keeps a [`LatencySample`]: `user.sched` latencies by sequence number in
//!   [`WINDOWS`] windows of [`WINDOW`] consecutive probes spread over the run, for the
//!   lagged rank autocorrelation (pairs never span two windows; a lost probe is a gap).
//! - With a stop rule (`--ci-width`), the RX thread also copies every `user.sched` latency
//!   into a [`Feed`], a single-producer ring of atomics, which a monitor thread drains into
//!   its own histogram; at the end of every measured interval the monitor checks the
//!   percentile's confidence interval and, when it is narrow enough, tells the TX thread to
//!   stop ([`Shared::stop_offset_ns`]). A full ring drops the copy (counted), which only
//!   delays the stop: the verdict is computed from the run's own histogram.
//!
//! Recording is a bounds check and a store: no allocation, lock or system call.

use super::config::{Arrivals, Mode, ProbeConfig};
use super::ring::Shared;
use super::schedule::ns_to_raw;
use latlab_core::hist::LatencyHistogram;
use latlab_core::parse::Percentile;
use latlab_core::selfcheck::{self, StopReport, Verdict, MISSING};
use latlab_core::stats::DEFAULT_CONFIDENCE;
use latlab_core::units::Nanos;
use latlab_sys::tsc::Clock;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Most gaps between sends kept for the arrival check.
pub const GAP_CAP: usize = 2_000;
/// Consecutive probes per latency window.
pub const WINDOW: usize = 2_048;
/// Latency windows per run.
pub const WINDOWS: usize = 16;
/// Slots of the stop rule's latency ring.
pub const FEED_CAP: usize = 1 << 16;
/// Fewest samples an interval needs for its median to enter the stationarity check.
pub const MIN_INTERVAL_SAMPLES: u64 = 10;

/// Measured probes the schedule plans (`duration × rate`), at least 1.
fn expected_measured(cfg: &ProbeConfig) -> u64 {
    ((cfg.duration.get() as u128 * cfg.milli_pps as u128 / 1_000_000_000_000) as u64).max(1)
}

/// The TX side's sample of the measured sends.
#[derive(Clone, Debug, Default)]
pub struct SendSample {
    /// Sampled gaps between consecutive measured sends, raw clock units.
    gaps_raw: Vec<u64>,
    /// Every how many sends a gap is kept.
    stride: u64,
    /// Measured sends seen.
    n: u64,
    /// Sends until the next kept gap (counts `stride` down: no division per send).
    until_kept: u64,
    /// Clock reading of the previous measured send.
    prev: u64,
    /// Scheduled time of the first measured send.
    first_sched: u64,
    /// Clock reading of the last measured send.
    last_sent: u64,
    /// Offset (ns from the start) at which the stop rule ended the schedule.
    stopped_at_ns: Option<u64>,
}

impl SendSample {
    /// An empty sample sized for `cfg`'s run (allocates here, never in `record`).
    pub(super) fn new(cfg: &ProbeConfig) -> SendSample {
        SendSample {
            gaps_raw: Vec::with_capacity(GAP_CAP),
            stride: expected_measured(cfg).div_ceil(GAP_CAP as u64).max(1),
            ..SendSample::default()
        }
    }

    /// Records a measured send scheduled at `sched`, sent at `sent` (clock readings).
    #[inline]
    pub(super) fn record(&mut self, sched: u64, sent: u64) {
        if self.n == 0 {
            self.first_sched = sched;
            self.until_kept = self.stride.max(1);
        } else {
            // every `stride`-th send (n % stride == 0), counted down
            self.until_kept = self.until_kept.saturating_sub(1);
            if self.until_kept == 0 {
                self.until_kept = self.stride.max(1);
                if self.gaps_raw.len() < self.gaps_raw.capacity() {
                    self.gaps_raw.push(sent.saturating_sub(self.prev));
                }
            }
        }
        self.prev = sent;
        self.last_sent = sent;
        self.n += 1;
    }

    /// The stop rule ended the schedule at `offset_ns`.
    pub(super) fn stopped(&mut self, offset_ns: u64) {
        self.stopped_at_ns = Some(offset_ns);
    }

    /// Where the stop rule ended the schedule (ns from the start), if it did.
    pub fn stopped_at_ns(&self) -> Option<u64> {
        self.stopped_at_ns
    }

    /// The sampled gaps in ns.
    pub fn gaps_ns(&self, clock: &Clock) -> Vec<f64> {
        self.gaps_raw
            .iter()
            .map(|&g| clock.raw_to_nanos(g).get() as f64)
            .collect()
    }

    /// The achieved rate of the measured sends, per second: `n` sends over the time from
    /// the first one's schedule to the last one's send plus one mean gap (what `n` sends on
    /// time take). `None` before two sends.
    pub fn achieved_pps(&self, clock: &Clock, mean_gap_ns: f64) -> Option<f64> {
        if self.n < 2 {
            return None;
        }
        let span = clock
            .delta_nanos(self.first_sched, self.last_sent.max(self.first_sched))
            .get() as f64
            + mean_gap_ns;
        Some(self.n as f64 * 1e9 / span)
    }
}

/// The RX side's latency windows.
#[derive(Clone, Debug)]
pub struct LatencySample {
    values: Vec<u64>,
    /// Every how many blocks of [`WINDOW`] probes one is kept.
    every: u64,
    /// The sequence number the windows start at (the first expected measured probe).
    offset: u64,
}

impl LatencySample {
    /// Empty windows spread over `cfg`'s measured probes (allocates here only).
    pub(super) fn new(cfg: &ProbeConfig) -> LatencySample {
        let (offset, measured) = match cfg.mode {
            Mode::OpenLoop => {
                let warm =
                    (cfg.warmup.get() as u128 * cfg.milli_pps as u128 / 1_000_000_000_000) as u64;
                (warm, expected_measured(cfg))
            }
            // unknown in a closed loop: spread over the bound
            Mode::Pingpong => (0, cfg.max_probes()),
        };
        let blocks = measured.div_ceil(WINDOW as u64);
        LatencySample {
            values: vec![MISSING; WINDOW * WINDOWS],
            every: blocks.div_ceil(WINDOWS as u64).max(1),
            offset,
        }
    }

    /// Records the latency of probe `seq`, if its block is one of the windows.
    #[inline]
    pub(super) fn record(&mut self, seq: u32, latency_ns: u64) {
        let Some(s) = u64::from(seq).checked_sub(self.offset) else {
            return;
        };
        let block = s / WINDOW as u64;
        if block % self.every != 0 {
            return;
        }
        let i = (block / self.every) as usize * WINDOW + (s % WINDOW as u64) as usize;
        if let Some(v) = self.values.get_mut(i) {
            *v = latency_ns.min(MISSING - 1);
        }
    }

    /// The windows, consecutive, [`MISSING`] where no sample was kept.
    pub fn values(&self) -> &[u64] {
        &self.values
    }
}

/// A single-producer, single-consumer ring of latencies (ns): the RX thread pushes, the
/// stop rule's monitor drains.
pub(super) struct Feed {
    ring: Box<[AtomicU64]>,
    head: AtomicU64,
    tail: AtomicU64,
    dropped: AtomicU64,
}

impl Feed {
    pub(super) fn new() -> Feed {
        Feed {
            ring: (0..FEED_CAP).map(|_| AtomicU64::new(0)).collect(),
            head: AtomicU64::new(0),
            tail: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
        }
    }

    /// Pushes a latency; counts it dropped when the ring is full.
    #[inline]
    pub(super) fn push(&self, v: u64) {
        let h = self.head.load(Ordering::Relaxed);
        if h - self.tail.load(Ordering::Acquire) >= FEED_CAP as u64 {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        self.ring[h as usize % FEED_CAP].store(v, Ordering::Relaxed);
        self.head.store(h + 1, Ordering::Release);
    }

    fn drain(&self, mut f: impl FnMut(u64)) {
        let h = self.head.load(Ordering::Acquire);
        let t = self.tail.load(Ordering::Relaxed);
        for i in t..h {
            f(self.ring[i as usize % FEED_CAP].load(Ordering::Relaxed));
        }
        self.tail.store(h, Ordering::Release);
    }
}

/// What the stop rule's monitor saw.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MonitorOutcome {
    /// Measured intervals at whose end the interval was checked.
    pub checks: u64,
    /// Latencies the ring could not take (the monitor fell behind).
    pub dropped: u64,
}

/// The stop rule's monitor: until the TX thread is done, drains `feed` every 5 ms and, at
/// the end of each measured interval, stops the schedule when the target is met.
pub(super) fn monitor(
    cfg: &ProbeConfig,
    feed: &Feed,
    shared: &Shared,
    clock: Clock,
    start: u64,
) -> MonitorOutcome {
    let mut out = MonitorOutcome::default();
    let Some(target) = cfg.ci_width else {
        return out;
    };
    let Ok(mut h) = LatencyHistogram::new(cfg.hist) else {
        return out;
    };
    let iv = ns_to_raw(&clock, cfg.interval.get().max(1));
    let mut next_check = start + ns_to_raw(&clock, cfg.warmup.get()) + iv;
    while !shared.tx_done.load(Ordering::Acquire) {
        std::thread::sleep(Duration::from_millis(5));
        feed.drain(|v| h.record(Nanos(v)));
        let now = clock.now();
        if now < next_check {
            continue;
        }
        next_check += iv;
        out.checks += 1;
        if selfcheck::meets(&h, target, DEFAULT_CONFIDENCE) {
            shared
                .stop_offset_ns
                .store(clock.delta_nanos(start, now).get(), Ordering::Release);
            break;
        }
    }
    out.dropped = feed.dropped.load(Ordering::Relaxed);
    out
}

/// Marks the TX side done when dropped: a run that returns early (a thread could not be
/// spawned) still ends the monitor and the RX thread, which wait for that flag.
pub(super) struct EndOnDrop(pub(super) Arc<Shared>);

impl Drop for EndOnDrop {
    fn drop(&mut self) {
        self.0.tx_done.store(true, Ordering::Release);
    }
}

/// Starts the monitor thread when `cfg` has a stop rule; returns the feed the RX thread
/// copies latencies into and the thread.
#[allow(clippy::type_complexity)]
pub(super) fn start_monitor(
    cfg: &ProbeConfig,
    shared: &Arc<Shared>,
    clock: Clock,
    start: u64,
) -> std::io::Result<Option<(Arc<Feed>, std::thread::JoinHandle<MonitorOutcome>)>> {
    if cfg.ci_width.is_none() {
        return Ok(None);
    }
    let feed = Arc::new(Feed::new());
    let (f, s, c) = (feed.clone(), shared.clone(), cfg.clone());
    let h = std::thread::Builder::new()
        .name("latlab-probe-ci".into())
        .spawn(move || monitor(&c, &f, &s, clock, start))?;
    Ok(Some((feed, h)))
}

/// The course of a stop-rule run, as a `net.probe` result's data records it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CiStop {
    /// The rule, e.g. `p99:5.00us`.
    pub target: String,
    /// Whether the rule stopped the run before its maximum duration.
    pub stopped_early: bool,
    /// Measured time, ns.
    pub measured_ns: u64,
    /// The maximum measured time (`--duration`), ns.
    pub max_ns: u64,
    /// Interval ends at which the rule was checked.
    pub checks: u64,
    /// Latencies the rule's copy could not take (its thread fell behind; delays the stop
    /// only).
    pub monitor_behind: u64,
}

impl CheckData {
    /// The stop rule's course, when `cfg` set one.
    pub fn ci_stop(&self, cfg: &ProbeConfig) -> Option<CiStop> {
        cfg.ci_width.map(|t| CiStop {
            target: t.to_string(),
            stopped_early: self.stopped_early,
            measured_ns: self.measured_ns,
            max_ns: cfg.duration.get(),
            checks: self.monitor.checks,
            monitor_behind: self.monitor.dropped,
        })
    }
}

/// The self-checks' inputs of a finished run.
#[derive(Clone, Debug)]
pub struct CheckData {
    /// Sampled gaps between measured sends, ns.
    pub gaps_ns: Vec<f64>,
    /// Achieved rate of the measured sends (open loop); of every send over the run's
    /// elapsed time when probes were left unsent.
    pub achieved_pps: Option<f64>,
    /// Probes the schedule held up to its end (or the stop rule's): sent, failed to send
    /// or unsent.
    pub scheduled: u64,
    /// Of them, still unsent when the run reached its deadline.
    pub unsent: u64,
    /// Latency windows (see [`LatencySample`]).
    pub latencies: Vec<u64>,
    /// Measured time, ns (shorter than configured when the stop rule ended the run).
    pub measured_ns: u64,
    /// Whether the stop rule ended the run.
    pub stopped_early: bool,
    /// What the stop rule's monitor saw.
    pub monitor: MonitorOutcome,
}

/// The verdicts of a run: throughput, schedule (every scheduled probe sent) and arrivals
/// (open loop), independence,
/// stationarity of the interval medians of `user.sched` (`intervals`), and the stop rule's
/// interval width on `sched` (the run's `user.sched` histogram) when one was set.
pub fn verdicts(
    cfg: &ProbeConfig,
    d: &CheckData,
    sched: &LatencyHistogram,
    intervals: &[&LatencyHistogram],
) -> Vec<Verdict> {
    let mut v = Vec::new();
    let target_pps = cfg.milli_pps as f64 / 1000.0;
    if cfg.mode == Mode::OpenLoop {
        v.push(match d.achieved_pps {
            Some(a) => selfcheck::throughput(a, target_pps, "pps"),
            None => selfcheck::throughput(f64::NAN, target_pps, "pps"),
        });
        v.push(selfcheck::schedule_sent(d.scheduled, d.unsent, "probes"));
        v.push(match cfg.arrivals {
            Arrivals::Poisson => selfcheck::poisson_arrivals(&d.gaps_ns),
            Arrivals::Constant => selfcheck::constant_arrivals(&d.gaps_ns, 1e9 / target_pps),
        });
    }
    v.push(selfcheck::independence(&d.latencies, WINDOW));
    let p50 = Percentile::LADDER[0];
    let medians: Vec<u64> = intervals
        .iter()
        .filter(|h| h.count() >= MIN_INTERVAL_SAMPLES)
        .map(|h| h.value_at(p50))
        .collect();
    v.push(selfcheck::stationarity(&medians));
    if let Some(t) = cfg.ci_width {
        v.push(selfcheck::ci_width(
            sched,
            t,
            DEFAULT_CONFIDENCE,
            StopReport {
                measured: Nanos(d.measured_ns),
                max: cfg.duration,
                stopped_early: d.stopped_early,
            },
        ));
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::SocketAddr;

    fn cfg() -> ProbeConfig {
        let to: SocketAddr = "127.0.0.1:7000".parse().unwrap();
        ProbeConfig::new(to)
    }

    #[test]
    fn the_send_sample_keeps_strided_gaps_within_its_capacity() {
        let mut c = cfg();
        c.milli_pps = 1_000_000_000; // 1 Mpps for 5 s: 5 000 000 sends
        let mut s = SendSample::new(&c);
        assert_eq!(s.stride, 2_500);
        let cap = s.gaps_raw.capacity();
        for k in 0..5_000_000u64 {
            s.record(1_000 * k, 1_000 * k + 3);
        }
        // the gap before send 0 is not one of the measured phase
        assert_eq!(s.gaps_raw.len(), GAP_CAP - 1);
        assert_eq!(s.gaps_raw.capacity(), cap, "never grew");
        assert!(s.gaps_raw.iter().all(|&g| g == 1_000));
        assert_eq!(
            (s.n, s.first_sched, s.last_sent),
            (5_000_000, 0, 4_999_999_003)
        );
    }

    #[test]
    fn latency_windows_are_consecutive_probes_spread_over_the_run() {
        let mut c = cfg();
        c.milli_pps = 100_000_000; // 100 kpps: 100 000 warm-up, 500 000 measured probes
        let mut s = LatencySample::new(&c);
        assert_eq!(s.offset, 100_000);
        // 245 blocks of 2048 over 16 windows: every 16th block
        assert_eq!(s.every, 16);
        for seq in 0..600_000u32 {
            s.record(seq, u64::from(seq));
        }
        let v = s.values();
        assert_eq!(v.len(), WINDOW * WINDOWS);
        // window 0 is probes 100 000.. 102 047, window 1 starts 16 blocks later
        assert_eq!(&v[..3], &[100_000, 100_001, 100_002]);
        assert_eq!(v[WINDOW - 1], 100_000 + WINDOW as u64 - 1);
        assert_eq!(v[WINDOW], 100_000 + 16 * WINDOW as u64);
        assert!(
            v.iter().all(|&x| x != MISSING),
            "all windows fall in the run"
        );
        // a probe outside every window leaves them unchanged
        let before = v.to_vec();
        s.record(100_000 + WINDOW as u32, 7);
        s.record(5, 7);
        assert_eq!(s.values(), &before[..]);
    }

    #[test]
    fn the_feed_hands_over_in_order_and_counts_what_it_cannot_take() {
        let f = Feed::new();
        for v in 0..(FEED_CAP as u64 + 5) {
            f.push(v);
        }
        assert_eq!(f.dropped.load(Ordering::Relaxed), 5);
        let mut got = Vec::new();
        f.drain(|v| got.push(v));
        assert_eq!(got.len(), FEED_CAP);
        assert!(got.iter().enumerate().all(|(i, &v)| v == i as u64));
        f.push(42);
        got.clear();
        f.drain(|v| got.push(v));
        assert_eq!(got, vec![42]);
    }
}
