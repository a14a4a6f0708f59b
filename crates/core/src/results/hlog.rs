//! Time series as a standard HdrHistogram interval log (`.hlog`): one histogram per
//! interval and series, tagged with the series name, readable by `HistogramLogProcessor`
//! and every HdrHistogram log reader.

use crate::hist::{HistConfig, LatencyHistogram};
use hdrhistogram::serialization::interval_log::{
    IntervalLogIterator, IntervalLogWriterBuilder, LogEntry, Tag,
};
use hdrhistogram::serialization::V2DeflateSerializer;
use std::time::{Duration, SystemTime};

/// One interval of one series.
#[derive(Clone, Debug, PartialEq)]
pub struct Interval {
    /// Series name (the log's tag; must not contain spaces, commas or colons).
    pub tag: String,
    /// Start of the interval relative to the log's start time.
    pub start: Duration,
    /// Length of the interval.
    pub duration: Duration,
    /// The values recorded in it.
    pub hist: LatencyHistogram,
}

/// Errors writing or reading interval logs.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HlogError {
    /// A tag that the format cannot hold.
    #[error("interval-log tag '{0}' must not contain spaces, commas or colons")]
    BadTag(String),
    /// The log text could not be parsed.
    #[error("interval log is malformed: {0}")]
    Malformed(String),
}

/// Renders an interval log: a header with the start time and `comment`, then one line per
/// interval in the given order.
pub fn write(
    start: SystemTime,
    comment: &str,
    intervals: &[Interval],
) -> Result<Vec<u8>, HlogError> {
    let mut out = Vec::new();
    let mut ser = V2DeflateSerializer::new();
    {
        let mut w = IntervalLogWriterBuilder::new()
            .add_comment(comment)
            .with_start_time(start)
            .with_base_time(start)
            .with_max_value_divisor(1.0)
            .begin_log_with(&mut out, &mut ser)
            .map_err(|e| HlogError::Malformed(format!("{e:?}")))?;
        for iv in intervals {
            let tag = Tag::new(&iv.tag).ok_or_else(|| HlogError::BadTag(iv.tag.clone()))?;
            w.write_histogram(iv.hist.inner(), iv.start, iv.duration, Some(tag))
                .map_err(|e| HlogError::Malformed(format!("{e:?}")))?;
        }
    }
    Ok(out)
}

/// Parses an interval log back into intervals (histograms get `config`'s range).
pub fn read(bytes: &[u8], config: HistConfig) -> Result<Vec<Interval>, HlogError> {
    let mut out = Vec::new();
    for entry in IntervalLogIterator::new(bytes) {
        let entry = entry.map_err(|e| HlogError::Malformed(format!("{e:?}")))?;
        if let LogEntry::Interval(ilh) = entry {
            let hist = LatencyHistogram::from_base64(ilh.encoded_histogram(), config, 0)
                .map_err(|e| HlogError::Malformed(e.to_string()))?;
            out.push(Interval {
                tag: ilh
                    .tag()
                    .map(|t| t.as_str().to_string())
                    .unwrap_or_default(),
                start: duration_from_secs(ilh.start_timestamp()),
                duration: duration_from_secs(ilh.duration()),
                hist,
            });
        }
    }
    Ok(out)
}

fn duration_from_secs(d: Duration) -> Duration {
    // Timestamps are written with millisecond precision.
    Duration::from_millis(d.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::Nanos;

    #[test]
    fn interval_log_round_trip() {
        let mut a = LatencyHistogram::default();
        let mut b = LatencyHistogram::default();
        for v in 1..=500u64 {
            a.record(Nanos(v * 3));
            b.record(Nanos(v * 1000));
        }
        let ivs = vec![
            Interval {
                tag: "rdtsc".into(),
                start: Duration::from_millis(0),
                duration: Duration::from_secs(1),
                hist: a,
            },
            Interval {
                tag: "rdtsc".into(),
                start: Duration::from_secs(1),
                duration: Duration::from_secs(1),
                hist: b,
            },
        ];
        let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let bytes = write(start, "latlab host clocks", &ivs).unwrap();
        let text = String::from_utf8(bytes.clone()).unwrap();
        assert!(text.contains("#[StartTime: 1800000000"), "{text}");
        assert!(text.contains("Tag=rdtsc,"), "{text}");
        let back = read(&bytes, HistConfig::default()).unwrap();
        assert_eq!(back, ivs);
        assert!(matches!(
            write(
                start,
                "",
                &[Interval {
                    tag: "a b".into(),
                    ..ivs[0].clone()
                }]
            ),
            Err(HlogError::BadTag(_))
        ));
    }
}
