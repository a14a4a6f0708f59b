//! The paper's taxonomy of latency contributors, computed from a histogram.
//!
//! *Where Has My Time Gone?* sorts contributors into **Good** (low latency, low
//! variability), **Bad** (high latency or high variability) and **Ugly** (heavy-tailed or
//! otherwise peculiar). It gives no numeric rule; latlab's rule is below, applied in this
//! order, with thresholds in [`ClassRule`]:
//!
//! 1. **Ugly** when the tail is heavy: `p99.99 > tail_ratio × p50` (default 20: one request
//!    in ten thousand costs more than twenty typical ones). Needs p99.99 to be supported
//!    (at least 100,000 samples); without it p99 is used in its place, and the class says
//!    so.
//! 2. **Bad** when the typical cost is high, `p50 > high_latency_ns` (default 10 µs, the
//!    order of a network stack traversal), or the bulk is spread,
//!    `p99 > spread_ratio × p50` (default 2).
//! 3. **Good** otherwise.
//!
//! Only percentiles read from the histogram are used, never the maximum (a single sample).

use latlab_core::hist::LatencyHistogram;
use latlab_core::parse::Percentile;
use latlab_core::stats::is_supported;
use serde::{Deserialize, Serialize};
use std::fmt;

/// Good, Bad or Ugly.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Class {
    /// Low latency and low variability.
    Good,
    /// High latency or high variability.
    Bad,
    /// Heavy-tailed (or otherwise peculiar).
    Ugly,
}

impl fmt::Display for Class {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Class::Good => "Good",
            Class::Bad => "Bad",
            Class::Ugly => "Ugly",
        })
    }
}

/// The thresholds of the rule (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClassRule {
    /// Ugly when p99.99 exceeds this many medians.
    pub tail_ratio: f64,
    /// Bad when the median exceeds this (ns).
    pub high_latency_ns: u64,
    /// Bad when p99 exceeds this many medians.
    pub spread_ratio: f64,
}

impl Default for ClassRule {
    fn default() -> Self {
        ClassRule {
            tail_ratio: 20.0,
            high_latency_ns: 10_000,
            spread_ratio: 2.0,
        }
    }
}

/// A class with the figures and the reason that decided it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Classification {
    /// The class.
    pub class: Class,
    /// Why, in words with the numbers, e.g. `p99.99/p50 = 35.1 > 20`.
    pub reason: String,
    /// Median (ns).
    pub p50_ns: u64,
    /// p99 (ns).
    pub p99_ns: u64,
    /// p99.99 (ns), when supported by the sample count.
    pub p9999_ns: Option<u64>,
}

const P50: Percentile = Percentile::LADDER[0];
const P99: Percentile = Percentile::LADDER[2];
const P9999: Percentile = Percentile::LADDER[4];

/// Classifies from the three percentiles (ns); `p9999` is `None` when unsupported.
pub fn classify_values(p50: u64, p99: u64, p9999: Option<u64>, rule: &ClassRule) -> Classification {
    let base = p50.max(1) as f64;
    let (tail, tail_name) = match p9999 {
        Some(v) => (v, "p99.99"),
        None => (p99, "p99 (p99.99 unsupported)"),
    };
    let tail_r = tail as f64 / base;
    let spread_r = p99 as f64 / base;
    let (class, reason) = if tail_r > rule.tail_ratio {
        (
            Class::Ugly,
            format!(
                "heavy tail: {tail_name}/p50 = {tail_r:.1} > {}",
                rule.tail_ratio
            ),
        )
    } else if p50 > rule.high_latency_ns {
        (
            Class::Bad,
            format!(
                "high latency: p50 = {} > {}",
                latlab_core::units::format_ns(p50 as f64),
                latlab_core::units::format_ns(rule.high_latency_ns as f64)
            ),
        )
    } else if spread_r > rule.spread_ratio {
        (
            Class::Bad,
            format!(
                "high variability: p99/p50 = {spread_r:.1} > {}",
                rule.spread_ratio
            ),
        )
    } else {
        (
            Class::Good,
            format!("p50 low, p99/p50 = {spread_r:.1}, {tail_name}/p50 = {tail_r:.1}"),
        )
    };
    Classification {
        class,
        reason,
        p50_ns: p50,
        p99_ns: p99,
        p9999_ns: p9999,
    }
}

/// Classifies a histogram; `None` when it is empty.
pub fn classify(h: &LatencyHistogram, rule: &ClassRule) -> Option<Classification> {
    if h.is_empty() {
        return None;
    }
    let p9999 = is_supported(P9999, h.count()).then(|| h.value_at(P9999));
    Some(classify_values(
        h.value_at(P50),
        h.value_at(P99),
        p9999,
        rule,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use latlab_core::hist::HistConfig;
    use latlab_core::units::Nanos;

    fn hist(values: &[(u64, u64)]) -> LatencyHistogram {
        let mut h = LatencyHistogram::new(HistConfig::default()).unwrap();
        for &(v, n) in values {
            h.record_n(Nanos(v), n);
        }
        h
    }

    #[test]
    fn narrow_cheap_distribution_is_good() {
        let h = hist(&[(100, 200_000), (120, 10_000), (150, 100)]);
        let c = classify(&h, &ClassRule::default()).unwrap();
        assert_eq!(c.class, Class::Good, "{}", c.reason);
        assert!(c.p9999_ns.is_some());
    }

    #[test]
    fn heavy_tail_is_ugly_even_when_cheap() {
        // 0.1 % of samples at 50x the median: p99.99 lands in the tail.
        let h = hist(&[(100, 200_000), (5_000, 200)]);
        let c = classify(&h, &ClassRule::default()).unwrap();
        assert_eq!(c.class, Class::Ugly, "{}", c.reason);
        assert!(c.reason.contains("p99.99/p50"), "{}", c.reason);
    }

    #[test]
    fn slow_median_is_bad() {
        let h = hist(&[(30_000, 200_000), (35_000, 2_000)]);
        let c = classify(&h, &ClassRule::default()).unwrap();
        assert_eq!(c.class, Class::Bad);
        assert!(c.reason.contains("high latency"), "{}", c.reason);
    }

    #[test]
    fn wide_bulk_is_bad() {
        // 5 % of samples at 4x the median: p99 = 4x, p99.99 = 4x (< 20x).
        let h = hist(&[(1_000, 190_000), (4_000, 10_000)]);
        let c = classify(&h, &ClassRule::default()).unwrap();
        assert_eq!(c.class, Class::Bad);
        assert!(c.reason.contains("variability"), "{}", c.reason);
    }

    #[test]
    fn few_samples_use_p99_and_say_so() {
        let h = hist(&[(100, 990), (100_000, 10)]);
        let c = classify(&h, &ClassRule::default()).unwrap();
        assert_eq!(c.p9999_ns, None);
        assert!(c.reason.contains("unsupported") || c.class != Class::Ugly);
        let h = hist(&[(100, 980), (100_000, 20)]);
        let c = classify(&h, &ClassRule::default()).unwrap();
        assert_eq!(c.class, Class::Ugly);
        assert!(c.reason.contains("p99.99 unsupported"), "{}", c.reason);
    }

    #[test]
    fn empty_histogram_has_no_class() {
        assert!(classify(&hist(&[]), &ClassRule::default()).is_none());
    }

    #[test]
    fn thresholds_are_respected() {
        let rule = ClassRule::default();
        assert_eq!(
            classify_values(1000, 2000, Some(20_000), &rule).class,
            Class::Good
        );
        assert_eq!(
            classify_values(1000, 2001, Some(20_000), &rule).class,
            Class::Bad
        );
        assert_eq!(
            classify_values(1000, 2000, Some(20_001), &rule).class,
            Class::Ugly
        );
        assert_eq!(
            classify_values(10_001, 10_001, Some(10_001), &rule).class,
            Class::Bad
        );
    }
}
