//! One module per subcommand; each turns parsed arguments into a library configuration,
//! calls the library and prints.

mod child;
mod dfs;
mod experiment;
mod explain;
mod host_breakdown;
mod host_clocks;
mod host_isolate;
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

/// The `--dma-latency` of a measuring command that takes one.
fn dma_latency(c: &Command) -> Option<u32> {
    use crate::args::experiment::ExperimentCommand as E;
    use crate::args::net::NetCommand as N;
    let idle = match c {
        Command::Net(N::Probe(a)) => a.idle,
        Command::Net(N::Reflect(a)) => a.nf.idle,
        Command::Net(N::Forward(a)) => a.nf.idle,
        Command::Net(N::Calibrate(a)) => return a.dma_latency(latlab_sys::netns::is_root()),
        Command::Net(N::Load(a)) => a.idle,
        Command::Net(N::Delay(a)) => return a.dma_latency(latlab_sys::netns::is_root()),
        Command::Host(HostCommand::Noise(a)) => a.idle,
        Command::Host(HostCommand::Breakdown(a)) => a.idle,
        Command::Experiment(E::WhereTime(a)) => a.idle,
        Command::Experiment(E::KillerUs(a)) => a.idle,
        _ => return None,
    };
    idle.dma_latency
}

/// The `--isolate` CPUs of a measuring command that takes the flag, and its `--quiet`.
fn isolate(c: &Command) -> Option<(&[u32], bool)> {
    use crate::args::net::NetCommand as N;
    let (iso, quiet) = match c {
        Command::Net(N::Probe(a)) => (&a.isolate, a.out.quiet),
        Command::Net(N::Reflect(a)) => (&a.nf.isolate, a.nf.out.quiet),
        Command::Net(N::Forward(a)) => (&a.nf.isolate, a.nf.out.quiet),
        Command::Host(HostCommand::Noise(a)) => (&a.isolate, a.out.quiet),
        Command::Host(HostCommand::Breakdown(a)) => (&a.isolate, a.out.quiet),
        Command::Host(HostCommand::Clocks(a)) => (&a.isolate, a.out.quiet),
        _ => return None,
    };
    iso.isolate.as_ref().map(|c| (c.0.as_slice(), quiet))
}

/// `latlab host hold-idle`: runs the command under the hold and exits with its status.
fn hold_idle_cmd(a: crate::args::HoldIdleArgs) -> anyhow::Result<()> {
    use latlab_sys::idle::{run_held, HeldRunError};
    let (program, args) = a.command.split_first().expect("clap requires CMD");
    match run_held(a.dma_latency, program, args) {
        Ok(code) => std::process::exit(code),
        Err(HeldRunError::Hold(e)) => Err(crate::exit::dma_latency(e)),
        Err(e) => Err(anyhow::Error::new(e)),
    }
}

/// Runs the parsed command line. `argv` is recorded in result files. A command's
/// `--dma-latency` is held from here until the command returns (the hold is system-wide,
/// so it covers the processes and namespaces the command starts on this host).
pub fn run(cli: Cli, argv: Vec<String>) -> anyhow::Result<()> {
    let _idle = dma_latency(&cli.command)
        .map(crate::idle::hold)
        .transpose()?;
    // the CPUs stay isolated until the command returns (its result records the changes)
    let _isolation = isolate(&cli.command)
        .map(|(cpus, quiet)| host_isolate::engage(cpus, quiet))
        .transpose()?
        .map(host_isolate::Released);
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
        Command::Host(HostCommand::HoldIdle(a)) => hold_idle_cmd(a),
        Command::Host(HostCommand::Isolate(a)) => host_isolate::run(a),
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
