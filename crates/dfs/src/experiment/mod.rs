//! `latlab experiment dfs`: the paper's DFS evaluation on this machine (MPI) and in the
//! simulator (64–384 nodes), with Figs. 6–9 and a summary table — in one place:
//!
//! - [`ExperimentConfig`] (resolved and checked once, [`ExperimentConfig::validate`]) and
//!   [`run`], which writes every result file, the figures and `experiment.json` into an
//!   output directory and returns what to print ([`ExperimentOutcome`]);
//! - [`ExperimentData`], the `dfs.experiment` schema, which both writes and reads the
//!   result, and [`ExperimentSections`], its report provider;
//! - the MPI part started as child jobs (`mpi`), the figures (`figures`).
//!
//! The paper's numbers come from [`crate::paper`].

mod config;
mod data;
mod figures;
mod mpi;
mod policies;
mod sections;

use config::{read, write_error};
pub use config::{Context, ExperimentConfig, ExperimentError, FigureFormat, DEFAULT_INTERVALS};
pub use data::{findings, ExperimentData, Summary, MIN_PACED_INTERVALS, RESULT_KIND};
pub use policies::{markdown as policies_markdown, PolicyRow, SweepRow, SWEEP_VARIANTS};
pub use sections::ExperimentSections;

use crate::paper::{FIG8_DROP_FACTOR, FIG8_DROP_FIRST, FIG8_DROP_LAST};
use crate::params::Mode;
use crate::report::{
    bench_data, bench_reference, compare, compare_rows, drop_summary, run_data, run_summary,
    sim_data, Comparison,
};
use crate::sim::{BandwidthDrop, DropWindow, SimConfig};
use data::fixed;
use std::path::{Path, PathBuf};

/// What the experiment wrote and found.
#[derive(Clone, Debug)]
pub struct ExperimentOutcome {
    /// The `dfs.experiment` data (also in `experiment.json`).
    pub data: ExperimentData,
    /// The summary table and findings, for `summary.md` and the terminal.
    pub summary: Summary,
    /// The result files written (inputs of the HTML report), in order.
    pub results: Vec<PathBuf>,
}

/// Runs the experiment into `dir`: the MPI part (unless disabled or unavailable), the
/// simulator sweep over the node counts, the bandwidth-drop pair, the figures and
/// `experiment.json`. Everything after the runs is computed from the saved files.
///
/// # Errors
/// [`ExperimentError::Config`] or [`ExperimentError::Sim`] for a rejected configuration,
/// the others when a file cannot be written, read back or drawn.
pub fn run(
    cfg: &ExperimentConfig,
    dir: &Path,
    cx: &Context<'_>,
) -> Result<ExperimentOutcome, ExperimentError> {
    cfg.validate()?;
    std::fs::create_dir_all(dir).map_err(|e| write_error(dir, e))?;
    let say = cx.progress;
    let mut files = Vec::new();

    // 1. the real MPI runs
    let mut mpi_files = None;
    let mut mpi_skipped = None;
    if !cfg.mpi {
        mpi_skipped = Some("--no-mpi".to_string());
    } else {
        match mpi::run(cfg, dir, say) {
            Ok(m) => {
                for p in [Some(&m.be), Some(&m.dfs), m.bench.as_ref()]
                    .into_iter()
                    .flatten()
                {
                    files.push(p.file_name().unwrap().to_string_lossy().into_owned());
                }
                mpi_files = Some(m);
            }
            Err(why) => {
                say(&format!("MPI part skipped: {why}"));
                mpi_skipped = Some(why);
            }
        }
    }

    // 2. the simulations, all at once on `threads` threads: every policy at every node
    // count, the bandwidth drop (192 nodes by default) with and without the drop, and the
    // sensitivity sweep (best effort and DFS with one mechanism changed)
    let runs = planned_runs(cfg);
    let variants = policies::variants();
    say(&format!(
        "{} simulations on {} threads",
        runs.len(),
        cfg.threads
    ));
    let paths = policies::run_parallel(&runs, cfg.threads, dir, cx, &mut files)?;
    let mut sims: Vec<(usize, PathBuf, PathBuf)> = Vec::new();
    let mut policy_rows = Vec::new();
    for (k, &n) in cfg.nodes.iter().enumerate() {
        // cold best effort, DFS, FLESnet, then the same warm; the ratios compare the cold
        let p = &paths[6 * k..6 * k + 6];
        sims.push((n, p[0].clone(), p[1].clone()));
        for q in p {
            let (d, wall) = policies::load(q)?;
            policy_rows.push(PolicyRow::new(&d, wall));
        }
    }
    let base = 6 * cfg.nodes.len();
    let drop_paths = [paths[base].clone(), paths[base + 1].clone()];
    let mut sweep = Vec::new();
    if cfg.sweep_nodes > 0 {
        for (k, v) in variants.iter().enumerate() {
            let (be, _) = policies::load(&paths[base + 2 + 2 * k])?;
            let (dfs, _) = policies::load(&paths[base + 3 + 2 * k])?;
            sweep.push(policies::sweep_row(v, &be, &dfs));
        }
    }

    // 4. everything below is computed from the saved files
    let mut sim_rows = Vec::new();
    for (n, be, dfs) in &sims {
        sim_rows.push((*n, read(be, sim_data)?, read(dfs, sim_data)?));
    }
    let comparisons: Vec<Comparison> = sim_rows.iter().map(|(_, b, d)| compare(b, d)).collect();
    let mut mpi_cmp = None;
    let mut mpi_rows = None;
    if let Some(m) = &mpi_files {
        let be = read(&m.be, run_data)?;
        let dfs = read(&m.dfs, run_data)?;
        let reference = match &m.bench {
            Some(p) => bench_reference(&read(p, bench_data)?, be.config.topology.mts_bytes, true),
            None => None,
        };
        let (rb, rd) = (run_summary(&be, reference), run_summary(&dfs, reference));
        mpi_cmp = Some(compare_rows(
            &rb,
            &rd,
            be.completion_var_ms2,
            dfs.completion_var_ms2,
        ));
        mpi_rows = Some((rb, rd, reference));
    }
    let nodrop = read(&drop_paths[0], sim_data)?;
    let dropd = read(&drop_paths[1], sim_data)?;
    let drop = drop_summary(&dropd, FIG8_DROP_FIRST, FIG8_DROP_LAST);

    let figs = figures::figures(
        mpi_rows.as_ref(),
        &sim_rows,
        &nodrop,
        &dropd,
        cfg.drop_nodes,
    );
    figures::draw(cx.figures, figs, dir, cfg.format, &mut files)?;

    let mut rows = Vec::new();
    if let (Some((rb, rd, _)), Some(c)) = (&mpi_rows, &mpi_cmp) {
        let (b, d) = (rb.completion_ms, rd.completion_ms);
        rows.push(
            row(rb.nodes, "mpi", [b.median, d.median, b.p90, d.p90], c)
                .chain([
                    fixed(rb.bandwidth_gbs, 2),
                    fixed(rd.bandwidth_gbs, 2),
                    fixed(c.bandwidth_ratio, 3),
                ])
                .collect(),
        );
    }
    for ((n, b, d), c) in sim_rows.iter().zip(&comparisons) {
        let (bc, dc) = (b.completion_ms, d.completion_ms);
        rows.push(
            row(*n, "sim", [bc.median, dc.median, bc.p90, dc.p90], c)
                .chain([
                    fixed(b.steady_bandwidth_gbs, 1),
                    fixed(d.steady_bandwidth_gbs, 1),
                    fixed(c.bandwidth_ratio, 3),
                ])
                .collect(),
        );
    }
    let data = ExperimentData {
        sim: comparisons,
        mpi: mpi_cmp,
        mpi_skipped,
        drop,
        files: files.clone(),
        policies: policy_rows,
        sweep,
    };
    let summary = Summary {
        header: SUMMARY_HEADER.to_vec(),
        rows,
        findings: findings(&data, cfg.drop_nodes),
        files: files.clone(),
        extra: policies::markdown(&data.policies, &data.sweep),
    };
    let r = data.to_result(cx.argv.clone(), cfg.result_config(), (cx.provenance)());
    let path = dir.join("experiment.json");
    r.save(&path).map_err(|e| write_error(&path, e))?;
    let results = files
        .iter()
        .filter(|f| f.ends_with(".json"))
        .map(|f| dir.join(f))
        .collect();
    Ok(ExperimentOutcome {
        data,
        summary,
        results,
    })
}

/// Every simulation the experiment runs, with its file name, in order: the three policies
/// at every node count, the bandwidth drop without and with the drop, and the sensitivity
/// sweep (best effort and DFS per variant, `sweep-K-MODE.json`).
pub(super) fn planned_runs(cfg: &ExperimentConfig) -> Vec<(SimConfig, String)> {
    let mut runs: Vec<(SimConfig, String)> = Vec::new();
    for &n in &cfg.nodes {
        for warm in [false, true] {
            for mode in [Mode::BestEffort, Mode::Dfs, Mode::Flesnet] {
                let mut sc = SimConfig::new(n / 2, n / 2, mode);
                sc.fabric = cfg.fabric;
                sc.seed = cfg.seed;
                sc.params.ts_per_intvl = cfg.ts_per_interval;
                sc.time_slices = cfg.intervals * sc.params.interval_len(n / 2);
                let name = if warm {
                    sc.start_spread_ns = credit_window_ns(&sc);
                    format!("sim-{n}-{}-warm.json", mode.name())
                } else {
                    format!("sim-{n}-{}.json", mode.name())
                };
                runs.push((sc, name));
            }
        }
    }
    for dropped in [false, true] {
        let half = cfg.drop_nodes / 2;
        let mut sc = SimConfig::new(half, half, Mode::Dfs);
        sc.fabric = cfg.fabric;
        sc.seed = cfg.seed;
        sc.time_slices = cfg.drop_intervals * sc.params.interval_len(half);
        if dropped {
            sc.drops.push(BandwidthDrop {
                window: DropWindow::Intervals {
                    first: FIG8_DROP_FIRST,
                    last: FIG8_DROP_LAST,
                },
                factor: FIG8_DROP_FACTOR,
            });
        }
        let what = if dropped { "drop" } else { "nodrop" };
        runs.push((sc, format!("sim-{what}-{}.json", cfg.drop_nodes)));
    }
    if cfg.sweep_nodes > 0 {
        let half = cfg.sweep_nodes / 2;
        for (k, v) in policies::variants().iter().enumerate() {
            for mode in [Mode::BestEffort, Mode::Dfs] {
                let mut sc = SimConfig::new(half, half, mode);
                sc.fabric = cfg.fabric;
                sc.seed = cfg.seed;
                sc.params.ts_per_intvl = cfg.ts_per_interval;
                sc.time_slices = cfg.intervals * sc.params.interval_len(half);
                (v.change)(&mut sc);
                runs.push((sc, format!("sweep-{k}-{}.json", mode.name())));
            }
        }
    }
    runs
}

/// The warm start's spread: one credit window, the time the ring slots let an input run
/// ahead of the slowest (`slots` rounds of C contributions at the nominal injection
/// bandwidth): 16 × 64 × 64 KiB / 4 GB/s = 16.8 ms at 128 nodes, 50.3 ms at 384.
pub(super) fn credit_window_ns(c: &SimConfig) -> i64 {
    let t = &c.topology;
    let bytes = f64::from(t.slots_per_input) * t.computes as f64 * t.mts_bytes as f64;
    (bytes / c.net.inj_gbs).round() as i64
}

/// Columns of the summary table.
const SUMMARY_HEADER: [&str; 12] = [
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
];

/// The first nine cells of a summary row: nodes, runtime, completion (BE and DFS median,
/// BE and DFS p90) and the three completion ratios.
fn row(
    nodes: usize,
    runtime: &str,
    completion: [f64; 4],
    c: &Comparison,
) -> impl Iterator<Item = String> {
    [nodes.to_string(), runtime.to_string()]
        .into_iter()
        .chain(completion.map(|x| fixed(x, 3)))
        .chain([
            fixed(c.median_ratio, 2),
            fixed(c.p90_ratio, 2),
            fixed(c.variance_ratio, 1),
        ])
}

#[cfg(test)]
mod tests;
