//! `latlab child JOBFILE`: the receiving end of [`latlab_core::child`]. Another latlab
//! process (an experiment, an orchestrator, `mpirun`) wrote a versioned job envelope with a
//! resolved library configuration; this reads it, checks it and makes the same library
//! call the user-facing command makes. No flags are re-parsed.

use crate::args::ChildArgs;
use crate::exit::usage;
use latlab_core::child::ChildJob;

/// Reads the job file and runs the job it names.
pub fn run(a: ChildArgs) -> anyhow::Result<()> {
    let job = ChildJob::read(&a.job).map_err(|e| usage(e.to_string()))?;
    #[allow(clippy::match_single_binding)] // until the first job registers its arm
    match job.job.as_str() {
        // Each orchestrated job adds its arm here: "name" => module::run_child(&job),
        latlab_dfs::launch::RUN_JOB => super::dfs::run::child(&job),
        latlab_dfs::launch::BENCH_JOB => super::dfs::bench::child(&job),
        other => Err(usage(format!(
            "job file {}: unknown job '{other}'",
            a.job.display()
        ))),
    }
}
