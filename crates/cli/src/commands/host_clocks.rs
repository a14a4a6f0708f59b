//! `latlab host clocks`: the clock-read baseline.

use crate::args::{ClocksArgs, TimebaseArg};
use crate::exit::usage;
use crate::output::{progress, sibling};
use crate::table::{estimate, ns, Table};
use anyhow::Context as _;
use latlab_core::hist::HistConfig;
use latlab_core::parse::Percentile;
use latlab_core::results::{hlog, ResultFile, ThreadPlacement};
use latlab_core::stats::{summarize, DEFAULT_CONFIDENCE};
use latlab_host::clocks::{self, ClockSource, ClocksConfig};
use latlab_sys::{host, sched, tsc::Clock};

pub fn run(a: ClocksArgs, argv: Vec<String>) -> anyhow::Result<()> {
    // Resolve and validate everything before touching the system.
    let all: Vec<&str> = ClockSource::ALL.iter().map(|s| s.name()).collect();
    let sources = super::pick_names(
        &a.sources,
        "--sources",
        "clock source",
        ClockSource::from_name,
        &all,
    )?;
    if a.duration.get() == 0 {
        return Err(usage("--duration must be positive, e.g. 2s"));
    }
    if a.interval.get() == 0 {
        return Err(usage("--interval must be positive, e.g. 1s"));
    }
    let cfg = ClocksConfig {
        sources: sources.clone(),
        duration: a.duration,
        interval: a.interval,
        hist: HistConfig {
            sigfig: a.sigfig,
            ..HistConfig::default()
        },
        ..ClocksConfig::default()
    };
    let crate::output::Outputs {
        started_utc,
        result: out_path,
        plot: plot_path,
    } = crate::output::outputs("host-clocks", &a.out, a.plot.as_ref())?;

    // Set up the measuring thread (this one): placement first, so that a refused --cpu or
    // --fifo fails fast and the calibration runs where the measurement will.
    if let Some(cpu) = a.cpu {
        sched::pin_current_thread(cpu).context("--cpu")?;
    }
    if let Some(prio) = a.fifo {
        sched::set_fifo(prio).context("--fifo")?;
    }
    let (clock, timebase) = match a.timebase {
        TimebaseArg::Monotonic => Clock::establish_monotonic("--timebase monotonic was given"),
        TimebaseArg::Auto => Clock::establish(a.calibration),
    };
    let mut warnings = Vec::new();
    let memory_locked = !a.no_mlock && sched::lock_memory_or_warn(&mut warnings);

    // Measure.
    let mut skipped = Vec::new();
    let runnable: Vec<ClockSource> = sources
        .iter()
        .copied()
        .filter(|s| match s.unavailable(&timebase) {
            Some(why) => {
                skipped.push((*s, why));
                false
            }
            None => true,
        })
        .collect();
    let expected = runnable.len() as f64 * cfg.duration.get() as f64 / 1e9;
    let pb = progress(runnable.len() as u64, expected, a.out.quiet);
    let wall_start = std::time::SystemTime::now();
    let run_start = clock.now();
    let mut outcomes = Vec::new();
    for s in &runnable {
        pb.set_message(s.name());
        outcomes.push(
            clocks::measure(*s, &cfg, &clock, run_start)
                .with_context(|| format!("measuring {s}"))?,
        );
        pb.inc(1);
    }
    let run_end = clock.now();
    pb.finish_and_clear();

    // Provenance and the result file, written before anything is printed.
    let (policy, priority) = sched::current_policy();
    let mut observed: Vec<u32> = outcomes
        .iter()
        .flat_map(|o| o.cpus.iter().copied())
        .collect();
    observed.sort_unstable();
    observed.dedup();
    let thread = ThreadPlacement {
        role: "clock reader".into(),
        pinned_cpu: a.cpu,
        observed_cpus: observed,
        policy,
        priority,
    };
    let provenance = host::provenance(timebase.clone(), vec![thread], memory_locked, started_utc);
    let config = serde_json::json!({
        "sources": sources.iter().map(|s| s.name()).collect::<Vec<_>>(),
        "duration_ns": cfg.duration.get(),
        "chunk_reads": cfg.chunk_reads,
        "interval_ns": cfg.effective_interval().get(),
        "histogram": cfg.hist,
        "cpu": a.cpu,
        "fifo_priority": a.fifo,
        "mlock": !a.no_mlock,
        "timebase": format!("{:?}", a.timebase).to_lowercase(),
        "calibration_window_ns": (a.timebase == TimebaseArg::Auto).then_some(a.calibration.get()),
    });
    let mut result = ResultFile::new(clocks::RESULT_KIND, argv, config, provenance);
    result.duration_ns = clock.delta_nanos(run_start, run_end).get();
    clocks::fill_result(&mut result, &outcomes, &skipped);
    result.warnings.extend(warnings);
    trust_warnings(&mut result, a.cpu.is_some());
    let hlog_path = sibling(&out_path, "hlog");
    result.interval_log = hlog_path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned());
    result.save(&out_path).context("writing the result")?;
    let log = hlog::write(
        wall_start,
        "latlab host clocks: read-to-read gaps in ns",
        &clocks::intervals(&outcomes),
    )?;
    latlab_core::results::write_atomically(&hlog_path, &log).context("writing the interval log")?;

    // Everything below is rendered from the file just written.
    let saved = ResultFile::load(&out_path)?;
    if !a.out.quiet {
        print_table(&saved)?;
        for w in &saved.warnings {
            println!("warning: {w}");
        }
        println!("result: {}", out_path.display());
        println!("interval log: {}", hlog_path.display());
    }
    if let Some(p) = plot_path {
        latlab_report::figures::plot_files(
            &[(out_path.clone(), saved)],
            &[],
            latlab_report::PlotKind::Ccdf,
            "host clocks: gaps between consecutive reads (CCDF)",
            &p,
        )
        .with_context(|| format!("drawing {}", p.display()))?;
        if !a.out.quiet {
            println!("plot: {}", p.display());
        }
    }
    Ok(())
}

/// Warnings about the conditions of the run that a reader must weigh.
fn trust_warnings(result: &mut ResultFile, pinned: bool) {
    let p = &result.provenance;
    let mut w = Vec::new();
    if let Some(vm) = &p.host.virtualization {
        w.push(format!(
            "running under a hypervisor ({vm}): VM exits and steal time appear as gaps"
        ));
    }
    if !pinned {
        w.push(
            "the reader thread was not pinned (--cpu): migrations may appear as gaps".to_string(),
        );
    }
    if let Some(reason) = &p.timebase.fallback_reason {
        w.push(format!(
            "timebase is CLOCK_MONOTONIC, not the TSC: {reason}"
        ));
    }
    if let Some(d) = p.timebase.tsc.rate_disagreement_ppm {
        if d.abs() > 100.0 {
            w.push(format!(
                "the kernel's TSC rate and the calibration disagree by {d:.0} ppm"
            ));
        }
    }
    result.warnings.extend(w);
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
