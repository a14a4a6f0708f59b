//! Execution timelines (the Hourglass `render_trace` figure): one row per thread (and
//! optionally per CPU), a grey block for each interval of CPU time received, red ticks for
//! marked instants such as deadline misses, over a chosen time window. SVG or PNG.

use crate::plot::draw::draw_err;
use crate::plot::{font, ImageFormat, PlotError};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::Path;

pub use latlab_core::doc::figure::{TimelineRow, TimelineSpec};

fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    rows: &[TimelineRow],
    spec: &TimelineSpec,
) -> Result<(), PlotError>
where
    DB::ErrorType: 'static,
{
    font::ensure_font()?;
    root.fill(&WHITE).map_err(draw_err)?;
    let (from, to) = spec.window;
    let unit = crate::plot::choose_unit((to - from).max(1.0));
    let n = rows.len();
    let mut chart = ChartBuilder::on(root)
        .caption(&spec.title, ("sans-serif", 20))
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(170)
        .build_cartesian_2d(from / unit.divisor..to / unit.divisor, 0f64..n as f64)
        .map_err(draw_err)?;
    let labels: Vec<String> = rows.iter().map(|r| r.label.clone()).collect();
    chart
        .configure_mesh()
        .disable_y_mesh()
        .x_desc(format!("{} ({})", spec.x_desc, unit.name))
        .y_labels(n * 2 + 1)
        .y_label_formatter(&|y| {
            let k = (n as f64 - y - 0.5).round();
            if (y.fract() - 0.5).abs() < 1e-6 && k >= 0.0 && (k as usize) < n {
                labels[k as usize].clone()
            } else {
                String::new()
            }
        })
        .draw()
        .map_err(draw_err)?;
    let px_ns = (to - from) / f64::from(spec.width.max(1));
    for (i, r) in rows.iter().enumerate() {
        let y0 = (n - 1 - i) as f64 + 0.15;
        let y1 = y0 + 0.7;
        let rects = r
            .blocks
            .iter()
            .filter(|(s, e)| *e >= from && *s <= to)
            .map(|&(s, e)| {
                let s = s.max(from);
                // at least a third of a pixel, so that short blocks stay visible
                let e = e.min(to).max(s + px_ns / 3.0);
                Rectangle::new(
                    [(s / unit.divisor, y0), (e / unit.divisor, y1)],
                    RGBColor(128, 128, 128).filled(),
                )
            });
        chart.draw_series(rects).map_err(draw_err)?;
        let marks = r
            .marks
            .iter()
            .filter(|m| **m >= from && **m <= to)
            .map(|&m| {
                PathElement::new(
                    vec![(m / unit.divisor, y0 - 0.1), (m / unit.divisor, y1 + 0.1)],
                    RED.stroke_width(2),
                )
            });
        chart.draw_series(marks).map_err(draw_err)?;
    }
    root.present().map_err(draw_err)
}

fn height(rows: usize, spec: &TimelineSpec) -> u32 {
    (rows as u32 * spec.row_height + 110).clamp(160, 16384)
}

fn check(rows: &[TimelineRow], spec: &TimelineSpec) -> Result<(), PlotError> {
    if !latlab_core::doc::figure::timeline_drawable(rows, spec) {
        return Err(PlotError::NoData);
    }
    if !(160..=16384).contains(&spec.width) {
        return Err(PlotError::Draw(format!(
            "image width {} out of range 160..=16384",
            spec.width
        )));
    }
    Ok(())
}

/// Draws the timeline as SVG text.
///
/// # Errors
/// [`PlotError::NoData`] without rows or with an empty window; [`PlotError::NoFont`];
/// [`PlotError::Draw`].
pub fn render_timeline_svg_string(
    rows: &[TimelineRow],
    spec: &TimelineSpec,
) -> Result<String, PlotError> {
    check(rows, spec)?;
    crate::plot::svg_with((spec.width, height(rows.len(), spec)), &|root| {
        draw(root, rows, spec)
    })
}

/// Draws the timeline into `path` (`.svg` or `.png`), atomically.
///
/// # Errors
/// As [`render_timeline_svg_string`], plus [`PlotError::UnknownFormat`] and
/// [`PlotError::Io`].
pub fn render_timeline(
    rows: &[TimelineRow],
    spec: &TimelineSpec,
    path: &Path,
) -> Result<(), PlotError> {
    let fmt = ImageFormat::from_path(path)?;
    check(rows, spec)?;
    let bytes = match fmt {
        ImageFormat::Svg => render_timeline_svg_string(rows, spec)?.into_bytes(),
        ImageFormat::Png => {
            crate::plot::png_with((spec.width, height(rows.len(), spec)), &|root| {
                draw(root, rows, spec)
            })?
        }
    };
    crate::plot::write_image(path, &bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_blocks_and_marks_are_drawn() {
        let rows = vec![
            TimelineRow {
                label: "thread 0".into(),
                blocks: vec![(0.0, 4e6), (5e6, 9e6)],
                marks: vec![10e6],
            },
            TimelineRow {
                label: "thread 1".into(),
                blocks: vec![(4e6, 5e6), (50e6, 60e6)],
                marks: vec![],
            },
        ];
        let spec = TimelineSpec {
            window: (0.0, 20e6),
            ..TimelineSpec::default()
        };
        let svg = match render_timeline_svg_string(&rows, &spec) {
            Err(PlotError::NoFont { .. }) => {
                eprintln!("skipping: no font installed");
                return;
            }
            r => r.unwrap(),
        };
        assert!(svg.contains("thread 0") && svg.contains("thread 1"));
        // three blocks in the window (the 50-60 ms one is outside), grey
        assert_eq!(svg.matches("fill=\"#808080\"").count(), 3, "{svg}");
        assert!(svg.contains("#FF0000"));
        assert!(matches!(
            render_timeline_svg_string(&[], &spec),
            Err(PlotError::NoData)
        ));
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.png");
        render_timeline(&rows, &spec, &p).unwrap();
        assert!(std::fs::metadata(&p).unwrap().len() > 1000);
    }
}
