//! `latlab experiment …`: dispatches to the experiment of each area.

use crate::args::experiment::ExperimentCommand;

/// Runs one experiment.
pub fn run(cmd: ExperimentCommand, argv: Vec<String>) -> anyhow::Result<()> {
    match cmd {
        ExperimentCommand::Dfs(a) => super::dfs::experiment::run(a, argv),
    }
}
