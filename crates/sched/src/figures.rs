//! From a run to figure specifications: the execution timeline (the paper's Figure 3),
//! CDFs of gaps and the cache-cost figure, drawn by whatever [`FigureSink`] the caller
//! passes.

use crate::result::SchedRunData;
use crate::spec::Workload;
use crate::trace::Trace;
use latlab_core::doc::{Curve, Figure, FigureSink, PlotKind, TimelineRow, TimelineSpec};
use latlab_core::units::format_ns;
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

pub use latlab_core::doc::DrawError;

/// `rows` reduced to what `width` pixel columns of `window` (ns) can show (see
/// [`TimelineRow::at_columns`]): at most `width` blocks and marks per row, so a figure's
/// specification and its drawing stay small however long the run. Pure.
pub fn rows_at_pixels(
    rows: &[TimelineRow],
    (from, to): (u64, u64),
    width: u32,
) -> Vec<TimelineRow> {
    rows.iter()
        .map(|r| r.at_columns((from as f64, to as f64), width as usize))
        .collect()
}

/// The execution timeline of a run over `window` (ns from its start), with a row per CPU
/// too when `cpus`, `width` pixels wide, at pixel resolution. Pure.
pub fn timeline_figure(
    d: &SchedRunData,
    trace: &Trace,
    (from, to): (u64, u64),
    cpus: bool,
    width: u32,
) -> Figure {
    let spec = TimelineSpec {
        title: format!(
            "latlab sched: {} thread(s), {} to {}",
            d.threads.len(),
            format_ns(from as f64),
            format_ns(to as f64)
        ),
        width,
        window: (from as f64, to as f64),
        ..Default::default()
    };
    Figure::Timeline {
        title: spec.title.clone(),
        spec,
        rows: rows_at_pixels(&timeline_rows(d, trace, cpus), (from, to), width),
    }
}

/// Empirical CDFs of the named samples (ns), titled `title`. Pure.
pub fn cdf_figure(title: &str, samples: &[(String, Vec<u64>)]) -> Figure {
    Figure::Distribution {
        title: title.into(),
        kind: PlotKind::Cdf,
        curves: samples
            .iter()
            .map(|(label, v)| Curve {
                label: label.clone(),
                points: cdf_points(v),
            })
            .collect(),
    }
}

/// The cost of a context switch against working set (paper, Figure 5). Pure.
pub fn cache_cost_figure(rows: &[crate::cache::SizeRow], threads: u32) -> Figure {
    let spec = crate::cache::figure_spec(threads);
    Figure::Xy {
        title: spec.title.clone(),
        spec,
        series: vec![crate::cache::figure_series(rows)],
    }
}

/// The figures of runs and of the experiment, drawn through whatever [`FigureSink`] the
/// caller passes (the CLI passes `latlab-report`'s): this crate says what to draw, never
/// draws. Every sink is a [`Draw`]; each method hands its figure to [`FigureSink::draw`].
pub trait Draw: FigureSink {
    /// [`timeline_figure`] into `path`.
    fn timeline(
        &self,
        d: &SchedRunData,
        trace: &Trace,
        path: &Path,
        window: (u64, u64),
        cpus: bool,
        width: u32,
    ) -> Result<(), DrawError> {
        self.draw(&timeline_figure(d, trace, window, cpus, width), path)
    }

    /// [`cdf_figure`] into `path`.
    fn cdf(
        &self,
        title: &str,
        samples: &[(String, Vec<u64>)],
        path: &Path,
    ) -> Result<(), DrawError> {
        self.draw(&cdf_figure(title, samples), path)
    }

    /// [`cache_cost_figure`] into `path`.
    fn cache_cost(
        &self,
        rows: &[crate::cache::SizeRow],
        threads: u32,
        path: &Path,
    ) -> Result<(), DrawError> {
        self.draw(&cache_cost_figure(rows, threads), path)
    }
}

impl<S: FigureSink + ?Sized> Draw for S {}

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
