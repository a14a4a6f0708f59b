//! Plain-text tables for terminals and text files: one renderer for every latlab table
//! printed as text (the CLI's tables, `latlab sched`'s run summary and analysis), and the
//! cell formats they share: an unsupported percentile is printed as `unsupported`, never
//! as a bare number.

use crate::stats::{PercentileEstimate, Summary};
use crate::units::{format_decimal, format_ns};

/// A table with a header row; the first column is left-aligned, the rest right-aligned,
/// two spaces apart.
#[derive(Clone, Debug, Default)]
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column names and no rows.
    pub fn new<S: Into<String>>(header: impl IntoIterator<Item = S>) -> Table {
        Table {
            header: header.into_iter().map(Into::into).collect(),
            rows: Vec::new(),
        }
    }

    /// Appends a row (missing cells are blank; cells beyond the header are dropped).
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// The table as lines of text, each ending in a newline, trailing blanks trimmed.
    pub fn render(&self) -> String {
        let ncol = self.header.len();
        let mut width = vec![0usize; ncol];
        for r in std::iter::once(&self.header).chain(&self.rows) {
            for (i, c) in r.iter().enumerate().take(ncol) {
                width[i] = width[i].max(c.chars().count());
            }
        }
        let mut out = String::new();
        for r in std::iter::once(&self.header).chain(&self.rows) {
            let mut line = String::new();
            for (i, w) in width.iter().enumerate() {
                let c = r.get(i).map(String::as_str).unwrap_or("");
                let pad = w - c.chars().count();
                if i == 0 {
                    line.push_str(c);
                    line.push_str(&" ".repeat(pad));
                } else {
                    line.push_str("  ");
                    line.push_str(&" ".repeat(pad));
                    line.push_str(c);
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

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
    use crate::hist::LatencyHistogram;
    use crate::parse::Percentile;
    use crate::stats::summarize;
    use crate::units::Nanos;

    #[test]
    fn columns_align() {
        let mut t = Table::new(["a", "bb"]);
        t.row(vec!["long name".into(), "1".into()]);
        let s = t.render();
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines[0], "a          bb");
        assert_eq!(lines[1], "long name   1");
    }

    #[test]
    fn short_rows_are_padded_and_extra_cells_dropped() {
        let mut t = Table::new(["name", "n", "µs"]);
        t.row(vec!["x".into()]);
        t.row(vec!["yy".into(), "10".into(), "3".into(), "extra".into()]);
        assert_eq!(t.render(), "name   n  µs\nx\nyy    10   3\n");
    }

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
