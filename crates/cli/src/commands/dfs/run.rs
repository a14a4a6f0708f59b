//! `latlab dfs run`: the MPI runtime.

use crate::args::dfs::RunArgs;
use crate::exit::usage;
#[cfg(feature = "mpi")]
use {
    super::{f, resolve_model},
    crate::args::dfs::RunModeArg,
    crate::output::{default_result_path, unique},
    crate::table::Table,
    anyhow::Context as _,
    latlab_core::results::ResultFile,
    latlab_dfs::Mode,
    latlab_sys::host,
};

#[cfg(feature = "mpi")]
pub fn run(a: RunArgs, argv: Vec<String>) -> anyhow::Result<()> {
    use latlab_dfs::mpirun::{self, RunConfig, RunData};
    let started_utc = host::utc_now_rfc3339();
    let out_path = a
        .out
        .output
        .clone()
        .unwrap_or_else(|| unique(default_result_path("dfs-run", &started_utc)));
    let quiet = a.out.quiet;
    let resolve = |_ranks: usize| -> Result<RunConfig, String> {
        let (topology, params) =
            resolve_model(&a.model, 16 * 1024, 500).map_err(|e| format!("{e:#}"))?;
        let kill_dde = match &a.kill_dde {
            None => None,
            Some(s) => {
                let err = || format!("--kill-dde '{s}': expected REPLICA@INTERVAL, e.g. 0@10");
                let (r, j) = s.split_once('@').ok_or_else(err)?;
                Some((r.parse().map_err(|_| err())?, j.parse().map_err(|_| err())?))
            }
        };
        Ok(RunConfig {
            topology,
            params,
            mode: match a.mode {
                RunModeArg::BestEffort => Mode::BestEffort,
                RunModeArg::Dfs => Mode::Dfs,
            },
            time_slices: a.model.time_slices.unwrap_or(10_000),
            dde_replicas: a.dde_replicas,
            kill_dde,
            clock_skew_ns: a.clock_skew.get() as i64,
            drift_ppm: a.drift_ppm,
            sample_ns: a.sample.get().max(100_000) as i64,
        })
    };
    let provenance = || super::mpi_provenance(&started_utc);
    let result = match mpirun::run(resolve, argv, provenance) {
        Ok(r) => r,
        Err(e @ (mpirun::RunError::Config(_) | mpirun::RunError::Ranks { .. })) => {
            return Err(usage(e.to_string()))
        }
        Err(e) => return Err(e.into()),
    };
    let Some(r) = result else { return Ok(()) };
    r.save(&out_path).context("writing the result")?;
    let saved = ResultFile::load(&out_path)?;
    let d: RunData = serde_json::from_value(saved.data.clone()).context("reading the result")?;
    if !quiet {
        let c = d.completion_ms;
        let mut t = Table::new([
            "mode",
            "ranks",
            "ts",
            "min ms",
            "p10 ms",
            "median ms",
            "p90 ms",
            "max ms",
            "GB/s",
            "sent",
            "stored",
            "lost",
            "dup",
            "bad sum",
        ]);
        t.row(vec![
            d.config.mode.name().into(),
            d.ranks.to_string(),
            d.time_slices.to_string(),
            f(c.min, 3),
            f(c.p10, 3),
            f(c.median, 3),
            f(c.p90, 3),
            f(c.max, 3),
            f(d.bandwidth_gbs, 2),
            d.sent.to_string(),
            d.compute.stored.to_string(),
            d.lost.to_string(),
            d.compute.duplicates.to_string(),
            d.compute.checksum_failures.to_string(),
        ]);
        println!("time-slice completion duration (last - first arrival), after warm-up:");
        print!("{}", t.render());
        if d.config.mode == Mode::Dfs {
            println!(
                "intervals: {}, proposals used {}, fallbacks {}, DDE replicas stopped {}",
                d.intervals.len(),
                d.ie.proposals_used,
                d.ie.fallbacks,
                d.dde_killed
            );
        }
        println!(
            "{}",
            if d.verified {
                "verified: every time-slice complete, every checksum correct, nothing lost or duplicated"
            } else {
                "NOT verified (see warnings)"
            }
        );
        for w in &saved.warnings {
            println!("warning: {w}");
        }
        println!("result: {}", out_path.display());
    }
    if !d.verified {
        anyhow::bail!(
            "the run lost, duplicated or corrupted contributions (see {})",
            out_path.display()
        );
    }
    Ok(())
}

#[cfg(not(feature = "mpi"))]
pub fn run(_a: RunArgs, _argv: Vec<String>) -> anyhow::Result<()> {
    Err(usage(
        "latlab was built without MPI support (feature 'mpi'); install libopenmpi-dev and libclang-dev and rebuild",
    ))
}
