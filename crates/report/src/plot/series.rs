//! Curves cleaned for plotting, and the CCDF y range they need.

use super::axis;
use super::error::PlotError;
use latlab_core::doc::figure::{Curve, PlotKind};

/// A curve after cleaning: plottable points only, sorted by x (ns).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Series {
    pub label: String,
    pub points: Vec<(f64, f64)>,
}

/// Drops unplottable points, clamps y into `[0, 1]`, sorts by x.
/// Fails with [`PlotError::NoData`] when nothing at all remains.
pub(crate) fn prepare(curves: &[Curve], kind: PlotKind) -> Result<Vec<Series>, PlotError> {
    let series: Vec<Series> = curves
        .iter()
        .map(|c| {
            let mut points: Vec<(f64, f64)> = c
                .points
                .iter()
                .copied()
                .filter(|&(x, y)| {
                    x.is_finite()
                        && x > 0.0
                        && y.is_finite()
                        && match kind {
                            PlotKind::Ccdf => y > 0.0,
                            PlotKind::Cdf => true,
                        }
                })
                .map(|(x, y)| (x, y.clamp(0.0, 1.0)))
                .collect();
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            Series {
                label: c.label.clone(),
                points,
            }
        })
        .collect();
    if series.iter().all(|s| s.points.is_empty()) {
        return Err(PlotError::NoData);
    }
    Ok(series)
}

/// The CCDF y-axis range for `curves`: from the smallest positive y, rounded
/// down to a power of ten, up to 1. `None` when no point is plottable.
pub(crate) fn ccdf_y_range(series: &[Series]) -> Option<(f64, f64)> {
    let min_y = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .filter(|y| *y > 0.0)
        .fold(f64::INFINITY, f64::min);
    if !min_y.is_finite() {
        return None;
    }
    let lo = axis::decade_floor(min_y).min(0.1);
    Some((lo, 1.0))
}
