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

/// The configuration and output file of a child job (`latlab child JOBFILE`).
#[cfg(feature = "mpi")]
pub(crate) fn job_parts<T: serde::de::DeserializeOwned>(
    job: &latlab_core::child::ChildJob,
) -> anyhow::Result<(T, std::path::PathBuf)> {
    let cfg = job.config().map_err(|e| usage(e.to_string()))?;
    let out = job
        .output
        .clone()
        .ok_or_else(|| usage(format!("job '{}' names no output file", job.job)))?;
    Ok((cfg, out))
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
