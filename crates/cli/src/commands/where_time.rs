//! `latlab experiment where-time`: application performance against added latency.

use crate::args::experiment::WhereTimeArgs;
use crate::output::{named_steps, progress};
use anyhow::Context as _;
use latlab_core::results::ResultFile;
use latlab_core::text::{ns, Table};
use latlab_core::units::{format_signed_ns, SignStyle};
use latlab_host::where_time::{self, WhereTimeConfig};
use latlab_sys::sched;
use std::path::{Path, PathBuf};

pub fn run_where_time(a: WhereTimeArgs, argv: Vec<String>) -> anyhow::Result<()> {
    let cfg = WhereTimeConfig::try_from(&a)?;
    if !latlab_sys::netns::is_root() {
        return Err(sched::SchedError::NotPermitted {
            what: "latlab experiment where-time (network namespaces, AF_PACKET)".into(),
            remedy: "run as root",
        }
        .into());
    }
    let crate::output::Outputs {
        started_utc,
        result: out_path,
        plot: plot_path,
    } = crate::output::outputs("where-time", &a.out, a.plot.as_ref())?;
    let runs = cfg.progress_steps();
    if !a.out.quiet {
        eprintln!(
            "where-time: {} runs, about {:.0} s",
            runs - 2,
            cfg.expected_secs()
        );
    }
    latlab_sys::signal::install_stop_handler().context("installing the Ctrl-C handler")?;
    let pb = progress(runs, cfg.expected_secs(), a.out.quiet);
    where_time::run_to_file(&cfg, started_utc, argv, &out_path, &mut named_steps(&pb))
        .context("where-time")?;
    pb.finish_and_clear();
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
    if !d.placement.is_empty() {
        println!("placement: {}", d.placement);
    }
    println!(
        "injector: base latency {} per round trip (vs a direct veth link), its own user-space part {}; 20 us added -> median shift {}, p99 shift {}{}",
        format_signed_ns(s.base_latency_ns as f64, SignStyle::AsciiMinus),
        ns(s.engine_excess_p50_ns),
        format_signed_ns(s.median_shift_ns as f64, SignStyle::AsciiMinus),
        format_signed_ns(s.p99_shift_ns as f64, SignStyle::AsciiMinus),
        match d.check_idle_held_us {
            Some(us) => format!(" (idle held at {us} us for the check)"),
            None => String::new(),
        }
    );
    for v in where_time::injector::shift_verdicts(s) {
        if !v.passed() {
            println!("injector check FAILED: {}", v.detail);
        }
    }
    print!("{}", latlab_net::explain::summary(r, true));
    for a in &d.apps {
        let Some(n) = where_time::normalise(&a.runs) else {
            println!("{}: no zero-delay baseline", a.app);
            continue;
        };
        println!("{} — {}", a.app, a.metric);
        let mut t = Table::new([
            "added delay (measured shift)",
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
                where_time::injector::delay_label(p.delay_ns, s),
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
    for a in &d.apps {
        let points = where_time::peer_points(a);
        if points.is_empty() {
            continue;
        }
        println!(
            "{} — latlab's open loop at the closed-loop client's own rate",
            a.app
        );
        let mut t = Table::new([
            "added delay",
            "repeat",
            "rate /s",
            "peer share",
            "peer",
            "latlab",
            "difference",
            "latlab from send",
            "difference",
        ]);
        for p in &points {
            t.row(vec![
                delay_label(p.delay_ns),
                p.repeat.to_string(),
                format!("{:.0}", p.offered_rps),
                p.peer_share.map_or_else(
                    || "-".into(),
                    |s| format!("{s:.2}{}", if p.unsaturated() { "" } else { " saturated" }),
                ),
                format!("{} ({})", ns(p.peer.ns), p.peer.statistic.label()),
                ns(p.latlab_ns),
                format!("{:+.1}%", p.difference() * 100.0),
                p.latlab_actual_ns.map_or_else(|| "-".into(), ns),
                p.difference_actual()
                    .map_or_else(|| "-".into(), |d| format!("{:+.1}%", d * 100.0)),
            ]);
        }
        print!("{}", t.render());
        if let Some(line) = where_time::peer_summary(a) {
            println!("{line}");
        }
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

/// An added delay for a table: "0" for the baseline, else with its unit.
fn delay_label(delay_ns: u64) -> String {
    if delay_ns == 0 {
        "0".into()
    } else {
        ns(delay_ns)
    }
}
