//! A value-versus-parameter figure with confidence intervals (e.g. the Hourglass paper's
//! Figure 5: cost per context switch versus working-set size, 95% intervals as error
//! bars). x may be logarithmic. SVG or PNG.

use crate::plot::draw::{draw_err, PALETTE};
use crate::plot::legend::{draw_legend, line_key, LegendStyle};
use crate::plot::{font, ImageFormat, PlotError};
use plotters::chart::SeriesLabelPosition;
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::Path;

pub use latlab_core::doc::figure::{XySeries, XySpec};

/// Series colours: the shared palette's blue, red, green and purple, in the order these
/// figures have always used.
const COLORS: [RGBColor; 4] = [PALETTE[0], PALETTE[3], PALETTE[2], PALETTE[4]];

/// `(min, max)` of one axis.
type Span = (f64, f64);

fn ranges(series: &[XySeries], x_log: bool) -> Result<(Span, Span), PlotError> {
    let pts: Vec<(f64, f64, f64)> = series
        .iter()
        .flat_map(|s| s.points.iter().copied())
        .filter(|p| p.0.is_finite() && p.1.is_finite() && (!x_log || p.0 > 0.0))
        .collect();
    if pts.is_empty() {
        return Err(PlotError::NoData);
    }
    let (mut x0, mut x1) = (f64::INFINITY, f64::NEG_INFINITY);
    let (mut y0, mut y1) = (0f64, f64::NEG_INFINITY);
    for (x, y, h) in pts {
        let h = if h.is_finite() { h } else { 0.0 };
        x0 = x0.min(x);
        x1 = x1.max(x);
        y0 = y0.min(y - h);
        y1 = y1.max(y + h);
    }
    if x1 <= x0 {
        x1 = x0 * 2.0 + 1.0;
    }
    if y1 <= y0 {
        y1 = y0 + 1.0;
    }
    let pad = (y1 - y0) * 0.05;
    Ok(((x0, x1), (y0 - pad, y1 + pad)))
}

fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    series: &[XySeries],
    spec: &XySpec,
) -> Result<(), PlotError>
where
    DB::ErrorType: 'static,
{
    font::ensure_font()?;
    root.fill(&WHITE).map_err(draw_err)?;
    let ((x0, x1), (y0, y1)) = ranges(series, spec.x_log)?;
    let mut b = ChartBuilder::on(root);
    b.caption(&spec.title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(45)
        .y_label_area_size(70);
    macro_rules! body {
        ($chart:expr) => {{
            let mut chart = $chart;
            chart
                .configure_mesh()
                .x_desc(spec.x_desc.as_str())
                .y_desc(spec.y_desc.as_str())
                .draw()
                .map_err(draw_err)?;
            for (i, s) in series.iter().enumerate() {
                let c = COLORS[i % COLORS.len()];
                let pts: Vec<(f64, f64, f64)> = s
                    .points
                    .iter()
                    .copied()
                    .filter(|p| p.0.is_finite() && p.1.is_finite() && (!spec.x_log || p.0 > 0.0))
                    .collect();
                chart
                    .draw_series(LineSeries::new(
                        pts.iter().map(|p| (p.0, p.1)),
                        c.stroke_width(2),
                    ))
                    .map_err(draw_err)?
                    .label(s.label.clone())
                    .legend(line_key(c.stroke_width(2), 18));
                chart
                    .draw_series(pts.iter().filter(|p| p.2.is_finite()).map(|p| {
                        PathElement::new(
                            vec![(p.0, p.1 - p.2), (p.0, p.1 + p.2)],
                            c.stroke_width(2),
                        )
                    }))
                    .map_err(draw_err)?;
                chart
                    .draw_series(pts.iter().map(|p| Circle::new((p.0, p.1), 3, c.filled())))
                    .map_err(draw_err)?;
            }
            if series.iter().any(|s| !s.label.is_empty()) {
                draw_legend(
                    &mut chart,
                    SeriesLabelPosition::MiddleRight,
                    &LegendStyle::chart(),
                )?;
            }
        }};
    }
    if spec.x_log {
        body!(b
            .build_cartesian_2d((x0..x1).log_scale(), y0..y1)
            .map_err(draw_err)?);
    } else {
        body!(b.build_cartesian_2d(x0..x1, y0..y1).map_err(draw_err)?);
    }
    root.present().map_err(draw_err)
}

/// Draws the figure as SVG text.
///
/// # Errors
/// [`PlotError::NoData`] without a finite point; [`PlotError::NoFont`]; [`PlotError::Draw`].
pub fn render_xy_svg_string(series: &[XySeries], spec: &XySpec) -> Result<String, PlotError> {
    crate::plot::svg_with((spec.width, spec.height), &|root| draw(root, series, spec))
}

/// Draws the figure into `path` (`.svg` or `.png`), atomically.
///
/// # Errors
/// As [`render_xy_svg_string`], plus [`PlotError::UnknownFormat`] and [`PlotError::Io`].
pub fn render_xy(series: &[XySeries], spec: &XySpec, path: &Path) -> Result<(), PlotError> {
    let bytes = match ImageFormat::from_path(path)? {
        ImageFormat::Svg => render_xy_svg_string(series, spec)?.into_bytes(),
        ImageFormat::Png => {
            crate::plot::png_with((spec.width, spec.height), &|root| draw(root, series, spec))?
        }
    };
    crate::plot::write_image(path, &bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_and_error_bars() {
        let s = vec![XySeries {
            label: "cost".into(),
            points: vec![
                (4.0, 1.0, 0.5),
                (64.0, 3.0, f64::INFINITY),
                (1024.0, 40.0, 10.0),
            ],
        }];
        let spec = XySpec {
            x_log: true,
            title: "t".into(),
            ..XySpec::default()
        };
        let svg = match render_xy_svg_string(&s, &spec) {
            Err(PlotError::NoFont { .. }) => return eprintln!("skipping: no font"),
            r => r.unwrap(),
        };
        assert_eq!(svg.matches("<circle").count(), 3, "{svg}");
        assert!(svg.contains("cost"));
        assert!(matches!(
            render_xy_svg_string(&[], &spec),
            Err(PlotError::NoData)
        ));
    }
}
