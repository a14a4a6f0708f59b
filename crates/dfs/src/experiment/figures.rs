//! The experiment's figures (the paper's Figs. 6–9): each chart is built by a pure function
//! from the loaded results; [`draw`] writes them in the requested format.

use super::config::{ExperimentError, FigureFormat};
use crate::paper::{FIG8_DROP_FIRST, FIG8_DROP_LAST, FIG9_NODES};
use crate::report::SummaryRow;
use crate::sim::{FiveNum, SimData};
use latlab_core::doc::{
    BoxStat, ChartSpec, Corner, Figure, FigureSink, Line, LineChart, LineStyle,
};
use std::path::Path;

/// A best-effort and a DFS simulation at one node count.
pub(super) type SimPair = (usize, SimData, SimData);

/// The MPI runs' summary rows (best effort, DFS) and whether a benchmark reference exists.
pub(super) type MpiRows = (SummaryRow, SummaryRow, Option<f64>);

/// A box per category and series, in first-seen order.
fn boxed(category: String, series: &str, five: FiveNum) -> BoxStat {
    BoxStat {
        category,
        series: series.into(),
        five,
    }
}

/// A line, with a marker on every point when `markers`.
fn line(label: &str, points: Vec<(f64, f64)>, markers: bool) -> Line {
    Line {
        label: label.into(),
        points,
        style: if markers {
            LineStyle::LineAndPoints
        } else {
            LineStyle::Line
        },
    }
}

fn spec(title: String, x_desc: &str, y_desc: &str) -> ChartSpec {
    ChartSpec {
        title,
        x_desc: x_desc.into(),
        y_desc: y_desc.into(),
        ..ChartSpec::default()
    }
}

/// Every figure of the experiment, in the order they are written.
pub(super) fn figures(
    mpi: Option<&MpiRows>,
    sims: &[SimPair],
    nodrop: &SimData,
    dropped: &SimData,
    drop_nodes: usize,
) -> Vec<(&'static str, &'static str, Figure)> {
    let mut out = vec![
        ("fig6-completion", "Fig. 6", fig6(mpi, sims)),
        ("fig7-bandwidth", "Fig. 7", fig7(mpi, sims)),
        (
            "fig8-intervals",
            "Fig. 8",
            fig8(nodrop, dropped, drop_nodes),
        ),
    ];
    if let Some((boxes, time)) = fig9(sims) {
        out.push(("fig9-buffer-fill", "Fig. 9", boxes));
        out.push(("fig9-buffer-fill-time", "Fig. 9 (time)", time));
    }
    out
}

/// Draws `figures` into `dir` through `sink`; appends each file name to `files`.
pub(super) fn draw(
    sink: &dyn FigureSink,
    figures: Vec<(&'static str, &'static str, Figure)>,
    dir: &Path,
    format: FigureFormat,
    files: &mut Vec<String>,
) -> Result<(), ExperimentError> {
    for (name, what, figure) in figures {
        let file = format!("{name}.{}", format.ext());
        sink.draw(&figure, &dir.join(&file))
            .map_err(|e| ExperimentError::Figure(what, e))?;
        files.push(file);
    }
    Ok(())
}

/// Fig. 6: completion duration per node count, the MPI run first.
fn fig6(mpi: Option<&MpiRows>, sims: &[SimPair]) -> Figure {
    let mut be = Vec::new();
    let mut dfs = Vec::new();
    if let Some((rb, rd, _)) = mpi {
        let cat = format!("{} (MPI, this host)", rb.nodes);
        be.push(boxed(cat.clone(), "best effort", rb.completion_ms));
        dfs.push(boxed(cat, "DFS", rd.completion_ms));
    }
    for (n, b, d) in sims {
        let cat = format!("{n} (sim)");
        be.push(boxed(cat.clone(), "best effort", b.completion_ms));
        dfs.push(boxed(cat, "DFS", d.completion_ms));
    }
    be.extend(dfs);
    let title = "Fig. 6: time-slice completion duration (min, p10, median, p90, max)";
    Figure::Boxes {
        title: title.into(),
        spec: spec(
            title.into(),
            "nodes (half inputs, half computes)",
            "last - first arrival (ms)",
        ),
        boxes: be,
        log_y: true,
    }
}

/// Fig. 7: bandwidth relative to the bound (model bound, or the benchmark for MPI).
fn fig7(mpi: Option<&MpiRows>, sims: &[SimPair]) -> Figure {
    let pct = |d: &SimData| 100.0 * d.steady_bandwidth_gbs / d.nominal_gbs;
    let mut lines = vec![
        line(
            "best effort (sim, % of model bound)",
            sims.iter().map(|(n, b, _)| (*n as f64, pct(b))).collect(),
            true,
        ),
        line(
            "DFS (sim, % of model bound)",
            sims.iter().map(|(n, _, d)| (*n as f64, pct(d))).collect(),
            true,
        ),
    ];
    if let Some((rb, rd, Some(_))) = mpi {
        lines.push(line(
            "best effort (MPI, % of dfs bench Mix)",
            vec![(rb.nodes as f64, rb.bandwidth_pct_of_reference)],
            true,
        ));
        lines.push(line(
            "DFS (MPI, % of dfs bench Mix)",
            vec![(rd.nodes as f64, rd.bandwidth_pct_of_reference)],
            true,
        ));
    }
    let title = "Fig. 7: aggregate bandwidth relative to the benchmark bound";
    Figure::Lines {
        title: title.into(),
        spec: spec(title.into(), "nodes", "% of reference bandwidth"),
        chart: LineChart {
            lines,
            legend: Corner::LowerRight,
            ..LineChart::default()
        },
    }
}

/// Fig. 8: proposed and actual interval durations with and without the drop.
fn fig8(nodrop: &SimData, dropped: &SimData, drop_nodes: usize) -> Figure {
    let series = |d: &SimData, what: &str, prop: bool| {
        let points = d
            .intervals
            .iter()
            .filter_map(|r| {
                let v = if prop { r.proposed_ms? } else { r.actual_ms };
                Some((r.index as f64, v))
            })
            .collect();
        line(what, points, true)
    };
    let title = format!("Fig. 8: proposed and actual interval durations, {drop_nodes} nodes (sim)");
    Figure::Lines {
        title: title.clone(),
        spec: spec(title, "interval", "duration (ms)"),
        chart: LineChart {
            lines: vec![
                series(dropped, "proposed (intervals +25 %)", true),
                series(dropped, "actual (intervals +25 %)", false),
                series(nodrop, "proposed (no drop)", true),
                series(nodrop, "actual (no drop)", false),
            ],
            shaded: vec![(FIG8_DROP_FIRST as f64 - 0.5, FIG8_DROP_LAST as f64 + 0.5)],
            shaded_label: "bandwidth drop".into(),
            ..LineChart::default()
        },
    }
}

/// Fig. 9 at the node count closest to the paper's: fill by ordered connection (eight
/// ranks, fullest to emptiest) and the mean fill over time.
fn fig9(sims: &[SimPair]) -> Option<(Figure, Figure)> {
    let (n, b, d) = sims.iter().min_by_key(|(n, ..)| n.abs_diff(FIG9_NODES))?;
    let ranks = b.fill_by_rank.len();
    let pick: Vec<usize> = (0..8)
        .map(|k| k * (ranks - 1) / 7)
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let boxes = |x: &SimData, series: &str| -> Vec<BoxStat> {
        pick.iter()
            .map(|&r| boxed(format!("#{}", r + 1), series, x.fill_by_rank[r]))
            .collect()
    };
    let mut all = boxes(b, "best effort");
    all.extend(boxes(d, "DFS"));
    let title = format!("Fig. 9: buffer fill by ordered connection, {n} nodes (sim)");
    let by_rank = Figure::Boxes {
        title: title.clone(),
        spec: spec(title, "connection, fullest first", "fill (% of ring)"),
        boxes: all,
        log_y: false,
    };
    let mean =
        |x: &SimData, l: &str| line(l, x.fill.iter().map(|s| (s.t_ms, s.mean)).collect(), false);
    let title = format!("Buffer fill over time (mean of all connections), {n} nodes (sim)");
    let over_time = Figure::Lines {
        title: title.clone(),
        spec: spec(title, "time (ms)", "fill (% of ring)"),
        chart: LineChart {
            lines: vec![mean(b, "best effort"), mean(d, "DFS")],
            ..LineChart::default()
        },
    };
    Some((by_rank, over_time))
}
