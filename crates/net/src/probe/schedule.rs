//! When probes go: the open-loop schedule, and durations on the run's clock.

use super::config::{Arrivals, ProbeConfig};
use crate::rng::Rng;
use latlab_core::units::Nanos;
use latlab_sys::tsc::{Clock, Timesource};

/// How late a scheduled send may still go out after its schedule has ended: an open-loop
/// run stops sending this long after `warm-up + duration` (100 ms), whatever its rate, and
/// counts what the schedule still held as unsent. A generator that keeps up never needs it;
/// it is longer than a real-time throttling window (50 ms) or a stall on a loaded host, so
/// that the last sends of a generator held up by one are sent late, not dropped.
pub const SEND_GRACE: Nanos = Nanos::from_millis(100);

/// Converts ns to raw clock units.
pub(crate) fn ns_to_raw(clock: &Clock, ns: u64) -> u64 {
    match clock.timesource() {
        Timesource::Tsc(rate) => rate.to_ticks(Nanos(ns)).0,
        Timesource::Monotonic => ns,
    }
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
    /// Constant arrivals: `k · 10¹² = q · milli_pps + r`, stepped by `step_q`/`step_r`
    /// (10¹² = step_q · milli_pps + step_r), so the next offset `q` needs no division.
    q: u64,
    r: u64,
    step_q: u64,
    step_r: u64,
}

impl Schedule {
    /// The schedule of `cfg`.
    pub fn new(cfg: &ProbeConfig) -> Schedule {
        Schedule::of(cfg.arrivals, cfg.milli_pps, cfg.seed)
    }

    /// The schedule of `arrivals` at `milli_pps` thousandths of sends per second, seeded.
    pub fn of(arrivals: Arrivals, milli_pps: u64, seed: u64) -> Schedule {
        let m = milli_pps.max(1);
        Schedule {
            arrivals,
            milli_pps: m,
            mean_gap_ns: 1e12 / m as f64,
            rng: Rng::new(seed),
            k: 0,
            acc: 0.0,
            q: 0,
            r: 0,
            step_q: 1_000_000_000_000 / m,
            step_r: 1_000_000_000_000 % m,
        }
    }

    /// The offset (ns) of the next probe: for constant arrivals exactly
    /// [`latlab_core::parse::Rate::offset_of`]`(milli_pps, k)`, kept as a quotient and remainder so that a
    /// generator at Mpps does no 128-bit division per probe.
    #[inline]
    pub fn next_offset_ns(&mut self) -> u64 {
        let k = self.k;
        self.k += 1;
        match self.arrivals {
            Arrivals::Constant => {
                let q = self.q;
                self.q += self.step_q;
                self.r += self.step_r;
                if self.r >= self.milli_pps {
                    self.r -= self.milli_pps;
                    self.q += 1;
                }
                q
            }
            Arrivals::Poisson => {
                if k > 0 {
                    self.acc += self.rng.exponential(self.mean_gap_ns);
                }
                self.acc as u64
            }
        }
    }

    /// Steps over the rest of the schedule without sending: how many of its next offsets
    /// fall before `end_ns`, counting at most `max` (a run's bound on its sends). What a
    /// run that stopped at its deadline still had to send.
    pub fn count_before(&mut self, end_ns: u64, max: u64) -> u64 {
        let mut n = 0;
        while n < max && self.next_offset_ns() < end_ns {
            n += 1;
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use latlab_core::parse::Rate;
    use proptest::prelude::*;

    proptest! {
        /// The stepped offsets are exactly `offset_of` (rates from 1 mpps to 100 Mpps,
        /// from any probe on).
        #[test]
        fn constant_offsets_are_exact(milli_pps in 1u64..100_000_000_000, n in 1usize..2000) {
            let mut s = Schedule::of(Arrivals::Constant, milli_pps, 1);
            for k in 0..n as u64 {
                prop_assert_eq!(s.next_offset_ns(), Rate::offset_of(milli_pps, k).get());
            }
        }
    }

    /// What a run stopped after `k` sends still had: the schedule's count before the end,
    /// less `k`, for either arrival process; and never more than the bound it is given.
    #[test]
    fn the_rest_of_a_schedule_is_counted_without_sending() {
        // 20 Mpps for 2 s: 40 000 000 offsets before the end
        let end = 2_000_000_000;
        let mut whole = Schedule::of(Arrivals::Constant, 20_000_000_000, 1);
        assert_eq!(whole.count_before(end, u64::MAX), 40_000_000);
        for k in [0u64, 1, 834_567, 39_999_999, 40_000_000] {
            let mut s = Schedule::of(Arrivals::Constant, 20_000_000_000, 1);
            for _ in 0..k {
                s.next_offset_ns();
            }
            assert_eq!(s.count_before(end, u64::MAX), 40_000_000 - k, "{k}");
        }
        let mut s = Schedule::of(Arrivals::Constant, 20_000_000_000, 1);
        assert_eq!(s.count_before(end, 1_000), 1_000, "bounded");
        // Poisson at 1 Mpps: the sends before the stop and the rest add up to the schedule
        let n = Schedule::of(Arrivals::Poisson, 1_000_000_000, 7).count_before(end, u64::MAX);
        assert!((1_990_000..2_010_000).contains(&n), "{n}");
        let mut s = Schedule::of(Arrivals::Poisson, 1_000_000_000, 7);
        let mut sent = 0;
        while s.next_offset_ns() < 300_000_000 {
            sent += 1;
        }
        // the offset that ended the loop was scheduled and not sent
        assert_eq!(sent + 1 + s.count_before(end, u64::MAX), n);
    }

    #[test]
    fn constant_offsets_stay_exact_far_into_a_run() {
        // 3 Mpps (a gap of 333.33 ns) for 10^7 probes: the remainder carries every third
        for m in [3_000_000_000u64, 1_490_000_000, 7_000] {
            let mut s = Schedule::of(Arrivals::Constant, m, 1);
            let mut last = 0;
            for _ in 0..10_000_000u64 {
                last = s.next_offset_ns();
            }
            assert_eq!(last, Rate::offset_of(m, 9_999_999).get(), "{m}");
        }
    }
}
