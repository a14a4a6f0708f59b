//! The experiment's figures (the paper's Figs. 6–9): each chart is built by a pure function
//! from the loaded results; [`draw`] writes them in the requested format.

use super::config::{ExperimentError, FigureFormat};
use crate::paper::{FIG8_DROP_FIRST, FIG8_DROP_LAST, FIG9_NODES};
use crate::report::SummaryRow;
use crate::sim::{FiveNum, SimData};
use latlab_report::boxline::{
    self as charts, BoxChart, BoxSeries, BoxStats, LineChart, LineSeries,
};
use std::path::Path;

/// A best-effort and a DFS simulation at one node count.
pub(super) type SimPair = (usize, SimData, SimData);

/// The MPI runs' summary rows (best effort, DFS) and whether a benchmark reference exists.
pub(super) type MpiRows = (SummaryRow, SummaryRow, Option<f64>);

/// One figure file: its name (without extension) and what it shows.
pub(super) enum Chart {
    Boxes(BoxChart),
    Lines(LineChart),
}

fn fivenum(b: FiveNum) -> BoxStats {
    BoxStats {
        min: b.min,
        p10: b.p10,
        median: b.median,
        p90: b.p90,
        max: b.max,
    }
}

/// Every figure of the experiment, in the order they are written.
pub(super) fn figures(
    mpi: Option<&MpiRows>,
    sims: &[SimPair],
    nodrop: &SimData,
    dropped: &SimData,
    drop_nodes: usize,
) -> Vec<(&'static str, &'static str, Chart)> {
    let mut out = vec![
        ("fig6-completion", "Fig. 6", Chart::Boxes(fig6(mpi, sims))),
        ("fig7-bandwidth", "Fig. 7", Chart::Lines(fig7(mpi, sims))),
        (
            "fig8-intervals",
            "Fig. 8",
            Chart::Lines(fig8(nodrop, dropped, drop_nodes)),
        ),
    ];
    if let Some((boxes, time)) = fig9(sims) {
        out.push(("fig9-buffer-fill", "Fig. 9", Chart::Boxes(boxes)));
        out.push(("fig9-buffer-fill-time", "Fig. 9 (time)", Chart::Lines(time)));
    }
    out
}

/// Draws `figures` into `dir`; appends each file name to `files`.
pub(super) fn draw(
    figures: Vec<(&'static str, &'static str, Chart)>,
    dir: &Path,
    format: FigureFormat,
    files: &mut Vec<String>,
) -> Result<(), ExperimentError> {
    for (name, what, chart) in figures {
        let file = format!("{name}.{}", format.ext());
        let path = dir.join(&file);
        match &chart {
            Chart::Boxes(c) => charts::render_boxes(c, &path),
            Chart::Lines(c) => charts::render_lines(c, &path),
        }
        .map_err(|e| ExperimentError::Figure(what, e))?;
        files.push(file);
    }
    Ok(())
}

/// Fig. 6: completion duration per node count, the MPI run first.
fn fig6(mpi: Option<&MpiRows>, sims: &[SimPair]) -> BoxChart {
    let mut cats: Vec<String> = Vec::new();
    let mut be_boxes = Vec::new();
    let mut dfs_boxes = Vec::new();
    if let Some((rb, rd, _)) = mpi {
        cats.push(format!("{} (MPI, this host)", rb.nodes));
        be_boxes.push((0, fivenum(rb.completion_ms)));
        dfs_boxes.push((0, fivenum(rd.completion_ms)));
    }
    for (n, b, d) in sims {
        let k = cats.len();
        cats.push(format!("{n} (sim)"));
        be_boxes.push((k, fivenum(b.completion_ms)));
        dfs_boxes.push((k, fivenum(d.completion_ms)));
    }
    BoxChart {
        title: "Fig. 6: time-slice completion duration (min, p10, median, p90, max)".into(),
        categories: cats,
        x_label: "nodes (half inputs, half computes)".into(),
        y_label: "last - first arrival (ms)".into(),
        log_y: true,
        series: vec![
            BoxSeries {
                label: "best effort".into(),
                boxes: be_boxes,
            },
            BoxSeries {
                label: "DFS".into(),
                boxes: dfs_boxes,
            },
        ],
    }
}

/// Fig. 7: bandwidth relative to the bound (model bound, or the benchmark for MPI).
fn fig7(mpi: Option<&MpiRows>, sims: &[SimPair]) -> LineChart {
    let pct = |d: &SimData| 100.0 * d.steady_bandwidth_gbs / d.nominal_gbs;
    let mut lines = vec![
        LineSeries {
            label: "best effort (sim, % of model bound)".into(),
            points: sims.iter().map(|(n, b, _)| (*n as f64, pct(b))).collect(),
            markers: true,
        },
        LineSeries {
            label: "DFS (sim, % of model bound)".into(),
            points: sims.iter().map(|(n, _, d)| (*n as f64, pct(d))).collect(),
            markers: true,
        },
    ];
    if let Some((rb, rd, Some(_))) = mpi {
        lines.push(LineSeries {
            label: "best effort (MPI, % of dfs bench Mix)".into(),
            points: vec![(rb.nodes as f64, rb.bandwidth_pct_of_reference)],
            markers: true,
        });
        lines.push(LineSeries {
            label: "DFS (MPI, % of dfs bench Mix)".into(),
            points: vec![(rd.nodes as f64, rd.bandwidth_pct_of_reference)],
            markers: true,
        });
    }
    LineChart {
        title: "Fig. 7: aggregate bandwidth relative to the benchmark bound".into(),
        x_label: "nodes".into(),
        y_label: "% of reference bandwidth".into(),
        series: lines,
        shaded: vec![],
        y_from_zero: true,
        log_y: false,
    }
}

/// Fig. 8: proposed and actual interval durations with and without the drop.
fn fig8(nodrop: &SimData, dropped: &SimData, drop_nodes: usize) -> LineChart {
    let series = |d: &SimData, what: &str, prop: bool| LineSeries {
        label: what.into(),
        points: d
            .intervals
            .iter()
            .filter_map(|r| {
                let v = if prop { r.proposed_ms? } else { r.actual_ms };
                Some((r.index as f64, v))
            })
            .collect(),
        markers: true,
    };
    LineChart {
        title: format!("Fig. 8: proposed and actual interval durations, {drop_nodes} nodes (sim)"),
        x_label: "interval".into(),
        y_label: "duration (ms)".into(),
        series: vec![
            series(dropped, "proposed (25 % drop)", true),
            series(dropped, "actual (25 % drop)", false),
            series(nodrop, "proposed (no drop)", true),
            series(nodrop, "actual (no drop)", false),
        ],
        shaded: vec![(
            FIG8_DROP_FIRST as f64 - 0.5,
            FIG8_DROP_LAST as f64 + 0.5,
            "bandwidth drop".into(),
        )],
        y_from_zero: false,
        log_y: false,
    }
}

/// Fig. 9 at the node count closest to the paper's: fill by ordered connection (eight
/// ranks, fullest to emptiest) and the mean fill over time.
fn fig9(sims: &[SimPair]) -> Option<(BoxChart, LineChart)> {
    let (n, b, d) = sims.iter().min_by_key(|(n, ..)| n.abs_diff(FIG9_NODES))?;
    let ranks = b.fill_by_rank.len();
    let pick: Vec<usize> = (0..8)
        .map(|k| k * (ranks - 1) / 7)
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let boxes = |x: &SimData| {
        pick.iter()
            .enumerate()
            .map(|(k, &r)| (k, fivenum(x.fill_by_rank[r])))
            .collect()
    };
    let by_rank = BoxChart {
        title: format!("Fig. 9: buffer fill by ordered connection, {n} nodes (sim)"),
        categories: pick.iter().map(|r| format!("#{}", r + 1)).collect(),
        x_label: "connection, fullest first".into(),
        y_label: "fill (% of ring)".into(),
        log_y: false,
        series: vec![
            BoxSeries {
                label: "best effort".into(),
                boxes: boxes(b),
            },
            BoxSeries {
                label: "DFS".into(),
                boxes: boxes(d),
            },
        ],
    };
    let mean = |x: &SimData, l: &str| LineSeries {
        label: l.into(),
        points: x.fill.iter().map(|s| (s.t_ms, s.mean)).collect(),
        markers: false,
    };
    let over_time = LineChart {
        title: format!("Buffer fill over time (mean of all connections), {n} nodes (sim)"),
        x_label: "time (ms)".into(),
        y_label: "fill (% of ring)".into(),
        series: vec![mean(b, "best effort"), mean(d, "DFS")],
        shaded: vec![],
        y_from_zero: true,
        log_y: false,
    };
    Some((by_rank, over_time))
}
