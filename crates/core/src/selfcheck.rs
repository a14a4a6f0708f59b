//! Self-checks that decide whether a run counts: each a pure function over the run's data
//! that returns a [`Verdict`] — the statistic, the threshold it is held to, the outcome and
//! one sentence saying why.
//!
//! | check | statistic | passes when |
//! |---|---|---|
//! | [`throughput`] | \|achieved / target − 1\| | ≤ [`RATE_TOLERANCE`] (2 %) |
//! | [`poisson_arrivals`] | Anderson–Darling A²·(1 + 0.6/n) against the exponential, mean estimated | ≤ [`AD_EXP_CRITICAL_1PCT`] (1.957, the 1 % point) |
//! | [`constant_arrivals`] | coefficient of variation of the gaps | ≤ [`CONSTANT_CV_LIMIT`] (0.1) |
//! | [`independence`] | Spearman rank autocorrelation at lag 1 | ≤ [`RHO_LIMIT`] (0.1); the detail names the first lag of [`LAGS`] that passes |
//! | [`stationarity`] | two-sided Mann–Kendall p-value of the per-interval medians | ≥ [`TREND_ALPHA`] (0.01) |
//! | [`ci_width`] | width of the percentile's confidence interval | ≤ the requested width ([`CiTarget`]) |
//!
//! A check that the data cannot decide (too few samples, too few intervals) is
//! [`Outcome::Inconclusive`], never a pass. Why each statistic and threshold: see
//! `docs/net.md`, "Self-checks".

use crate::hist::LatencyHistogram;
use crate::parse::{parse_duration, parse_percentile, Percentile};
use crate::stats::rank_interval;
use crate::units::{format_ns, Nanos};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Largest relative deviation of the achieved rate from the target: 2 %.
pub const RATE_TOLERANCE: f64 = 0.02;
/// The 1 % critical value of the modified Anderson–Darling statistic A²·(1 + 0.6/n) for the
/// exponential distribution with its mean estimated from the sample (Stephens 1974; D'Agostino
/// & Stephens, *Goodness-of-Fit Techniques*, Table 4.11).
pub const AD_EXP_CRITICAL_1PCT: f64 = 1.957;
/// Largest coefficient of variation of the gaps of a constant-rate run.
pub const CONSTANT_CV_LIMIT: f64 = 0.1;
/// Largest lagged rank autocorrelation of the latency samples for the confidence intervals
/// to hold: at ρ = 0.1 an AR(1)-like dependence makes the intervals about 10 % too narrow.
pub const RHO_LIMIT: f64 = 0.1;
/// The lags tried, in probes (Lancet's ladder).
pub const LAGS: [usize; 10] = [1, 2, 5, 10, 25, 50, 100, 200, 500, 1000];
/// Significance level of the trend test: a drift this unlikely without one fails the run.
pub const TREND_ALPHA: f64 = 0.01;
/// Fewest gaps the arrival checks judge.
pub const MIN_GAPS: usize = 50;
/// Fewest sample pairs a lag's rank correlation is computed from.
pub const MIN_PAIRS: usize = 30;
/// Marks a missing sample in the series [`independence`] reads (a lost probe).
pub const MISSING: u64 = u64::MAX;

/// What a check concluded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The statistic is within its threshold.
    Pass,
    /// It is not: the run does not count for what this check guards.
    Fail,
    /// The data cannot decide (too few samples or intervals).
    Inconclusive,
}

impl Outcome {
    /// `pass`, `FAIL`, `inconclusive`: as tables and summaries print it.
    pub fn label(self) -> &'static str {
        match self {
            Outcome::Pass => "pass",
            Outcome::Fail => "FAIL",
            Outcome::Inconclusive => "inconclusive",
        }
    }
}

/// Which side of the threshold passes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PassWhen {
    /// statistic ≤ threshold.
    AtMost,
    /// statistic ≥ threshold.
    AtLeast,
}

impl PassWhen {
    /// `<=` or `>=`.
    pub fn symbol(self) -> &'static str {
        match self {
            PassWhen::AtMost => "<=",
            PassWhen::AtLeast => ">=",
        }
    }
}

/// The verdict of one self-check, as a result file stores it (`self_checks`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// Stable name: `throughput`, `arrivals`, `independence`, `stationarity`, `ci_width`.
    pub check: String,
    /// What the statistic is, e.g. `Spearman rank autocorrelation at lag 1`.
    pub statistic: String,
    /// Its value (`None` when it could not be computed).
    pub value: Option<f64>,
    /// The threshold it is held to.
    pub threshold: f64,
    /// Which side of the threshold passes.
    pub pass_when: PassWhen,
    /// The outcome.
    pub outcome: Outcome,
    /// One sentence: the numbers behind the outcome and what follows from it.
    pub detail: String,
}

impl Verdict {
    fn judged(
        check: &str,
        statistic: &str,
        value: f64,
        threshold: f64,
        pass_when: PassWhen,
        detail: String,
    ) -> Verdict {
        let ok = match pass_when {
            PassWhen::AtMost => value <= threshold,
            PassWhen::AtLeast => value >= threshold,
        };
        Verdict {
            check: check.into(),
            statistic: statistic.into(),
            value: Some(value),
            threshold,
            pass_when,
            outcome: if ok { Outcome::Pass } else { Outcome::Fail },
            detail,
        }
    }

    fn inconclusive(
        check: &str,
        statistic: &str,
        threshold: f64,
        pass_when: PassWhen,
        detail: String,
    ) -> Verdict {
        Verdict {
            check: check.into(),
            statistic: statistic.into(),
            value: None,
            threshold,
            pass_when,
            outcome: Outcome::Inconclusive,
            detail,
        }
    }

    /// Whether the check passed.
    pub fn passed(&self) -> bool {
        self.outcome == Outcome::Pass
    }

    /// `statistic = value (passes when <= threshold)`, numbers to 4 significant digits.
    pub fn rule(&self) -> String {
        let v = self
            .value
            .map(short)
            .unwrap_or_else(|| "not computed".into());
        format!(
            "{} = {v} (passes when {} {})",
            self.statistic,
            self.pass_when.symbol(),
            short(self.threshold)
        )
    }

    /// One line: `arrivals: pass — <rule>; <detail>`.
    pub fn line(&self) -> String {
        format!(
            "{}: {} — {}; {}",
            self.check,
            self.outcome.label(),
            self.rule(),
            self.detail
        )
    }
}

/// A number to about four significant digits, without an exponent for everyday sizes.
fn short(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let a = v.abs();
    if !(1e-4..1e7).contains(&a) {
        return format!("{v:.3e}");
    }
    let digits = (3 - a.log10().floor() as i32).max(0) as usize;
    format!("{v:.digits$}")
}

/// Achieved rate against the target: fails beyond ±[`RATE_TOLERANCE`]. `what` names the
/// unit (`pps`). Inconclusive when the target or the achieved rate is not a positive,
/// finite number (nothing was sent, or no rate was asked for).
pub fn throughput(achieved: f64, target: f64, what: &str) -> Verdict {
    const STAT: &str = "|achieved / target - 1|";
    if !(target.is_finite() && target > 0.0 && achieved.is_finite()) {
        return Verdict::inconclusive(
            "throughput",
            STAT,
            RATE_TOLERANCE,
            PassWhen::AtMost,
            "no target rate or no achieved rate to compare".into(),
        );
    }
    let rel = (achieved - target) / target;
    Verdict::judged(
        "throughput",
        STAT,
        rel.abs(),
        RATE_TOLERANCE,
        PassWhen::AtMost,
        format!(
            "achieved {achieved:.0} {what} against a target of {target:.0} {what} ({:+.2} %){}",
            rel * 100.0,
            if rel < -RATE_TOLERANCE {
                ": the generator did not offer the load asked for"
            } else {
                ""
            }
        ),
    )
}

/// Whether a run sent what its schedule held: the fraction of the `scheduled` sends left
/// `unsent` when the run reached its deadline, which passes only at 0 (`what` names them:
/// `probes`, `requests`). A generator slower than its rate stops at the end of the run
/// rather than sending the rest late, so an achieved rate below the target shows here as
/// what was not offered. Inconclusive when nothing was scheduled.
pub fn schedule_sent(scheduled: u64, unsent: u64, what: &str) -> Verdict {
    const STAT: &str = "unsent / scheduled";
    if scheduled == 0 {
        return Verdict::inconclusive(
            "schedule",
            STAT,
            0.0,
            PassWhen::AtMost,
            format!("no {what} were scheduled"),
        );
    }
    let frac = unsent as f64 / scheduled as f64;
    Verdict::judged(
        "schedule",
        STAT,
        frac,
        0.0,
        PassWhen::AtMost,
        if unsent == 0 {
            format!("all {scheduled} scheduled {what} were sent by the end of the run")
        } else {
            format!(
                "{unsent} of {scheduled} scheduled {what} ({:.1} %) were not sent: the generator could not keep the rate and the run stopped at its duration; lower the rate or add senders",
                frac * 100.0
            )
        },
    )
}

/// The Anderson–Darling statistic of `sample` against the exponential distribution with
/// its mean estimated from the sample, modified for that estimate: A²·(1 + 0.6/n)
/// (Stephens 1974). `None` for fewer than two values or a mean that is not positive.
pub fn anderson_darling_exponential(sample: &[f64]) -> Option<f64> {
    let n = sample.len();
    if n < 2 {
        return None;
    }
    let mean = sample.iter().sum::<f64>() / n as f64;
    if !(mean.is_finite() && mean > 0.0) {
        return None;
    }
    let mut t: Vec<f64> = sample.iter().map(|x| (x / mean).max(0.0)).collect();
    t.sort_by(f64::total_cmp);
    // F(x) = 1 - e^(-t): ln F = ln(-expm1(-t)) (exact near 0), ln(1 - F) = -t.
    // A gap of exactly 0 has F = 0; its log is floored so the statistic stays finite (and
    // huge: a zero gap is impossible for exponential arrivals).
    let ln_f = |t: f64| (-libm::expm1(-t)).max(1e-300).ln();
    let nf = n as f64;
    let s: f64 = (0..n)
        .map(|i| (2 * i + 1) as f64 * (ln_f(t[i]) - t[n - 1 - i]))
        .sum();
    let a2 = -nf - s / nf;
    Some(a2 * (1.0 + 0.6 / nf))
}

/// Whether the gaps between sends (ns) are consistent with Poisson arrivals: the
/// Anderson–Darling test against the exponential (mean estimated) at the 1 % level.
pub fn poisson_arrivals(gaps_ns: &[f64]) -> Verdict {
    const STAT: &str = "Anderson-Darling A2*(1+0.6/n) against the exponential";
    let n = gaps_ns.len();
    let a2 = match anderson_darling_exponential(gaps_ns) {
        Some(a) if n >= MIN_GAPS => a,
        _ => {
            return Verdict::inconclusive(
                "arrivals",
                STAT,
                AD_EXP_CRITICAL_1PCT,
                PassWhen::AtMost,
                format!("{n} gaps sampled; at least {MIN_GAPS} are needed"),
            )
        }
    };
    let mean = gaps_ns.iter().sum::<f64>() / n as f64;
    let short_gaps = gaps_ns.iter().filter(|&&g| g < mean / 100.0).count();
    let expected_short = n as f64 * -libm::expm1(-0.01);
    Verdict::judged(
        "arrivals",
        STAT,
        a2,
        AD_EXP_CRITICAL_1PCT,
        PassWhen::AtMost,
        format!(
            "{n} sampled gaps between sends, mean {}; {short_gaps} shorter than 1 % of the mean (exponential: about {expected_short:.0}){}",
            format_ns(mean),
            if a2 > AD_EXP_CRITICAL_1PCT {
                ": the sends were not Poisson arrivals (bursts or a minimal gap)"
            } else {
                ""
            }
        ),
    )
}

/// Whether the gaps between sends (ns) are consistent with a constant rate of one send
/// every `nominal_gap_ns`: their coefficient of variation (standard deviation / mean) is at
/// most [`CONSTANT_CV_LIMIT`]. Poisson arrivals have 1; sends in bursts have more.
pub fn constant_arrivals(gaps_ns: &[f64], nominal_gap_ns: f64) -> Verdict {
    const STAT: &str = "coefficient of variation of the gaps";
    let n = gaps_ns.len();
    if n < MIN_GAPS {
        return Verdict::inconclusive(
            "arrivals",
            STAT,
            CONSTANT_CV_LIMIT,
            PassWhen::AtMost,
            format!("{n} gaps sampled; at least {MIN_GAPS} are needed"),
        );
    }
    let nf = n as f64;
    let mean = gaps_ns.iter().sum::<f64>() / nf;
    let var = gaps_ns.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / (nf - 1.0);
    let cv = if mean > 0.0 {
        var.sqrt() / mean
    } else {
        f64::INFINITY
    };
    let tol = nominal_gap_ns * 0.1;
    let off = gaps_ns
        .iter()
        .filter(|&&g| (g - nominal_gap_ns).abs() > tol)
        .count();
    Verdict::judged(
        "arrivals",
        STAT,
        cv,
        CONSTANT_CV_LIMIT,
        PassWhen::AtMost,
        format!(
            "{n} sampled gaps between sends, mean {} against {} asked for, standard deviation {}; {off} more than 10 % off the gap{}",
            format_ns(mean),
            format_ns(nominal_gap_ns),
            format_ns(var.sqrt()),
            if cv > CONSTANT_CV_LIMIT {
                ": the sends were not evenly spaced"
            } else {
                ""
            }
        ),
    )
}

/// Average ranks (1-based; ties share their mean rank).
fn ranks(v: &[u64]) -> Vec<f64> {
    let mut idx: Vec<usize> = (0..v.len()).collect();
    idx.sort_by_key(|&i| v[i]);
    let mut r = vec![0.0; v.len()];
    let mut i = 0;
    while i < idx.len() {
        let mut j = i;
        while j + 1 < idx.len() && v[idx[j + 1]] == v[idx[i]] {
            j += 1;
        }
        let avg = (i + j) as f64 / 2.0 + 1.0;
        for &k in &idx[i..=j] {
            r[k] = avg;
        }
        i = j + 1;
    }
    r
}

/// Spearman's rank correlation of paired values (Pearson's on average ranks); `None` with
/// fewer than 3 pairs or a constant side.
pub fn spearman(a: &[u64], b: &[u64]) -> Option<f64> {
    let n = a.len().min(b.len());
    if n < 3 {
        return None;
    }
    let (ra, rb) = (ranks(&a[..n]), ranks(&b[..n]));
    let m = (n as f64 + 1.0) / 2.0;
    let (mut sab, mut saa, mut sbb) = (0.0, 0.0, 0.0);
    for (x, y) in ra.iter().zip(&rb) {
        sab += (x - m) * (y - m);
        saa += (x - m).powi(2);
        sbb += (y - m).powi(2);
    }
    (saa > 0.0 && sbb > 0.0).then(|| sab / (saa * sbb).sqrt())
}

/// The lag-`lag` pairs of `values`, read as consecutive windows of `window` samples (a pair
/// never spans two windows) with [`MISSING`] entries skipped.
fn lag_pairs(values: &[u64], window: usize, lag: usize) -> (Vec<u64>, Vec<u64>) {
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for w in values.chunks(window.max(1)) {
        for i in 0..w.len().saturating_sub(lag) {
            let (x, y) = (w[i], w[i + lag]);
            if x != MISSING && y != MISSING {
                a.push(x);
                b.push(y);
            }
        }
    }
    (a, b)
}

/// The lagged rank autocorrelation of the latency samples at each lag of [`LAGS`] (that
/// `window` allows), as `(lag, ρ, pairs)`.
pub fn rank_autocorrelation(values: &[u64], window: usize) -> Vec<(usize, f64, usize)> {
    LAGS.iter()
        .filter(|&&l| l < window)
        .filter_map(|&lag| {
            let (a, b) = lag_pairs(values, window, lag);
            if a.len() < MIN_PAIRS {
                return None;
            }
            spearman(&a, &b).map(|r| (lag, r, a.len()))
        })
        .collect()
}

/// Whether the latency samples are independent enough for the order-statistic confidence
/// intervals, which assume independent samples: the Spearman rank autocorrelation of
/// consecutive samples (lag 1) is at most [`RHO_LIMIT`]. `values` are latencies in sending
/// order, in consecutive windows of `window` (pairs never span windows; [`MISSING`] marks
/// a lost sample). The detail names the first lag of [`LAGS`] at which the correlation
/// passes: samples that far apart are independent, so the intervals hold for about
/// n / lag samples.
pub fn independence(values: &[u64], window: usize) -> Verdict {
    const STAT: &str = "Spearman rank autocorrelation at lag 1";
    let rho = rank_autocorrelation(values, window);
    let Some(&(1, r1, pairs)) = rho.first() else {
        let n = values.iter().filter(|&&v| v != MISSING).count();
        return Verdict::inconclusive(
            "independence",
            STAT,
            RHO_LIMIT,
            PassWhen::AtMost,
            format!(
                "{n} latency samples sampled; at least {MIN_PAIRS} consecutive pairs are needed"
            ),
        );
    };
    let passing = rho.iter().find(|(_, r, _)| *r <= RHO_LIMIT);
    let detail = match passing {
        Some((1, _, _)) => format!(
            "{pairs} pairs of consecutive latency samples; the confidence intervals' independence assumption holds"
        ),
        Some((lag, r, _)) => format!(
            "{pairs} pairs of consecutive latency samples are correlated; it passes at lag {lag} (rho {}): treat the confidence intervals as if from about 1/{lag} of the samples, they are too narrow as printed",
            short(*r)
        ),
        None => {
            let (lag, r, _) = rho.last().expect("non-empty");
            format!(
                "{pairs} pairs of consecutive latency samples are correlated and it passes at no lag up to {lag} (rho {} there): the confidence intervals are too narrow as printed",
                short(*r)
            )
        }
    };
    Verdict::judged(
        "independence",
        STAT,
        r1,
        RHO_LIMIT,
        PassWhen::AtMost,
        detail,
    )
}

/// The first lag of [`LAGS`] whose rank autocorrelation passes, if any was computed.
pub fn passing_lag(values: &[u64], window: usize) -> Option<usize> {
    rank_autocorrelation(values, window)
        .into_iter()
        .find(|(_, r, _)| *r <= RHO_LIMIT)
        .map(|(l, _, _)| l)
}

/// The Mann–Kendall statistic S = Σ_{i<j} sign(x_j − x_i) of a series.
pub fn mann_kendall_s(x: &[u64]) -> i64 {
    let mut s = 0i64;
    for i in 0..x.len() {
        for j in i + 1..x.len() {
            s += (x[j] > x[i]) as i64 - (x[j] < x[i]) as i64;
        }
    }
    s
}

/// Two-sided p-value of Mann–Kendall's S for `n` values without a trend. Up to 40 values it
/// is exact for untied data (S = N − 2·inversions, whose distribution over permutations
/// the inversion-count recurrence gives); ties only shrink |S|, so the exact tie-free
/// p-value is conservative. Beyond 40 values: the normal approximation with continuity
/// correction and the variance corrected for ties (`tie_groups` sizes).
pub fn mann_kendall_p(s: i64, n: usize, tie_groups: &[usize]) -> f64 {
    if n < 2 {
        return 1.0;
    }
    let pairs = (n * (n - 1) / 2) as i64;
    if n <= 40 {
        // dist[k] = P(inversions = k) for a random permutation, built one element at a time
        let mut dist = vec![1.0f64];
        for m in 2..=n {
            let len = dist.len() + m - 1;
            let mut next = vec![0.0; len];
            for (k, &p) in dist.iter().enumerate() {
                for add in 0..m {
                    next[k + add] += p / m as f64;
                }
            }
            dist = next;
        }
        // |S| >= |s|  <=>  inversions <= (N - |s|)/2 or >= (N + |s|)/2 (symmetric)
        let lo = (pairs - s.abs()) / 2;
        let tail: f64 = dist[..=(lo as usize).min(dist.len() - 1)].iter().sum();
        return (2.0 * tail).min(1.0);
    }
    let nf = n as f64;
    let ties: f64 = tie_groups
        .iter()
        .map(|&t| {
            let t = t as f64;
            t * (t - 1.0) * (2.0 * t + 5.0)
        })
        .sum();
    let var = (nf * (nf - 1.0) * (2.0 * nf + 5.0) - ties) / 18.0;
    if var <= 0.0 {
        return 1.0;
    }
    let z = (s.abs() as f64 - 1.0).max(0.0) / var.sqrt();
    libm::erfc(z / std::f64::consts::SQRT_2).min(1.0)
}

/// Sen's slope: the median of the pairwise slopes (x_j − x_i)/(j − i), the size of a trend
/// per step.
pub fn sen_slope(x: &[u64]) -> f64 {
    let mut slopes = Vec::new();
    for i in 0..x.len() {
        for j in i + 1..x.len() {
            slopes.push((x[j] as f64 - x[i] as f64) / (j - i) as f64);
        }
    }
    if slopes.is_empty() {
        return 0.0;
    }
    slopes.sort_by(f64::total_cmp);
    let m = slopes.len();
    if m % 2 == 1 {
        slopes[m / 2]
    } else {
        (slopes[m / 2 - 1] + slopes[m / 2]) / 2.0
    }
}

/// Whether the run was stationary across its intervals: the two-sided Mann–Kendall trend
/// test on the per-interval medians (ns, in time order) at level [`TREND_ALPHA`].
/// Inconclusive when there are too few intervals for any series to reach that level (five
/// or fewer: even a strictly monotone series of five has p = 2/5! ≈ 0.017). The detail
/// gives Sen's slope, the drift's size.
pub fn stationarity(medians_ns: &[u64]) -> Verdict {
    const STAT: &str = "Mann-Kendall two-sided p-value of the interval medians";
    let n = medians_ns.len();
    // smallest attainable p (a strictly monotone series) must be below the level
    let min_p = mann_kendall_p((n * n.saturating_sub(1) / 2) as i64, n, &[]);
    if n < 3 || min_p >= TREND_ALPHA {
        return Verdict::inconclusive(
            "stationarity",
            STAT,
            TREND_ALPHA,
            PassWhen::AtLeast,
            format!(
                "{n} intervals with samples; at least 6 are needed for the trend test to reach the 1 % level (a shorter --interval or a longer run)"
            ),
        );
    }
    let s = mann_kendall_s(medians_ns);
    let mut sorted = medians_ns.to_vec();
    sorted.sort_unstable();
    let ties: Vec<usize> = sorted
        .chunk_by(|a, b| a == b)
        .map(<[u64]>::len)
        .filter(|&l| l > 1)
        .collect();
    let p = mann_kendall_p(s, n, &ties);
    let pairs = (n * (n - 1) / 2) as f64;
    let slope = sen_slope(medians_ns);
    let first = medians_ns[0] as f64;
    Verdict::judged(
        "stationarity",
        STAT,
        p,
        TREND_ALPHA,
        PassWhen::AtLeast,
        format!(
            "{n} interval medians from {} to {}, Kendall tau {:.2}, drift {} per interval (Sen's slope, {:+.1} % over the run){}",
            format_ns(first),
            format_ns(medians_ns[n - 1] as f64),
            s as f64 / pairs,
            format_ns(slope),
            if first > 0.0 {
                slope * (n - 1) as f64 / first * 100.0
            } else {
                0.0
            },
            if p < TREND_ALPHA {
                ": the latency drifted during the run, its percentiles mix different states"
            } else {
                ""
            }
        ),
    )
}

/// The accepted form of `--ci-width`, quoted in errors.
pub const CI_TARGET_FORM: &str =
    "pNN:WIDTH, a percentile below 100 and a positive duration, e.g. p99:5us, p99.9:20us";

/// A stop rule's target: the confidence interval of `percentile` no wider than `width`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CiTarget {
    /// The percentile whose interval is watched.
    pub percentile: Percentile,
    /// The widest interval that stops the run.
    pub width: Nanos,
}

impl CiTarget {
    /// Parses `p99:5us` (the percentile as `parse_percentile` reads it, below 100; the
    /// width as a positive duration).
    pub fn parse(s: &str) -> Result<CiTarget, String> {
        let bad = |why: String| {
            Err(format!(
                "'{s}' is not valid ({why}); expected {CI_TARGET_FORM}"
            ))
        };
        let Some((p, w)) = s.trim().split_once(':') else {
            return bad("no ':' between percentile and width".into());
        };
        let percentile = match parse_percentile(p) {
            Ok(p) if p.num() < p.den() => p,
            Ok(_) => return bad("p100 has no upper confidence bound".into()),
            Err(e) => return bad(format!("percentile: {}", e.reason)),
        };
        let width = match parse_duration(w) {
            Ok(d) if d.get() > 0 => d,
            Ok(_) => return bad("the width must be positive".into()),
            Err(e) => return bad(format!("width: {}", e.reason)),
        };
        Ok(CiTarget { percentile, width })
    }
}

impl fmt::Display for CiTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.percentile, self.width)
    }
}

/// The width (ns) of the `confidence` interval of `p` in `h`, when both bounds exist.
pub fn interval_width(h: &LatencyHistogram, p: Percentile, confidence: f64) -> Option<u64> {
    let n = h.count();
    if n == 0 {
        return None;
    }
    match rank_interval(n, p, confidence) {
        (Some(l), Some(u)) => Some(h.value_at_rank(u).saturating_sub(h.value_at_rank(l))),
        _ => None,
    }
}

/// Whether `h` meets `target`: its interval exists and is no wider.
pub fn meets(h: &LatencyHistogram, target: CiTarget, confidence: f64) -> bool {
    interval_width(h, target.percentile, confidence).is_some_and(|w| w <= target.width.get())
}

/// How a stop-rule run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StopReport {
    /// Measured time when it stopped.
    pub measured: Nanos,
    /// The maximum measured time.
    pub max: Nanos,
    /// Whether the rule stopped it before the maximum.
    pub stopped_early: bool,
}

/// The `--ci-width` verdict from the run's final histogram: the interval of the target's
/// percentile at `confidence` is no wider than the target's width. The detail says whether
/// the rule stopped the run or the maximum duration did.
pub fn ci_width(
    h: &LatencyHistogram,
    target: CiTarget,
    confidence: f64,
    stop: StopReport,
) -> Verdict {
    let stat = format!(
        "width of the {:.0} % confidence interval of {}, ns",
        confidence * 100.0,
        target.percentile
    );
    let thr = target.width.get() as f64;
    let how = if stop.stopped_early {
        format!(
            "the rule stopped the run after {} of at most {}",
            stop.measured, stop.max
        )
    } else {
        format!(
            "the run reached its maximum duration {} before the interval was that narrow",
            stop.max
        )
    };
    match interval_width(h, target.percentile, confidence) {
        Some(w) => Verdict::judged(
            "ci_width",
            &stat,
            w as f64,
            thr,
            PassWhen::AtMost,
            format!(
                "{} samples; {} interval width {} against {} asked for: {how}",
                h.count(),
                target.percentile,
                format_ns(w as f64),
                target.width
            ),
        ),
        None => Verdict {
            check: "ci_width".into(),
            statistic: stat,
            value: None,
            threshold: thr,
            pass_when: PassWhen::AtMost,
            outcome: Outcome::Fail,
            detail: format!(
                "{} samples cannot bound {} on both sides: {how}",
                h.count(),
                target.percentile
            ),
        },
    }
}

#[cfg(test)]
mod tests;
