//! `latlab dfs bench`: the MPI_Put micro-benchmark. The options resolve into a
//! [`BenchConfig`]; `latlab child` runs a [`BenchConfig`] from a job file through the same
//! call.

use super::common::{f, mpi_provenance, save_and_read, Launch};
use crate::args::dfs::BenchArgs;
use crate::exit::usage;
use latlab_core::child::ChildJob;
use latlab_core::text::Table;
use latlab_dfs::mpibench::{
    self, BenchConfig, BenchData, BenchError, Transport, TransportConfig, TransportError,
};

pub fn run(a: BenchArgs, argv: Vec<String>) -> anyhow::Result<()> {
    let launch = Launch::from_args(&a.out, "dfs-bench", argv);
    let transport = a.transport.resolve().map_err(usage)?;
    execute(BenchConfig::from(&a), transport, launch)
}

/// `latlab child` with a `dfs.bench` job: the job's configuration, on every rank.
pub fn child(job: &ChildJob) -> anyhow::Result<()> {
    let (cfg, launch): (BenchConfig, _) = Launch::from_job(job)?;
    execute(cfg, TransportConfig::default(), launch)
}

/// Runs (the library checks the configuration on rank 0), saves the result and prints it
/// unless quiet.
fn execute(cfg: BenchConfig, transport: TransportConfig, l: Launch) -> anyhow::Result<()> {
    let provenance = || mpi_provenance(&l.started_utc);
    let r = match mpibench::run(|_| Ok(cfg), transport, l.argv.clone(), provenance) {
        Ok(r) => r,
        Err(e @ (BenchError::Transport(TransportError::Config(_)) | BenchError::Ranks(_))) => {
            return Err(usage(e.to_string()))
        }
        Err(e) => return Err(e.into()),
    };
    let Some(r) = r else { return Ok(()) };
    let (_, d): (_, BenchData) = save_and_read(&r, &l.out)?;
    if !l.quiet {
        println!(
            "{} many-to-many: {} senders -> {} receivers, one message per receiver per round",
            match (d.transport, &d.provider) {
                (Transport::Ofi, Some(p)) => format!("fi_write (libfabric {p})"),
                (Transport::Ofi, None) => "fi_write (libfabric)".into(),
                (Transport::Mpi, _) => "MPI_Put".into(),
            },
            d.senders,
            d.receivers
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
        println!("result: {}", l.out.display());
    }
    Ok(())
}
