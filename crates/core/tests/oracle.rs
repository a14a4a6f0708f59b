//! Percentiles from histograms against an exact, sort-based oracle, and exact merging.
//!
//! "Within the histogram's precision" means: the reported value lies in the same bucket as
//! the exact order statistic, so it differs from it by at most the bucket width, which
//! for `sigfig` significant digits is below `exact * 10^-sigfig`.

use latlab_core::hist::{HistConfig, LatencyHistogram};
use latlab_core::parse::Percentile;
use latlab_core::stats::{summarize, DEFAULT_CONFIDENCE};
use latlab_core::units::Nanos;
use proptest::prelude::*;

fn check_against_oracle(values: &[u64], sigfig: u8, percentiles: &[Percentile]) {
    let cfg = HistConfig {
        sigfig,
        ..HistConfig::default()
    };
    let mut h = LatencyHistogram::new(cfg).unwrap();
    for &v in values {
        h.record(Nanos(v));
    }
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    let n = sorted.len() as u64;
    assert_eq!(h.count(), n);
    let tol = 10f64.powi(-i32::from(sigfig));
    for &p in percentiles {
        let exact = sorted[(p.rank(n) - 1) as usize];
        let got = h.value_at(p);
        assert!(h.equivalent(got, exact), "{p}: got {got}, exact {exact}");
        let err = got.abs_diff(exact) as f64;
        assert!(
            err <= (exact as f64 * tol).max(1.0),
            "{p}: got {got}, exact {exact}, sigfig {sigfig}"
        );
    }
    assert!(h.equivalent(h.min(), sorted[0]));
    assert!(h.equivalent(h.max(), *sorted.last().unwrap()));
}

fn all_percentiles() -> Vec<Percentile> {
    let mut ps = Percentile::LADDER.to_vec();
    ps.extend(
        [1u64, 10, 25, 75, 95]
            .iter()
            .map(|&x| Percentile::from_fraction(x, 100).unwrap()),
    );
    ps.push(Percentile::from_fraction(1, 1).unwrap());
    ps
}

/// Latency-shaped values: mostly small, with occasional huge outliers, spanning 1 ns..1 h.
fn latency_values() -> impl Strategy<Value = Vec<u64>> {
    prop::collection::vec(
        prop_oneof![
            8 => 1u64..100,
            4 => 100u64..100_000,
            1 => 100_000u64..3_600_000_000_000,
        ],
        1..3000,
    )
}

proptest! {
    #[test]
    fn percentiles_match_sorted_oracle(values in latency_values(), sigfig in 2u8..=4) {
        check_against_oracle(&values, sigfig, &all_percentiles());
    }

    #[test]
    fn merge_equals_recording_everything(a in latency_values(), b in latency_values(), c in latency_values()) {
        let mut parts: Vec<LatencyHistogram> = Vec::new();
        let mut all = LatencyHistogram::default();
        for chunk in [&a, &b, &c] {
            let mut h = LatencyHistogram::default();
            for &v in chunk.iter() {
                h.record(Nanos(v));
                all.record(Nanos(v));
            }
            parts.push(h);
        }
        let mut merged = LatencyHistogram::default();
        for p in &parts {
            merged.merge(p).unwrap();
        }
        prop_assert_eq!(&merged, &all);
        // and therefore every statistic agrees exactly
        prop_assert_eq!(
            summarize(&merged, &Percentile::LADDER, DEFAULT_CONFIDENCE),
            summarize(&all, &Percentile::LADDER, DEFAULT_CONFIDENCE)
        );
    }

    #[test]
    fn serialisation_round_trip_is_exact(values in latency_values()) {
        let mut h = LatencyHistogram::default();
        for &v in &values {
            h.record(Nanos(v));
        }
        let back = LatencyHistogram::from_base64(&h.to_base64(), h.config(), h.saturated()).unwrap();
        prop_assert_eq!(back, h);
    }

    #[test]
    fn confidence_interval_brackets_the_estimate(values in latency_values()) {
        let mut h = LatencyHistogram::default();
        for &v in &values {
            h.record(Nanos(v));
        }
        for e in summarize(&h, &Percentile::LADDER, DEFAULT_CONFIDENCE).percentiles {
            if let Some(lo) = e.ci_low_ns {
                prop_assert!(lo <= e.value_ns);
            }
            if let Some(hi) = e.ci_high_ns {
                prop_assert!(hi >= e.value_ns);
            }
        }
    }
}

/// The acceptance check: 10^6 random samples (seeded), every ladder percentile and
/// more, within the stated 3-significant-digit precision.
#[test]
fn one_million_samples_agree_with_the_oracle() {
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    let values: Vec<u64> = (0..1_000_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // log-uniform over 10 ns .. 10 ms: every decade equally represented
            let decade = 1 + x % 6;
            let base = 10u64.pow(decade as u32);
            base + (x >> 8) % (9 * base)
        })
        .collect();
    check_against_oracle(&values, 3, &all_percentiles());
}
