//! The report sections of `latlab experiment killer-us`'s summary result, through
//! [`latlab_core::doc::SectionProvider`].

use super::data::{KillerUsData, METHODS, RESULT_KIND as KILLER_US_KIND};
use latlab_core::doc::{
    Block, Cell, CellStyle, Curve, Figure, Input, PlotKind, Section, SectionProvider, Table,
};
use latlab_core::stats::ccdf;
use latlab_core::units::format_ns;

/// Sections for the summary result of `latlab experiment killer-us`: the summary table
/// (method × NF configuration), where the methods start to disagree, and one CCDF per
/// method with a line per NF configuration (in place of the generic figures).
#[derive(Clone, Copy, Debug, Default)]
pub struct KillerUsSections;

impl SectionProvider for KillerUsSections {
    fn handles(&self, kind: &str) -> bool {
        kind == KILLER_US_KIND
    }

    fn generic_distributions(&self) -> bool {
        false
    }

    /// The answer first: what was measured, the tail per method and NF configuration with
    /// its confidence interval, which configuration wins and by how much.
    fn lead(&self, inputs: &[&Input]) -> Result<Vec<Section>, String> {
        let mut out = Vec::new();
        for input in inputs {
            let Some(h) = super::headline::headline(&input.merged) else {
                continue;
            };
            let mut s = Section::new(if inputs.len() > 1 {
                format!("Result: {}", input.label)
            } else {
                "Result".to_string()
            });
            // what was measured on its own line, then the verdict
            if let Some((what, verdict)) = h.sentences.split_first() {
                s.push(Block::Paragraph(what.clone()));
                if !verdict.is_empty() {
                    s.push(Block::Paragraph(verdict.join(" ")));
                }
            }
            let mut t = Table::new(
                format!(
                    "{} latency per NF configuration and method (95 % confidence interval below each value)",
                    h.percentile
                ),
                &[],
            );
            t.header = std::iter::once("NF configuration".to_string())
                .chain(h.methods.iter().cloned())
                .collect();
            for row in &h.rows {
                let mut cells = vec![Cell::text(row.label())];
                match &row.not_measured {
                    Some(why) => {
                        let short = why.split(':').next().unwrap_or(why);
                        cells.extend(h.methods.iter().map(|_| {
                            Cell::styled(short, CellStyle::Unsupported)
                                .with_note("see the reason above")
                        }));
                    }
                    None => cells.extend(row.cells.iter().map(|c| match c {
                        Some(e) => Cell::estimate(e),
                        None => Cell::styled("—", CellStyle::Unsupported),
                    })),
                }
                t.rows.push(cells);
            }
            s.push(Block::Table(t));
            out.push(s);
        }
        Ok(out)
    }

    fn sections(&self, inputs: &[&Input]) -> Result<Vec<Section>, String> {
        let mut out = Vec::new();
        for input in inputs {
            let r = &input.merged;
            let d: KillerUsData = serde_json::from_value(r.data.clone())
                .map_err(|e| format!("{}: data is not a killer-us summary: {e}", input.label))?;
            let mut s = Section::new(format!(
                "Killer microsecond: methods × NF configurations ({})",
                input.label
            ));
            s.push(Block::Paragraph(format!(
                "Every measurement method against the OS-configuration ladder of the network function (the paper's Fig. 3), placed on the {}. Methods: {}.",
                d.placement,
                METHODS.iter().map(|(m, desc, _, _)| format!("{m} = {desc}")).collect::<Vec<_>>().join("; ")
            )));
            for n in &d.notes {
                s.push(Block::Paragraph(n.clone()));
            }
            for (m, desc, _, _) in METHODS {
                let mut curves = Vec::new();
                for h in r
                    .histograms
                    .iter()
                    .filter(|h| h.labels.get("method").map(String::as_str) == Some(m))
                {
                    let hist = h
                        .decode()
                        .map_err(|e| format!("{}: histogram '{}': {e}", input.label, h.name))?;
                    curves.push(Curve {
                        label: h
                            .labels
                            .get("config")
                            .cloned()
                            .unwrap_or_else(|| h.name.clone()),
                        points: ccdf(&hist),
                    });
                }
                if !curves.is_empty() {
                    s.push(Block::Figure(Figure::Distribution {
                        title: format!("CCDF, {desc}: one line per NF configuration"),
                        kind: PlotKind::Ccdf,
                        curves,
                    }));
                }
            }
            if let Some(f) = &d.host_fit {
                s.push(Block::Heading(
                    "How the runs were fitted to this host".into(),
                ));
                s.push(Block::Paragraph(f.reasons.join(" ")));
                let mut kv: Vec<(String, String)> = f
                    .quiet
                    .iter()
                    .map(|q| ("quiet probe".to_string(), q.describe()))
                    .collect();
                kv.extend(
                    f.trials
                        .iter()
                        .map(|t| ("rate trial".to_string(), t.describe())),
                );
                s.push(Block::KeyValues(kv));
            }
            let pct_names: Vec<String> = d
                .rows
                .first()
                .map(|r| r.percentiles.iter().map(|(p, _, _)| p.clone()).collect())
                .unwrap_or_default();
            let mut t = Table {
                caption: "Latency per method and NF configuration".into(),
                header: ["method", "NF configuration", "samples"]
                    .map(String::from)
                    .into_iter()
                    .chain(pct_names.iter().cloned())
                    .chain(std::iter::once("max".to_string()))
                    .collect(),
                rows: Vec::new(),
            };
            for row in &d.rows {
                let mut cells = vec![
                    Cell::text(&row.method),
                    Cell::text(&row.config),
                    Cell::number(row.count.to_string()),
                ];
                for (_, v, supported) in &row.percentiles {
                    cells.push(if *supported {
                        Cell::number(format_ns(*v as f64))
                    } else {
                        Cell::styled("unsupported", CellStyle::Unsupported)
                    });
                }
                cells.push(Cell::number(format_ns(row.max_ns as f64)));
                t.rows.push(cells);
            }
            s.push(Block::Table(t));
            let mut dis = Table::new(
                "From which percentile the methods disagree by more than 1 µs",
                &[
                    "NF configuration",
                    "all methods",
                    "socket generator's user methods only (same span)",
                ],
            );
            let verdict = |v: Option<&Option<String>>| match v {
                Some(Some(p)) => Cell::styled(format!("from {p}"), CellStyle::Bad),
                Some(None) => Cell::styled(
                    "agree up to the highest supported percentile",
                    CellStyle::Good,
                ),
                None => Cell::styled("—", CellStyle::Unsupported),
            };
            for (conf, all) in &d.disagreement {
                let same = d
                    .disagreement_same_span
                    .iter()
                    .find(|(c, _)| c == conf)
                    .map(|(_, v)| v);
                dis.rows
                    .push(vec![Cell::text(conf), verdict(Some(all)), verdict(same)]);
            }
            s.push(Block::Table(dis));
            s.push(Block::Paragraph(
                super::tables::disagreement_sentences(&d).join(" "),
            ));
            out.push(s);
        }
        Ok(out)
    }
}
