//! The latency injector (`latlab net delay`): a software bump in the wire that forwards
//! every Ethernet frame between two interfaces after an added latency, in both directions,
//! preserving order, with a bounded queue whose overflows are counted.
//!
//! *Where Has My Time Gone?* (§1) used a NetFPGA latency gadget (700 ns base latency, 5 ns
//! granularity) because `sch_netem` "may not reliably introduce latency of less than
//! several tens of microseconds" — and netem is missing on many kernels. This is the same
//! element in software:
//!
//! - [`DelayQueue`] (this module) is the pure state machine: frames go in with their
//!   arrival time and leave at `arrival + delay`, never before, never out of order, with
//!   time passed in by the caller (nanoseconds in tests, TSC ticks in the engine, so the
//!   granularity is one TSC tick, well under 100 ns). When the queue is full the frame is
//!   dropped and counted: a constant delay `d` at `r` frames/s needs `d × r` slots.
//! - [`DelaySpec`] says how much: a constant, or a distribution (uniform, normal,
//!   exponential) sampled per frame by a seeded generator; with a distribution a frame
//!   never leaves before the one ahead of it (order is preserved, as on a wire).
//! - [`engine`] is the I/O: one pinned thread busy-polling two `AF_PACKET` sockets,
//!   measuring its own residence time (its base latency) and dispatch lateness.
//! - [`testbed`] builds client ⇄ delay ⇄ server namespaces and measures UDP round trips
//!   through them (for tests, `--compare-netem` and the where-time experiment).
//! - [`dist`] is the pure check that delayed round trips follow the base round trips
//!   convolved with the asked distribution (a Kolmogorov–Smirnov distance and its bound).

pub mod dist;
pub mod engine;
pub mod report;
pub mod sections;
pub mod testbed;

use latlab_core::parse::parse_duration;
use latlab_core::units::Nanos;
use serde::{Deserialize, Serialize};
use std::fmt;

/// How much latency to add to each frame.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum DelaySpec {
    /// Always `ns`.
    Constant {
        /// The delay, ns.
        ns: u64,
    },
    /// Uniform between `lo_ns` and `hi_ns`.
    Uniform {
        /// Lower bound, ns.
        lo_ns: u64,
        /// Upper bound, ns.
        hi_ns: u64,
    },
    /// Normal with `mean_ns` and `sd_ns`, clipped at 0.
    Normal {
        /// Mean, ns.
        mean_ns: u64,
        /// Standard deviation, ns.
        sd_ns: u64,
    },
    /// Exponential with `mean_ns`.
    Exponential {
        /// Mean, ns.
        mean_ns: u64,
    },
}

/// The accepted forms of `--delay`.
pub const DELAY_FORMS: &str =
    "a duration (20us, 1.5ms), uniform:LO,HI, normal:MEAN,SD or exp:MEAN, e.g. normal:20us,2us";

impl DelaySpec {
    /// Parses `20us`, `uniform:10us,30us`, `normal:20us,2us` or `exp:20us`.
    ///
    /// # Errors
    /// A message naming the accepted forms.
    pub fn parse(s: &str) -> Result<DelaySpec, String> {
        let bad = |why: String| format!("'{s}' is not a delay ({why}); expected {DELAY_FORMS}");
        let dur = |t: &str| {
            parse_duration(t.trim())
                .map(Nanos::get)
                .map_err(|e| bad(e.to_string()))
        };
        let two = |rest: &str| -> Result<(u64, u64), String> {
            let (a, b) = rest
                .split_once(',')
                .ok_or_else(|| bad("two comma-separated durations needed".into()))?;
            Ok((dur(a)?, dur(b)?))
        };
        let s = s.trim();
        if let Some(rest) = s.strip_prefix("uniform:") {
            let (lo_ns, hi_ns) = two(rest)?;
            if lo_ns > hi_ns {
                return Err(bad("LO exceeds HI".into()));
            }
            Ok(DelaySpec::Uniform { lo_ns, hi_ns })
        } else if let Some(rest) = s.strip_prefix("normal:") {
            let (mean_ns, sd_ns) = two(rest)?;
            Ok(DelaySpec::Normal { mean_ns, sd_ns })
        } else if let Some(rest) = s.strip_prefix("exp:") {
            Ok(DelaySpec::Exponential {
                mean_ns: dur(rest)?,
            })
        } else {
            Ok(DelaySpec::Constant { ns: dur(s)? })
        }
    }

    /// The mean delay, ns (for normal: before clipping at 0).
    pub fn mean_ns(&self) -> u64 {
        match *self {
            DelaySpec::Constant { ns } => ns,
            DelaySpec::Uniform { lo_ns, hi_ns } => lo_ns + (hi_ns - lo_ns) / 2,
            DelaySpec::Normal { mean_ns, .. } | DelaySpec::Exponential { mean_ns } => mean_ns,
        }
    }
}

impl fmt::Display for DelaySpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = |ns: u64| latlab_core::units::format_ns(ns as f64);
        match *self {
            DelaySpec::Constant { ns } => write!(f, "{}", d(ns)),
            DelaySpec::Uniform { lo_ns, hi_ns } => write!(f, "uniform:{},{}", d(lo_ns), d(hi_ns)),
            DelaySpec::Normal { mean_ns, sd_ns } => {
                write!(f, "normal:{},{}", d(mean_ns), d(sd_ns))
            }
            DelaySpec::Exponential { mean_ns } => write!(f, "exp:{}", d(mean_ns)),
        }
    }
}

/// Draws per-frame delays from a [`DelaySpec`] with a seeded xorshift64* generator (no
/// allocation, a few ns per draw).
#[derive(Clone, Debug)]
pub struct Sampler {
    spec: DelaySpec,
    state: u64,
}

impl Sampler {
    /// A sampler for `spec` seeded with `seed` (0 is replaced by a fixed non-zero seed).
    pub fn new(spec: DelaySpec, seed: u64) -> Sampler {
        Sampler {
            spec,
            state: if seed == 0 {
                0x9E37_79B9_7F4A_7C15
            } else {
                seed
            },
        }
    }

    fn next_u64(&mut self) -> u64 {
        let mut x = self.state;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.state = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in (0, 1].
    fn unit(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 1.0) / (1u64 << 53) as f64
    }

    /// The next delay, ns.
    pub fn sample(&mut self) -> u64 {
        match self.spec {
            DelaySpec::Constant { ns } => ns,
            DelaySpec::Uniform { lo_ns, hi_ns } => {
                let span = hi_ns - lo_ns;
                if span == 0 {
                    lo_ns
                } else {
                    lo_ns + self.next_u64() % (span + 1)
                }
            }
            DelaySpec::Normal { mean_ns, sd_ns } => {
                // Box–Muller.
                let (u1, u2) = (self.unit(), self.unit());
                let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
                (mean_ns as f64 + z * sd_ns as f64).max(0.0).round() as u64
            }
            DelaySpec::Exponential { mean_ns } => {
                (-(self.unit().ln()) * mean_ns as f64).round() as u64
            }
        }
    }
}

/// Counters of one queue (one direction).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueStats {
    /// Frames accepted into the queue.
    pub enqueued: u64,
    /// Frames taken out for sending.
    pub dequeued: u64,
    /// Frames dropped because the queue was full.
    pub dropped_full: u64,
    /// Frames dropped because they were larger than a slot.
    pub dropped_oversize: u64,
    /// The most frames ever queued at once.
    pub max_depth: u64,
}

/// What happened to a frame offered to the queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Push {
    /// Queued; leaves at this time.
    Queued {
        /// Release time (caller's units).
        release: u64,
    },
    /// Dropped: the queue is full.
    DroppedFull,
    /// Dropped: larger than a slot.
    DroppedOversize,
}

/// A frame due for sending.
#[derive(Debug, PartialEq, Eq)]
pub struct Due<'a> {
    /// The frame's bytes.
    pub frame: &'a [u8],
    /// When it arrived.
    pub arrival: u64,
    /// When it was due to leave (≥ arrival + its delay).
    pub release: u64,
}

/// A bounded FIFO of frames, each released no earlier than its arrival plus its delay and
/// never before the frame ahead of it. All memory is allocated by [`DelayQueue::new`].
/// Times are in the caller's units and must not go backwards.
#[derive(Debug)]
pub struct DelayQueue {
    slot_bytes: usize,
    data: Vec<u8>,
    lens: Vec<u32>,
    arrivals: Vec<u64>,
    releases: Vec<u64>,
    head: usize,
    len: usize,
    last_release: u64,
    stats: QueueStats,
}

impl DelayQueue {
    /// A queue of `capacity` frames of at most `slot_bytes` bytes each.
    ///
    /// # Panics
    /// When `capacity` or `slot_bytes` is 0.
    pub fn new(capacity: usize, slot_bytes: usize) -> DelayQueue {
        assert!(capacity > 0 && slot_bytes > 0, "empty delay queue");
        DelayQueue {
            slot_bytes,
            data: vec![0u8; capacity * slot_bytes],
            lens: vec![0; capacity],
            arrivals: vec![0; capacity],
            releases: vec![0; capacity],
            head: 0,
            len: 0,
            last_release: 0,
            stats: QueueStats::default(),
        }
    }

    /// Frames the queue can hold.
    pub fn capacity(&self) -> usize {
        self.lens.len()
    }

    /// Frames queued now.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The counters so far.
    pub fn stats(&self) -> QueueStats {
        self.stats
    }

    /// The largest frame a slot holds.
    pub fn slot_bytes(&self) -> usize {
        self.slot_bytes
    }

    /// The free slot the next frame goes into, for receiving straight into queue memory;
    /// `None` when full. Follow with [`DelayQueue::commit`].
    pub fn tail_slot(&mut self) -> Option<&mut [u8]> {
        if self.len == self.capacity() {
            return None;
        }
        let i = (self.head + self.len) % self.capacity();
        let s = self.slot_bytes;
        Some(&mut self.data[i * s..(i + 1) * s])
    }

    /// Enqueues the frame of `len` bytes written into [`DelayQueue::tail_slot`], arrived at
    /// `now`, to leave after `delay`. A `len` over the slot size is a truncated frame:
    /// dropped and counted.
    pub fn commit(&mut self, len: usize, now: u64, delay: u64) -> Push {
        if len > self.slot_bytes {
            self.stats.dropped_oversize += 1;
            return Push::DroppedOversize;
        }
        if self.len == self.capacity() {
            self.stats.dropped_full += 1;
            return Push::DroppedFull;
        }
        let i = (self.head + self.len) % self.capacity();
        let release = now.saturating_add(delay).max(self.last_release);
        self.lens[i] = len as u32;
        self.arrivals[i] = now;
        self.releases[i] = release;
        self.last_release = release;
        self.len += 1;
        self.stats.enqueued += 1;
        self.stats.max_depth = self.stats.max_depth.max(self.len as u64);
        Push::Queued { release }
    }

    /// Counts a frame that could not even be received into the queue because it was full.
    pub fn count_full_drop(&mut self) {
        self.stats.dropped_full += 1;
    }

    /// Copies `frame` in and enqueues it (see [`DelayQueue::commit`]).
    pub fn push(&mut self, frame: &[u8], now: u64, delay: u64) -> Push {
        if frame.len() > self.slot_bytes {
            self.stats.dropped_oversize += 1;
            return Push::DroppedOversize;
        }
        match self.tail_slot() {
            Some(slot) => slot[..frame.len()].copy_from_slice(frame),
            None => {
                self.stats.dropped_full += 1;
                return Push::DroppedFull;
            }
        }
        self.commit(frame.len(), now, delay)
    }

    /// When the head frame is due, if any.
    pub fn next_release(&self) -> Option<u64> {
        (self.len > 0).then(|| self.releases[self.head])
    }

    /// The head frame if it is due at `now` (not removed: call [`DelayQueue::pop`] once
    /// it was sent, or dropped).
    pub fn peek_due(&self, now: u64) -> Option<Due<'_>> {
        if self.len == 0 || self.releases[self.head] > now {
            return None;
        }
        let i = self.head;
        let s = self.slot_bytes;
        Some(Due {
            frame: &self.data[i * s..i * s + self.lens[i] as usize],
            arrival: self.arrivals[i],
            release: self.releases[i],
        })
    }

    /// Removes the head frame.
    pub fn pop(&mut self) {
        if self.len > 0 {
            self.head = (self.head + 1) % self.capacity();
            self.len -= 1;
            self.stats.dequeued += 1;
        }
    }
}

/// The smallest queue capacity (frames) that holds `delay_ns` of traffic at `rate_pps`
/// frames per second without drops: `ceil(delay × rate)`, at least 1.
pub fn capacity_needed(delay_ns: u64, rate_pps: u64) -> u64 {
    (u128::from(delay_ns) * u128::from(rate_pps))
        .div_ceil(1_000_000_000)
        .max(1) as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parse_forms() {
        assert_eq!(
            DelaySpec::parse("20us"),
            Ok(DelaySpec::Constant { ns: 20_000 })
        );
        assert_eq!(
            DelaySpec::parse("150ns"),
            Ok(DelaySpec::Constant { ns: 150 })
        );
        assert_eq!(
            DelaySpec::parse("uniform:10us,30us"),
            Ok(DelaySpec::Uniform {
                lo_ns: 10_000,
                hi_ns: 30_000
            })
        );
        assert_eq!(
            DelaySpec::parse("normal:20us,2us"),
            Ok(DelaySpec::Normal {
                mean_ns: 20_000,
                sd_ns: 2_000
            })
        );
        assert_eq!(
            DelaySpec::parse("exp:5us"),
            Ok(DelaySpec::Exponential { mean_ns: 5_000 })
        );
        for bad in [
            "",
            "20",
            "uniform:30us,10us",
            "normal:20us",
            "poisson:1us",
            "exp:x",
        ] {
            let e = DelaySpec::parse(bad).unwrap_err();
            assert!(e.contains("normal:20us,2us"), "{bad}: {e}");
        }
        let s = DelaySpec::parse("uniform:10us,30us").unwrap();
        assert_eq!(DelaySpec::parse(&s.to_string()), Ok(s));
    }

    #[test]
    fn constant_delay_is_exact_to_the_unit() {
        let mut q = DelayQueue::new(4, 64);
        assert_eq!(
            q.push(b"a", 1_000, 20_000),
            Push::Queued { release: 21_000 }
        );
        assert!(q.peek_due(20_999).is_none());
        let d = q.peek_due(21_000).unwrap();
        assert_eq!((d.frame, d.arrival, d.release), (&b"a"[..], 1_000, 21_000));
        q.pop();
        assert!(q.is_empty());
    }

    #[test]
    fn drops_when_delay_times_rate_exceeds_capacity() {
        // 1 Mpps for 100 us of delay needs 100 slots; give it 50.
        let (delay, gap) = (100_000u64, 1_000u64);
        assert_eq!(capacity_needed(delay, 1_000_000), 100);
        let mut q = DelayQueue::new(50, 64);
        let mut sent = 0u64;
        for k in 0..1_000u64 {
            let now = k * gap;
            while q.peek_due(now).is_some() {
                q.pop();
                sent += 1;
            }
            q.push(&k.to_be_bytes(), now, delay);
        }
        let s = q.stats();
        assert!(s.dropped_full > 0);
        assert_eq!(s.enqueued + s.dropped_full, 1_000);
        assert_eq!(s.dequeued, sent);
        assert_eq!(s.max_depth, 50);
        // With enough room nothing is dropped.
        let mut q = DelayQueue::new(101, 64);
        for k in 0..1_000u64 {
            let now = k * gap;
            while q.peek_due(now).is_some() {
                q.pop();
            }
            q.push(&k.to_be_bytes(), now, delay);
        }
        assert_eq!(q.stats().dropped_full, 0);
    }

    #[test]
    fn oversize_frames_are_counted() {
        let mut q = DelayQueue::new(2, 4);
        assert_eq!(q.push(b"12345", 0, 0), Push::DroppedOversize);
        q.tail_slot().unwrap();
        assert_eq!(q.commit(9_000, 0, 0), Push::DroppedOversize);
        assert_eq!(q.stats().dropped_oversize, 2);
        assert!(q.is_empty());
    }

    #[test]
    fn samplers_have_the_right_mean_and_bounds() {
        let n = 200_000u64;
        for (spec, tol) in [
            (
                DelaySpec::Uniform {
                    lo_ns: 10_000,
                    hi_ns: 30_000,
                },
                200.0,
            ),
            (
                DelaySpec::Normal {
                    mean_ns: 20_000,
                    sd_ns: 2_000,
                },
                100.0,
            ),
            (DelaySpec::Exponential { mean_ns: 20_000 }, 300.0),
        ] {
            let mut s = Sampler::new(spec, 42);
            let mut sum = 0u128;
            for _ in 0..n {
                let v = s.sample();
                if let DelaySpec::Uniform { lo_ns, hi_ns } = spec {
                    assert!((lo_ns..=hi_ns).contains(&v));
                }
                sum += u128::from(v);
            }
            let mean = sum as f64 / n as f64;
            assert!((mean - 20_000.0).abs() < tol, "{spec}: mean {mean}");
        }
        let mut s = Sampler::new(DelaySpec::Constant { ns: 7 }, 1);
        assert_eq!(s.sample(), 7);
    }

    proptest! {
        /// Whatever the arrivals and delays: frames leave in arrival order, never before
        /// arrival + delay, never before the frame ahead; everything offered is either
        /// sent or counted as dropped, and the run ends with an empty queue.
        #[test]
        fn order_delay_and_accounting(
            gaps in proptest::collection::vec(0u64..5_000, 1..400),
            delays in proptest::collection::vec(0u64..20_000, 1..400),
            cap in 1usize..64,
        ) {
            let mut q = DelayQueue::new(cap, 16);
            let mut now = 0u64;
            let mut out: Vec<(u64, u64, u64)> = Vec::new(); // (seq, arrival, left)
            let mut delay_of = Vec::new();
            let mut dropped = 0u64;
            for (k, g) in gaps.iter().enumerate() {
                now += g;
                while let Some(d) = q.peek_due(now) {
                    let seq = u64::from_be_bytes(d.frame[..8].try_into().unwrap());
                    out.push((seq, d.arrival, now));
                    q.pop();
                }
                let delay = delays[k % delays.len()];
                delay_of.push(delay);
                match q.push(&(k as u64).to_be_bytes(), now, delay) {
                    Push::Queued { release } => prop_assert!(release >= now + delay),
                    Push::DroppedFull => dropped += 1,
                    Push::DroppedOversize => prop_assert!(false),
                }
            }
            // Drain: jump to each release.
            while let Some(r) = q.next_release() {
                now = now.max(r);
                let d = q.peek_due(now).unwrap();
                let seq = u64::from_be_bytes(d.frame[..8].try_into().unwrap());
                out.push((seq, d.arrival, now));
                q.pop();
            }
            prop_assert!(q.is_empty());
            let s = q.stats();
            prop_assert_eq!(s.dropped_full, dropped);
            prop_assert_eq!(s.enqueued + s.dropped_full, gaps.len() as u64);
            prop_assert_eq!(s.dequeued, out.len() as u64);
            for w in out.windows(2) {
                prop_assert!(w[0].0 < w[1].0, "order: {:?}", w);
                prop_assert!(w[0].2 <= w[1].2);
            }
            for (seq, arrival, left) in &out {
                prop_assert!(*left >= arrival + delay_of[*seq as usize]);
            }
        }

        /// A constant delay is exact: each frame is due at exactly arrival + delay.
        #[test]
        fn constant_delay_exact(
            gaps in proptest::collection::vec(1u64..10_000, 1..200),
            delay in 0u64..1_000_000,
        ) {
            let mut q = DelayQueue::new(gaps.len(), 8);
            let mut now = 0;
            for g in &gaps {
                now += g;
                prop_assert_eq!(q.push(&[0u8; 8], now, delay), Push::Queued { release: now + delay });
            }
            while let Some(r) = q.next_release() {
                prop_assert!(q.peek_due(r - 1).is_none() || r == 0);
                let d = q.peek_due(r).unwrap();
                prop_assert_eq!(d.release, d.arrival + delay);
                q.pop();
            }
        }
    }
}
