//! The report sections of `latlab net` results, through
//! [`latlab_core::doc::SectionProvider`]: for `net.probe` the probe accounting (sent,
//! received, lost, achieved rate, generator lateness) and the per-probe decomposition of
//! latency into TX stack, wire + NF, NF residence and RX stack. The killer-microsecond
//! experiment's are [`crate::killer_us::KillerUsSections`]; the latency injector's `net.delay` / `net.delay.check` sections
//! are in [`crate::delay::sections`].

use crate::probe::{series, RESULT_KIND as PROBE_KIND};
use crate::result::probe_data;
use latlab_core::doc::{Block, Cell, CellStyle, Input, Section, SectionProvider, Table};
use latlab_core::units::format_ns;

/// Sections for `net.probe` results.
#[derive(Clone, Copy, Debug, Default)]
pub struct ProbeSections;

/// The segments of a decomposed probe, in path order, with a reader's name.
const SEGMENTS: [(&str, &str); 5] = [
    (series::SEG_TX_STACK, "TX stack (user → driver)"),
    (series::SEG_WIRE, "wire (driver → driver, without the NF)"),
    (series::SEG_NF, "NF residence (receive → send)"),
    (series::SEG_RX_STACK, "RX stack (driver → user)"),
    (series::SEG_E2E, "end to end (sum of the segments)"),
];

impl SectionProvider for ProbeSections {
    fn handles(&self, kind: &str) -> bool {
        kind == PROBE_KIND
    }

    fn sections(&self, inputs: &[&Input]) -> Result<Vec<Section>, String> {
        let mut s = Section::new("Probes");
        s.push(Block::Paragraph(
            "Latency is measured from the scheduled send time (user.sched, open loop) and from the actual send (user.actual); their difference is the generator's lateness. Losses, duplicates and reordering are counted exactly per probe sequence number.".into(),
        ));
        let mut t = Table::new(
            "Probe accounting",
            &[
                "input",
                "mode",
                "sources",
                "sent (measured)",
                "received",
                "lost",
                "rate achieved / asked",
                "generator",
            ],
        );
        let mut seg = Table {
            caption: "Where a probe's time goes: median of each segment".into(),
            header: std::iter::once("input".to_string())
                .chain(SEGMENTS.iter().map(|(_, n)| (*n).to_string()))
                .collect(),
            rows: Vec::new(),
        };
        let mut one_way = Vec::new();
        for input in inputs {
            for (label, path, run) in input.labelled_runs() {
                let Some(d) = probe_data(run) else {
                    return Err(format!(
                        "{}: data is not a net.probe record",
                        path.display()
                    ));
                };
                t.rows.push(vec![
                    Cell::text(&label),
                    Cell::text(&d.mode),
                    Cell::text(d.sources.join(", ")),
                    Cell::number(d.sent_measured.to_string()),
                    Cell::number(d.received_measured.to_string()),
                    Cell::problem_count(d.lost_measured),
                    Cell::number(format!(
                        "{:.0} / {:.0} pps",
                        d.achieved_pps, d.configured_pps
                    )),
                    if d.unsent > 0 {
                        Cell::styled(
                            format!("stopped at its duration, {} unsent", d.unsent),
                            CellStyle::Bad,
                        )
                    } else if d.generator_behind {
                        Cell::styled("fell behind its schedule", CellStyle::Bad)
                    } else {
                        Cell::styled("kept its schedule", CellStyle::Good)
                    },
                ]);
                if !d.segment_medians_ns.is_empty() {
                    let mut row = vec![Cell::text(&label)];
                    for (name, _) in SEGMENTS {
                        row.push(match d.segment_medians_ns.get(name) {
                            Some(v) => Cell::number(format_ns(*v as f64)),
                            None => Cell::styled("—", CellStyle::Unsupported),
                        });
                    }
                    seg.rows.push(row);
                }
                if let Some(w) = crate::agents::agents_data(run).and_then(|a| a.one_way) {
                    one_way.push((label.clone(), w));
                }
            }
        }
        s.push(Block::Table(t));
        if !seg.rows.is_empty() {
            s.push(Block::Table(seg));
            s.push(Block::Paragraph(
                "Segments come from combining user TSC, kernel software timestamps and the NF's residence field per probe; every probe's segments were checked to add up to its end-to-end latency. Medians of segments need not add up to the median end to end.".into(),
            ));
        }
        if let Some((_, w)) = one_way.first() {
            s.push(Block::Table(one_way_table(&one_way)));
            s.push(Block::Paragraph(format!("{}.", w.note)));
        }
        Ok(vec![s])
    }
}

/// The one-way figures of `--agents` runs: per stream, the corrected percentiles with the
/// bound on their error beside each, and the median before the correction.
fn one_way_table(runs: &[(String, crate::agents::oneway::OneWayData)]) -> Table {
    let mut t = Table::new(
        "One-way latency across agents' clocks (corrected onto rank 0's clock)",
        &[
            "input",
            "stream",
            "samples",
            "p50",
            "p90",
            "p99",
            "p99.9",
            "uncorrected p50",
        ],
    );
    for (label, w) in runs {
        for st in &w.streams {
            let pm = |v: i64| {
                Cell::number(format!(
                    "{} ± {}",
                    format_ns(v as f64),
                    format_ns(st.uncertainty_ns)
                ))
            };
            let c = &st.corrected;
            t.rows.push(vec![
                Cell::text(label),
                Cell::text(format!("rank {} → {}", st.sender_rank, st.receiver_rank)),
                Cell::number(st.samples.to_string()),
                pm(c.p50),
                pm(c.p90),
                pm(c.p99),
                pm(c.p999),
                Cell::number(format_ns(st.uncorrected.p50 as f64)),
            ]);
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use latlab_core::results::{Provenance, ResultFile};
    use std::path::PathBuf;

    #[test]
    fn foreign_data_is_an_error_not_a_panic() {
        let r = ResultFile::new(
            PROBE_KIND,
            vec![],
            serde_json::Value::Null,
            Provenance::default(),
        );
        let i = Input::single(PathBuf::from("p.json"), r);
        assert!(ProbeSections.handles("net.probe") && !ProbeSections.handles("net.nf"));
        let e = ProbeSections.sections(&[&i]).unwrap_err();
        assert!(e.contains("p.json"), "{e}");
    }

    #[test]
    fn one_way_figures_carry_their_uncertainty() {
        use crate::agents::oneway::{OneWayData, Percentiles, StreamStats, ONE_WAY_NOTE};
        let p = |v: i64| Percentiles {
            p50: v,
            p90: v,
            p99: v,
            p999: v,
            max: v,
        };
        let w = OneWayData {
            streams: vec![StreamStats {
                sender_rank: 1,
                receiver_rank: 2,
                samples: 10,
                sent: 10,
                corrected: p(20_000),
                uncertainty_ns: 1_500.0,
                uncorrected: p(5_020_000),
                truth: None,
            }],
            all: Some(p(20_000)),
            all_uncertainty_ns: 1_500.0,
            note: ONE_WAY_NOTE.into(),
        };
        let t = one_way_table(&[("agents".into(), w)]);
        assert_eq!(t.rows.len(), 1);
        let row: Vec<&str> = t.rows[0].iter().map(|c| c.text.as_str()).collect();
        assert_eq!(row[1], "rank 1 → 2");
        assert!(
            row[3].contains("20") && row[3].contains(" ± 1.5"),
            "{row:?}"
        );
        assert!(row[7].contains("5.02"), "{row:?}");
    }
}
