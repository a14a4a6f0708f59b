//! `latlab net …` and `latlab experiment killer-us`.

use crate::args::net::{
    CalibrateArgs, ForwardArgs, KillerUsArgs, NetCommand, ProbeArgs, ReflectArgs, TestbedAction,
    TestbedArgs,
};
use crate::args::OutputArgs;
use crate::exit::{net_run_err, testbed_err, usage};
use crate::output::{default_result_path, plot_ccdf, result_path, unique};
use anyhow::Context as _;
use latlab_core::child::ChildJob;
use latlab_core::parse::Percentile;
use latlab_core::results::ResultFile;
use latlab_core::text::{estimate, ns, Table};
use latlab_net::calibrate::CalibrateConfig;
use latlab_net::killer_us::KillerUsConfig;
use latlab_net::nf::Role;
use latlab_net::orchestrate;
use latlab_net::probe;
use latlab_net::run::{self, role_name, NfJob, ProbeJob};
use latlab_net::testbed;
use latlab_sys::host;
use latlab_sys::rt_throttle::Unthrottled;
use std::io::Write as _;
use std::path::{Path, PathBuf};

pub fn run(cmd: NetCommand, argv: Vec<String>) -> anyhow::Result<()> {
    match cmd {
        NetCommand::Reflect(a) => reflect(a, argv),
        NetCommand::Forward(a) => forward(a, argv),
        NetCommand::Probe(a) => probe_cmd(a, argv),
        NetCommand::Testbed(a) => testbed_cmd(a),
        NetCommand::Calibrate(a) => calibrate(a, argv),
        NetCommand::Delay(a) => super::net_delay::run(a, argv),
        NetCommand::Load(a) => super::net_load::run(a, argv),
    }
}

fn reflect(a: ReflectArgs, argv: Vec<String>) -> anyhow::Result<()> {
    let job = a.nf.job(Role::Reflect { bind: a.bind });
    serve(&job, &a.nf.out, a.nf.rt.no_rt_throttle, argv)
}

fn forward(a: ForwardArgs, argv: Vec<String>) -> anyhow::Result<()> {
    if a.engine == crate::args::net::EngineArg::Testpmd {
        return super::net_testpmd::forward(&a, argv);
    }
    let job = a.nf.job(Role::try_from(&a)?);
    serve(&job, &a.nf.out, a.nf.rt.no_rt_throttle, argv)
}

/// `--no-rt-throttle`: real-time throttling off until the guard drops, said on stderr.
fn unthrottle(on: bool, quiet: bool) -> anyhow::Result<Option<Unthrottled>> {
    if !on {
        return Ok(None);
    }
    let g = Unthrottled::engage().map_err(|e| {
        anyhow::anyhow!(
            "--no-rt-throttle: {}: {e} (writing it needs root)",
            latlab_sys::rt_throttle::RT_RUNTIME_PATH
        )
    })?;
    if !quiet {
        eprintln!(
            "real-time throttling off for this run (kernel.sched_rt_runtime_us was {}; restored at exit)",
            g.previous()
        );
    }
    Ok(Some(g))
}

/// The warning a result carries when `--no-rt-throttle` was given.
fn unthrottled_note(g: &Option<Unthrottled>) -> Option<String> {
    g.as_ref().map(|g| {
        format!(
            "real-time throttling was off for this run (--no-rt-throttle: kernel.sched_rt_runtime_us -1, {} before{})",
            g.previous(),
            if g.changed() { " and restored after" } else { ", as set outside latlab" }
        )
    })
}

/// Runs a network function and writes its result: `latlab net reflect|forward`, and the
/// `net.nf` child of an orchestrator.
fn serve(
    job: &NfJob,
    out: &OutputArgs,
    no_rt_throttle: bool,
    argv: Vec<String>,
) -> anyhow::Result<()> {
    let quiet = out.quiet;
    let what = role_name(&job.nf.role);
    let started_utc = host::utc_now_rfc3339();
    // Ctrl-C or SIGTERM ends the run like --duration: the result is written and real-time
    // throttling put back (without the handler both were lost with the process).
    latlab_sys::signal::install_stop_handler().context("installing the Ctrl-C handler")?;
    let rt_guard = unthrottle(no_rt_throttle, quiet)?;
    let mut r = run::nf(
        job,
        argv,
        started_utc.clone(),
        |local| {
            if !quiet {
                let locals: Vec<String> = local.iter().map(|l| l.to_string()).collect();
                println!(
                    "latlab net {what}: listening on {} (io {}, delay {})",
                    locals.join(", "),
                    job.nf.io.name(),
                    job.nf.delay.describe()
                );
            }
            // the line orchestrators wait for
            println!("ready");
            std::io::stdout().flush().ok();
        },
        &mut |line| eprintln!("latlab: {line}"),
    )
    .map_err(net_run_err)?;
    r.warnings.extend(unthrottled_note(&rt_guard));
    let path = result_path(out, &format!("net-{what}"), &started_utc);
    r.save(&path).context("writing the result")?;
    if !quiet {
        let saved = ResultFile::load(&path)?;
        let c = &saved.counters;
        println!(
            "received {}, sent {}, malformed {}, send failed {}",
            c["received"], c["sent"], c["malformed"], c["send_failed"]
        );
        print!("{}", latlab_net::explain::summary(&saved, true));
        for w in &saved.warnings {
            println!("warning: {w}");
        }
        crate::output::print_idle(&saved);
        println!("result: {}", path.display());
    }
    Ok(())
}

/// `latlab child` with job `net.nf`: the NF an orchestrator started.
pub fn nf_child(job: &ChildJob, argv: Vec<String>) -> anyhow::Result<()> {
    let cfg: NfJob = job.config().map_err(|e| usage(e.to_string()))?;
    let out = OutputArgs {
        output: job.output.clone(),
        quiet: job.quiet,
    };
    serve(&cfg, &out, false, argv)
}

/// `latlab child` with job `net.probe`: a probe an orchestrator (or `latlab net probe
/// --testbed`, from outside the generator's namespace) started; writes its result and
/// interval log and prints nothing.
pub fn probe_child(job: &ChildJob, argv: Vec<String>) -> anyhow::Result<()> {
    let cfg: ProbeJob = job.config().map_err(|e| usage(e.to_string()))?;
    let out = job
        .output
        .as_deref()
        .ok_or_else(|| usage(format!("job {}: no output file", job.job)))?;
    // a child is quiet on standard output; its notices go to standard error
    measure_probe(&cfg, argv, out, false)?;
    Ok(())
}

/// The probe measurement and its files; returns the interval log's path.
fn measure_probe(
    job: &ProbeJob,
    argv: Vec<String>,
    out: &Path,
    quiet: bool,
) -> anyhow::Result<PathBuf> {
    let mut notice = |line: &str| {
        if !quiet {
            eprintln!("latlab: {line}");
        }
    };
    let record =
        run::probe(job, argv, host::utc_now_rfc3339(), &mut notice).map_err(net_run_err)?;
    record.save(out).context("writing the result")
}

/// Measures `job` inside the testbed's generator namespace (a `net.probe` child there);
/// the child's own error and exit code are this command's.
fn measure_in_generator_namespace(job: &ProbeJob, out: &Path) -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe().context("finding the latlab executable")?;
    let (mut child, _job) = orchestrate::probe_command(&exe, Some(testbed::GEN_NS), job, out)?;
    let status = child
        .status()
        .with_context(|| format!("running latlab inside namespace {}", testbed::GEN_NS))?;
    if !status.success() {
        std::process::exit(status.code().unwrap_or(1));
    }
    Ok(run::interval_log_path(out))
}

/// `--testbed` needs the testbed up; a usage error naming what is missing otherwise.
fn require_testbed() -> anyhow::Result<()> {
    let st = testbed::status().map_err(testbed_err)?;
    if !st.complete {
        return Err(usage(
            "--testbed: the testbed is not up (missing: ".to_string()
                + &st.missing.join(", ")
                + "); run `sudo latlab net testbed up` first",
        ));
    }
    Ok(())
}

fn probe_cmd(a: ProbeArgs, argv: Vec<String>) -> anyhow::Result<()> {
    if a.testbed {
        require_testbed()?;
    }
    let mut job = ProbeJob::try_from(&a)?;
    let crate::output::Outputs {
        started_utc: _,
        result: out_path,
        plot: plot_path,
    } = crate::output::outputs("net-probe", &a.out, a.plot.as_ref())?;
    let rt_guard = unthrottle(a.rt.no_rt_throttle, a.out.quiet)?;
    crate::interrupt::restore_throttling(&rt_guard)?;
    job.warnings.extend(unthrottled_note(&rt_guard));
    let cfg = &job.probe;
    if !a.out.quiet && (cfg.warmup.get() + cfg.duration.get()) > 3_000_000_000 {
        if let Some(t) = cfg.ci_width {
            eprintln!(
                "probing {} until the {} confidence interval is at most {} wide, for at most {} after {} warm-up…",
                cfg.target, t.percentile, t.width, cfg.duration, cfg.warmup
            );
        } else {
            eprintln!(
                "probing {} for {} after {} warm-up…",
                cfg.target, cfg.duration, cfg.warmup
            );
        }
    }
    let avoid: Vec<u32> = [cfg.tx_cpu, cfg.rx_cpu].into_iter().flatten().collect();
    let bar = crate::output::TimedBar::start(
        &format!("probing {}", cfg.target),
        std::time::Duration::from_nanos(cfg.warmup.get() + cfg.duration.get()),
        a.out.quiet,
        &avoid,
    );
    let hlog_path = if a.testbed {
        job.argv = Some(argv);
        measure_in_generator_namespace(&job, &out_path)?
    } else {
        measure_probe(&job, argv, &out_path, a.out.quiet)?
    };
    drop(bar);
    let saved = ResultFile::load(&out_path)?;
    if !a.out.quiet {
        print_probe(&saved)?;
        crate::output::print_idle(&saved);
        println!("result: {}", out_path.display());
        println!("interval log: {}", hlog_path.display());
    }
    if let Some(p) = plot_path {
        let series: Vec<String> = probe::series::SOURCES
            .iter()
            .map(|s| s.to_string())
            .filter(|s| saved.histograms.iter().any(|h| &h.name == s && h.count > 0))
            .collect();
        let title = "net probe: latency by source (CCDF)";
        plot_ccdf((&out_path, saved), &series, title, &p, a.out.quiet)?;
    }
    Ok(())
}

/// Prints a probe result's table, counters and warnings.
pub fn print_probe(r: &ResultFile) -> anyhow::Result<()> {
    let ladder = [
        Percentile::LADDER[0],
        Percentile::LADDER[2],
        Percentile::LADDER[3],
        Percentile::LADDER[4],
        Percentile::LADDER[6],
    ];
    let mut t = Table::new([
        "series", "min", "p50", "p99", "p99.9", "p99.99", "p99.9999", "max", "samples",
    ]);
    for row in latlab_net::result::probe_rows(r, &ladder) {
        let s = &row.summary;
        let mut cells = vec![row.name.clone(), ns(s.min_ns)];
        cells.extend(s.percentiles.iter().map(estimate));
        cells.push(ns(s.max_ns));
        cells.push(s.count.to_string());
        t.row(cells);
    }
    print!("{}", t.render());
    let c = &r.counters;
    println!(
        "probes: sent {} ({} warm-up), received {}, lost {} (measured {}), duplicates {}, reordered {}, malformed {}",
        c["sent"],
        c["sent_warmup"],
        c["received_unique"],
        c["lost"],
        c["lost_measured"],
        c["duplicates"],
        c["reordered"],
        latlab_net::wire::WireError::ALL
            .iter()
            .map(|e| c.get(e.counter()).copied().unwrap_or(0))
            .sum::<u64>()
    );
    if let Some(d) = latlab_net::result::probe_data(r) {
        if d.mode == "open_loop" {
            println!(
                "rate: configured {:.0} pps, achieved {:.0} pps; scheduled {}, unsent {}{}",
                d.configured_pps,
                d.achieved_pps,
                c.get("scheduled").copied().unwrap_or(d.sent),
                d.unsent,
                if d.unsent > 0 {
                    " (the run stopped at its duration)"
                } else {
                    ""
                }
            );
        }
        if !d.segment_medians_ns.is_empty() {
            let m = |k: &str| d.segment_medians_ns.get(k).copied().unwrap_or(0);
            println!(
                "medians: TX stack {}, wire+NF {} (NF residence {}), RX stack {}; {} probes decomposed, segments add up for each",
                ns(m(probe::series::SEG_TX_STACK)),
                ns(m(probe::series::SEG_WIRE_NF)),
                ns(m(probe::series::SEG_NF)),
                ns(m(probe::series::SEG_RX_STACK)),
                c["decomposed"]
            );
        }
    }
    for v in &r.self_checks {
        println!("self-check {}", v.line());
    }
    print!("{}", latlab_net::explain::summary(r, false));
    for w in &r.warnings {
        println!("warning: {w}");
    }
    Ok(())
}

fn testbed_cmd(a: TestbedArgs) -> anyhow::Result<()> {
    match a.action {
        TestbedAction::Up => {
            let made = testbed::up_with(usize::from(a.generators)).map_err(testbed_err)?;
            let st = testbed::status().map_err(testbed_err)?;
            println!(
                "testbed {}: {}",
                if made { "built" } else { "already up" },
                st.interfaces.join("; ")
            );
        }
        TestbedAction::Down => {
            let removed = testbed::down().map_err(testbed_err)?;
            println!(
                "{}",
                if removed {
                    "testbed removed (namespaces latlab-gen…, latlab-nf and their veths)"
                } else {
                    "no testbed to remove"
                }
            );
        }
        TestbedAction::Status => {
            let st = testbed::status().map_err(testbed_err)?;
            if !latlab_sys::netns::is_root() && !st.namespaces.is_empty() {
                println!(
                    "testbed namespaces present: {} (inspecting their interfaces needs root)",
                    st.namespaces.join(", ")
                );
            } else if st.complete {
                println!("testbed up: {}", st.interfaces.join("; "));
            } else if st.namespaces.is_empty() {
                println!("testbed down");
            } else {
                println!(
                    "testbed incomplete: present {}; missing {}",
                    st.interfaces.join("; "),
                    st.missing.join(", ")
                );
            }
        }
    }
    Ok(())
}

fn out_dir(given: Option<PathBuf>, name: &str) -> PathBuf {
    given.unwrap_or_else(|| {
        let p = default_result_path(name, &host::utc_now_rfc3339());
        unique(p.with_extension(""))
    })
}

fn calibrate(a: CalibrateArgs, argv: Vec<String>) -> anyhow::Result<()> {
    let exe = std::env::current_exe().context("finding the latlab executable")?;
    let dir = out_dir(a.output.clone(), "net-calibrate");
    let cfg = CalibrateConfig::try_from(&a)?;
    if !cfg.loopback && !latlab_sys::netns::is_root() {
        return Err(testbed_err(testbed::TestbedError::NotRoot));
    }
    let rt_guard = unthrottle(a.no_rt_throttle, a.quiet)?;
    crate::interrupt::restore_throttling(&rt_guard)?;
    let mut r = latlab_net::calibrate::run(
        &cfg,
        &exe,
        &dir,
        argv,
        &mut crate::output::Bar::new(a.quiet),
    )
    .context("calibrating")?;
    r.warnings.extend(unthrottled_note(&rt_guard));
    let path = dir.join("calibrate.json");
    r.save(&path).context("writing the result")?;
    let saved = ResultFile::load(&path)?;
    if !a.quiet {
        print!("{}", latlab_net::calibrate::render_table(&saved)?);
        print!("{}", latlab_net::calibrate::render_clean(&saved));
        for w in &saved.warnings {
            println!("warning: {w}");
        }
        crate::output::print_idle(&saved);
        println!("result: {}", path.display());
    }
    Ok(())
}

pub fn killer_us(a: KillerUsArgs, argv: Vec<String>) -> anyhow::Result<()> {
    let exe = std::env::current_exe().context("finding the latlab executable")?;
    let dir = out_dir(a.output.clone(), "killer-us");
    let cfg = KillerUsConfig::try_from(&a)?;
    for n in &cfg.notes {
        eprintln!("latlab: warning: {n}");
    }
    // Ctrl-C stops between runs, so that real-time throttling and the testbed are put
    // back by the experiment's guards instead of being left as a killed process left them.
    latlab_sys::signal::install_stop_handler().context("installing the Ctrl-C handler")?;
    let summary = latlab_net::killer_us::run(
        &cfg,
        &exe,
        &dir,
        argv,
        &latlab_report::FileFigures,
        &mut crate::output::Bar::new(a.quiet),
    )
    .context("killer-us")?;
    let report = super::report::experiment_report(
        &dir,
        "latlab experiment killer-us",
        &[dir.join("killer-us.json")],
    )?;
    if !a.quiet {
        print!("{}", summary.table_text);
        for w in &summary.warnings {
            println!("warning: {w}");
        }
        println!("results and figures in {}", dir.display());
        println!("report: {}", report.display());
        for f in &summary.files {
            println!("  {}", f.display());
        }
    }
    Ok(())
}
