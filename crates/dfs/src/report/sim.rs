//! The sections of `dfs.sim` results (`latlab dfs sim`).

use super::data::{fill_series, sim_data, sim_summary};
use super::summary::build;
use super::view::{decoded, ms, Accounting, Runtime, View};
use crate::sim::result::RESULT_KIND as SIM_KIND;
use crate::sim::SimData;
use latlab_core::doc::Input;
use latlab_core::doc::{KindSections, Section};

/// Sections for `dfs.sim` results (`latlab dfs sim`).
#[derive(Clone, Copy, Debug, Default)]
pub struct SimSections;

impl KindSections for SimSections {
    const KIND: &'static str = SIM_KIND;

    fn kind_sections(&self, inputs: &[&Input]) -> Result<Vec<Section>, String> {
        let datas = decoded(inputs, |r| {
            sim_data(r).map_err(|e| format!("not a dfs.sim record: {e}"))
        })?;
        let views: Vec<View<'_>> = datas.iter().map(|(l, d)| View::of_sim(l, d)).collect();
        build(Runtime::Sim, &views)
    }
}

impl<'a> View<'a> {
    pub(crate) fn of_sim(label: &'a str, d: &'a SimData) -> View<'a> {
        let row = sim_summary(d);
        let n = &d.config.net;
        let mut extra = vec![
            (
                "network model".to_string(),
                format!(
                    "injection {} GB/s, ejection {} GB/s per node, latency {} ns + jitter (mean {} ns), {} writes in flight, processing {} ns",
                    n.inj_gbs, n.ej_gbs, n.latency_ns, n.jitter_ns, n.max_inflight, n.processing_ns
                ),
            ),
            (
                "noise and clocks".to_string(),
                format!(
                    "bandwidth noise {:.0} % every {} ns; clock offsets up to ±{} ns, drift up to ±{} ppm",
                    n.noise * 100.0,
                    n.noise_period_ns,
                    n.max_clock_offset_ns,
                    n.max_drift_ppm
                ),
            ),
            ("seed".to_string(), d.config.seed.to_string()),
        ];
        if let (Some(_), crate::Mode::Dfs) = (&d.limits, d.config.mode) {
            extra.push((
                "pacing".to_string(),
                format!(
                    "{} paced intervals after the warm-up; {:.2} % of the contributions sent as catch-up (unpaced, after their interval's proposed end)",
                    d.paced_intervals(),
                    d.catch_up_pct()
                ),
            ));
        }
        if let Some(x) = &d.senders {
            extra.push((
                "concurrent senders per compute node".to_string(),
                format!(
                    "after the warm-up, over samples and compute nodes: mean {:.2}, median {}, p90 {}, max {}; no sender {:.1} % of the time",
                    x.mean, x.p50, x.p90, x.max, x.idle_pct
                ),
            ));
        }
        if let Some(l) = &d.limits {
            extra.push((
                "sender limits".to_string(),
                format!(
                    "at the writes-in-flight cap ({} outstanding writes per input) {:.1} % of the time; {} contributions refused for want of credits ({} ring slots per input)",
                    n.max_inflight,
                    l.at_cap_pct,
                    l.credit_refusals,
                    d.config.topology.slots_per_input
                ),
            ));
        }
        let join = |v: Vec<String>| v.join("; ");
        if !d.config.slow.is_empty() {
            extra.push((
                "slow nodes".into(),
                join(
                    d.config
                        .slow
                        .iter()
                        .map(|n| {
                            let role = match n.role {
                                crate::sim::Role::Input => "input",
                                crate::sim::Role::Compute => "compute",
                            };
                            format!("{role} {} at {:.0} %", n.index, n.factor * 100.0)
                        })
                        .collect(),
                ),
            ));
        }
        if !d.config.drops.is_empty() {
            extra.push((
                "bandwidth drops".into(),
                join(
                    d.config
                        .drops
                        .iter()
                        .map(|b| {
                            let when = match b.window {
                                crate::sim::DropWindow::Intervals { first, last } => {
                                    format!("intervals {first}–{last}")
                                }
                                crate::sim::DropWindow::Time { from_ns, to_ns } => format!(
                                    "{} to {}",
                                    ms(from_ns as f64 / 1e6),
                                    ms(to_ns as f64 / 1e6)
                                ),
                            };
                            format!("{when} at {:.0} % bandwidth", b.factor * 100.0)
                        })
                        .collect(),
                ),
            ));
        }
        if !d.config.dde_faults.is_empty() {
            extra.push((
                "DDE faults".into(),
                join(
                    d.config
                        .dde_faults
                        .iter()
                        .map(|k| {
                            format!(
                                "replica {} stopped at {}{}",
                                k.replica,
                                ms(k.kill_ns as f64 / 1e6),
                                k.restart_ns
                                    .map(|r| format!(", restarted at {}", ms(r as f64 / 1e6)))
                                    .unwrap_or_default()
                            )
                        })
                        .collect(),
                ),
            ));
        }
        View {
            label,
            mode: d.config.mode,
            topology: d.config.topology,
            params: d.config.params,
            warmup_ts: d.warmup_ts,
            completion: d.completion_ms,
            var_ms2: d.completion_var_ms2,
            bandwidth_gbs: d.steady_bandwidth_gbs,
            bandwidth_all_gbs: d.bandwidth_gbs,
            reference: Some((
                d.nominal_gbs,
                "nominal injection (inputs × injection bandwidth)",
            )),
            duration_ms: d.duration_ms,
            intervals: &d.intervals,
            fill: fill_series(d),
            fill_samples: &d.fill,
            fill_by_rank: &d.fill_by_rank,
            acc: Accounting {
                time_slices: d.time_slices,
                expected: d.time_slices * d.config.topology.inputs as u64,
                sent: d.sent,
                counters: d.compute,
                lost: row.lost,
                incomplete: d.time_slices.saturating_sub(d.compute.completed),
            },
            ie: d.ie,
            dde: d.dde,
            dde_killed: None,
            extra,
            sim: Some(d),
        }
    }
}
