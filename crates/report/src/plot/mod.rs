//! CDF and CCDF figures of latency distributions, as SVG or PNG.
//!
//! The entry points are [`render`] (to a file, format chosen by extension),
//! [`render_svg_string`] (SVG text for embedding, e.g. in HTML) and
//! [`render_panels`] (several plots side by side in one image).
//!
//! Conventions:
//!
//! * x is latency in nanoseconds; the axis unit (ns, µs, ms, s) is chosen
//!   from the largest x over all curves ([`choose_unit`]). The axis is
//!   logarithmic when the data span more than three decades (or when
//!   [`PlotSpec::x_log`] says so); log ranges snap to powers of ten.
//! * [`PlotKind::Ccdf`]: y = fraction of samples greater than x, on a log
//!   axis from 1 down to the smallest positive y (rounded down to a power of
//!   ten). Tick labels also name the percentile: `10⁻³ (p99.9)`.
//! * [`PlotKind::Cdf`]: y = fraction of samples less than or equal to x, on
//!   a linear axis from 0 to 1.
//! * Curves are drawn as step functions (value held until the next point),
//!   in a fixed palette of ten colours (cycled), with a legend.
//! * Points with non-finite or non-positive x are dropped, as are
//!   non-finite y and, for CCDFs, y <= 0.

mod axis;
pub(crate) mod draw;
pub(crate) mod font;

pub use draw::PixelSeries;
pub use latlab_core::doc::figure::{Curve, PlotKind, PlotSpec};

use plotters::coord::Shift;
use plotters::prelude::{BitMapBackend, DrawingArea, DrawingBackend, IntoDrawingArea, SVGBackend};
use std::path::{Path, PathBuf};

/// Output image format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ImageFormat {
    /// Scalable vector graphics (text stays text).
    Svg,
    /// Portable network graphics (RGB, 8 bits per channel).
    Png,
}

impl ImageFormat {
    /// The format named by `p`'s extension (`.svg` or `.png`, any case).
    ///
    /// # Errors
    /// [`PlotError::UnknownFormat`] for any other or missing extension.
    pub fn from_path(p: &Path) -> Result<ImageFormat, PlotError> {
        let ext = p
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        match ext.as_deref() {
            Some("svg") => Ok(ImageFormat::Svg),
            Some("png") => Ok(ImageFormat::Png),
            _ => Err(PlotError::UnknownFormat {
                path: p.to_path_buf(),
            }),
        }
    }
}

/// Errors from drawing or writing a figure.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PlotError {
    /// The output path's extension is neither `.svg` nor `.png`.
    #[error("cannot tell the image format of {}: expected a file name ending in .svg or .png", path.display())]
    UnknownFormat {
        /// The offending path.
        path: PathBuf,
    },
    /// No curves, or no curve has a plottable point.
    #[error("nothing to plot: no curve has a point with a finite latency > 0 and a plottable probability")]
    NoData,
    /// No usable TrueType font was found for text rendering.
    #[error(
        "no TrueType font found (tried {}); install Debian's fonts-dejavu-core or set LATLAB_FONT",
        join_paths(tried)
    )]
    NoFont {
        /// Every path that was tried, in order.
        tried: Vec<PathBuf>,
    },
    /// Writing the output file failed.
    #[error("cannot write {}: {source}", path.display())]
    Io {
        /// The file being written.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The drawing library or image encoder failed, or the requested image
    /// size is unusable (each side must be 160..=16384 pixels).
    #[error("drawing failed: {0}")]
    Draw(String),
}

fn join_paths(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// A figure for interactive use: the SVG of its frame (background, title, axes, no curves,
/// no legend) and every curve in the frame's pixel coordinates, for the caller to draw as
/// elements of its own (the HTML report draws them so that a legend can toggle them and
/// hovering can name the value under the pointer).
#[derive(Clone, Debug, PartialEq)]
pub struct InteractiveFigure {
    /// SVG document of the frame, `width` × `height` pixels.
    pub frame_svg: String,
    /// Image width in pixels.
    pub width: u32,
    /// Image height in pixels.
    pub height: u32,
    /// One entry per input curve, in order, with its palette colour.
    pub series: Vec<PixelSeries>,
}

/// Lays out `curves` as [`render`] would and returns the frame and the curves' pixel
/// coordinates separately (see [`InteractiveFigure`]).
///
/// # Errors
/// As [`render_svg_string`].
pub fn render_interactive(
    curves: &[Curve],
    spec: &PlotSpec,
) -> Result<InteractiveFigure, PlotError> {
    check_size(spec.width, spec.height)?;
    let series = prepare(curves, spec.kind)?;
    font::ensure_font()?;
    let mut frame_svg = String::new();
    let pixels = {
        let root =
            SVGBackend::with_string(&mut frame_svg, (spec.width, spec.height)).into_drawing_area();
        let px = draw::draw_plot(&root, spec, &series, draw::DrawMode::FrameOnly)?;
        root.present().map_err(draw::draw_err)?;
        px
    };
    Ok(InteractiveFigure {
        frame_svg,
        width: spec.width,
        height: spec.height,
        series: pixels,
    })
}

/// A display unit for latencies: divide nanoseconds by `divisor`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TimeUnit {
    /// Unit symbol: `"ns"`, `"µs"`, `"ms"` or `"s"`.
    pub name: &'static str,
    /// Nanoseconds per unit (1, 1e3, 1e6 or 1e9).
    pub divisor: f64,
}

/// The largest unit in which `max_ns` is at least 1: ns below 1 µs, µs below
/// 1 ms, ms below 1 s, s from there on (and ns for non-finite input).
pub fn choose_unit(max_ns: f64) -> TimeUnit {
    let (name, divisor) = if max_ns >= 1e9 && max_ns.is_finite() {
        ("s", 1e9)
    } else if max_ns >= 1e6 && max_ns.is_finite() {
        ("ms", 1e6)
    } else if max_ns >= 1e3 && max_ns.is_finite() {
        ("µs", 1e3)
    } else {
        ("ns", 1.0)
    };
    TimeUnit { name, divisor }
}

/// Smallest accepted image (or panel) side, in pixels.
const MIN_SIDE: u32 = 160;
/// Largest accepted image (or panel) side, in pixels.
const MAX_SIDE: u32 = 16384;
/// Largest accepted total image area (keeps the RGB buffer under ~200 MB).
const MAX_PIXELS: u64 = 64 * 1024 * 1024;

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

fn check_size(width: u32, height: u32) -> Result<(), PlotError> {
    let ok = |s: u32| (MIN_SIDE..=MAX_SIDE).contains(&s);
    if ok(width) && ok(height) {
        Ok(())
    } else {
        Err(PlotError::Draw(format!(
            "image size {width}x{height} out of range: each side must be {MIN_SIDE}..={MAX_SIDE} pixels"
        )))
    }
}

/// What goes into one image: a list of panels laid out left to right.
struct Job<'a> {
    panels: Vec<(&'a PlotSpec, Vec<Series>)>,
    width: u32,
    height: u32,
}

impl<'a> Job<'a> {
    fn single(curves: &[Curve], spec: &'a PlotSpec) -> Result<Job<'a>, PlotError> {
        check_size(spec.width, spec.height)?;
        let series = prepare(curves, spec.kind)?;
        Ok(Job {
            panels: vec![(spec, series)],
            width: spec.width,
            height: spec.height,
        })
    }

    fn panels(panels: &'a [(PlotSpec, Vec<Curve>)]) -> Result<Job<'a>, PlotError> {
        if panels.is_empty() {
            return Err(PlotError::NoData);
        }
        let mut out = Vec::with_capacity(panels.len());
        let mut width: u64 = 0;
        let mut height = 0;
        for (spec, curves) in panels {
            check_size(spec.width, spec.height)?;
            out.push((spec, prepare(curves, spec.kind)?));
            width += u64::from(spec.width);
            height = height.max(spec.height);
        }
        if width * u64::from(height) > MAX_PIXELS || width > u64::from(u32::MAX) {
            return Err(PlotError::Draw(format!(
                "combined image {width}x{height} is too large (at most {MAX_PIXELS} pixels)"
            )));
        }
        Ok(Job {
            panels: out,
            width: width as u32,
            height,
        })
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), PlotError>
    where
        DB::ErrorType: 'static,
    {
        font::ensure_font()?;
        let mut breaks = Vec::new();
        let mut x = 0i32;
        for (spec, _) in &self.panels[..self.panels.len() - 1] {
            x += spec.width as i32;
            breaks.push(x);
        }
        let areas = root.split_by_breakpoints(breaks, Vec::<i32>::new());
        for (area, (spec, series)) in areas.iter().zip(&self.panels) {
            draw::draw_plot(area, spec, series, draw::DrawMode::Full)?;
        }
        root.present().map_err(draw::draw_err)
    }

    fn to_svg(&self) -> Result<String, PlotError> {
        let mut out = String::new();
        {
            let root =
                SVGBackend::with_string(&mut out, (self.width, self.height)).into_drawing_area();
            self.draw(&root)?;
        }
        Ok(out)
    }

    fn to_png(&self) -> Result<Vec<u8>, PlotError> {
        let (w, h) = (self.width, self.height);
        let mut rgb = vec![0u8; w as usize * h as usize * 3];
        {
            let root = BitMapBackend::with_buffer(&mut rgb, (w, h)).into_drawing_area();
            self.draw(&root)?;
        }
        encode_png(&rgb, w, h)
    }

    fn write(&self, path: &Path) -> Result<(), PlotError> {
        let bytes = match ImageFormat::from_path(path)? {
            ImageFormat::Svg => self.to_svg()?.into_bytes(),
            ImageFormat::Png => self.to_png()?,
        };
        write_image(path, &bytes)
    }
}

/// Draws a figure on a bitmap drawing area.
pub(crate) type BitmapDraw<'a> =
    dyn Fn(&DrawingArea<BitMapBackend<'_>, Shift>) -> Result<(), PlotError> + 'a;

/// Draws a `w`×`h` bitmap with `draw` and encodes it as PNG: the one bitmap path of every
/// figure type that writes PNG files.
pub(crate) fn png_with((w, h): (u32, u32), draw: &BitmapDraw<'_>) -> Result<Vec<u8>, PlotError> {
    let mut rgb = vec![0u8; w as usize * h as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, (w, h)).into_drawing_area();
        draw(&root)?;
        root.present().map_err(draw::draw_err)?;
    }
    encode_png(&rgb, w, h)
}

/// Encodes a `w`×`h` RGB buffer (as plotters' `BitMapBackend` fills it) as PNG.
pub(crate) fn encode_png(rgb: &[u8], w: u32, h: u32) -> Result<Vec<u8>, PlotError> {
    let mut png_bytes = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut png_bytes, w, h);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        let png_err = |e: png::EncodingError| PlotError::Draw(format!("PNG encoding: {e}"));
        let mut writer = enc.write_header().map_err(png_err)?;
        writer.write_image_data(rgb).map_err(png_err)?;
        writer.finish().map_err(png_err)?;
    }
    Ok(png_bytes)
}

/// Writes an encoded image to `path` atomically (temporary file, then rename): a reader
/// never sees half an image.
pub(crate) fn write_image(path: &Path, bytes: &[u8]) -> Result<(), PlotError> {
    latlab_core::results::write_atomically(path, bytes).map_err(|e| match e {
        latlab_core::results::ResultError::Write { source, .. } => PlotError::Io {
            path: path.to_path_buf(),
            source,
        },
        other => PlotError::Draw(other.to_string()),
    })
}

/// Draws `curves` as described by `spec` into `path` (`.svg` or `.png`).
///
/// # Errors
/// [`PlotError::UnknownFormat`] for other extensions, [`PlotError::NoData`]
/// when nothing is plottable, [`PlotError::NoFont`] without a usable font,
/// [`PlotError::Io`] when the file cannot be written, [`PlotError::Draw`]
/// for an unusable size or a drawing failure.
pub fn render(curves: &[Curve], spec: &PlotSpec, path: &Path) -> Result<(), PlotError> {
    ImageFormat::from_path(path)?;
    Job::single(curves, spec)?.write(path)
}

/// Draws `curves` as an SVG document and returns its text.
///
/// # Errors
/// As [`render`], minus the file-related ones.
pub fn render_svg_string(curves: &[Curve], spec: &PlotSpec) -> Result<String, PlotError> {
    Job::single(curves, spec)?.to_svg()
}

/// Draws several plots side by side (e.g. CDF | CCDF) into one image at
/// `path` (`.svg` or `.png`). The image is as wide as the sum of the panel
/// widths and as tall as the tallest panel; each panel is laid out
/// independently (own axes, unit and legend).
///
/// # Errors
/// As [`render`]; [`PlotError::NoData`] also when `panels` is empty or any
/// panel has nothing plottable.
pub fn render_panels(panels: &[(PlotSpec, Vec<Curve>)], path: &Path) -> Result<(), PlotError> {
    ImageFormat::from_path(path)?;
    Job::panels(panels)?.write(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn curve(points: &[(f64, f64)]) -> Curve {
        Curve {
            label: "c".into(),
            points: points.to_vec(),
        }
    }

    #[test]
    fn unit_boundaries() {
        let name = |ns: f64| choose_unit(ns).name;
        assert_eq!(name(0.0), "ns");
        assert_eq!(name(1.0), "ns");
        assert_eq!(name(999.999), "ns");
        assert_eq!(name(1e3), "µs");
        assert_eq!(name(999_999.0), "µs");
        assert_eq!(name(1e6), "ms");
        assert_eq!(name(999_999_999.0), "ms");
        assert_eq!(name(1e9), "s");
        assert_eq!(name(3.6e12), "s");
        assert_eq!(name(f64::NAN), "ns");
        assert_eq!(name(f64::INFINITY), "ns");
        assert_eq!(choose_unit(5e3).divisor, 1e3);
        assert_eq!(choose_unit(5e6).divisor, 1e6);
        assert_eq!(choose_unit(5e9).divisor, 1e9);
    }

    #[test]
    fn ccdf_range_from_curves() {
        let s = prepare(
            &[
                curve(&[(20.0, 1.0), (100.0, 0.5), (1e3, 2.5e-4)]),
                curve(&[(30.0, 1.0), (90.0, 0.0), (50.0, 3e-3)]),
            ],
            PlotKind::Ccdf,
        )
        .unwrap();
        assert_eq!(ccdf_y_range(&s), Some((1e-4, 1.0)));
        let s = prepare(&[curve(&[(1.0, 1e-6)])], PlotKind::Ccdf).unwrap();
        assert_eq!(ccdf_y_range(&s), Some((1e-6, 1.0)));
        // Only y == 1: still at least one decade.
        let s = prepare(&[curve(&[(1.0, 1.0)])], PlotKind::Ccdf).unwrap();
        assert_eq!(ccdf_y_range(&s), Some((0.1, 1.0)));
    }

    #[test]
    fn prepare_filters_and_sorts() {
        let s = prepare(
            &[curve(&[
                (50.0, 0.5),
                (f64::NAN, 0.5),
                (-1.0, 0.5),
                (0.0, 0.5),
                (f64::INFINITY, 0.1),
                (10.0, 1.0),
                (70.0, 0.0),
                (80.0, f64::NAN),
            ])],
            PlotKind::Ccdf,
        )
        .unwrap();
        assert_eq!(s[0].points, vec![(10.0, 1.0), (50.0, 0.5)]);
        let s = prepare(&[curve(&[(70.0, 0.0), (10.0, 1.5)])], PlotKind::Cdf).unwrap();
        assert_eq!(s[0].points, vec![(10.0, 1.0), (70.0, 0.0)]);
    }

    #[test]
    fn no_data_cases() {
        assert!(matches!(
            prepare(&[], PlotKind::Cdf),
            Err(PlotError::NoData)
        ));
        assert!(matches!(
            prepare(&[curve(&[]), curve(&[])], PlotKind::Cdf),
            Err(PlotError::NoData)
        ));
        assert!(matches!(
            prepare(&[curve(&[(10.0, 0.0)])], PlotKind::Ccdf),
            Err(PlotError::NoData)
        ));
    }

    #[test]
    fn format_from_path() {
        assert_eq!(
            ImageFormat::from_path(Path::new("a/b.SVG")).unwrap(),
            ImageFormat::Svg
        );
        assert_eq!(
            ImageFormat::from_path(Path::new("x.Png")).unwrap(),
            ImageFormat::Png
        );
        for bad in ["x.jpg", "x", "svg", "x.svg.gz"] {
            let e = ImageFormat::from_path(Path::new(bad)).unwrap_err();
            let msg = e.to_string();
            assert!(matches!(e, PlotError::UnknownFormat { .. }), "{bad}");
            assert!(msg.contains(bad) && msg.contains(".svg or .png"), "{msg}");
        }
    }

    #[test]
    fn size_limits() {
        assert!(check_size(1000, 650).is_ok());
        assert!(matches!(check_size(0, 650), Err(PlotError::Draw(_))));
        assert!(matches!(check_size(1000, 100_000), Err(PlotError::Draw(_))));
    }
}
