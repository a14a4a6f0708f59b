//! `latlab dfs bench`: the MPI_Put micro-benchmark.

use crate::args::dfs::BenchArgs;
use crate::exit::usage;

#[cfg(feature = "mpi")]
pub fn run(a: BenchArgs, argv: Vec<String>) -> anyhow::Result<()> {
    use super::f;
    use crate::output::{default_result_path, unique};
    use crate::table::Table;
    use anyhow::Context as _;
    use latlab_core::results::ResultFile;
    use latlab_dfs::mpibench::{self, BenchConfig, BenchData, BenchError};
    let started_utc = latlab_sys::host::utc_now_rfc3339();
    let out_path = a
        .out
        .output
        .clone()
        .unwrap_or_else(|| unique(default_result_path("dfs-bench", &started_utc)));
    let resolve = |_ranks: usize| -> Result<BenchConfig, String> {
        if a.sizes.is_empty() {
            return Err("--sizes: give at least one size, e.g. 4K,64K".into());
        }
        Ok(BenchConfig {
            sizes: a.sizes.clone(),
            bytes_per_size: a.bytes,
            min_rounds: a.min_rounds.max(1),
            mix: !a.no_mix,
        })
    };
    let provenance = || super::mpi_provenance(&started_utc);
    let r = match mpibench::run(resolve, argv, provenance) {
        Ok(r) => r,
        Err(e @ (BenchError::Config(_) | BenchError::Ranks(_))) => {
            return Err(usage(e.to_string()))
        }
        Err(e) => return Err(e.into()),
    };
    let Some(r) = r else { return Ok(()) };
    r.save(&out_path).context("writing the result")?;
    let saved = ResultFile::load(&out_path)?;
    let d: BenchData = serde_json::from_value(saved.data.clone()).context("reading the result")?;
    if !a.out.quiet {
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

#[cfg(not(feature = "mpi"))]
pub fn run(_a: BenchArgs, _argv: Vec<String>) -> anyhow::Result<()> {
    Err(usage(
        "latlab was built without MPI support (feature 'mpi'); install libopenmpi-dev and libclang-dev and rebuild",
    ))
}
