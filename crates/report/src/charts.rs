//! Two figure types beside the latency CDFs, both as SVG or PNG files, or as SVG text for
//! embedding in a report ([`render_stacked_svg_string`], [`render_errorbars_svg_string`]):
//!
//! - [`render_stacked`]: horizontal stacked bars, e.g. how a UDP round trip decomposes into
//!   clock read, system calls, wake-ups and stack (`latlab host breakdown`); x in ns,
//!   shown in the unit [`choose_unit`] picks.
//! - [`render_errorbars`]: lines with error bars on a logarithmic x axis that also shows a
//!   zero (drawn one decade below the smallest positive x and labelled `0`), e.g. an
//!   application's normalised performance against added delay (the where-time experiment).

use crate::plot::draw::{draw_err, PALETTE};
use crate::plot::font::ensure_font;
use crate::plot::legend::{draw_legend, line_key, swatch_key, LegendStyle};
use crate::plot::style::{chart_builder, draw_mesh};
use crate::plot::{choose_unit, ImageFormat, PlotError, SvgDraw};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::Path;

pub use latlab_core::doc::figure::{ChartSpec, ErrorSeries, StackedBar};

fn check_size(w: u32, h: u32) -> Result<(), PlotError> {
    ensure_font()?;
    if !(200..=8000).contains(&w) || !(200..=8000).contains(&h) {
        return Err(PlotError::Draw(format!(
            "image size {w}x{h} out of range (200..=8000 pixels a side)"
        )));
    }
    Ok(())
}

/// Draws into an SVG string of `w` × `h` pixels.
fn svg_string((w, h): (u32, u32), draw: &SvgDraw<'_>) -> Result<String, PlotError> {
    check_size(w, h)?;
    crate::plot::svg_with((w, h), draw)
}

// One drawing function per backend (plotters' backends are distinct types).
#[allow(clippy::type_complexity)]
fn write_image(
    path: &Path,
    (w, h): (u32, u32),
    draw: &SvgDraw<'_>,
    draw_png: &dyn Fn(&DrawingArea<BitMapBackend<'_>, Shift>) -> Result<(), PlotError>,
) -> Result<(), PlotError> {
    check_size(w, h)?;
    let bytes = match ImageFormat::from_path(path)? {
        ImageFormat::Svg => svg_string((w, h), draw)?.into_bytes(),
        ImageFormat::Png => crate::plot::png_with((w, h), draw_png)?,
    };
    crate::plot::write_image(path, &bytes)
}

/// The distinct segment labels in first-seen order.
pub fn segment_labels(bars: &[StackedBar]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for b in bars {
        for (l, _) in &b.segments {
            if !out.contains(l) {
                out.push(l.clone());
            }
        }
    }
    out
}

/// Draws horizontal stacked bars into `path` (`.svg` or `.png`).
///
/// # Errors
/// [`PlotError::NoData`] when no bar has a positive segment; otherwise as
/// [`crate::render`].
pub fn render_stacked(bars: &[StackedBar], spec: &ChartSpec, path: &Path) -> Result<(), PlotError> {
    ImageFormat::from_path(path)?;
    let max = stacked_max(bars)?;
    write_image(
        path,
        (spec.width, spec.height),
        &|a| draw_stacked(a, bars, spec, max),
        &|a| draw_stacked(a, bars, spec, max),
    )
}

/// Draws horizontal stacked bars as SVG text (for embedding in a report).
///
/// # Errors
/// As [`render_stacked`], without the file errors.
pub fn render_stacked_svg_string(
    bars: &[StackedBar],
    spec: &ChartSpec,
) -> Result<String, PlotError> {
    let max = stacked_max(bars)?;
    svg_string((spec.width, spec.height), &|a| {
        draw_stacked(a, bars, spec, max)
    })
}

/// The longest bar, ns; [`PlotError::NoData`] when nothing positive would be drawn.
fn stacked_max(bars: &[StackedBar]) -> Result<f64, PlotError> {
    latlab_core::doc::figure::stacked_max(bars).ok_or(PlotError::NoData)
}

fn draw_stacked<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    bars: &[StackedBar],
    spec: &ChartSpec,
    max_ns: f64,
) -> Result<(), PlotError>
where
    DB::ErrorType: 'static,
{
    area.fill(&WHITE).map_err(draw_err)?;
    let unit = if spec.x_percent {
        crate::plot::TimeUnit {
            name: "%",
            divisor: 1.0,
        }
    } else {
        choose_unit(max_ns)
    };
    let labels = segment_labels(bars);
    let n = bars.len();
    let label_w = bars.iter().map(|b| b.label.len()).max().unwrap_or(4) as u32 * 9 + 20;
    let mut chart = chart_builder(area, &spec.title, (50, label_w))
        .build_cartesian_2d(0.0..max_ns / unit.divisor * 1.05, 0.0..n as f64)
        .map_err(draw_err)?;
    draw_mesh(
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(n * 2 + 1)
            .y_label_formatter(&|y| {
                let i = (*y - 0.5).round();
                if (y - 0.5 - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < n {
                    bars[n - 1 - i as usize].label.clone()
                } else {
                    String::new()
                }
            })
            .x_desc(format!("{} ({})", spec.x_desc, unit.name)),
    )?;
    for (li, label) in labels.iter().enumerate() {
        let colour = PALETTE[li % PALETTE.len()];
        let mut rects = Vec::new();
        for (bi, b) in bars.iter().enumerate() {
            let y = (n - 1 - bi) as f64;
            let mut x0 = 0.0;
            for (l, v) in &b.segments {
                let v = v.max(0.0) / unit.divisor;
                if l == label && v > 0.0 {
                    rects.push(Rectangle::new(
                        [(x0, y + 0.2), (x0 + v, y + 0.8)],
                        colour.filled(),
                    ));
                }
                x0 += v;
            }
        }
        chart
            .draw_series(rects)
            .map_err(draw_err)?
            .label(label.clone())
            .legend(swatch_key(colour.filled()));
    }
    draw_legend(
        &mut chart,
        plotters::chart::SeriesLabelPosition::LowerRight,
        &LegendStyle::chart(),
    )
}

/// Where x = 0 is drawn on the log axis: one decade below the smallest positive x.
pub fn zero_position(series: &[ErrorSeries]) -> f64 {
    let min_pos = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .filter(|x| *x > 0.0 && x.is_finite())
        .fold(f64::INFINITY, f64::min);
    if min_pos.is_finite() {
        10f64.powf(min_pos.log10().floor() - 1.0)
    } else {
        1.0
    }
}

/// Draws lines with vertical error bars on a log x axis into `path`.
///
/// # Errors
/// [`PlotError::NoData`] when there is no finite point; otherwise as [`crate::render`].
pub fn render_errorbars(
    series: &[ErrorSeries],
    spec: &ChartSpec,
    path: &Path,
) -> Result<(), PlotError> {
    ImageFormat::from_path(path)?;
    errorbars_have_data(series)?;
    write_image(
        path,
        (spec.width, spec.height),
        &|a| draw_errorbars(a, series, spec),
        &|a| draw_errorbars(a, series, spec),
    )
}

/// Draws lines with vertical error bars on a log x axis as SVG text (for embedding in a
/// report).
///
/// # Errors
/// As [`render_errorbars`], without the file errors.
pub fn render_errorbars_svg_string(
    series: &[ErrorSeries],
    spec: &ChartSpec,
) -> Result<String, PlotError> {
    errorbars_have_data(series)?;
    svg_string((spec.width, spec.height), &|a| {
        draw_errorbars(a, series, spec)
    })
}

fn errorbars_have_data(series: &[ErrorSeries]) -> Result<(), PlotError> {
    if latlab_core::doc::figure::errorbars_drawable(series) {
        Ok(())
    } else {
        Err(PlotError::NoData)
    }
}

fn draw_errorbars<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    series: &[ErrorSeries],
    spec: &ChartSpec,
) -> Result<(), PlotError>
where
    DB::ErrorType: 'static,
{
    area.fill(&WHITE).map_err(draw_err)?;
    let zero = zero_position(series);
    let xs = |x: f64| if x <= 0.0 { zero } else { x };
    let max_x = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .fold(zero, f64::max);
    let max_y = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.3.max(p.1)))
        .filter(|v| v.is_finite())
        .fold(1.0f64, f64::max)
        * 1.1;
    let x_hi = 10f64.powf(max_x.log10().ceil().max(zero.log10() + 1.0));
    let mut chart = chart_builder(area, &spec.title, (55, 70))
        .build_cartesian_2d((zero * 0.7..x_hi).log_scale(), 0.0..max_y)
        .map_err(draw_err)?;
    draw_mesh(
        chart
            .configure_mesh()
            .x_label_formatter(&|x| {
                if (x / zero - 1.0).abs() < 1e-6 {
                    "0".to_string()
                } else {
                    num_label(*x)
                }
            })
            .x_desc(spec.x_desc.clone())
            .y_desc(spec.y_desc.clone()),
    )?;
    for (i, s) in series.iter().enumerate() {
        let colour = PALETTE[i % PALETTE.len()];
        let mut pts: Vec<(f64, f64, f64, f64)> = s
            .points
            .iter()
            .filter(|p| finite(p))
            .map(|p| (xs(p.0), p.1, p.2, p.3))
            .collect();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        chart
            .draw_series(LineSeries::new(
                pts.iter().map(|p| (p.0, p.1)),
                colour.stroke_width(2),
            ))
            .map_err(draw_err)?
            .label(s.label.clone())
            .legend(line_key(colour.stroke_width(2), 20));
        chart
            .draw_series(pts.iter().flat_map(|p| {
                let (l, r) = (p.0 / 1.08, p.0 * 1.08);
                [
                    PathElement::new(vec![(p.0, p.2), (p.0, p.3)], colour.stroke_width(2)),
                    PathElement::new(vec![(l, p.2), (r, p.2)], colour.stroke_width(2)),
                    PathElement::new(vec![(l, p.3), (r, p.3)], colour.stroke_width(2)),
                ]
            }))
            .map_err(draw_err)?;
        chart
            .draw_series(
                pts.iter()
                    .map(|p| Circle::new((p.0, p.1), 4, colour.filled())),
            )
            .map_err(draw_err)?;
    }
    draw_legend(
        &mut chart,
        plotters::chart::SeriesLabelPosition::LowerLeft,
        &LegendStyle::chart(),
    )
}

fn num_label(x: f64) -> String {
    if x >= 1.0 {
        format!("{x:.0}")
    } else {
        let s = format!("{x:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

use latlab_core::doc::figure::errorbar_point_drawable as finite;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segment_labels_are_distinct_in_order() {
        let bars = vec![
            StackedBar {
                label: "a".into(),
                segments: vec![("x".into(), 1.0), ("y".into(), 2.0)],
            },
            StackedBar {
                label: "b".into(),
                segments: vec![("z".into(), 1.0), ("x".into(), 2.0)],
            },
        ];
        assert_eq!(segment_labels(&bars), vec!["x", "y", "z"]);
    }

    #[test]
    fn zero_sits_a_decade_below_the_smallest_x() {
        let s = vec![ErrorSeries {
            label: "m".into(),
            points: vec![
                (0.0, 1.0, 1.0, 1.0),
                (1.0, 0.9, 0.8, 1.0),
                (20.0, 0.5, 0.4, 0.6),
            ],
        }];
        assert_eq!(zero_position(&s), 0.1);
    }

    #[test]
    fn empty_inputs_are_no_data() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.svg");
        assert!(matches!(
            render_stacked(&[], &ChartSpec::default(), &p),
            Err(PlotError::NoData)
        ));
        assert!(matches!(
            render_errorbars(&[], &ChartSpec::default(), &p),
            Err(PlotError::NoData)
        ));
        assert!(matches!(
            render_stacked_svg_string(&[], &ChartSpec::default()),
            Err(PlotError::NoData)
        ));
        assert!(matches!(
            render_errorbars_svg_string(&[], &ChartSpec::default()),
            Err(PlotError::NoData)
        ));
    }

    #[test]
    fn svg_strings_hold_the_figures() {
        if crate::plot::font::skip_without_font() {
            return;
        }
        let bars = vec![StackedBar {
            label: "udp_loopback".into(),
            segments: vec![("read".into(), 20.0), ("stack".into(), 5_000.0)],
        }];
        let svg = render_stacked_svg_string(&bars, &ChartSpec::default()).unwrap();
        assert!(svg.contains("<svg") && svg.contains("udp_loopback") && svg.contains("<rect"));
        let s = vec![ErrorSeries {
            label: "nginx".into(),
            points: vec![(0.0, 1.0, 0.98, 1.02), (100.0, 0.5, 0.45, 0.55)],
        }];
        let svg = render_errorbars_svg_string(&s, &ChartSpec::default()).unwrap();
        assert!(svg.contains("<svg") && svg.contains("nginx"));
    }

    #[test]
    fn figures_are_written() {
        if crate::plot::font::skip_without_font() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let bars = vec![StackedBar {
            label: "udp".into(),
            segments: vec![("read".into(), 20.0), ("stack".into(), 5_000.0)],
        }];
        let p = dir.path().join("s.svg");
        render_stacked(&bars, &ChartSpec::default(), &p).unwrap();
        let svg = std::fs::read_to_string(&p).unwrap();
        assert!(svg.contains("stack") && svg.contains("<rect"));
        let s = vec![ErrorSeries {
            label: "memcached".into(),
            points: vec![(0.0, 1.0, 0.98, 1.02), (10.0, 0.8, 0.7, 0.9)],
        }];
        let p = dir.path().join("e.png");
        render_errorbars(&s, &ChartSpec::default(), &p).unwrap();
        assert!(std::fs::metadata(&p).unwrap().len() > 1000);
    }
}
