//! The only latlab crate that draws: figures, the HTML report, trust warnings, compare and
//! check, all from result files (never from a live measurement).
//!
//! The measuring crates describe what to show in `latlab_core::doc` (sections, tables and
//! figure *specifications*); this crate turns those into SVG, PNG and one offline HTML file
//! ([`spec::FileFigures`] is the `FigureSink` the CLI hands to experiments). Figure types:
//! latency distributions ([`PlotKind::Ccdf`], complementary CDF on a logarithmic y axis with
//! percentile tick labels such as `10⁻³ (p99.9)`, and [`PlotKind::Cdf`]), stacked bars and
//! error bars ([`charts`]), box plots and line charts ([`boxline`]), timelines
//! ([`timeline`]) and x–y series ([`xy`]).
//!
//! Output is SVG or PNG ([`render`], [`render_svg_string`],
//! [`render_panels`]). Text is laid out with a TrueType font loaded at run
//! time (see [`PlotError::NoFont`]).
//!
//! ```no_run
//! use latlab_report::{render, Curve, PlotKind, PlotSpec};
//! use std::path::Path;
//!
//! let curve = Curve {
//!     label: "clock_gettime gaps".into(),
//!     points: vec![(20.0, 1.0), (25.0, 0.5), (1_000.0, 1e-3), (40_000.0, 1e-6)],
//! };
//! let spec = PlotSpec { kind: PlotKind::Ccdf, title: "gaps".into(), ..PlotSpec::default() };
//! render(&[curve], &spec, Path::new("gaps.svg")).unwrap();
//! ```
#![deny(unsafe_code)]

pub mod boxline;
pub mod charts;
pub mod check;
pub mod compare;
pub mod figures;
pub mod html;
pub mod input;
pub mod plot;
pub mod spec;
pub mod timeline;
pub mod trust;
pub mod xy;

pub use charts::{
    render_errorbars, render_errorbars_svg_string, render_stacked, render_stacked_svg_string,
    ChartSpec, ErrorSeries, StackedBar,
};
pub use plot::{
    choose_unit, render, render_interactive, render_panels, render_svg_string, Curve, ImageFormat,
    InteractiveFigure, PixelSeries, PlotError, PlotKind, PlotSpec, TimeUnit,
};
pub use spec::{figure_svg, write_figure, FileFigures};
