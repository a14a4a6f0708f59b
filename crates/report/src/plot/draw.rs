//! Laying out and drawing one plot into a plotters drawing area.

use super::axis::{
    ccdf_tick_label, decade_ceil, decade_floor, fmt_num, log_tick_label, plain_decimals, Axis,
};
pub(crate) use super::error::draw_err;
use super::error::PlotError;
use super::legend::{draw_legend, line_key, LegendStyle};
use super::series::{ccdf_y_range, Series};
use super::units::{choose_unit, TimeUnit};
use latlab_core::doc::figure::{PlotKind, PlotSpec};
use plotters::chart::SeriesLabelPosition;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::FontDesc;

/// Line colours, cycled: the Tableau 10 palette (distinguishable, print-safe).
pub(crate) const PALETTE: [RGBColor; 10] = [
    RGBColor(0x1f, 0x77, 0xb4), // blue
    RGBColor(0xff, 0x7f, 0x0e), // orange
    RGBColor(0x2c, 0xa0, 0x2c), // green
    RGBColor(0xd6, 0x27, 0x28), // red
    RGBColor(0x94, 0x67, 0xbd), // purple
    RGBColor(0x8c, 0x56, 0x4b), // brown
    RGBColor(0xe3, 0x77, 0xc2), // pink
    RGBColor(0x7f, 0x7f, 0x7f), // grey
    RGBColor(0xbc, 0xbd, 0x22), // olive
    RGBColor(0x17, 0xbe, 0xcf), // cyan
];

/// Axis label for the y axis of each plot kind.
pub(crate) fn y_desc(kind: PlotKind) -> &'static str {
    match kind {
        PlotKind::Ccdf => "fraction of samples > x (CCDF)",
        PlotKind::Cdf => "fraction of samples <= x (CDF)",
    }
}

/// Axes and unit-converted data for one plot.
#[derive(Debug)]
pub(crate) struct Plan {
    pub x: Axis,
    pub y: Axis,
    pub unit: TimeUnit,
    /// Series with x converted to `unit`.
    pub series: Vec<Series>,
}

/// Chooses unit, scales, ranges and ticks. `series` must hold at least one
/// point (guaranteed by `prepare`). `(w, h)` is the panel size in pixels,
/// used only for the tick-label budget.
pub(crate) fn plan(spec: &PlotSpec, series: &[Series], (w, h): (u32, u32)) -> Plan {
    let (min_x, max_x) = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .fold((f64::INFINITY, 0.0f64), |(lo, hi), x| {
            (lo.min(x), hi.max(x))
        });
    let x_log = spec.x_log.unwrap_or(max_x / min_x > 1000.0);
    // Linear axes take the unit of the largest value. Log axes span decades, so they take
    // the largest unit in which the smallest value still reads as at least 0.001: 10 ns ..
    // 1 ms is labelled 0.01 .. 1000 µs, not 10^-5 .. 1 ms.
    let unit = if x_log {
        let mut u = choose_unit(max_x);
        while u.divisor > 1.0 && min_x / u.divisor < 1e-3 {
            u = choose_unit(u.divisor / 1e3);
        }
        u
    } else {
        choose_unit(max_x)
    };
    let (lo, hi) = (min_x / unit.divisor, max_x / unit.divisor);
    let max_x_labels = (w as usize / 90).max(3);
    let max_y_labels = (h as usize / 45).max(3);
    let x = if x_log {
        Axis::log(decade_floor(lo), decade_ceil(hi), max_x_labels)
    } else {
        let span = hi - lo;
        let pad = if span > 0.0 { 0.04 * span } else { 0.1 * hi };
        let (a, b) = ((lo - pad).max(0.0), hi + pad);
        Axis::linear(a, b, max_x_labels.min(10))
    };
    let y = match spec.kind {
        PlotKind::Ccdf => {
            let (lo, hi) = ccdf_y_range(series).unwrap_or((0.1, 1.0));
            let mut y = Axis::log(lo, hi, max_y_labels);
            // A little headroom so a curve at y = 1 does not hide in the frame.
            y.hi = 1.2;
            y
        }
        PlotKind::Cdf => {
            let mut y = Axis::linear(0.0, 1.0, max_y_labels.min(10));
            y.lo = -0.02;
            y.hi = 1.02;
            y
        }
    };
    let series = series
        .iter()
        .map(|s| Series {
            label: s.label.clone(),
            points: s
                .points
                .iter()
                .map(|&(x, y)| (x / unit.divisor, y))
                .collect(),
        })
        .collect();
    Plan { x, y, unit, series }
}

/// The vertices of a post-step curve through `points` (sorted by x): each
/// value is held until the next point's x, then jumps.
pub(crate) fn step_points(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut out = Vec::with_capacity(points.len() * 2);
    for (i, &(x, y)) in points.iter().enumerate() {
        out.push((x, y));
        if let Some(&(next_x, _)) = points.get(i + 1) {
            out.push((next_x, y));
        }
    }
    out
}

/// Indices of the vertices of a polyline at pixel positions `px` that change how it is
/// drawn: a vertex on the same pixel as the one before, and one inside a horizontal or
/// vertical run between its neighbours, are left out. The first and last are kept.
pub(crate) fn pixel_vertices(px: &[(i32, i32)]) -> Vec<usize> {
    let between = |a: i32, b: i32, c: i32| a.min(c) <= b && b <= a.max(c);
    let mut keep: Vec<usize> = Vec::new();
    for (i, &p) in px.iter().enumerate() {
        if keep.last().is_some_and(|&l| px[l] == p) {
            continue;
        }
        if let [.., a, b] = keep[..] {
            let (a, b) = (px[a], px[b]);
            let inner = (a.0 == b.0 && b.0 == p.0 && between(a.1, b.1, p.1))
                || (a.1 == b.1 && b.1 == p.1 && between(a.0, b.0, p.0));
            if inner {
                if let Some(last) = keep.last_mut() {
                    *last = i;
                }
                continue;
            }
        }
        keep.push(i);
    }
    keep
}

fn font(px: f64) -> FontDesc<'static> {
    FontDesc::new(FontFamily::SansSerif, px, FontStyle::Normal)
}

/// Whether [`draw_plot`] draws the curves and legend itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DrawMode {
    /// Everything: background, title, axes, curves and legend (figures for papers).
    Full,
    /// Background, title and axes only; the curves' pixel coordinates are returned for the
    /// caller to draw (interactive HTML figures draw their own, toggleable curves).
    FrameOnly,
}

/// One curve mapped to the drawing's pixel coordinates.
#[derive(Clone, Debug, PartialEq)]
pub struct PixelSeries {
    /// Legend text.
    pub label: String,
    /// Line colour as `#rrggbb`.
    pub color: String,
    /// Vertices of the step curve, in pixels of the whole image.
    pub path: Vec<(f64, f64)>,
    /// The data points themselves: `(x_px, y_px, latency_ns, y)`.
    pub points: Vec<(f64, f64, f64, f64)>,
}

/// Draws one plot into `area`: with [`DrawMode::Full`] complete (background, title, axes,
/// curves, legend); with [`DrawMode::FrameOnly`] without curves and legend. Either way the
/// curves' pixel coordinates are returned.
pub(crate) fn draw_plot<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    spec: &PlotSpec,
    series: &[Series],
    mode: DrawMode,
) -> Result<Vec<PixelSeries>, PlotError>
where
    DB::ErrorType: 'static,
{
    area.fill(&WHITE).map_err(draw_err)?;
    let (w, h) = area.dim_in_pixel();
    let plan = plan(spec, series, (w, h));

    // Type sizes scale with the panel; 20 px base at the default 1000x650.
    let base = (f64::from(h).min(f64::from(w) * 0.65) / 650.0 * 20.0).clamp(14.0, 40.0);
    let tick_font = font(base * 0.8);
    let desc_font = font(base * 0.9);
    let title_font = font(base * 1.15);
    let legend_font = font(base * 0.8);
    let line_width = (base / 9.0).round().max(1.0) as u32;

    let text_size = |text: &str, f: &FontDesc<'_>| -> Result<(u32, u32), PlotError> {
        area.estimate_text_size(text, &TextStyle::from(f.clone()))
            .map_err(draw_err)
    };
    let y_fmt = |v: &f64| match spec.kind {
        PlotKind::Ccdf => ccdf_tick_label(*v),
        PlotKind::Cdf => fmt_num(*v),
    };
    let x_plain = !plan.x.log || plain_decimals(&plan.x.major);
    let x_fmt = |v: &f64| log_tick_label(*v, x_plain);

    let mut y_tick_w = 0;
    for v in &plan.y.major {
        y_tick_w = y_tick_w.max(text_size(&y_fmt(v), &tick_font)?.0);
    }
    let tick_h = text_size("0123456789", &tick_font)?.1;
    let x_desc = format!("latency ({})", plan.unit.name);
    let desc_h = text_size(&x_desc, &desc_font)?.1;
    let last_x_w = match plan.x.major.last() {
        Some(v) => text_size(&x_fmt(v), &tick_font)?.0,
        None => 0,
    };
    let gap = (base * 0.5) as u32;
    let tick_len = 5u32;
    // Labels sit 2 * tick_len from the axis (plotters' rule).
    let y_area = desc_h + gap + y_tick_w + 2 * tick_len + 4;
    let x_area = tick_h + 2 * tick_len + gap + desc_h + 4;
    let margin_right = (last_x_w / 2 + 8).max(gap * 2);
    let margin_top = if spec.title.is_empty() {
        tick_h / 2 + gap
    } else {
        gap
    };

    let mut builder = ChartBuilder::on(area);
    builder
        .margin_top(margin_top)
        .margin_bottom(gap / 2)
        .margin_left(gap)
        .margin_right(margin_right)
        .x_label_area_size(x_area)
        .y_label_area_size(y_area);
    if !spec.title.is_empty() {
        builder.caption(&spec.title, title_font);
    }
    let mut chart = builder
        .build_cartesian_2d(plan.x.clone(), plan.y.clone())
        .map_err(draw_err)?;

    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc(y_desc(spec.kind))
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&y_fmt)
        .label_style(tick_font)
        .axis_desc_style(desc_font)
        .bold_line_style(BLACK.mix(0.16))
        .light_line_style(BLACK.mix(0.06))
        .axis_style(BLACK.mix(0.85))
        .set_all_tick_mark_size(tick_len)
        .draw()
        .map_err(draw_err)?;

    // Close the frame (the mesh only draws the left and bottom axes).
    let plot_area = chart.plotting_area().strip_coord_spec();
    let (pw, ph) = plot_area.dim_in_pixel();
    plot_area
        .draw(&Rectangle::new(
            [(0, 0), (pw as i32 - 1, ph as i32 - 1)],
            BLACK.mix(0.85),
        ))
        .map_err(draw_err)?;

    let legend_len = (base * 1.6) as i32;
    let mut segments_px = Vec::new();
    let (bx, by) = chart.plotting_area().get_base_pixel();
    let mut pixels = Vec::with_capacity(plan.series.len());
    for (i, s) in plan.series.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let style = color.stroke_width(line_width);
        // At pixel resolution: a histogram's curve has thousands of vertices that fall on
        // the same few pixels; only those that change the drawing are kept.
        let steps = step_points(&s.points);
        let steps_px: Vec<(i32, i32)> = steps.iter().map(|p| chart.backend_coord(p)).collect();
        let pts: Vec<(f64, f64)> = pixel_vertices(&steps_px)
            .into_iter()
            .map(|i| steps[i])
            .collect();
        let to_px = |p: &(f64, f64)| {
            let (x, y) = chart.backend_coord(p);
            (f64::from(x), f64::from(y))
        };
        let mut points: Vec<(f64, f64, f64, f64)> = s
            .points
            .iter()
            .map(|p| {
                let (px, py) = to_px(p);
                (px, py, p.0 * plan.unit.divisor, p.1)
            })
            .collect();
        // one hover point per pixel: the first of those drawn on it
        points.dedup_by(|b, a| (a.0, a.1) == (b.0, b.1));
        pixels.push(PixelSeries {
            label: s.label.clone(),
            color: format!("#{:02x}{:02x}{:02x}", color.0, color.1, color.2),
            path: pts.iter().map(to_px).collect(),
            points,
        });
        if mode == DrawMode::FrameOnly {
            continue;
        }
        segments_px.extend(pts.windows(2).map(|pair| {
            let (x0, y0) = chart.backend_coord(&pair[0]);
            let (x1, y1) = chart.backend_coord(&pair[1]);
            ((x0 - bx, y0 - by), (x1 - bx, y1 - by))
        }));
        if let [only] = pts[..] {
            let (x, y) = chart.backend_coord(&only);
            segments_px.push(((x - bx, y - by), (x - bx, y - by)));
        }
        let anno = chart
            .draw_series(
                LineSeries::new(pts, style).point_size(if s.points.len() == 1 {
                    line_width * 2
                } else {
                    0
                }),
            )
            .map_err(draw_err)?;
        if !s.label.is_empty() {
            anno.label(s.label.as_str())
                .legend(line_key(style, legend_len));
        }
    }

    if mode == DrawMode::FrameOnly {
        return Ok(pixels);
    }
    let labels: Vec<&str> = plan
        .series
        .iter()
        .map(|s| s.label.as_str())
        .filter(|l| !l.is_empty())
        .collect();
    if !labels.is_empty() {
        let margin = (base * 0.5) as i32;
        let area_size = legend_len + margin;
        let mut label_w = 0;
        let mut label_h = 0;
        for l in &labels {
            let (lw, lh) = text_size(l, &legend_font)?;
            label_w = label_w.max(lw as i32);
            label_h = label_h.max(lh as i32);
        }
        let n = labels.len() as i32;
        let box_w = label_w + area_size + 2 * margin;
        let box_h = (f64::from(label_h) * (1.0 + 1.25 * f64::from(n - 1))) as i32 + 2 * margin;
        let pos = choose_legend_position(
            spec.kind,
            (box_w, box_h),
            (pw as i32, ph as i32),
            &segments_px,
        );
        draw_legend(
            &mut chart,
            pos,
            &LegendStyle::scaled(legend_font, margin as u32, area_size as u32),
        )?;
    }
    Ok(pixels)
}

type Seg = ((i32, i32), (i32, i32));

/// Picks the legend corner that covers the fewest curve segments, trying the
/// corners that are usually empty for this kind of plot first.
fn choose_legend_position(
    kind: PlotKind,
    (box_w, box_h): (i32, i32),
    (area_w, area_h): (i32, i32),
    segments: &[Seg],
) -> SeriesLabelPosition {
    use SeriesLabelPosition::*;
    let order = match kind {
        // CCDFs fall from the top left: the upper right and lower left stay free.
        PlotKind::Ccdf => [UpperRight, LowerLeft, LowerRight, UpperLeft],
        // CDFs rise from the bottom left: the lower right and upper left stay free.
        PlotKind::Cdf => [LowerRight, UpperLeft, UpperRight, LowerLeft],
    };
    let rect = |p: &SeriesLabelPosition| {
        let x = match p {
            UpperLeft | LowerLeft => 5,
            _ => area_w - box_w - 5,
        };
        let y = match p {
            UpperLeft | UpperRight => 5,
            _ => area_h - box_h - 5,
        };
        (x - 3, y - 3, x + box_w + 3, y + box_h + 3)
    };
    let hits = |p: &SeriesLabelPosition| {
        let (l, t, r, b) = rect(p);
        segments
            .iter()
            .filter(|((x0, y0), (x1, y1))| {
                (*x0).max(*x1) >= l
                    && (*x0).min(*x1) <= r
                    && (*y0).max(*y1) >= t
                    && (*y0).min(*y1) <= b
            })
            .count()
    };
    let mut best = (usize::MAX, UpperRight);
    for p in order {
        let n = hits(&p);
        if n < best.0 {
            best = (n, p);
        }
        if n == 0 {
            break;
        }
    }
    best.1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_hold_value_until_next_x() {
        assert_eq!(
            step_points(&[(1.0, 1.0), (2.0, 0.5), (4.0, 0.1)]),
            vec![(1.0, 1.0), (2.0, 1.0), (2.0, 0.5), (4.0, 0.5), (4.0, 0.1)]
        );
        assert_eq!(step_points(&[(1.0, 1.0)]), vec![(1.0, 1.0)]);
        assert!(step_points(&[]).is_empty());
    }

    #[test]
    fn pixel_vertices_keep_what_changes_the_drawing() {
        // a step curve: repeats, a horizontal run, a vertical run, a turn back
        let px = [
            (0, 0),
            (0, 0),
            (5, 0),
            (9, 0),
            (9, 4),
            (9, 8),
            (9, 8),
            (12, 8),
            (12, 2),
            (12, 5),
        ];
        assert_eq!(pixel_vertices(&px), vec![0, 3, 5, 7, 8, 9]);
        assert_eq!(pixel_vertices(&[(1, 1)]), vec![0]);
        assert!(pixel_vertices(&[]).is_empty());
    }

    fn series(points: &[(f64, f64)]) -> Vec<Series> {
        vec![Series {
            label: "s".into(),
            points: points.to_vec(),
        }]
    }

    #[test]
    fn plan_picks_unit_and_scale() {
        let spec = PlotSpec::default();
        // 20 ns .. 50 µs spans > 3 decades: log x in µs, 0.01 .. 100.
        let p = plan(
            &spec,
            &series(&[(20.0, 1.0), (50_000.0, 1e-3)]),
            (1000, 650),
        );
        assert_eq!(p.unit.name, "µs");
        assert!(p.x.log);
        assert_eq!((p.x.lo, p.x.hi), (0.01, 100.0));
        assert!(p.y.log);
        assert_eq!(p.y.lo, 1e-3);
        assert_eq!(p.series[0].points[1], (50.0, 1e-3));

        // 20 ns .. 5 µs is only 250x: linear, still in µs.
        let p = plan(&spec, &series(&[(20.0, 1.0), (5000.0, 1e-3)]), (1000, 650));
        assert_eq!(p.unit.name, "µs");
        assert!(!p.x.log);

        // 100 ns .. 900 ns: linear in ns, padded, starting >= 0.
        let p = plan(&spec, &series(&[(100.0, 1.0), (900.0, 0.1)]), (1000, 650));
        assert_eq!(p.unit.name, "ns");
        assert!(!p.x.log);
        assert!(p.x.lo < 100.0 && p.x.lo >= 0.0 && p.x.hi > 900.0);

        // Forced log.
        let spec = PlotSpec {
            x_log: Some(true),
            kind: PlotKind::Cdf,
            ..PlotSpec::default()
        };
        let p = plan(&spec, &series(&[(100.0, 0.0), (900.0, 1.0)]), (1000, 650));
        assert!(p.x.log && !p.y.log);
        assert_eq!((p.x.lo, p.x.hi), (100.0, 1000.0));
    }

    #[test]
    fn legend_avoids_curves() {
        // A curve hugging the top edge: UpperRight is taken, LowerLeft is free.
        let segs = vec![((0, 10), (1000, 10))];
        let pos = choose_legend_position(PlotKind::Ccdf, (200, 80), (1000, 500), &segs);
        assert!(matches!(pos, SeriesLabelPosition::LowerLeft));
        let pos = choose_legend_position(PlotKind::Ccdf, (200, 80), (1000, 500), &[]);
        assert!(matches!(pos, SeriesLabelPosition::UpperRight));
    }
}
