//! Whether the injector's delays have the asked distribution, as a round trip sees them.
//!
//! A round trip through the element with a delay drawn from `X` is the round trip at 0 µs
//! (the *base*, `B`) plus one draw of `X`, independent of it. So the delayed round trips
//! should follow the convolution `B ⊛ X`, whose CDF at `x` is `Σᵢ wᵢ · G(x − bᵢ)` over
//! the base sample's values `bᵢ` (weights `wᵢ`) with `G` the asked distribution's CDF
//! ([`delay_cdf`]) — computed exactly, no random draws ([`Convolved`]).
//!
//! The measured delayed sample is held against it with a Kolmogorov–Smirnov distance that
//! forgives a shift of up to `slack` ns either way ([`ks_distance`]): the largest
//! `F_meas(x) − F_exp(x + slack)` or `F_exp(x − slack) − F_meas(x)`. With `slack = 0` it
//! is the plain KS distance; the slack is the systematic error the instrument is allowed
//! (where-time holds each median shift to ± 2 µs, and a constant's median shift varies by
//! about that much between checks on a shared virtual machine), so that what fails is a
//! wrong shape or a location off by more, not the endpoints' µs-scale drift between
//! configurations.
//! The bound is the two-sample KS critical value at significance `α`,
//! `c(α) · √((n + m)/(n·m))` with `c(α) = √(−ln(α/2)/2)` ([`ks_bound`]), `n` measured and
//! `m` base samples: the expected distribution is known only through the base sample.
//! Round trips in a row are not independent draws, so the bound is a lower limit on what
//! chance alone can do; a pass is a pass, a failure just above the bound is worth a rerun.
//!
//! [`check_distribution`] puts it together with the quantiles (p10, p50, p90, p99) of the
//! measured and the expected distribution side by side.

use super::DelaySpec;
use latlab_core::hist::LatencyHistogram;
use serde::{Deserialize, Serialize};

/// Significance of the distribution check.
pub const KS_ALPHA: f64 = 0.01;
/// Shift the distribution check forgives either way, ns (the tolerance where-time holds
/// a median shift to).
pub const SLACK_NS: u64 = 2_000;
/// The quantiles shown side by side, as fractions.
pub const QUANTILES: [(&str, f64); 4] = [("p10", 0.1), ("p50", 0.5), ("p90", 0.9), ("p99", 0.99)];

/// A sample as sorted `(value, count)` points.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    points: Vec<(f64, u64)>,
    total: u64,
}

impl Sample {
    /// From raw values (any order).
    pub fn from_values(values: &[u64]) -> Sample {
        let mut v = values.to_vec();
        v.sort_unstable();
        let mut points: Vec<(f64, u64)> = Vec::new();
        for x in v {
            match points.last_mut() {
                Some((p, c)) if *p == x as f64 => *c += 1,
                _ => points.push((x as f64, 1)),
            }
        }
        Sample {
            total: values.len() as u64,
            points,
        }
    }

    /// From a histogram: each bucket at the middle of its range (so that the base and the
    /// delayed histogram are read without the buckets' one-sided bias).
    pub fn from_hist(h: &LatencyHistogram) -> Sample {
        let points: Vec<(f64, u64)> = h
            .buckets()
            .map(|(hi, c)| ((h.lowest_equivalent(hi) as f64 + hi as f64) / 2.0, c))
            .collect();
        Sample {
            total: points.iter().map(|p| p.1).sum(),
            points,
        }
    }

    /// Values counted.
    pub fn count(&self) -> u64 {
        self.total
    }

    /// The fraction of values ≤ `x`.
    pub fn cdf(&self, x: f64) -> f64 {
        if self.total == 0 {
            return 0.0;
        }
        let below: u64 = self
            .points
            .iter()
            .take_while(|(v, _)| *v <= x)
            .map(|p| p.1)
            .sum();
        below as f64 / self.total as f64
    }

    /// The smallest value with at least `q` of the sample at or below it (`q` in (0, 1]).
    pub fn quantile(&self, q: f64) -> f64 {
        let rank = ((q * self.total as f64).ceil() as u64).clamp(1, self.total.max(1));
        let mut seen = 0;
        for &(v, c) in &self.points {
            seen += c;
            if seen >= rank {
                return v;
            }
        }
        self.points.last().map_or(0.0, |p| p.0)
    }
}

/// The standard normal CDF Φ(z), from the complementary error function (Numerical
/// Recipes' `erfcc` Chebyshev fit: relative error below 1.2 × 10⁻⁷ everywhere).
pub fn normal_cdf(z: f64) -> f64 {
    let x = -z / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.5 * x.abs());
    let poly = -x * x - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let erfc = t * poly.exp();
    0.5 * if x >= 0.0 { erfc } else { 2.0 - erfc }
}

/// The CDF of the asked delay at `x` ns: the fraction of frames delayed by at most `x`.
/// Uniform is continuous on `[lo, hi]`, normal is clipped at 0 (its mass below 0 sits at
/// 0), exponential starts at 0; a degenerate one (zero width, zero sd, zero mean) is a
/// step.
pub fn delay_cdf(spec: &DelaySpec, x: f64) -> f64 {
    let step = |at: f64| if x >= at { 1.0 } else { 0.0 };
    match *spec {
        DelaySpec::Constant { ns } => step(ns as f64),
        DelaySpec::Uniform { lo_ns, hi_ns } if hi_ns == lo_ns => step(lo_ns as f64),
        DelaySpec::Uniform { lo_ns, hi_ns } => {
            ((x - lo_ns as f64) / (hi_ns - lo_ns) as f64).clamp(0.0, 1.0)
        }
        DelaySpec::Normal { mean_ns, sd_ns } => {
            if x < 0.0 {
                0.0
            } else if sd_ns == 0 {
                step(mean_ns as f64)
            } else {
                normal_cdf((x - mean_ns as f64) / sd_ns as f64)
            }
        }
        DelaySpec::Exponential { mean_ns } => {
            if x < 0.0 {
                0.0
            } else if mean_ns == 0 {
                1.0
            } else {
                1.0 - (-x / mean_ns as f64).exp()
            }
        }
    }
}

/// A range `[lo, hi]` holding all but a negligible part of the asked delay's mass.
fn delay_support(spec: &DelaySpec) -> (f64, f64) {
    match *spec {
        DelaySpec::Constant { ns } => (ns as f64, ns as f64),
        DelaySpec::Uniform { lo_ns, hi_ns } => (lo_ns as f64, hi_ns as f64),
        DelaySpec::Normal { mean_ns, sd_ns } => (
            (mean_ns as f64 - 10.0 * sd_ns as f64).max(0.0),
            mean_ns as f64 + 10.0 * sd_ns as f64,
        ),
        DelaySpec::Exponential { mean_ns } => (0.0, 40.0 * mean_ns as f64),
    }
}

/// The base sample convolved with the asked delay: the distribution the delayed round
/// trips should follow.
#[derive(Clone, Debug)]
pub struct Convolved<'a> {
    base: &'a Sample,
    spec: DelaySpec,
}

impl<'a> Convolved<'a> {
    /// `base ⊛ spec`.
    pub fn new(base: &'a Sample, spec: DelaySpec) -> Convolved<'a> {
        Convolved { base, spec }
    }

    /// `P(B + X ≤ x)`.
    pub fn cdf(&self, x: f64) -> f64 {
        if self.base.total == 0 {
            return 0.0;
        }
        let sum: f64 = self
            .base
            .points
            .iter()
            .map(|&(b, c)| c as f64 * delay_cdf(&self.spec, x - b))
            .sum();
        sum / self.base.total as f64
    }

    /// The smallest whole ns `x` with `cdf(x) ≥ q` (bisection over the support).
    pub fn quantile(&self, q: f64) -> f64 {
        let (dlo, dhi) = delay_support(&self.spec);
        let first = self.base.points.first().map_or(0.0, |p| p.0);
        let last = self.base.points.last().map_or(0.0, |p| p.0);
        let (mut lo, mut hi) = ((first + dlo).floor() - 1.0, (last + dhi).ceil() + 1.0);
        while hi - lo > 1.0 {
            let mid = ((lo + hi) / 2.0).floor();
            if self.cdf(mid) >= q {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        hi
    }
}

/// The Kolmogorov–Smirnov distance between the `measured` sample and the continuous or
/// stepped CDF `expected`, forgiving a shift of up to `slack` either way (see the module
/// documentation); 0 when the sample is empty.
pub fn ks_distance(measured: &Sample, expected: impl Fn(f64) -> f64, slack: f64) -> f64 {
    if measured.total == 0 {
        return 0.0;
    }
    let n = measured.total as f64;
    let mut d: f64 = 0.0;
    let mut below = 0u64;
    // Just below the first point the sample's CDF is 0.
    let mut prev_cdf = 0.0;
    for &(x, c) in &measured.points {
        // Over [previous point, x) the sample's CDF is prev_cdf; the expected CDF (shifted
        // right by the slack) is largest just below x.
        d = d.max(expected(x - slack - 0.5) - prev_cdf);
        below += c;
        let cdf = below as f64 / n;
        // At x the sample's CDF steps up to cdf; the expected CDF shifted left is smallest
        // there.
        d = d.max(cdf - expected(x + slack));
        prev_cdf = cdf;
    }
    d.max(0.0)
}

/// The two-sample Kolmogorov–Smirnov critical value at significance `alpha` for samples
/// of `n` and `m` values: `√(−ln(α/2)/2) · √((n + m)/(n·m))` (infinite when either is
/// empty).
pub fn ks_bound(n: u64, m: u64, alpha: f64) -> f64 {
    if n == 0 || m == 0 {
        return f64::INFINITY;
    }
    let (n, m) = (n as f64, m as f64);
    (-(alpha / 2.0).ln() / 2.0).sqrt() * ((n + m) / (n * m)).sqrt()
}

/// One quantile of the measured and of the expected distribution.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct QuantilePair {
    /// `p10`, `p50`, `p90`, `p99`.
    pub name: String,
    /// The fraction (0.1 ...).
    pub q: f64,
    /// The measured delayed round trips' quantile, ns.
    pub measured_ns: u64,
    /// The expected (base ⊛ asked) quantile, ns.
    pub expected_ns: u64,
}

/// The verdict on the shape of a delay distribution, end to end.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DistributionCheck {
    /// The asked distribution.
    pub spec: DelaySpec,
    /// KS distance between the measured delayed round trips and base ⊛ asked, with the
    /// slack.
    pub ks_distance: f64,
    /// The two-sample critical value it is held to.
    pub bound: f64,
    /// Its significance.
    pub alpha: f64,
    /// Shift forgiven either way, ns.
    pub slack_ns: u64,
    /// Delayed round trips measured.
    pub measured: u64,
    /// Base (0 µs) round trips.
    pub base: u64,
    /// `ks_distance ≤ bound`, with both samples non-empty.
    pub passed: bool,
    /// [`QUANTILES`] of both.
    pub quantiles: Vec<QuantilePair>,
}

/// Holds the `measured` delayed sample against `base ⊛ spec` (see the module
/// documentation).
pub fn check_distribution(
    base: &Sample,
    measured: &Sample,
    spec: DelaySpec,
    alpha: f64,
    slack_ns: u64,
) -> DistributionCheck {
    let expected = Convolved::new(base, spec);
    let ks = ks_distance(measured, |x| expected.cdf(x), slack_ns as f64);
    let bound = ks_bound(measured.count(), base.count(), alpha);
    DistributionCheck {
        spec,
        ks_distance: ks,
        bound,
        alpha,
        slack_ns,
        measured: measured.count(),
        base: base.count(),
        passed: measured.count() > 0 && base.count() > 0 && ks <= bound,
        quantiles: QUANTILES
            .iter()
            .map(|&(name, q)| QuantilePair {
                name: name.into(),
                q,
                measured_ns: measured.quantile(q).round() as u64,
                expected_ns: expected.quantile(q).round() as u64,
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::Sampler;
    use super::*;
    use latlab_core::hist::HistConfig;
    use latlab_core::units::Nanos;

    const N: usize = 20_000;

    /// Round trips of the element at 0 µs: 30 µs ± 2 µs, drawn with `seed`.
    fn base_values(seed: u64) -> Vec<u64> {
        let mut s = Sampler::new(
            DelaySpec::Normal {
                mean_ns: 30_000,
                sd_ns: 2_000,
            },
            seed,
        );
        (0..N).map(|_| round(s.sample())).collect()
    }

    /// To 50 ns, so that the tests' samples have few distinct values (as histograms do).
    fn round(v: u64) -> u64 {
        (v + 25) / 50 * 50
    }

    /// Delayed round trips: a base independent of the one checked against, plus draws of
    /// `spec`, plus `shift`.
    fn delayed_values(spec: DelaySpec, shift: i64) -> Vec<u64> {
        let mut d = Sampler::new(spec, 77);
        base_values(5)
            .into_iter()
            .map(|b| round((b as i64 + d.sample() as i64 + shift) as u64))
            .collect()
    }

    fn uniform(lo_us: u64, hi_us: u64) -> DelaySpec {
        DelaySpec::Uniform {
            lo_ns: lo_us * 1_000,
            hi_ns: hi_us * 1_000,
        }
    }

    fn judge(measured: &[u64], against: DelaySpec) -> DistributionCheck {
        check_distribution(
            &Sample::from_values(&base_values(3)),
            &Sample::from_values(measured),
            against,
            KS_ALPHA,
            SLACK_NS,
        )
    }

    #[test]
    fn the_normal_cdf_matches_tabulated_values() {
        for (z, p) in [
            (0.0, 0.5),
            (1.0, 0.841_344_746),
            (-1.0, 0.158_655_254),
            (1.96, 0.975_002_105),
            (-2.575_829, 0.005),
            (3.0, 0.998_650_102),
        ] {
            assert!(
                (normal_cdf(z) - p).abs() < 1e-6,
                "Φ({z}) = {}",
                normal_cdf(z)
            );
        }
    }

    #[test]
    fn delay_cdfs_have_their_shapes() {
        let u = uniform(10, 50);
        assert_eq!(delay_cdf(&u, 9_999.0), 0.0);
        assert_eq!(delay_cdf(&u, 30_000.0), 0.5);
        assert_eq!(delay_cdf(&u, 50_000.0), 1.0);
        let n = DelaySpec::Normal {
            mean_ns: 1_000,
            sd_ns: 1_000,
        };
        assert_eq!(delay_cdf(&n, -1.0), 0.0, "clipped at 0");
        assert!(
            (delay_cdf(&n, 0.0) - 0.158_655).abs() < 1e-5,
            "the clipped mass sits at 0"
        );
        let e = DelaySpec::Exponential { mean_ns: 20_000 };
        assert!((delay_cdf(&e, 20_000.0) - (1.0 - (-1.0f64).exp())).abs() < 1e-12);
        let c = DelaySpec::Constant { ns: 20_000 };
        assert_eq!(
            (delay_cdf(&c, 19_999.0), delay_cdf(&c, 20_000.0)),
            (0.0, 1.0)
        );
    }

    #[test]
    fn the_convolution_of_a_point_is_the_distribution_moved() {
        let base = Sample::from_values(&[30_000; 10]);
        let c = Convolved::new(&base, uniform(10, 50));
        assert_eq!(c.cdf(40_000.0), 0.0);
        assert_eq!(c.cdf(60_000.0), 0.5);
        assert_eq!(c.cdf(80_000.0), 1.0);
        assert!(
            (c.quantile(0.9) - 76_000.0).abs() <= 1.0,
            "{}",
            c.quantile(0.9)
        );
        // Two base points half each: the CDF is the mean of the two moved CDFs.
        let base = Sample::from_values(&[0, 0, 10_000, 10_000]);
        let c = Convolved::new(&base, DelaySpec::Exponential { mean_ns: 10_000 });
        let want = 0.5 * ((1.0 - (-2.0f64).exp()) + (1.0 - (-1.0f64).exp()));
        assert!((c.cdf(20_000.0) - want).abs() < 1e-12);
    }

    #[test]
    fn ks_distance_is_the_largest_gap_and_the_slack_forgives_a_small_shift() {
        // A sample of 0..1000 against the uniform on [0, 1000]: the gap is one step.
        let v: Vec<u64> = (1..=1_000).collect();
        let s = Sample::from_values(&v);
        let u = uniform(0, 1);
        let d = ks_distance(&s, |x| delay_cdf(&u, x), 0.0);
        assert!(d <= 0.0011, "{d}");
        // Moved by 100 ns: 10 % apart, forgiven by a 100 ns slack, not by 50 ns.
        let moved: Vec<u64> = v.iter().map(|x| x + 100).collect();
        let m = Sample::from_values(&moved);
        assert!((ks_distance(&m, |x| delay_cdf(&u, x), 0.0) - 0.1).abs() < 0.002);
        assert!(ks_distance(&m, |x| delay_cdf(&u, x), 100.0) < 0.002);
        assert!((ks_distance(&m, |x| delay_cdf(&u, x), 50.0) - 0.05).abs() < 0.002);
        assert_eq!(ks_distance(&Sample::from_values(&[]), |_| 1.0, 0.0), 0.0);
    }

    #[test]
    fn the_bound_is_the_two_sample_critical_value() {
        // c(0.05) = 1.358, c(0.01) = 1.628 (the tabulated two-sample coefficients).
        assert!((ks_bound(100, 100, 0.05) - 1.358 * 0.02f64.sqrt()).abs() < 1e-3);
        assert!((ks_bound(10_000, 10_000, 0.01) - 1.628 * 0.0002f64.sqrt()).abs() < 1e-4);
        assert!(ks_bound(0, 10, 0.01).is_infinite());
    }

    #[test]
    fn a_uniform_sample_passes_against_its_own_distribution() {
        let m = delayed_values(uniform(10, 50), 0);
        let c = judge(&m, uniform(10, 50));
        assert!(c.passed, "{c:?}");
        assert_eq!((c.measured, c.base), (N as u64, N as u64));
        let names: Vec<&str> = c.quantiles.iter().map(|q| q.name.as_str()).collect();
        assert_eq!(names, ["p10", "p50", "p90", "p99"]);
        for q in &c.quantiles {
            let off = q.measured_ns as i64 - q.expected_ns as i64;
            assert!(off.abs() < 1_000, "{q:?}");
        }
        // p50 of 30 µs ± 2 µs plus uniform 10–50 µs is 60 µs.
        assert!(
            (c.quantiles[1].expected_ns as i64 - 60_000).abs() < 300,
            "{c:?}"
        );
        // Within the slack still passes.
        assert!(judge(&delayed_values(uniform(10, 50), 1_500), uniform(10, 50)).passed);
    }

    #[test]
    fn a_uniform_sample_fails_against_other_distributions() {
        let m = delayed_values(uniform(10, 50), 0);
        for wrong in [
            uniform(10, 30),
            uniform(14, 54),
            DelaySpec::Normal {
                mean_ns: 35_000,
                sd_ns: 11_547,
            },
            DelaySpec::Normal {
                mean_ns: 30_000,
                sd_ns: 11_547,
            },
            DelaySpec::Exponential { mean_ns: 30_000 },
            DelaySpec::Constant { ns: 30_000 },
        ] {
            let c = judge(&m, wrong);
            assert!(!c.passed, "{wrong}: {c:?}");
            assert!(c.ks_distance > c.bound);
        }
        // Moved by 4 µs, beyond the 2 µs slack.
        let c = judge(&delayed_values(uniform(10, 50), 4_000), uniform(10, 50));
        assert!(!c.passed, "{c:?}");
    }

    #[test]
    fn normal_and_exponential_samples_pass_their_own_and_fail_the_others() {
        let normal = DelaySpec::Normal {
            mean_ns: 20_000,
            sd_ns: 5_000,
        };
        let exp = DelaySpec::Exponential { mean_ns: 20_000 };
        let mn = delayed_values(normal, 0);
        let me = delayed_values(exp, 0);
        assert!(judge(&mn, normal).passed, "{:?}", judge(&mn, normal));
        assert!(judge(&me, exp).passed, "{:?}", judge(&me, exp));
        assert!(!judge(&mn, exp).passed);
        assert!(!judge(&me, normal).passed);
        let other_mean = DelaySpec::Normal {
            mean_ns: 24_000,
            sd_ns: 5_000,
        };
        assert!(!judge(&mn, other_mean).passed);
    }

    #[test]
    fn histograms_are_read_at_their_buckets_middles() {
        let mut h = LatencyHistogram::new(HistConfig::default()).unwrap();
        let base = base_values(3);
        for &v in &base {
            h.record(Nanos(v));
        }
        let mut d = LatencyHistogram::new(HistConfig::default()).unwrap();
        for v in delayed_values(uniform(10, 50), 0) {
            d.record(Nanos(v));
        }
        let (bh, dh) = (Sample::from_hist(&h), Sample::from_hist(&d));
        assert_eq!(bh.count(), N as u64);
        assert!((bh.quantile(0.5) - Sample::from_values(&base).quantile(0.5)).abs() < 40.0);
        let c = check_distribution(&bh, &dh, uniform(10, 50), KS_ALPHA, SLACK_NS);
        assert!(c.passed, "{c:?}");
        let c = check_distribution(&bh, &dh, uniform(10, 30), KS_ALPHA, SLACK_NS);
        assert!(!c.passed, "{c:?}");
        let empty = Sample::from_values(&[]);
        assert!(!check_distribution(&empty, &dh, uniform(10, 50), KS_ALPHA, SLACK_NS).passed);
    }
}
