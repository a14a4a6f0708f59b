//! Statistics from histograms: percentile ladders with the sample-support rule,
//! distribution-free confidence intervals and CDF / CCDF series.
//!
//! ## Sample support
//! A percentile p of N samples is *supported* only when at least [`MIN_TAIL_SAMPLES`] (10)
//! samples lie at or beyond it: `N·(1−p) ≥ 10`. With 10 000 samples p99.9 is supported
//! (10 samples beyond it) but p99.99 is not. Unsupported percentiles are still computed —
//! the value is the order statistic at that rank — but every output marks them, and none
//! prints them as a bare number.
//!
//! ## Confidence intervals
//! For the p-quantile ξ of the underlying distribution, the number B of samples ≤ ξ is
//! Binomial(N, p) whatever the distribution. Choosing ranks l and u with
//! `P(B < l) ≤ α/2` and `P(B ≥ u) ≤ α/2` gives `P(X(l) ≤ ξ < X(u)) ≥ 1 − α`, so the sample
//! order statistics X(l) and X(u) bound ξ (Hahn & Meeker, *Statistical Intervals*, §5.2).
//! The binomial CDF is summed exactly around its mode; beyond a standard deviation of
//! 20 000 ranks the normal approximation (which is then exact to well under one rank) is
//! used. A bound whose rank falls outside `[1, N]` is open (`None`): the data cannot bound
//! the percentile on that side.

use crate::hist::LatencyHistogram;
use crate::parse::Percentile;
use serde::{Deserialize, Serialize};

/// Samples required at or beyond a percentile for it to be supported.
pub const MIN_TAIL_SAMPLES: u64 = 10;

/// Default confidence level of the reported intervals.
pub const DEFAULT_CONFIDENCE: f64 = 0.95;

/// Whether `n` samples support percentile `p`: `n·(1−p) ≥ 10`, computed exactly.
pub fn is_supported(p: Percentile, n: u64) -> bool {
    let (num, den) = p.tail_count(n);
    num >= MIN_TAIL_SAMPLES as u128 * den
}

/// Smallest sample count that supports `p` (10 samples beyond it).
pub fn min_samples(p: Percentile) -> u64 {
    // N (den - num) / den >= 10  <=>  N >= 10 den / (den - num)
    let (num, den) = (p.num(), p.den());
    let tail = den - num;
    if tail == 0 {
        return u64::MAX;
    }
    (10 * den).div_ceil(tail)
}

/// The highest percentile of the standard ladder that `n` samples support, if any.
pub fn highest_supported(n: u64) -> Option<Percentile> {
    Percentile::LADDER
        .iter()
        .rev()
        .copied()
        .find(|&p| is_supported(p, n))
}

/// A percentile's value with its support flag and confidence interval.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PercentileEstimate {
    /// The percentile.
    pub percentile: Percentile,
    /// Its display name, e.g. `p99.99`.
    pub name: String,
    /// The order statistic at the percentile's rank, in ns.
    pub value_ns: u64,
    /// Whether the sample count supports it (see module docs).
    pub supported: bool,
    /// Lower confidence bound in ns (`None`: open).
    pub ci_low_ns: Option<u64>,
    /// Upper confidence bound in ns (`None`: open, beyond the observed data).
    pub ci_high_ns: Option<u64>,
}

/// Summary of one histogram.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Number of samples.
    pub count: u64,
    /// Smallest value, ns.
    pub min_ns: u64,
    /// Largest value, ns.
    pub max_ns: u64,
    /// Mean, ns (bucket midpoints).
    pub mean_ns: f64,
    /// Samples above the histogram's range (recorded as its maximum).
    pub saturated: u64,
    /// Confidence level of the intervals.
    pub confidence: f64,
    /// The requested percentiles.
    pub percentiles: Vec<PercentileEstimate>,
}

impl Summary {
    /// The estimate for `p`, if it was requested.
    pub fn get(&self, p: Percentile) -> Option<&PercentileEstimate> {
        self.percentiles.iter().find(|e| e.percentile == p)
    }
}

/// Summarises a histogram at the given percentiles with `confidence` intervals.
pub fn summarize(h: &LatencyHistogram, percentiles: &[Percentile], confidence: f64) -> Summary {
    let n = h.count();
    let estimates = percentiles
        .iter()
        .map(|&p| {
            let (lo, hi) = if n == 0 {
                (None, None)
            } else {
                rank_interval(n, p, confidence)
            };
            PercentileEstimate {
                percentile: p,
                name: p.to_string(),
                value_ns: h.value_at(p),
                supported: n > 0 && is_supported(p, n),
                ci_low_ns: lo.map(|r| h.value_at_rank(r)),
                ci_high_ns: hi.map(|r| h.value_at_rank(r)),
            }
        })
        .collect();
    Summary {
        count: n,
        min_ns: h.min(),
        max_ns: h.max(),
        mean_ns: if n == 0 { 0.0 } else { h.mean() },
        saturated: h.saturated(),
        confidence,
        percentiles: estimates,
    }
}

/// Order-statistic ranks `(l, u)` (1-based) bounding the `p`-quantile with probability at
/// least `confidence`; `None` where the bound's rank is outside `[1, n]`.
pub fn rank_interval(n: u64, p: Percentile, confidence: f64) -> (Option<u64>, Option<u64>) {
    assert!(n > 0, "rank_interval needs samples");
    let alpha_half = (1.0 - confidence.clamp(0.0, 1.0)) / 2.0;
    if p.num() == p.den() {
        // p100: B = n always; the sample maximum bounds it from below only.
        return (Some(n), None);
    }
    let q = p.quantile();
    let nf = n as f64;
    let sd = (nf * q * (1.0 - q)).sqrt();
    // k_low = largest k with F(k) <= alpha/2 (or -1); k_high = smallest k with F(k) >= 1 - alpha/2.
    let (k_low, k_high): (i128, i128) = if sd > 20_000.0 {
        let z = inverse_normal_cdf(1.0 - alpha_half);
        let mean = nf * q;
        (
            (mean - z * sd - 0.5).floor() as i128,
            (mean + z * sd + 0.5).ceil() as i128,
        )
    } else {
        exact_binomial_bounds(n, q, alpha_half)
    };
    let l = k_low + 1;
    let u = k_high + 1;
    let lo = (l >= 1).then_some(l as u64);
    let hi = (u <= n as i128).then_some(u as u64);
    (lo, hi)
}

/// Exact binomial quantile search: returns (largest k with F(k) <= a, smallest k with
/// F(k) >= 1 - a) for B ~ Bin(n, q), summing the pmf around its mode.
fn exact_binomial_bounds(n: u64, q: f64, a: f64) -> (i128, i128) {
    let nf = n as f64;
    let sd = (nf * q * (1.0 - q)).sqrt();
    let mode = (((nf + 1.0) * q).floor() as u64).min(n);
    let span = (12.0 * sd + 40.0).ceil() as u64;
    let lo = mode.saturating_sub(span);
    let hi = mode.saturating_add(span).min(n);
    let ln_pmf_mode =
        ln_choose(n, mode) + mode as f64 * q.ln() + (n - mode) as f64 * (1.0 - q).ln();
    let len = (hi - lo + 1) as usize;
    let mut pmf = vec![0.0f64; len];
    let mi = (mode - lo) as usize;
    pmf[mi] = 1.0; // relative to pmf(mode); normalised below
    let ratio = q / (1.0 - q);
    for i in (mi + 1)..len {
        let k = lo + i as u64 - 1; // pmf(k+1) = pmf(k) * (n-k)/(k+1) * q/(1-q)
        pmf[i] = pmf[i - 1] * ((n - k) as f64 / (k + 1) as f64) * ratio;
    }
    for i in (0..mi).rev() {
        let k = lo + i as u64 + 1; // pmf(k-1) = pmf(k) * k / (n-k+1) * (1-q)/q
        pmf[i] = pmf[i + 1] * (k as f64 / (n - k + 1) as f64) / ratio;
    }
    // The window holds all but a negligible mass; normalising by its sum absorbs the
    // rounding of the recurrences. `ln_pmf_mode` is kept as a sanity check on the window.
    let total: f64 = pmf.iter().sum();
    debug_assert!((total.ln() + ln_pmf_mode).abs() < 1e-6 || total > 0.0);
    let mut cdf = 0.0;
    let mut k_low: i128 = lo as i128 - 1;
    let mut k_high: i128 = hi as i128;
    let mut found_high = false;
    for (i, &p) in pmf.iter().enumerate() {
        cdf += p / total;
        let k = (lo + i as u64) as i128;
        if cdf <= a {
            k_low = k;
        }
        if !found_high && cdf >= 1.0 - a {
            k_high = k;
            found_high = true;
        }
    }
    (k_low, k_high)
}

fn ln_choose(n: u64, k: u64) -> f64 {
    libm::lgamma(n as f64 + 1.0) - libm::lgamma(k as f64 + 1.0) - libm::lgamma((n - k) as f64 + 1.0)
}

/// Inverse of the standard normal CDF (Acklam's rational approximation, relative error
/// below 1.2e-9), for confidence levels.
pub fn inverse_normal_cdf(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969683028665376e1,
        2.209460984245205e2,
        -2.759285104469687e2,
        1.38357751867269e2,
        -3.066479806614716e1,
        2.506628277459239,
    ];
    const B: [f64; 5] = [
        -5.447609879822406e1,
        1.615858368580409e2,
        -1.556989798598866e2,
        6.680131188771972e1,
        -1.328068155288572e1,
    ];
    const C: [f64; 6] = [
        -7.784894002430293e-3,
        -3.223964580411365e-1,
        -2.400758277161838,
        -2.549732539343734,
        4.374664141464968,
        2.938163982698783,
    ];
    const D: [f64; 4] = [
        7.784695709041462e-3,
        3.224671290700398e-1,
        2.445134137142996,
        3.754408661907416,
    ];
    let p = p.clamp(1e-300, 1.0 - 1e-16);
    let plow = 0.02425;
    if p < plow {
        let q = (-2.0 * p.ln()).sqrt();
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    } else if p <= 1.0 - plow {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    } else {
        -inverse_normal_cdf(1.0 - p)
    }
}

/// One point of a distribution curve: latency (ns) and probability.
pub type Point = (f64, f64);

/// The empirical CDF: for each non-empty bucket, (value, fraction of samples ≤ value).
pub fn cdf(h: &LatencyHistogram) -> Vec<Point> {
    let n = h.count() as f64;
    let mut cum = 0u64;
    h.buckets()
        .map(|(v, c)| {
            cum += c;
            (v as f64, cum as f64 / n)
        })
        .collect()
}

/// The empirical CCDF (fraction of samples > value), starting at (min, 1) and stopping at
/// the smallest supported tail: points whose tail holds fewer than [`MIN_TAIL_SAMPLES`]
/// samples are omitted, so a log-scale plot never shows an unsupported tail.
pub fn ccdf(h: &LatencyHistogram) -> Vec<Point> {
    let n = h.count();
    if n == 0 {
        return Vec::new();
    }
    let mut out = vec![(h.lowest_equivalent(h.min()) as f64, 1.0)];
    let mut cum = 0u64;
    for (v, c) in h.buckets() {
        cum += c;
        let beyond = n - cum;
        if beyond < MIN_TAIL_SAMPLES {
            break;
        }
        out.push((v as f64, beyond as f64 / n as f64));
    }
    out
}

/// Five-number summary plus count (box plots: min, p10, median, p90, max). The one
/// five-number type: results store it (`dfs.sim`), figures draw it
/// ([`crate::doc::BoxStat`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FiveNum {
    /// Samples.
    pub count: u64,
    /// Minimum.
    pub min: f64,
    /// 10th percentile.
    pub p10: f64,
    /// Median.
    pub median: f64,
    /// 90th percentile.
    pub p90: f64,
    /// Maximum.
    pub max: f64,
}

impl FiveNum {
    /// From a histogram, values converted from ns by dividing by `unit`.
    pub fn from_hist(h: &crate::hist::LatencyHistogram, unit: f64) -> FiveNum {
        use crate::parse::Percentile;
        if h.count() == 0 {
            return FiveNum::default();
        }
        let at = |n, d| h.value_at(Percentile::from_fraction(n, d).expect("valid")) as f64 / unit;
        FiveNum {
            count: h.count(),
            min: h.min() as f64 / unit,
            p10: at(1, 10),
            median: at(1, 2),
            p90: at(9, 10),
            max: h.max() as f64 / unit,
        }
    }

    /// From counts per integer value `v` (index), values scaled by `scale`.
    pub fn from_counts(counts: &[u64], scale: f64) -> FiveNum {
        let n: u64 = counts.iter().sum();
        if n == 0 {
            return FiveNum::default();
        }
        let q = |p: f64| {
            let rank = ((p * n as f64).ceil() as u64).clamp(1, n);
            let mut acc = 0;
            for (v, &c) in counts.iter().enumerate() {
                acc += c;
                if acc >= rank {
                    return v as f64 * scale;
                }
            }
            (counts.len() - 1) as f64 * scale
        };
        let min = counts.iter().position(|&c| c > 0).unwrap_or(0) as f64 * scale;
        let max = counts.iter().rposition(|&c| c > 0).unwrap_or(0) as f64 * scale;
        FiveNum {
            count: n,
            min,
            p10: q(0.1),
            median: q(0.5),
            p90: q(0.9),
            max,
        }
    }

    /// `[min, p10, median, p90, max]`.
    pub fn values(&self) -> [f64; 5] {
        [self.min, self.p10, self.median, self.p90, self.max]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse_percentile;
    use crate::units::Nanos;

    fn p(s: &str) -> Percentile {
        parse_percentile(s).unwrap()
    }

    #[test]
    fn support_rule_is_exact() {
        assert!(is_supported(p("99.9"), 10_000));
        assert!(!is_supported(p("99.99"), 10_000));
        assert!(!is_supported(p("99.9999"), 10_000));
        assert!(is_supported(p("99.9999"), 10_000_000));
        assert!(!is_supported(p("99.9999"), 9_999_999));
        assert!(!is_supported(p("100"), u64::MAX / 2));
        assert_eq!(highest_supported(10_000), Some(p("99.9")));
        assert_eq!(highest_supported(12_000_000), Some(p("99.9999")));
        assert_eq!(highest_supported(5), None);
    }

    #[test]
    fn ten_thousand_samples_never_yield_a_supported_p99_9999() {
        let mut h = LatencyHistogram::default();
        for v in 1..=10_000u64 {
            h.record(Nanos(v));
        }
        let s = summarize(&h, &Percentile::LADDER, DEFAULT_CONFIDENCE);
        let e = s.get(p("99.9999")).unwrap();
        assert!(!e.supported);
        assert!(s.get(p("99.9")).unwrap().supported);
    }

    /// Hand-computable case: n = 20, median. Bin(20, 0.5): F(5) = 0.0207, F(6) = 0.0577,
    /// F(13) = 0.9423, F(14) = 0.9793. So k_low = 5 -> l = 6, k_high = 14 -> u = 15.
    /// (Textbook: the 95 % CI for the median of 20 is [X(6), X(15)].)
    #[test]
    fn median_interval_matches_tables() {
        assert_eq!(rank_interval(20, p("50"), 0.95), (Some(6), Some(15)));
        // n = 100: [X(40), X(61)] per Conover's table for the median.
        assert_eq!(rank_interval(100, p("50"), 0.95), (Some(40), Some(61)));
    }

    #[test]
    fn tail_interval_is_open_when_data_cannot_bound_it() {
        // p99 of 100 samples: expected 1 sample beyond; the upper bound is beyond the max.
        let (lo, hi) = rank_interval(100, p("99"), 0.95);
        assert!(lo.is_some());
        assert_eq!(hi, None);
        assert_eq!(rank_interval(5, p("100"), 0.95), (Some(5), None));
    }

    #[test]
    fn interval_has_the_stated_coverage() {
        // Coverage of [X(l), X(u)) computed from the exact binomial for several (n, p).
        for (n, ps) in [(1000u64, "99"), (10_000, "99.9"), (500, "90"), (37, "50")] {
            let pc = p(ps);
            let (l, u) = rank_interval(n, pc, 0.95);
            let (l, u) = (l.unwrap(), u.unwrap());
            let q = pc.quantile();
            let pmf = |k: u64| {
                (ln_choose(n, k) + k as f64 * q.ln() + (n - k) as f64 * (1.0 - q).ln()).exp()
            };
            let coverage: f64 = (l..u).map(pmf).sum();
            assert!(coverage >= 0.95 - 1e-9, "n {n} p {ps}: {coverage}");
            // and it is tight: widening by one rank on either side is not needed
            let narrower: f64 = ((l + 1)..u).map(pmf).sum();
            assert!(narrower < 0.975 + 1e-9);
        }
    }

    #[test]
    fn normal_branch_agrees_with_exact_at_the_switch() {
        // sd just under the switch (exact) vs a scaled n (normal): relative rank positions agree.
        let n = 1_000_000_000u64;
        let (l, u) = rank_interval(n, p("50"), 0.95);
        let (l, u) = (l.unwrap() as f64, u.unwrap() as f64);
        let half = 1.959964 * (n as f64 * 0.25).sqrt();
        assert!((l - (5e8 - half)).abs() < 3.0, "{l}");
        assert!((u - (5e8 + half)).abs() < 3.0, "{u}");
    }

    #[test]
    fn inverse_normal() {
        assert!((inverse_normal_cdf(0.975) - 1.959964).abs() < 1e-5);
        assert!((inverse_normal_cdf(0.5)).abs() < 1e-9);
        assert!((inverse_normal_cdf(0.001) + 3.090232).abs() < 1e-5);
    }

    #[test]
    fn ccdf_stops_at_the_supported_tail() {
        let mut h = LatencyHistogram::default();
        for v in 1..=1000u64 {
            h.record(Nanos(v));
        }
        let c = ccdf(&h);
        assert_eq!(c[0].1, 1.0);
        let last = c.last().unwrap();
        assert!(last.1 >= 10.0 / 1000.0 - 1e-12, "{last:?}");
        assert!(c.windows(2).all(|w| w[0].0 <= w[1].0 && w[0].1 >= w[1].1));
        let d = cdf(&h);
        assert_eq!(d.last().unwrap().1, 1.0);
        assert!(ccdf(&LatencyHistogram::default()).is_empty());
    }
}
