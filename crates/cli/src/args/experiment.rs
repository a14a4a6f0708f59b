//! `latlab experiment …`: each paper's key experiment, run on this machine. Every
//! experiment writes its result files first, then figures, a summary and an HTML report
//! built from those files.

use clap::Subcommand;

/// `latlab experiment …`
#[derive(Debug, Subcommand)]
pub enum ExperimentCommand {
    /// The DFS experiment: a real MPI run (best effort vs DFS, plus the MPI_Put benchmark)
    /// on this machine and the simulator at 64–384 nodes, the paper's Figs. 6–9 and a
    /// summary table.
    #[command(after_help = "Examples:
  latlab experiment dfs
  latlab experiment dfs --out-dir results/dfs --nodes 64,128 --no-mpi
  latlab experiment dfs --intervals 12 --drop-intervals 60

Writes into --out-dir: sim-<nodes>-<mode>.json, sim-drop-*.json, mpi-*.json, fig6..fig9
figures (.svg, or .png with --format png), summary.md and experiment.json (kind dfs.experiment).")]
    Dfs(super::dfs::DfsExperimentArgs),
}
