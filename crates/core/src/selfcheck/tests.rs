//! Each check on synthetic data it must fail and data it must pass, from seeded generators:
//! deterministic, no clock.

use super::*;
use crate::hist::HistConfig;

/// The project's seeded generator, with normal draws (Box–Muller) for these tests.
struct Rng(crate::rng::Rng);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(crate::rng::Rng::new(seed))
    }
    fn next(&mut self) -> u64 {
        self.0.next_u64()
    }
    fn unit(&mut self) -> f64 {
        self.0.unit_open0()
    }
    fn exp(&mut self, mean: f64) -> f64 {
        self.0.exponential(mean)
    }
    fn normal(&mut self) -> f64 {
        let (u, v) = (self.unit(), self.unit());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
}

fn exp_gaps(seed: u64, n: usize, mean: f64) -> Vec<f64> {
    let mut r = Rng::new(seed);
    (0..n).map(|_| r.exp(mean)).collect()
}

/// Bursty arrivals: bursts of `b` sends 1 µs apart, the bursts Poisson with the same
/// overall mean gap.
fn bursty_gaps(seed: u64, n: usize, mean: f64, b: usize) -> Vec<f64> {
    let mut r = Rng::new(seed);
    (0..n)
        .map(|i| {
            if i % b == 0 {
                r.exp(mean * b as f64)
            } else {
                1_000.0
            }
        })
        .collect()
}

/// An AR(1) latency series around 20 µs: x_k = φ·x_{k−1} + noise.
fn ar1(seed: u64, n: usize, phi: f64) -> Vec<u64> {
    let mut r = Rng::new(seed);
    let mut x = 0.0;
    (0..n)
        .map(|_| {
            x = phi * x + r.normal();
            (20_000.0 + 1_000.0 * x).max(1.0) as u64
        })
        .collect()
}

#[test]
fn a_schedule_passes_only_when_every_scheduled_send_went_out() {
    let all = schedule_sent(3_000, 0, "probes");
    assert_eq!(all.outcome, Outcome::Pass, "{}", all.line());
    assert_eq!(all.value, Some(0.0));
    let some = schedule_sent(2_000_000, 1_500_000, "requests");
    assert_eq!(some.outcome, Outcome::Fail, "{}", some.line());
    assert!((some.value.unwrap() - 0.75).abs() < 1e-12);
    assert!(
        some.detail
            .contains("1500000 of 2000000 scheduled requests (75.0 %)"),
        "{}",
        some.detail
    );
    // one unsent send is one too many
    assert_eq!(
        schedule_sent(10_000_000, 1, "probes").outcome,
        Outcome::Fail
    );
    assert_eq!(schedule_sent(0, 0, "probes").outcome, Outcome::Inconclusive);
}

#[test]
fn throughput_within_two_percent_passes_and_an_under_achieved_rate_fails() {
    let ok = throughput(9_990.0, 10_000.0, "pps");
    assert_eq!(ok.outcome, Outcome::Pass, "{}", ok.line());
    assert!((ok.value.unwrap() - 0.001).abs() < 1e-9);
    let low = throughput(9_500.0, 10_000.0, "pps");
    assert_eq!(low.outcome, Outcome::Fail, "{}", low.line());
    assert!(low.detail.contains("-5.00 %"), "{}", low.detail);
    assert!(low.detail.contains("did not offer"), "{}", low.detail);
    // over-achieving is off target too
    assert_eq!(throughput(10_300.0, 10_000.0, "pps").outcome, Outcome::Fail);
    // the boundary is inclusive
    assert_eq!(throughput(9_800.0, 10_000.0, "pps").outcome, Outcome::Pass);
    assert_eq!(
        throughput(5.0, 0.0, "pps").outcome,
        Outcome::Inconclusive,
        "no target"
    );
}

#[test]
fn anderson_darling_is_small_for_exact_exponential_quantiles_and_large_for_uniform_data() {
    // the exponential's own quantiles at (i - 0.5)/n fit it as well as a sample can
    let n = 500;
    let q: Vec<f64> = (0..n)
        .map(|i| -(1.0 - (i as f64 + 0.5) / n as f64).ln() * 100.0)
        .collect();
    let a = anderson_darling_exponential(&q).unwrap();
    assert!(a < 0.1, "{a}");
    let u: Vec<f64> = (0..n).map(|i| i as f64 + 1.0).collect();
    let b = anderson_darling_exponential(&u).unwrap();
    assert!(b > AD_EXP_CRITICAL_1PCT * 5.0, "{b}");
    assert_eq!(anderson_darling_exponential(&[1.0]), None);
    assert_eq!(anderson_darling_exponential(&[0.0, 0.0]), None);
}

#[test]
fn poisson_arrivals_pass_and_bursty_arrivals_fail_anderson_darling() {
    let ok = poisson_arrivals(&exp_gaps(7, 2_000, 100_000.0));
    assert_eq!(ok.outcome, Outcome::Pass, "{}", ok.line());
    let bursty = poisson_arrivals(&bursty_gaps(7, 2_000, 100_000.0, 4));
    assert_eq!(bursty.outcome, Outcome::Fail, "{}", bursty.line());
    assert!(bursty.value.unwrap() > AD_EXP_CRITICAL_1PCT);
    // a generator that cannot send two probes closer than a minimal gap (here 20 % of the
    // mean) is not Poisson either
    let floored: Vec<f64> = exp_gaps(9, 2_000, 80_000.0)
        .into_iter()
        .map(|g| g + 20_000.0)
        .collect();
    assert_eq!(poisson_arrivals(&floored).outcome, Outcome::Fail);
    // constant gaps are as far from exponential as can be
    assert_eq!(poisson_arrivals(&[100_000.0; 500]).outcome, Outcome::Fail);
    assert_eq!(
        poisson_arrivals(&exp_gaps(7, 10, 1.0)).outcome,
        Outcome::Inconclusive
    );
}

#[test]
fn evenly_spaced_sends_pass_and_bursts_fail_the_constant_rate_check() {
    let mut r = Rng::new(3);
    // 100 µs gaps with ±1 µs of send jitter
    let even: Vec<f64> = (0..2_000).map(|_| 100_000.0 + 700.0 * r.normal()).collect();
    let ok = constant_arrivals(&even, 100_000.0);
    assert_eq!(ok.outcome, Outcome::Pass, "{}", ok.line());
    // the same rate sent in pairs
    let pairs: Vec<f64> = (0..2_000)
        .map(|i| if i % 2 == 0 { 1_000.0 } else { 199_000.0 })
        .collect();
    let bad = constant_arrivals(&pairs, 100_000.0);
    assert_eq!(bad.outcome, Outcome::Fail, "{}", bad.line());
    assert!(
        bad.detail.contains("2000 more than 10 % off"),
        "{}",
        bad.detail
    );
    // Poisson arrivals are not constant
    assert_eq!(
        constant_arrivals(&exp_gaps(5, 2_000, 100_000.0), 100_000.0).outcome,
        Outcome::Fail
    );
    assert_eq!(
        constant_arrivals(&[1.0; 10], 1.0).outcome,
        Outcome::Inconclusive
    );
}

#[test]
fn spearman_of_monotone_pairs_is_one_and_ties_share_ranks() {
    assert_eq!(ranks(&[5, 1, 5, 3]), vec![3.5, 1.0, 3.5, 2.0]);
    let r = spearman(&[1, 2, 3, 4], &[10, 20, 30, 1_000]).unwrap();
    assert!((r - 1.0).abs() < 1e-12);
    let r = spearman(&[1, 2, 3, 4], &[4, 3, 2, 1]).unwrap();
    assert!((r + 1.0).abs() < 1e-12);
    assert_eq!(spearman(&[1, 1, 1], &[1, 2, 3]), None);
}

#[test]
fn independent_latencies_pass_and_correlated_ones_fail_with_the_lag_at_which_they_pass() {
    let iid = ar1(11, 20_000, 0.0);
    let ok = independence(&iid, iid.len());
    assert_eq!(ok.outcome, Outcome::Pass, "{}", ok.line());
    assert_eq!(passing_lag(&iid, iid.len()), Some(1));
    // AR(1) with φ = 0.5: ρ(lag) ≈ 0.5^lag, above 0.1 at lag 2 (0.25), below at lag 5
    let corr = ar1(11, 20_000, 0.5);
    let bad = independence(&corr, corr.len());
    assert_eq!(bad.outcome, Outcome::Fail, "{}", bad.line());
    assert!(bad.value.unwrap() > 0.4, "{}", bad.line());
    assert_eq!(passing_lag(&corr, corr.len()), Some(5));
    assert!(bad.detail.contains("passes at lag 5"), "{}", bad.detail);
    // a slow drift under the noise: correlated at every lag the windows allow
    let mut r = Rng::new(5);
    let stuck: Vec<u64> = (0..4_000)
        .map(|i| 20_000 + 10 * (i % 1_000) + (100.0 * r.unit()) as u64)
        .collect();
    let v = independence(&stuck, 1_000);
    assert_eq!(v.outcome, Outcome::Fail);
    assert!(v.detail.contains("at no lag up to 500"), "{}", v.detail);
}

#[test]
fn lag_pairs_skip_lost_samples_and_never_span_windows() {
    let v = [1, 2, MISSING, 4, 5, 6];
    let (a, b) = lag_pairs(&v, 3, 1);
    // window [1, 2, -]: (1, 2); window [4, 5, 6]: (4, 5), (5, 6)
    assert_eq!((a, b), (vec![1, 4, 5], vec![2, 5, 6]));
    // two windows, each a rising ramp: across the seam the pair (high, low) would be added
    let ramp: Vec<u64> = (0..40).chain(0..40).collect();
    let within = rank_autocorrelation(&ramp, 40);
    assert!((within[0].1 - 1.0).abs() < 1e-12, "{within:?}");
    assert_eq!(
        independence(&[5; 10], 10).outcome,
        Outcome::Inconclusive,
        "too few pairs"
    );
}

#[test]
fn mann_kendall_p_is_exact_for_small_series() {
    // six strictly rising values: S = 15, one permutation of 720 in each direction
    let up: Vec<u64> = (1..=6).collect();
    assert_eq!(mann_kendall_s(&up), 15);
    assert!((mann_kendall_p(15, 6, &[]) - 2.0 / 720.0).abs() < 1e-12);
    // S = 0 is the centre: p = 1
    assert!((mann_kendall_p(0, 6, &[]) - 1.0).abs() < 1e-12);
    // n = 4, S = 4 (one inversion): P(inversions <= 1) = 4/24, two-sided 8/24
    assert!((mann_kendall_p(4, 4, &[]) - 8.0 / 24.0).abs() < 1e-12);
    // the normal approximation takes over smoothly beyond 40 values
    let exact = mann_kendall_p(150, 40, &[]);
    let approx = mann_kendall_p(150, 41, &[]);
    assert!((exact - approx).abs() < 0.02, "{exact} {approx}");
    assert_eq!(sen_slope(&[10, 20, 30, 40]), 10.0);
}

#[test]
fn a_drifting_series_fails_and_a_stationary_one_passes_the_trend_test() {
    let mut r = Rng::new(21);
    // interval medians around 20 µs with ±200 ns of noise
    let flat: Vec<u64> = (0..30)
        .map(|_| (20_000.0 + 200.0 * r.normal()) as u64)
        .collect();
    let ok = stationarity(&flat);
    assert_eq!(ok.outcome, Outcome::Pass, "{}", ok.line());
    // the same noise on a drift of 50 ns per interval (7 % over the run)
    let drift: Vec<u64> = flat
        .iter()
        .enumerate()
        .map(|(i, &m)| m + 50 * i as u64)
        .collect();
    let bad = stationarity(&drift);
    assert_eq!(bad.outcome, Outcome::Fail, "{}", bad.line());
    assert!(bad.detail.contains("drifted"), "{}", bad.detail);
    // long series go through the normal approximation, with ties
    let long_flat: Vec<u64> = (0..80).map(|_| 20_000 + (r.next() % 8) * 100).collect();
    assert_eq!(stationarity(&long_flat).outcome, Outcome::Pass);
    let long_drift: Vec<u64> = long_flat
        .iter()
        .enumerate()
        .map(|(i, &m)| m + 20 * i as u64)
        .collect();
    assert_eq!(stationarity(&long_drift).outcome, Outcome::Fail);
    // five intervals cannot reach the 1 % level even when strictly monotone
    let five = stationarity(&[1, 2, 3, 4, 5]);
    assert_eq!(five.outcome, Outcome::Inconclusive, "{}", five.line());
    assert_eq!(
        stationarity(&[1, 2, 3, 4, 5, 6]).outcome,
        Outcome::Fail,
        "six strictly rising medians: p = 2/720"
    );
}

#[test]
fn ci_targets_parse_as_percentile_and_width() {
    let t = CiTarget::parse("p99:5us").unwrap();
    assert_eq!(t.percentile, Percentile::LADDER[2]);
    assert_eq!(t.width, Nanos(5_000));
    assert_eq!(t.to_string(), "p99:5.00us");
    let t = CiTarget::parse("99.9:250ns").unwrap();
    assert_eq!(t.percentile, Percentile::LADDER[3]);
    assert_eq!(t.width, Nanos(250));
    for bad in [
        "p99", "p100:5us", "p99:0us", "p99:-5us", "p99:5", "x:5us", "NaN", "inf", "-inf", "1e300",
        ":", "p0:5us", "p99:NaN",
    ] {
        let e = CiTarget::parse(bad).unwrap_err();
        assert!(e.contains("pNN:WIDTH"), "{bad}: {e}");
        assert!(e.contains(bad), "{bad}: {e}");
    }
}

fn hist_of(seed: u64, n: usize) -> LatencyHistogram {
    let mut h = LatencyHistogram::new(HistConfig::default()).unwrap();
    let mut r = Rng::new(seed);
    for _ in 0..n {
        h.record(Nanos(10_000 + r.exp(2_000.0) as u64));
    }
    h
}

#[test]
fn the_ci_width_verdict_says_whether_the_rule_or_the_maximum_stopped_the_run() {
    let p99 = Percentile::LADDER[2];
    let many = hist_of(1, 200_000);
    let w = interval_width(&many, p99, 0.95).unwrap();
    let target = CiTarget {
        percentile: p99,
        width: Nanos(w + 1),
    };
    assert!(meets(&many, target, 0.95));
    let stop = StopReport {
        measured: Nanos::from_secs(3),
        max: Nanos::from_secs(10),
        stopped_early: true,
    };
    let v = ci_width(&many, target, 0.95, stop);
    assert_eq!(v.outcome, Outcome::Pass, "{}", v.line());
    assert!(v.detail.contains("stopped the run after 3"), "{}", v.detail);
    // a narrower target than the data allow: the maximum ended the run, and it fails
    let tight = CiTarget {
        percentile: p99,
        width: Nanos(w / 4),
    };
    assert!(!meets(&many, tight, 0.95));
    let v = ci_width(
        &many,
        tight,
        0.95,
        StopReport {
            stopped_early: false,
            ..stop
        },
    );
    assert_eq!(v.outcome, Outcome::Fail);
    assert!(
        v.detail.contains("reached its maximum duration 10"),
        "{}",
        v.detail
    );
    // 50 samples cannot bound p99 from above
    let few = hist_of(2, 50);
    assert_eq!(interval_width(&few, p99, 0.95), None);
    let v = ci_width(&few, target, 0.95, stop);
    assert_eq!((v.outcome, v.value), (Outcome::Fail, None));
}

#[test]
fn verdicts_serialise_with_their_rule() {
    let v = throughput(9_500.0, 10_000.0, "pps");
    let json = serde_json::to_value(&v).unwrap();
    assert_eq!(json["outcome"], "fail");
    assert_eq!(json["pass_when"], "at_most");
    assert_eq!(json["threshold"], 0.02);
    let back: Verdict = serde_json::from_value(json).unwrap();
    assert_eq!(back, v);
    assert!(
        v.line().starts_with(
            "throughput: FAIL — |achieved / target - 1| = 0.05000 (passes when <= 0.02000)"
        ),
        "{}",
        v.line()
    );
    let none = Verdict::inconclusive("x", "y", 1.0, PassWhen::AtLeast, "z".into());
    let back: Verdict = serde_json::from_value(serde_json::to_value(&none).unwrap()).unwrap();
    assert_eq!(back.value, None);
}
