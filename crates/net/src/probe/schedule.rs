//! When probes go: the open-loop schedule, and durations on the run's clock.

use super::config::{Arrivals, ProbeConfig};
use crate::rng::Rng;
use latlab_core::units::Nanos;
use latlab_sys::tsc::{Clock, Timesource};

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
