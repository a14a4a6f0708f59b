//! `latlab experiment …`: dispatches to the experiment of each area.

use crate::args::experiment::ExperimentCommand;

/// Runs one experiment.
pub fn run(cmd: ExperimentCommand, argv: Vec<String>) -> anyhow::Result<()> {
    match cmd {
        ExperimentCommand::KillerUs(a) => super::net::killer_us(a, argv),
        ExperimentCommand::Hourglass(a) => super::sched::experiment::hourglass(a, argv),
        ExperimentCommand::WhereTime(a) => super::where_time::run_where_time(a, argv),
        ExperimentCommand::Dfs(a) => super::dfs::experiment::run(a, argv),
    }
}
