//! `latlab sched`: Hourglass runs, and `render`, `analyze`, `cache-cost` on their results.
//! Argument resolution and printing; the runs, files and text are [`latlab_sched`]'s.

use crate::args::sched::{AnalyzeArgs, CacheCostArgs, RenderArgs, SchedArgs, SchedCommand};
use crate::exit::{sched_error, usage};
use crate::output::{default_result_path, unique};
use latlab_core::results::{write_atomically, ResultFile};
use latlab_core::units::format_ns;
use latlab_report::FileFigures as Figures;
use latlab_sched::cache::CacheCostConfig;
use latlab_sched::figures::Draw as _;
use latlab_sched::result::{self as sresult, SchedRunData};
use latlab_sched::text::{analysis_text, cache_cost_table, printed_trace, run_summary};
use latlab_sched::trace::Trace;
use latlab_sched::{session, Error};
use latlab_sys::host;
use std::path::Path;

pub mod experiment;

pub fn run(a: SchedArgs, argv: Vec<String>) -> anyhow::Result<()> {
    match a.command {
        Some(SchedCommand::Render(r)) => render(r),
        Some(SchedCommand::Analyze(r)) => analyze(r),
        Some(SchedCommand::CacheCost(c)) => cache_cost(c, argv),
        None => hourglass(&a.hourglass, argv),
    }
}

fn hourglass(args: &[String], argv: Vec<String>) -> anyhow::Result<()> {
    let (mut spec, out) = latlab_sched::cmdline::parse(args).map_err(|e| usage(e.to_string()))?;
    if let Some(sc) = &out.scenario {
        let text = std::fs::read_to_string(sc)
            .map_err(|e| usage(format!("--scenario: {}: {e}", sc.display())))?;
        spec = latlab_sched::scenario::parse(&text, &spec)
            .map_err(|e| usage(format!("{}: {e}", sc.display())))?;
    }
    for p in [&out.render].into_iter().flatten() {
        latlab_report::ImageFormat::from_path(p).map_err(|e| usage(format!("--render: {e}")))?;
    }
    let started = host::utc_now_rfc3339();
    let out_path = out
        .output
        .clone()
        .unwrap_or_else(|| unique(default_result_path("sched", &started)));
    let saved = session::run_and_save(
        &spec,
        argv,
        &out_path,
        out.perfetto.clone(),
        out.render.clone(),
        &Figures,
        out.explain.as_ref(),
        &mut |n| eprintln!("{n}"),
    )
    .map_err(sched_error)?;
    let (d, trace) = (&saved.data, &saved.trace);
    if out.quiet {
        return Ok(());
    }
    if out.print_trace {
        print!("{}", printed_trace(d, trace));
    }
    print!("{}", run_summary(&saved.result, d, trace));
    let written: Vec<String> = saved
        .written
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    println!("written: {}", written.join(", "));
    Ok(())
}

fn load_run(path: &Path) -> anyhow::Result<(ResultFile, SchedRunData, Trace)> {
    let r = ResultFile::load(path)?;
    let (d, t) = sresult::load(&r, path).map_err(|e| usage(e.to_string()))?;
    Ok((r, d, t))
}

fn render(a: RenderArgs) -> anyhow::Result<()> {
    latlab_report::ImageFormat::from_path(&a.output).map_err(|e| usage(format!("-o: {e}")))?;
    let (_r, d, trace) = load_run(&a.result)?;
    let from = a.from.get();
    let to =
        a.to.map(|t| t.get())
            .unwrap_or_else(|| (from + 500_000_000).min(d.spec.duration_ns));
    if to <= from {
        return Err(usage(format!(
            "--to must be after --from ({} <= {})",
            format_ns(to as f64),
            format_ns(from as f64)
        )));
    }
    Figures
        .timeline(&d, &trace, &a.output, (from, to), a.cpus, a.width)
        .map_err(|e| sched_error(Error::Draw(e)))?;
    println!("wrote {}", a.output.display());
    Ok(())
}

fn analyze(a: AnalyzeArgs) -> anyhow::Result<()> {
    let (_r, d, trace) = load_run(&a.result)?;
    let an = latlab_sched::analyze::analyze(&d, &trace, a.merge_gap.get(), !a.no_overheads);
    if let Some(j) = &a.json {
        write_atomically(j, serde_json::to_string_pretty(&an)?.as_bytes())?;
    }
    print!("{}", analysis_text(&an));
    Ok(())
}

/// The sweep that `latlab sched cache-cost` options ask for.
fn cache_cost_config(a: &CacheCostArgs) -> CacheCostConfig {
    CacheCostConfig {
        sizes_kb: a.sizes.clone(),
        trials: a.trials,
        duration_ns: a.duration.get(),
        threads: a.threads,
        cpu: a.cpu,
    }
}

fn cache_cost(a: CacheCostArgs, argv: Vec<String>) -> anyhow::Result<()> {
    let cfg = cache_cost_config(&a);
    if let Some(p) = &a.plot {
        latlab_report::ImageFormat::from_path(p).map_err(|e| usage(format!("--plot: {e}")))?;
    }
    cfg.validate().map_err(sched_error)?;
    let started_utc = host::utc_now_rfc3339();
    let total = cfg.steps();
    let pb = crate::output::progress(
        total,
        2.0 * total as f64 * cfg.duration_ns as f64 / 1e9,
        a.quiet,
    );
    let (r, rows) = latlab_sched::cache::measure(&cfg, argv, &|| pb.inc(1)).map_err(sched_error)?;
    pb.finish_and_clear();
    let out = a
        .output
        .clone()
        .unwrap_or_else(|| unique(default_result_path("sched-cache-cost", &started_utc)));
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    r.save(&out)?;
    if let Some(p) = &a.plot {
        Figures
            .cache_cost(&rows, a.threads, p)
            .map_err(|e| sched_error(Error::Draw(e)))?;
    }
    if a.quiet {
        return Ok(());
    }
    print!("{}", cache_cost_table(&rows));
    println!("written: {}", out.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::{Cli, Command};
    use clap::Parser;

    #[test]
    fn the_hourglass_cache_cost_step_is_what_its_command_line_asks_for() {
        for (quick, d) in [(true, 300_000_000), (false, 2_500_000_000)] {
            let step = latlab_sched::experiment::cache_cost_step(quick, d, 1);
            let cli = Cli::try_parse_from(step.argv()).unwrap();
            let Command::Sched(SchedArgs {
                command: Some(SchedCommand::CacheCost(a)),
                ..
            }) = cli.command
            else {
                panic!("{:?} is not a cache-cost command line", step.argv())
            };
            assert_eq!(cache_cost_config(&a), step);
        }
    }
}
