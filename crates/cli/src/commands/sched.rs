//! `latlab sched`: Hourglass runs, and `render`, `analyze`, `cache-cost` on their results.

use crate::args::sched::{AnalyzeArgs, CacheCostArgs, RenderArgs, SchedArgs, SchedCommand};
use crate::exit::usage;
use crate::output::{default_result_path, unique};
use crate::table::Table;
use anyhow::Context as _;
use latlab_core::parse::Percentile;
use latlab_core::results::{write_atomically, ResultFile, ThreadPlacement};
use latlab_core::units::{format_ns, Nanos};
use latlab_sched::cmdline::{self, CmdError};
use latlab_sched::result::{self as sresult, SchedRunData};
use latlab_sched::run::{self as srun, RunError, RunParams};
use latlab_sched::spec::{RunSpec, Workload};
use latlab_sched::trace::{latlate_lines, text_trace, Trace};
use latlab_sys::rt::RtError;
use latlab_sys::sched::SchedError;
use latlab_sys::{host, sched, tsc::Clock};
use std::path::{Path, PathBuf};

pub mod experiment;

/// Calibration iterations of the recording loop.
const CALIBRATION_ITERATIONS: usize = 200_000;

pub fn run(a: SchedArgs, argv: Vec<String>) -> anyhow::Result<()> {
    match a.command {
        Some(SchedCommand::Render(r)) => render(r),
        Some(SchedCommand::Analyze(r)) => analyze(r),
        Some(SchedCommand::CacheCost(c)) => cache_cost(c, argv),
        None => hourglass(&a.hourglass, argv),
    }
}

fn cmd_usage(e: CmdError) -> anyhow::Error {
    usage(e.to_string())
}

/// Maps a run failure to the error whose class gives the exit code: refusals (privilege,
/// placement rule, admission control) exit 3, invalid parameters 2, the rest 1.
pub fn run_error(e: RunError) -> anyhow::Error {
    match e {
        RunError::Policy { thread, source } => match source {
            RtError::Refused { what, reason } => anyhow::Error::new(SchedError::NotPermitted {
                what: format!("thread {thread}: {what}"),
                remedy: Box::leak(reason.into_boxed_str()),
            }),
            RtError::Rejected { what, reason } => anyhow::Error::new(SchedError::NotPermitted {
                what: format!("thread {thread}: {what}"),
                remedy: Box::leak(
                    format!("rejected by admission control: {reason}").into_boxed_str(),
                ),
            }),
            RtError::Invalid { what, reason } => {
                usage(format!("thread {thread}: {what}: {reason}"))
            }
            other => anyhow::Error::new(other).context(format!("thread {thread}")),
        },
        RunError::DmaLatency(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            anyhow::Error::new(SchedError::NotPermitted {
                what: "--dma-latency (writing /dev/cpu_dma_latency)".into(),
                remedy: "run as root",
            })
        }
        RunError::Placement { thread, source } => {
            anyhow::Error::new(source).context(format!("thread {thread}"))
        }
        other => anyhow::Error::new(other),
    }
}

/// The TSC clock every sched run needs, or why there is none.
pub fn tsc_clock() -> anyhow::Result<(Clock, latlab_core::results::Timebase, u64)> {
    let (clock, timebase) = Clock::establish(Nanos::from_millis(50));
    let hz = match (clock.is_tsc(), timebase.tsc.rate_hz) {
        (true, Some(hz)) => hz,
        _ => anyhow::bail!(
            "latlab sched needs an invariant TSC with rdtscp ({})",
            timebase
                .fallback_reason
                .clone()
                .unwrap_or_else(|| "no TSC rate".into())
        ),
    };
    Ok((clock, timebase, hz))
}

/// Runs a spec and writes result, trace, text trace, Perfetto file and timeline; returns
/// the result path. Shared with the experiment.
pub fn run_and_save(
    spec: &RunSpec,
    argv: Vec<String>,
    out_path: &Path,
    perfetto: Option<PathBuf>,
    render_path: Option<PathBuf>,
) -> anyhow::Result<(ResultFile, SchedRunData, Trace, Vec<PathBuf>)> {
    let started_utc = host::utc_now_rfc3339();
    let (_clock, timebase, hz) = tsc_clock()?;
    let memory_locked = sched::lock_memory().is_ok();
    let outcome = srun::run(
        spec,
        RunParams {
            tsc_hz: hz,
            calibration_iterations: CALIBRATION_ITERATIONS,
        },
    )
    .map_err(run_error)?;
    let placements = outcome
        .threads
        .iter()
        .map(|t| ThreadPlacement {
            role: format!("thread {} {}", t.spec.id, t.spec.workload.describe()),
            pinned_cpu: t.spec.cpu,
            observed_cpus: t.cpus.clone(),
            policy: t.policy.clone(),
            priority: t.priority,
        })
        .collect();
    let provenance = host::provenance(timebase, placements, memory_locked, started_utc);
    let stem = out_path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "sched".into());
    let trace_name = format!("{stem}.trace.tsv");
    let (mut result, trace) = sresult::build(&outcome, argv, provenance, &trace_name);
    if !memory_locked {
        result
            .warnings
            .push("memory not locked (mlockall refused); page faults may show as gaps".into());
    }
    let dir = out_path.parent().unwrap_or(Path::new("."));
    if !dir.as_os_str().is_empty() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    // The trace first, then the result that points at it.
    let trace_path = dir.join(&trace_name);
    write_atomically(&trace_path, trace.to_tsv().as_bytes())?;
    result.save(out_path)?;
    let (d, trace) = sresult::load(&result, out_path)?;
    let mut written = vec![out_path.to_path_buf(), trace_path];
    // The paper's text output.
    let txt_path = dir.join(format!("{stem}.txt"));
    write_atomically(&txt_path, paper_text(&d, &trace).as_bytes())?;
    written.push(txt_path);
    let pf = perfetto.unwrap_or_else(|| dir.join(format!("{stem}.perfetto.json")));
    let doc = latlab_sched::perfetto::export(&d, &trace);
    write_atomically(&pf, serde_json::to_string(&doc)?.as_bytes())?;
    written.push(pf);
    let rp = render_path.unwrap_or_else(|| dir.join(format!("{stem}.svg")));
    let to = d.spec.duration_ns.min(500_000_000);
    draw(&d, &trace, &rp, 0, to, d.cpus > 1, 1200)?;
    written.push(rp);
    Ok((result, d, trace, written))
}

fn paper_text(d: &SchedRunData, trace: &Trace) -> String {
    let mut s = text_trace(trace, d.spec.raw_cycles.then_some((d.t0_tsc, d.tsc_hz)));
    s.push_str(&sresult::deadline_lines(d, trace));
    for t in &d.threads {
        if matches!(t.spec.workload, Workload::Lat { .. }) {
            s.push_str(&latlate_lines(trace, t.spec.id));
        }
    }
    s
}

fn draw(
    d: &SchedRunData,
    trace: &Trace,
    path: &Path,
    from: u64,
    to: u64,
    cpus: bool,
    width: u32,
) -> anyhow::Result<()> {
    let rows = latlab_sched::figures::timeline_rows(d, trace, cpus);
    let spec = latlab_report::timeline::TimelineSpec {
        title: format!(
            "latlab sched: {} thread(s), {} to {}",
            d.threads.len(),
            format_ns(from as f64),
            format_ns(to as f64)
        ),
        width,
        window: (from as f64, to as f64),
        ..Default::default()
    };
    latlab_report::timeline::render_timeline(&rows, &spec, path)
        .with_context(|| format!("drawing {}", path.display()))
}

fn hourglass(args: &[String], argv: Vec<String>) -> anyhow::Result<()> {
    let (mut spec, out) = cmdline::parse(args).map_err(cmd_usage)?;
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
    let (result, d, trace, written) = run_and_save(
        &spec,
        argv,
        &out_path,
        out.perfetto.clone(),
        out.render.clone(),
    )?;
    if out.quiet {
        return Ok(());
    }
    if out.print_trace {
        print!(
            "{}",
            text_trace(&trace, d.spec.raw_cycles.then_some((d.t0_tsc, d.tsc_hz)))
        );
        for t in &d.threads {
            if matches!(t.spec.workload, Workload::Lat { .. }) {
                print!("{}", latlate_lines(&trace, t.spec.id));
            }
        }
    }
    print!("{}", summary(&result, &d, &trace));
    println!(
        "written: {}",
        written
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    Ok(())
}

/// The human summary of a run: calibration evidence, thread table, deadline and latency
/// lines, warnings.
pub fn summary(result: &ResultFile, d: &SchedRunData, trace: &Trace) -> String {
    let mut s = String::new();
    s.push_str(&format!(
        "latlab sched: {} thread(s) for {} on {} CPU(s), TSC {} MHz\n",
        d.threads.len(),
        format_ns(d.spec.duration_ns as f64),
        d.cpus,
        d.tsc_hz / 1_000_000
    ));
    for c in &d.calibrations {
        s.push_str(&format!(
            "loop iteration ({}, smallest detectable gap): min {} median {} p99 {} p99.9 {} p99.99 {} over {} iterations\n  gap threshold {} ({}), {:.1} ppm of calibration iterations above it\n",
            c.loop_kind,
            format_ns(c.min_ns),
            format_ns(c.p50_ns),
            format_ns(c.p99_ns),
            format_ns(c.p999_ns),
            format_ns(c.p9999_ns),
            c.iterations,
            format_ns(c.gap_ns),
            if c.gap_given { "--gap" } else { "2 x median, as in the paper" },
            c.over_gap_ppm
        ));
    }
    let mut t = Table::new([
        "thread",
        "model",
        "policy",
        "timer",
        "slack",
        "cpus",
        "cpu share",
        "blocks",
        "dropped",
        "migr",
        "deadlines hit/missed",
    ]);
    for r in sresult::thread_rows(d, trace) {
        t.row(vec![
            r.thread.to_string(),
            r.model,
            r.policy,
            r.timer,
            format_ns(r.timer_slack_ns as f64),
            r.cpus,
            format!("{:.1}%", r.cpu_share * 100.0),
            r.blocks.to_string(),
            r.dropped.to_string(),
            r.migrations.to_string(),
            r.deadlines
                .map(|(h, m)| format!("{h}/{m}"))
                .unwrap_or_else(|| "-".into()),
        ]);
    }
    s.push_str(&t.render());
    s.push_str(&sresult::deadline_lines(d, trace));
    let p = |v: u64| Percentile::from_fraction(v, 1000).expect("valid");
    for th in &d.threads {
        let id = th.spec.id;
        let name = if matches!(th.spec.workload, Workload::Lat { .. }) {
            "dispatch"
        } else {
            "lateness"
        };
        if let Some(Ok(h)) = result.histogram(&sresult::hist_name(name, id)) {
            if !h.is_empty() {
                s.push_str(&format!(
                    "thread {id} {}: n {} min {} median {} p99 {} max {}\n",
                    if name == "dispatch" {
                        "wakeup lateness (latlate)"
                    } else {
                        "lateness of missed deadlines"
                    },
                    h.count(),
                    format_ns(h.min() as f64),
                    format_ns(h.value_at(p(500)) as f64),
                    format_ns(h.value_at(p(990)) as f64),
                    format_ns(h.max() as f64)
                ));
            }
        }
        if let Some(x) = th.timerfd_expirations {
            s.push_str(&format!("thread {id}: {x} timerfd expirations read\n"));
        }
    }
    for w in &result.warnings {
        s.push_str(&format!("warning: {w}\n"));
    }
    s
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
    draw(&d, &trace, &a.output, from, to, a.cpus, a.width)?;
    println!("wrote {}", a.output.display());
    Ok(())
}

fn st(s: &latlab_sched::analyze::Stats) -> String {
    if s.n == 0 {
        return "none seen".into();
    }
    format!(
        "n {} min {} median {} p90 {} p99 {} max {}",
        s.n,
        format_ns(s.min_ns as f64),
        format_ns(s.median_ns as f64),
        format_ns(s.p90_ns as f64),
        format_ns(s.p99_ns as f64),
        format_ns(s.max_ns as f64)
    )
}

/// The analysis as text. Pure.
pub fn analysis_text(a: &latlab_sched::analyze::Analysis) -> String {
    let mut s = String::new();
    s.push_str(&format!(
        "context switches between traced threads ({:.1}/s; {} with a gap of {} or more, other work in between, left out):\n  voluntary (after yield/sleep): {}\n  involuntary (preempted):       {}\n",
        a.switches.per_second,
        a.switches.longer,
        format_ns(a.merge_gap_ns as f64),
        st(&a.switches.voluntary),
        st(&a.switches.involuntary)
    ));
    if let Some(i) = &a.interrupts {
        s.push_str(&format!(
            "interruptions of thread {} ({}), gaps < {}: {:.0}/s, {:.3}% of its time\n  cost: {}\n  {:.0}/s of 1 us or more{}\n",
            i.thread,
            i.policy,
            format_ns(a.merge_gap_ns as f64),
            i.per_second,
            i.lost_fraction * 100.0,
            st(&i.cost),
            i.long_per_second,
            i.long_interval_median_ns
                .map(|p| format!(", median interval {}", format_ns(p as f64)))
                .unwrap_or_default()
        ));
        match &i.tick {
            Some(t) => s.push_str(&format!(
                "  kernel tick: {} Hz (period {:.3} ms; {:.0}% of them in one 20 us phase window, {:.1}% by chance)\n",
                t.hz,
                t.period_ns / 1e6,
                t.aligned_fraction * 100.0,
                t.chance_fraction * 100.0
            )),
            None => s.push_str("  kernel tick: no 100/250/300/1000 Hz period lines up with them (tickless CPU, or drowned in other interruptions)\n"),
        }
    }
    for q in &a.quanta {
        s.push_str(&format!(
            "quantum of thread {} ({}): {}\n",
            q.thread,
            q.priority,
            st(&q.runs)
        ));
    }
    for (t, d) in &a.dispatch {
        s.push_str(&format!("dispatch latency of thread {t}: {}\n", st(d)));
    }
    for d in &a.deadlines {
        s.push_str(&format!(
            "thread {} {}: missed {} deadlines, hit {}\n  response {}\n  lateness of misses {}\n  CPU by deadline {}\n  dispatch {}\n  interruptions while running ({:.0} per CPU-second): {}\n",
            d.thread, d.model, d.misses, d.hits, st(&d.response), st(&d.lateness), st(&d.cpu_by_deadline), st(&d.dispatch),
            d.interruptions_per_cpu_second, st(&d.interruptions)
        ));
    }
    if !a.rta.is_empty() {
        let mut t = Table::new([
            "thread",
            "C",
            "T",
            "RTA bound",
            "schedulable",
            "observed worst",
            "verdict",
        ]);
        for r in &a.rta {
            t.row(vec![
                r.thread.to_string(),
                format_ns(r.task.c as f64),
                format_ns(r.task.t as f64),
                r.bound_ns
                    .map(|b| format_ns(b as f64))
                    .unwrap_or_else(|| "unbounded".into()),
                if r.schedulable { "yes" } else { "no" }.into(),
                r.observed_ns
                    .map(|b| format_ns(b as f64))
                    .unwrap_or_else(|| "-".into()),
                if r.exceeds_bound {
                    "OBSERVED > BOUND"
                } else {
                    "ok"
                }
                .into(),
            ]);
        }
        s.push_str("response-time analysis (fixed priority, one CPU):\n");
        s.push_str(&t.render());
    }
    for r in &a.rt_stalls {
        s.push_str(&format!(
            "real-time thread {} lost the CPU for 10 ms or more: {}{}\n",
            r.thread,
            st(&r.stalls),
            r.interval_median_ns
                .map(|i| format!(", median interval {}", format_ns(i as f64)))
                .unwrap_or_default()
        ));
    }
    for n in &a.notes {
        s.push_str(&format!("note: {n}\n"));
    }
    s
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

fn cache_cost(a: CacheCostArgs, argv: Vec<String>) -> anyhow::Result<()> {
    use latlab_sched::cache::{self, CacheCostData};
    if a.sizes.is_empty() || a.sizes.iter().any(|&s| s == 0 || s > 1024 * 1024) {
        return Err(usage(
            "--sizes: give working-set sizes in KiB, 1..1048576, e.g. 4,64,1024",
        ));
    }
    if a.trials == 0 || a.threads < 2 {
        return Err(usage(
            "--trials must be at least 1 and --threads at least 2",
        ));
    }
    if a.duration.get() < 10_000_000 {
        return Err(usage("--duration must be at least 10ms, e.g. 1s"));
    }
    if let Some(p) = &a.plot {
        latlab_report::ImageFormat::from_path(p).map_err(|e| usage(format!("--plot: {e}")))?;
    }
    if !sched::allowed_cpus().contains(&a.cpu) {
        return Err(usage(format!(
            "--cpu {}: not available; allowed CPUs: {}",
            a.cpu,
            sched::format_cpu_list(&sched::allowed_cpus())
        )));
    }
    let started_utc = host::utc_now_rfc3339();
    let (_clock, timebase, hz) = tsc_clock()?;
    let memory_locked = sched::lock_memory().is_ok();
    let total = a.sizes.len() as u64 * u64::from(a.trials);
    let pb = crate::output::progress(
        total,
        2.0 * total as f64 * a.duration.get() as f64 / 1e9,
        a.quiet,
    );
    let trials = cache_sweep(
        &a.sizes,
        a.trials,
        a.duration.get(),
        a.threads,
        a.cpu,
        hz,
        &|| pb.inc(1),
    )?;
    pb.finish_and_clear();
    let rows = cache::summarize(&trials);
    let provenance = host::provenance(timebase, Vec::new(), memory_locked, started_utc.clone());
    let mut r = ResultFile::new(
        cache::KIND,
        argv,
        serde_json::json!({"sizes_kb": a.sizes, "trials": a.trials, "duration_ns": a.duration.get(),
            "threads": a.threads, "cpu": a.cpu}),
        provenance,
    );
    r.duration_ns = 2 * total * a.duration.get();
    r.counters.insert("trials".into(), trials.len() as u64);
    r.counters.insert(
        "trials.without_switches".into(),
        trials.iter().filter(|t| t.cost_ns.is_none()).count() as u64,
    );
    r.data = serde_json::to_value(CacheCostData {
        cpu: a.cpu,
        threads: a.threads,
        trials,
        rows: rows.clone(),
    })?;
    let out = a
        .output
        .clone()
        .unwrap_or_else(|| unique(default_result_path("sched-cache-cost", &started_utc)));
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    r.save(&out)?;
    if let Some(p) = &a.plot {
        latlab_report::xy::render_xy(
            &[cache::figure_series(&rows)],
            &cache::figure_spec(a.threads),
            p,
        )
        .with_context(|| format!("drawing {}", p.display()))?;
    }
    if a.quiet {
        return Ok(());
    }
    let mut t = Table::new(["working set", "trials", "cost per switch", "95% CI"]);
    for row in &rows {
        t.row(vec![
            format!("{} KB", row.size_kb),
            row.n.to_string(),
            format!("{:.2} us", row.mean_ns / 1e3),
            format!("+/- {:.2} us", row.ci95_ns / 1e3),
        ]);
    }
    print!("{}", t.render());
    println!("written: {}", out.display());
    Ok(())
}

/// Runs the cache-cost sweep: per size and trial, one lone CPU_SCAN thread and `threads`
/// of them, all pinned to `cpu`, for `duration_ns` each. `tick` is called after each trial.
pub fn cache_sweep(
    sizes: &[u64],
    trials: u32,
    duration_ns: u64,
    threads: u32,
    cpu: u32,
    hz: u64,
    tick: &dyn Fn(),
) -> anyhow::Result<Vec<latlab_sched::cache::Trial>> {
    use latlab_sched::cache::{self, Trial};
    use latlab_sched::spec::ThreadSpec;
    let params = RunParams {
        tsc_hz: hz,
        calibration_iterations: 20_000,
    };
    let spec_for = |n: u32, kb: u64| RunSpec {
        threads: (0..n)
            .map(|i| {
                let mut t = ThreadSpec::new(i);
                t.workload = Workload::CpuScan { kb };
                t.cpu = Some(cpu);
                t
            })
            .collect(),
        duration_ns,
        records: 100_000,
        raw_cycles: false,
        gap_ns: None,
        timer_slack_ns: None,
        dma_latency_us: None,
    };
    let mut out = Vec::new();
    for &kb in sizes {
        for _ in 0..trials {
            let one = srun::run(&spec_for(1, kb), params).map_err(run_error)?;
            let many = srun::run(&spec_for(threads, kb), params).map_err(run_error)?;
            let w1 = one.threads[0].scan_lines;
            let wn: u64 = many.threads.iter().map(|t| t.scan_lines).sum();
            let mut trace = Trace::default();
            for t in &many.threads {
                trace.blocks.extend(t.blocks.iter().copied());
            }
            let switches = cache::switches_on(&trace, cpu);
            let cpu1_ns = one.threads[0].cpu_received_ns;
            let cpun_ns: u64 = many.threads.iter().map(|t| t.cpu_received_ns).sum();
            out.push(Trial {
                size_kb: kb,
                w1,
                wn,
                switches,
                kernel_involuntary: many.threads.iter().map(|t| t.involuntary_switches).sum(),
                t_ns: duration_ns,
                cpu1_ns,
                cpun_ns,
                paper_cost_ns: cache::cost_per_switch(w1, wn, duration_ns, switches),
                cost_ns: cache::cost_per_switch_cpu(w1, cpu1_ns, wn, cpun_ns, switches),
            });
            tick();
        }
    }
    Ok(out)
}
