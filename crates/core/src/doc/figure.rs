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
    /// Intervals `(start_ns, end_ns)` during which the row's thread ran (after
    /// [`TimelineRow::at_columns`]: the same time per pixel column, at the column's start).
    pub blocks: Vec<(f64, f64)>,
    /// Instants (ns) to mark, e.g. deadline misses.
    pub marks: Vec<f64>,
}

impl TimelineRow {
    /// The row reduced to what `columns` equal columns of `window` can show: per column
    /// the same CPU time, placed at the column's start, so a column the row ran throughout
    /// stays full, one it ran part of (around a gap, however short) stays partial, and
    /// runs of full columns become one block; at most one mark per column, none outside
    /// the window. At most `columns` blocks and `columns` marks, whatever the trace held;
    /// drawing the reduced row over the same window at the same or a coarser resolution
    /// gives the same picture as drawing the full one. Pure.
    pub fn at_columns(&self, window: (f64, f64), columns: usize) -> TimelineRow {
        let cols = TimelineColumns::new(window, columns);
        let busy = cols.coverage(&self.blocks);
        let mut blocks: Vec<(f64, f64)> = Vec::new();
        let mut prev_full = false;
        for (i, &b) in busy.iter().enumerate() {
            if b <= 0.0 {
                prev_full = false;
                continue;
            }
            let start = cols.start(i);
            let full = cols.level(b) == COLUMN_FULL;
            let end = if full { cols.start(i + 1) } else { start + b };
            match blocks.last_mut() {
                Some(last) if prev_full => last.1 = end,
                _ => blocks.push((start, end)),
            }
            prev_full = full;
        }
        TimelineRow {
            label: self.label.clone(),
            blocks,
            marks: cols.one_mark_per_column(&self.marks),
        }
    }
}

/// The level of a column a row ran throughout (see [`TimelineColumns::level`]).
pub const COLUMN_FULL: u8 = 4;

/// A timeline's window cut into equal columns (one per pixel when drawing): how much of
/// each column a row's blocks cover, the one place the reducer and the renderer share.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TimelineColumns {
    from: f64,
    to: f64,
    n: usize,
    width_ns: f64,
}

impl TimelineColumns {
    /// `columns` (at least 1) equal columns of `window` (`to > from`).
    pub fn new((from, to): (f64, f64), columns: usize) -> TimelineColumns {
        let n = columns.max(1);
        TimelineColumns {
            from,
            to,
            n,
            width_ns: (to - from).max(f64::MIN_POSITIVE) / n as f64,
        }
    }

    /// Number of columns.
    pub fn len(&self) -> usize {
        self.n
    }

    /// Whether there are no columns (never: at least one).
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Start of column `i` (ns); `start(len())` is the window's end.
    pub fn start(&self, i: usize) -> f64 {
        if i >= self.n {
            self.to
        } else {
            self.from + i as f64 * self.width_ns
        }
    }

    /// The column holding instant `t`, `None` outside the window.
    pub fn column_of(&self, t: f64) -> Option<usize> {
        if !(self.from..=self.to).contains(&t) {
            return None;
        }
        Some((((t - self.from) / self.width_ns) as usize).min(self.n - 1))
    }

    /// Nanoseconds of each column covered by `blocks` (clipped to the window; overlapping
    /// blocks are not double counted beyond the column's width). O(blocks + columns).
    pub fn coverage(&self, blocks: &[(f64, f64)]) -> Vec<f64> {
        let mut busy = vec![0.0f64; self.n];
        for &(s, e) in blocks {
            let (s, e) = (s.max(self.from), e.min(self.to));
            if e <= s {
                continue;
            }
            let (Some(i0), Some(i1)) = (self.column_of(s), self.column_of(e)) else {
                continue;
            };
            if i0 == i1 {
                busy[i0] += e - s;
                continue;
            }
            busy[i0] += self.start(i0 + 1) - s;
            for b in &mut busy[i0 + 1..i1] {
                *b = self.width_ns;
            }
            busy[i1] += e - self.start(i1);
        }
        for b in &mut busy {
            *b = b.min(self.width_ns);
        }
        busy
    }

    /// How a column covered for `busy_ns` is drawn: 0 not at all, [`COLUMN_FULL`] when
    /// the row ran throughout it (to within a quarter nanosecond: a trace's gaps are whole
    /// nanoseconds), else 1, 2 or 3 for up to a third, two thirds, or more of it. A
    /// column with any gap in it is never full, so every gap the recorder saw stays
    /// visible, however short against a pixel.
    pub fn level(&self, busy_ns: f64) -> u8 {
        let f = busy_ns / self.width_ns;
        if busy_ns <= 0.0 {
            0
        } else if busy_ns >= self.width_ns - 0.25 {
            COLUMN_FULL
        } else if f <= 1.0 / 3.0 {
            1
        } else if f <= 2.0 / 3.0 {
            2
        } else {
            3
        }
    }

    /// The first of `marks` in each column they fall in, in time order; marks outside
    /// the window are left out.
    pub fn one_mark_per_column(&self, marks: &[f64]) -> Vec<f64> {
        let mut by_col: Vec<(usize, f64)> = marks
            .iter()
            .filter_map(|&m| self.column_of(m).map(|c| (c, m)))
            .collect();
        by_col.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
        by_col.dedup_by_key(|x| x.0);
        by_col.into_iter().map(|(_, m)| m).collect()
    }
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

#[cfg(test)]
mod timeline_tests {
    use super::*;

    fn row(blocks: Vec<(f64, f64)>, marks: Vec<f64>) -> TimelineRow {
        TimelineRow {
            label: "t".into(),
            blocks,
            marks,
        }
    }

    #[test]
    fn coverage_splits_blocks_over_columns_and_clips_to_the_window() {
        let c = TimelineColumns::new((0.0, 100.0), 10);
        let busy = c.coverage(&[(5.0, 25.0), (-50.0, 2.0), (95.0, 150.0), (200.0, 300.0)]);
        assert_eq!(
            busy,
            vec![7.0, 10.0, 5.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 5.0]
        );
        assert_eq!(c.level(0.0), 0);
        assert_eq!(c.level(3.0), 1);
        assert_eq!(c.level(5.0), 2);
        assert_eq!(c.level(9.0), 3);
        assert_eq!(c.level(10.0), COLUMN_FULL);
        assert_eq!(c.column_of(100.0), Some(9));
        assert_eq!(c.column_of(100.5), None);
    }

    #[test]
    fn a_one_nanosecond_gap_keeps_its_column_from_being_full() {
        // 1 s over 1000 columns of 1 ms; the thread runs throughout but for 1 ns at 500.5 ms
        let c = TimelineColumns::new((0.0, 1e9), 1000);
        let busy = c.coverage(&[(0.0, 500_500_000.0), (500_500_001.0, 1e9)]);
        let levels: Vec<u8> = busy.iter().map(|&b| c.level(b)).collect();
        assert_eq!(levels[500], 3);
        assert!(levels
            .iter()
            .enumerate()
            .all(|(i, &l)| i == 500 || l == COLUMN_FULL));
    }

    #[test]
    fn at_columns_keeps_coverage_and_bounds_blocks_and_marks() {
        // 100,000 blocks of 6 us every 10 us, a 1 ns gap after block 50,000, and a mark
        // every 10 us: reduced to 100 columns of 10 ms
        let mut blocks = Vec::new();
        for k in 0..100_000u32 {
            let s = f64::from(k) * 10_000.0;
            blocks.push((s, s + 6_000.0));
        }
        blocks.push((1e9, 1.2e9)); // past the window
        let marks: Vec<f64> = (0..100_000u32).map(|k| f64::from(k) * 10_000.0).collect();
        let r = row(blocks, marks);
        let window = (0.0, 1e9);
        let red = r.at_columns(window, 100);
        assert!(red.blocks.len() <= 100 && red.marks.len() == 100, "{red:?}");
        let c = TimelineColumns::new(window, 100);
        let (full, reduced) = (c.coverage(&r.blocks), c.coverage(&red.blocks));
        for (a, b) in full.iter().zip(&reduced) {
            assert!((a - b).abs() < 1e-3, "{a} vs {b}");
        }
        // drawn coarser, the same picture too
        let c2 = TimelineColumns::new(window, 37);
        let lv = |bl: &[(f64, f64)]| -> Vec<u8> {
            c2.coverage(bl).iter().map(|&b| c2.level(b)).collect()
        };
        assert_eq!(lv(&r.blocks), lv(&red.blocks));
        // a fully covered stretch becomes one block, a gap splits it
        let busy = row(vec![(0.0, 4e8), (4e8 + 1.0, 1e9)], vec![2e9]);
        let red = busy.at_columns(window, 1000);
        assert_eq!(red.blocks.len(), 2, "{:?}", red.blocks);
        assert!(red.marks.is_empty());
        let lv = |bl: &[(f64, f64)]| -> Vec<u8> {
            let c = TimelineColumns::new(window, 1000);
            c.coverage(bl).iter().map(|&b| c.level(b)).collect()
        };
        assert_eq!(lv(&busy.blocks), lv(&red.blocks));
        assert_eq!(lv(&red.blocks)[400], 3);
    }
}
