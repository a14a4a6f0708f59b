//! The three policies against the paper, and the sensitivity sweep: the simulations run in
//! parallel ([`run_parallel`]); every table is computed from the saved result files.

use super::config::{read, write_error, Context, ExperimentError};
use crate::paper::PAPER_BANDWIDTH_PCT;
use crate::report::{compare, sim_data};
use crate::sim::{self, result::to_result, Limits, SimConfig, SimData};
use latlab_core::stats::FiveNum;
use latlab_core::text::Table;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

/// One policy at one node count, beside the paper.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PolicyRow {
    /// Nodes (inputs + computes).
    pub nodes: usize,
    /// `best-effort`, `dfs` or `flesnet`.
    pub policy: String,
    /// Completion duration after warm-up, ms.
    pub completion_ms: FiveNum,
    /// Its variance, ms².
    pub variance_ms2: f64,
    /// Steady-state aggregate bandwidth in percent of the benchmark reference (the model
    /// bound I × bandwidth).
    pub bandwidth_pct: f64,
    /// The paper's figure for this policy and node count, percent (best effort and DFS at
    /// 128/192/384 nodes).
    pub paper_pct: Option<f64>,
    /// Time-slices discarded, percent (FLESnet).
    pub discarded_pct: f64,
    /// Warm-up left out, ms of simulated time.
    pub warmup_ms: f64,
    /// p90 completion of the first and second half after warm-up, ms.
    pub p90_halves_ms: Option<[f64; 2]>,
    /// Simulated duration, ms.
    pub simulated_ms: f64,
    /// Events processed.
    pub events: u64,
    /// Wall time of the simulation, s.
    pub wall_s: f64,
    /// Started warm: every input at a time drawn in [0, one credit window] (false: all
    /// together, cold). Every policy runs both ways from the same draws.
    #[serde(default)]
    pub warm: bool,
    /// DFS: intervals after the warm-up that were sent paced, the number its figures
    /// stand on (None: not DFS, or an older result).
    #[serde(default)]
    pub paced_intervals: Option<u64>,
    /// DFS: contributions sent as catch-up (unpaced, after the proposed end), percent.
    #[serde(default)]
    pub catch_up_pct: Option<f64>,
    /// Share of input time at the writes-in-flight cap, percent (None: older result).
    #[serde(default)]
    pub at_cap_pct: Option<f64>,
    /// Concurrent senders per compute node after the warm-up: mean, p90, max (None: the
    /// fabric, or an older result).
    #[serde(default)]
    pub senders: Option<[f64; 3]>,
}

impl PolicyRow {
    pub(super) fn new(d: &SimData, wall_s: f64) -> PolicyRow {
        let policy = d.config.mode.name().to_string();
        let paper_pct = PAPER_BANDWIDTH_PCT
            .iter()
            .find(|(n, _, _)| *n == d.nodes)
            .and_then(|&(_, be, dfs)| match d.config.mode {
                crate::Mode::BestEffort => Some(be),
                crate::Mode::Dfs => Some(dfs),
                crate::Mode::Flesnet => None,
            });
        PolicyRow {
            nodes: d.nodes,
            policy,
            completion_ms: d.completion_ms,
            variance_ms2: d.completion_var_ms2,
            bandwidth_pct: 100.0 * d.steady_bandwidth_gbs / d.nominal_gbs,
            paper_pct,
            discarded_pct: 100.0 * d.discarded as f64 / d.time_slices.max(1) as f64,
            warmup_ms: d.warmup_ms,
            p90_halves_ms: d.completion_halves_ms.map(|h| [h[0].p90, h[1].p90]),
            simulated_ms: d.duration_ms,
            events: d.events,
            wall_s,
            warm: d.config.start_spread_ns > 0,
            paced_intervals: (d.config.mode == crate::Mode::Dfs).then(|| d.paced_intervals()),
            catch_up_pct: (d.config.mode == crate::Mode::Dfs).then(|| d.catch_up_pct()),
            at_cap_pct: d.limits.as_ref().map(|l| l.at_cap_pct),
            senders: d
                .senders
                .as_ref()
                .map(|x| [x.mean, x.p90 as f64, x.max as f64]),
        }
    }
}

/// One variant of the sensitivity sweep: best effort against DFS with one mechanism
/// changed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepRow {
    /// What was changed.
    pub variant: String,
    /// Nodes.
    pub nodes: usize,
    /// p90 completion, best effort and DFS, ms.
    pub p90_ms: [f64; 2],
    /// Completion ratios best effort / DFS: p90 and variance.
    pub p90_ratio: f64,
    /// Variance ratio.
    pub variance_ratio: f64,
    /// Bandwidth in percent of the model bound: best effort and DFS.
    pub bandwidth_pct: [f64; 2],
    /// Share of input time at the writes-in-flight cap, percent: best effort and DFS
    /// (None in results written before it was measured).
    #[serde(default)]
    pub at_cap_pct: Option<[f64; 2]>,
    /// Contributions refused for want of credits: best effort and DFS (0: the ring slots
    /// never bound, so a change of the slots cannot change the run).
    #[serde(default)]
    pub credit_refusals: Option<[u64; 2]>,
    /// The changed field as the saved runs simulated it (read back from their result
    /// files; None for the default model and in older results).
    #[serde(default)]
    pub simulated: Option<String>,
    /// Whether the limit the variant moves bound in either of its runs (None: the
    /// variant is not a limit, or an older result); `false` explains a row equal to the
    /// default.
    #[serde(default)]
    pub limit_bound: Option<bool>,
}

/// How many variants the sensitivity sweep has.
pub const SWEEP_VARIANTS: usize = 11;

/// A variant of the sweep: its name, the change to the default configuration, the model
/// field it changes (as text, to show that the change reached the simulated
/// configuration) and, for a limit that may never bind, whether it bound in a run.
pub(super) struct Variant {
    /// What the table calls it.
    pub name: &'static str,
    /// The change.
    pub change: fn(&mut SimConfig),
    /// The field it changes, rendered (None: the default model itself).
    pub field: Option<fn(&SimConfig) -> String>,
    /// Whether the limit it moves bound in a run (None: a mechanism that acts in every
    /// run, through the random draws or the sizes).
    pub bound: Option<fn(&Limits) -> bool>,
}

fn credits_bound(l: &Limits) -> bool {
    l.credit_refusals > 0
}

fn cap_bound(l: &Limits) -> bool {
    l.at_cap_pct > 0.0
}

/// The sweep's variants.
pub(super) fn variants() -> Vec<Variant> {
    let v = |name, change, field, bound| Variant {
        name,
        change,
        field,
        bound,
    };
    let stalls: fn(&SimConfig) -> String = |c| {
        c.stalls.as_ref().map_or("no stalls".into(), |t| {
            format!("{:.0} stalls/s", t.rate_per_s())
        })
    };
    let noise: fn(&SimConfig) -> String = |c| format!("noise {}", c.net.noise);
    let spread: fn(&SimConfig) -> String = |c| format!("spread {}", c.speed_spread);
    let slots: fn(&SimConfig) -> String = |c| format!("{} slots", c.topology.slots_per_input);
    vec![
        v("default model", |_| {}, None, None),
        v("no node stalls", |c| c.stalls = None, Some(stalls), None),
        v(
            "no bandwidth noise",
            |c| c.net.noise = 0.0,
            Some(noise),
            None,
        ),
        v(
            "no stalls, no noise",
            |c| {
                c.stalls = None;
                c.net.noise = 0.0;
            },
            Some(|c| {
                let stalls = c.stalls.as_ref().map_or(0.0, |t| t.rate_per_s());
                format!("{stalls:.0} stalls/s, noise {}", c.net.noise)
            }),
            None,
        ),
        v(
            "speed spread 5 %",
            |c| c.speed_spread = 0.05,
            Some(spread),
            None,
        ),
        v(
            "speed spread 20 %",
            |c| c.speed_spread = 0.2,
            Some(spread),
            None,
        ),
        v(
            "stalls ×10 (rate)",
            |c| {
                if let Some(t) = &mut c.stalls {
                    t.duration_ns = (t.duration_ns / 10).max(1);
                }
            },
            Some(stalls),
            None,
        ),
        v(
            "4 slots (credits)",
            |c| c.topology.slots_per_input = 4,
            Some(slots),
            Some(credits_bound),
        ),
        v(
            "64 slots (credits)",
            |c| c.topology.slots_per_input = 64,
            Some(slots),
            Some(credits_bound),
        ),
        v(
            "2 writes in flight",
            |c| c.net.max_inflight = 2,
            Some(|c| format!("{} in flight", c.net.max_inflight)),
            Some(cap_bound),
        ),
        v(
            "interval ×4 (ts_per_intvl)",
            |c| {
                c.params.ts_per_intvl *= 4;
                c.time_slices *= 4;
            },
            Some(|c| format!("{} ts/interval", c.params.ts_per_intvl)),
            None,
        ),
    ]
}

/// Runs every configuration on `threads` threads, saving each result as its name in `dir`
/// as soon as it finishes (wall time of each run in the counter `wall_ms`); returns the
/// paths in the order given.
pub(super) fn run_parallel(
    runs: &[(SimConfig, String)],
    threads: usize,
    dir: &Path,
    cx: &Context<'_>,
    files: &mut Vec<String>,
) -> Result<Vec<PathBuf>, ExperimentError> {
    let next = AtomicUsize::new(0);
    let (tx, rx) = mpsc::channel();
    let mut paths = vec![None; runs.len()];
    std::thread::scope(|s| -> Result<(), ExperimentError> {
        for _ in 0..threads.clamp(1, runs.len().max(1)) {
            let tx = tx.clone();
            let next = &next;
            let elapsed = cx.elapsed;
            s.spawn(move || loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                let Some((cfg, _)) = runs.get(k) else { break };
                let t0 = elapsed();
                let o = sim::run(cfg);
                if tx.send((k, o, elapsed() - t0)).is_err() {
                    break;
                }
            });
        }
        drop(tx);
        for (k, o, wall_s) in rx {
            let o = o?;
            let (cfg, name) = &runs[k];
            (cx.progress)(&format!(
                "simulating {} nodes, {}, {} time-slices: {}",
                cfg.topology.inputs + cfg.topology.computes,
                cfg.mode.name(),
                cfg.total_ts(),
                name
            ));
            let mut r = to_result(&o, cx.argv.clone(), (cx.provenance)());
            r.counters
                .insert("wall_ms".into(), (wall_s * 1e3).round() as u64);
            let p = dir.join(name);
            r.save(&p).map_err(|e| write_error(&p, e))?;
            paths[k] = Some(p);
        }
        Ok(())
    })?;
    let mut out = Vec::new();
    for (p, (_, name)) in paths.into_iter().zip(runs) {
        files.push(name.clone());
        out.push(p.expect("every run reported"));
    }
    Ok(out)
}

/// A saved run's data and wall time.
pub(super) fn load(p: &Path) -> Result<(SimData, f64), ExperimentError> {
    let d = read(p, sim_data)?;
    let r = read(p, |r| Ok(r.counters.get("wall_ms").copied().unwrap_or(0)))?;
    Ok((d, r as f64 / 1e3))
}

/// The sweep row of a best-effort and a DFS run.
pub(super) fn sweep_row(v: &Variant, be: &SimData, dfs: &SimData) -> SweepRow {
    let c = compare(be, dfs);
    let bound = |f: fn(&Limits) -> bool| Some(f(be.limits.as_ref()?) || f(dfs.limits.as_ref()?));
    SweepRow {
        simulated: v.field.map(|f| f(&be.config)),
        limit_bound: v.bound.and_then(bound),
        variant: v.name.into(),
        nodes: be.nodes,
        p90_ms: [be.completion_ms.p90, dfs.completion_ms.p90],
        p90_ratio: c.p90_ratio,
        variance_ratio: c.variance_ratio,
        bandwidth_pct: [
            100.0 * be.steady_bandwidth_gbs / be.nominal_gbs,
            100.0 * dfs.steady_bandwidth_gbs / dfs.nominal_gbs,
        ],
        at_cap_pct: be
            .limits
            .as_ref()
            .zip(dfs.limits.as_ref())
            .map(|(b, d)| [b.at_cap_pct, d.at_cap_pct]),
        credit_refusals: be
            .limits
            .as_ref()
            .zip(dfs.limits.as_ref())
            .map(|(b, d)| [b.credit_refusals, d.credit_refusals]),
    }
}

fn opt(x: Option<f64>, d: usize) -> String {
    x.map_or("-".into(), |v| format!("{v:.d$}"))
}

/// The policies table and the sweep table as Markdown (empty when neither ran).
pub fn markdown(policies: &[PolicyRow], sweep: &[SweepRow]) -> String {
    let mut md = String::new();
    if !policies.is_empty() {
        let mut t = Table::new([
            "nodes",
            "policy",
            "start",
            "paced intervals",
            "catch-up %",
            "at cap %",
            "senders/CN mean/p90/max",
            "min ms",
            "p10 ms",
            "median ms",
            "p90 ms",
            "max ms",
            "var ms2",
            "BW %",
            "paper BW %",
            "discarded %",
            "warm-up ms",
            "p90 1st/2nd half ms",
            "sim ms",
            "events",
            "wall s",
            "events/s",
        ]);
        for r in policies {
            let c = r.completion_ms;
            t.row(vec![
                r.nodes.to_string(),
                r.policy.clone(),
                if r.warm { "warm" } else { "cold" }.into(),
                r.paced_intervals.map_or("-".into(), |n| n.to_string()),
                opt(r.catch_up_pct, 2),
                opt(r.at_cap_pct, 1),
                r.senders.map_or("-".into(), |x| {
                    format!("{:.2}/{:.0}/{:.0}", x[0], x[1], x[2])
                }),
                format!("{:.3}", c.min),
                format!("{:.3}", c.p10),
                format!("{:.3}", c.median),
                format!("{:.3}", c.p90),
                format!("{:.3}", c.max),
                format!("{:.4}", r.variance_ms2),
                format!("{:.1}", r.bandwidth_pct),
                opt(r.paper_pct, 1),
                format!("{:.2}", r.discarded_pct),
                format!("{:.1}", r.warmup_ms),
                r.p90_halves_ms
                    .map_or("-".into(), |h| format!("{:.3}/{:.3}", h[0], h[1])),
                format!("{:.1}", r.simulated_ms),
                r.events.to_string(),
                format!("{:.1}", r.wall_s),
                if r.wall_s > 0.0 {
                    format!("{:.0}", r.events as f64 / r.wall_s)
                } else {
                    "-".into()
                },
            ]);
        }
        md.push_str("## Three policies beside the paper\n\nBandwidth in percent of the benchmark reference (the model bound I × bandwidth); the paper's best effort 53/45/44 % and DFS 80/62.5/67 % at 128/192/384 nodes. Each policy from the same two starts: cold (all inputs together) and warm (each input at a time drawn once in [0, one credit window]); paced intervals: DFS intervals after the warm-up sent paced, which its figures stand on.\n\n```\n");
        md.push_str(&t.render());
        md.push_str("```\n\n");
    }
    if !sweep.is_empty() {
        let mut t = Table::new([
            "variant",
            "nodes",
            "BE p90 ms",
            "DFS p90 ms",
            "p90 BE/DFS",
            "var BE/DFS",
            "BE BW %",
            "DFS BW %",
            "BW DFS/BE",
            "simulated",
            "at cap % BE/DFS",
            "credit refusals BE/DFS",
        ]);
        for r in sweep {
            t.row(vec![
                r.variant.clone(),
                r.nodes.to_string(),
                format!("{:.3}", r.p90_ms[0]),
                format!("{:.3}", r.p90_ms[1]),
                format!("{:.2}", r.p90_ratio),
                format!("{:.1}", r.variance_ratio),
                format!("{:.1}", r.bandwidth_pct[0]),
                format!("{:.1}", r.bandwidth_pct[1]),
                format!("{:.3}", r.bandwidth_pct[1] / r.bandwidth_pct[0]),
                match (&r.simulated, r.limit_bound) {
                    (Some(v), Some(false)) => format!("{v} (never bound)"),
                    (Some(v), _) => v.clone(),
                    (None, _) => "-".into(),
                },
                r.at_cap_pct
                    .map_or("-".into(), |a| format!("{:.1}/{:.1}", a[0], a[1])),
                r.credit_refusals
                    .map_or("-".into(), |c| format!("{}/{}", c[0], c[1])),
            ]);
        }
        md.push_str("## Sensitivity sweep (one mechanism changed at a time)\n\nat cap: share of input time at the writes-in-flight cap (the NIC's outstanding writes); credit refusals: contributions due but without a ring slot at their compute node (0: the slots never bound, so a slots variant cannot change the run).\n\n```\n");
        md.push_str(&t.render());
        md.push_str("```\n\n");
    }
    md
}
