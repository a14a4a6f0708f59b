//! `latlab experiment …` command-line definitions.

use clap::{Args, Subcommand};
use std::path::PathBuf;

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
    Dfs(DfsExperimentArgs),
}

/// Options of `latlab experiment dfs`.
#[derive(Debug, Args)]
pub struct DfsExperimentArgs {
    /// Where to write result files, figures and the summary.
    #[arg(long, default_value = "latlab-results/dfs-experiment")]
    pub out_dir: PathBuf,
    /// Simulated node counts (half inputs, half computes).
    #[arg(long, value_delimiter = ',', default_value = "64,128,192,384")]
    pub nodes: Vec<usize>,
    /// Intervals simulated per node count (whole intervals of the simulator's 1,000
    /// time-slices).
    #[arg(long, default_value_t = 16)]
    pub intervals: u64,
    /// Intervals of the bandwidth-drop runs (25 % drop in intervals 15-25).
    #[arg(long, default_value_t = 55)]
    pub drop_intervals: u64,
    /// Nodes of the bandwidth-drop runs (the paper's Fig. 8 used 192).
    #[arg(long, default_value_t = 192)]
    pub drop_nodes: usize,
    /// Skip the real MPI runs.
    #[arg(long)]
    pub no_mpi: bool,
    /// MPI ranks for the real run (half inputs, half computes).
    #[arg(long, default_value_t = 8)]
    pub ranks: usize,
    /// Time-slices of the real MPI runs.
    #[arg(long, default_value_t = 10_000)]
    pub mpi_time_slices: u64,
    /// Seed of the simulations.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Figure format: svg or png.
    #[arg(long, default_value = "svg", value_parser = ["svg", "png"])]
    pub format: String,
    /// Print only the summary.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}
