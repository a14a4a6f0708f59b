//! The `dfs.sim`/`dfs.run` sections built around figures: completion duration (Fig. 6),
//! aggregate bandwidth (Fig. 7), interval durations (Fig. 8), buffer fill (Fig. 9).

use super::data::interval_series;
use super::view::{axes, f, figure_block, mode_name, ms, Runtime, View};
use crate::params::Mode;
use crate::sim::IntervalRow;
use latlab_core::doc::{Block, Cell, CellStyle, Section, Table};
use latlab_core::doc::{BoxStat, Corner, Figure, Line, LineChart, LineStyle};

pub(crate) fn completion(rt: Runtime, views: &[View<'_>]) -> Result<Section, String> {
    let p = rt.prefix();
    let mut s = Section::new(format!("{p}: time-slice completion duration"));
    s.push(Block::Paragraph(
        "Completion duration of a time-slice: arrival of its last contribution minus arrival of its first, at its compute node, after the warm-up time-slices (the paper's Fig. 6: min, 10th percentile, median, 90th percentile, max). Percentiles from the full histogram `completion`.".into(),
    ));
    let mut t = Table::new(
        "Completion duration after warm-up",
        &[
            "input", "mode", "nodes", "samples", "min", "p10", "median", "p90", "max",
        ],
    );
    for v in views {
        let c = &v.completion;
        let mut row = v.row([
            Cell::number(v.nodes().to_string()),
            Cell::number(c.count.to_string()),
        ]);
        if c.count == 0 {
            row.push(Cell::styled("no samples", CellStyle::Unsupported));
        } else {
            row.extend([c.min, c.p10, c.median, c.p90, c.max].map(|x| Cell::number(ms(x))));
        }
        t.rows.push(row);
    }
    s.push(Block::Table(t));
    // One category per node count when that names every (nodes, mode) once, else per input.
    let mut keys: Vec<(usize, Mode)> = views.iter().map(|v| (v.nodes(), v.mode)).collect();
    keys.sort_by_key(|k| (k.0, k.1 == Mode::Dfs));
    let unique = keys.windows(2).all(|w| w[0] != w[1]);
    let mut ordered: Vec<&View<'_>> = views.iter().filter(|v| v.completion.count > 0).collect();
    if unique {
        ordered.sort_by_key(|v| v.nodes());
    }
    let boxes: Vec<BoxStat> = ordered
        .iter()
        .map(|v| BoxStat {
            category: if unique {
                format!("{} nodes", v.nodes())
            } else {
                v.label.to_string()
            },
            series: mode_name(v.mode).to_string(),
            five: v.completion,
        })
        .collect();
    if !boxes.is_empty() {
        let lo = boxes
            .iter()
            .map(|b| b.five.min)
            .fold(f64::INFINITY, f64::min);
        let hi = boxes.iter().map(|b| b.five.max).fold(0.0, f64::max);
        let log = lo > 0.0 && hi / lo > 20.0;
        let spec = axes(
            "Time-slice completion duration (Fig. 6)",
            if unique { "nodes" } else { "input" },
            format!(
                "last − first arrival (ms{})",
                if log { ", log scale" } else { "" }
            ),
        );
        s.push(figure_block(Figure::Boxes {
            title: format!("{p}: completion duration box plot"),
            spec,
            boxes,
            log_y: log,
        })?);
    }
    Ok(s)
}

pub(crate) fn bandwidth(rt: Runtime, views: &[View<'_>]) -> Result<Section, String> {
    let p = rt.prefix();
    let mut s = Section::new(format!("{p}: aggregate bandwidth"));
    s.push(Block::Paragraph(match rt {
        Runtime::Sim => "Aggregate bandwidth into the compute nodes. The comparison uses the bandwidth after warm-up; the reference is the nominal injection bandwidth of all inputs, the model's counterpart of the micro-benchmark (Fig. 7 relates it to the measured one).".into(),
        Runtime::Mpi => "Aggregate bandwidth into the compute nodes from the first send to the last arrival. Compare it with `latlab dfs bench` (aggregate bandwidth of the MPI_Put micro-benchmark) on the same machine.".into(),
    }));
    let mut t = Table::new(
        "Aggregate bandwidth",
        &[
            "input",
            "mode",
            "nodes",
            "GB/s",
            "whole run GB/s",
            "reference GB/s",
            "% of reference",
            "duration",
        ],
    );
    for v in views {
        t.rows.push(v.row([
            Cell::number(v.nodes().to_string()),
            Cell::number(f(v.bandwidth_gbs, 2)),
            Cell::number(f(v.bandwidth_all_gbs, 2)),
            match v.reference {
                Some((r, what)) => Cell::number(f(r, 1)).with_note(what),
                None => Cell::styled("—", CellStyle::Unsupported),
            },
            match v.reference {
                Some((r, _)) if r > 0.0 => Cell::number(f(100.0 * v.bandwidth_gbs / r, 1)),
                _ => Cell::styled("—", CellStyle::Unsupported),
            },
            Cell::number(ms(v.duration_ms)),
        ]));
    }
    s.push(Block::Table(t));
    // Fig. 7: bandwidth against node count, one line per mode, when there are several.
    let mut counts: Vec<usize> = views.iter().map(|v| v.nodes()).collect();
    counts.sort_unstable();
    counts.dedup();
    if counts.len() > 1 {
        let lines: Vec<Line> = [Mode::BestEffort, Mode::Dfs]
            .into_iter()
            .map(|m| Line {
                label: mode_name(m).into(),
                points: views
                    .iter()
                    .filter(|v| v.mode == m)
                    .map(|v| (v.nodes() as f64, v.bandwidth_gbs))
                    .collect(),
                style: LineStyle::LineAndPoints,
            })
            .filter(|l| !l.points.is_empty())
            .collect();
        let chart = LineChart {
            lines,
            x_ticks: counts.iter().map(|n| (*n as f64, n.to_string())).collect(),
            legend: Corner::LowerRight,
            ..LineChart::default()
        };
        let spec = axes(
            "Aggregate bandwidth against node count (Fig. 7)",
            "nodes",
            "aggregate bandwidth (GB/s)",
        );
        s.push(figure_block(Figure::Lines {
            title: format!("{p}: bandwidth against node count"),
            spec,
            chart,
        })?);
    }
    Ok(s)
}

/// Contiguous runs of intervals during a bandwidth drop, as x ranges around the indices.
pub(crate) fn drop_ranges(rows: &[IntervalRow]) -> Vec<(f64, f64)> {
    let mut out: Vec<(f64, f64)> = Vec::new();
    let mut prev: Option<u64> = None;
    for r in rows.iter().filter(|r| r.dropped) {
        match (prev, out.last_mut()) {
            (Some(p), Some(last)) if r.index == p + 1 => last.1 = r.index as f64 + 0.5,
            _ => out.push((r.index as f64 - 0.5, r.index as f64 + 0.5)),
        }
        prev = Some(r.index);
    }
    out
}

pub(crate) fn interval_block(v: &View<'_>, s: &mut Section) -> Result<(), String> {
    let rows = v.intervals;
    let series = interval_series_of(v);
    let proposed: Vec<(f64, f64)> = series
        .iter()
        .filter_map(|(i, p, _, _, _)| p.map(|p| (*i as f64, p)))
        .collect();
    let actual: Vec<(f64, f64)> = series
        .iter()
        .map(|(i, _, a, _, _)| (*i as f64, *a))
        .collect();
    let speedups: Vec<(f64, f64)> = series
        .iter()
        .filter(|r| r.3)
        .filter_map(|(i, p, _, _, _)| p.map(|p| (*i as f64, p)))
        .collect();
    let drops = drop_ranges(rows);
    s.push(Block::Heading(v.label.to_string()));
    let med = |mut x: Vec<f64>| {
        x.sort_by(f64::total_cmp);
        x.get(x.len() / 2).copied()
    };
    let first_drop = rows.iter().find(|r| r.dropped).map(|r| r.index);
    let last_drop = rows.iter().filter(|r| r.dropped).map(|r| r.index).max();
    let mut kv = vec![
        ("intervals".to_string(), rows.len().to_string()),
        (
            "with a staged speed-up".to_string(),
            rows.iter().filter(|r| r.speedup).count().to_string(),
        ),
        (
            "median actual start spread across inputs".to_string(),
            med(rows.iter().map(|r| r.start_spread_ms).collect())
                .map(ms)
                .unwrap_or_else(|| "—".into()),
        ),
    ];
    if let (Some(a), Some(b)) = (first_drop, last_drop) {
        let proposed_in = |lo: u64, hi: u64| -> Vec<f64> {
            rows.iter()
                .filter(|r| r.index >= lo && r.index <= hi)
                .filter_map(|r| r.proposed_ms)
                .collect()
        };
        let before = med(proposed_in(0, a.saturating_sub(1)));
        let peak = proposed_in(a, b + v.params.hist_cnt as u64)
            .into_iter()
            .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))));
        let last = rows.iter().rev().find_map(|r| r.proposed_ms);
        let show = |x: Option<f64>| x.map(ms).unwrap_or_else(|| "—".into());
        kv.push((
            "bandwidth drop".into(),
            format!(
                "intervals {a}–{b}; proposed duration: median before {}, peak during or after {}, last {}",
                show(before),
                show(peak),
                show(last)
            ),
        ));
    }
    s.push(Block::KeyValues(kv));
    let mut lines = vec![Line {
        label: "actual (median over inputs)".into(),
        points: actual,
        style: LineStyle::Line,
    }];
    if !proposed.is_empty() {
        lines.insert(
            0,
            Line {
                label: "proposed".into(),
                points: proposed,
                style: LineStyle::Line,
            },
        );
    }
    if !speedups.is_empty() {
        lines.push(Line {
            label: "proposal with staged speed-up".into(),
            points: speedups,
            style: LineStyle::Points,
        });
    }
    let chart = LineChart {
        lines,
        shaded: drops,
        shaded_label: "bandwidth drop".into(),
        ..LineChart::default()
    };
    let spec = axes(
        format!("Interval durations (Fig. 8): {}", v.label),
        "interval",
        "duration (ms)",
    );
    s.push(figure_block(Figure::Lines {
        title: format!("interval durations: {}", v.label),
        spec,
        chart,
    })?);
    Ok(())
}

/// Fig. 8 series: from [`interval_series`] for simulator data, from the rows otherwise.
pub(crate) fn interval_series_of(v: &View<'_>) -> Vec<(u64, Option<f64>, f64, bool, bool)> {
    match v.sim {
        Some(d) => interval_series(d),
        None => v
            .intervals
            .iter()
            .map(|r| (r.index, r.proposed_ms, r.actual_ms, r.speedup, r.dropped))
            .collect(),
    }
}

pub(crate) fn fill(rt: Runtime, views: &[View<'_>]) -> Result<Section, String> {
    let p = rt.prefix();
    let mut s = Section::new(format!("{p}: compute-buffer fill"));
    s.push(Block::Paragraph(format!(
        "Fill level of every input connection's ring buffer at the compute nodes, in percent of its slots, sampled over the run (the paper's Fig. 9{}). Best effort fills the buffers up to the credits; DFS should keep them low.",
        if views.iter().any(|v| !v.fill_by_rank.is_empty()) {
            "; the box plot orders each compute node's connections by fill at every sample, fullest first, and summarises each rank over all samples and compute nodes"
        } else {
            ""
        }
    )));
    let mut t = Table::new(
        "Buffer fill over the run",
        &[
            "input",
            "mode",
            "samples",
            "mean fill (time average)",
            "median of the per-sample medians",
            "highest p90",
            "highest fill",
        ],
    );
    for v in views {
        let n = v.fill_samples.len();
        if n == 0 {
            t.rows
                .push(v.row([Cell::styled("no samples", CellStyle::Unsupported)]));
            continue;
        }
        let mean = v.fill_samples.iter().map(|x| x.mean).sum::<f64>() / n as f64;
        let mut meds: Vec<f64> = v.fill_samples.iter().map(|x| x.fill.median).collect();
        meds.sort_by(f64::total_cmp);
        let p90 = v
            .fill_samples
            .iter()
            .map(|x| x.fill.p90)
            .fold(0.0, f64::max);
        let max = v
            .fill_samples
            .iter()
            .map(|x| x.fill.max)
            .fold(0.0, f64::max);
        t.rows.push(v.row([
            Cell::number(n.to_string()),
            Cell::number(format!("{} %", f(mean, 1))),
            Cell::number(format!("{} %", f(meds[n / 2], 1))),
            Cell::number(format!("{} %", f(p90, 1))),
            Cell::number(format!("{} %", f(max, 1))),
        ]));
    }
    s.push(Block::Table(t));
    for v in views.iter().filter(|v| !v.fill.is_empty()) {
        s.push(Block::Heading(v.label.to_string()));
        let line = |label: &str, k: usize| Line {
            label: label.into(),
            points: v.fill.iter().map(|x| (x.0, [x.1, x.2, x.3][k])).collect(),
            style: LineStyle::Line,
        };
        let chart = LineChart {
            lines: vec![line("mean", 0), line("median", 1), line("max", 2)],
            ..LineChart::default()
        };
        let spec = axes(
            format!(
                "Compute-buffer fill over time: {} ({})",
                v.label,
                mode_name(v.mode)
            ),
            "time (ms)",
            "fill over connections (% of slots)",
        );
        s.push(figure_block(Figure::Lines {
            title: format!("buffer fill over time: {}", v.label),
            spec,
            chart,
        })?);
        if !v.fill_by_rank.is_empty() {
            let boxes: Vec<BoxStat> = v
                .fill_by_rank
                .iter()
                .enumerate()
                .filter(|(_, b)| b.count > 0)
                .map(|(r, b)| BoxStat {
                    category: (r + 1).to_string(),
                    series: String::new(),
                    five: *b,
                })
                .collect();
            if !boxes.is_empty() {
                let spec = axes(
                    format!("Buffer fill by connection rank (Fig. 9): {}", v.label),
                    "connection rank at its compute node (1 = fullest)",
                    "fill (% of slots)",
                );
                s.push(figure_block(Figure::Boxes {
                    title: format!("buffer fill by rank: {}", v.label),
                    spec,
                    boxes,
                    log_y: false,
                })?);
            }
        }
    }
    Ok(s)
}
