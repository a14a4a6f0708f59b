//! What the `dfs.sim` and `dfs.run` sections need of one result ([`View`]), how results
//! pair up for the paper's comparison, and the cell and number formats the sections share.

use super::data::{compare, Comparison};
use crate::compute::ComputeCounters;
use crate::dde::DdeCounters;
use crate::ie::IeCounters;
use crate::params::{DfsParams, Mode, Topology};
use crate::sim::{FillSample, FiveNum, IntervalRow, SimData};
use latlab_core::doc::{Block, Cell, Figure};
use latlab_core::doc::{ChartSpec, Input};
use latlab_core::results::ResultFile;

/// Every run of every input, labelled (`input` or `input / file` when merged), with its
/// data as `decode` reads it; an error names the run and its file.
pub(crate) fn decoded<'a, T>(
    inputs: &[&'a Input],
    decode: impl Fn(&'a ResultFile) -> Result<T, String>,
) -> Result<Vec<(String, T)>, String> {
    let mut out = Vec::new();
    for i in inputs {
        for (path, run) in &i.runs {
            let label = if i.runs.len() > 1 {
                format!("{} / {}", i.label, path.display())
            } else {
                i.label.clone()
            };
            let d = decode(run).map_err(|e| format!("{label} ({}): {e}", path.display()))?;
            out.push((label, d));
        }
    }
    Ok(out)
}

/// Which runtime produced the results (section titles, wording).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Runtime {
    Sim,
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    Mpi,
}

impl Runtime {
    pub(crate) fn prefix(self) -> &'static str {
        match self {
            Runtime::Sim => "DFS simulation",
            Runtime::Mpi => "DFS over MPI",
        }
    }
}

/// Contribution accounting of one run.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Accounting {
    pub(crate) time_slices: u64,
    pub(crate) expected: u64,
    pub(crate) sent: u64,
    pub(crate) counters: ComputeCounters,
    pub(crate) lost: u64,
    /// Time-slices that never completed (MPI runtime reports them; the simulator's are
    /// `time_slices − completed`).
    pub(crate) incomplete: u64,
}

impl Accounting {
    pub(crate) fn verified(&self) -> bool {
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
pub(crate) struct View<'a> {
    pub(crate) label: &'a str,
    pub(crate) mode: Mode,
    pub(crate) topology: Topology,
    pub(crate) params: DfsParams,
    pub(crate) warmup_ts: u64,
    pub(crate) completion: FiveNum,
    pub(crate) var_ms2: f64,
    /// Aggregate bandwidth the comparison uses, GB/s (after warm-up in the simulator).
    pub(crate) bandwidth_gbs: f64,
    /// The same over the whole run.
    pub(crate) bandwidth_all_gbs: f64,
    /// The bound it is compared with: (GB/s, what it is).
    pub(crate) reference: Option<(f64, &'static str)>,
    pub(crate) duration_ms: f64,
    pub(crate) intervals: &'a [IntervalRow],
    pub(crate) fill: Vec<(f64, f64, f64, f64)>,
    pub(crate) fill_samples: &'a [FillSample],
    pub(crate) fill_by_rank: &'a [FiveNum],
    pub(crate) acc: Accounting,
    pub(crate) ie: IeCounters,
    pub(crate) dde: DdeCounters,
    pub(crate) dde_killed: Option<usize>,
    /// Runtime-specific configuration lines.
    pub(crate) extra: Vec<(String, String)>,
    /// The simulator's data, for the crate's own comparison function.
    pub(crate) sim: Option<&'a SimData>,
}

impl View<'_> {
    /// A table row of this result: its label and mode, then `cells`.
    pub(crate) fn row(&self, cells: impl IntoIterator<Item = Cell>) -> Vec<Cell> {
        [Cell::text(self.label), Cell::text(mode_name(self.mode))]
            .into_iter()
            .chain(cells)
            .collect()
    }

    pub(crate) fn nodes(&self) -> usize {
        self.topology.inputs + self.topology.computes
    }
}

/// The paper's comparison for a best-effort and a DFS view: for simulator results the
/// crate's [`compare`], otherwise the same ratios from the views.
pub(crate) fn ratios(be: &View<'_>, dfs: &View<'_>) -> Comparison {
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
pub(crate) fn pairs<'v, 'a>(views: &'v [View<'a>]) -> Vec<(&'v View<'a>, &'v View<'a>)> {
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

pub(crate) fn mode_name(m: Mode) -> &'static str {
    match m {
        Mode::BestEffort => "best effort",
        Mode::Dfs => "DFS",
        Mode::Flesnet => "FLESnet (time-slice manager)",
    }
}

/// `v` with `d` decimals.
pub(crate) fn f(v: f64, d: usize) -> String {
    if v.is_finite() {
        format!("{v:.d$}")
    } else {
        "∞".into()
    }
}

/// A duration in ms, with enough decimals for microseconds.
pub(crate) fn ms(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.1} ms")
    } else {
        format!("{v:.3} ms")
    }
}

pub(crate) fn bytes(n: u64) -> String {
    const K: u64 = 1024;
    if n >= K * K && n % (K * K) == 0 {
        format!("{} MiB", n / (K * K))
    } else if n >= K && n % K == 0 {
        format!("{} KiB", n / K)
    } else {
        format!("{n} B")
    }
}

/// A chart's title and axis descriptions, everything else as [`ChartSpec::default`].
pub(crate) fn axes(
    title: impl Into<String>,
    x_desc: impl Into<String>,
    y_desc: impl Into<String>,
) -> ChartSpec {
    ChartSpec {
        title: title.into(),
        x_desc: x_desc.into(),
        y_desc: y_desc.into(),
        ..ChartSpec::default()
    }
}

/// The figure as a block; a figure with nothing to draw is an error naming it (the
/// report would otherwise show an empty frame).
pub(crate) fn figure_block(f: Figure) -> Result<Block, String> {
    if f.drawable() {
        Ok(Block::Figure(f))
    } else {
        Err(format!("figure '{}': nothing to plot", f.title()))
    }
}
