//! When probes go: the open-loop schedule, and durations on the run's clock.

use super::config::{Arrivals, ProbeConfig};
use crate::rng::Rng;
use latlab_core::parse::Rate;
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
}

impl Schedule {
    /// The schedule of `cfg`.
    pub fn new(cfg: &ProbeConfig) -> Schedule {
        Schedule::of(cfg.arrivals, cfg.milli_pps, cfg.seed)
    }

    /// The schedule of `arrivals` at `milli_pps` thousandths of sends per second, seeded.
    pub fn of(arrivals: Arrivals, milli_pps: u64, seed: u64) -> Schedule {
        Schedule {
            arrivals,
            milli_pps: milli_pps.max(1),
            mean_gap_ns: 1e12 / milli_pps.max(1) as f64,
            rng: Rng::new(seed),
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
