//! `latlab dfs sim`: the discrete-event simulator.

use super::common::{completion_cells, f, COMPLETION_MS};
use crate::args::dfs::SimArgs;
use crate::exit::usage;
use crate::output::{default_result_path, named_or_unique};
use anyhow::Context as _;
use latlab_core::results::{Provenance, ResultFile};
use latlab_core::text::Table;
use latlab_dfs::report::{compare, sim_data, sim_summary};
use latlab_dfs::sim::{self, result::to_result, SimConfig, STATIONARY_CHANGE_PCT, T_CRIT};
use latlab_dfs::Mode;
use latlab_sys::host;
use std::path::{Path, PathBuf};

pub fn run(a: SimArgs, argv: Vec<String>) -> anyhow::Result<()> {
    let base = SimConfig::try_from(&a)?;
    let modes = a.mode.modes();
    let started_utc = host::utc_now_rfc3339();
    let out = a
        .out
        .output
        .clone()
        .unwrap_or_else(|| default_result_path("dfs-sim", &started_utc));
    // `-o q.json` names the files of this run: a second run replaces them (q.json, or
    // q-best-effort.json and q-dfs.json for both modes) instead of numbering new ones.
    let named = a.out.output.is_some();
    let paths: Vec<PathBuf> = modes
        .iter()
        .map(|m| match modes.len() {
            1 => named_or_unique(out.clone(), named),
            _ => named_or_unique(suffixed(&out, m.name()), named),
        })
        .collect();

    // modes run on up to --jobs threads (each run is deterministic and independent);
    // results are saved in mode order
    let jobs = a
        .jobs
        .map_or(1, |j| j as usize)
        .clamp(1, modes.len().max(1));
    let run_one = |mode: Mode, bar_quiet: bool| -> anyhow::Result<ResultFile> {
        let cfg = SimConfig {
            mode,
            ..base.clone()
        };
        let wall = std::time::Instant::now();
        let mut bar = crate::output::Bar::new(bar_quiet);
        bar.0.set_prefix(format!("dfs sim {}", mode.name()));
        let o = sim::run_with_progress(&cfg, &mut bar).map_err(|e| usage(format!("{e}")))?;
        drop(bar);
        let wall_s = wall.elapsed().as_secs_f64();
        let mut r = to_result(&o, argv.clone(), provenance(&started_utc));
        r.counters
            .insert("wall_ms".into(), (wall_s * 1e3).round() as u64);
        Ok(r)
    };
    let results: Vec<anyhow::Result<ResultFile>> = if jobs <= 1 {
        modes.iter().map(|m| run_one(*m, a.out.quiet)).collect()
    } else {
        let next = std::sync::atomic::AtomicUsize::new(0);
        let slots: Vec<std::sync::Mutex<Option<anyhow::Result<ResultFile>>>> =
            modes.iter().map(|_| std::sync::Mutex::new(None)).collect();
        std::thread::scope(|sc| {
            for _ in 0..jobs {
                sc.spawn(|| loop {
                    let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(m) = modes.get(k) else { break };
                    // one progress bar per thread would interleave: parallel runs are quiet
                    let r = run_one(*m, true);
                    *slots[k].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
                });
            }
        });
        slots
            .into_iter()
            .map(|m| {
                m.into_inner()
                    .unwrap_or_else(|e| e.into_inner())
                    .unwrap_or_else(|| Err(anyhow::anyhow!("a simulation thread died")))
            })
            .collect()
    };
    let mut saved = Vec::new();
    for (r, path) in results.into_iter().zip(&paths) {
        let r = r?;
        r.save(path).context("writing the result")?;
        saved.push((path.clone(), ResultFile::load(path)?));
    }

    if !a.out.quiet {
        print_summary(&saved)?;
    }
    Ok(())
}

/// `latlab dfs noise-trace [FILE]`: the gap histogram the stalls are drawn from.
pub fn noise_trace(a: &crate::args::dfs::NoiseTraceArgs) -> anyhow::Result<()> {
    let t = match &a.file {
        Some(p) => sim::NoiseTrace::load(p).map_err(|e| usage(e.to_string()))?,
        None => sim::NoiseTrace::measured_default(),
    };
    println!(
        "# from {}: {} gaps in {:.3} s = {:.1} stalls/s, {:.3} % of the time stalled",
        t.source,
        t.gaps(),
        t.duration_ns as f64 / 1e9,
        t.rate_per_s(),
        t.stalled_fraction() * 100.0
    );
    print!("{}", t.to_text());
    Ok(())
}

/// Provenance of a simulation: the host that ran it, and a timebase that says no clock
/// was read (all times are simulated).
pub(crate) fn provenance(started_utc: &str) -> Provenance {
    host::provenance(
        sim::result::simulated_timebase(),
        vec![],
        false,
        started_utc.to_string(),
    )
}

/// `x` as "1.23x", or "n/a" when it is not a number (a ratio with a zero denominator).
fn ratio(x: f64, digits: usize) -> String {
    if x.is_finite() {
        format!("{}x", f(x, digits))
    } else {
        "n/a".into()
    }
}

fn suffixed(p: &Path, s: &str) -> PathBuf {
    let stem = p
        .file_stem()
        .map(|x| x.to_string_lossy().into_owned())
        .unwrap_or_default();
    p.with_file_name(format!("{stem}-{s}.json"))
}

pub(crate) fn print_summary(saved: &[(PathBuf, ResultFile)]) -> anyhow::Result<()> {
    let mut t = Table::new(
        ["mode", "nodes", "ts"]
            .into_iter()
            .chain(COMPLETION_MS)
            .chain(["GB/s", "% nominal", "lost", "bad"]),
    );
    let mut datas = Vec::new();
    for (p, r) in saved {
        let d = sim_data(r).with_context(|| format!("reading {}", p.display()))?;
        let s = sim_summary(&d);
        let mut row = vec![
            s.mode.name().into(),
            s.nodes.to_string(),
            s.time_slices.to_string(),
        ];
        row.extend(completion_cells(&s.completion_ms));
        row.extend([
            f(s.bandwidth_gbs, 1),
            f(s.bandwidth_pct_of_reference, 1),
            s.lost.to_string(),
            s.bad.to_string(),
        ]);
        t.row(row);
        datas.push(d);
    }
    println!("time-slice completion duration (last - first arrival), after warm-up:");
    print!("{}", t.render());
    let mut t = Table::new([
        "mode",
        "simulated ms",
        "warm-up ms",
        "p90 1st half ms",
        "p90 2nd half ms",
        "trend ms/s",
        "± se",
        "change %",
        "stationary",
        "settled (MSER)",
        "discarded",
        "events",
        "wall s",
        "events/s",
    ]);
    for ((_, r), d) in saved.iter().zip(&datas) {
        let wall_s = r.counters.get("wall_ms").copied().unwrap_or(0) as f64 / 1e3;
        let halves = d.completion_halves_ms;
        t.row(vec![
            d.config.mode.name().to_string(),
            f(d.duration_ms, 1),
            f(d.warmup_ms, 1),
            halves.map_or("-".into(), |h| f(h[0].p90, 3)),
            halves.map_or("-".into(), |h| f(h[1].p90, 3)),
            d.trend.map_or("-".into(), |t| f(t.slope_ms_per_s, 3)),
            d.trend.map_or("-".into(), |t| f(t.slope_se_ms_per_s, 3)),
            d.trend.map_or("-".into(), |t| f(t.change_pct, 1)),
            d.trend
                .map_or("-", |t| if t.stationary { "yes" } else { "no" })
                .into(),
            d.trend.map_or("-".into(), settled),
            d.discarded.to_string(),
            d.events.to_string(),
            f(wall_s, 2),
            if wall_s > 0.0 {
                f(d.events as f64 / wall_s, 0)
            } else {
                "-".into()
            },
        ]);
    }
    println!("steady state and cost:");
    println!(
        "(stationary: change ≤ {STATIONARY_CHANGE_PCT} % or slope within {T_CRIT} se; settled: MSER cut, mean after)"
    );
    print!("{}", t.render());
    let mut t = Table::new([
        "mode",
        "paced intervals",
        "catch-up %",
        "at write cap %",
        "credit refusals",
        "senders/CN mean",
        "p90",
        "max",
        "idle %",
    ]);
    for d in &datas {
        let dfs = d.config.mode == Mode::Dfs;
        t.row(vec![
            d.config.mode.name().to_string(),
            if dfs {
                d.paced_intervals().to_string()
            } else {
                "-".into()
            },
            if dfs {
                f(d.catch_up_pct(), 2)
            } else {
                "-".into()
            },
            d.limits.as_ref().map_or("-".into(), |l| f(l.at_cap_pct, 1)),
            d.limits
                .as_ref()
                .map_or("-".into(), |l| l.credit_refusals.to_string()),
            d.senders.as_ref().map_or("-".into(), |x| f(x.mean, 2)),
            d.senders.as_ref().map_or("-".into(), |x| x.p90.to_string()),
            d.senders.as_ref().map_or("-".into(), |x| x.max.to_string()),
            d.senders.as_ref().map_or("-".into(), |x| f(x.idle_pct, 1)),
        ]);
    }
    println!("pacing (after warm-up), sender limits (writes in flight at the NIC, ring-slot credits), concurrent senders per compute node:");
    print!("{}", t.render());
    let be = datas.iter().find(|d| d.config.mode == Mode::BestEffort);
    let dfs = datas.iter().find(|d| d.config.mode == Mode::Dfs);
    if let (Some(be), Some(dfs)) = (be, dfs) {
        {
            let c = compare(be, dfs);
            println!(
                "best effort / DFS: median {}, p90 {}, variance {}; DFS / best effort bandwidth {}",
                ratio(c.median_ratio, 2),
                ratio(c.p90_ratio, 2),
                ratio(c.variance_ratio, 1),
                ratio(c.bandwidth_ratio, 3)
            );
            if ![c.median_ratio, c.p90_ratio, c.variance_ratio]
                .iter()
                .all(|r| r.is_finite())
            {
                println!(
                    "(n/a: a ratio of zero durations is undefined; with one input a time-slice completes with its only contribution, so its completion duration is 0)"
                );
            }
        }
    }
    for (p, r) in saved {
        for w in &r.warnings {
            println!("warning: {w}");
        }
        println!("result: {}", p.display());
    }
    Ok(())
}

/// The MSER column: where a trending run settles and its mean after, or why it does not.
fn settled(t: latlab_dfs::sim::Trend) -> String {
    match t.settle {
        _ if t.stationary => "from start".into(),
        Some(s) if s.stationary && s.reliable => {
            format!("{:.0} ms: {:.3} ms", s.from_ms, s.mean_ms)
        }
        Some(s) if s.stationary => format!("{:.0} ms? (run too short)", s.from_ms),
        _ => "no".into(),
    }
}
