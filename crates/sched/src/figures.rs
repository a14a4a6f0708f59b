//! From a run to figures: the rows of the execution timeline (the paper's Figure 3), for
//! [`latlab_report::timeline`].

use crate::result::SchedRunData;
use crate::spec::Workload;
use crate::trace::Trace;
use latlab_report::timeline::TimelineRow;
use std::path::Path;

/// One row per thread (label: number, model, policy), deadline misses marked, then, when
/// `per_cpu`, one row per CPU showing when any traced thread ran there. Pure.
pub fn timeline_rows(d: &SchedRunData, trace: &Trace, per_cpu: bool) -> Vec<TimelineRow> {
    let mut rows = Vec::new();
    for t in &d.threads {
        let id = t.spec.id;
        let cpu_periodic = matches!(t.spec.workload, Workload::CpuPeriodic { .. });
        let marks = trace
            .activations_of(id)
            .filter(|a| {
                !matches!(t.spec.workload, Workload::Lat { .. })
                    && !a.hit(cpu_periodic)
                    && a.deadline_ns <= t.spec.finish_ns.unwrap_or(d.spec.duration_ns)
            })
            .map(|a| a.deadline_ns as f64)
            .collect();
        let prio = if t.spec.reservation.is_some() {
            "DL".to_owned()
        } else {
            t.spec.priority.name().to_owned()
        };
        rows.push(TimelineRow {
            label: format!("{id}: {} {prio}", t.spec.workload.name()),
            blocks: trace
                .blocks_of(id)
                .map(|b| (b.start_ns as f64, b.end_ns as f64))
                .collect(),
            marks,
        });
    }
    if per_cpu {
        let mut cpus: Vec<u32> = trace.blocks.iter().map(|b| b.cpu).collect();
        cpus.sort_unstable();
        cpus.dedup();
        for c in cpus {
            rows.push(TimelineRow {
                label: format!("CPU {c}"),
                blocks: trace
                    .blocks
                    .iter()
                    .filter(|b| b.cpu == c)
                    .map(|b| (b.start_ns as f64, b.end_ns as f64))
                    .collect(),
                marks: Vec::new(),
            });
        }
    }
    rows
}

/// The points of an empirical CDF of `v` (ns): (value, fraction at or below it), values
/// sorted and at least 1 (for a log axis). Pure.
pub fn cdf_points(v: &[u64]) -> Vec<(f64, f64)> {
    let mut v = v.to_vec();
    v.sort_unstable();
    let n = v.len() as f64;
    v.iter()
        .enumerate()
        .map(|(i, &x)| (x.max(1) as f64, (i + 1) as f64 / n))
        .collect()
}

/// The error a [`Draw`] implementation returns.
pub type DrawError = Box<dyn std::error::Error + Send + Sync>;

/// Draws the figures of runs and of the experiment. This crate measures and says what to
/// draw; the caller (the CLI, through `latlab-report`) draws, so that plotting stays out
/// of the measuring crate.
pub trait Draw {
    /// The execution timeline of a run over `window` (ns from its start), with a row per
    /// CPU too when `cpus`, `width` pixels wide, into `path` (format from its extension).
    fn timeline(
        &self,
        d: &SchedRunData,
        trace: &Trace,
        path: &Path,
        window: (u64, u64),
        cpus: bool,
        width: u32,
    ) -> Result<(), DrawError>;

    /// Empirical CDFs of the named samples (ns; [`cdf_points`] gives the points), titled
    /// `title`, into `path`.
    fn cdf(
        &self,
        title: &str,
        samples: &[(String, Vec<u64>)],
        path: &Path,
    ) -> Result<(), DrawError>;

    /// The cost of a context switch against working set (paper, Figure 5), into `path`.
    fn cache_cost(
        &self,
        rows: &[crate::cache::SizeRow],
        threads: u32,
        path: &Path,
    ) -> Result<(), DrawError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cdf_points_are_sorted_fractions_and_never_zero() {
        assert_eq!(
            cdf_points(&[3, 0, 2, 2]),
            vec![(1.0, 0.25), (2.0, 0.5), (2.0, 0.75), (3.0, 1.0)]
        );
        assert!(cdf_points(&[]).is_empty());
    }
}
