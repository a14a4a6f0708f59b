//! CSV export of percentile tables: one row per series and statistic, with the support
//! flag and confidence bounds, so spreadsheets and scripts never see an unsupported
//! percentile as a bare number.

use crate::stats::Summary;

/// The header row.
pub const HEADER: &str = "series,statistic,value_ns,supported,ci_low_ns,ci_high_ns,samples";

/// Renders summaries as CSV: `min`, each percentile, `max` and `mean` per series.
/// `supported` is `true`/`false` for percentiles and empty for the other statistics;
/// open confidence bounds are empty.
pub fn percentile_table(rows: &[(String, Summary)]) -> String {
    let mut out = String::from(HEADER);
    out.push('\n');
    for (series, s) in rows {
        let name = quote(series);
        let mut line = |stat: &str, value: String, supported: &str, lo: String, hi: String| {
            out.push_str(&format!(
                "{name},{stat},{value},{supported},{lo},{hi},{}\n",
                s.count
            ));
        };
        line(
            "min",
            s.min_ns.to_string(),
            "",
            String::new(),
            String::new(),
        );
        for e in &s.percentiles {
            let opt = |v: Option<u64>| v.map(|x| x.to_string()).unwrap_or_default();
            line(
                &e.name,
                e.value_ns.to_string(),
                if e.supported { "true" } else { "false" },
                opt(e.ci_low_ns),
                opt(e.ci_high_ns),
            );
        }
        line(
            "max",
            s.max_ns.to_string(),
            "",
            String::new(),
            String::new(),
        );
        line(
            "mean",
            format!("{:.1}", s.mean_ns),
            "",
            String::new(),
            String::new(),
        );
    }
    out
}

fn quote(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hist::LatencyHistogram;
    use crate::parse::Percentile;
    use crate::stats::summarize;
    use crate::units::Nanos;

    #[test]
    fn csv_marks_support() {
        let mut h = LatencyHistogram::default();
        for v in 1..=10_000u64 {
            h.record(Nanos(v));
        }
        let s = summarize(&h, &Percentile::LADDER, 0.95);
        let csv = percentile_table(&[("a,b".to_string(), s)]);
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines[0], HEADER);
        assert_eq!(lines.len(), 1 + 1 + 7 + 2);
        assert!(lines[1].starts_with("\"a,b\",min,1,,,,10000"));
        assert!(lines
            .iter()
            .any(|l| l.contains(",p99.9,") && l.contains(",true,")));
        assert!(lines
            .iter()
            .any(|l| l.contains(",p99.9999,") && l.contains(",false,")));
    }
}
