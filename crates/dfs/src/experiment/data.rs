//! The `dfs.experiment` result: [`ExperimentData`] is the one type that writes it
//! ([`ExperimentData::to_result`]) and reads it ([`ExperimentData::from_result`]), and the
//! findings both the summary and the report state ([`findings`]).

use crate::paper::{
    FIG8_DROP_FIRST, FIG8_DROP_LAST, PAPER_BANDWIDTH_RATIO, PAPER_COMPLETION_RATIO, QUOTED_NODES,
};
use crate::report::{Comparison, DropSummary, ReportError};
use latlab_core::results::{Provenance, ResultFile};
use serde::{Deserialize, Serialize};

/// Result kind of the experiment's summary (`experiment.json`).
pub const RESULT_KIND: &str = "dfs.experiment";

/// The `data` of a `dfs.experiment` result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExperimentData {
    /// Best effort vs DFS per simulated node count.
    pub sim: Vec<Comparison>,
    /// Best effort vs DFS in the real MPI run (None when skipped).
    pub mpi: Option<Comparison>,
    /// Why the MPI part was skipped, if it was.
    pub mpi_skipped: Option<String>,
    /// The bandwidth-drop run.
    pub drop: Option<DropSummary>,
    /// Result files and figures written (relative to the output directory).
    pub files: Vec<String>,
    /// Every policy (best effort, DFS, FLESnet) at every node count, beside the paper.
    #[serde(default)]
    pub policies: Vec<super::policies::PolicyRow>,
    /// The sensitivity sweep (best effort vs DFS with one mechanism changed).
    #[serde(default)]
    pub sweep: Vec<super::policies::SweepRow>,
}

impl ExperimentData {
    /// The result file: kind [`RESULT_KIND`], `config` as given, this in `data`.
    pub fn to_result(
        &self,
        argv: Vec<String>,
        config: serde_json::Value,
        provenance: Provenance,
    ) -> ResultFile {
        let mut r = ResultFile::new(RESULT_KIND, argv, config, provenance);
        r.data = serde_json::to_value(self).expect("experiment data serialises");
        r
    }

    /// The data of a `dfs.experiment` result.
    ///
    /// # Errors
    /// [`ReportError::Kind`] for another kind, [`ReportError::Data`] when the data does not
    /// parse.
    pub fn from_result(r: &ResultFile) -> Result<ExperimentData, ReportError> {
        if r.kind != RESULT_KIND {
            return Err(ReportError::Kind(r.kind.clone(), RESULT_KIND));
        }
        Ok(serde_json::from_value(r.data.clone())?)
    }

    /// Node count of the bandwidth-drop runs, from their file name (`sim-drop-N.json`).
    pub fn drop_nodes(&self) -> Option<usize> {
        self.files.iter().find_map(|f| {
            f.strip_prefix("sim-drop-")?
                .strip_suffix(".json")?
                .parse()
                .ok()
        })
    }
}

/// `x` with `d` decimals (the summary's plain format: an infinite ratio prints as `inf`).
pub(crate) fn fixed(x: f64, d: usize) -> String {
    format!("{x:.d$}")
}

/// What the experiment found, one sentence per line as the summary lists them: the ratios
/// at the node counts the paper quotes, the MPI run, the bandwidth drop (on `drop_nodes`
/// nodes), and why the MPI part was skipped.
pub fn findings(d: &ExperimentData, drop_nodes: usize) -> Vec<String> {
    let mut out = Vec::new();
    for key in QUOTED_NODES {
        if let Some(c) = d.sim.iter().find(|c| c.nodes == key) {
            out.push(format!(
                "{key} nodes (sim): best-effort/DFS completion spread {}x at the median, {}x at p90, {}x in variance (paper: at least {PAPER_COMPLETION_RATIO}x); DFS/best-effort bandwidth {}x (paper: up to {PAPER_BANDWIDTH_RATIO}x).",
                fixed(c.median_ratio, 2), fixed(c.p90_ratio, 2), fixed(c.variance_ratio, 1), fixed(c.bandwidth_ratio, 3)
            ));
        }
    }
    if let Some(c) = &d.mpi {
        out.push(format!(
            "MPI on this host ({} ranks): best-effort/DFS median {}x, p90 {}x; DFS/best-effort bandwidth {}x.",
            c.nodes, fixed(c.median_ratio, 2), fixed(c.p90_ratio, 2), fixed(c.bandwidth_ratio, 3)
        ));
    }
    if let Some(dr) = &d.drop {
        out.push(format!(
            "Bandwidth drop ({drop_nodes} nodes, intervals {FIG8_DROP_FIRST}-{FIG8_DROP_LAST} +25 % long): proposed {} ms before, actual {} ms during, proposal peak {} ms, last proposal {} ms; speed-ups after the drop in intervals {:?}.",
            fixed(dr.before_ms, 3), fixed(dr.actual_in_drop_ms, 3), fixed(dr.peak_ms, 3), fixed(dr.last_ms, 3), dr.speedups_after
        ));
    }
    let paced = d
        .policies
        .iter()
        .filter_map(|p| Some((p.nodes, p.warm, p.paced_intervals?)))
        .min_by_key(|p| p.2);
    if let Some((nodes, warm, n)) = paced {
        let start = if warm { "warm" } else { "cold" };
        out.push(if n >= MIN_PACED_INTERVALS {
            format!("Every DFS figure stands on at least {n} paced intervals after the warm-up (fewest: {nodes} nodes, {start}).")
        } else {
            format!("DFS at {nodes} nodes ({start}) had only {n} paced intervals after the warm-up (fewer than {MIN_PACED_INTERVALS}): its figures are not a steady state; run more --intervals.")
        });
    }
    if let Some(why) = &d.mpi_skipped {
        out.push(format!("MPI part skipped: {why}"));
    }
    out
}

/// Paced intervals after the warm-up a DFS figure needs to count as judged on DFS.
pub const MIN_PACED_INTERVALS: u64 = 20;

/// The experiment's summary: a table (one row per runtime and node count) and the
/// findings; [`Summary::markdown`] puts them into `summary.md`.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    /// Column names.
    pub header: Vec<&'static str>,
    /// One row per node count (the MPI run first).
    pub rows: Vec<Vec<String>>,
    /// See [`findings`].
    pub findings: Vec<String>,
    /// Files written (relative to the output directory).
    pub files: Vec<String>,
    /// Further Markdown sections (the policies and the sweep).
    pub extra: String,
}

impl Summary {
    /// The summary as Markdown, with `table` (the rows rendered as aligned text) in a
    /// code block.
    pub fn markdown(&self, table: &str) -> String {
        let mut md = String::new();
        md.push_str("# latlab experiment dfs\n\n");
        md.push_str("Completion duration = last minus first contribution arrival of a time-slice, after the two warm-up intervals.\n\n```\n");
        md.push_str(table);
        md.push_str("```\n\n");
        for f in &self.findings {
            md.push_str(&format!("- {f}\n"));
        }
        if !self.extra.is_empty() {
            md.push('\n');
            md.push_str(&self.extra);
        }
        md.push_str(
            "\nWhy the model's ratios differ from the paper's is discussed in docs/dfs.md.\n\nFiles:\n",
        );
        for f in &self.files {
            md.push_str(&format!("- {f}\n"));
        }
        md
    }
}
