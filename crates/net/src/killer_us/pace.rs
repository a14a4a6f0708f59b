//! The pure rules of killer-us's host fit (its `fit` step): when a rate trial passes and
//! which rate wins, how long a quick run lasts, how a `--quick` budget shares out among the
//! runs, and what the result records of it all ([`HostFit`]). The quiet-CPU probe and the
//! placement they build on are shared with the other experiments in [`crate::fit`].

use crate::fit::CpuQuiet;
use latlab_core::units::{format_ns, Nanos};
use serde::{Deserialize, Serialize};

/// A rate passes when the generator's lateness p99 is at most this fraction of the mean
/// gap (the probe calls a generator behind at one half: this keeps a factor 2 in hand).
pub const LATENESS_SHARE: f64 = 0.25;

/// … and at most this share of its probes left more than one gap late (the trust check
/// calls 1 % serious: a factor 10 in hand).
pub const LATE_SHARE: f64 = 0.001;

/// The rates tried, highest first, in thousandths of pps; rates above the asked one are
/// left out.
pub const CANDIDATE_MILLI_PPS: [u64; 5] = [20_000_000, 10_000_000, 5_000_000, 2_000_000, 1_000_000];

/// How long each rate trial measures: two of the kernel's 1 s real-time periods, so that
/// a generator stopped by real-time throttling shows it.
pub const TRIAL: Nanos = Nanos(2_000_000_000);

/// Samples a run needs for p99.99 to be supported (10 beyond it).
pub const SAMPLES_FOR_P9999: u64 = 100_000;

/// One short probe at one rate: how late the generator was.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RateTrial {
    /// Rate, thousandths of pps.
    pub milli_pps: u64,
    /// Generator lateness p99, ns.
    pub lateness_p99_ns: u64,
    /// Probes sent.
    pub sent: u64,
    /// Probes sent more than one mean gap late.
    pub late_over_gap: u64,
    /// Probes lost.
    pub lost: u64,
}

impl RateTrial {
    /// Mean gap at this rate, ns.
    pub fn mean_gap_ns(&self) -> f64 {
        1e12 / self.milli_pps.max(1) as f64
    }

    /// Whether the generator kept its schedule with margin to spare ([`LATENESS_SHARE`],
    /// [`LATE_SHARE`]) and nothing was lost.
    pub fn passes(&self) -> bool {
        self.lateness_p99_ns as f64 <= LATENESS_SHARE * self.mean_gap_ns()
            && (self.late_over_gap as f64) <= LATE_SHARE * self.sent as f64
            && self.lost == 0
            && self.sent > 0
    }

    /// One line for a reader.
    pub fn describe(&self) -> String {
        format!(
            "{} pps: lateness p99 {} against a mean gap of {}, {} of {} probes more than a gap late, {} lost — {}",
            self.milli_pps / 1000,
            format_ns(self.lateness_p99_ns as f64),
            format_ns(self.mean_gap_ns()),
            self.late_over_gap,
            self.sent,
            self.lost,
            if self.passes() { "kept its schedule" } else { "too late" }
        )
    }
}

/// The rates to try for a ceiling of `asked` (thousandths of pps): the asked rate, then
/// every candidate below it, highest first.
pub fn candidates(asked: u64) -> Vec<u64> {
    let mut v = vec![asked];
    v.extend(CANDIDATE_MILLI_PPS.iter().copied().filter(|r| *r < asked));
    v
}

/// The highest rate whose trial passed, or `None` when none did.
pub fn choose_rate(trials: &[RateTrial]) -> Option<u64> {
    trials
        .iter()
        .filter(|t| t.passes())
        .map(|t| t.milli_pps)
        .max()
}

/// A quick run's duration: long enough for [`SAMPLES_FOR_P9999`] samples at `milli_pps`,
/// but at least `min` and at most `max`.
pub fn quick_duration(milli_pps: u64, min: Nanos, max: Nanos) -> Nanos {
    let secs_x1000 = (SAMPLES_FOR_P9999 * 1_000_000).div_ceil(milli_pps.max(1));
    let ns = Nanos(secs_x1000.saturating_mul(1_000_000));
    Nanos(ns.get().clamp(min.get(), max.get()))
}

/// The shortest run a budget shortens a run to: below it the warm-up and the fixed cost
/// would be most of every run.
pub const MIN_BUDGET_RUN: Nanos = Nanos(1_000_000_000);

/// Time the budget keeps back for the summary, its figures and the report.
pub const BUDGET_RESERVE: Nanos = Nanos(3_000_000_000);

/// A run's fixed cost assumed when no trial measured it (starting the NF and the probe,
/// the attribution, the files).
pub const DEFAULT_RUN_OVERHEAD: Nanos = Nanos(1_500_000_000);

/// How a time budget shares out among the runs still to come.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BudgetShare {
    /// The measured duration of each run.
    pub duration: Nanos,
    /// Whether `runs` runs of that duration fit in the budget (false: even runs of
    /// [`MIN_BUDGET_RUN`] pass it).
    pub fits: bool,
}

/// The measured duration of each of `runs` runs such that they all end within `budget`
/// of the start, `elapsed` having passed: what is left after [`BUDGET_RESERVE`], shared
/// out, less each run's `warmup` and fixed cost `overhead`; at least [`MIN_BUDGET_RUN`],
/// at most `max`. Pure.
pub fn budget_share(
    budget: Nanos,
    elapsed: Nanos,
    runs: u32,
    warmup: Nanos,
    overhead: Nanos,
    max: Nanos,
) -> BudgetShare {
    let left = budget
        .get()
        .saturating_sub(elapsed.get())
        .saturating_sub(BUDGET_RESERVE.get());
    let each = left / u64::from(runs.max(1));
    let d = each
        .saturating_sub(warmup.get())
        .saturating_sub(overhead.get());
    BudgetShare {
        duration: Nanos(d.clamp(MIN_BUDGET_RUN.get(), max.get().max(MIN_BUDGET_RUN.get()))),
        fits: d >= MIN_BUDGET_RUN.get(),
    }
}

/// Whether one more run (a repeat) of `duration` fits in `budget` with `after` runs
/// still to come behind it, `elapsed` having passed. Pure.
pub fn budget_allows(
    budget: Nanos,
    elapsed: Nanos,
    after: u32,
    duration: Nanos,
    warmup: Nanos,
    overhead: Nanos,
) -> bool {
    let per_run = duration.get() + warmup.get() + overhead.get();
    let need = per_run.saturating_mul(u64::from(after) + 1) + BUDGET_RESERVE.get();
    elapsed.get().saturating_add(need) <= budget.get()
}

/// What the experiment checked and chose, as its result records it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HostFit {
    /// The CPUs the experiment may use.
    pub cpus: Vec<u32>,
    /// The quiet probe of each.
    pub quiet: Vec<CpuQuiet>,
    /// The NF's CPU.
    pub nf_cpu: u32,
    /// The generator's CPU.
    pub gen_cpu: u32,
    /// `SCHED_FIFO` priority of the generator (`None`: not root, normal scheduling).
    pub gen_fifo: Option<i32>,
    /// The rate trials, in the order run.
    pub trials: Vec<RateTrial>,
    /// The ceiling: the asked rate, thousandths of pps.
    pub asked_milli_pps: u64,
    /// The rate chosen, thousandths of pps.
    pub milli_pps: u64,
    /// The measured duration per run chosen.
    pub duration: Nanos,
    /// A run's fixed cost beyond its warm-up and measured time, as the trials took it
    /// (or [`DEFAULT_RUN_OVERHEAD`]): what a `--quick` budget reckons with.
    #[serde(default)]
    pub run_overhead: Nanos,
    /// The runs the ladder planned here (rungs × generator modes).
    #[serde(default)]
    pub runs: u32,
    /// Why, in sentences.
    pub reasons: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    #[test]
    fn a_budget_is_shared_out_so_that_every_run_ends_within_it() {
        // 120 s, 10 s gone: 107 s left after the reserve, 21 runs of 5.095 s each, less a
        // 0.5 s warm-up and 1 s of fixed cost
        let share = budget_share(
            Nanos(120 * S),
            Nanos(10 * S),
            21,
            Nanos(S / 2),
            Nanos(S),
            Nanos(20 * S),
        );
        assert!(share.fits);
        let each = share.duration.get() + S / 2 + S;
        assert!(
            10 * S + 21 * each + BUDGET_RESERVE.get() <= 120 * S,
            "{share:?}"
        );
        assert!(
            10 * S + 21 * (each + 1_000_000) + BUDGET_RESERVE.get() > 120 * S,
            "{share:?}: the whole budget is used"
        );
        // a budget roomier than the runs need leaves them at their own length
        let roomy = budget_share(
            Nanos(3600 * S),
            Nanos(0),
            12,
            Nanos(S),
            Nanos(S),
            Nanos(5 * S),
        );
        assert_eq!(
            roomy,
            BudgetShare {
                duration: Nanos(5 * S),
                fits: true
            }
        );
        // one that cannot hold even the shortest runs says so, and keeps them at the floor
        let tight = budget_share(
            Nanos(30 * S),
            Nanos(10 * S),
            21,
            Nanos(S / 2),
            Nanos(S),
            Nanos(20 * S),
        );
        assert_eq!(
            tight,
            BudgetShare {
                duration: MIN_BUDGET_RUN,
                fits: false
            }
        );
        // spent already: no underflow
        let spent = budget_share(Nanos(S), Nanos(5 * S), 3, Nanos(S), Nanos(S), Nanos(5 * S));
        assert!(!spent.fits);
    }

    #[test]
    fn a_repeat_is_allowed_only_when_the_runs_behind_it_still_fit() {
        let (d, w, o) = (Nanos(3 * S), Nanos(S / 2), Nanos(S));
        // 4.5 s a run: at 60 s with 10 runs after it, 11 runs end at 109.5 s + 3 s reserve
        assert!(budget_allows(Nanos(120 * S), Nanos(60 * S), 10, d, w, o));
        // at 70 s they would end at 122.5 s
        assert!(!budget_allows(Nanos(120 * S), Nanos(70 * S), 10, d, w, o));
        // the last run's repeat needs only its own time
        assert!(budget_allows(Nanos(120 * S), Nanos(112 * S), 0, d, w, o));
        assert!(!budget_allows(Nanos(120 * S), Nanos(113 * S), 0, d, w, o));
    }

    fn trial(pps: u64, p99_us: u64, late: u64) -> RateTrial {
        RateTrial {
            milli_pps: pps * 1000,
            lateness_p99_ns: p99_us * 1000,
            sent: 10_000,
            late_over_gap: late,
            lost: 0,
        }
    }

    #[test]
    fn a_rate_passes_with_margin_only() {
        // 5 kpps: mean gap 200 µs, a quarter is 50 µs
        assert!(trial(5_000, 50, 0).passes());
        assert!(!trial(5_000, 51, 0).passes());
        // 0.1 % of 10,000 is 10
        assert!(trial(5_000, 10, 10).passes());
        assert!(!trial(5_000, 10, 11).passes());
        let lost = RateTrial {
            lost: 1,
            ..trial(1_000, 1, 0)
        };
        assert!(!lost.passes());
        assert!(trial(5_000, 10, 0).describe().contains("kept its schedule"));
    }

    #[test]
    fn the_highest_passing_rate_is_chosen() {
        let t = [
            trial(20_000, 40, 900),
            trial(10_000, 30, 20),
            trial(5_000, 20, 0),
            trial(2_000, 20, 0),
        ];
        assert_eq!(choose_rate(&t), Some(5_000_000));
        assert_eq!(choose_rate(&t[..2]), None);
        assert_eq!(candidates(20_000_000), CANDIDATE_MILLI_PPS.to_vec());
        assert_eq!(
            candidates(7_000_000),
            vec![7_000_000, 5_000_000, 2_000_000, 1_000_000]
        );
    }

    #[test]
    fn quick_runs_last_long_enough_for_p9999_within_bounds() {
        let (min, max) = (Nanos::from_secs(5), Nanos::from_secs(20));
        assert_eq!(quick_duration(20_000_000, min, max), min);
        assert_eq!(quick_duration(10_000_000, min, max), Nanos::from_secs(10));
        assert_eq!(quick_duration(1_000_000, min, max), max);
    }
}
