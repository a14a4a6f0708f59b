//! Starting the MPI runtime and benchmark as child processes: a [`ChildJob`] carrying the
//! resolved [`RunConfig`] or [`BenchConfig`], run as `mpirun … latlab child JOBFILE`.
//!
//! Every rank reads the same job file; `latlab child` deserialises the configuration and
//! makes the same library call `latlab dfs run` / `latlab dfs bench` make. No command line
//! is re-spelled, so renaming a flag cannot break an orchestrator at run time. Compiled
//! without the `mpi` feature too: starting `mpirun` needs no MPI library here (the child
//! says so if it was built without MPI).

use crate::mpidata::{BenchConfig, RunConfig};
use latlab_core::child::{ChildError, ChildJob};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Job name of an MPI run ([`crate::mpirun`]), configuration [`RunConfig`].
pub const RUN_JOB: &str = "dfs.run";
/// Job name of the MPI_Put benchmark ([`crate::mpibench`]), configuration [`BenchConfig`].
pub const BENCH_JOB: &str = "dfs.bench";

/// The job of an MPI run writing its result to `output`.
///
/// # Errors
/// [`ChildError::Config`] if the configuration does not serialise.
pub fn run_job(cfg: &RunConfig, output: PathBuf) -> Result<ChildJob, ChildError> {
    ChildJob::new(RUN_JOB, cfg, Some(output))
}

/// The job of a benchmark writing its result to `output`.
///
/// # Errors
/// [`ChildError::Config`] if the configuration does not serialise.
pub fn bench_job(cfg: &BenchConfig, output: PathBuf) -> Result<ChildJob, ChildError> {
    ChildJob::new(BENCH_JOB, cfg, Some(output))
}

/// Starts child jobs on a number of local MPI ranks with `mpirun`.
#[derive(Clone, Debug)]
pub struct MpiLauncher {
    /// The latlab binary every rank runs.
    exe: PathBuf,
    /// Ranks per job.
    ranks: usize,
}

impl MpiLauncher {
    /// A launcher of this latlab binary on `ranks` ranks, or why there is none.
    ///
    /// # Errors
    /// A sentence when the running binary cannot be found or `mpirun` does not run.
    pub fn find(ranks: usize) -> Result<MpiLauncher, String> {
        let exe =
            std::env::current_exe().map_err(|e| format!("cannot find the latlab binary: {e}"))?;
        let ok = Command::new("mpirun")
            .arg("--version")
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false);
        if !ok {
            return Err("mpirun not found (install openmpi-bin)".into());
        }
        Ok(MpiLauncher { exe, ranks })
    }

    /// Writes `job` to `job_file`, runs it on every rank and waits; the job file is removed
    /// afterwards.
    ///
    /// # Errors
    /// A sentence with the last line the ranks wrote on standard error when the job fails.
    pub fn run(&self, job: &ChildJob, job_file: &Path) -> Result<(), String> {
        job.write(job_file).map_err(|e| e.to_string())?;
        let o = Command::new("mpirun")
            .args(["--allow-run-as-root", "--oversubscribe", "-n"])
            .arg(self.ranks.to_string())
            .arg(&self.exe)
            .arg("child")
            .arg(job_file)
            .output();
        let _ = std::fs::remove_file(job_file);
        let o = o.map_err(|e| format!("mpirun: {e}"))?;
        if o.status.success() {
            Ok(())
        } else {
            Err(format!(
                "mpirun of job {} failed: {}",
                job.job,
                String::from_utf8_lossy(&o.stderr)
                    .lines()
                    .last()
                    .unwrap_or("")
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::Mode;

    #[test]
    fn jobs_carry_the_resolved_configs_and_round_trip_through_their_file() {
        let dir = std::env::temp_dir().join(format!("latlab-dfs-launch-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut run = RunConfig::new(2, 2, Mode::Dfs);
        run.time_slices = 1_000;
        run.kill_dde = Some((0, 3));
        let bench = BenchConfig {
            sizes: vec![16 * 1024],
            bytes_per_size: 16 << 20,
            min_rounds: 20,
            mix: true,
        };
        let jobs = [
            (run_job(&run, dir.join("r.json")).unwrap(), RUN_JOB),
            (bench_job(&bench, dir.join("b.json")).unwrap(), BENCH_JOB),
        ];
        for (job, name) in &jobs {
            assert_eq!(job.job, *name);
            assert!(job.quiet, "a child keeps quiet");
            let path = dir.join(format!("{name}.job.json"));
            job.write(&path).unwrap();
            assert_eq!(&ChildJob::read(&path).unwrap(), job);
        }
        let back = ChildJob::read(&dir.join("dfs.run.job.json")).unwrap();
        assert_eq!(back.config::<RunConfig>().unwrap(), run);
        assert_eq!(back.output, Some(dir.join("r.json")));
        let back = ChildJob::read(&dir.join("dfs.bench.job.json")).unwrap();
        assert_eq!(back.config::<BenchConfig>().unwrap(), bench);
        // A job of the other kind is a typed error, not a misread run.
        assert!(back.config::<RunConfig>().is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
