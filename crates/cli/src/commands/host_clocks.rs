//! `latlab host clocks`: the clock-read baseline.

use crate::args::ClocksArgs;
use crate::output::{named_steps, plot_ccdf, progress};
use anyhow::Context as _;
use latlab_core::parse::Percentile;
use latlab_core::results::ResultFile;
use latlab_core::stats::{summarize, DEFAULT_CONFIDENCE};
use latlab_core::text::{estimate, ns, Table};
use latlab_host::clocks::{self, ClocksRun};

pub fn run(a: ClocksArgs, argv: Vec<String>) -> anyhow::Result<()> {
    // Resolve and validate everything before touching the system.
    let mut r = ClocksRun::try_from(&a)?;
    let crate::output::Outputs {
        started_utc,
        result: out_path,
        plot: plot_path,
    } = crate::output::outputs("host-clocks", &a.out, a.plot.as_ref())?;
    r.started_utc = started_utc;
    let expected = r.cfg.sources.len() as f64 * r.cfg.duration.get() as f64 / 1e9;
    let pb = progress(r.cfg.sources.len() as u64, expected, a.out.quiet);
    let mut notice = |n: &str| pb.suspend(|| eprintln!("{n}"));
    let written = clocks::run(&r, argv, &out_path, &mut named_steps(&pb), &mut notice).map_err(
        |e| match e {
            // A refused placement keeps its own exit code (3 not permitted, 2 bad CPU).
            clocks::RunError::Placement { flag, source } => {
                anyhow::Error::new(source).context(flag)
            }
            other => anyhow::Error::new(other),
        },
    )?;
    pb.finish_and_clear();

    // Everything below is rendered from the file just written.
    let saved = ResultFile::load(&written.result)?;
    if !a.out.quiet {
        print_table(&saved)?;
        if let Some(a) = &saved.explain {
            println!(
                "explain: {} slow reads on the reading CPU\n  {}",
                a.windows,
                latlab_explain::render::explained_line(a)
            );
            for line in latlab_explain::render::completeness(a) {
                println!("  {line}");
            }
            println!("  (causes: latlab explain {})", out_path.display());
        }
        for w in &saved.warnings {
            println!("warning: {w}");
        }
        println!("result: {}", out_path.display());
        println!("interval log: {}", written.interval_log.display());
    }
    if let Some(p) = plot_path {
        let title = "host clocks: gaps between consecutive reads (CCDF)";
        plot_ccdf((&out_path, saved), &[], title, &p, a.out.quiet)?;
    }
    Ok(())
}

fn print_table(r: &ResultFile) -> anyhow::Result<()> {
    let data: clocks::ClocksData =
        serde_json::from_value(r.data.clone()).context("reading the result's data")?;
    let ladder = [
        Percentile::LADDER[0],
        Percentile::LADDER[2],
        Percentile::LADDER[4],
    ];
    let mut t = Table::new([
        "source", "min", "p50", "p99", "p99.99", "max", "reads/s", "samples",
    ]);
    for (name, facts) in &data.sources {
        let h = r
            .histogram(name)
            .expect("fill_result stores one histogram per source")?;
        let s = summarize(&h, &ladder, DEFAULT_CONFIDENCE);
        let mut row = vec![name.clone(), ns(s.min_ns)];
        row.extend(s.percentiles.iter().map(estimate));
        row.push(ns(s.max_ns));
        row.push(format!("{:.1}M", facts.reads_per_sec / 1e6));
        row.push(s.count.to_string());
        t.row(row);
    }
    print!("{}", t.render());
    let tb = &r.provenance.timebase;
    if let Some((_, f)) = data.sources.iter().find(|(n, _)| n == "rdtsc") {
        println!(
            "rdtsc floor: {} ns between back-to-back reads at the median (the cost of one read), {} ns at the minimum",
            f.read_cost_ns, f.floor_ns
        );
    }
    let t = &tb.tsc;
    if let (Some(hz), Some(src)) = (t.rate_hz, &t.rate_source) {
        let mut line = format!("timebase: TSC at {:.6} MHz from {src}", hz as f64 / 1e6);
        if let (Some(cal), Some(win), Some(err)) = (
            t.calibrated_hz,
            t.calibration_window_ns,
            t.calibration_error_ppm,
        ) {
            line.push_str(&format!(
                "; calibrated {:.6} MHz over {} (error bound {err:.1} ppm)",
                cal as f64 / 1e6,
                ns(win)
            ));
        }
        if let Some(d) = t.rate_disagreement_ppm {
            line.push_str(&format!(", disagreement {d:+.2} ppm"));
        }
        println!("{line}");
    } else {
        println!(
            "timebase: {} ({})",
            tb.source,
            tb.fallback_reason
                .as_deref()
                .unwrap_or("no reason recorded")
        );
    }
    let skipped: Vec<String> = data
        .skipped
        .iter()
        .map(|(s, why)| format!("{s} ({why})"))
        .collect();
    if !skipped.is_empty() {
        println!("not measured: {}", skipped.join("; "));
    }
    Ok(())
}
