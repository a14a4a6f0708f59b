//! One module per subcommand; each turns parsed arguments into a library configuration,
//! calls the library and prints.

mod child;
mod dfs;
mod experiment;
mod explain;
mod host_breakdown;
mod host_clocks;
mod host_noise;
mod net;
mod net_agents;
mod net_delay;
mod net_load;
mod net_testpmd;
mod plot;
pub mod report;
mod sched;
mod show;
mod where_time;

use crate::args::{Cli, Command, HostCommand};

/// Runs the parsed command line. `argv` is recorded in result files.
pub fn run(cli: Cli, argv: Vec<String>) -> anyhow::Result<()> {
    match cli.command {
        Command::Host(HostCommand::Clocks(a)) => host_clocks::run(a, argv),
        Command::Dfs(c) => dfs::run(c, argv),
        Command::Net(crate::args::net::NetCommand::Probe(a)) if a.agents => {
            net_agents::run(a, argv)
        }
        Command::Net(c) => net::run(c, argv),
        Command::Experiment(c) => experiment::run(c, argv),
        Command::Host(HostCommand::Breakdown(a)) => host_breakdown::run(a, argv),
        Command::Host(HostCommand::Noise(a)) => host_noise::run(a, argv),
        Command::Explain(a) => explain::run(a),
        Command::Plot(a) => plot::run(a),
        Command::Show(a) => show::run(a),
        Command::Report(a) => report::report(a),
        Command::Compare(a) => report::compare_cmd(a),
        Command::Check(a) => report::check(a),
        Command::Sched(a) => sched::run(a, argv),
        Command::Child(a) => child::run(a),
    }
}
