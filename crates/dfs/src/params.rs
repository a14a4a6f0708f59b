//! Sizes of the model and the DFS parameters. Defaults follow Table I of the paper
//! (ts_per_intvl 10,000, hist_cnt 10, ssu_TH 10 %, ssu_pct 5 %) and §V-B (64 KiB mts,
//! 16 mts of compute buffer per input connection).

use serde::{Deserialize, Serialize};

/// The paper's contribution (micro-time-slice) size, §V-B: 64 KiB.
pub const DEFAULT_MTS_BYTES: u64 = 64 * 1024;

/// Input and compute node counts and buffer sizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Topology {
    /// Number of input nodes (I).
    pub inputs: usize,
    /// Number of compute nodes (C).
    pub computes: usize,
    /// Size of one micro-time-slice (one contribution) in bytes.
    pub mts_bytes: u64,
    /// Ring-buffer slots (mts) per input connection at each compute node: the credits
    /// (tickets) an input holds towards one compute node.
    pub slots_per_input: u32,
}

impl Default for Topology {
    fn default() -> Self {
        Topology {
            inputs: 4,
            computes: 4,
            mts_bytes: DEFAULT_MTS_BYTES,
            slots_per_input: 16,
        }
    }
}

/// Why a configuration is rejected.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ParamError {
    /// A count or size that must be positive is zero (named by its flag).
    #[error("{0} must be at least 1")]
    Zero(&'static str),
    /// A setting this runtime does not support (the message names the flag).
    #[error("{0}")]
    Unsupported(&'static str),
    /// A percentage outside its range.
    #[error("{name} must be in {lo}..={hi} (got {value})")]
    Range {
        /// The flag that sets it.
        name: &'static str,
        /// Value given.
        value: f64,
        /// Lowest accepted.
        lo: f64,
        /// Highest accepted.
        hi: f64,
    },
}

impl Topology {
    /// Checks that every count is positive.
    pub fn validate(&self) -> Result<(), ParamError> {
        positive(&[
            ("--inputs", self.inputs as u64),
            ("--computes", self.computes as u64),
            ("--mts-size", self.mts_bytes),
            ("--slots", self.slots_per_input.into()),
        ])
    }
}

/// The largest clock drift a configuration may ask for, in ppm (1 %). A node's clock must
/// keep running forward (a drift of −10⁶ ppm stops it, and beyond that it runs backwards, so
/// a simulated node would wait forever); real oscillators stay within tens of ppm.
pub const MAX_DRIFT_PPM: f64 = 10_000.0;

/// [`ParamError::Range`] naming `name` unless `value` is finite and in `lo..=hi`.
pub fn in_range(name: &'static str, value: f64, lo: f64, hi: f64) -> Result<(), ParamError> {
    if value.is_finite() && value >= lo && value <= hi {
        Ok(())
    } else {
        Err(ParamError::Range {
            name,
            value,
            lo,
            hi,
        })
    }
}

/// [`ParamError::Zero`] naming the first flag whose count is 0.
fn positive(counts: &[(&'static str, u64)]) -> Result<(), ParamError> {
    match counts.iter().find(|(_, n)| *n == 0) {
        Some((flag, _)) => Err(ParamError::Zero(flag)),
        None => Ok(()),
    }
}

/// Which statistic of Eq. 1 gates the staged speed-up.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SsuCriterion {
    /// The variance *between* the proposed and the measured durations, as §III-B's text
    /// has it ("the average variance between the proposed and the measured meta-data …
    /// a lower variance indicates synchronized nodes and a relaxed network"): the mean of
    /// the squared deviations from the proposal, each in percent of it, = VAR_j + μ_j²
    /// (in %²) ≤ ssu_TH. A steady overrun counts, so a network that delivers less than
    /// proposed stops the speed-up.
    MeanSquare,
    /// Eq. 1 as printed: VAR_j ≤ ssu_TH, the spread of the deviations about their own
    /// mean μ_j (in %²). Blind to a steady overrun: intervals that all end 5 % late have
    /// VAR_j = 0 and keep being sped up.
    Variance,
    /// The mean deviation μ_j (in percent) ≤ ssu_TH, closer to the authors' code.
    MeanDeviation,
}

/// DFS parameters (Table I plus the θ acknowledgement threshold).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct DfsParams {
    /// Time-slices per interval (ts_per_intvl); an interval has
    /// `max(1, ts_per_intvl / C)` rounds of C time-slices.
    pub ts_per_intvl: u64,
    /// Length of the history the proposer and SSU look at (hist_cnt), in intervals.
    pub hist_cnt: usize,
    /// Speed-up threshold ssu_TH in percent (see [`SsuCriterion`]).
    pub ssu_th: f64,
    /// Speed-up amount ssu_pct in percent of the interval duration.
    pub ssu_pct: f64,
    /// Statistic compared against ssu_TH.
    pub ssu_criterion: SsuCriterion,
    /// θ: fraction of an interval's contributions (in percent) that must be acknowledged
    /// before the Input Engine starts the next interval. The paper leaves it open; the
    /// authors' 2019 code uses 70 %.
    pub theta_pct: f64,
}

impl Default for DfsParams {
    fn default() -> Self {
        DfsParams {
            ts_per_intvl: 10_000,
            hist_cnt: 10,
            ssu_th: 10.0,
            ssu_pct: 5.0,
            ssu_criterion: SsuCriterion::MeanSquare,
            theta_pct: 70.0,
        }
    }
}

impl DfsParams {
    /// Checks ranges.
    pub fn validate(&self) -> Result<(), ParamError> {
        positive(&[
            ("--ts-per-interval", self.ts_per_intvl),
            ("--hist-cnt", self.hist_cnt as u64),
        ])?;
        in_range("--ssu-th", self.ssu_th, 0.0, 1e6)?;
        in_range("--ssu-pct", self.ssu_pct, 0.0, 99.0)?;
        in_range("--theta", self.theta_pct, 0.0, 100.0)?;
        Ok(())
    }

    /// Rounds per interval for `computes` compute nodes: `max(1, ts_per_intvl / C)`.
    pub fn rounds(&self, computes: usize) -> u64 {
        (self.ts_per_intvl / computes as u64).max(1)
    }

    /// Time-slices per interval for `computes` compute nodes (a whole number of rounds).
    pub fn interval_len(&self, computes: usize) -> u64 {
        self.rounds(computes) * computes as u64
    }

    /// Contributions (of one input) that must be acknowledged before the next interval
    /// may start: `ceil(θ · n / 100)`.
    pub fn theta_count(&self, n: u64) -> u64 {
        ((self.theta_pct / 100.0) * n as f64).ceil() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_one_defaults() {
        let p = DfsParams::default();
        assert_eq!(p.ts_per_intvl, 10_000);
        assert_eq!(p.hist_cnt, 10);
        assert_eq!(p.ssu_th, 10.0);
        assert_eq!(p.ssu_pct, 5.0);
        p.validate().unwrap();
    }

    #[test]
    fn rounds_are_whole_and_at_least_one() {
        let p = DfsParams::default();
        // 10,000 / 192 = 52 rounds of 192 = 9,984 time-slices
        assert_eq!(p.rounds(192), 52);
        assert_eq!(p.interval_len(192), 9_984);
        let small = DfsParams {
            ts_per_intvl: 3,
            ..p
        };
        assert_eq!(small.rounds(4), 1);
        assert_eq!(small.interval_len(4), 4);
        assert_eq!(p.theta_count(10), 7);
        assert_eq!(p.theta_count(9), 7); // 6.3 -> 7
    }

    #[test]
    fn rejects_zero_and_out_of_range() {
        let t = Topology {
            computes: 0,
            ..Topology::default()
        };
        assert_eq!(t.validate(), Err(ParamError::Zero("--computes")));
        let p = DfsParams {
            theta_pct: 101.0,
            ..DfsParams::default()
        };
        assert!(p.validate().is_err());
    }
}

/// How inputs send.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// FLESnet without DFS: send whenever credits allow, in fixed order.
    BestEffort,
    /// The Data-Flow Scheduler.
    Dfs,
    /// FLESnet today: a central time-slice manager assigns each time-slice to a builder
    /// with room or discards it ([`crate::tsm`]; simulator only).
    Flesnet,
}

impl Mode {
    /// Short name used in result files and tables.
    pub fn name(self) -> &'static str {
        match self {
            Mode::BestEffort => "best-effort",
            Mode::Dfs => "dfs",
            Mode::Flesnet => "flesnet",
        }
    }
}
