//! The report sections of `latlab dfs` results, through
//! [`latlab_report::html::SectionProvider`]:
//!
//! - `dfs.sim` ([`SimSections`]) and `dfs.run` ([`RunSections`], feature `mpi`): the
//!   configuration, completion accounting (time-slices completed, checksums verified,
//!   contributions lost or duplicated), the time-slice completion duration (min, p10,
//!   median, p90, max; the paper's Fig. 6) with a box plot, aggregate bandwidth (Fig. 7),
//!   proposed against actual interval durations (Fig. 8), compute-buffer fill over time and
//!   by connection rank (Fig. 9), and, for every best-effort and DFS input of the same node
//!   count, the ratios the paper reports (completion ≥ 30× shorter, bandwidth up to 1.5×).
//! - `dfs.bench` ([`BenchSections`], feature `mpi`): round duration and bandwidth per
//!   sender over message sizes, plain and Mix (Figs. 3–5).
//!
//! The numbers come from the pure functions of [`crate::report`] and the result data; the
//! figures are drawn with [`latlab_report::dfs_charts`].
//!
//! Without the `mpi` feature the `dfs.run` and `dfs.bench` data structures are not compiled,
//! so those kinds get the report's generic sections only.

use crate::compute::ComputeCounters;
use crate::dde::DdeCounters;
use crate::ie::IeCounters;
use crate::params::{DfsParams, Mode, Topology};
use crate::report::{compare, fill_series, interval_series, sim_data, sim_summary, Comparison};
use crate::sim::result::RESULT_KIND as SIM_KIND;
use crate::sim::{FillSample, FiveNum, IntervalRow, SimData};
use latlab_core::results::ResultFile;
use latlab_report::charts::ChartSpec;
use latlab_report::dfs_charts::{
    render_boxplot_svg_string, render_lines_svg_string, BoxStat, Corner, Line, LineChart, LineStyle,
};
use latlab_report::html::{Block, Cell, CellStyle, Figure, Section, SectionProvider, Table};
use latlab_report::input::Input;
use std::path::Path;

/// The paper's smallest reduction of the time-slice completion duration by DFS (§V-B2).
pub const PAPER_COMPLETION_RATIO: f64 = 30.0;
/// The paper's largest gain in aggregate bandwidth by DFS (abstract: "up to 50 %").
pub const PAPER_BANDWIDTH_RATIO: f64 = 1.5;

/// Sections for `dfs.sim` results (`latlab dfs sim`).
#[derive(Clone, Copy, Debug, Default)]
pub struct SimSections;

impl SectionProvider for SimSections {
    fn handles(&self, kind: &str) -> bool {
        kind == SIM_KIND
    }

    fn sections(&self, inputs: &[&Input]) -> Result<Vec<Section>, String> {
        let mut datas = Vec::new();
        for (label, path, run) in runs(inputs) {
            let d = sim_data(run)
                .map_err(|e| format!("{label} ({}): not a dfs.sim record: {e}", path.display()))?;
            datas.push((label, d));
        }
        let views: Vec<View<'_>> = datas.iter().map(|(l, d)| View::of_sim(l, d)).collect();
        build(Runtime::Sim, &views)
    }
}

/// Every run of every input, labelled (`input` or `input / file` when merged).
fn runs<'a>(inputs: &[&'a Input]) -> Vec<(String, &'a Path, &'a ResultFile)> {
    let mut out = Vec::new();
    for i in inputs {
        for (path, run) in &i.runs {
            let label = if i.runs.len() > 1 {
                format!("{} / {}", i.label, path.display())
            } else {
                i.label.clone()
            };
            out.push((label, path.as_path(), run));
        }
    }
    out
}

/// Which runtime produced the results (section titles, wording).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Runtime {
    Sim,
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    Mpi,
}

impl Runtime {
    fn prefix(self) -> &'static str {
        match self {
            Runtime::Sim => "DFS simulation",
            Runtime::Mpi => "DFS over MPI",
        }
    }
}

/// Contribution accounting of one run.
#[derive(Clone, Copy, Debug)]
struct Accounting {
    time_slices: u64,
    expected: u64,
    sent: u64,
    counters: ComputeCounters,
    lost: u64,
    /// Time-slices that never completed (MPI runtime reports them; the simulator's are
    /// `time_slices − completed`).
    incomplete: u64,
}

impl Accounting {
    fn verified(&self) -> bool {
        let c = &self.counters;
        c.completed == self.time_slices
            && self.incomplete == 0
            && self.lost == 0
            && c.checksum_failures == 0
            && c.duplicates == 0
            && c.overruns == 0
            && c.misrouted == 0
    }
}

/// What the sections need of one `dfs.sim` or `dfs.run` result.
struct View<'a> {
    label: &'a str,
    mode: Mode,
    topology: Topology,
    params: DfsParams,
    warmup_ts: u64,
    completion: FiveNum,
    var_ms2: f64,
    /// Aggregate bandwidth the comparison uses, GB/s (after warm-up in the simulator).
    bandwidth_gbs: f64,
    /// The same over the whole run.
    bandwidth_all_gbs: f64,
    /// The bound it is compared with: (GB/s, what it is).
    reference: Option<(f64, &'static str)>,
    duration_ms: f64,
    intervals: &'a [IntervalRow],
    fill: Vec<(f64, f64, f64, f64)>,
    fill_samples: &'a [FillSample],
    fill_by_rank: &'a [FiveNum],
    acc: Accounting,
    ie: IeCounters,
    dde: DdeCounters,
    dde_killed: Option<usize>,
    /// Runtime-specific configuration lines.
    extra: Vec<(String, String)>,
    /// The simulator's data, for the crate's own comparison function.
    sim: Option<&'a SimData>,
}

impl<'a> View<'a> {
    fn of_sim(label: &'a str, d: &'a SimData) -> View<'a> {
        let row = sim_summary(d);
        let n = &d.config.net;
        let mut extra = vec![
            (
                "network model".to_string(),
                format!(
                    "injection {} GB/s, ejection {} GB/s per node, latency {} ns + jitter (mean {} ns), {} writes in flight, processing {} ns",
                    n.inj_gbs, n.ej_gbs, n.latency_ns, n.jitter_ns, n.max_inflight, n.processing_ns
                ),
            ),
            (
                "noise and clocks".to_string(),
                format!(
                    "bandwidth noise {:.0} % every {} ns; clock offsets up to ±{} ns, drift up to ±{} ppm",
                    n.noise * 100.0,
                    n.noise_period_ns,
                    n.max_clock_offset_ns,
                    n.max_drift_ppm
                ),
            ),
            ("seed".to_string(), d.config.seed.to_string()),
        ];
        let join = |v: Vec<String>| v.join("; ");
        if !d.config.slow.is_empty() {
            extra.push((
                "slow nodes".into(),
                join(
                    d.config
                        .slow
                        .iter()
                        .map(|n| {
                            let role = match n.role {
                                crate::sim::Role::Input => "input",
                                crate::sim::Role::Compute => "compute",
                            };
                            format!("{role} {} at {:.0} %", n.index, n.factor * 100.0)
                        })
                        .collect(),
                ),
            ));
        }
        if !d.config.drops.is_empty() {
            extra.push((
                "bandwidth drops".into(),
                join(
                    d.config
                        .drops
                        .iter()
                        .map(|b| {
                            let when = match b.window {
                                crate::sim::DropWindow::Intervals { first, last } => {
                                    format!("intervals {first}–{last}")
                                }
                                crate::sim::DropWindow::Time { from_ns, to_ns } => format!(
                                    "{} to {}",
                                    ms(from_ns as f64 / 1e6),
                                    ms(to_ns as f64 / 1e6)
                                ),
                            };
                            format!("{when} at {:.0} % bandwidth", b.factor * 100.0)
                        })
                        .collect(),
                ),
            ));
        }
        if !d.config.dde_faults.is_empty() {
            extra.push((
                "DDE faults".into(),
                join(
                    d.config
                        .dde_faults
                        .iter()
                        .map(|k| {
                            format!(
                                "replica {} stopped at {}{}",
                                k.replica,
                                ms(k.kill_ns as f64 / 1e6),
                                k.restart_ns
                                    .map(|r| format!(", restarted at {}", ms(r as f64 / 1e6)))
                                    .unwrap_or_default()
                            )
                        })
                        .collect(),
                ),
            ));
        }
        View {
            label,
            mode: d.config.mode,
            topology: d.config.topology,
            params: d.config.params,
            warmup_ts: d.warmup_ts,
            completion: d.completion_ms,
            var_ms2: d.completion_var_ms2,
            bandwidth_gbs: d.steady_bandwidth_gbs,
            bandwidth_all_gbs: d.bandwidth_gbs,
            reference: Some((
                d.nominal_gbs,
                "nominal injection (inputs × injection bandwidth)",
            )),
            duration_ms: d.duration_ms,
            intervals: &d.intervals,
            fill: fill_series(d),
            fill_samples: &d.fill,
            fill_by_rank: &d.fill_by_rank,
            acc: Accounting {
                time_slices: d.time_slices,
                expected: d.time_slices * d.config.topology.inputs as u64,
                sent: d.sent,
                counters: d.compute,
                lost: row.lost,
                incomplete: d.time_slices.saturating_sub(d.compute.completed),
            },
            ie: d.ie,
            dde: d.dde,
            dde_killed: None,
            extra,
            sim: Some(d),
        }
    }

    fn nodes(&self) -> usize {
        self.topology.inputs + self.topology.computes
    }
}

/// The paper's comparison for a best-effort and a DFS view: for simulator results the
/// crate's [`compare`], otherwise the same ratios from the views.
fn ratios(be: &View<'_>, dfs: &View<'_>) -> Comparison {
    if let (Some(b), Some(d)) = (be.sim, dfs.sim) {
        return compare(b, d);
    }
    let r = |a: f64, b: f64| if b > 0.0 { a / b } else { f64::INFINITY };
    Comparison {
        nodes: dfs.nodes(),
        median_ratio: r(be.completion.median, dfs.completion.median),
        p90_ratio: r(be.completion.p90, dfs.completion.p90),
        variance_ratio: r(be.var_ms2, dfs.var_ms2),
        bandwidth_ratio: r(dfs.bandwidth_gbs, be.bandwidth_gbs),
    }
}

/// Best-effort/DFS pairs of the same node count: each best-effort view with the first
/// unused DFS view of its node count, in input order.
fn pairs<'v, 'a>(views: &'v [View<'a>]) -> Vec<(&'v View<'a>, &'v View<'a>)> {
    let mut used = vec![false; views.len()];
    let mut out = Vec::new();
    for be in views.iter().filter(|v| v.mode == Mode::BestEffort) {
        if let Some(k) = (0..views.len())
            .find(|&k| !used[k] && views[k].mode == Mode::Dfs && views[k].nodes() == be.nodes())
        {
            used[k] = true;
            out.push((be, &views[k]));
        }
    }
    out
}

fn mode_name(m: Mode) -> &'static str {
    match m {
        Mode::BestEffort => "best effort",
        Mode::Dfs => "DFS",
    }
}

/// `v` with `d` decimals.
fn f(v: f64, d: usize) -> String {
    if v.is_finite() {
        format!("{v:.d$}")
    } else {
        "∞".into()
    }
}

/// A duration in ms, with enough decimals for microseconds.
fn ms(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.1} ms")
    } else {
        format!("{v:.3} ms")
    }
}

fn bytes(n: u64) -> String {
    const K: u64 = 1024;
    if n >= K * K && n % (K * K) == 0 {
        format!("{} MiB", n / (K * K))
    } else if n >= K && n % K == 0 {
        format!("{} KiB", n / K)
    } else {
        format!("{n} B")
    }
}

fn count_cell(v: u64, bad_if_nonzero: bool) -> Cell {
    if bad_if_nonzero && v > 0 {
        Cell::styled(v.to_string(), CellStyle::Bad)
    } else {
        Cell::number(v.to_string())
    }
}

fn table(caption: &str, header: &[&str]) -> Table {
    Table {
        caption: caption.into(),
        header: header.iter().map(|s| s.to_string()).collect(),
        rows: Vec::new(),
    }
}

fn svg_figure(
    title: String,
    svg: Result<String, latlab_report::PlotError>,
) -> Result<Block, String> {
    let svg = svg.map_err(|e| format!("figure '{title}': {e}"))?;
    Ok(Block::Figure(Figure::Svg { title, svg }))
}

/// All sections for the `dfs.sim` or `dfs.run` views.
fn build(rt: Runtime, views: &[View<'_>]) -> Result<Vec<Section>, String> {
    let p = rt.prefix();
    let mut out = vec![
        configuration(rt, views),
        accounting(rt, views),
        completion(rt, views)?,
        bandwidth(rt, views)?,
        comparison(rt, views),
    ];
    let with_intervals: Vec<&View<'_>> = views.iter().filter(|v| !v.intervals.is_empty()).collect();
    if !with_intervals.is_empty() {
        let mut s = Section::new(format!("{p}: proposed and actual interval durations"));
        s.push(Block::Paragraph(
            "Per DFS interval: the proposed duration the inputs followed (median over inputs) and the actual duration (median over inputs); dots mark proposals that carried a staged speed-up, grey bands the intervals a bandwidth drop was active in (the paper's Fig. 8). After a drop the proposal should follow the longer actual durations and then come down again through staged speed-ups.".into(),
        ));
        for v in with_intervals {
            interval_block(v, &mut s)?;
        }
        out.push(s);
    }
    out.push(fill(rt, views)?);
    Ok(out)
}

fn configuration(rt: Runtime, views: &[View<'_>]) -> Section {
    let mut s = Section::new(format!("{}: configuration", rt.prefix()));
    s.push(Block::Paragraph(match rt {
        Runtime::Sim => "Deterministic discrete-event simulation of the FLESnet time-slice building state machines (best effort, or DFS's Input Engines and Distributed Deterministic Engine) on a modelled network; every time is simulated.".into(),
        Runtime::Mpi => "The same state machines over MPI: micro-time-slices written one-sided into the compute nodes' RMA windows (MPI_Put), control messages two-sided.".into(),
    }));
    let mut t = table(
        "Configuration",
        &[
            "input",
            "mode",
            "inputs",
            "computes",
            "mts size",
            "buffer slots per input",
            "time-slices per interval",
            "time-slices",
            "warm-up time-slices",
        ],
    );
    for v in views {
        t.rows.push(vec![
            Cell::text(v.label),
            Cell::text(mode_name(v.mode)),
            Cell::number(v.topology.inputs.to_string()),
            Cell::number(v.topology.computes.to_string()),
            Cell::number(bytes(v.topology.mts_bytes)),
            Cell::number(v.topology.slots_per_input.to_string()),
            if v.mode == Mode::Dfs {
                Cell::number(v.params.interval_len(v.topology.computes).to_string())
            } else {
                Cell::styled("—", CellStyle::Unsupported)
            },
            Cell::number(v.acc.time_slices.to_string()),
            Cell::number(v.warmup_ts.to_string()),
        ]);
    }
    s.push(Block::Table(t));
    if views.iter().any(|v| v.mode == Mode::Dfs) {
        let p = views
            .iter()
            .find(|v| v.mode == Mode::Dfs)
            .map(|v| v.params)
            .unwrap_or_default();
        s.push(Block::KeyValues(vec![(
            "DFS parameters (first DFS input)".into(),
            format!(
                "hist_cnt {}, ssu_TH {} % ({:?}), ssu_pct {} %, θ {} % acknowledged before the next interval",
                p.hist_cnt, p.ssu_th, p.ssu_criterion, p.ssu_pct, p.theta_pct
            ),
        )]));
    }
    for v in views.iter().filter(|v| !v.extra.is_empty()) {
        s.push(Block::Heading(v.label.to_string()));
        s.push(Block::KeyValues(v.extra.clone()));
    }
    s
}

fn accounting(rt: Runtime, views: &[View<'_>]) -> Section {
    let mut s = Section::new(format!("{}: completion accounting", rt.prefix()));
    s.push(Block::Paragraph(
        "Every contribution carries a checksum the compute node verifies. A time-slice is complete when the contributions of all inputs have arrived; lost = expected − stored; duplicates, overruns (no free slot) and misrouted contributions are dropped and counted.".into(),
    ));
    let mut t = table(
        "Time-slices and contributions",
        &[
            "input",
            "mode",
            "time-slices completed",
            "contributions expected",
            "sent",
            "stored",
            "checksums verified",
            "lost",
            "duplicated",
            "overruns",
            "misrouted",
            "verdict",
        ],
    );
    for v in views {
        let a = &v.acc;
        let c = &a.counters;
        let ok_sums = c.stored - c.checksum_failures.min(c.stored);
        t.rows.push(vec![
            Cell::text(v.label),
            Cell::text(mode_name(v.mode)),
            Cell::styled(
                format!("{} of {}", c.completed, a.time_slices),
                if c.completed == a.time_slices {
                    CellStyle::Number
                } else {
                    CellStyle::Bad
                },
            ),
            Cell::number(a.expected.to_string()),
            Cell::number(a.sent.to_string()),
            Cell::number(c.stored.to_string()),
            Cell::styled(
                format!("{ok_sums} of {}", c.stored),
                if c.checksum_failures > 0 {
                    CellStyle::Bad
                } else {
                    CellStyle::Number
                },
            ),
            count_cell(a.lost, true),
            count_cell(c.duplicates, true),
            count_cell(c.overruns, true),
            count_cell(c.misrouted, true),
            if a.verified() {
                Cell::styled("complete, all verified", CellStyle::Good)
            } else {
                Cell::styled("incomplete or corrupted", CellStyle::Bad)
            },
        ]);
    }
    s.push(Block::Table(t));
    if views.iter().any(|v| v.mode == Mode::Dfs) {
        let mut t = table(
            "DFS engines",
            &[
                "input",
                "proposals used",
                "late proposals",
                "fallback intervals",
                "catch-up sends",
                "reports to DDEs",
                "proposals computed",
                "staged speed-ups",
                "DDE replicas stopped",
            ],
        );
        for v in views.iter().filter(|v| v.mode == Mode::Dfs) {
            t.rows.push(vec![
                Cell::text(v.label),
                Cell::number(v.ie.proposals_used.to_string()),
                Cell::number(v.ie.proposals_late.to_string()),
                Cell::number(v.ie.fallbacks.to_string()),
                Cell::number(v.ie.catch_up_sends.to_string()),
                Cell::number(v.dde.reports.to_string()),
                Cell::number(v.dde.proposals.to_string()),
                Cell::number(v.dde.speedups.to_string()),
                match v.dde_killed {
                    Some(k) => Cell::number(k.to_string()),
                    None => Cell::styled("—", CellStyle::Unsupported),
                },
            ]);
        }
        s.push(Block::Table(t));
    }
    s
}

fn completion(rt: Runtime, views: &[View<'_>]) -> Result<Section, String> {
    let p = rt.prefix();
    let mut s = Section::new(format!("{p}: time-slice completion duration"));
    s.push(Block::Paragraph(
        "Completion duration of a time-slice: arrival of its last contribution minus arrival of its first, at its compute node, after the warm-up time-slices (the paper's Fig. 6: min, 10th percentile, median, 90th percentile, max). Percentiles from the full histogram `completion`.".into(),
    ));
    let mut t = table(
        "Completion duration after warm-up",
        &[
            "input", "mode", "nodes", "samples", "min", "p10", "median", "p90", "max",
        ],
    );
    for v in views {
        let c = &v.completion;
        let mut row = vec![
            Cell::text(v.label),
            Cell::text(mode_name(v.mode)),
            Cell::number(v.nodes().to_string()),
            Cell::number(c.count.to_string()),
        ];
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
            min: v.completion.min,
            p10: v.completion.p10,
            median: v.completion.median,
            p90: v.completion.p90,
            max: v.completion.max,
        })
        .collect();
    if !boxes.is_empty() {
        let lo = boxes.iter().map(|b| b.min).fold(f64::INFINITY, f64::min);
        let hi = boxes.iter().map(|b| b.max).fold(0.0, f64::max);
        let log = lo > 0.0 && hi / lo > 20.0;
        let spec = ChartSpec {
            title: "Time-slice completion duration (Fig. 6)".into(),
            x_desc: if unique { "nodes" } else { "input" }.into(),
            y_desc: format!(
                "last − first arrival (ms{})",
                if log { ", log scale" } else { "" }
            ),
            ..ChartSpec::default()
        };
        s.push(svg_figure(
            format!("{p}: completion duration box plot"),
            render_boxplot_svg_string(&boxes, &spec, log),
        )?);
    }
    Ok(s)
}

fn bandwidth(rt: Runtime, views: &[View<'_>]) -> Result<Section, String> {
    let p = rt.prefix();
    let mut s = Section::new(format!("{p}: aggregate bandwidth"));
    s.push(Block::Paragraph(match rt {
        Runtime::Sim => "Aggregate bandwidth into the compute nodes. The comparison uses the bandwidth after warm-up; the reference is the nominal injection bandwidth of all inputs, the model's counterpart of the micro-benchmark (Fig. 7 relates it to the measured one).".into(),
        Runtime::Mpi => "Aggregate bandwidth into the compute nodes from the first send to the last arrival. Compare it with `latlab dfs bench` (aggregate bandwidth of the MPI_Put micro-benchmark) on the same machine.".into(),
    }));
    let mut t = table(
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
        t.rows.push(vec![
            Cell::text(v.label),
            Cell::text(mode_name(v.mode)),
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
        ]);
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
        let spec = ChartSpec {
            title: "Aggregate bandwidth against node count (Fig. 7)".into(),
            x_desc: "nodes".into(),
            y_desc: "aggregate bandwidth (GB/s)".into(),
            ..ChartSpec::default()
        };
        s.push(svg_figure(
            format!("{p}: bandwidth against node count"),
            render_lines_svg_string(&chart, &spec),
        )?);
    }
    Ok(s)
}

fn comparison(rt: Runtime, views: &[View<'_>]) -> Section {
    let mut s = Section::new(format!("{}: best effort against DFS", rt.prefix()));
    let pairs = pairs(views);
    if pairs.is_empty() {
        s.push(Block::Paragraph(
            "No best-effort and DFS inputs of the same node count: give both to the report (`latlab dfs sim --mode both` writes a pair) to get the ratios the paper reports.".into(),
        ));
        return s;
    }
    s.push(Block::Paragraph(format!(
        "The paper reports DFS shortening the time-slice completion duration at least {PAPER_COMPLETION_RATIO:.0}× (§V-B2, Fig. 6) and raising aggregate bandwidth by up to {:.0} % (×{PAPER_BANDWIDTH_RATIO}; 80 % against 53 % of the benchmark at 128 nodes, Fig. 7).",
        (PAPER_BANDWIDTH_RATIO - 1.0) * 100.0
    )));
    let mut t = table(
        "Ratios, best effort / DFS (completion) and DFS / best effort (bandwidth)",
        &[
            "nodes",
            "best effort",
            "DFS",
            "median completion, BE / DFS",
            "p90 completion, BE / DFS",
            "completion variance, BE / DFS",
            "bandwidth, DFS / BE",
        ],
    );
    let mut verdicts = Vec::new();
    for (be, dfs) in &pairs {
        let c = ratios(be, dfs);
        let reached = c.median_ratio >= PAPER_COMPLETION_RATIO;
        t.rows.push(vec![
            Cell::number(c.nodes.to_string()),
            Cell::text(be.label),
            Cell::text(dfs.label),
            Cell::styled(
                format!("{}×", f(c.median_ratio, 1)),
                if reached {
                    CellStyle::Good
                } else {
                    CellStyle::Bad
                },
            )
            .with_note(format!(
                "{} / {}",
                ms(be.completion.median),
                ms(dfs.completion.median)
            )),
            Cell::number(format!("{}×", f(c.p90_ratio, 1))),
            Cell::number(format!("{}×", f(c.variance_ratio, 1))),
            Cell::styled(
                format!("{}×", f(c.bandwidth_ratio, 3)),
                if c.bandwidth_ratio > 1.0 {
                    CellStyle::Good
                } else {
                    CellStyle::Bad
                },
            )
            .with_note(format!(
                "{} / {} GB/s",
                f(dfs.bandwidth_gbs, 2),
                f(be.bandwidth_gbs, 2)
            )),
        ]);
        let runtime = match rt {
            Runtime::Sim => "the model gives",
            Runtime::Mpi => "this run gives",
        };
        verdicts.push(format!(
            "{} nodes: {runtime} a median completion ratio best effort / DFS of {}× ({} the paper's ≥ {PAPER_COMPLETION_RATIO:.0}×) and a bandwidth ratio DFS / best effort of {}× ({}).",
            c.nodes,
            f(c.median_ratio, 1),
            if reached { "reaching" } else { "short of" },
            f(c.bandwidth_ratio, 3),
            if c.bandwidth_ratio > PAPER_BANDWIDTH_RATIO {
                format!("more than the paper's up to {PAPER_BANDWIDTH_RATIO}×")
            } else if c.bandwidth_ratio > 1.0 {
                format!("a gain within the paper's up to {PAPER_BANDWIDTH_RATIO}×")
            } else {
                "no gain, where the paper reports up to 1.5×".to_string()
            }
        ));
    }
    s.push(Block::Table(t));
    for v in verdicts {
        s.push(Block::Paragraph(v));
    }
    s
}

/// Contiguous runs of intervals during a bandwidth drop, as x ranges around the indices.
fn drop_ranges(rows: &[IntervalRow]) -> Vec<(f64, f64)> {
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

fn interval_block(v: &View<'_>, s: &mut Section) -> Result<(), String> {
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
    let spec = ChartSpec {
        title: format!("Interval durations (Fig. 8): {}", v.label),
        x_desc: "interval".into(),
        y_desc: "duration (ms)".into(),
        ..ChartSpec::default()
    };
    s.push(svg_figure(
        format!("interval durations: {}", v.label),
        render_lines_svg_string(&chart, &spec),
    )?);
    Ok(())
}

/// Fig. 8 series: from [`interval_series`] for simulator data, from the rows otherwise.
fn interval_series_of(v: &View<'_>) -> Vec<(u64, Option<f64>, f64, bool, bool)> {
    match v.sim {
        Some(d) => interval_series(d),
        None => v
            .intervals
            .iter()
            .map(|r| (r.index, r.proposed_ms, r.actual_ms, r.speedup, r.dropped))
            .collect(),
    }
}

fn fill(rt: Runtime, views: &[View<'_>]) -> Result<Section, String> {
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
    let mut t = table(
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
            t.rows.push(vec![
                Cell::text(v.label),
                Cell::text(mode_name(v.mode)),
                Cell::styled("no samples", CellStyle::Unsupported),
            ]);
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
        t.rows.push(vec![
            Cell::text(v.label),
            Cell::text(mode_name(v.mode)),
            Cell::number(n.to_string()),
            Cell::number(format!("{} %", f(mean, 1))),
            Cell::number(format!("{} %", f(meds[n / 2], 1))),
            Cell::number(format!("{} %", f(p90, 1))),
            Cell::number(format!("{} %", f(max, 1))),
        ]);
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
        let spec = ChartSpec {
            title: format!(
                "Compute-buffer fill over time: {} ({})",
                v.label,
                mode_name(v.mode)
            ),
            x_desc: "time (ms)".into(),
            y_desc: "fill over connections (% of slots)".into(),
            ..ChartSpec::default()
        };
        s.push(svg_figure(
            format!("buffer fill over time: {}", v.label),
            render_lines_svg_string(&chart, &spec),
        )?);
        if !v.fill_by_rank.is_empty() {
            let boxes: Vec<BoxStat> = v
                .fill_by_rank
                .iter()
                .enumerate()
                .filter(|(_, b)| b.count > 0)
                .map(|(r, b)| BoxStat {
                    category: (r + 1).to_string(),
                    series: String::new(),
                    min: b.min,
                    p10: b.p10,
                    median: b.median,
                    p90: b.p90,
                    max: b.max,
                })
                .collect();
            if !boxes.is_empty() {
                let spec = ChartSpec {
                    title: format!("Buffer fill by connection rank (Fig. 9): {}", v.label),
                    x_desc: "connection rank at its compute node (1 = fullest)".into(),
                    y_desc: "fill (% of slots)".into(),
                    ..ChartSpec::default()
                };
                s.push(svg_figure(
                    format!("buffer fill by rank: {}", v.label),
                    render_boxplot_svg_string(&boxes, &spec, false),
                )?);
            }
        }
    }
    Ok(s)
}

#[cfg(feature = "mpi")]
pub use mpi_sections::{BenchSections, RunSections};

#[cfg(feature = "mpi")]
mod mpi_sections {
    use super::*;
    use crate::mpibench::{BenchData, RESULT_KIND as BENCH_KIND};
    use crate::mpirun::{RunData, RESULT_KIND as RUN_KIND};

    /// Sections for `dfs.run` results (`latlab dfs run` under mpirun).
    #[derive(Clone, Copy, Debug, Default)]
    pub struct RunSections;

    impl<'a> View<'a> {
        pub(super) fn of_run(label: &'a str, d: &'a RunData) -> View<'a> {
            let c = &d.config;
            let mut extra = vec![
                ("MPI ranks".to_string(), d.ranks.to_string()),
                (
                    "DDE replicas".to_string(),
                    match c.dde_replicas {
                        0 => "one on every compute node".to_string(),
                        n => n.to_string(),
                    },
                ),
                (
                    "injected clocks".to_string(),
                    format!(
                        "rank r runs r × {} ns ahead and drifts r × {} ppm",
                        c.clock_skew_ns, c.drift_ppm
                    ),
                ),
            ];
            if let Some((replica, interval)) = c.kill_dde {
                extra.push((
                    "DDE kill".into(),
                    format!("replica {replica} stopped at the report of interval {interval}"),
                ));
            }
            View {
                label,
                mode: c.mode,
                topology: c.topology,
                params: c.params,
                warmup_ts: d.warmup_ts,
                completion: d.completion_ms,
                var_ms2: d.completion_var_ms2,
                bandwidth_gbs: d.bandwidth_gbs,
                bandwidth_all_gbs: d.bandwidth_gbs,
                reference: None,
                duration_ms: d.duration_ms,
                intervals: &d.intervals,
                fill: d
                    .fill
                    .iter()
                    .map(|s| (s.t_ms, s.mean, s.fill.median, s.fill.max))
                    .collect(),
                fill_samples: &d.fill,
                fill_by_rank: &[],
                acc: Accounting {
                    time_slices: d.time_slices,
                    expected: d.expected,
                    sent: d.sent,
                    counters: d.compute,
                    lost: d.lost,
                    incomplete: d.time_slices.saturating_sub(d.compute.completed),
                },
                ie: d.ie,
                dde: d.dde,
                dde_killed: Some(d.dde_killed),
                extra,
                sim: None,
            }
        }
    }

    /// The [`RunData`] of a `dfs.run` result.
    fn run_data(r: &ResultFile) -> Result<RunData, String> {
        if r.kind != RUN_KIND {
            return Err(format!(
                "result kind is '{}', expected '{RUN_KIND}'",
                r.kind
            ));
        }
        serde_json::from_value(r.data.clone()).map_err(|e| e.to_string())
    }

    impl SectionProvider for RunSections {
        fn handles(&self, kind: &str) -> bool {
            kind == RUN_KIND
        }

        fn sections(&self, inputs: &[&Input]) -> Result<Vec<Section>, String> {
            let mut datas = Vec::new();
            for (label, path, run) in runs(inputs) {
                let d = run_data(run).map_err(|e| {
                    format!("{label} ({}): not a dfs.run record: {e}", path.display())
                })?;
                datas.push((label, d));
            }
            let views: Vec<View<'_>> = datas.iter().map(|(l, d)| View::of_run(l, d)).collect();
            build(Runtime::Mpi, &views)
        }
    }

    /// Sections for `dfs.bench` results (`latlab dfs bench` under mpirun).
    #[derive(Clone, Copy, Debug, Default)]
    pub struct BenchSections;

    impl SectionProvider for BenchSections {
        fn handles(&self, kind: &str) -> bool {
            kind == BENCH_KIND
        }

        fn sections(&self, inputs: &[&Input]) -> Result<Vec<Section>, String> {
            let mut out = Vec::new();
            for (label, path, run) in runs(inputs) {
                if run.kind != BENCH_KIND {
                    return Err(format!(
                        "{label} ({}): result kind is '{}', expected '{BENCH_KIND}'",
                        path.display(),
                        run.kind
                    ));
                }
                let d: BenchData = serde_json::from_value(run.data.clone()).map_err(|e| {
                    format!("{label} ({}): not a dfs.bench record: {e}", path.display())
                })?;
                out.push(bench_section(&label, &d)?);
            }
            Ok(out)
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
        let mut t = table(
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
                let spec = ChartSpec {
                    title: title.into(),
                    x_desc: "message size".into(),
                    y_desc: y_desc.into(),
                    ..ChartSpec::default()
                };
                s.push(svg_figure(
                    format!("{title}: {label}"),
                    render_lines_svg_string(&chart, &spec),
                )?);
            }
        }
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::{self, result::to_result, BandwidthDrop, DropWindow, SimConfig};
    use latlab_core::results::{Provenance, Timebase};
    use std::path::PathBuf;

    fn provenance() -> Provenance {
        Provenance {
            timebase: Timebase {
                source: "simulated".into(),
                fallback_reason: None,
                tsc: Default::default(),
            },
            ..Provenance::default()
        }
    }

    /// A small real simulation (`inputs` × `inputs` nodes, 400 time-slices, intervals of 20)
    /// as a report input named `name`, with a 25 % bandwidth drop in intervals 5–7 if `drop`.
    fn sim_input(name: &str, inputs: usize, mode: Mode, drop: bool) -> (Input, SimData) {
        let mut cfg = SimConfig::new(inputs, inputs, mode);
        cfg.time_slices = 400;
        cfg.params.ts_per_intvl = 20;
        if drop {
            cfg.drops.push(BandwidthDrop {
                window: DropWindow::Intervals { first: 5, last: 7 },
                factor: 0.75,
            });
        }
        let o = sim::run(&cfg).unwrap();
        let rf = to_result(
            &o,
            vec!["latlab".into(), "dfs".into(), "sim".into()],
            provenance(),
        );
        (
            Input::single(PathBuf::from(format!("{name}.json")), rf),
            o.data,
        )
    }

    /// The sections, or `None` (test skipped) when no font is installed for the figures.
    fn sections_or_skip(p: &dyn SectionProvider, inputs: &[&Input]) -> Option<Vec<Section>> {
        match p.sections(inputs) {
            Err(e) if e.contains("no TrueType font") => {
                eprintln!("skipped: {e}");
                None
            }
            r => Some(r.unwrap()),
        }
    }

    fn section<'a>(secs: &'a [Section], id: &str) -> &'a Section {
        secs.iter()
            .find(|s| s.id == id)
            .unwrap_or_else(|| panic!("no section {id} in {:?}", ids(secs)))
    }

    fn ids(secs: &[Section]) -> Vec<&str> {
        secs.iter().map(|s| s.id.as_str()).collect()
    }

    fn tables(s: &Section) -> Vec<&Table> {
        s.blocks
            .iter()
            .filter_map(|b| match b {
                Block::Table(t) => Some(t),
                _ => None,
            })
            .collect()
    }

    fn svgs(s: &Section) -> Vec<(&str, &str)> {
        s.blocks
            .iter()
            .filter_map(|b| match b {
                Block::Figure(Figure::Svg { title, svg }) => Some((title.as_str(), svg.as_str())),
                _ => None,
            })
            .collect()
    }

    fn paragraphs(s: &Section) -> String {
        s.blocks
            .iter()
            .filter_map(|b| match b {
                Block::Paragraph(p) => Some(p.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The row of `t` whose first cell is `first`, as texts.
    fn row(t: &Table, first: &str) -> Vec<String> {
        t.rows
            .iter()
            .find(|r| r[0].text == first)
            .unwrap_or_else(|| panic!("no row {first} in {}", t.caption))
            .iter()
            .map(|c| c.text.clone())
            .collect()
    }

    fn col(t: &Table, name: &str) -> usize {
        t.header.iter().position(|h| h == name).unwrap()
    }

    #[test]
    fn sim_pair_gives_accounting_completion_ratios_and_figures() {
        let (be, be_d) = sim_input("be", 2, Mode::BestEffort, false);
        let (dfs, dfs_d) = sim_input("dfs", 2, Mode::Dfs, true);
        assert!(SimSections.handles("dfs.sim") && !SimSections.handles("net.probe"));
        let Some(secs) = sections_or_skip(&SimSections, &[&be, &dfs]) else {
            return;
        };
        assert_eq!(
            ids(&secs),
            [
                "dfs-simulation-configuration",
                "dfs-simulation-completion-accounting",
                "dfs-simulation-time-slice-completion-duration",
                "dfs-simulation-aggregate-bandwidth",
                "dfs-simulation-best-effort-against-dfs",
                "dfs-simulation-proposed-and-actual-interval-durations",
                "dfs-simulation-compute-buffer-fill",
            ]
        );

        let acc = tables(section(&secs, "dfs-simulation-completion-accounting"));
        for (label, d) in [("be", &be_d), ("dfs", &dfs_d)] {
            let r = row(acc[0], label);
            assert_eq!(r[col(acc[0], "time-slices completed")], "400 of 400");
            assert_eq!(r[col(acc[0], "stored")], d.compute.stored.to_string());
            assert_eq!(r[col(acc[0], "stored")], "800");
            assert_eq!(r[col(acc[0], "checksums verified")], "800 of 800");
            assert_eq!(r[col(acc[0], "lost")], "0");
            assert_eq!(r[col(acc[0], "duplicated")], "0");
            assert_eq!(r[col(acc[0], "verdict")], "complete, all verified");
        }
        // The DFS engine table lists only the DFS input.
        assert_eq!(acc[1].rows.len(), 1);
        assert_eq!(
            row(acc[1], "dfs")[col(acc[1], "proposals used")],
            dfs_d.ie.proposals_used.to_string()
        );

        let comp = section(&secs, "dfs-simulation-time-slice-completion-duration");
        let t = tables(comp)[0];
        for (label, d) in [("be", &be_d), ("dfs", &dfs_d)] {
            let r = row(t, label);
            assert_eq!(r[col(t, "median")], ms(d.completion_ms.median));
            assert_eq!(r[col(t, "p90")], ms(d.completion_ms.p90));
            assert_eq!(r[col(t, "samples")], d.completion_ms.count.to_string());
        }
        let fig = svgs(comp);
        assert_eq!(fig.len(), 1);
        assert!(fig[0].1.contains("best effort") && fig[0].1.contains("4 nodes"));

        let bw = tables(section(&secs, "dfs-simulation-aggregate-bandwidth"))[0];
        assert_eq!(
            row(bw, "dfs")[col(bw, "GB/s")],
            format!("{:.2}", dfs_d.steady_bandwidth_gbs)
        );

        let cmp = section(&secs, "dfs-simulation-best-effort-against-dfs");
        let t = tables(cmp)[0];
        let c = compare(&be_d, &dfs_d);
        let r = row(t, "4");
        assert_eq!(
            r[col(t, "median completion, BE / DFS")],
            format!("{:.1}×", c.median_ratio)
        );
        assert_eq!(
            r[col(t, "bandwidth, DFS / BE")],
            format!("{:.3}×", c.bandwidth_ratio)
        );
        let verdict = paragraphs(cmp);
        assert!(
            verdict.contains(&format!(
                "4 nodes: the model gives a median completion ratio best effort / DFS of {:.1}×",
                c.median_ratio
            )),
            "{verdict}"
        );

        let iv = section(
            &secs,
            "dfs-simulation-proposed-and-actual-interval-durations",
        );
        let kv: Vec<&(String, String)> = iv
            .blocks
            .iter()
            .filter_map(|b| match b {
                Block::KeyValues(kv) => Some(kv),
                _ => None,
            })
            .flatten()
            .collect();
        assert!(kv
            .iter()
            .any(|(k, v)| k == "intervals" && *v == dfs_d.intervals.len().to_string()));
        assert!(kv
            .iter()
            .any(|(k, v)| k == "bandwidth drop" && v.starts_with("intervals 5–7")));
        let conf = section(&secs, "dfs-simulation-configuration");
        assert!(conf.blocks.iter().any(|b| matches!(b, Block::KeyValues(kv)
            if kv.iter().any(|(k, v)| k == "bandwidth drops" && v == "intervals 5–7 at 75 % bandwidth"))));
        let f = svgs(iv);
        assert_eq!(f.len(), 1, "only the DFS input has intervals");
        assert!(f[0].1.contains("bandwidth drop") && f[0].1.contains("proposed"));

        // Fill over time and by connection rank, for each input.
        let fill = section(&secs, "dfs-simulation-compute-buffer-fill");
        assert_eq!(svgs(fill).len(), 4);
        let t = tables(fill)[0];
        assert_eq!(
            row(t, "dfs")[col(t, "samples")],
            dfs_d.fill.len().to_string()
        );
    }

    #[test]
    fn unpaired_inputs_say_how_to_get_ratios_and_draw_bandwidth_by_nodes() {
        let (be, _) = sim_input("be4", 2, Mode::BestEffort, false);
        let (dfs, _) = sim_input("dfs8", 4, Mode::Dfs, false);
        let Some(secs) = sections_or_skip(&SimSections, &[&be, &dfs]) else {
            return;
        };
        let cmp = section(&secs, "dfs-simulation-best-effort-against-dfs");
        assert!(tables(cmp).is_empty());
        assert!(paragraphs(cmp).contains("--mode both"));
        let bw = section(&secs, "dfs-simulation-aggregate-bandwidth");
        let f = svgs(bw);
        assert_eq!(f.len(), 1, "two node counts give the Fig. 7 line chart");
        assert!(f[0].1.contains("DFS") && f[0].1.contains("best effort"));
    }

    #[test]
    fn view_ratios_match_the_crates_comparison() {
        let (_, be) = sim_input("be", 2, Mode::BestEffort, false);
        let (_, dfs) = sim_input("dfs", 2, Mode::Dfs, false);
        let (mut a, mut b) = (View::of_sim("be", &be), View::of_sim("dfs", &dfs));
        let want = compare(&be, &dfs);
        assert_eq!(ratios(&a, &b), want);
        // Without the simulator data (the MPI path) the same formula.
        (a.sim, b.sim) = (None, None);
        assert_eq!(ratios(&a, &b), want);
        assert_eq!(pairs(&[a, b]).len(), 1);
    }

    #[test]
    fn foreign_data_is_an_error_naming_the_input() {
        let r = ResultFile::new(SIM_KIND, vec![], serde_json::json!({"x": 1}), provenance());
        let i = Input::single(PathBuf::from("odd.json"), r);
        let e = SimSections.sections(&[&i]).unwrap_err();
        assert!(e.contains("odd.json") && e.contains("dfs.sim"), "{e}");
    }

    #[test]
    fn drop_ranges_join_consecutive_intervals() {
        let r = |index, dropped| IntervalRow {
            index,
            proposed_ms: Some(1.0),
            actual_ms: 1.0,
            start_spread_ms: 0.0,
            start_ms: 0.0,
            speedup: false,
            dropped,
        };
        let rows = [r(0, false), r(1, true), r(2, true), r(3, false), r(5, true)];
        assert_eq!(drop_ranges(&rows), vec![(0.5, 2.5), (4.5, 5.5)]);
        assert_eq!(bytes(65536), "64 KiB");
        assert_eq!(bytes(1 << 20), "1 MiB");
        assert_eq!(bytes(100), "100 B");
    }

    /// A `dfs.run` result carrying a small simulation's numbers (the MPI runtime writes
    /// the same structures).
    #[cfg(feature = "mpi")]
    fn run_input(name: &str, d: &SimData) -> Input {
        use crate::mpirun::{RunConfig, RunData, RESULT_KIND};
        let c = &d.config;
        let data = RunData {
            config: RunConfig {
                topology: c.topology,
                params: c.params,
                mode: c.mode,
                time_slices: d.time_slices,
                dde_replicas: 2,
                kill_dde: Some((0, 5)),
                clock_skew_ns: 1_000,
                drift_ppm: 0.0,
                sample_ns: 100_000,
            },
            ranks: d.nodes,
            time_slices: d.time_slices,
            warmup_ts: d.warmup_ts,
            completion_ms: d.completion_ms,
            completion_var_ms2: d.completion_var_ms2,
            bandwidth_gbs: d.bandwidth_gbs,
            duration_ms: d.duration_ms,
            intervals: d.intervals.clone(),
            fill: d.fill.clone(),
            compute: d.compute,
            ie: d.ie,
            dde: d.dde,
            dde_killed: 1,
            sent: d.sent,
            expected: d.time_slices * c.topology.inputs as u64,
            lost: 0,
            verified: true,
        };
        let mut r = ResultFile::new(RESULT_KIND, vec![], serde_json::Value::Null, provenance());
        r.data = serde_json::to_value(&data).unwrap();
        Input::single(PathBuf::from(format!("{name}.json")), r)
    }

    #[cfg(feature = "mpi")]
    #[test]
    fn run_sections_use_the_mpi_data() {
        let (_, be_d) = sim_input("be", 2, Mode::BestEffort, false);
        let (_, dfs_d) = sim_input("dfs", 2, Mode::Dfs, false);
        let (be, dfs) = (run_input("run-be", &be_d), run_input("run-dfs", &dfs_d));
        assert!(RunSections.handles("dfs.run") && !RunSections.handles("dfs.sim"));
        let Some(secs) = sections_or_skip(&RunSections, &[&be, &dfs]) else {
            return;
        };
        let acc = tables(section(&secs, "dfs-over-mpi-completion-accounting"));
        assert_eq!(
            row(acc[0], "run-dfs")[col(acc[0], "verdict")],
            "complete, all verified"
        );
        assert_eq!(
            row(acc[1], "run-dfs")[col(acc[1], "DDE replicas stopped")],
            "1"
        );
        let t = tables(section(&secs, "dfs-over-mpi-best-effort-against-dfs"))[0];
        let r = row(t, "4");
        let want = be_d.completion_ms.median / dfs_d.completion_ms.median;
        assert_eq!(
            r[col(t, "median completion, BE / DFS")],
            format!("{want:.1}×")
        );
        // Whole-run bandwidth (the MPI runtime has no warm-up split) and no reference.
        let bw = tables(section(&secs, "dfs-over-mpi-aggregate-bandwidth"))[0];
        let r = row(bw, "run-dfs");
        assert_eq!(r[col(bw, "GB/s")], format!("{:.2}", dfs_d.bandwidth_gbs));
        assert_eq!(r[col(bw, "reference GB/s")], "—");
        let mut bad = be.clone();
        bad.runs[0].1.data = serde_json::json!([1, 2]);
        let e = RunSections.sections(&[&bad]).unwrap_err();
        assert!(e.contains("run-be.json") && e.contains("dfs.run"), "{e}");
    }

    #[cfg(feature = "mpi")]
    #[test]
    fn bench_sections_tabulate_and_draw_sizes() {
        use crate::mpibench::{BenchConfig, BenchData, BenchRow, RESULT_KIND};
        let five = |m: f64| FiveNum {
            count: 100,
            min: m * 0.9,
            p10: m * 0.95,
            median: m,
            p90: m * 1.1,
            max: m * 2.0,
        };
        let rows: Vec<BenchRow> = [(4096u64, false, 10.0, 0.8), (65536, false, 40.0, 3.2)]
            .into_iter()
            .chain([(4096, true, 14.0, 0.6), (65536, true, 45.0, 2.9)])
            .map(|(size, mix, us, gbs)| BenchRow {
                size,
                mix,
                rounds: 100,
                round_us_mean: us,
                round_us: five(us),
                bw_per_sender_gbs: (gbs, gbs * 0.9, gbs * 1.1),
                aggregate_gbs: gbs * 4.0,
            })
            .collect();
        let data = BenchData {
            config: BenchConfig {
                sizes: vec![4096, 65536],
                bytes_per_size: 1 << 26,
                min_rounds: 100,
                mix: true,
            },
            senders: 4,
            receivers: 4,
            rows,
        };
        let mut r = ResultFile::new(RESULT_KIND, vec![], serde_json::Value::Null, provenance());
        r.data = serde_json::to_value(&data).unwrap();
        let i = Input::single(PathBuf::from("bench.json"), r);
        assert!(BenchSections.handles("dfs.bench"));
        let Some(secs) = sections_or_skip(&BenchSections, &[&i]) else {
            return;
        };
        let s = section(&secs, "mpi-put-micro-benchmark-bench");
        let t = tables(s)[0];
        assert_eq!(t.rows.len(), 4);
        let r = &t.rows[1];
        assert_eq!(r[0].text, "64 KiB");
        assert_eq!(r[col(t, "GB/s per sender")].text, "3.200");
        assert_eq!(r[col(t, "aggregate GB/s")].text, "12.80");
        assert_eq!(r[col(t, "median")].text, "40.0 µs");
        let f = svgs(s);
        assert_eq!(f.len(), 2);
        assert!(f
            .iter()
            .all(|(_, svg)| svg.contains("Mix") && svg.contains("64 KiB")));
    }
}
