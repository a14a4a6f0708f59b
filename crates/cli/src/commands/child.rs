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
    // recorded in the child's result, like any command's argv
    let argv: Vec<String> = std::env::args().collect();
    match job.job.as_str() {
        // Each orchestrated job adds its arm here: "name" => module::run_child(&job),
        latlab_net::run::NF_JOB => super::net::nf_child(&job, argv),
        latlab_net::run::PROBE_JOB => super::net::probe_child(&job, argv),
        other => Err(usage(format!(
            "job file {}: unknown job '{other}'",
            a.job.display()
        ))),
    }
}
