//! One module per subcommand; each turns parsed arguments into a library configuration,
//! calls the library and prints.

mod dfs;
mod experiment;
mod host_clocks;
mod plot;
mod show;

use crate::args::{Cli, Command, HostCommand};

/// Runs the parsed command line. `argv` is recorded in result files.
pub fn run(cli: Cli, argv: Vec<String>) -> anyhow::Result<()> {
    match cli.command {
        Command::Host(HostCommand::Clocks(a)) => host_clocks::run(a, argv),
        Command::Dfs(c) => dfs::run(c, argv),
        Command::Experiment(c) => experiment::run(c, argv),
        Command::Plot(a) => plot::run(a),
        Command::Show(a) => show::run(a),
    }
}

/// Loads result files, naming the file in any error.
pub fn load_results(
    paths: &[std::path::PathBuf],
) -> anyhow::Result<Vec<(std::path::PathBuf, latlab_core::results::ResultFile)>> {
    paths
        .iter()
        .map(|p| Ok((p.clone(), latlab_core::results::ResultFile::load(p)?)))
        .collect()
}
