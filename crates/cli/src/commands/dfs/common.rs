//! What the `latlab dfs` commands share: table cells, child-job parts, provenance of MPI
//! runs.

#[cfg(feature = "mpi")]
use crate::exit::usage;
use latlab_dfs::sim::FiveNum;

/// Why `dfs run` and `dfs bench` cannot run in this build.
#[cfg(not(feature = "mpi"))]
pub(crate) const NO_MPI: &str = "latlab was built without MPI support (feature 'mpi'); install libopenmpi-dev and libclang-dev and rebuild";

/// Column names of a completion-duration five-number summary, in ms.
pub(crate) const COMPLETION_MS: [&str; 5] = ["min ms", "p10 ms", "median ms", "p90 ms", "max ms"];

/// The cells under [`COMPLETION_MS`]: min, p10, median, p90, max with three decimals.
pub(crate) fn completion_cells(c: &FiveNum) -> [String; 5] {
    [c.min, c.p10, c.median, c.p90, c.max].map(|x| f(x, 3))
}

/// Where and how an MPI run reports, on rank 0: its result file, whether to print, the
/// command line its result records, and when it started.
#[cfg(feature = "mpi")]
pub(crate) struct Launch {
    pub out: std::path::PathBuf,
    pub quiet: bool,
    pub argv: Vec<String>,
    pub started_utc: String,
}

#[cfg(feature = "mpi")]
impl Launch {
    /// A run from the command line: `-o FILE`, else `latlab-results/<kind>-<UTC>.json`.
    pub(crate) fn from_args(
        out: &crate::args::OutputArgs,
        kind: &str,
        argv: Vec<String>,
    ) -> Launch {
        let started_utc = latlab_sys::host::utc_now_rfc3339();
        Launch {
            out: crate::output::result_path(out, kind, &started_utc),
            quiet: out.quiet,
            argv,
            started_utc,
        }
    }

    /// A child job (`latlab child JOBFILE`): its configuration, and the output file it names.
    pub(crate) fn from_job<T: serde::de::DeserializeOwned>(
        job: &latlab_core::child::ChildJob,
    ) -> anyhow::Result<(T, Launch)> {
        let cfg = job.config().map_err(|e| usage(e.to_string()))?;
        let out = job
            .output
            .clone()
            .ok_or_else(|| usage(format!("job '{}' names no output file", job.job)))?;
        let launch = Launch {
            out,
            quiet: job.quiet,
            argv: std::env::args().collect(),
            started_utc: latlab_sys::host::utc_now_rfc3339(),
        };
        Ok((cfg, launch))
    }
}

/// `x` as a decimal with `d` digits.
pub(crate) fn f(x: f64, d: usize) -> String {
    format!("{x:.d$}")
}

/// Provenance of an MPI run: every rank times with `CLOCK_MONOTONIC` (ranks on different
/// hosts do not share a TSC), so that is the recorded timebase.
#[cfg(feature = "mpi")]
pub(crate) fn mpi_provenance(started_utc: &str) -> latlab_core::results::Provenance {
    let (_, timebase) = latlab_sys::tsc::Clock::establish_monotonic(
        "the MPI runtime times every rank with CLOCK_MONOTONIC (ranks may be on different hosts)",
    );
    latlab_sys::host::provenance(timebase, vec![], false, started_utc.to_string())
}

/// Saves rank 0's result to `out` and reads it back with its data (the printout shows
/// what the file holds).
#[cfg(feature = "mpi")]
pub(crate) fn save_and_read<T: serde::de::DeserializeOwned>(
    r: &latlab_core::results::ResultFile,
    out: &std::path::Path,
) -> anyhow::Result<(latlab_core::results::ResultFile, T)> {
    use anyhow::Context as _;
    r.save(out).context("writing the result")?;
    let saved = latlab_core::results::ResultFile::load(out)?;
    let d = serde_json::from_value(saved.data.clone()).context("reading the result")?;
    Ok((saved, d))
}
