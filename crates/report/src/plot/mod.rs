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
mod error;
pub(crate) mod font;
pub(crate) mod legend;
mod series;
pub(crate) mod style;
mod units;

pub use draw::PixelSeries;
pub use error::PlotError;
pub use latlab_core::doc::figure::{Curve, PlotKind, PlotSpec};
pub(crate) use series::{prepare, Series};
pub use units::{choose_unit, TimeUnit};

use plotters::coord::Shift;
use plotters::prelude::{BitMapBackend, DrawingArea, DrawingBackend, IntoDrawingArea, SVGBackend};
use std::path::Path;

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

/// Smallest accepted image (or panel) side, in pixels.
const MIN_SIDE: u32 = 160;
/// Largest accepted image (or panel) side, in pixels.
const MAX_SIDE: u32 = 16384;
/// Largest accepted total image area (keeps the RGB buffer under ~200 MB).
const MAX_PIXELS: u64 = 64 * 1024 * 1024;

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

/// Draws a figure on an SVG drawing area.
pub(crate) type SvgDraw<'a> =
    dyn Fn(&DrawingArea<SVGBackend<'_>, Shift>) -> Result<(), PlotError> + 'a;

/// Draws a `w`×`h` SVG document with `draw` and returns its text: the one SVG path of
/// every chart type.
pub(crate) fn svg_with((w, h): (u32, u32), draw: &SvgDraw<'_>) -> Result<String, PlotError> {
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (w, h)).into_drawing_area();
        draw(&root)?;
        root.present().map_err(draw::draw_err)?;
    }
    Ok(out)
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
    use super::series::ccdf_y_range;
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
