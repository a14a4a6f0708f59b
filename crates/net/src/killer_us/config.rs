//! killer-us's settings and their defaults: what the command line asks
//! ([`KillerUsAsk`]), resolved into a [`KillerUsConfig`] (60 s runs after a 10 s warm-up;
//! with `--quick`, 5 s runs stretched up to 20 s for p99.99 within a 2-minute budget; a
//! 20 kpps ceiling for the rate trials; loopback without root).

use latlab_core::units::Nanos;
use serde::{Deserialize, Serialize};

/// Measured duration and warm-up of each run by default.
pub const DURATION: Nanos = Nanos::from_secs(60);
/// Warm-up of each run by default.
pub const WARMUP: Nanos = Nanos::from_secs(10);
/// Measured duration of each run with `--quick`, before the rate stretches it.
pub const QUICK_DURATION: Nanos = Nanos::from_secs(5);
/// Warm-up of each run with `--quick`.
pub const QUICK_WARMUP: Nanos = Nanos::from_millis(500);
/// The longest a `--quick` run is stretched to, for enough samples for p99.99.
pub const QUICK_DURATION_CAP: Nanos = Nanos::from_secs(20);
/// `--quick`'s budget for the whole experiment: under 2 minutes.
pub const QUICK_BUDGET: Nanos = Nanos(120_000_000_000);
/// The rate trials' ceiling without `--rate`, thousandths of pps (20 kpps).
pub const CEILING_MILLI_PPS: u64 = 20_000_000;

/// The note a run without root records: why it is on loopback and what that loses.
pub const NOT_ROOT_NOTE: &str = "not root: the testbed cannot be built, so this runs on loopback with a reflector. Lost: the one-way path over veth pairs between separate namespaces (the NF shares the host's loopback and stack with the generator, and latencies are round trips)";

/// What the command line asks of the experiment, before the defaults.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KillerUsAsk {
    /// `--quick`: the whole experiment within [`QUICK_BUDGET`].
    pub quick: bool,
    /// `--duration`: measured duration per run (overrides `--quick`'s budget).
    pub duration: Option<Nanos>,
    /// `--rate`, thousandths of pps: fixed, not tried (`None`: trials up to
    /// [`CEILING_MILLI_PPS`]).
    pub milli_pps: Option<u64>,
    /// `--loopback`.
    pub loopback: bool,
    /// `--quiet`.
    pub quiet: bool,
    /// Not `--no-explain`.
    pub explain: bool,
}

/// Experiment settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KillerUsConfig {
    /// Measured duration per run.
    pub duration: Nanos,
    /// Warm-up per run.
    pub warmup: Nanos,
    /// Probe rate, milli-pps: the rate used, or with `fit_rate` the highest one tried.
    pub milli_pps: u64,
    /// Choose the rate by trials before the ladder ([`super::pace`]): the highest rate up
    /// to `milli_pps` at which the generator keeps its schedule on this host.
    #[serde(default)]
    pub fit_rate: bool,
    /// Stretch `duration` up to this, for enough samples for p99.99 at the chosen rate
    /// (`--quick`).
    #[serde(default)]
    pub duration_cap: Option<Nanos>,
    /// The whole experiment's time (`--quick`: 2 minutes): once the host is fitted, the
    /// runs are shortened so that all of them fit in what is left, and a run whose
    /// generator fell behind is repeated only while the budget lasts. `None`: no budget.
    #[serde(default)]
    pub budget: Option<Nanos>,
    /// Reflector on loopback instead of the testbed.
    pub loopback: bool,
    /// No progress output.
    pub quiet: bool,
    /// Notes to record (e.g. why loopback was used).
    pub notes: Vec<String>,
    /// Each rung's probe attributes its samples above p99 (`--explain`; on by default as
    /// root, absent in older files: off).
    #[serde(default)]
    pub explain: crate::explain::ExplainSpec,
}

impl KillerUsConfig {
    /// Resolves `ask` with the defaults; without `root` the experiment runs on loopback
    /// (its notes say what that loses) and attributes no tails. Pure.
    pub fn resolve(ask: KillerUsAsk, root: bool) -> KillerUsConfig {
        let (duration, warmup) = if ask.quick {
            (QUICK_DURATION, QUICK_WARMUP)
        } else {
            (DURATION, WARMUP)
        };
        let budgeted = ask.quick && ask.duration.is_none();
        let mut notes = Vec::new();
        if !ask.loopback && !root {
            notes.push(NOT_ROOT_NOTE.to_string());
        }
        KillerUsConfig {
            duration: ask.duration.unwrap_or(duration),
            duration_cap: budgeted.then_some(QUICK_DURATION_CAP),
            budget: budgeted.then_some(QUICK_BUDGET),
            warmup,
            milli_pps: ask.milli_pps.unwrap_or(CEILING_MILLI_PPS),
            fit_rate: ask.milli_pps.is_none(),
            loopback: ask.loopback || !root,
            quiet: ask.quiet,
            notes,
            // on by default where kernel events can be had (root)
            explain: crate::explain::ExplainSpec {
                enabled: ask.explain && root,
                above: None,
                all_events: false,
                tracefs: false,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quick_runs_are_budgeted_unless_a_duration_is_given() {
        let quick = KillerUsAsk {
            quick: true,
            explain: true,
            ..Default::default()
        };
        let c = KillerUsConfig::resolve(quick, true);
        assert_eq!((c.duration, c.warmup), (QUICK_DURATION, QUICK_WARMUP));
        assert_eq!(
            (c.duration_cap, c.budget),
            (Some(QUICK_DURATION_CAP), Some(QUICK_BUDGET))
        );
        assert!(c.fit_rate && c.explain.enabled && !c.loopback && c.notes.is_empty());
        assert_eq!(c.milli_pps, CEILING_MILLI_PPS);
        let d = Nanos::from_secs(3);
        let c = KillerUsConfig::resolve(
            KillerUsAsk {
                duration: Some(d),
                milli_pps: Some(2_000_000),
                ..quick
            },
            true,
        );
        assert_eq!((c.duration, c.duration_cap, c.budget), (d, None, None));
        assert_eq!((c.milli_pps, c.fit_rate), (2_000_000, false));
        let c = KillerUsConfig::resolve(KillerUsAsk::default(), true);
        assert_eq!((c.duration, c.warmup, c.budget), (DURATION, WARMUP, None));
    }

    #[test]
    fn without_root_it_runs_on_loopback_and_says_so() {
        let ask = KillerUsAsk {
            explain: true,
            ..Default::default()
        };
        let c = KillerUsConfig::resolve(ask, false);
        assert!(c.loopback && !c.explain.enabled);
        assert_eq!(c.notes, vec![NOT_ROOT_NOTE.to_string()]);
        // asked for loopback: nothing is lost, nothing to say
        let c = KillerUsConfig::resolve(
            KillerUsAsk {
                loopback: true,
                ..ask
            },
            false,
        );
        assert!(c.loopback && c.notes.is_empty());
    }
}
