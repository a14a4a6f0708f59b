//! Draws the document model's figure specifications ([`Figure`]): one entry point for the
//! HTML report (SVG text) and one for files (`--plot`, `--figures`, experiments' figure
//! files), so both always draw the same specification the same way.

use crate::boxline::{
    render_boxplot_png, render_boxplot_svg_string, render_lines_png, render_lines_svg_string,
};
use crate::charts::{
    render_errorbars, render_errorbars_svg_string, render_stacked, render_stacked_svg_string,
};
use crate::plot::{render, render_svg_string, ImageFormat, PlotError, PlotSpec};
use crate::timeline::{render_timeline, render_timeline_svg_string};
use crate::xy::{render_xy, render_xy_svg_string};
use latlab_core::doc::Figure;
use std::path::Path;

/// The figure as an SVG document (a distribution is drawn as a static CCDF/CDF; the HTML
/// report draws distributions interactively instead).
///
/// # Errors
/// The figure type's [`PlotError`]: [`PlotError::NoData`] when nothing is drawable,
/// [`PlotError::NoFont`], [`PlotError::Draw`].
pub fn figure_svg(f: &Figure) -> Result<String, PlotError> {
    match f {
        Figure::Distribution {
            title,
            kind,
            curves,
        } => render_svg_string(
            curves,
            &PlotSpec {
                kind: *kind,
                title: title.clone(),
                ..PlotSpec::default()
            },
        ),
        Figure::Stacked { spec, bars, .. } => render_stacked_svg_string(bars, spec),
        Figure::ErrorBars { spec, series, .. } => render_errorbars_svg_string(series, spec),
        Figure::Xy { spec, series, .. } => render_xy_svg_string(series, spec),
        Figure::Timeline { spec, rows, .. } => render_timeline_svg_string(rows, spec),
        Figure::Boxes {
            spec, boxes, log_y, ..
        } => render_boxplot_svg_string(boxes, spec, *log_y),
        Figure::Lines { spec, chart, .. } => render_lines_svg_string(chart, spec),
        Figure::Svg { svg, .. } => Ok(svg.clone()),
    }
}

/// The [`latlab_core::doc::FigureSink`] that draws into files with [`write_figure`].
#[derive(Clone, Copy, Debug, Default)]
pub struct FileFigures;

impl latlab_core::doc::FigureSink for FileFigures {
    fn draw(&self, figure: &Figure, path: &Path) -> Result<(), latlab_core::doc::DrawError> {
        write_figure(figure, path).map_err(|e| format!("drawing {}: {e}", path.display()).into())
    }
}

/// Draws the figure into `path`, SVG or PNG by extension (a finished SVG document: SVG
/// only).
///
/// # Errors
/// [`PlotError::UnknownFormat`] for another extension, [`PlotError::Draw`] for PNG where
/// only SVG is drawn, the figure type's drawing errors, and write errors.
pub fn write_figure(f: &Figure, path: &Path) -> Result<(), PlotError> {
    let format = ImageFormat::from_path(path)?;
    match f {
        Figure::Distribution {
            title,
            kind,
            curves,
        } => render(
            curves,
            &PlotSpec {
                kind: *kind,
                title: title.clone(),
                ..PlotSpec::default()
            },
            path,
        ),
        Figure::Stacked { spec, bars, .. } => render_stacked(bars, spec, path),
        Figure::ErrorBars { spec, series, .. } => render_errorbars(series, spec, path),
        Figure::Xy { spec, series, .. } => render_xy(series, spec, path),
        Figure::Timeline { spec, rows, .. } => render_timeline(rows, spec, path),
        Figure::Boxes {
            spec, boxes, log_y, ..
        } => match format {
            ImageFormat::Svg => crate::plot::write_image(path, figure_svg(f)?.as_bytes()),
            ImageFormat::Png => {
                crate::plot::write_image(path, &render_boxplot_png(boxes, spec, *log_y)?)
            }
        },
        Figure::Lines { spec, chart, .. } => match format {
            ImageFormat::Svg => crate::plot::write_image(path, figure_svg(f)?.as_bytes()),
            ImageFormat::Png => crate::plot::write_image(path, &render_lines_png(chart, spec)?),
        },
        Figure::Svg { svg, .. } => match format {
            ImageFormat::Svg => crate::plot::write_image(path, svg.as_bytes()),
            ImageFormat::Png => Err(PlotError::Draw(format!(
                "{}: a finished SVG document is written as SVG only; use a file name ending in .svg",
                path.display()
            ))),
        },
    }
}
