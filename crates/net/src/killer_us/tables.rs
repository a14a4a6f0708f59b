//! The killer-us summary's table, CSV, CCDFs and where its methods disagree, read from the
//! result file alone (pure).

use super::data::{KillerUsData, SummaryRow, LADDER, METHODS};
use latlab_core::hist::LatencyHistogram;
use latlab_core::parse::Percentile;
use latlab_core::results::ResultFile;
use latlab_core::stats::{ccdf, is_supported};
use latlab_core::units::format_ns;

/// The percentiles of the table.
fn table_percentiles() -> [Percentile; 4] {
    [
        Percentile::LADDER[0],
        Percentile::LADDER[2],
        Percentile::LADDER[3],
        Percentile::LADDER[4],
    ]
}

/// One row of the summary table: `method` on `conf`.
pub(super) fn summary_row(method: &str, conf: &str, h: &LatencyHistogram) -> SummaryRow {
    SummaryRow {
        method: method.to_string(),
        config: conf.to_string(),
        count: h.count(),
        percentiles: table_percentiles()
            .iter()
            .map(|&p| (p.to_string(), h.value_at(p), is_supported(p, h.count())))
            .collect(),
        max_ns: h.max(),
    }
}

/// The lowest percentile of the ladder (p50 … p99.9999), supported by every histogram,
/// at which the largest and smallest values differ by more than `threshold_ns`. Pure.
pub fn disagreement(hs: &[&LatencyHistogram], threshold_ns: u64) -> Option<Percentile> {
    if hs.len() < 2 {
        return None;
    }
    let mut ladder = vec![Percentile::LADDER[0]];
    ladder.push(Percentile::from_fraction(90, 100).expect("valid"));
    ladder.extend_from_slice(&Percentile::LADDER[2..]);
    for p in ladder {
        if !hs.iter().all(|h| is_supported(p, h.count())) {
            return None;
        }
        let vals: Vec<u64> = hs.iter().map(|h| h.value_at(p)).collect();
        let (lo, hi) = (
            *vals.iter().min().unwrap_or(&0),
            *vals.iter().max().unwrap_or(&0),
        );
        if hi - lo > threshold_ns {
            return Some(p);
        }
    }
    None
}

/// The summary as Markdown (pure): the headline first ([`super::headline`]), then the
/// full table, where the methods start to disagree, and how the runs were fitted to the
/// host. Every paragraph is a list of sentences, so that more can be appended.
pub fn render_table(r: &ResultFile) -> String {
    let Ok(d) = serde_json::from_value::<KillerUsData>(r.data.clone()) else {
        return String::new();
    };
    let mut s = format!("# killer-us ({})\n\n", d.placement);
    if let Some(h) = super::headline::headline(r) {
        s.push_str(&h.sentences.join(" "));
        s.push_str(&format!(
            "\n\n{} per NF configuration and method (95 % confidence interval):\n\n| NF config | {} |\n|---|{}\n",
            h.percentile,
            h.methods.join(" | "),
            "---:|".repeat(h.methods.len())
        ));
        for row in &h.rows {
            let cells: Vec<String> = match &row.not_measured {
                Some(_) => h
                    .methods
                    .iter()
                    .map(|_| "not measured".to_string())
                    .collect(),
                None => row
                    .cells
                    .iter()
                    .map(|c| match c {
                        Some(e) if e.supported => format!(
                            "{} ({}–{})",
                            format_ns(e.value_ns as f64),
                            e.ci_low_ns
                                .map(|v| format_ns(v as f64))
                                .unwrap_or_else(|| "open".into()),
                            e.ci_high_ns
                                .map(|v| format_ns(v as f64))
                                .unwrap_or_else(|| "open".into())
                        ),
                        Some(_) => "unsupported".to_string(),
                        None => "—".to_string(),
                    })
                    .collect(),
            };
            s.push_str(&format!("| {} | {} |\n", row.label(), cells.join(" | ")));
        }
        s.push('\n');
    }
    s.push_str("## Every method and NF configuration\n\n| method | NF config | samples | p50 | p99 | p99.9 | p99.99 | max |\n|---|---|---:|---:|---:|---:|---:|---:|\n");
    for row in &d.rows {
        let cells: Vec<String> = row
            .percentiles
            .iter()
            .map(|(_, v, ok)| {
                if *ok {
                    format_ns(*v as f64)
                } else {
                    format!("({}, unsupported)", format_ns(*v as f64))
                }
            })
            .collect();
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} |\n",
            row.method,
            row.config,
            row.count,
            cells.join(" | "),
            format_ns(row.max_ns as f64)
        ));
    }
    s.push_str("\n## Where the methods disagree\n\n");
    s.push_str(&disagreement_sentences(&d).join(" "));
    s.push('\n');
    if let Some(f) = &d.host_fit {
        s.push_str("\n## How the runs were fitted to this host\n\n");
        s.push_str(&f.reasons.join(" "));
        s.push_str("\n\n");
        for q in &f.quiet {
            s.push_str(&format!("- quiet probe: {}\n", q.describe()));
        }
        for t in &f.trials {
            s.push_str(&format!("- rate trial: {}\n", t.describe()));
        }
    }
    if !d.tails.is_empty() {
        s.push_str("\nOutside the system under test (time outside the kernel, the hypervisor's, in each run's samples above its p99):\n\n");
        for t in &d.tails {
            s.push_str(&format!("- {t}\n"));
        }
    }
    for n in &d.notes {
        s.push_str(&format!("\nNote: {n}\n"));
    }
    s
}

/// Where the methods start to disagree by more than 1 µs, as sentences: the user methods
/// among themselves (same span, so any difference is the receive mode's), then all
/// methods (the kernel and hardware methods leave out the host stacks, so they differ
/// from the user methods by design).
pub fn disagreement_sentences(d: &KillerUsData) -> Vec<String> {
    let say = |list: &[(String, Option<String>)]| -> String {
        let parts: Vec<String> = list
            .iter()
            .map(|(conf, p)| match p {
                Some(p) => format!("{conf} from {p}"),
                None => format!("{conf} never (up to the highest supported percentile)"),
            })
            .collect();
        parts.join(", ")
    };
    let mut out = Vec::new();
    if !d.disagreement_same_span.is_empty() {
        out.push(format!(
            "The socket generator's two methods (user-blocking, user-busy) time the same span (user send to user receive), so where they differ by more than 1 µs the receive mode (blocking or busy polling) changed the result: {}.",
            say(&d.disagreement_same_span)
        ));
    }
    if !d.disagreement.is_empty() {
        out.push(format!(
            "Across all methods the difference exceeds 1 µs from these percentiles: {}. Kernel and hardware timestamps leave out the host stacks that the user methods include, so that gap is expected; read the NF's own latency from the kernel or hardware method.",
            say(&d.disagreement)
        ));
    }
    out
}

/// The CCDF curves of a `net.killer_us` result, grouped by method: for each method (in
/// [`METHODS`] order) its description and one `(NF configuration, points)` per ladder
/// step, points `(latency_ns, P(X > x))`. What the figures draw, for a report. Pure.
pub type MethodCcdf = (String, String, Vec<(String, Vec<(f64, f64)>)>);

/// See [`MethodCcdf`].
pub fn method_curves(r: &ResultFile) -> Vec<MethodCcdf> {
    let mut out = Vec::new();
    for (m, desc, _, _) in METHODS {
        let mut curves = Vec::new();
        for conf in LADDER {
            if let Some(Ok(h)) = r.histogram(&format!("{m}/{conf}")) {
                if h.count() > 0 {
                    curves.push((conf.to_string(), ccdf(&h)));
                }
            }
        }
        if !curves.is_empty() {
            out.push((m.to_string(), desc.to_string(), curves));
        }
    }
    out
}

/// The summary table as CSV (pure).
pub fn render_csv(r: &ResultFile) -> String {
    let Ok(d) = serde_json::from_value::<KillerUsData>(r.data.clone()) else {
        return String::new();
    };
    let mut s =
        String::from("method,config,samples,p50_ns,p99_ns,p99.9_ns,p99.99_ns,max_ns,unsupported\n");
    for row in &d.rows {
        let v: Vec<String> = row
            .percentiles
            .iter()
            .map(|(_, v, _)| v.to_string())
            .collect();
        let unsup: Vec<String> = row
            .percentiles
            .iter()
            .filter(|(_, _, ok)| !ok)
            .map(|(p, _, _)| p.clone())
            .collect();
        s.push_str(&format!(
            "{},{},{},{},{},{}\n",
            row.method,
            row.config,
            row.count,
            v.join(","),
            row.max_ns,
            unsup.join(" ")
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::super::data::RESULT_KIND;
    use super::*;
    use latlab_core::results::StoredHistogram;
    use latlab_core::units::Nanos;

    #[test]
    fn curves_and_tables_come_from_the_file_alone() {
        let mut h = LatencyHistogram::default();
        for i in 0..1000u64 {
            h.record(Nanos(1_000 + i));
        }
        let mut r = ResultFile::new(
            RESULT_KIND,
            vec![],
            serde_json::Value::Null,
            Default::default(),
        );
        r.histograms
            .push(StoredHistogram::new("kernel/default", &h));
        r.histograms.push(StoredHistogram::new("kernel/hog", &h));
        r.histograms
            .push(StoredHistogram::new("user-busy/pinned", &h));
        let mut d = KillerUsData::default();
        d.rows.push(summary_row("kernel", "default", &h));
        d.disagreement.push(("default".into(), None));
        r.data = serde_json::to_value(&d).unwrap();
        let c = method_curves(&r);
        let names: Vec<&str> = c.iter().map(|(m, _, _)| m.as_str()).collect();
        assert_eq!(names, vec!["user-busy", "kernel"]);
        assert_eq!(c[1].2.len(), 2);
        assert_eq!(c[1].2[0].0, "default");
        let t = render_table(&r);
        assert!(t.contains("| kernel | default | 1000 |"), "{t}");
        assert!(
            t.contains("unsupported"),
            "p99.99 of 1000 samples is unsupported: {t}"
        );
        let csv = render_csv(&r);
        assert_eq!(csv.lines().count(), 2);
    }

    #[test]
    fn disagreement_finds_the_first_percentile() {
        let mut a = LatencyHistogram::default();
        let mut b = LatencyHistogram::default();
        for i in 0..100_000u64 {
            a.record(Nanos(10_000 + i % 100));
            // same body, a tail 5 µs longer from p99.9 up
            b.record(Nanos(if i % 500 == 0 {
                30_000
            } else {
                10_000 + i % 100
            }));
        }
        assert_eq!(disagreement(&[&a, &a], 1_000), None);
        let p = disagreement(&[&a, &b], 1_000).unwrap();
        assert_eq!(p.to_string(), "p99.9");
    }
}
