//! `latlab host breakdown`: the in-host latency breakdown.

use crate::args::host_breakdown::BreakdownArgs;
use crate::exit::usage;
use crate::output::{named_steps, progress, result_path};
use anyhow::Context as _;
use latlab_core::results::ResultFile;
use latlab_core::text::{ns, Table};
use latlab_host::breakdown::{self, BreakdownConfig};
use latlab_sys::host;
use std::path::{Path, PathBuf};

pub fn run(a: BreakdownArgs, argv: Vec<String>) -> anyhow::Result<()> {
    let cfg = BreakdownConfig::try_from(&a)?;
    let started_utc = host::utc_now_rfc3339();
    let out_path = result_path(&a.out, "host-breakdown", &started_utc);
    let plot_path = a
        .plot
        .as_ref()
        .map(|p| p.clone().unwrap_or_else(|| stacked_path(&out_path)));
    if let Some(p) = &plot_path {
        latlab_report::ImageFormat::from_path(p).map_err(|e| usage(format!("--plot: {e}")))?;
    }
    let per_step = (cfg.duration.get() + cfg.warmup.get()) as f64 / 1e9;
    let n = cfg.steps.len() as u64;
    let pb = progress(n, per_step * n as f64, a.out.quiet);
    breakdown::run(
        &cfg,
        !a.mlock.no_mlock,
        started_utc,
        argv,
        &out_path,
        &mut named_steps(&pb),
    )
    .context("writing the result")?;
    pb.finish_and_clear();

    let saved = ResultFile::load(&out_path)?;
    if !a.out.quiet {
        print_table(&saved)?;
        for w in &saved.warnings {
            println!("warning: {w}");
        }
        crate::output::print_idle(&saved);
        println!("result: {}", out_path.display());
    }
    if let Some(p) = plot_path {
        draw_decomposition(&saved, &p)?;
        if !a.out.quiet {
            println!("plot: {}", p.display());
        }
    }
    Ok(())
}

fn stacked_path(result: &Path) -> PathBuf {
    let stem = result
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "host-breakdown".into());
    result.with_file_name(format!("{stem}-udp.svg"))
}

/// Draws the stacked UDP decomposition of a saved breakdown result.
pub fn draw_decomposition(r: &ResultFile, path: &Path) -> anyhow::Result<()> {
    let d = breakdown::data(r)?;
    if d.decomposition.is_empty() {
        anyhow::bail!(
            "cannot draw the UDP decomposition: it needs clock_read, null_syscall, udp_loopback \
             with futex_other_core, or udp_loopback_busy with cacheline_pingpong"
        );
    }
    let fig = breakdown::sections::decomposition_figure(&d.decomposition)
        .context("nothing to draw: the decomposition has no positive step")?;
    latlab_report::write_figure(&fig, path).with_context(|| format!("drawing {}", path.display()))
}

fn print_table(r: &ResultFile) -> anyhow::Result<()> {
    let rows = breakdown::table(r)?;
    let mut t = Table::new([
        "step",
        "p50",
        "p99",
        "p99.99",
        "max",
        "samples",
        "class",
        "what one sample is",
    ]);
    for row in &rows {
        t.row(vec![
            row.step.clone(),
            ns(row.p50_ns),
            ns(row.p99_ns),
            row.p9999_ns.map(ns).unwrap_or_else(|| "unsupported".into()),
            ns(row.max_ns),
            row.samples.to_string(),
            row.class.to_string(),
            row.description.clone(),
        ]);
    }
    print!("{}", t.render());
    println!("class reasons:");
    for row in &rows {
        println!(
            "  {:<20} {:<5} {}",
            row.step,
            row.class.to_string(),
            row.reason
        );
    }
    let d = breakdown::data(r)?;
    for x in &d.decomposition {
        let parts: Vec<String> = x
            .segments
            .iter()
            .map(|s| format!("{} {}", s.label, ns(s.ns.round() as u64)))
            .collect();
        println!(
            "{} = {}: {}{}",
            x.step,
            ns(x.total_ns.round() as u64),
            parts.join(" + "),
            if x.inconsistent {
                " (components exceed the total: remainder clamped to 0)"
            } else {
                ""
            }
        );
    }
    for s in &d.skipped {
        println!("not measured: {} ({})", s.name, s.reason);
    }
    Ok(())
}
