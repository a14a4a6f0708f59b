//! Figure specifications: what a figure shows, never how it is drawn.
//!
//! The measuring crates describe their figures with these plain data types and put them
//! into the document ([`super::Figure`]); `latlab-report` is the only crate that draws
//! them (SVG for the HTML report, SVG or PNG files for `--plot` and `--figures`), with one
//! drawing function per figure type and one shared style. Nothing here depends on a
//! plotting library.

// Latency distributions (CDF / CCDF).

/// One distribution to draw.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Curve {
    /// Legend text (an empty label is left out of the legend).
    pub label: String,
    /// `(latency_ns, probability)` pairs: x > 0 in nanoseconds, y in `[0, 1]`
    /// (the CDF or CCDF value at x, according to the [`PlotKind`]). Need not
    /// be sorted; the curve is drawn in increasing x order.
    pub points: Vec<(f64, f64)>,
}

/// Which function of the distribution the curves' y values are.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum PlotKind {
    /// Cumulative distribution, `P(X <= x)`, linear y axis 0..1.
    Cdf,
    /// Complementary cumulative distribution, `P(X > x)`, log y axis.
    #[default]
    Ccdf,
}

/// What to draw and how large.
#[derive(Clone, Debug, PartialEq)]
pub struct PlotSpec {
    /// CDF or CCDF.
    pub kind: PlotKind,
    /// Title drawn at the top; none when empty.
    pub title: String,
    /// Image (or panel) width in pixels.
    pub width: u32,
    /// Image (or panel) height in pixels.
    pub height: u32,
    /// Force a logarithmic (`Some(true)`) or linear (`Some(false)`) x axis;
    /// `None` picks log when `max_x / min_x > 1000`.
    pub x_log: Option<bool>,
}

impl Default for PlotSpec {
    /// A CCDF, untitled, 1000 × 650 pixels, automatic x scale.
    fn default() -> Self {
        PlotSpec {
            kind: PlotKind::Ccdf,
            title: String::new(),
            width: 1000,
            height: 650,
            x_log: None,
        }
    }
}

// Stacked bars and error bars.

/// One bar of a stacked bar chart.
#[derive(Clone, Debug, PartialEq)]
pub struct StackedBar {
    /// The bar's label (y axis).
    pub label: String,
    /// `(segment label, value in ns)` in stacking order; values ≤ 0 are not drawn. Segments
    /// with the same label share a colour and one legend entry across bars.
    pub segments: Vec<(String, f64)>,
}

/// One line of an error-bar chart.
#[derive(Clone, Debug, PartialEq)]
pub struct ErrorSeries {
    /// Legend text.
    pub label: String,
    /// `(x, mean, low, high)`; x ≥ 0 (0 is drawn at the axis' zero position).
    pub points: Vec<(f64, f64, f64, f64)>,
}

/// Titles and size of a chart.
#[derive(Clone, Debug, PartialEq)]
pub struct ChartSpec {
    /// Title (none when empty).
    pub title: String,
    /// x axis description (the stacked chart appends the unit).
    pub x_desc: String,
    /// The stacked chart's values are percentages (drawn as given, the axis in `%`), not
    /// nanoseconds.
    pub x_percent: bool,
    /// y axis description.
    pub y_desc: String,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
}

impl Default for ChartSpec {
    fn default() -> Self {
        ChartSpec {
            title: String::new(),
            x_desc: String::new(),
            x_percent: false,
            y_desc: String::new(),
            width: 1000,
            height: 600,
        }
    }
}

// Value against parameter, with confidence intervals.

/// One series: `(x, y, ci_half_width)` points.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct XySeries {
    /// Legend text.
    pub label: String,
    /// Points; a non-finite half-width draws no bar.
    pub points: Vec<(f64, f64, f64)>,
}

/// Axes and title.
#[derive(Clone, Debug, PartialEq)]
pub struct XySpec {
    /// Title.
    pub title: String,
    /// x-axis description.
    pub x_desc: String,
    /// y-axis description.
    pub y_desc: String,
    /// Logarithmic x axis (x must be > 0).
    pub x_log: bool,
    /// Width, pixels.
    pub width: u32,
    /// Height, pixels.
    pub height: u32,
}

impl Default for XySpec {
    fn default() -> Self {
        XySpec {
            title: String::new(),
            x_desc: String::new(),
            y_desc: String::new(),
            x_log: false,
            width: 900,
            height: 600,
        }
    }
}

// Execution timelines.

/// One row of a timeline.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TimelineRow {
    /// Label drawn left of the row, e.g. `thread 0 (LOW)`.
    pub label: String,
    /// Intervals `(start_ns, end_ns)` during which the row's thread ran.
    pub blocks: Vec<(f64, f64)>,
    /// Instants (ns) to mark, e.g. deadline misses.
    pub marks: Vec<f64>,
}

/// Size, title and window of a timeline.
#[derive(Clone, Debug, PartialEq)]
pub struct TimelineSpec {
    /// Title; none when empty.
    pub title: String,
    /// Image width, pixels.
    pub width: u32,
    /// Height of one row, pixels.
    pub row_height: u32,
    /// The window drawn, `(from_ns, to_ns)`; blocks are clipped to it.
    pub window: (f64, f64),
    /// x axis description (the unit is appended).
    pub x_desc: String,
}

impl Default for TimelineSpec {
    fn default() -> Self {
        TimelineSpec {
            title: String::new(),
            width: 1200,
            row_height: 48,
            window: (0.0, 1e9),
            x_desc: "time since run start".into(),
        }
    }
}

// Five-number box plots.

/// One box of a box plot: a five-number summary in a category and a series.
#[derive(Clone, Debug, PartialEq)]
pub struct BoxStat {
    /// The x category it belongs to (e.g. "128 nodes"); categories keep first-seen order.
    pub category: String,
    /// The series (colour and legend entry, e.g. "DFS"); series keep first-seen order.
    pub series: String,
    /// Whiskers at min and max, the box from p10 to p90, a bar at the median.
    pub five: crate::stats::FiveNum,
}

impl BoxStat {
    /// `[min, p10, median, p90, max]`.
    pub fn values(&self) -> [f64; 5] {
        self.five.values()
    }
}

// Line charts.

/// How a line is drawn.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LineStyle {
    /// A line through the points.
    #[default]
    Line,
    /// A line with a marker on every point.
    LineAndPoints,
    /// Markers only.
    Points,
}

/// One series of a line chart.
#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    /// Legend text.
    pub label: String,
    /// `(x, y)` points, drawn in x order; non-finite points are skipped.
    pub points: Vec<(f64, f64)>,
    /// How it is drawn.
    pub style: LineStyle,
}

/// A line chart.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LineChart {
    /// The series.
    pub lines: Vec<Line>,
    /// x ranges drawn shaded behind the lines (e.g. while a bandwidth drop was active).
    pub shaded: Vec<(f64, f64)>,
    /// Legend text of the shaded ranges.
    pub shaded_label: String,
    /// Logarithmic x axis (points with x ≤ 0 are skipped).
    pub log_x: bool,
    /// Logarithmic y axis (points with y ≤ 0 are skipped).
    pub log_y: bool,
    /// Explicit x ticks `(x, label)` (e.g. message sizes "4 KiB"); automatic when empty.
    pub x_ticks: Vec<(f64, String)>,
    /// Where the legend goes (pick the corner the data leaves free).
    pub legend: Corner,
}

/// A corner of the plotting area.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Corner {
    /// Top right.
    #[default]
    UpperRight,
    /// Bottom right.
    LowerRight,
    /// Top left.
    UpperLeft,
    /// Bottom left.
    LowerLeft,
}

// What is drawable: the one definition the providers (to leave out an empty figure) and
// the renderers (to refuse one with `NoData`) share.

/// Whether a stacked chart has a bar with a positive, finite total.
pub fn stacked_drawable(bars: &[StackedBar]) -> bool {
    stacked_max(bars).is_some()
}

/// The longest bar's total (segments ≤ 0 count as 0); `None` when nothing positive and
/// finite would be drawn.
pub fn stacked_max(bars: &[StackedBar]) -> Option<f64> {
    let total = |b: &StackedBar| b.segments.iter().map(|s| s.1.max(0.0)).sum::<f64>();
    let max = bars.iter().map(total).fold(0.0f64, f64::max);
    if bars.is_empty() || max <= 0.0 || !max.is_finite() {
        None
    } else {
        Some(max)
    }
}

/// Whether an error-bar point is drawable: x ≥ 0 and every value finite.
pub fn errorbar_point_drawable(p: &(f64, f64, f64, f64)) -> bool {
    p.0 >= 0.0 && p.0.is_finite() && p.1.is_finite() && p.2.is_finite() && p.3.is_finite()
}

/// Whether an error-bar chart has a drawable point.
pub fn errorbars_drawable(series: &[ErrorSeries]) -> bool {
    series
        .iter()
        .any(|s| s.points.iter().any(errorbar_point_drawable))
}

/// Whether a timeline has rows and a non-empty window.
pub fn timeline_drawable(rows: &[TimelineRow], spec: &TimelineSpec) -> bool {
    !rows.is_empty() && spec.window.1 > spec.window.0
}

/// Whether a box can be drawn: every value finite, and a positive maximum on a log axis.
pub fn box_drawable(b: &BoxStat, log_y: bool) -> bool {
    b.values().iter().all(|v| v.is_finite()) && (!log_y || b.five.max > 0.0)
}

/// Whether a line-chart point can be drawn: finite, and positive on a log axis.
pub fn line_point_drawable(chart: &LineChart, p: &(f64, f64)) -> bool {
    p.0.is_finite() && p.1.is_finite() && (!chart.log_x || p.0 > 0.0) && (!chart.log_y || p.1 > 0.0)
}
