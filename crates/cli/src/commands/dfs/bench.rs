//! `latlab dfs bench`: the MPI_Put micro-benchmark. The options resolve into a
//! [`BenchConfig`]; `latlab child` runs a [`BenchConfig`] from a job file through the same
//! call.

use super::common::f;
use crate::args::dfs::BenchArgs;
use crate::exit::usage;
use crate::output::result_path;
use crate::table::Table;
use latlab_core::child::ChildJob;
use latlab_dfs::mpibench::{self, BenchConfig, BenchData, BenchError};
use std::path::Path;

pub fn run(a: BenchArgs, argv: Vec<String>) -> anyhow::Result<()> {
    let started_utc = latlab_sys::host::utc_now_rfc3339();
    let out_path = result_path(&a.out, "dfs-bench", &started_utc);
    let cfg = BenchConfig::from(&a);
    execute(cfg, &out_path, a.out.quiet, argv, &started_utc)
}

/// `latlab child` with a `dfs.bench` job: the job's configuration, on every rank.
pub fn child(job: &ChildJob) -> anyhow::Result<()> {
    let (cfg, out): (BenchConfig, _) = super::common::job_parts(job)?;
    let started_utc = latlab_sys::host::utc_now_rfc3339();
    execute(
        cfg,
        &out,
        job.quiet,
        std::env::args().collect(),
        &started_utc,
    )
}

/// Runs (the library checks the configuration on rank 0), saves the result and prints it
/// unless `quiet`.
fn execute(
    cfg: BenchConfig,
    out_path: &Path,
    quiet: bool,
    argv: Vec<String>,
    started_utc: &str,
) -> anyhow::Result<()> {
    let provenance = || super::common::mpi_provenance(started_utc);
    let r = match mpibench::run(|_| Ok(cfg), argv, provenance) {
        Ok(r) => r,
        Err(e @ (BenchError::Config(_) | BenchError::Ranks(_))) => {
            return Err(usage(e.to_string()))
        }
        Err(e) => return Err(e.into()),
    };
    let Some(r) = r else { return Ok(()) };
    let (_, d): (_, BenchData) = super::common::save_and_read(&r, out_path)?;
    if !quiet {
        println!(
            "MPI_Put many-to-many: {} senders -> {} receivers, one message per receiver per round",
            d.senders, d.receivers
        );
        let mut t = Table::new([
            "size",
            "variant",
            "rounds",
            "round us (mean)",
            "p10 us",
            "median us",
            "p90 us",
            "GB/s per sender",
            "min",
            "max",
            "aggregate GB/s",
        ]);
        for row in &d.rows {
            t.row(vec![
                row.size.to_string(),
                if row.mix { "mix" } else { "plain" }.into(),
                row.rounds.to_string(),
                f(row.round_us_mean, 1),
                f(row.round_us.p10, 1),
                f(row.round_us.median, 1),
                f(row.round_us.p90, 1),
                f(row.bw_per_sender_gbs.0, 3),
                f(row.bw_per_sender_gbs.1, 3),
                f(row.bw_per_sender_gbs.2, 3),
                f(row.aggregate_gbs, 3),
            ]);
        }
        print!("{}", t.render());
        println!("result: {}", out_path.display());
    }
    Ok(())
}
