//! Legends: the one function that draws a chart's legend box, the legend styles the figure
//! types use, and the keys (colour swatch, line sample) drawn beside each label.
//!
//! Two styles exist because the published figures already use them and their bytes are
//! pinned by the golden report: [`LegendStyle::chart`] (every chart type: box plots, line,
//! stacked-bar, error-bar and xy charts) and [`LegendStyle::scaled`] (latency
//! distributions, whose type sizes follow the panel size).

use super::error::{draw_err, PlotError};
use super::font::FAMILY;
use plotters::chart::{ChartContext, SeriesLabelPosition};
use plotters::coord::CoordTranslate;
use plotters::prelude::*;
use plotters::style::FontDesc;

/// How a legend box looks.
#[derive(Clone)]
pub(crate) struct LegendStyle {
    /// Label font.
    pub font: FontDesc<'static>,
    /// Box fill.
    pub background: ShapeStyle,
    /// Box outline.
    pub border: ShapeStyle,
    /// Space around the entries, pixels (`None`: plotters' default).
    pub margin: Option<u32>,
    /// Width reserved for each entry's key, pixels (`None`: plotters' default).
    pub key_width: Option<u32>,
}

impl LegendStyle {
    /// The chart legend: translucent white box, black border, 15 px text.
    pub(crate) fn chart() -> LegendStyle {
        LegendStyle {
            font: FontDesc::from((FAMILY, 15)),
            background: WHITE.mix(0.9).into(),
            border: BLACK.into(),
            margin: None,
            key_width: None,
        }
    }

    /// The distribution-plot legend: `font`, whiter box, grey border, explicit margin and
    /// key width (all scaled with the panel by the caller).
    pub(crate) fn scaled(font: FontDesc<'static>, margin: u32, key_width: u32) -> LegendStyle {
        LegendStyle {
            font,
            background: WHITE.mix(0.92).into(),
            border: BLACK.mix(0.5).into(),
            margin: Some(margin),
            key_width: Some(key_width),
        }
    }
}

/// Draws the legend of `chart`'s labelled series in the corner `pos`, in `style`.
pub(crate) fn draw_legend<'a, DB, CT>(
    chart: &mut ChartContext<'a, DB, CT>,
    pos: SeriesLabelPosition,
    style: &LegendStyle,
) -> Result<(), PlotError>
where
    DB: DrawingBackend + 'a,
    CT: CoordTranslate,
{
    let mut labels = chart.configure_series_labels();
    labels
        .position(pos)
        .background_style(style.background)
        .border_style(style.border)
        .label_font(style.font.clone());
    if let Some(m) = style.margin {
        labels.margin(m);
    }
    if let Some(w) = style.key_width {
        labels.legend_area_size(w);
    }
    labels.draw().map_err(draw_err)
}

/// Legend key of a filled area (bar, box, shaded range): a 14 × 12 px swatch.
pub(crate) fn swatch_key(style: ShapeStyle) -> impl Fn((i32, i32)) -> Rectangle<(i32, i32)> {
    move |(x, y)| Rectangle::new([(x, y - 6), (x + 14, y + 6)], style)
}

/// Legend key of a line: a `len` px sample of it.
pub(crate) fn line_key(
    style: ShapeStyle,
    len: i32,
) -> impl Fn((i32, i32)) -> PathElement<(i32, i32)> {
    move |(x, y)| PathElement::new(vec![(x, y), (x + len, y)], style)
}
