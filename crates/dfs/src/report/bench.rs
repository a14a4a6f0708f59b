//! The sections of `dfs.bench` results (`latlab dfs bench` under mpirun; feature `mpi`).

use super::view::{axes, bytes, decoded, f, figure_block};
use crate::mpibench::{BenchData, RESULT_KIND as BENCH_KIND};
use latlab_core::doc::Input;
use latlab_core::doc::{Block, Cell, KindSections, Section, Table};
use latlab_core::doc::{Corner, Figure, Line, LineChart, LineStyle};

/// Sections for `dfs.bench` results (`latlab dfs bench` under mpirun).
#[derive(Clone, Copy, Debug, Default)]
pub struct BenchSections;

impl KindSections for BenchSections {
    const KIND: &'static str = BENCH_KIND;

    fn kind_sections(&self, inputs: &[&Input]) -> Result<Vec<Section>, String> {
        let datas = decoded(inputs, |run| {
            if run.kind != BENCH_KIND {
                return Err(format!(
                    "result kind is '{}', expected '{BENCH_KIND}'",
                    run.kind
                ));
            }
            serde_json::from_value::<BenchData>(run.data.clone())
                .map_err(|e| format!("not a dfs.bench record: {e}"))
        })?;
        datas
            .iter()
            .map(|(label, d)| bench_section(label, d))
            .collect()
    }
}

fn bench_section(label: &str, d: &BenchData) -> Result<Section, String> {
    let mut s = Section::new(format!("MPI_Put micro-benchmark: {label}"));
    s.push(Block::Paragraph(format!(
        "{} senders each write one message per round into each of {} receivers' windows (MPI_Put, flushed together); the Mix variant adds a 16-byte and two 64-byte messages per big message (the paper's descriptors and SYNC messages, Figs. 3–5). Bandwidth per sender counts the big messages only; aggregate = sum over senders.",
        d.senders, d.receivers
    )));
    s.push(Block::KeyValues(vec![
        (
            "message sizes".into(),
            d.config
                .sizes
                .iter()
                .map(|b| bytes(*b))
                .collect::<Vec<_>>()
                .join(", "),
        ),
        (
            "bytes per sender per size".into(),
            bytes(d.config.bytes_per_size),
        ),
        ("at least rounds".into(), d.config.min_rounds.to_string()),
    ]));
    let mut t = Table::new(
        "Round duration and bandwidth per message size",
        &[
            "size",
            "variant",
            "rounds",
            "mean round",
            "min",
            "p10",
            "median",
            "p90",
            "max",
            "GB/s per sender",
            "aggregate GB/s",
        ],
    );
    let us = |v: f64| format!("{} µs", f(v, 1));
    for r in &d.rows {
        let (mean, lo, hi) = r.bw_per_sender_gbs;
        let mut row = vec![
            Cell::number(bytes(r.size)),
            Cell::text(if r.mix { "Mix" } else { "plain" }),
            Cell::number(r.rounds.to_string()),
            Cell::number(us(r.round_us_mean)),
        ];
        let q = &r.round_us;
        row.extend([q.min, q.p10, q.median, q.p90, q.max].map(|x| Cell::number(us(x))));
        row.push(Cell::number(f(mean, 3)).with_note(format!("{} – {}", f(lo, 3), f(hi, 3))));
        row.push(Cell::number(f(r.aggregate_gbs, 2)));
        t.rows.push(row);
    }
    s.push(Block::Table(t));
    let ticks: Vec<(f64, String)> = {
        let mut sz: Vec<u64> = d.rows.iter().map(|r| r.size).collect();
        sz.sort_unstable();
        sz.dedup();
        sz.into_iter().map(|b| (b as f64, bytes(b))).collect()
    };
    let lines_of = |y: &dyn Fn(&crate::mpibench::BenchRow) -> f64| -> Vec<Line> {
        [false, true]
            .into_iter()
            .map(|mix| Line {
                label: if mix { "Mix" } else { "plain" }.into(),
                points: d
                    .rows
                    .iter()
                    .filter(|r| r.mix == mix)
                    .map(|r| (r.size as f64, y(r)))
                    .collect(),
                style: LineStyle::LineAndPoints,
            })
            .filter(|l| !l.points.is_empty())
            .collect()
    };
    if !d.rows.is_empty() {
        for (title, y_desc, log_y, lines) in [
            (
                "Mean round duration against message size (Fig. 3)",
                "round duration (µs, log scale)",
                true,
                lines_of(&|r| r.round_us_mean),
            ),
            (
                "Bandwidth per sender against message size (Figs. 4–5)",
                "bandwidth per sender (GB/s)",
                false,
                lines_of(&|r| r.bw_per_sender_gbs.0),
            ),
        ] {
            let chart = LineChart {
                lines,
                log_x: true,
                log_y,
                x_ticks: ticks.clone(),
                legend: if log_y {
                    Corner::UpperLeft
                } else {
                    Corner::LowerRight
                },
                ..LineChart::default()
            };
            let spec = axes(title, "message size", y_desc);
            s.push(figure_block(Figure::Lines {
                title: format!("{title}: {label}"),
                spec,
                chart,
            })?);
        }
    }
    Ok(s)
}
