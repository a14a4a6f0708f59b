//! `latlab dfs run`: the MPI runtime. The options resolve into a [`RunConfig`] (on rank 0;
//! the library checks it and broadcasts it); `latlab child` runs a [`RunConfig`] from a job
//! file through the same call.

use super::common::{completion_cells, f, mpi_provenance, save_and_read, Launch, COMPLETION_MS};
use crate::args::dfs::RunArgs;
use crate::exit::usage;
use latlab_core::child::ChildJob;
use latlab_core::results::ResultFile;
use latlab_core::text::Table;
use latlab_dfs::mpirun::{self, RunConfig, RunData, Transport, TransportConfig};
use latlab_dfs::Mode;
use std::path::Path;

pub fn run(a: RunArgs, argv: Vec<String>) -> anyhow::Result<()> {
    let launch = Launch::from_args(&a.out, "dfs-run", argv);
    let transport = a.transport.resolve().map_err(usage)?;
    // rank 0 resolves; the library checks and broadcasts
    execute(|_ranks: usize| RunConfig::try_from(&a), transport, launch)
}

/// `latlab child` with a `dfs.run` job: the job's configuration, on every rank.
pub fn child(job: &ChildJob) -> anyhow::Result<()> {
    let (cfg, launch): (RunConfig, _) = Launch::from_job(job)?;
    execute(|_| Ok(cfg), TransportConfig::default(), launch)
}

/// Runs, saves the result (rank 0) and prints it unless quiet.
fn execute(
    resolve: impl FnOnce(usize) -> Result<RunConfig, String>,
    transport: TransportConfig,
    l: Launch,
) -> anyhow::Result<()> {
    let provenance = || mpi_provenance(&l.started_utc);
    let result = match mpirun::run(resolve, transport, l.argv.clone(), provenance) {
        Ok(r) => r,
        Err(
            e @ (mpirun::RunError::Transport(mpirun::TransportError::Config(_))
            | mpirun::RunError::Ranks { .. }),
        ) => return Err(usage(e.to_string())),
        Err(e) => return Err(e.into()),
    };
    let Some(r) = result else { return Ok(()) };
    let (saved, d): (_, RunData) = save_and_read(&r, &l.out)?;
    if !l.quiet {
        print_run(&d, &saved, &l.out);
    }
    if !d.verified {
        anyhow::bail!(
            "the run lost, duplicated or corrupted contributions (see {})",
            l.out.display()
        );
    }
    Ok(())
}

fn print_run(d: &RunData, saved: &ResultFile, out_path: &Path) {
    let mut t = Table::new(
        ["mode", "transport", "ranks", "ts"]
            .into_iter()
            .chain(COMPLETION_MS)
            .chain(["GB/s", "sent", "stored", "lost", "dup", "bad sum"]),
    );
    let mut row = vec![
        d.config.mode.name().into(),
        match (d.transport, &d.provider) {
            (Transport::Ofi, Some(p)) => format!("ofi ({p})"),
            (t, _) => t.name().into(),
        },
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
