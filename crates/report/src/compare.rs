//! A/B comparison of two configurations, percentile by percentile, with a significance
//! verdict from both distribution-free confidence intervals.
//!
//! For percentile p, A's estimate has the interval [a_lo, a_hi] and B's [b_lo, b_hi] (order
//! statistics, see [`latlab_core::stats::rank_interval`]). The difference B − A is then known
//! to lie in [b_lo − a_hi, b_hi − a_lo] with at least the product confidence; the difference
//! is **significant** when that interval excludes zero — equivalently, when the two intervals
//! do not overlap. This is deliberately conservative (two disjoint 95% intervals correspond to
//! a test at roughly the 99.5% level), because a comparison makes one decision per percentile
//! and per series. A difference no larger than the histogram's resolution at that value is
//! never called significant. A percentile either side's sample count cannot support (fewer
//! than 10 samples beyond it) gets no verdict at all.

use crate::input::Input;
use latlab_core::hist::LatencyHistogram;
use latlab_core::parse::Percentile;
use latlab_core::stats::{summarize, PercentileEstimate};
use latlab_core::units::format_ns;

/// Why two inputs cannot be compared.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CompareError {
    /// The inputs are results of different kinds.
    #[error("cannot compare {a} ({a_kind}) with {b} ({b_kind}): results of different kinds")]
    KindMismatch {
        /// A's label.
        a: String,
        /// A's kind.
        a_kind: String,
        /// B's label.
        b: String,
        /// B's kind.
        b_kind: String,
    },
    /// No histogram name is present in both.
    #[error("{a} and {b} have no histogram in common (A has: {a_names}; B has: {b_names})")]
    NothingInCommon {
        /// A's label.
        a: String,
        /// B's label.
        b: String,
        /// A's histogram names.
        a_names: String,
        /// B's histogram names.
        b_names: String,
    },
    /// A requested series is missing.
    #[error("no histogram named '{name}' in both inputs (common: {common})")]
    NoSuchSeries {
        /// The requested name.
        name: String,
        /// The names both have.
        common: String,
    },
    /// A histogram could not be decoded.
    #[error("{input}: histogram '{name}': {detail}")]
    Histogram {
        /// Input label.
        input: String,
        /// Histogram name.
        name: String,
        /// What is wrong.
        detail: String,
    },
}

/// Which side(s) of a comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// A only.
    A,
    /// B only.
    B,
    /// Both.
    Both,
}

/// The outcome at one percentile.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Verdict {
    /// One or both sample counts do not support the percentile.
    Unsupported(Side),
    /// B is larger (slower) than A, significantly.
    Slower {
        /// B − A, ns.
        diff_ns: f64,
        /// Half-width of the difference's interval around `diff_ns`, ns.
        pm_ns: f64,
    },
    /// B is smaller (faster) than A, significantly.
    Faster {
        /// B − A, ns (negative).
        diff_ns: f64,
        /// Half-width of the difference's interval around `diff_ns`, ns.
        pm_ns: f64,
    },
    /// The intervals overlap, or the difference is within the histogram's resolution.
    NotSignificant {
        /// B − A, ns.
        diff_ns: f64,
        /// Half-width of the difference's interval around `diff_ns`, ns.
        pm_ns: f64,
    },
}

impl Verdict {
    /// Whether the difference is significant.
    pub fn is_significant(&self) -> bool {
        matches!(self, Verdict::Slower { .. } | Verdict::Faster { .. })
    }
}

/// One percentile of one series, compared.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// Histogram name.
    pub series: String,
    /// The percentile.
    pub percentile: Percentile,
    /// A's estimate.
    pub a: PercentileEstimate,
    /// B's estimate.
    pub b: PercentileEstimate,
    /// A's sample count.
    pub a_count: u64,
    /// B's sample count.
    pub b_count: u64,
    /// The verdict.
    pub verdict: Verdict,
}

impl Row {
    /// One line, e.g. `p99.99: B is 3.10 µs slower (±400 ns)`.
    pub fn sentence(&self) -> String {
        let p = self.percentile;
        match self.verdict {
            Verdict::Unsupported(side) => {
                let need = crate::html::min_samples(p);
                let who = match side {
                    Side::A => format!("A's sample count ({})", self.a_count),
                    Side::B => format!("B's sample count ({})", self.b_count),
                    Side::Both => format!(
                        "either sample count (A {}, B {})",
                        self.a_count, self.b_count
                    ),
                };
                format!("{p}: not supported by {who}; needs {need} samples")
            }
            Verdict::Slower { diff_ns, pm_ns } => format!(
                "{p}: B is {} slower (±{})",
                format_ns(diff_ns),
                format_ns(pm_ns)
            ),
            Verdict::Faster { diff_ns, pm_ns } => format!(
                "{p}: B is {} faster (±{})",
                format_ns(-diff_ns),
                format_ns(pm_ns)
            ),
            Verdict::NotSignificant { diff_ns, pm_ns } => format!(
                "{p}: no significant difference (B − A = {}{}, ±{})",
                if diff_ns < 0.0 { "−" } else { "+" },
                format_ns(diff_ns.abs()),
                format_ns(pm_ns)
            ),
        }
    }
}

/// A whole comparison.
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    /// A's label.
    pub a: String,
    /// B's label.
    pub b: String,
    /// The result kind both share.
    pub kind: String,
    /// Confidence level of the per-side intervals.
    pub confidence: f64,
    /// Rows, series by series, percentile by percentile.
    pub rows: Vec<Row>,
    /// Histograms only A has (not compared).
    pub only_in_a: Vec<String>,
    /// Histograms only B has (not compared).
    pub only_in_b: Vec<String>,
}

/// Compares `b` against `a` at `percentiles` for the histograms both have (or only those
/// named in `series`, when it is not empty).
///
/// # Errors
/// See [`CompareError`].
pub fn compare(
    a: &Input,
    b: &Input,
    percentiles: &[Percentile],
    confidence: f64,
    series: &[String],
) -> Result<Comparison, CompareError> {
    if a.kind() != b.kind() {
        return Err(CompareError::KindMismatch {
            a: a.label.clone(),
            a_kind: a.kind().to_string(),
            b: b.label.clone(),
            b_kind: b.kind().to_string(),
        });
    }
    let names =
        |i: &Input| -> Vec<String> { i.merged.histograms.iter().map(|h| h.name.clone()).collect() };
    let (an, bn) = (names(a), names(b));
    let common: Vec<String> = an.iter().filter(|n| bn.contains(n)).cloned().collect();
    if common.is_empty() {
        return Err(CompareError::NothingInCommon {
            a: a.label.clone(),
            b: b.label.clone(),
            a_names: an.join(", "),
            b_names: bn.join(", "),
        });
    }
    for s in series {
        if !common.contains(s) {
            return Err(CompareError::NoSuchSeries {
                name: s.clone(),
                common: common.join(", "),
            });
        }
    }
    let selected: Vec<&String> = common
        .iter()
        .filter(|n| series.is_empty() || series.contains(n))
        .collect();
    let decode = |i: &Input, name: &str| -> Result<LatencyHistogram, CompareError> {
        i.merged
            .histogram(name)
            .expect("name taken from this input")
            .map_err(|e| CompareError::Histogram {
                input: i.label.clone(),
                name: name.to_string(),
                detail: e.to_string(),
            })
    };
    let mut rows = Vec::new();
    for name in selected {
        let (ha, hb) = (decode(a, name)?, decode(b, name)?);
        let (sa, sb) = (
            summarize(&ha, percentiles, confidence),
            summarize(&hb, percentiles, confidence),
        );
        for (ea, eb) in sa.percentiles.iter().zip(&sb.percentiles) {
            rows.push(Row {
                series: name.clone(),
                percentile: ea.percentile,
                verdict: verdict(ea, eb, &ha),
                a: ea.clone(),
                b: eb.clone(),
                a_count: sa.count,
                b_count: sb.count,
            });
        }
    }
    Ok(Comparison {
        a: a.label.clone(),
        b: b.label.clone(),
        kind: a.kind().to_string(),
        confidence,
        rows,
        only_in_a: an.iter().filter(|n| !common.contains(n)).cloned().collect(),
        only_in_b: bn.iter().filter(|n| !common.contains(n)).cloned().collect(),
    })
}

/// The verdict for one percentile; `resolution` is A's histogram, whose precision decides
/// which differences are too small to mean anything.
pub fn verdict(
    a: &PercentileEstimate,
    b: &PercentileEstimate,
    resolution: &LatencyHistogram,
) -> Verdict {
    match (a.supported, b.supported) {
        (false, false) => return Verdict::Unsupported(Side::Both),
        (false, true) => return Verdict::Unsupported(Side::A),
        (true, false) => return Verdict::Unsupported(Side::B),
        (true, true) => {}
    }
    let (va, vb) = (a.value_ns as f64, b.value_ns as f64);
    let diff = vb - va;
    // An interval bound that could not be computed is unbounded on that side.
    let a_lo = a.ci_low_ns.map_or(f64::NEG_INFINITY, |v| v as f64);
    let a_hi = a.ci_high_ns.map_or(f64::INFINITY, |v| v as f64);
    let b_lo = b.ci_low_ns.map_or(f64::NEG_INFINITY, |v| v as f64);
    let b_hi = b.ci_high_ns.map_or(f64::INFINITY, |v| v as f64);
    let (lo, hi) = (b_lo - a_hi, b_hi - a_lo);
    let pm = (diff - lo).max(hi - diff);
    let within_precision = resolution.equivalent(a.value_ns, b.value_ns);
    if lo > 0.0 && !within_precision {
        Verdict::Slower {
            diff_ns: diff,
            pm_ns: pm,
        }
    } else if hi < 0.0 && !within_precision {
        Verdict::Faster {
            diff_ns: diff,
            pm_ns: pm,
        }
    } else {
        Verdict::NotSignificant {
            diff_ns: diff,
            pm_ns: pm,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use latlab_core::hist::HistConfig;
    use latlab_core::parse::parse_percentile;
    use latlab_core::results::{Provenance, ResultFile, StoredHistogram};
    use latlab_core::units::Nanos;
    use std::path::PathBuf;

    /// splitmix64: a small seeded generator, so the synthetic runs are reproducible.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }
        fn uniform(&mut self) -> f64 {
            ((self.next() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        }
    }

    /// A run of `n` samples: a 10 µs floor plus an exponential with mean `mean_ns` (a
    /// latency-like distribution with a long tail).
    fn run(seed: u64, n: u64, mean_ns: f64, kind: &str) -> (PathBuf, ResultFile) {
        let mut rng = Rng(seed);
        let mut h = LatencyHistogram::new(HistConfig::default()).unwrap();
        for _ in 0..n {
            let v = 10_000.0 - mean_ns * rng.uniform().ln();
            h.record(Nanos(v as u64));
        }
        let mut r = ResultFile::new(kind, vec![], serde_json::Value::Null, Provenance::default());
        r.histograms.push(StoredHistogram::new("lat", &h));
        (PathBuf::from(format!("run-{seed}.json")), r)
    }

    fn input(runs: Vec<(PathBuf, ResultFile)>) -> Input {
        Input::new("x", runs).unwrap()
    }

    #[test]
    fn same_configuration_shows_no_significant_difference() {
        // Several independent seed pairs: the conservative rule must hold for all of them.
        for seed in 0..8u64 {
            let a = input(vec![run(100 + seed, 200_000, 2_000.0, "k")]);
            let b = input(vec![run(200 + seed, 200_000, 2_000.0, "k")]);
            let c = compare(&a, &b, &Percentile::LADDER, 0.95, &[]).unwrap();
            for r in &c.rows {
                assert!(!r.verdict.is_significant(), "seed {seed}: {}", r.sentence());
            }
            // 200k samples support p99.99 but not p99.999
            let unsupported: Vec<String> = c
                .rows
                .iter()
                .filter(|r| matches!(r.verdict, Verdict::Unsupported(Side::Both)))
                .map(|r| r.percentile.to_string())
                .collect();
            assert_eq!(unsupported, ["p99.999", "p99.9999"]);
        }
    }

    #[test]
    fn different_configurations_are_told_apart() {
        // B has a 25% longer exponential part: slower at every percentile.
        let a = input(vec![run(1, 200_000, 2_000.0, "k")]);
        let b = input(vec![run(2, 200_000, 2_500.0, "k")]);
        let c = compare(&a, &b, &Percentile::LADDER[..5], 0.95, &[]).unwrap();
        for r in &c.rows {
            assert!(
                matches!(r.verdict, Verdict::Slower { .. }),
                "{}",
                r.sentence()
            );
            // the true difference of the quantiles: 500 ns * -ln(1 - p)
            let q = r.percentile.quantile();
            let truth = -500.0 * (1.0 - q).ln();
            let Verdict::Slower { diff_ns, pm_ns } = r.verdict else {
                unreachable!()
            };
            assert!(
                (diff_ns - truth).abs() <= pm_ns + 0.002 * 30_000.0,
                "{}: truth {truth}",
                r.sentence()
            );
            assert!(r.sentence().contains("slower (±"), "{}", r.sentence());
        }
        // and the other way round
        let c = compare(&b, &a, &Percentile::LADDER[..3], 0.95, &[]).unwrap();
        assert!(c
            .rows
            .iter()
            .all(|r| matches!(r.verdict, Verdict::Faster { .. })));
    }

    #[test]
    fn repeated_runs_merge_before_comparing() {
        // Two runs of 5,000 support p99.9 only when merged (10,000 samples).
        let a = input(vec![
            run(1, 5_000, 2_000.0, "k"),
            run(2, 5_000, 2_000.0, "k"),
        ]);
        let b = input(vec![run(3, 10_000, 2_000.0, "k")]);
        let p999 = parse_percentile("p99.9").unwrap();
        let c = compare(&a, &b, &[p999], 0.95, &[]).unwrap();
        assert_eq!(c.rows[0].a_count, 10_000);
        assert!(c.rows[0].a.supported);
        let single = input(vec![run(1, 5_000, 2_000.0, "k")]);
        let c = compare(&single, &b, &[p999], 0.95, &[]).unwrap();
        assert_eq!(c.rows[0].verdict, Verdict::Unsupported(Side::A));
        assert!(
            c.rows[0]
                .sentence()
                .contains("not supported by A's sample count (5000)"),
            "{}",
            c.rows[0].sentence()
        );
    }

    #[test]
    fn different_kinds_and_series_are_refused() {
        let a = input(vec![run(1, 100, 1.0, "host.clocks")]);
        let b = input(vec![run(2, 100, 1.0, "net.probe")]);
        let e = compare(&a, &b, &Percentile::LADDER, 0.95, &[]).unwrap_err();
        assert!(e.to_string().contains("different kinds"), "{e}");
        let e = compare(&a, &a, &Percentile::LADDER, 0.95, &["nope".into()]).unwrap_err();
        assert!(
            e.to_string().contains("'nope'") && e.to_string().contains("lat"),
            "{e}"
        );
    }
}
