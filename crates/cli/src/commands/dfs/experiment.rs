//! `latlab experiment dfs`: the paper's DFS evaluation on this machine (MPI) and in the
//! simulator (64–384 nodes), with Figs. 6–9 and a summary table.

use super::f;
use crate::args::dfs::DfsExperimentArgs;
use crate::exit::usage;
use crate::table::Table;
use anyhow::Context as _;
use latlab_core::results::ResultFile;
use latlab_dfs::report::{
    bench_data, bench_reference, compare, compare_rows, drop_summary, run_data, run_summary,
    sim_data, Comparison, DropSummary,
};
use latlab_dfs::sim::{
    self, result::to_result, BandwidthDrop, DropWindow, FiveNum, SimConfig, SimData,
};
use latlab_dfs::Mode;
use latlab_report::boxline::{
    self as charts, BoxChart, BoxSeries, BoxStats, LineChart, LineSeries,
};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Result kind of the experiment's summary.
pub const RESULT_KIND: &str = "dfs.experiment";

/// The paper's claims the summary is held against.
const PAPER_SPREAD: f64 = 30.0;
const PAPER_BW: f64 = 1.5;

/// The `data` of a `dfs.experiment` summary.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ExperimentData {
    /// Best effort vs DFS per simulated node count.
    pub sim: Vec<Comparison>,
    /// Best effort vs DFS in the real MPI run (None when skipped).
    pub mpi: Option<Comparison>,
    /// Why the MPI part was skipped, if it was.
    pub mpi_skipped: Option<String>,
    /// The bandwidth-drop run.
    pub drop: Option<DropSummary>,
    /// Result files and figures written (relative to the output directory).
    pub files: Vec<String>,
}

fn fivenum(b: FiveNum) -> BoxStats {
    BoxStats {
        min: b.min,
        p10: b.p10,
        median: b.median,
        p90: b.p90,
        max: b.max,
    }
}

fn save(
    r: &ResultFile,
    dir: &Path,
    name: &str,
    files: &mut Vec<String>,
) -> anyhow::Result<PathBuf> {
    let p = dir.join(name);
    r.save(&p)
        .with_context(|| format!("writing {}", p.display()))?;
    files.push(name.to_string());
    Ok(p)
}

pub fn run(a: DfsExperimentArgs, argv: Vec<String>) -> anyhow::Result<()> {
    if a.nodes.iter().any(|&n| n < 2 || n % 2 != 0) {
        return Err(usage(
            "--nodes: every count must be even and at least 2, e.g. 64,128",
        ));
    }
    if a.drop_nodes < 2 || a.drop_nodes % 2 != 0 {
        return Err(usage("--drop-nodes: need an even number of at least 2"));
    }
    if a.ranks < 2 || a.ranks % 2 != 0 {
        return Err(usage("--ranks: need an even number of at least 2"));
    }
    if a.ts_per_interval == 0 {
        return Err(usage("--ts-per-interval must be at least 1"));
    }
    if a.intervals < 4 || a.drop_intervals < 30 {
        return Err(usage(
            "--intervals must be at least 4 and --drop-intervals at least 30",
        ));
    }
    let dir = a.out_dir.clone();
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let started = latlab_sys::host::utc_now_rfc3339();
    let prov = || super::sim::provenance(&started);
    let mut files = Vec::new();
    let say = |s: &str| {
        if !a.quiet {
            eprintln!("{s}");
        }
    };

    // 1. the real MPI runs
    let mut mpi_files: Option<(PathBuf, PathBuf, Option<PathBuf>)> = None;
    let mut mpi_skipped = None;
    if a.no_mpi {
        mpi_skipped = Some("--no-mpi".to_string());
    } else {
        match mpi_part(&a, &dir, &say) {
            Ok((be, dfs, bench)) => {
                for p in [Some(&be), Some(&dfs), bench.as_ref()]
                    .into_iter()
                    .flatten()
                {
                    files.push(p.file_name().unwrap().to_string_lossy().into_owned());
                }
                mpi_files = Some((be, dfs, bench));
            }
            Err(why) => {
                say(&format!("MPI part skipped: {why}"));
                mpi_skipped = Some(why);
            }
        }
    }

    // 2. the simulator sweep
    let mut sims: Vec<(usize, PathBuf, PathBuf)> = Vec::new();
    for &n in &a.nodes {
        let mut pair = Vec::new();
        for mode in [Mode::BestEffort, Mode::Dfs] {
            let mut cfg = SimConfig::new(n / 2, n / 2, mode);
            cfg.seed = a.seed;
            cfg.params.ts_per_intvl = a.ts_per_interval;
            cfg.time_slices = a.intervals * cfg.params.interval_len(n / 2);
            say(&format!(
                "simulating {n} nodes, {}, {} time-slices",
                mode.name(),
                cfg.time_slices
            ));
            let o = sim::run(&cfg).map_err(|e| usage(e.to_string()))?;
            let r = to_result(&o, argv.clone(), prov());
            pair.push(save(
                &r,
                &dir,
                &format!("sim-{n}-{}.json", mode.name()),
                &mut files,
            )?);
        }
        sims.push((n, pair[0].clone(), pair[1].clone()));
    }

    // 3. the bandwidth drop (192 nodes by default) and the same run without it
    let mut drop_paths = Vec::new();
    for dropped in [false, true] {
        let half = a.drop_nodes / 2;
        let mut cfg = SimConfig::new(half, half, Mode::Dfs);
        cfg.seed = a.seed;
        cfg.time_slices = a.drop_intervals * cfg.params.interval_len(half);
        if dropped {
            cfg.drops.push(BandwidthDrop {
                window: DropWindow::Intervals {
                    first: 15,
                    last: 25,
                },
                factor: 0.75,
            });
        }
        say(&format!(
            "simulating {} nodes, dfs, {} ({} time-slices)",
            a.drop_nodes,
            if dropped {
                "25 % drop in intervals 15-25"
            } else {
                "no drop"
            },
            cfg.time_slices
        ));
        let o = sim::run(&cfg).map_err(|e| usage(e.to_string()))?;
        let r = to_result(&o, argv.clone(), prov());
        let what = if dropped { "drop" } else { "nodrop" };
        let name = format!("sim-{what}-{}.json", a.drop_nodes);
        drop_paths.push(save(&r, &dir, &name, &mut files)?);
    }

    // 4. everything below is computed from the saved files
    let load = |p: &Path| ResultFile::load(p).with_context(|| format!("reading {}", p.display()));
    let mut sim_rows: Vec<(usize, SimData, SimData)> = Vec::new();
    for (n, be, dfs) in &sims {
        sim_rows.push((*n, sim_data(&load(be)?)?, sim_data(&load(dfs)?)?));
    }
    let comparisons: Vec<Comparison> = sim_rows.iter().map(|(_, b, d)| compare(b, d)).collect();
    let mut mpi_cmp = None;
    let mut mpi_rows = None;
    if let Some((be, dfs, bench)) = &mpi_files {
        let be = run_data(&load(be)?)?;
        let dfs = run_data(&load(dfs)?)?;
        let reference = match bench {
            Some(p) => bench_reference(&bench_data(&load(p)?)?, be.config.topology.mts_bytes, true),
            None => None,
        };
        let (rb, rd) = (run_summary(&be, reference), run_summary(&dfs, reference));
        mpi_cmp = Some(compare_rows(
            &rb,
            &rd,
            be.completion_var_ms2,
            dfs.completion_var_ms2,
        ));
        mpi_rows = Some((rb, rd, be, dfs, reference));
    }
    let nodrop = sim_data(&load(&drop_paths[0])?)?;
    let dropd = sim_data(&load(&drop_paths[1])?)?;
    let drop = drop_summary(&dropd, 15, 25);

    // figures
    let mut cats: Vec<String> = Vec::new();
    let mut be_boxes = Vec::new();
    let mut dfs_boxes = Vec::new();
    if let Some((rb, rd, ..)) = &mpi_rows {
        cats.push(format!("{} (MPI, this host)", rb.nodes));
        be_boxes.push((0, fivenum(rb.completion_ms)));
        dfs_boxes.push((0, fivenum(rd.completion_ms)));
    }
    for (n, b, d) in &sim_rows {
        let k = cats.len();
        cats.push(format!("{n} (sim)"));
        be_boxes.push((k, fivenum(b.completion_ms)));
        dfs_boxes.push((k, fivenum(d.completion_ms)));
    }
    let fig6 = dir.join(format!("fig6-completion.{}", a.format));
    charts::render_boxes(
        &BoxChart {
            title: "Fig. 6: time-slice completion duration (min, p10, median, p90, max)".into(),
            categories: cats,
            x_label: "nodes (half inputs, half computes)".into(),
            y_label: "last - first arrival (ms)".into(),
            log_y: true,
            series: vec![
                BoxSeries {
                    label: "best effort".into(),
                    boxes: be_boxes,
                },
                BoxSeries {
                    label: "DFS".into(),
                    boxes: dfs_boxes,
                },
            ],
        },
        &fig6,
    )
    .context("drawing Fig. 6")?;
    files.push(format!("fig6-completion.{}", a.format));

    let fig7 = dir.join(format!("fig7-bandwidth.{}", a.format));
    let pct = |d: &SimData| 100.0 * d.steady_bandwidth_gbs / d.nominal_gbs;
    let mut lines = vec![
        LineSeries {
            label: "best effort (sim, % of model bound)".into(),
            points: sim_rows
                .iter()
                .map(|(n, b, _)| (*n as f64, pct(b)))
                .collect(),
            markers: true,
        },
        LineSeries {
            label: "DFS (sim, % of model bound)".into(),
            points: sim_rows
                .iter()
                .map(|(n, _, d)| (*n as f64, pct(d)))
                .collect(),
            markers: true,
        },
    ];
    if let Some((rb, rd, _, _, Some(_))) = &mpi_rows {
        lines.push(LineSeries {
            label: "best effort (MPI, % of dfs bench Mix)".into(),
            points: vec![(rb.nodes as f64, rb.bandwidth_pct_of_reference)],
            markers: true,
        });
        lines.push(LineSeries {
            label: "DFS (MPI, % of dfs bench Mix)".into(),
            points: vec![(rd.nodes as f64, rd.bandwidth_pct_of_reference)],
            markers: true,
        });
    }
    charts::render_lines(
        &LineChart {
            title: "Fig. 7: aggregate bandwidth relative to the benchmark bound".into(),
            x_label: "nodes".into(),
            y_label: "% of reference bandwidth".into(),
            series: lines,
            shaded: vec![],
            y_from_zero: true,
            log_y: false,
        },
        &fig7,
    )
    .context("drawing Fig. 7")?;
    files.push(format!("fig7-bandwidth.{}", a.format));

    let fig8 = dir.join(format!("fig8-intervals.{}", a.format));
    let series = |d: &SimData, what: &str, prop: bool| LineSeries {
        label: what.into(),
        points: d
            .intervals
            .iter()
            .filter_map(|r| {
                let v = if prop { r.proposed_ms? } else { r.actual_ms };
                Some((r.index as f64, v))
            })
            .collect(),
        markers: true,
    };
    charts::render_lines(
        &LineChart {
            title: format!(
                "Fig. 8: proposed and actual interval durations, {} nodes (sim)",
                a.drop_nodes
            ),
            x_label: "interval".into(),
            y_label: "duration (ms)".into(),
            series: vec![
                series(&dropd, "proposed (25 % drop)", true),
                series(&dropd, "actual (25 % drop)", false),
                series(&nodrop, "proposed (no drop)", true),
                series(&nodrop, "actual (no drop)", false),
            ],
            shaded: vec![(14.5, 25.5, "bandwidth drop".into())],
            y_from_zero: false,
            log_y: false,
        },
        &fig8,
    )
    .context("drawing Fig. 8")?;
    files.push(format!("fig8-intervals.{}", a.format));

    // Fig. 9 at the node count closest to 128
    if let Some((n, b, d)) = sim_rows.iter().min_by_key(|(n, ..)| n.abs_diff(128)) {
        let ranks = b.fill_by_rank.len();
        let pick: Vec<usize> = (0..8)
            .map(|k| k * (ranks - 1) / 7)
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        let boxes = |x: &SimData| {
            pick.iter()
                .enumerate()
                .map(|(k, &r)| (k, fivenum(x.fill_by_rank[r])))
                .collect()
        };
        let fig9 = dir.join(format!("fig9-buffer-fill.{}", a.format));
        charts::render_boxes(
            &BoxChart {
                title: format!("Fig. 9: buffer fill by ordered connection, {n} nodes (sim)"),
                categories: pick.iter().map(|r| format!("#{}", r + 1)).collect(),
                x_label: "connection, fullest first".into(),
                y_label: "fill (% of ring)".into(),
                log_y: false,
                series: vec![
                    BoxSeries {
                        label: "best effort".into(),
                        boxes: boxes(b),
                    },
                    BoxSeries {
                        label: "DFS".into(),
                        boxes: boxes(d),
                    },
                ],
            },
            &fig9,
        )
        .context("drawing Fig. 9")?;
        files.push(format!("fig9-buffer-fill.{}", a.format));
        let fig9t = dir.join(format!("fig9-buffer-fill-time.{}", a.format));
        let mean = |x: &SimData, l: &str| LineSeries {
            label: l.into(),
            points: x.fill.iter().map(|s| (s.t_ms, s.mean)).collect(),
            markers: false,
        };
        charts::render_lines(
            &LineChart {
                title: format!("Buffer fill over time (mean of all connections), {n} nodes (sim)"),
                x_label: "time (ms)".into(),
                y_label: "fill (% of ring)".into(),
                series: vec![mean(b, "best effort"), mean(d, "DFS")],
                shaded: vec![],
                y_from_zero: true,
                log_y: false,
            },
            &fig9t,
        )
        .context("drawing Fig. 9 (time)")?;
        files.push(format!("fig9-buffer-fill-time.{}", a.format));
    }

    // summary
    let mut t = Table::new([
        "nodes",
        "runtime",
        "BE median ms",
        "DFS median ms",
        "BE p90 ms",
        "DFS p90 ms",
        "median BE/DFS",
        "p90 BE/DFS",
        "var BE/DFS",
        "BE GB/s",
        "DFS GB/s",
        "BW DFS/BE",
    ]);
    if let (Some((rb, rd, ..)), Some(c)) = (&mpi_rows, &mpi_cmp) {
        t.row(vec![
            rb.nodes.to_string(),
            "mpi".into(),
            f(rb.completion_ms.median, 3),
            f(rd.completion_ms.median, 3),
            f(rb.completion_ms.p90, 3),
            f(rd.completion_ms.p90, 3),
            f(c.median_ratio, 2),
            f(c.p90_ratio, 2),
            f(c.variance_ratio, 1),
            f(rb.bandwidth_gbs, 2),
            f(rd.bandwidth_gbs, 2),
            f(c.bandwidth_ratio, 3),
        ]);
    }
    for ((n, b, d), c) in sim_rows.iter().zip(&comparisons) {
        t.row(vec![
            n.to_string(),
            "sim".into(),
            f(b.completion_ms.median, 3),
            f(d.completion_ms.median, 3),
            f(b.completion_ms.p90, 3),
            f(d.completion_ms.p90, 3),
            f(c.median_ratio, 2),
            f(c.p90_ratio, 2),
            f(c.variance_ratio, 1),
            f(b.steady_bandwidth_gbs, 1),
            f(d.steady_bandwidth_gbs, 1),
            f(c.bandwidth_ratio, 3),
        ]);
    }
    let mut md = String::new();
    md.push_str("# latlab experiment dfs\n\n");
    md.push_str("Completion duration = last minus first contribution arrival of a time-slice, after the two warm-up intervals.\n\n```\n");
    md.push_str(&t.render());
    md.push_str("```\n\n");
    for key in [128usize, 384] {
        if let Some(c) = comparisons.iter().find(|c| c.nodes == key) {
            md.push_str(&format!(
                "- {key} nodes (sim): best-effort/DFS completion spread {}x at the median, {}x at p90, {}x in variance (paper: at least {PAPER_SPREAD}x); DFS/best-effort bandwidth {}x (paper: up to {PAPER_BW}x).\n",
                f(c.median_ratio, 2), f(c.p90_ratio, 2), f(c.variance_ratio, 1), f(c.bandwidth_ratio, 3)
            ));
        }
    }
    if let Some(c) = &mpi_cmp {
        md.push_str(&format!(
            "- MPI on this host ({} ranks): best-effort/DFS median {}x, p90 {}x; DFS/best-effort bandwidth {}x.\n",
            c.nodes, f(c.median_ratio, 2), f(c.p90_ratio, 2), f(c.bandwidth_ratio, 3)
        ));
    }
    if let Some(dr) = &drop {
        md.push_str(&format!(
            "- Bandwidth drop ({} nodes, 25 % in intervals 15-25): proposed {} ms before, actual {} ms during, proposal peak {} ms, last proposal {} ms; speed-ups after the drop in intervals {:?}.\n",
            a.drop_nodes, f(dr.before_ms, 3), f(dr.actual_in_drop_ms, 3), f(dr.peak_ms, 3), f(dr.last_ms, 3), dr.speedups_after
        ));
    }
    if let Some(why) = &mpi_skipped {
        md.push_str(&format!("- MPI part skipped: {why}\n"));
    }
    md.push_str(
        "\nWhy the model's ratios differ from the paper's is discussed in docs/dfs.md.\n\nFiles:\n",
    );
    for f in &files {
        md.push_str(&format!("- {f}\n"));
    }
    let summary = dir.join("summary.md");
    latlab_core::results::write_atomically(&summary, md.as_bytes())
        .context("writing summary.md")?;
    let mut r = ResultFile::new(
        RESULT_KIND,
        argv,
        serde_json::json!({
            "nodes": a.nodes, "intervals": a.intervals, "ts_per_interval": a.ts_per_interval, "drop_intervals": a.drop_intervals,
            "mpi": !a.no_mpi, "ranks": a.ranks, "mpi_time_slices": a.mpi_time_slices, "seed": a.seed,
        }),
        prov(),
    );
    r.data = serde_json::to_value(ExperimentData {
        sim: comparisons,
        mpi: mpi_cmp,
        mpi_skipped,
        drop,
        files: files.clone(),
    })?;
    r.save(&dir.join("experiment.json"))
        .context("writing experiment.json")?;
    print!("{md}");
    println!("summary: {}", summary.display());
    // The HTML report, from the result files just written (the summary result has no
    // sections of its own; each run's kind does).
    let results: Vec<std::path::PathBuf> = files
        .iter()
        .filter(|f| f.ends_with(".json"))
        .map(|f| dir.join(f))
        .collect();
    let report =
        crate::commands::report::experiment_report(&dir, "latlab experiment dfs", &results)?;
    println!("report: {}", report.display());
    Ok(())
}

/// Runs `dfs bench` and both `dfs run` modes under mpirun as child processes.
fn mpi_part(
    a: &DfsExperimentArgs,
    dir: &Path,
    say: &dyn Fn(&str),
) -> Result<(PathBuf, PathBuf, Option<PathBuf>), String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find the latlab binary: {e}"))?;
    let ok = std::process::Command::new("mpirun")
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !ok {
        return Err("mpirun not found (install openmpi-bin)".into());
    }
    let half = (a.ranks / 2).to_string();
    let mpirun = |args: &[&str], out: &Path| -> Result<(), String> {
        let o = std::process::Command::new("mpirun")
            .args([
                "--allow-run-as-root",
                "--oversubscribe",
                "-n",
                &a.ranks.to_string(),
            ])
            .arg(&exe)
            .args(args)
            .arg("-q")
            .arg("-o")
            .arg(out)
            .output()
            .map_err(|e| format!("mpirun: {e}"))?;
        if o.status.success() {
            Ok(())
        } else {
            Err(format!(
                "mpirun {} failed: {}",
                args.join(" "),
                String::from_utf8_lossy(&o.stderr)
                    .lines()
                    .last()
                    .unwrap_or("")
            ))
        }
    };
    say(&format!("MPI: dfs bench on {} ranks", a.ranks));
    let bench = dir.join("mpi-bench.json");
    let bench = mpirun(
        &["dfs", "bench", "--sizes", "16K", "--bytes", "16M"],
        &bench,
    )
    .map(|_| bench)
    .map_err(|e| say(&format!("benchmark failed: {e}")))
    .ok();
    let mut out = Vec::new();
    for mode in ["best-effort", "dfs"] {
        say(&format!(
            "MPI: dfs run {mode}, {} time-slices",
            a.mpi_time_slices
        ));
        let p = dir.join(format!("mpi-{mode}.json"));
        mpirun(
            &[
                "dfs",
                "run",
                "--inputs",
                &half,
                "--computes",
                &half,
                "--mode",
                mode,
                "--time-slices",
                &a.mpi_time_slices.to_string(),
                "--mts-size",
                "16K",
            ],
            &p,
        )?;
        out.push(p);
    }
    Ok((out[0].clone(), out[1].clone(), bench))
}
