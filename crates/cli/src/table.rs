//! Plain-text tables for the terminal, and the cell formats every table shares: an
//! unsupported percentile is printed as `unsupported`, never as a bare number.

use latlab_core::stats::{PercentileEstimate, Summary};
use latlab_core::units::{format_decimal, format_ns};

pub use latlab_core::text::Table;

/// A nanosecond value for a table cell.
pub fn ns(v: u64) -> String {
    format_ns(v as f64)
}

/// A percentile value for a table cell: the value when supported, else `unsupported`.
pub fn estimate(e: &PercentileEstimate) -> String {
    if e.supported {
        ns(e.value_ns)
    } else {
        "unsupported".to_string()
    }
}

/// The confidence interval of an estimate: `[lo, hi]`, with open ends as `-` / `>max`.
pub fn interval(e: &PercentileEstimate) -> String {
    let lo = e.ci_low_ns.map(ns).unwrap_or_else(|| "-".into());
    let hi = e.ci_high_ns.map(ns).unwrap_or_else(|| ">max".into());
    format!("[{lo}, {hi}]")
}

/// The full vertical summary of one series, as `latlab show` prints it.
pub fn summary_block(name: &str, s: &Summary) -> String {
    let mut t = Table::new([
        "statistic",
        "value",
        &format!("{}% CI", format_decimal(s.confidence * 100.0, 6)),
        "note",
    ]);
    t.row(vec![
        "min".into(),
        ns(s.min_ns),
        String::new(),
        String::new(),
    ]);
    for e in &s.percentiles {
        let note = if e.supported {
            String::new()
        } else {
            let (num, den) = e.percentile.tail_count(s.count);
            format!(
                "unsupported: N(1-p) = {:.1} < 10 samples beyond",
                num as f64 / den as f64
            )
        };
        let ci = if e.supported {
            interval(e)
        } else {
            String::new()
        };
        t.row(vec![e.name.clone(), estimate(e), ci, note]);
    }
    t.row(vec![
        "max".into(),
        ns(s.max_ns),
        String::new(),
        String::new(),
    ]);
    t.row(vec![
        "mean".into(),
        format_ns(s.mean_ns),
        String::new(),
        String::new(),
    ]);
    let mut out = format!("{name}: {} samples", s.count);
    if s.saturated > 0 {
        out.push_str(&format!(
            ", {} above the histogram range (recorded as its maximum)",
            s.saturated
        ));
    }
    out.push('\n');
    for line in t.render().lines() {
        out.push_str("  ");
        out.push_str(line);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use latlab_core::hist::LatencyHistogram;
    use latlab_core::parse::Percentile;
    use latlab_core::stats::summarize;
    use latlab_core::units::Nanos;

    #[test]
    fn unsupported_is_never_a_bare_number() {
        let mut h = LatencyHistogram::default();
        for v in 1..=10_000u64 {
            h.record(Nanos(v));
        }
        let s = summarize(&h, &Percentile::LADDER, 0.95);
        let block = summary_block("x", &s);
        let line = block
            .lines()
            .find(|l| l.trim_start().starts_with("p99.9999"))
            .unwrap();
        assert!(line.contains("unsupported"), "{line}");
        assert!(!line.contains("10.0us"), "{line}");
        let supported = block
            .lines()
            .find(|l| l.trim_start().starts_with("p99.9 "))
            .unwrap();
        assert!(supported.contains('['), "{supported}");
    }
}
