//! The frame every chart type (stacked bars, error bars, box plots, line charts) shares:
//! caption, margin and type sizes, so they are set in one place.

use super::error::{draw_err, PlotError};
use super::font::FAMILY;
use plotters::chart::{ChartBuilder, MeshStyle};
use plotters::coord::ranged1d::{Ranged, ValueFormatter};
use plotters::coord::Shift;
use plotters::prelude::{DrawingArea, DrawingBackend};

/// Caption size, pixels.
const CAPTION_PX: u32 = 24;
/// Tick label size, pixels.
const LABEL_PX: u32 = 15;
/// Axis description size, pixels.
const DESC_PX: u32 = 17;
/// Margin around the chart, pixels.
const MARGIN_PX: u32 = 15;

/// A chart builder on `area` with the chart caption `title`, the chart margin and label
/// areas of `x_area` (below) and `y_area` (left) pixels.
pub(crate) fn chart_builder<'a, 'b, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, Shift>,
    title: &str,
    (x_area, y_area): (u32, u32),
) -> ChartBuilder<'a, 'b, DB> {
    let mut b = ChartBuilder::on(area);
    b.caption(title, (FAMILY, CAPTION_PX))
        .margin(MARGIN_PX)
        .x_label_area_size(x_area)
        .y_label_area_size(y_area);
    b
}

/// Draws `mesh` (formatters and descriptions already set) with the chart type sizes.
pub(crate) fn draw_mesh<X, Y, DB>(mesh: &mut MeshStyle<'_, '_, X, Y, DB>) -> Result<(), PlotError>
where
    X: Ranged + ValueFormatter<<X as Ranged>::ValueType>,
    Y: Ranged + ValueFormatter<<Y as Ranged>::ValueType>,
    DB: DrawingBackend,
{
    mesh.label_style((FAMILY, LABEL_PX))
        .axis_desc_style((FAMILY, DESC_PX))
        .draw()
        .map_err(draw_err)
}
