//! Execution timelines (the Hourglass `render_trace` figure): one row per thread (and
//! optionally per CPU), a grey block for each interval of CPU time received, red ticks for
//! marked instants such as deadline misses, over a chosen time window. SVG or PNG.

use crate::plot::draw::draw_err;
use crate::plot::{font, ImageFormat, PlotError};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::Path;

use latlab_core::doc::figure::{TimelineColumns, COLUMN_FULL};
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
    // At pixel resolution: each row's blocks become per-pixel-column coverage, and each
    // run of columns drawn alike one rectangle, so a row has at most one element per pixel
    // column whatever the trace holds; a column with any gap in it is drawn lighter.
    let area = chart.plotting_area();
    let (xr, yr) = area.get_pixel_range();
    let cols = TimelineColumns::new((from, to), xr.len());
    let px = area.strip_coord_spec();
    for (i, r) in rows.iter().enumerate() {
        let y0 = (n - 1 - i) as f64 + 0.15;
        let y1 = y0 + 0.7;
        let top = area.map_coordinate(&(from / unit.divisor, y1)).1 - yr.start;
        let bottom = area.map_coordinate(&(from / unit.divisor, y0)).1 - yr.start;
        let levels: Vec<u8> = cols
            .coverage(&r.blocks)
            .iter()
            .map(|&b| cols.level(b))
            .collect();
        for (c0, c1, level) in level_runs(&levels) {
            px.draw(&Rectangle::new(
                [(c0 as i32, top), (c1 as i32, bottom)],
                shade(level).filled(),
            ))
            .map_err(draw_err)?;
        }
        for m in cols.one_mark_per_column(&r.marks) {
            area.draw(&PathElement::new(
                vec![(m / unit.divisor, y0 - 0.1), (m / unit.divisor, y1 + 0.1)],
                RED.stroke_width(2),
            ))
            .map_err(draw_err)?;
        }
    }
    root.present().map_err(draw_err)
}

/// The grey of a column at `level` (see [`TimelineColumns::level`]): the paper's grey where
/// the row ran throughout, lighter the less of the column it ran.
fn shade(level: u8) -> RGBColor {
    match level {
        COLUMN_FULL => RGBColor(128, 128, 128),
        3 => RGBColor(176, 176, 176),
        2 => RGBColor(200, 200, 200),
        _ => RGBColor(224, 224, 224),
    }
}

/// Runs `(first, past_last, level)` of equal, non-zero levels.
fn level_runs(levels: &[u8]) -> Vec<(usize, usize, u8)> {
    let mut runs: Vec<(usize, usize, u8)> = Vec::new();
    for (i, &l) in levels.iter().enumerate() {
        match runs.last_mut() {
            Some(r) if r.1 == i && r.2 == l => r.1 = i + 1,
            _ if l > 0 => runs.push((i, i + 1, l)),
            _ => {}
        }
    }
    runs
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

    /// The SVG, or `None` (with a visible line) where no font is installed.
    fn svg_or_skip(rows: &[TimelineRow], spec: &TimelineSpec) -> Option<String> {
        match render_timeline_svg_string(rows, spec) {
            Err(PlotError::NoFont { .. }) => {
                eprintln!("skipping: no font installed");
                None
            }
            r => Some(r.unwrap()),
        }
    }

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
        let Some(svg) = svg_or_skip(&rows, &spec) else {
            return;
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

    /// `(y, fill)` of every `<rect>` of an SVG.
    fn rects(svg: &str) -> Vec<(String, String)> {
        let attr = |r: &str, k: &str| -> String {
            let i = r.find(&format!(" {k}=\"")).map(|i| i + k.len() + 3);
            i.map(|i| r[i..].split('"').next().unwrap_or("").to_owned())
                .unwrap_or_default()
        };
        svg.split("<rect")
            .skip(1)
            .map(|r| (attr(r, "y"), attr(r, "fill")))
            .collect()
    }

    #[test]
    fn ten_seconds_of_three_threads_take_at_most_one_rect_per_pixel_column_per_row() {
        // thread 0 runs throughout but for a 2 us gap every 100 ms; thread 1 runs 100 us
        // every 1 ms; thread 2 runs 30 us every 70 us: 155,000 blocks over 10 s
        let s10 = 10e9;
        let mut t0 = Vec::new();
        let mut start = 0.0;
        for k in 1..=100u32 {
            let gap = f64::from(k) * 1e8 - 5e7;
            t0.push((start, gap));
            start = gap + 2_000.0;
        }
        t0.push((start, s10));
        let every = |period: f64, run: f64| -> Vec<(f64, f64)> {
            let n = (s10 / period) as u32;
            (0..n)
                .map(|k| (f64::from(k) * period, f64::from(k) * period + run))
                .collect()
        };
        let row = |label: &str, blocks: Vec<(f64, f64)>| TimelineRow {
            label: label.into(),
            blocks,
            marks: vec![],
        };
        let rows = vec![
            row("0: CPU", t0),
            row("1: PERIODIC", every(1e6, 1e5)),
            row("2: PERIODIC", every(70_000.0, 30_000.0)),
        ];
        let blocks: usize = rows.iter().map(|r| r.blocks.len()).sum();
        assert!(blocks > 150_000);
        let spec = TimelineSpec {
            window: (0.0, s10),
            ..TimelineSpec::default()
        };
        let Some(svg) = svg_or_skip(&rows, &spec) else {
            return;
        };
        let grey = ["#808080", "#B0B0B0", "#C8C8C8", "#E0E0E0"];
        let mut per_row: std::collections::BTreeMap<String, Vec<String>> = Default::default();
        for (y, fill) in rects(&svg) {
            if grey.contains(&fill.as_str()) {
                per_row.entry(y).or_default().push(fill);
            }
        }
        assert_eq!(per_row.len(), 3, "{per_row:?}");
        for fills in per_row.values() {
            assert!(fills.len() <= spec.width as usize, "{}", fills.len());
        }
        // thread 0: every one of its 100 gaps is a lighter column between full runs
        let t0 = per_row
            .values()
            .find(|f| f.contains(&"#808080".to_owned()))
            .unwrap();
        assert_eq!(t0.iter().filter(|f| *f == "#B0B0B0").count(), 100, "{t0:?}");
        assert_eq!(t0.iter().filter(|f| *f == "#808080").count(), 101);
        assert!(svg.len() < 100_000, "{} bytes", svg.len());
    }
}
