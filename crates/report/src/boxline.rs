//! Figure types beyond latency distributions: grouped box plots (five-number summaries per
//! category and series, e.g. completion durations per node count and mode) and line charts
//! with optional shaded x ranges (e.g. proposed vs actual interval durations around a
//! bandwidth drop, buffer fill over time). SVG or PNG by extension, written atomically.

use crate::plot::{ImageFormat, PlotError};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::Path;

/// A five-number summary drawn as a box (p10–p90), whiskers (min–max) and a median line.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BoxStats {
    /// Minimum.
    pub min: f64,
    /// 10th percentile.
    pub p10: f64,
    /// Median.
    pub median: f64,
    /// 90th percentile.
    pub p90: f64,
    /// Maximum.
    pub max: f64,
}

/// One series of boxes (one colour), one box per category it has data for.
#[derive(Clone, Debug, PartialEq)]
pub struct BoxSeries {
    /// Legend label.
    pub label: String,
    /// (category index, statistics).
    pub boxes: Vec<(usize, BoxStats)>,
}

/// A grouped box plot.
#[derive(Clone, Debug, PartialEq)]
pub struct BoxChart {
    /// Title.
    pub title: String,
    /// Category names along x.
    pub categories: Vec<String>,
    /// X axis label.
    pub x_label: String,
    /// Y axis label.
    pub y_label: String,
    /// Logarithmic y axis.
    pub log_y: bool,
    /// The series.
    pub series: Vec<BoxSeries>,
}

/// One line (optionally with point markers).
#[derive(Clone, Debug, PartialEq)]
pub struct LineSeries {
    /// Legend label.
    pub label: String,
    /// Points (x, y).
    pub points: Vec<(f64, f64)>,
    /// Draw a marker at every point.
    pub markers: bool,
}

/// A line chart.
#[derive(Clone, Debug, PartialEq)]
pub struct LineChart {
    /// Title.
    pub title: String,
    /// X axis label.
    pub x_label: String,
    /// Y axis label.
    pub y_label: String,
    /// The lines.
    pub series: Vec<LineSeries>,
    /// Shaded x ranges with a label (e.g. a bandwidth drop).
    pub shaded: Vec<(f64, f64, String)>,
    /// Start the y axis at 0.
    pub y_from_zero: bool,
    /// Logarithmic y axis.
    pub log_y: bool,
}

const SIZE: (u32, u32) = (960, 560);
const PALETTE: [RGBColor; 6] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
];

fn err<E: std::fmt::Debug>(e: E) -> PlotError {
    PlotError::Draw(format!("{e:?}"))
}

fn ylog(v: f64, log: bool) -> f64 {
    if log {
        v.max(1e-12).log10()
    } else {
        v
    }
}

fn y_label_fmt(v: f64, log: bool) -> String {
    let x = if log { 10f64.powf(v) } else { v };
    let a = x.abs();
    if log && a > 0.0 {
        // three significant digits: log ticks fall on arbitrary values
        let decimals = (2 - a.log10().floor() as i32).max(0) as usize;
        return format!("{x:.decimals$}");
    }
    if a == 0.0 {
        "0".into()
    } else if a >= 100.0 {
        format!("{x:.0}")
    } else if a >= 1.0 {
        format!("{x:.3}")
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
    } else if a >= 0.001 {
        format!("{x:.4}")
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
    } else {
        format!("{x:.2e}")
    }
}

fn y_range(vals: impl Iterator<Item = f64>, log: bool, from_zero: bool) -> Option<(f64, f64)> {
    let v: Vec<f64> = vals
        .filter(|v| v.is_finite() && (!log || *v > 0.0))
        .map(|v| ylog(v, log))
        .collect();
    if v.is_empty() {
        return None;
    }
    let mut lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let mut hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if from_zero && !log {
        lo = lo.min(0.0);
    }
    if hi - lo < 1e-9 {
        hi = lo + if log { 1.0 } else { lo.abs().max(1.0) * 0.1 };
    }
    let pad = (hi - lo) * 0.06;
    Some((
        if from_zero && !log && lo >= 0.0 {
            lo
        } else {
            lo - pad
        },
        hi + pad,
    ))
}

fn draw_boxes<DB: DrawingBackend>(
    c: &BoxChart,
    root: &DrawingArea<DB, Shift>,
) -> Result<(), PlotError> {
    root.fill(&WHITE).map_err(err)?;
    let (lo, hi) = y_range(
        c.series
            .iter()
            .flat_map(|s| s.boxes.iter().flat_map(|(_, b)| [b.min, b.max])),
        c.log_y,
        !c.log_y,
    )
    .ok_or(PlotError::NoData)?;
    let n = c.categories.len().max(1);
    let mut chart = ChartBuilder::on(root)
        .caption(&c.title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(48)
        .y_label_area_size(80)
        .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), lo..hi)
        .map_err(err)?;
    let cats = c.categories.clone();
    let log = c.log_y;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(n)
        .x_label_formatter(&|x| {
            let k = x.round();
            if (x - k).abs() < 1e-6 && k >= 0.0 && (k as usize) < cats.len() {
                cats[k as usize].clone()
            } else {
                String::new()
            }
        })
        .y_label_formatter(&|v| y_label_fmt(*v, log))
        .x_desc(&c.x_label)
        .y_desc(&c.y_label)
        .label_style(("sans-serif", 15))
        .draw()
        .map_err(err)?;
    let ns = c.series.len().max(1);
    let slot = 0.8 / ns as f64;
    for (si, s) in c.series.iter().enumerate() {
        let col = PALETTE[si % PALETTE.len()];
        let mut first = true;
        for &(k, b) in &s.boxes {
            let x = k as f64 - 0.4 + slot * (si as f64 + 0.5);
            let w = slot * 0.35;
            let y = |v: f64| ylog(v, log);
            chart
                .draw_series(std::iter::once(PathElement::new(
                    vec![(x, y(b.min)), (x, y(b.max))],
                    col.stroke_width(1),
                )))
                .map_err(err)?;
            for v in [b.min, b.max] {
                chart
                    .draw_series(std::iter::once(PathElement::new(
                        vec![(x - w * 0.6, y(v)), (x + w * 0.6, y(v))],
                        col.stroke_width(1),
                    )))
                    .map_err(err)?;
            }
            let rect = chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(x - w, y(b.p10)), (x + w, y(b.p90))],
                    col.mix(0.35).filled(),
                )))
                .map_err(err)?;
            if first {
                rect.label(&s.label).legend(move |(px, py)| {
                    Rectangle::new([(px, py - 6), (px + 14, py + 6)], col.mix(0.6).filled())
                });
                first = false;
            }
            chart
                .draw_series(std::iter::once(PathElement::new(
                    vec![(x - w, y(b.median)), (x + w, y(b.median))],
                    col.stroke_width(3),
                )))
                .map_err(err)?;
        }
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 15))
        .draw()
        .map_err(err)?;
    root.present().map_err(err)
}

fn draw_lines<DB: DrawingBackend>(
    c: &LineChart,
    root: &DrawingArea<DB, Shift>,
) -> Result<(), PlotError> {
    root.fill(&WHITE).map_err(err)?;
    let xs = c
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .filter(|x| x.is_finite());
    let (mut xlo, mut xhi) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
        (a.min(x), b.max(x))
    });
    if !xlo.is_finite() {
        return Err(PlotError::NoData);
    }
    if xhi - xlo < 1e-12 {
        xhi = xlo + 1.0;
        xlo -= 1.0;
    }
    let (lo, hi) = y_range(
        c.series.iter().flat_map(|s| s.points.iter().map(|p| p.1)),
        c.log_y,
        c.y_from_zero,
    )
    .ok_or(PlotError::NoData)?;
    let log = c.log_y;
    let mut chart = ChartBuilder::on(root)
        .caption(&c.title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(48)
        .y_label_area_size(80)
        .build_cartesian_2d(xlo..xhi, lo..hi)
        .map_err(err)?;
    chart
        .configure_mesh()
        .y_label_formatter(&|v| y_label_fmt(*v, log))
        .x_desc(&c.x_label)
        .y_desc(&c.y_label)
        .label_style(("sans-serif", 15))
        .draw()
        .map_err(err)?;
    for (a, b, label) in &c.shaded {
        let col = RGBColor(0x99, 0x99, 0x99);
        chart
            .draw_series(std::iter::once(Rectangle::new(
                [(*a, lo), (*b, hi)],
                col.mix(0.2).filled(),
            )))
            .map_err(err)?
            .label(label)
            .legend(move |(px, py)| {
                Rectangle::new([(px, py - 6), (px + 14, py + 6)], col.mix(0.4).filled())
            });
    }
    for (si, s) in c.series.iter().enumerate() {
        let col = PALETTE[si % PALETTE.len()];
        let pts: Vec<(f64, f64)> = s
            .points
            .iter()
            .filter(|p| p.0.is_finite() && p.1.is_finite() && (!log || p.1 > 0.0))
            .map(|p| (p.0, ylog(p.1, log)))
            .collect();
        chart
            .draw_series(plotters::series::LineSeries::new(
                pts.clone(),
                col.stroke_width(2),
            ))
            .map_err(err)?
            .label(&s.label)
            .legend(move |(px, py)| {
                PathElement::new(vec![(px, py), (px + 16, py)], col.stroke_width(2))
            });
        if s.markers {
            chart
                .draw_series(pts.iter().map(|p| Circle::new(*p, 3, col.filled())))
                .map_err(err)?;
        }
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 15))
        .draw()
        .map_err(err)?;
    root.present().map_err(err)
}

fn write_with<F>(
    path: &Path,
    draw_svg: F,
    draw_png: impl FnOnce(&mut Vec<u8>) -> Result<(), PlotError>,
) -> Result<(), PlotError>
where
    F: FnOnce(&mut String) -> Result<(), PlotError>,
{
    let bytes = match ImageFormat::from_path(path)? {
        ImageFormat::Svg => {
            let mut s = String::new();
            draw_svg(&mut s)?;
            s.into_bytes()
        }
        ImageFormat::Png => {
            let (w, h) = SIZE;
            let mut rgb = vec![0u8; w as usize * h as usize * 3];
            draw_png(&mut rgb)?;
            crate::plot::encode_png(&rgb, w, h)?
        }
    };
    crate::plot::write_image(path, &bytes)
}

/// Draws a grouped box plot into `path` (`.svg` or `.png`).
///
/// # Errors
/// As [`crate::render`].
pub fn render_boxes(c: &BoxChart, path: &Path) -> Result<(), PlotError> {
    ImageFormat::from_path(path)?;
    crate::plot::font::ensure_font()?;
    write_with(
        path,
        |s| draw_boxes(c, &SVGBackend::with_string(s, SIZE).into_drawing_area()),
        |rgb| {
            draw_boxes(
                c,
                &BitMapBackend::with_buffer(rgb, SIZE).into_drawing_area(),
            )
        },
    )
}

/// Draws a line chart into `path` (`.svg` or `.png`).
///
/// # Errors
/// As [`crate::render`].
pub fn render_lines(c: &LineChart, path: &Path) -> Result<(), PlotError> {
    ImageFormat::from_path(path)?;
    crate::plot::font::ensure_font()?;
    write_with(
        path,
        |s| draw_lines(c, &SVGBackend::with_string(s, SIZE).into_drawing_area()),
        |rgb| {
            draw_lines(
                c,
                &BitMapBackend::with_buffer(rgb, SIZE).into_drawing_area(),
            )
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(m: f64) -> BoxStats {
        BoxStats {
            min: m * 0.5,
            p10: m * 0.8,
            median: m,
            p90: m * 1.3,
            max: m * 2.0,
        }
    }

    #[test]
    fn box_and_line_charts_render_svg_with_labels() {
        let dir = tempfile::tempdir().unwrap();
        let chart = BoxChart {
            title: "completion".into(),
            categories: vec!["64".into(), "128".into()],
            x_label: "nodes".into(),
            y_label: "ms".into(),
            log_y: true,
            series: vec![
                BoxSeries {
                    label: "best effort".into(),
                    boxes: vec![(0, b(3.0)), (1, b(5.0))],
                },
                BoxSeries {
                    label: "DFS".into(),
                    boxes: vec![(0, b(0.1)), (1, b(0.2))],
                },
            ],
        };
        let p = dir.path().join("b.svg");
        render_boxes(&chart, &p).unwrap();
        let s = std::fs::read_to_string(&p).unwrap();
        assert!(s.contains("best effort") && s.contains("DFS") && s.contains("128"));
        let lines = LineChart {
            title: "intervals".into(),
            x_label: "interval".into(),
            y_label: "ms".into(),
            series: vec![LineSeries {
                label: "proposed".into(),
                points: vec![(0.0, 1.0), (1.0, 2.0), (2.0, 1.5)],
                markers: true,
            }],
            shaded: vec![(0.5, 1.5, "drop".into())],
            y_from_zero: true,
            log_y: false,
        };
        let p = dir.path().join("l.png");
        render_lines(&lines, &p).unwrap();
        assert!(std::fs::metadata(&p).unwrap().len() > 1000);
        // nothing to plot is an error, not an empty picture
        let empty = LineChart {
            series: vec![],
            ..lines
        };
        assert!(matches!(
            render_lines(&empty, &dir.path().join("e.svg")),
            Err(PlotError::NoData)
        ));
        assert!(render_boxes(&chart, &dir.path().join("x.txt")).is_err());
    }
}
