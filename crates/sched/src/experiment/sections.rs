//! The sections of the `latlab experiment hourglass` summary ([`ExperimentSections`]).

use super::summary::{ExperimentSummary, KIND as EXPERIMENT_KIND};
use crate::result::data_of;
use latlab_core::doc::{slug, Block, Cell, Figure, KindSections, Section, Table};
use latlab_core::doc::{stem, Input};
use std::path::Path;

/// Sections for the summary of `latlab experiment hourglass`.
#[derive(Clone, Copy, Debug, Default)]
pub struct ExperimentSections;

impl KindSections for ExperimentSections {
    const KIND: &'static str = EXPERIMENT_KIND;

    fn kind_sections(&self, inputs: &[&Input]) -> Result<Vec<Section>, String> {
        let mut out = Vec::new();
        for (path, run) in inputs.iter().flat_map(|i| &i.runs) {
            let d: ExperimentSummary = data_of(run, path, "a latlab experiment hourglass summary")?;
            let dir = path.parent().unwrap_or(Path::new("."));
            out.extend(experiment_sections(dir, &d));
        }
        Ok(out)
    }
}

/// The sections of an experiment summary whose files lie in `dir`: an overview of the
/// scenarios, then one section per scenario. Figures other than the runs' own timelines
/// (those are in the runs' sections) are read from `dir` and inlined.
pub fn experiment_sections(dir: &Path, d: &ExperimentSummary) -> Vec<Section> {
    let mut s = Section::new("Hourglass experiment");
    s.id = "sched-hourglass-experiment".into();
    s.push(Block::Paragraph(
        "The scenarios of Section 5 of Regehr's Hourglass paper (USENIX 2002), adapted to this machine and Linux 6.x: each scenario's commands, what they found, and where Linux 6.x behaves differently from the paper's 2002 kernels and why. Each run's own sections (thread set, deadlines, timeline, inference) follow the scenarios.".into(),
    ));
    let mut t = Table::new(
        "Scenarios",
        &["section", "scenario", "runs", "first finding"],
    );
    for sc in &d.scenarios {
        t.rows.push(vec![
            Cell::text(&sc.id),
            Cell::text(&sc.title),
            Cell::number(sc.results.len().to_string()),
            Cell::text(sc.findings.first().cloned().unwrap_or_else(|| "—".into())),
        ]);
    }
    s.push(Block::Table(t));
    if !d.placement.is_empty() {
        s.push(Block::Paragraph(format!("Placement: {}", d.placement)));
    }
    let mut out = vec![s];
    for sc in &d.scenarios {
        let mut s = Section::new(format!("{} {}", sc.id, sc.title));
        s.id = format!("sched-scenario-{}", slug(&sc.id));
        s.push(Block::Code {
            caption: "Commands".into(),
            text: sc.commands.join("\n"),
        });
        if sc.findings.is_empty() {
            s.push(Block::Paragraph("No findings were recorded.".into()));
        } else {
            s.push(Block::Table(Table {
                caption: "Findings".into(),
                header: vec!["finding".into()],
                rows: sc.findings.iter().map(|f| vec![Cell::text(f)]).collect(),
            }));
        }
        s.push(Block::Heading("Linux 6.x versus the paper".into()));
        s.push(Block::Paragraph(sc.linux_note.clone()));
        let run_stems: Vec<String> = sc.results.iter().map(|r| stem(Path::new(r))).collect();
        for f in &sc.figures {
            if run_stems.contains(&stem(Path::new(f))) {
                continue; // a run's own timeline: drawn in that run's section
            }
            let p = dir.join(f);
            if p.extension().and_then(|e| e.to_str()) != Some("svg") {
                s.push(Block::Paragraph(format!("Figure: {}", p.display())));
                continue;
            }
            match std::fs::read_to_string(&p) {
                Ok(svg) if svg.contains("<svg") => s.push(Block::Figure(Figure::Svg {
                    title: format!("{} {}: {}", sc.id, sc.title, f),
                    svg,
                })),
                Ok(_) => s.push(Block::Paragraph(format!(
                    "The figure {} is not an SVG document.",
                    p.display()
                ))),
                Err(e) => s.push(Block::Paragraph(format!(
                    "The figure {} could not be read: {e}.",
                    p.display()
                ))),
            };
        }
        if !sc.results.is_empty() {
            s.push(Block::Paragraph(format!(
                "Result files (in {}): {}.",
                dir.display(),
                sc.results.join(", ")
            )));
        }
        out.push(s);
    }
    out
}
