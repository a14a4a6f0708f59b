//! The figures of sched runs and of the hourglass experiment, drawn with `latlab-report`
//! for the library that says what to draw ([`latlab_sched::figures::Draw`]).

use anyhow::Context as _;
use latlab_core::units::format_ns;
use latlab_report::{Curve, PlotKind, PlotSpec};
use latlab_sched::cache::{self, SizeRow};
use latlab_sched::figures::{cdf_points, timeline_rows, Draw, DrawError};
use latlab_sched::result::SchedRunData;
use latlab_sched::trace::Trace;
use std::path::Path;

/// Draws through `latlab-report`.
pub struct Figures;

impl Draw for Figures {
    fn timeline(
        &self,
        d: &SchedRunData,
        trace: &Trace,
        path: &Path,
        (from, to): (u64, u64),
        cpus: bool,
        width: u32,
    ) -> Result<(), DrawError> {
        let spec = latlab_report::timeline::TimelineSpec {
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
        latlab_report::timeline::render_timeline(&timeline_rows(d, trace, cpus), &spec, path)
            .with_context(|| format!("drawing {}", path.display()))
            .map_err(Into::into)
    }

    fn cdf(
        &self,
        title: &str,
        samples: &[(String, Vec<u64>)],
        path: &Path,
    ) -> Result<(), DrawError> {
        let curves: Vec<Curve> = samples
            .iter()
            .map(|(label, v)| Curve {
                label: label.clone(),
                points: cdf_points(v),
            })
            .collect();
        let spec = PlotSpec {
            kind: PlotKind::Cdf,
            title: title.into(),
            ..PlotSpec::default()
        };
        Ok(latlab_report::render(&curves, &spec, path)?)
    }

    fn cache_cost(&self, rows: &[SizeRow], threads: u32, path: &Path) -> Result<(), DrawError> {
        latlab_report::xy::render_xy(
            &[cache::figure_series(rows)],
            &cache::figure_spec(threads),
            path,
        )
        .with_context(|| format!("drawing {}", path.display()))
        .map_err(Into::into)
    }
}
