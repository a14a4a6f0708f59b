//! Latency histograms: a thin, typed layer over the `hdrhistogram` crate.
//!
//! Values are nanoseconds. The default range is 1 ns to one hour at 3 significant digits:
//! any recorded value is reproduced to within 0.1 % (the value's HdrHistogram bucket).
//! Recording never allocates and never fails: a value above the range is clamped to the
//! top and *counted* in [`LatencyHistogram::saturated`], never dropped silently.
//!
//! Histograms merge exactly ([`LatencyHistogram::merge`]) across threads, runs and hosts
//! and serialise to the standard HdrHistogram V2 compressed format, base64 encoded, so
//! any HdrHistogram implementation (Java, C, Python, Go) can read them.

use crate::parse::Percentile;
use crate::units::Nanos;
use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Range and precision of a histogram.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistConfig {
    /// Smallest distinguishable value in ns (at least 1).
    pub lowest_ns: u64,
    /// Largest trackable value in ns.
    pub highest_ns: u64,
    /// Significant decimal digits kept (1..=5).
    pub sigfig: u8,
}

impl Default for HistConfig {
    /// 1 ns to one hour at 3 significant digits.
    fn default() -> Self {
        HistConfig {
            lowest_ns: 1,
            highest_ns: 3_600 * 1_000_000_000,
            sigfig: 3,
        }
    }
}

/// Errors from creating, merging or decoding histograms.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HistError {
    /// The configuration is not valid for HdrHistogram.
    #[error("invalid histogram range or precision (lowest {} ns, highest {} ns, {} significant digits): need 1 <= lowest, 2*lowest <= highest, significant digits 1..=5", .0.lowest_ns, .0.highest_ns, .0.sigfig)]
    Config(HistConfig),
    /// Merging histograms of different precision would not be exact.
    #[error("cannot merge exactly: precision differs ({0} vs {1} significant digits)")]
    MergePrecision(u8, u8),
    /// Merging a histogram that tracks a larger range into a smaller one.
    #[error("cannot merge: the other histogram's values exceed this one's range")]
    Merge,
    /// The base64 or HdrHistogram payload is corrupt.
    #[error("histogram data is corrupt: {0}")]
    Decode(String),
}

/// Why HdrHistogram could not decode a payload, as a plain phrase (its own Debug text, e.g.
/// `IoError(Custom { kind: UnexpectedEof, .. })`, means nothing to a reader).
fn decode_reason(e: &hdrhistogram::serialization::DeserializeError) -> String {
    use hdrhistogram::serialization::DeserializeError as D;
    match e {
        D::IoError(io) if io.kind() == std::io::ErrorKind::UnexpectedEof => {
            "the encoded data ends early (truncated)".into()
        }
        D::IoError(_) => "the encoded data cannot be read (damaged compressed stream)".into(),
        D::InvalidCookie => "not an HdrHistogram encoding (unknown format marker)".into(),
        D::InvalidParameters => "the encoded range or precision is invalid".into(),
        D::UnsupportedFeature => "the encoding uses a feature this latlab cannot read".into(),
        D::UnsuitableCounterType => "a count is too large".into(),
        D::UsizeTypeTooSmall | D::EncodedArrayTooLong => {
            "the encoded counts do not fit the stated range".into()
        }
    }
}

/// A latency histogram in nanoseconds.
#[derive(Clone, Debug)]
pub struct LatencyHistogram {
    h: Histogram<u64>,
    saturated: u64,
    config: HistConfig,
}

impl PartialEq for LatencyHistogram {
    fn eq(&self, o: &Self) -> bool {
        self.h == o.h && self.saturated == o.saturated && self.config == o.config
    }
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        Self::new(HistConfig::default()).expect("default config is valid")
    }
}

impl LatencyHistogram {
    /// A new, empty histogram. All memory is allocated here, none when recording.
    pub fn new(config: HistConfig) -> Result<Self, HistError> {
        if config.sigfig == 0 || config.sigfig > 5 {
            return Err(HistError::Config(config));
        }
        let h = Histogram::new_with_bounds(config.lowest_ns, config.highest_ns, config.sigfig)
            .map_err(|_| HistError::Config(config))?;
        Ok(LatencyHistogram {
            h,
            saturated: 0,
            config,
        })
    }

    /// The range and precision.
    pub fn config(&self) -> HistConfig {
        self.config
    }

    /// Records one value. Constant time, no allocation; values above the range are clamped
    /// and counted as saturated.
    #[inline(always)]
    pub fn record(&mut self, v: Nanos) {
        self.record_n(v, 1);
    }

    /// Records `count` occurrences of one value.
    #[inline(always)]
    pub fn record_n(&mut self, v: Nanos, count: u64) {
        let mut v = v.0;
        if v > self.config.highest_ns {
            self.saturated += count;
            v = self.config.highest_ns;
        }
        // Cannot fail: v is within the histogram's range and counts are u64.
        self.h.saturating_record_n(v, count);
    }

    /// Values that exceeded the range and were recorded as the maximum.
    pub fn saturated(&self) -> u64 {
        self.saturated
    }

    /// Number of recorded values.
    pub fn count(&self) -> u64 {
        self.h.len()
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.h.is_empty()
    }

    /// Smallest recorded value (lowest equivalent of its bucket); 0 when empty.
    pub fn min(&self) -> u64 {
        if self.is_empty() {
            0
        } else {
            self.h.min()
        }
    }

    /// Largest recorded value (highest equivalent of its bucket); 0 when empty.
    pub fn max(&self) -> u64 {
        self.h.max()
    }

    /// Mean of the recorded values (bucket midpoints), for display only.
    pub fn mean(&self) -> f64 {
        self.h.mean()
    }

    /// Geometric mean of the recorded values (bucket midpoints, values below 1 taken as 1),
    /// for comparison with tools that print only this (memaslap); 0 when empty.
    pub fn geometric_mean(&self) -> f64 {
        if self.is_empty() {
            return 0.0;
        }
        let (sum, n) = self.h.iter_recorded().fold((0.0, 0u64), |(s, n), it| {
            let v = self.h.median_equivalent(it.value_iterated_to()).max(1) as f64;
            (
                s + v.ln() * it.count_at_value() as f64,
                n + it.count_at_value(),
            )
        });
        (sum / n as f64).exp()
    }

    /// Standard deviation (bucket midpoints), for display only.
    pub fn stdev(&self) -> f64 {
        self.h.stdev()
    }

    /// The value at 1-based `rank` in sorted order, reported as the highest value
    /// equivalent to it (the convention of HdrHistogram's `value_at_quantile`).
    /// Ranks beyond the count give the maximum; 0 when empty.
    pub fn value_at_rank(&self, rank: u64) -> u64 {
        if self.is_empty() {
            return 0;
        }
        let rank = rank.clamp(1, self.count());
        let mut seen = 0u64;
        for it in self.h.iter_recorded() {
            seen += it.count_at_value();
            if seen >= rank {
                return self.h.highest_equivalent(it.value_iterated_to());
            }
        }
        self.max()
    }

    /// The value at a percentile (nearest-rank definition, see [`Percentile::rank`]).
    pub fn value_at(&self, p: Percentile) -> u64 {
        self.value_at_rank(p.rank(self.count()))
    }

    /// Whether two values fall into the same bucket (are indistinguishable here).
    pub fn equivalent(&self, a: u64, b: u64) -> bool {
        self.h.equivalent(a, b)
    }

    /// Lowest value equivalent to `v`.
    pub fn lowest_equivalent(&self, v: u64) -> u64 {
        self.h.lowest_equivalent(v)
    }

    /// Highest value equivalent to `v`.
    pub fn highest_equivalent(&self, v: u64) -> u64 {
        self.h.highest_equivalent(v)
    }

    /// Every non-empty bucket in ascending order as (highest equivalent value, count).
    pub fn buckets(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.h.iter_recorded().map(|it| {
            (
                self.h.highest_equivalent(it.value_iterated_to()),
                it.count_at_value(),
            )
        })
    }

    /// Adds every value of `other` to `self`, exactly: the merged histogram is the one that
    /// would have recorded both sets of values.
    pub fn merge(&mut self, other: &LatencyHistogram) -> Result<(), HistError> {
        if other.config.sigfig != self.config.sigfig {
            return Err(HistError::MergePrecision(
                self.config.sigfig,
                other.config.sigfig,
            ));
        }
        if other.config.highest_ns > self.config.highest_ns && other.max() > self.config.highest_ns
        {
            return Err(HistError::Merge);
        }
        self.h.add(&other.h).map_err(|_| HistError::Merge)?;
        self.saturated += other.saturated;
        Ok(())
    }

    /// Clears all counts, keeping the allocation.
    pub fn reset(&mut self) {
        self.h.reset();
        self.saturated = 0;
    }

    /// The underlying HdrHistogram.
    pub fn inner(&self) -> &Histogram<u64> {
        &self.h
    }

    /// Serialises to the HdrHistogram V2 compressed (deflate) format, base64 encoded —
    /// the form used by HdrHistogram interval logs (`HISTFAA…`).
    pub fn to_base64(&self) -> String {
        let mut buf = Vec::new();
        V2DeflateSerializer::new()
            .serialize(&self.h, &mut buf)
            .expect("serialising into a Vec cannot fail");
        base64::engine::general_purpose::STANDARD.encode(buf)
    }

    /// Decodes [`Self::to_base64`] output (or any V2 / V2-deflate HdrHistogram, base64).
    /// `config` gives the range for further recording; `saturated` is restored from the
    /// result file alongside.
    pub fn from_base64(s: &str, config: HistConfig, saturated: u64) -> Result<Self, HistError> {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(s.trim())
            .map_err(|e| HistError::Decode(format!("base64: {e}")))?;
        let decoded: Histogram<u64> = Deserializer::new()
            .deserialize(&mut bytes.as_slice())
            .map_err(|e| HistError::Decode(decode_reason(&e)))?;
        let mut out = LatencyHistogram::new(config)?;
        out.h
            .add(&decoded)
            .map_err(|_| HistError::Decode("values exceed the stated range".into()))?;
        out.saturated = saturated;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hist_of(values: &[u64]) -> LatencyHistogram {
        let mut h = LatencyHistogram::default();
        for &v in values {
            h.record(Nanos(v));
        }
        h
    }

    #[test]
    fn records_and_reports_extremes() {
        let h = hist_of(&[20, 21, 19, 5_000, 1_000_000]);
        assert_eq!(h.count(), 5);
        assert_eq!(h.min(), 19);
        assert!(h.equivalent(h.max(), 1_000_000));
        assert_eq!(h.value_at_rank(1), 19);
        assert_eq!(h.value_at_rank(3), 21);
        assert_eq!(h.value_at_rank(99), h.max());
    }

    #[test]
    fn geometric_mean_is_the_mean_of_logs_within_bucket_precision() {
        assert_eq!(LatencyHistogram::default().geometric_mean(), 0.0);
        // 10 µs and 40 µs: geometric mean 20 µs, arithmetic 25 µs.
        let h = hist_of(&[10_000, 40_000]);
        assert!((h.geometric_mean() - 20_000.0).abs() < 20.0);
        assert!((h.mean() - 25_000.0).abs() < 25.0);
        let skewed = hist_of(&[1_000, 1_000, 1_000, 1_000_000]);
        let want = (1_000f64.ln() * 3.0 + 1_000_000f64.ln()) / 4.0;
        assert!((skewed.geometric_mean() / want.exp() - 1.0).abs() < 1e-3);
    }

    #[test]
    fn out_of_range_values_are_counted_not_lost() {
        let mut h = LatencyHistogram::new(HistConfig {
            lowest_ns: 1,
            highest_ns: 1_000_000,
            sigfig: 3,
        })
        .unwrap();
        h.record(Nanos(5));
        h.record(Nanos(10_000_000));
        assert_eq!(h.count(), 2);
        assert_eq!(h.saturated(), 1);
        assert!(h.equivalent(h.max(), 1_000_000));
    }

    #[test]
    fn bad_config_is_an_error() {
        assert!(LatencyHistogram::new(HistConfig {
            lowest_ns: 0,
            highest_ns: 10,
            sigfig: 3
        })
        .is_err());
        assert!(LatencyHistogram::new(HistConfig {
            lowest_ns: 1,
            highest_ns: 1000,
            sigfig: 6
        })
        .is_err());
    }

    #[test]
    fn one_hour_is_trackable_at_three_digits() {
        let h = hist_of(&[1, 3_600_000_000_000]);
        assert_eq!(h.saturated(), 0);
        let top = h.max() as f64;
        assert!((top - 3.6e12).abs() / 3.6e12 < 1e-3);
    }

    #[test]
    fn merge_is_exact() {
        let mut a = hist_of(&[1, 2, 3, 1000]);
        let b = hist_of(&[4, 5, 1_000_000]);
        a.merge(&b).unwrap();
        assert_eq!(a, hist_of(&[1, 2, 3, 1000, 4, 5, 1_000_000]));
        let coarse = LatencyHistogram::new(HistConfig {
            sigfig: 2,
            ..HistConfig::default()
        })
        .unwrap();
        assert_eq!(a.merge(&coarse), Err(HistError::MergePrecision(3, 2)));
    }

    #[test]
    fn base64_round_trip_is_identical() {
        let h = hist_of(&[17, 20, 20, 21, 35, 900, 12_345, 7_000_000]);
        let s = h.to_base64();
        assert!(s.starts_with("HISTF"), "{s}");
        let back = LatencyHistogram::from_base64(&s, h.config(), 0).unwrap();
        assert_eq!(back, h);
        assert!(LatencyHistogram::from_base64("not base64!", h.config(), 0).is_err());
        assert!(LatencyHistogram::from_base64("SElTVEZBQUFB", h.config(), 0).is_err());
    }
}
