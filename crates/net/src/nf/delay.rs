//! The added processing time of a network function ([`DelaySpec`], `--delay`): the
//! ground truth `latlab net calibrate` injects, precomputed as clock ticks.

use crate::rng::Rng;
use latlab_sys::tsc::Clock;
use serde::{Deserialize, Serialize};

/// An added processing time per packet, busy-waited on the TSC.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum DelaySpec {
    /// No added delay.
    None,
    /// Always this long.
    Constant {
        /// The delay in ns.
        ns: u64,
    },
    /// Exponentially distributed with this mean.
    Exponential {
        /// Mean in ns.
        mean_ns: u64,
    },
    /// Uniform between two bounds.
    Uniform {
        /// Lower bound in ns.
        low_ns: u64,
        /// Upper bound in ns.
        high_ns: u64,
    },
}

/// The accepted forms of `--delay`.
pub const DELAY_FORMS: &str =
    "0, a duration (10us), exp:MEAN (exp:10us) or uniform:LOW-HIGH (uniform:5us-15us)";

impl DelaySpec {
    /// Parses `--delay` values (see [`DELAY_FORMS`]).
    pub fn parse(s: &str) -> Result<DelaySpec, String> {
        let bad =
            |detail: String| format!("'{s}' is not a delay ({detail}); accepted: {DELAY_FORMS}");
        let d = |x: &str| {
            latlab_core::parse::parse_duration(x.trim())
                .map(|n| n.get())
                .map_err(|e| bad(e.to_string()))
        };
        let s_t = s.trim();
        if s_t == "0" || s_t.is_empty() {
            return Ok(DelaySpec::None);
        }
        if let Some(m) = s_t.strip_prefix("exp:") {
            return Ok(DelaySpec::Exponential { mean_ns: d(m)? });
        }
        if let Some(r) = s_t.strip_prefix("uniform:") {
            let (lo, hi) = r
                .split_once('-')
                .ok_or_else(|| bad("uniform needs LOW-HIGH".into()))?;
            let (low_ns, high_ns) = (d(lo)?, d(hi)?);
            if low_ns > high_ns {
                return Err(bad("LOW is above HIGH".into()));
            }
            return Ok(DelaySpec::Uniform { low_ns, high_ns });
        }
        Ok(DelaySpec::constant(d(s_t)?))
    }

    /// A constant delay of `ns` ([`DelaySpec::None`] for 0).
    pub fn constant(ns: u64) -> DelaySpec {
        if ns == 0 {
            DelaySpec::None
        } else {
            DelaySpec::Constant { ns }
        }
    }

    /// Human form, as accepted by [`DelaySpec::parse`].
    pub fn describe(&self) -> String {
        let f = |n: u64| latlab_core::units::format_ns(n as f64);
        match *self {
            DelaySpec::None => "0".into(),
            DelaySpec::Constant { ns } => f(ns),
            DelaySpec::Exponential { mean_ns } => format!("exp:{}", f(mean_ns)),
            DelaySpec::Uniform { low_ns, high_ns } => {
                format!("uniform:{}-{}", f(low_ns), f(high_ns))
            }
        }
    }

    /// The mean added delay in ns.
    pub fn mean_ns(&self) -> f64 {
        match *self {
            DelaySpec::None => 0.0,
            DelaySpec::Constant { ns } => ns as f64,
            DelaySpec::Exponential { mean_ns } => mean_ns as f64,
            DelaySpec::Uniform { low_ns, high_ns } => (low_ns + high_ns) as f64 / 2.0,
        }
    }

    /// A table of `n` draws converted to clock ticks, precomputed so that the hot path
    /// only indexes it. Empty for [`DelaySpec::None`].
    pub fn ticks_table(&self, clock: &Clock, n: usize, seed: u64) -> Vec<u64> {
        let to_ticks = |ns: f64| -> u64 {
            match clock.timesource() {
                latlab_sys::tsc::Timesource::Tsc(rate) => {
                    (ns * rate.hz() as f64 / 1e9).round() as u64
                }
                latlab_sys::tsc::Timesource::Monotonic => ns.round() as u64,
            }
        };
        let mut r = Rng::new(seed);
        match *self {
            DelaySpec::None => Vec::new(),
            DelaySpec::Constant { ns } => vec![to_ticks(ns as f64)],
            DelaySpec::Exponential { mean_ns } => (0..n)
                .map(|_| to_ticks(r.exponential(mean_ns as f64)))
                .collect(),
            DelaySpec::Uniform { low_ns, high_ns } => (0..n)
                .map(|_| {
                    let u = r.unit_open0();
                    to_ticks(low_ns as f64 + u * (high_ns - low_ns) as f64)
                })
                .collect(),
        }
    }
}
