//! The sections of `dfs.run` results (`latlab dfs run` under mpirun; feature `mpi`): the
//! same sections as `dfs.sim`, from the MPI runtime's data.

use super::summary::build;
use super::view::{decoded, Accounting, Runtime, View};
use crate::mpirun::{RunData, RESULT_KIND as RUN_KIND};
use latlab_core::doc::Input;
use latlab_core::doc::{KindSections, Section};
use latlab_core::results::ResultFile;

/// Sections for `dfs.run` results (`latlab dfs run` under mpirun).
#[derive(Clone, Copy, Debug, Default)]
pub struct RunSections;

impl<'a> View<'a> {
    pub(crate) fn of_run(label: &'a str, d: &'a RunData) -> View<'a> {
        let c = &d.config;
        let mut extra = vec![
            ("MPI ranks".to_string(), d.ranks.to_string()),
            (
                "DDE replicas".to_string(),
                match c.dde_replicas {
                    0 => "one on every compute node".to_string(),
                    n => n.to_string(),
                },
            ),
            (
                "injected clocks".to_string(),
                format!(
                    "rank r runs r × {} ns ahead and drifts r × {} ppm",
                    c.clock_skew_ns, c.drift_ppm
                ),
            ),
        ];
        if let Some((replica, interval)) = c.kill_dde {
            extra.push((
                "DDE kill".into(),
                format!("replica {replica} stopped at the report of interval {interval}"),
            ));
        }
        View {
            label,
            mode: c.mode,
            topology: c.topology,
            params: c.params,
            warmup_ts: d.warmup_ts,
            completion: d.completion_ms,
            var_ms2: d.completion_var_ms2,
            bandwidth_gbs: d.bandwidth_gbs,
            bandwidth_all_gbs: d.bandwidth_gbs,
            reference: None,
            duration_ms: d.duration_ms,
            intervals: &d.intervals,
            fill: d
                .fill
                .iter()
                .map(|s| (s.t_ms, s.mean, s.fill.median, s.fill.max))
                .collect(),
            fill_samples: &d.fill,
            fill_by_rank: &[],
            acc: Accounting {
                time_slices: d.time_slices,
                expected: d.expected,
                sent: d.sent,
                counters: d.compute,
                lost: d.lost,
                incomplete: d.time_slices.saturating_sub(d.compute.completed),
            },
            ie: d.ie,
            dde: d.dde,
            dde_killed: Some(d.dde_killed),
            extra,
            sim: None,
        }
    }
}

/// The [`RunData`] of a `dfs.run` result.
fn run_data(r: &ResultFile) -> Result<RunData, String> {
    if r.kind != RUN_KIND {
        return Err(format!(
            "result kind is '{}', expected '{RUN_KIND}'",
            r.kind
        ));
    }
    serde_json::from_value(r.data.clone()).map_err(|e| e.to_string())
}

impl KindSections for RunSections {
    const KIND: &'static str = RUN_KIND;

    fn kind_sections(&self, inputs: &[&Input]) -> Result<Vec<Section>, String> {
        let datas = decoded(inputs, |r| {
            run_data(r).map_err(|e| format!("not a dfs.run record: {e}"))
        })?;
        let views: Vec<View<'_>> = datas.iter().map(|(l, d)| View::of_run(l, d)).collect();
        build(Runtime::Mpi, &views)
    }
}
