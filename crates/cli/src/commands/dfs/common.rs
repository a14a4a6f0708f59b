//! What the `latlab dfs` commands share: model-flag resolution, table cells, child-job
//! parts, provenance of MPI runs.

use crate::args::dfs::{ModelArgs, SsuCriterionArg};
use crate::exit::usage;
use latlab_dfs::params::{DfsParams, SsuCriterion, Topology};
use latlab_dfs::sim::FiveNum;

/// Why `dfs run` and `dfs bench` cannot run in this build.
#[cfg(not(feature = "mpi"))]
pub(crate) const NO_MPI: &str = "latlab was built without MPI support (feature 'mpi'); install libopenmpi-dev and libclang-dev and rebuild";

/// Resolves the shared model flags; `default_mts` and `default_ts_per_interval` differ
/// between the simulator and the MPI runtime. The library checks the result
/// ([`SimConfig::validate`](latlab_dfs::sim::SimConfig::validate),
/// [`RunConfig::validate`](latlab_dfs::mpidata::RunConfig::validate)).
pub(crate) fn resolve_model(
    m: &ModelArgs,
    default_mts: u64,
    default_ts_per_interval: u64,
) -> anyhow::Result<(Topology, DfsParams)> {
    let (inputs, computes) = match m.nodes {
        Some(n) if n < 2 || n % 2 != 0 => {
            return Err(usage(format!(
                "--nodes {n}: need an even number of at least 2 (half inputs, half computes)"
            )))
        }
        Some(n) => (n / 2, n / 2),
        None => (m.inputs, m.computes),
    };
    let topology = Topology {
        inputs,
        computes,
        mts_bytes: m.mts_size.unwrap_or(default_mts),
        slots_per_input: m.slots,
    };
    let params = DfsParams {
        ts_per_intvl: m.ts_per_interval.unwrap_or(default_ts_per_interval),
        hist_cnt: m.hist_cnt,
        ssu_th: m.ssu_th,
        ssu_pct: m.ssu_pct,
        ssu_criterion: match m.ssu_criterion {
            SsuCriterionArg::Variance => SsuCriterion::Variance,
            SsuCriterionArg::Mean => SsuCriterion::MeanDeviation,
        },
        theta_pct: m.theta,
    };
    Ok((topology, params))
}

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
