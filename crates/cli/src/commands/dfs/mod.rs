//! `latlab dfs …`: simulate, run over MPI, benchmark.

pub(crate) mod bench;
mod common;
pub(crate) mod experiment;
pub(crate) mod run;
pub(crate) mod sim;

use crate::args::dfs::DfsCommand;

/// Runs a `latlab dfs` subcommand.
pub fn run(c: DfsCommand, argv: Vec<String>) -> anyhow::Result<()> {
    match c {
        DfsCommand::Sim(a) => sim::run(a, argv),
        DfsCommand::Run(a) => run::run(a, argv),
        DfsCommand::Bench(a) => bench::run(a, argv),
    }
}
