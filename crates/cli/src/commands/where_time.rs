//! `latlab experiment where-time`: application performance against added latency.

use crate::args::experiment::WhereTimeArgs;
use crate::exit::usage;
use crate::output::progress;
use crate::table::{ns, Table};
use anyhow::Context as _;
use latlab_core::results::{ResultFile, ThreadPlacement};
use latlab_core::units::Nanos;
use latlab_core::units::{format_signed_ns, SignStyle};
use latlab_host::where_time::{self, App, WhereTimeConfig};
use latlab_sys::{host, sched, tsc::Clock};
use std::path::{Path, PathBuf};

pub fn run_where_time(a: WhereTimeArgs, argv: Vec<String>) -> anyhow::Result<()> {
    let mut cfg = if a.quick {
        WhereTimeConfig::quick()
    } else {
        WhereTimeConfig::default()
    };
    if !a.delays.is_empty() {
        cfg.delays_ns = a.delays.iter().map(|d| d.get()).collect();
        cfg.delays_ns.sort_unstable();
        cfg.delays_ns.dedup();
    }
    if !cfg.delays_ns.contains(&0) {
        return Err(usage(
            "--delays must include 0 (the baseline), e.g. 0,20us,100us",
        ));
    }
    if !a.quick {
        cfg.repeats = a.repeats;
        cfg.run_time = a.run_time;
    }
    if cfg.run_time.get() < 1_000_000_000 {
        return Err(usage("--run-time must be at least 1s"));
    }
    cfg.apps = a
        .apps
        .iter()
        .map(|n| {
            App::from_name(n.trim()).ok_or_else(|| {
                usage(format!(
                    "--apps: unknown application '{n}'; accepted: memcached, nginx"
                ))
            })
        })
        .collect::<anyhow::Result<_>>()?;
    cfg.connections = a.connections;
    cfg.fifo = a.fifo;
    let allowed = sched::allowed_cpus();
    if let Some(c) = a.cpu {
        if !allowed.contains(&c) {
            return Err(usage(format!(
                "--cpu: CPU {c} is not available to this process (allowed: {})",
                sched::format_cpu_list(&allowed)
            )));
        }
    }
    cfg.engine_cpu = a.cpu.or(allowed.last().copied());
    cfg.endpoint_cpu = allowed
        .iter()
        .copied()
        .find(|c| Some(*c) != cfg.engine_cpu)
        .or(cfg.engine_cpu);
    if !latlab_sys::netns::is_root() {
        return Err(sched::SchedError::NotPermitted {
            what: "latlab experiment where-time (network namespaces, AF_PACKET)".into(),
            remedy: "run as root",
        }
        .into());
    }
    where_time::check_programs(&cfg.apps)?;
    let crate::output::Outputs {
        started_utc,
        result: out_path,
        plot: plot_path,
    } = crate::output::outputs("where-time", &a.out, a.plot.as_ref())?;
    let runs = cfg.delays_ns.len() as u64 * u64::from(cfg.repeats) * cfg.apps.len() as u64 + 1;
    if !a.out.quiet {
        eprintln!(
            "where-time: {} runs, about {:.0} s",
            runs - 1,
            cfg.expected_secs()
        );
    }
    let pb = progress(runs, cfg.expected_secs(), a.out.quiet);
    let (clock, timebase) = Clock::establish(Nanos(100_000_000));
    let t0 = clock.now();
    let outcome = where_time::run(&cfg, &clock, |label| {
        pb.set_message(label.to_string());
        pb.inc(1);
    })?;
    pb.finish_and_clear();
    let provenance = host::provenance(
        timebase,
        vec![
            ThreadPlacement::with_fifo("injector", cfg.engine_cpu, cfg.fifo),
            ThreadPlacement::with_fifo(
                "servers and benchmark clients (taskset)",
                cfg.endpoint_cpu,
                None,
            ),
        ],
        false,
        started_utc,
    );
    let config = serde_json::to_value(&cfg).context("encoding the configuration")?;
    let mut result = ResultFile::new(where_time::RESULT_KIND, argv, config, provenance);
    result.duration_ns = clock.delta_nanos(t0, clock.now()).get();
    where_time::fill_result(&mut result, &outcome)?;
    if let Some(vm) = &result.provenance.host.virtualization {
        result.warnings.push(format!(
            "running under a hypervisor ({vm}); servers, clients and the injector share {} CPUs",
            allowed.len()
        ));
    }
    result.save(&out_path).context("writing the result")?;
    let saved = ResultFile::load(&out_path)?;
    if !a.out.quiet {
        print_tables(&saved)?;
        println!("result: {}", out_path.display());
    }
    if let Some(p) = plot_path {
        draw(&saved, &p)?;
        if !a.out.quiet {
            println!("plot: {}", p.display());
        }
    }
    let report_dir = report_dir(&out_path);
    std::fs::create_dir_all(&report_dir)
        .with_context(|| format!("creating {}", report_dir.display()))?;
    let report = super::report::experiment_report(
        &report_dir,
        "latlab experiment where-time",
        std::slice::from_ref(&out_path),
    )?;
    if !a.out.quiet {
        println!("report: {}", report.display());
    }
    Ok(())
}

/// Where the HTML report of the result at `result` goes: a folder beside it named after
/// it (`wt.json` -> `wt-report/report.html`), so reports of different runs never overwrite
/// each other.
fn report_dir(result: &Path) -> PathBuf {
    let stem = result
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "where-time".into());
    result.with_file_name(format!("{stem}-report"))
}

/// Draws normalised performance against added delay from a saved result (the same series
/// as the report's figure).
pub fn draw(r: &ResultFile, path: &Path) -> anyhow::Result<()> {
    let d = where_time::data(r).map_err(anyhow::Error::msg)?;
    let fig = where_time::sections::figure(&d).context(
        "nothing to draw: no application has a normalised point (a zero-delay run is needed)",
    )?;
    latlab_report::write_figure(&fig, path).with_context(|| format!("drawing {}", path.display()))
}

fn print_tables(r: &ResultFile) -> anyhow::Result<()> {
    let d = where_time::data(r).map_err(anyhow::Error::msg)?;
    let s = &d.injector;
    println!(
        "injector: base latency {} per round trip (vs a direct veth link), its own user-space part {}; 20 us added -> median shift {}, p99 shift {}",
        format_signed_ns(s.base_latency_ns as f64, SignStyle::AsciiMinus),
        ns(s.engine_excess_p50_ns),
        format_signed_ns(s.median_shift_ns as f64, SignStyle::AsciiMinus),
        format_signed_ns(s.p99_shift_ns as f64, SignStyle::AsciiMinus)
    );
    for a in &d.apps {
        let Some(n) = where_time::normalise(&a.runs) else {
            println!("{}: no zero-delay baseline", a.app);
            continue;
        };
        println!("{} — {}", a.app, a.metric);
        let mut t = Table::new([
            "added delay",
            "runs",
            "mean",
            "normalised",
            "sd",
            "min",
            "max",
        ]);
        for p in &n {
            let raw: Vec<f64> = a
                .runs
                .iter()
                .filter(|x| x.delay_ns == p.delay_ns)
                .map(|x| x.value)
                .collect();
            let mean = raw.iter().sum::<f64>() / raw.len() as f64;
            t.row(vec![
                if p.delay_ns == 0 {
                    "0".into()
                } else {
                    ns(p.delay_ns)
                },
                p.n.to_string(),
                format!("{mean:.0}"),
                format!("{:.3}", p.mean),
                format!("{:.3}", p.sd),
                format!("{:.3}", p.min),
                format!("{:.3}", p.max),
            ]);
        }
        print!("{}", t.render());
    }
    for (app, us, drop) in where_time::PAPER_DROPS {
        let ours = d
            .apps
            .iter()
            .find(|a| app.contains(&a.app))
            .and_then(|a| where_time::normalise(&a.runs))
            .and_then(|n| n.into_iter().find(|p| p.delay_ns == us * 1_000));
        match ours {
            Some(p) => println!(
                "paper: {app} -{:.0}% at {us} us; here: {:+.0}%",
                drop * 100.0,
                (p.mean - 1.0) * 100.0
            ),
            None => println!(
                "paper: {app} -{:.0}% at {us} us; here: not measured",
                drop * 100.0
            ),
        }
    }
    for w in &r.warnings {
        println!("warning: {w}");
    }
    Ok(())
}
