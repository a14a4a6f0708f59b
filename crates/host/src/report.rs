//! The report sections of `host` results (through [`latlab_core::doc::SectionProvider`]):
//! for `host.clocks`, what one read of each clock costs, how often it can be read, the
//! smallest gap (the floor) and the sources that could not be measured.

use crate::clocks::{ClocksData, RESULT_KIND};
use latlab_core::doc::{Block, Cell, Input, Section, SectionProvider, Table};
use latlab_core::units::{format_decimal, format_ns};

/// Sections for `host.clocks` results.
#[derive(Clone, Copy, Debug, Default)]
pub struct ClocksSections;

impl SectionProvider for ClocksSections {
    fn handles(&self, kind: &str) -> bool {
        kind == RESULT_KIND
    }

    fn sections(&self, inputs: &[&Input]) -> Result<Vec<Section>, String> {
        let mut s = Section::new("Clock sources");
        s.push(Block::Paragraph(
            "Each clock was read back to back; the median gap between consecutive reads is the cost of one read, the smallest gap the floor this clock can resolve, and the long gaps in the tail are interruptions the reading thread saw.".into(),
        ));
        let mut t = Table::new(
            "Cost of reading the time",
            &[
                "run",
                "source",
                "reads",
                "reads/s",
                "cost per read (p50)",
                "floor",
                "claimed resolution",
                "coverage",
                "backward steps",
                "CPUs",
            ],
        );
        let mut skipped = Vec::new();
        let mut floor: Option<(String, u64)> = None;
        for input in inputs {
            for (label, path, run) in input.labelled_runs() {
                let data: ClocksData = serde_json::from_value(run.data.clone()).map_err(|e| {
                    format!("{}: data is not a host.clocks record: {e}", path.display())
                })?;
                for (name, f) in &data.sources {
                    if name == "rdtsc" && floor.as_ref().map_or(true, |(_, v)| f.floor_ns < *v) {
                        floor = Some((label.clone(), f.floor_ns));
                    }
                    t.rows.push(vec![
                        Cell::text(&label),
                        Cell::text(name),
                        Cell::number(f.reads.to_string()),
                        Cell::number(format!("{:.3e}", f.reads_per_sec)),
                        Cell::number(format_ns(f.read_cost_ns as f64)),
                        Cell::number(format_ns(f.floor_ns as f64)),
                        Cell::number(
                            f.claimed_resolution_ns
                                .map_or("—".into(), |r| format_ns(r as f64)),
                        ),
                        Cell::number(format!("{}%", format_decimal(f.coverage * 100.0, 1))),
                        Cell::number(f.backward_steps.to_string()),
                        Cell::text(format!("{:?}", f.cpus)),
                    ]);
                }
                skipped.extend(
                    data.skipped
                        .iter()
                        .map(|(n, why)| vec![Cell::text(&label), Cell::text(n), Cell::text(why)]),
                );
            }
        }
        s.push(Block::Table(t));
        if let Some((run, ns)) = floor {
            s.push(Block::Paragraph(format!(
                "The rdtsc floor — the smallest interval latlab can time on this machine — is {} (run {run}).",
                format_ns(ns as f64)
            )));
        }
        if !skipped.is_empty() {
            s.push(Block::Table(Table {
                rows: skipped,
                ..Table::new("Sources not measured", &["run", "source", "why"])
            }));
        }
        Ok(vec![s])
    }
}
