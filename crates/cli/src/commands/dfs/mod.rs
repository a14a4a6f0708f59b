//! `latlab dfs …`: simulate, run over MPI, benchmark.

#[cfg(feature = "mpi")]
mod bench;
mod common;
pub(crate) mod experiment;
#[cfg(feature = "mpi")]
mod run;
mod sim;

use crate::args::dfs::DfsCommand;
use latlab_core::child::ChildJob;

/// Runs a `latlab dfs` subcommand.
pub fn run(c: DfsCommand, argv: Vec<String>) -> anyhow::Result<()> {
    match c {
        DfsCommand::Sim(a) => sim::run(a, argv),
        DfsCommand::NoiseTrace(a) => sim::noise_trace(&a),
        #[cfg(feature = "mpi")]
        DfsCommand::Run(a) => run::run(a, argv),
        #[cfg(feature = "mpi")]
        DfsCommand::Bench(a) => bench::run(a, argv),
        #[cfg(not(feature = "mpi"))]
        DfsCommand::Run(_) | DfsCommand::Bench(_) => Err(crate::exit::usage(common::NO_MPI)),
    }
}

/// `latlab child` with a `dfs.run` or `dfs.bench` job: the job's configuration, on every
/// rank.
pub fn child(job: &ChildJob) -> anyhow::Result<()> {
    #[cfg(feature = "mpi")]
    if job.job == latlab_dfs::launch::BENCH_JOB {
        bench::child(job)
    } else {
        run::child(job)
    }
    #[cfg(not(feature = "mpi"))]
    {
        let _ = job;
        Err(crate::exit::usage(common::NO_MPI))
    }
}
