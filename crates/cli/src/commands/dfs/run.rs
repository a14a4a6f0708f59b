//! `latlab dfs run`: the MPI runtime. The options resolve into a [`RunConfig`] (on rank 0;
//! the library checks it and broadcasts it); `latlab child` runs a [`RunConfig`] from a job
//! file through the same call.

use super::common::{completion_cells, f, job_parts, COMPLETION_MS};
use crate::args::dfs::RunArgs;
use crate::exit::usage;
use crate::output::result_path;
use crate::table::Table;
use latlab_core::child::ChildJob;
use latlab_core::results::ResultFile;
use latlab_dfs::mpirun::{self, RunConfig, RunData};
use latlab_dfs::Mode;
use latlab_sys::host;
use std::path::Path;

pub fn run(a: RunArgs, argv: Vec<String>) -> anyhow::Result<()> {
    let started_utc = host::utc_now_rfc3339();
    let out_path = result_path(&a.out, "dfs-run", &started_utc);
    // rank 0 resolves; the library checks and broadcasts
    let resolve = |_ranks: usize| RunConfig::try_from(&a);
    execute(resolve, &out_path, a.out.quiet, argv, &started_utc)
}

/// `latlab child` with a `dfs.run` job: the job's configuration, on every rank.
pub fn child(job: &ChildJob) -> anyhow::Result<()> {
    let (cfg, out): (RunConfig, _) = job_parts(job)?;
    let started_utc = host::utc_now_rfc3339();
    let argv = std::env::args().collect();
    execute(|_| Ok(cfg), &out, job.quiet, argv, &started_utc)
}

/// Runs, saves the result (rank 0) and prints it unless `quiet`.
fn execute(
    resolve: impl FnOnce(usize) -> Result<RunConfig, String>,
    out_path: &Path,
    quiet: bool,
    argv: Vec<String>,
    started_utc: &str,
) -> anyhow::Result<()> {
    let provenance = || super::common::mpi_provenance(started_utc);
    let result = match mpirun::run(resolve, argv, provenance) {
        Ok(r) => r,
        Err(e @ (mpirun::RunError::Config(_) | mpirun::RunError::Ranks { .. })) => {
            return Err(usage(e.to_string()))
        }
        Err(e) => return Err(e.into()),
    };
    let Some(r) = result else { return Ok(()) };
    let (saved, d): (_, RunData) = super::common::save_and_read(&r, out_path)?;
    if !quiet {
        print_run(&d, &saved, out_path);
    }
    if !d.verified {
        anyhow::bail!(
            "the run lost, duplicated or corrupted contributions (see {})",
            out_path.display()
        );
    }
    Ok(())
}

fn print_run(d: &RunData, saved: &ResultFile, out_path: &Path) {
    let mut t = Table::new(
        ["mode", "ranks", "ts"]
            .into_iter()
            .chain(COMPLETION_MS)
            .chain(["GB/s", "sent", "stored", "lost", "dup", "bad sum"]),
    );
    let mut row = vec![
        d.config.mode.name().into(),
        d.ranks.to_string(),
        d.time_slices.to_string(),
    ];
    row.extend(completion_cells(&d.completion_ms));
    row.extend([
        f(d.bandwidth_gbs, 2),
        d.sent.to_string(),
        d.compute.stored.to_string(),
        d.lost.to_string(),
        d.compute.duplicates.to_string(),
        d.compute.checksum_failures.to_string(),
    ]);
    t.row(row);
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
