//! `latlab experiment dfs`: resolves the options into an [`ExperimentConfig`], runs the
//! experiment ([`latlab_dfs::experiment::run`]), prints its summary and writes the HTML
//! report of the result files it wrote.

use crate::args::dfs::DfsExperimentArgs;
use crate::exit::usage;
use anyhow::Context as _;
use latlab_core::text::Table;
use latlab_dfs::experiment::{self, Context, ExperimentConfig, ExperimentError};

pub fn run(a: DfsExperimentArgs, argv: Vec<String>) -> anyhow::Result<()> {
    let started = latlab_sys::host::utc_now_rfc3339();
    let t0 = std::time::Instant::now();
    let provenance = || super::sim::provenance(&started);
    // The runs and simulations are steps of the bar; anything else the experiment says
    // (a skipped MPI part, a failed benchmark) is a notice, printed above it.
    let cfg = ExperimentConfig::from(&a);
    let sweep = if cfg.sweep_nodes > 0 {
        2 * latlab_dfs::experiment::SWEEP_VARIANTS as u64
    } else {
        0
    };
    let steps = if cfg.mpi { 3 } else { 0 } + 3 * cfg.nodes.len() as u64 + 2 + sweep;
    let pb = crate::output::progress(steps, f64::INFINITY, a.quiet);
    pb.set_prefix("dfs experiment");
    let progress = |s: &str| {
        if s.starts_with("simulating") || s.starts_with("MPI:") {
            pb.set_message(s.to_owned());
            pb.inc(1);
        } else if !a.quiet {
            pb.suspend(|| eprintln!("{s}"));
        }
    };
    let cx = Context {
        argv,
        provenance: &provenance,
        progress: &progress,
        elapsed: &|| t0.elapsed().as_secs_f64(),
        figures: &latlab_report::FileFigures,
    };
    let dir = &a.out_dir;
    let out = experiment::run(&cfg, dir, &cx).map_err(|e| match e {
        ExperimentError::Config(_) | ExperimentError::Sim(_) => usage(e.to_string()),
        e => e.into(),
    });
    pb.finish_and_clear();
    let out = out?;
    let mut t = Table::new(out.summary.header.iter().copied());
    for r in &out.summary.rows {
        t.row(r.clone());
    }
    let md = out.summary.markdown(&t.render());
    let summary = dir.join("summary.md");
    latlab_core::results::write_atomically(&summary, md.as_bytes())
        .context("writing summary.md")?;
    print!("{md}");
    println!("summary: {}", summary.display());
    // The HTML report, from the result files just written (each run's kind has sections).
    let report =
        crate::commands::report::experiment_report(dir, "latlab experiment dfs", &out.results)?;
    println!("report: {}", report.display());
    Ok(())
}
