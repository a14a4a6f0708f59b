//! Box plots and line charts, drawn to SVG text for the HTML report (first used by the
//! `latlab dfs` results, but nothing in them is specific to DFS):
//!
//! - [`render_boxplot_svg_string`]: five-number box plots (whiskers at min and max, box from
//!   p10 to p90, a bar at the median) per category, one box per series side by side, on a
//!   linear or logarithmic y axis — e.g. time-slice completion durations per node count for
//!   best effort and DFS (Fig. 6 of the DFS paper) or buffer fill per connection rank
//!   (Fig. 9).
//! - [`render_lines_svg_string`]: lines and/or markers over x, with optional shaded x
//!   ranges (e.g. when a bandwidth drop was active), explicit x ticks and logarithmic axes
//!   — e.g. proposed against actual interval durations (Fig. 8), buffer fill over time, or
//!   bandwidth against message size (Figs. 3–5).
//!
//! Logarithmic axes are drawn by plotting `log10` of the values on a linear axis with ticks
//! at decades, so both axis kinds share one drawing path.

use crate::plot::draw::{draw_err, PALETTE};
use crate::plot::font::ensure_font;
use crate::plot::legend::{draw_legend, line_key, swatch_key, LegendStyle};
use crate::plot::style::{chart_builder, draw_mesh};
use crate::plot::PlotError;
use plotters::chart::SeriesLabelPosition;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use plotters::coord::Shift;
use plotters::prelude::*;

pub use latlab_core::doc::figure::{BoxStat, ChartSpec, Corner, Line, LineChart, LineStyle};

/// Most category labels written under a box plot; with more categories every k-th is
/// labelled.
pub const MAX_CATEGORY_LABELS: usize = 24;

/// Draws box plots as SVG text.
///
/// # Errors
/// [`PlotError::NoData`] without a box of finite values (and, with `log_y`, a positive
/// maximum); [`PlotError::NoFont`]; [`PlotError::Draw`].
pub fn render_boxplot_svg_string(
    boxes: &[BoxStat],
    spec: &ChartSpec,
    log_y: bool,
) -> Result<String, PlotError> {
    let usable = drawable_boxes(boxes, spec, log_y)?;
    crate::plot::svg_with((spec.width, spec.height), &|root| {
        draw_boxes(root, &usable, spec, log_y)
    })
}

/// Draws box plots as a PNG image (the bytes of the file).
///
/// # Errors
/// As [`render_boxplot_svg_string`].
pub fn render_boxplot_png(
    boxes: &[BoxStat],
    spec: &ChartSpec,
    log_y: bool,
) -> Result<Vec<u8>, PlotError> {
    let usable = drawable_boxes(boxes, spec, log_y)?;
    crate::plot::png_with((spec.width, spec.height), &|root| {
        draw_boxes(root, &usable, spec, log_y)
    })
}

/// The boxes that can be drawn, once the size and the font are known to be usable:
/// what both box-plot outputs check before drawing.
fn drawable_boxes<'a>(
    boxes: &'a [BoxStat],
    spec: &ChartSpec,
    log_y: bool,
) -> Result<Vec<&'a BoxStat>, PlotError> {
    let usable: Vec<&BoxStat> = boxes
        .iter()
        .filter(|b| latlab_core::doc::figure::box_drawable(b, log_y))
        .collect();
    if usable.is_empty() {
        return Err(PlotError::NoData);
    }
    check_size(spec)?;
    ensure_font()?;
    Ok(usable)
}

fn check_size(spec: &ChartSpec) -> Result<(), PlotError> {
    let (w, h) = (spec.width, spec.height);
    if !(200..=8000).contains(&w) || !(200..=8000).contains(&h) {
        return Err(PlotError::Draw(format!(
            "image size {w}x{h} out of range (200..=8000 pixels a side)"
        )));
    }
    Ok(())
}

fn first_seen<'a>(it: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    for s in it {
        if !out.contains(&s) {
            out.push(s);
        }
    }
    out
}

/// A value axis: linear, or log10 of the values on a linear axis.
#[derive(Clone, Copy, Debug)]
struct Scale {
    log: bool,
    lo: f64,
    hi: f64,
}

impl Scale {
    /// Covers `values`; a linear axis starts at zero when `from_zero` and the values are
    /// not negative.
    fn new(values: impl Iterator<Item = f64>, log: bool, from_zero: bool) -> Option<Scale> {
        let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
        for v in values.filter(|v| v.is_finite() && (!log || *v > 0.0)) {
            lo = lo.min(v);
            hi = hi.max(v);
        }
        if !lo.is_finite() {
            return None;
        }
        if log {
            let (l, h) = (lo.log10().floor(), hi.log10().ceil());
            Some(Scale {
                log,
                lo: l,
                hi: if h > l { h } else { l + 1.0 },
            })
        } else {
            if from_zero && lo >= 0.0 {
                lo = 0.0;
            }
            let pad = if hi > lo {
                (hi - lo) * 0.05
            } else {
                hi.abs().max(1.0)
            };
            Some(Scale {
                log,
                lo: if from_zero && lo == 0.0 {
                    0.0
                } else {
                    lo - pad
                },
                hi: hi + pad,
            })
        }
    }

    /// Where `v` is drawn (values ≤ 0 on a log axis at its bottom).
    fn at(&self, v: f64) -> f64 {
        if self.log {
            if v > 0.0 {
                v.log10()
            } else {
                self.lo
            }
        } else {
            v
        }
    }

    /// Tick positions for a log axis (decades; with few decades also 2× and 5×).
    fn log_ticks(&self) -> Vec<f64> {
        let decades = (self.hi - self.lo).round() as i32;
        let mut t = Vec::new();
        for d in self.lo as i32..=self.hi as i32 {
            t.push(d as f64);
            if decades <= 3 && d < self.hi as i32 {
                t.push(d as f64 + 2f64.log10());
                t.push(d as f64 + 5f64.log10());
            }
        }
        t
    }

    fn label(&self, p: f64) -> String {
        if self.log {
            num_label(10f64.powf(p))
        } else {
            num_label(p)
        }
    }
}

/// A short number: no trailing zeros, at most three decimals, thousands as plain digits.
pub fn num_label(x: f64) -> String {
    if x.abs() >= 100.0 {
        format!("{x:.0}")
    } else {
        let s = format!("{x:.3}");
        let s = s.trim_end_matches('0').trim_end_matches('.');
        if s == "-0" {
            "0".into()
        } else {
            s.to_string()
        }
    }
}

fn draw_boxes<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    boxes: &[&BoxStat],
    spec: &ChartSpec,
    log_y: bool,
) -> Result<(), PlotError>
where
    DB::ErrorType: 'static,
{
    area.fill(&WHITE).map_err(draw_err)?;
    let cats = first_seen(boxes.iter().map(|b| b.category.as_str()));
    let series = first_seen(boxes.iter().map(|b| b.series.as_str()));
    let y =
        Scale::new(boxes.iter().flat_map(|b| b.values()), log_y, true).ok_or(PlotError::NoData)?;
    let n = cats.len();
    let every = n.div_ceil(MAX_CATEGORY_LABELS).max(1);
    let centres: Vec<f64> = (0..n).step_by(every).map(|i| i as f64 + 0.5).collect();
    let x_range = Keyed::new(0.0, n as f64, centres);
    let y_range = if log_y {
        Keyed::new(y.lo, y.hi, y.log_ticks())
    } else {
        Keyed::new(y.lo, y.hi, ticks(&y))
    };
    let mut chart = chart_builder(area, &spec.title, (55, 70))
        .build_cartesian_2d(x_range, y_range)
        .map_err(draw_err)?;
    draw_mesh(
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_label_formatter(&|x| {
                let i = (x - 0.5).round();
                if i >= 0.0 && (i as usize) < n {
                    cats[i as usize].to_string()
                } else {
                    String::new()
                }
            })
            .y_label_formatter(&|v| y.label(*v))
            .x_desc(spec.x_desc.clone())
            .y_desc(spec.y_desc.clone()),
    )?;
    let ns = series.len() as f64;
    let slot = 0.8 / ns;
    for (si, s) in series.iter().enumerate() {
        let colour = PALETTE[si % PALETTE.len()];
        let mut elems: Vec<PathElement<(f64, f64)>> = Vec::new();
        let mut rects = Vec::new();
        for b in boxes.iter().filter(|b| b.series == *s) {
            let ci = cats.iter().position(|c| *c == b.category).unwrap_or(0) as f64;
            let mid = ci + 0.1 + slot * (si as f64 + 0.5);
            let half = slot * 0.35;
            let (l, r) = (mid - half, mid + half);
            let [mn, p10, med, p90, mx] = b.values().map(|v| y.at(v));
            rects.push(Rectangle::new(
                [(l, p10), (r, p90)],
                colour.mix(0.35).filled(),
            ));
            rects.push(Rectangle::new([(l, p10), (r, p90)], colour.stroke_width(1)));
            elems.push(PathElement::new(
                vec![(l, med), (r, med)],
                BLACK.stroke_width(2),
            ));
            elems.push(PathElement::new(
                vec![(mid, mn), (mid, p10)],
                colour.stroke_width(1),
            ));
            elems.push(PathElement::new(
                vec![(mid, p90), (mid, mx)],
                colour.stroke_width(1),
            ));
            for w in [mn, mx] {
                elems.push(PathElement::new(
                    vec![(mid - half / 2.0, w), (mid + half / 2.0, w)],
                    colour.stroke_width(1),
                ));
            }
        }
        chart
            .draw_series(rects)
            .map_err(draw_err)?
            .label(s.to_string())
            .legend(swatch_key(colour.mix(0.6).filled()));
        chart.draw_series(elems).map_err(draw_err)?;
    }
    if series.len() > 1 || !series[0].is_empty() {
        draw_legend(
            &mut chart,
            SeriesLabelPosition::UpperLeft,
            &LegendStyle::chart(),
        )?;
    }
    Ok(())
}

/// A linear f64 axis with ticks exactly where asked (plotters' own float axis picks its
/// own ticks, and its key-point wrapper loses the default label formatting).
#[derive(Clone, Debug)]
struct Keyed {
    lo: f64,
    hi: f64,
    keys: Vec<f64>,
}

impl Keyed {
    fn new(lo: f64, hi: f64, keys: Vec<f64>) -> Keyed {
        let keys = keys.into_iter().filter(|k| *k >= lo && *k <= hi).collect();
        Keyed { lo, hi, keys }
    }
}

impl Ranged for Keyed {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let span = (self.hi - self.lo).max(f64::MIN_POSITIVE);
        let f = (v - self.lo) / span;
        limit.0 + (f * (limit.1 - limit.0) as f64).round() as i32
    }

    fn key_points<H: KeyPointHint>(&self, _hint: H) -> Vec<f64> {
        self.keys.clone()
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.lo..self.hi
    }
}

/// A step of 1, 2 or 5 × 10ⁿ giving about 5–10 ticks over `span`.
fn nice_step(span: f64) -> f64 {
    if span <= 0.0 || !span.is_finite() {
        return 1.0;
    }
    let raw = span / 8.0;
    let mag = 10f64.powf(raw.log10().floor());
    let r = raw / mag;
    let m = if r <= 1.0 {
        1.0
    } else if r <= 2.0 {
        2.0
    } else if r <= 5.0 {
        5.0
    } else {
        10.0
    };
    m * mag
}

/// Draws a line chart as SVG text.
///
/// # Errors
/// [`PlotError::NoData`] without a drawable point; [`PlotError::NoFont`];
/// [`PlotError::Draw`].
pub fn render_lines_svg_string(chart: &LineChart, spec: &ChartSpec) -> Result<String, PlotError> {
    let ok = |p: &(f64, f64)| latlab_core::doc::figure::line_point_drawable(chart, p);
    check_lines(chart, spec, &ok)?;
    crate::plot::svg_with((spec.width, spec.height), &|root| {
        draw_lines(root, chart, spec, &ok)
    })
}

/// Draws a line chart as a PNG image (the bytes of the file).
///
/// # Errors
/// As [`render_lines_svg_string`].
pub fn render_lines_png(chart: &LineChart, spec: &ChartSpec) -> Result<Vec<u8>, PlotError> {
    let ok = |p: &(f64, f64)| latlab_core::doc::figure::line_point_drawable(chart, p);
    check_lines(chart, spec, &ok)?;
    crate::plot::png_with((spec.width, spec.height), &|root| {
        draw_lines(root, chart, spec, &ok)
    })
}

/// What both line-chart outputs check before drawing: a drawable point (`ok`), a usable
/// size and a font.
fn check_lines(
    chart: &LineChart,
    spec: &ChartSpec,
    ok: &dyn Fn(&(f64, f64)) -> bool,
) -> Result<(), PlotError> {
    if !chart.lines.iter().any(|l| l.points.iter().any(ok)) {
        return Err(PlotError::NoData);
    }
    check_size(spec)?;
    ensure_font()
}

fn ticks(s: &Scale) -> Vec<f64> {
    if s.log {
        s.log_ticks()
    } else {
        let step = nice_step(s.hi - s.lo);
        let first = (s.lo / step).ceil() as i64;
        let last = (s.hi / step).floor() as i64;
        (first..=last).map(|k| k as f64 * step).collect()
    }
}

fn draw_lines<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    c: &LineChart,
    spec: &ChartSpec,
    ok: &dyn Fn(&(f64, f64)) -> bool,
) -> Result<(), PlotError>
where
    DB::ErrorType: 'static,
{
    area.fill(&WHITE).map_err(draw_err)?;
    let pts = || {
        c.lines
            .iter()
            .flat_map(|l| l.points.iter().filter(|p| ok(p)))
    };
    let x = Scale::new(pts().map(|p| p.0), c.log_x, false).ok_or(PlotError::NoData)?;
    let y = Scale::new(pts().map(|p| p.1), c.log_y, true).ok_or(PlotError::NoData)?;
    // Explicit ticks: the x range covers them, with a little room either side.
    let (mut xlo, mut xhi) = (x.lo, x.hi);
    if !c.x_ticks.is_empty() && c.log_x {
        let (a, b) = pts().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| {
            (a.min(p.0.log10()), b.max(p.0.log10()))
        });
        let pad = ((b - a) * 0.05).max(0.1);
        (xlo, xhi) = (a - pad, b + pad);
    }
    let x_keys: Vec<f64> = if c.x_ticks.is_empty() {
        ticks(&Scale {
            lo: xlo,
            hi: xhi,
            ..x
        })
    } else {
        c.x_ticks.iter().map(|(v, _)| x.at(*v)).collect()
    };
    let y_keys = ticks(&y);
    let mut chart = chart_builder(area, &spec.title, (55, 70))
        .build_cartesian_2d(Keyed::new(xlo, xhi, x_keys), Keyed::new(y.lo, y.hi, y_keys))
        .map_err(draw_err)?;
    let x_label = |v: &f64| {
        c.x_ticks
            .iter()
            .find(|(t, _)| (x.at(*t) - v).abs() < 1e-9)
            .map(|(_, l)| l.clone())
            .unwrap_or_else(|| x.label(*v))
    };
    draw_mesh(
        chart
            .configure_mesh()
            .x_label_formatter(&x_label)
            .y_label_formatter(&|v| y.label(*v))
            .x_desc(spec.x_desc.clone())
            .y_desc(spec.y_desc.clone()),
    )?;
    if !c.shaded.is_empty() {
        let shade = RGBColor(0xbb, 0xbb, 0xbb).mix(0.45);
        let rects: Vec<Rectangle<(f64, f64)>> = c
            .shaded
            .iter()
            .map(|(a, b)| {
                let (a, b) = (x.at(*a).max(xlo), x.at(*b).min(xhi));
                Rectangle::new([(a, y.lo), (b, y.hi)], shade.filled())
            })
            .collect();
        let s = chart.draw_series(rects).map_err(draw_err)?;
        if !c.shaded_label.is_empty() {
            s.label(c.shaded_label.clone())
                .legend(swatch_key(shade.filled()));
        }
    }
    for (i, l) in c.lines.iter().enumerate() {
        let colour = PALETTE[i % PALETTE.len()];
        let mut p: Vec<(f64, f64)> = l
            .points
            .iter()
            .filter(|p| ok(p))
            .map(|p| (x.at(p.0), y.at(p.1)))
            .collect();
        p.sort_by(|a, b| a.0.total_cmp(&b.0));
        if l.style != LineStyle::Points {
            chart
                .draw_series(LineSeries::new(p.iter().copied(), colour.stroke_width(2)))
                .map_err(draw_err)?
                .label(l.label.clone())
                .legend(line_key(colour.stroke_width(2), 20));
        }
        if l.style != LineStyle::Line {
            let s = chart
                .draw_series(p.iter().map(|q| Circle::new(*q, 4, colour.filled())))
                .map_err(draw_err)?;
            if l.style == LineStyle::Points {
                s.label(l.label.clone())
                    .legend(move |(x, y)| Circle::new((x + 10, y), 4, colour.filled()));
            }
        }
    }
    draw_legend(
        &mut chart,
        match c.legend {
            Corner::UpperRight => SeriesLabelPosition::UpperRight,
            Corner::LowerRight => SeriesLabelPosition::LowerRight,
            Corner::UpperLeft => SeriesLabelPosition::UpperLeft,
            Corner::LowerLeft => SeriesLabelPosition::LowerLeft,
        },
        &LegendStyle::chart(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(cat: &str, series: &str, v: [f64; 5]) -> BoxStat {
        BoxStat {
            category: cat.into(),
            series: series.into(),
            five: latlab_core::stats::FiveNum {
                count: 1,
                min: v[0],
                p10: v[1],
                median: v[2],
                p90: v[3],
                max: v[4],
            },
        }
    }

    #[test]
    fn scales_cover_the_data() {
        let s = Scale::new([0.02, 3.0, 40.0].into_iter(), true, true).unwrap();
        assert_eq!((s.lo, s.hi), (-2.0, 2.0));
        assert_eq!(s.label(1.0), "10");
        assert_eq!(s.at(0.0), -2.0);
        let l = Scale::new([2.0, 10.0].into_iter(), false, true).unwrap();
        assert_eq!(l.lo, 0.0);
        assert!(l.hi > 10.0);
        assert!(Scale::new([f64::NAN].into_iter(), false, true).is_none());
        assert!(Scale::new([0.0, -1.0].into_iter(), true, true).is_none());
        assert_eq!(nice_step(10.0), 2.0);
        assert_eq!(nice_step(0.7), 0.1);
        assert_eq!(num_label(0.5), "0.5");
        assert_eq!(num_label(1234.4), "1234");
    }

    #[test]
    fn nothing_drawable_is_no_data() {
        let spec = ChartSpec::default();
        assert!(matches!(
            render_boxplot_svg_string(&[], &spec, false),
            Err(PlotError::NoData)
        ));
        assert!(matches!(
            render_boxplot_svg_string(&[b("a", "s", [0.0; 5])], &spec, true),
            Err(PlotError::NoData)
        ));
        let c = LineChart {
            lines: vec![Line {
                label: "x".into(),
                points: vec![(0.0, 1.0)],
                style: LineStyle::Line,
            }],
            log_x: true,
            ..LineChart::default()
        };
        assert!(matches!(
            render_lines_svg_string(&c, &spec),
            Err(PlotError::NoData)
        ));
    }

    #[test]
    fn figures_draw_every_series() {
        if crate::plot::font::skip_without_font() {
            return;
        }
        let spec = ChartSpec::default();
        let boxes = vec![
            b("64", "best effort", [1.0, 2.0, 3.0, 8.0, 20.0]),
            b("64", "DFS", [0.01, 0.02, 0.05, 0.08, 0.2]),
            b("128", "best effort", [2.0, 3.0, 5.0, 9.0, 30.0]),
        ];
        let svg = render_boxplot_svg_string(&boxes, &spec, true).unwrap();
        for t in ["best effort", "DFS", "128", "<rect"] {
            assert!(svg.contains(t), "{t}");
        }
        let c = LineChart {
            lines: vec![
                Line {
                    label: "proposed".into(),
                    points: vec![(0.0, 1.0), (1.0, 1.2), (2.0, 1.1)],
                    style: LineStyle::Line,
                },
                Line {
                    label: "speed-up".into(),
                    points: vec![(2.0, 1.1)],
                    style: LineStyle::Points,
                },
            ],
            shaded: vec![(0.5, 1.5)],
            shaded_label: "drop".into(),
            ..LineChart::default()
        };
        let svg = render_lines_svg_string(&c, &spec).unwrap();
        for t in ["proposed", "speed-up", "drop", "<polyline"] {
            assert!(svg.contains(t), "{t}");
        }
        let c = LineChart {
            lines: vec![Line {
                label: "GB/s".into(),
                points: vec![(4096.0, 1.0), (65536.0, 3.0), (1048576.0, 4.0)],
                style: LineStyle::LineAndPoints,
            }],
            log_x: true,
            x_ticks: vec![
                (4096.0, "4 KiB".into()),
                (65536.0, "64 KiB".into()),
                (1048576.0, "1 MiB".into()),
            ],
            ..LineChart::default()
        };
        let svg = render_lines_svg_string(&c, &spec).unwrap();
        assert!(svg.contains("64 KiB") && svg.contains("<circle"));
    }
}
