//! The experiment's real MPI part: the MPI_Put benchmark and both modes of the runtime on
//! this host, each started as a child job under `mpirun` ([`crate::launch`]).

use super::config::ExperimentConfig;
use crate::launch::{bench_job, run_job, MpiLauncher};
use crate::mpidata::{BenchConfig, RunConfig, BENCH_DEFAULT_MIN_ROUNDS, RUN_DEFAULT_MTS_BYTES};
use crate::params::Mode;
use latlab_core::child::ChildJob;
use std::path::{Path, PathBuf};

/// Result files of the MPI part.
pub(super) struct MpiFiles {
    /// The best-effort run.
    pub be: PathBuf,
    /// The DFS run.
    pub dfs: PathBuf,
    /// The benchmark, if it ran.
    pub bench: Option<PathBuf>,
}

/// The benchmark the runs are compared against: their contribution size, Mix included.
pub(super) fn bench_config() -> BenchConfig {
    BenchConfig {
        sizes: vec![RUN_DEFAULT_MTS_BYTES],
        bytes_per_size: 16 << 20,
        min_rounds: BENCH_DEFAULT_MIN_ROUNDS,
        mix: true,
    }
}

/// One run of `mode` on the experiment's ranks (half inputs, half computes), with the
/// runtime's defaults otherwise.
pub(super) fn run_config(cfg: &ExperimentConfig, mode: Mode) -> RunConfig {
    let half = cfg.ranks / 2;
    let mut c = RunConfig::new(half, half, mode);
    c.time_slices = cfg.mpi_time_slices;
    c
}

/// Runs the benchmark (a failure is reported and skipped) and both modes (a failure
/// skips the MPI part: the reason is returned).
pub(super) fn run(
    cfg: &ExperimentConfig,
    dir: &Path,
    say: &dyn Fn(&str),
) -> Result<MpiFiles, String> {
    let mpirun = MpiLauncher::find(cfg.ranks)?;
    let start = |job: Result<ChildJob, latlab_core::child::ChildError>, name: &str| {
        let job = job.map_err(|e| e.to_string())?;
        mpirun.run(&job, &dir.join(format!("{name}.job.json")))
    };
    say(&format!("MPI: dfs bench on {} ranks", cfg.ranks));
    let bench = dir.join("mpi-bench.json");
    let bench = start(bench_job(&bench_config(), bench.clone()), "mpi-bench")
        .map(|()| bench)
        .map_err(|e| say(&format!("benchmark failed: {e}")))
        .ok();
    let mut out = Vec::new();
    for mode in [Mode::BestEffort, Mode::Dfs] {
        say(&format!(
            "MPI: dfs run {}, {} time-slices",
            mode.name(),
            cfg.mpi_time_slices
        ));
        let name = format!("mpi-{}", mode.name());
        let p = dir.join(format!("{name}.json"));
        start(run_job(&run_config(cfg, mode), p.clone()), &name)?;
        out.push(p);
    }
    let dfs = out.pop().expect("two runs");
    let be = out.pop().expect("two runs");
    Ok(MpiFiles { be, dfs, bench })
}
