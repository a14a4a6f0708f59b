//! The report's document model: sections made of blocks (paragraphs, warnings, tables,
//! key–value lists, code, figures). Section providers build these; only `latlab-report`
//! turns them into HTML and images, so no provider writes markup or draws.

use super::figure::{
    box_drawable, errorbars_drawable, line_point_drawable, stacked_drawable, timeline_drawable,
    BoxStat, ChartSpec, Curve, ErrorSeries, LineChart, PlotKind, StackedBar, TimelineRow,
    TimelineSpec, XySeries, XySpec,
};

/// A whole report.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Title shown at the top and in the browser tab.
    pub title: String,
    /// When the report was generated (RFC 3339, UTC).
    pub generated_utc: String,
    /// latlab version that generated it.
    pub latlab_version: String,
    /// Sections in display order.
    pub sections: Vec<Section>,
}

/// One titled section; its `id` is the anchor in the table of contents.
#[derive(Clone, Debug, Default)]
pub struct Section {
    /// Anchor name (letters, digits and `-` only; made unique on render).
    pub id: String,
    /// Heading.
    pub title: String,
    /// Content.
    pub blocks: Vec<Block>,
}

impl Section {
    /// An empty section titled `title`, with an anchor derived from the title.
    pub fn new(title: impl Into<String>) -> Section {
        let title = title.into();
        Section {
            id: slug(&title),
            title,
            blocks: Vec::new(),
        }
    }

    /// Appends a block.
    pub fn push(&mut self, b: Block) -> &mut Self {
        self.blocks.push(b);
        self
    }

    /// The section's paragraphs, in order.
    pub fn paragraphs(&self) -> Vec<&str> {
        self.blocks
            .iter()
            .filter_map(|b| match b {
                Block::Paragraph(p) => Some(p.as_str()),
                _ => None,
            })
            .collect()
    }

    /// The section's tables, in order.
    pub fn tables(&self) -> Vec<&Table> {
        self.blocks
            .iter()
            .filter_map(|b| match b {
                Block::Table(t) => Some(t),
                _ => None,
            })
            .collect()
    }
}

/// A piece of section content.
#[derive(Clone, Debug)]
pub enum Block {
    /// Plain text (escaped on render).
    Paragraph(String),
    /// A subheading inside a section.
    Heading(String),
    /// Warnings that matter for trusting the numbers.
    Warnings(Vec<Warning>),
    /// A table.
    Table(Table),
    /// Name–value pairs (provenance, configuration).
    KeyValues(Vec<(String, String)>),
    /// Preformatted text (command lines, JSON), with a caption.
    Code {
        /// Caption above the text.
        caption: String,
        /// The text.
        text: String,
    },
    /// A figure.
    Figure(Figure),
}

/// How much a warning matters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// Context worth knowing (e.g. percentiles the sample count cannot support).
    Info,
    /// May distort the numbers (virtual machine, unpinned thread, frequency scaling).
    Caution,
    /// The numbers are incomplete or suspect (lost samples, clamped values, no TSC).
    Serious,
}

impl Severity {
    /// Lower-case name, used as CSS class and in text output.
    pub fn name(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Caution => "caution",
            Severity::Serious => "serious",
        }
    }
}

/// One warning about one input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Warning {
    /// How much it matters.
    pub severity: Severity,
    /// Which input it is about (its label).
    pub source: String,
    /// What is wrong, in one sentence.
    pub text: String,
}

/// How a table cell is shown.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CellStyle {
    /// Text, left-aligned.
    #[default]
    Text,
    /// A number, right-aligned.
    Number,
    /// A value the sample count does not support (shown greyed, never as a bare number).
    Unsupported,
    /// Something that passed (a budget, a verdict).
    Good,
    /// Something that failed or needs attention.
    Bad,
}

/// One table cell.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Cell {
    /// Main text.
    pub text: String,
    /// Smaller second line, e.g. a confidence interval.
    pub note: Option<String>,
    /// Presentation.
    pub style: CellStyle,
}

impl Cell {
    /// A cell for a percentile estimate: its value with the confidence interval as the
    /// note; an unsupported one never shows a bare number.
    pub fn estimate(e: &crate::stats::PercentileEstimate) -> Cell {
        use crate::units::format_ns;
        if !e.supported {
            return Cell::styled("unsupported", CellStyle::Unsupported).with_note(format!(
                "needs {}+ samples",
                crate::stats::min_samples(e.percentile)
            ));
        }
        let c = Cell::number(format_ns(e.value_ns as f64));
        match (e.ci_low_ns, e.ci_high_ns) {
            (Some(lo), Some(hi)) => c.with_note(format!(
                "{} – {}",
                format_ns(lo as f64),
                format_ns(hi as f64)
            )),
            _ => c.with_note("interval n/a"),
        }
    }

    /// A text cell.
    pub fn text(s: impl Into<String>) -> Cell {
        Cell {
            text: s.into(),
            ..Cell::default()
        }
    }

    /// A right-aligned number cell.
    pub fn number(s: impl Into<String>) -> Cell {
        Cell {
            text: s.into(),
            style: CellStyle::Number,
            ..Cell::default()
        }
    }

    /// A cell in the given style.
    pub fn styled(s: impl Into<String>, style: CellStyle) -> Cell {
        Cell {
            text: s.into(),
            style,
            note: None,
        }
    }

    /// A count of things that should not happen (losses, drops, errors): a number, marked
    /// bad when it is not zero.
    pub fn problem_count(v: u64) -> Cell {
        Cell::styled(
            v.to_string(),
            if v > 0 {
                CellStyle::Bad
            } else {
                CellStyle::Number
            },
        )
    }

    /// Adds a second, smaller line.
    pub fn with_note(mut self, note: impl Into<String>) -> Cell {
        self.note = Some(note.into());
        self
    }
}

/// A table with a caption and a header row.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Table {
    /// Caption (may be empty).
    pub caption: String,
    /// Column names.
    pub header: Vec<String>,
    /// Rows of cells.
    pub rows: Vec<Vec<Cell>>,
}

impl Table {
    /// A table with `caption` (may be empty) and the column names `header`, without rows
    /// yet.
    pub fn new(caption: impl Into<String>, header: &[&str]) -> Table {
        Table {
            caption: caption.into(),
            header: header.iter().map(|h| h.to_string()).collect(),
            rows: Vec::new(),
        }
    }
}

/// A figure, as a specification: what it shows, never how it is drawn. `latlab-report`
/// draws each kind with one function (a latency distribution interactively: hover shows
/// the value at a percentile; the legend toggles series).
#[derive(Clone, Debug, PartialEq)]
pub enum Figure {
    /// CDF or CCDF curves, overlaid.
    Distribution {
        /// Title.
        title: String,
        /// CDF or CCDF.
        kind: PlotKind,
        /// The curves, x in nanoseconds.
        curves: Vec<Curve>,
    },
    /// Horizontal stacked bars (x in ns).
    Stacked {
        /// Title.
        title: String,
        /// Axes, titles and size.
        spec: ChartSpec,
        /// The bars.
        bars: Vec<StackedBar>,
    },
    /// Lines with error bars on a logarithmic x axis that also shows a zero.
    ErrorBars {
        /// Title.
        title: String,
        /// Axes, titles and size.
        spec: ChartSpec,
        /// The lines.
        series: Vec<ErrorSeries>,
    },
    /// Values against a parameter with confidence-interval bars.
    Xy {
        /// Title.
        title: String,
        /// Axes, titles and size.
        spec: XySpec,
        /// The series.
        series: Vec<XySeries>,
    },
    /// An execution timeline.
    Timeline {
        /// Title.
        title: String,
        /// Size, title and window.
        spec: TimelineSpec,
        /// The rows.
        rows: Vec<TimelineRow>,
    },
    /// Five-number box plots per category, one box per series.
    Boxes {
        /// Title.
        title: String,
        /// Axes, titles and size.
        spec: ChartSpec,
        /// The boxes.
        boxes: Vec<BoxStat>,
        /// Logarithmic y axis.
        log_y: bool,
    },
    /// A line chart.
    Lines {
        /// Title.
        title: String,
        /// Axes, titles and size.
        spec: ChartSpec,
        /// The lines, shading, ticks and legend corner.
        chart: LineChart,
    },
    /// A finished SVG document made elsewhere (e.g. a figure file an experiment wrote).
    Svg {
        /// Title.
        title: String,
        /// The SVG text (an `<svg>` element; an XML declaration is stripped).
        svg: String,
    },
}

impl Figure {
    /// The figure's title.
    pub fn title(&self) -> &str {
        match self {
            Figure::Distribution { title, .. }
            | Figure::Stacked { title, .. }
            | Figure::ErrorBars { title, .. }
            | Figure::Xy { title, .. }
            | Figure::Timeline { title, .. }
            | Figure::Boxes { title, .. }
            | Figure::Lines { title, .. }
            | Figure::Svg { title, .. } => title,
        }
    }
}

impl Figure {
    /// Whether the figure has something to draw (the renderers refuse the rest with
    /// `NoData`); a provider leaves out, or reports, a figure that has not.
    pub fn drawable(&self) -> bool {
        use Figure as F;
        match self {
            F::Distribution { curves, .. } => curves.iter().any(|c| !c.points.is_empty()),
            F::Stacked { bars, .. } => stacked_drawable(bars),
            F::ErrorBars { series, .. } => errorbars_drawable(series),
            F::Xy { series, .. } => series.iter().any(|s| !s.points.is_empty()),
            F::Timeline { rows, spec, .. } => timeline_drawable(rows, spec),
            F::Boxes { boxes, log_y, .. } => boxes.iter().any(|b| box_drawable(b, *log_y)),
            F::Lines { chart, .. } => chart
                .lines
                .iter()
                .any(|l| l.points.iter().any(|p| line_point_drawable(chart, p))),
            F::Svg { svg, .. } => svg.contains("<svg"),
        }
    }
}

/// `text` reduced to lower-case letters, digits and single dashes.
pub fn slug(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    while out.ends_with('-') {
        out.pop();
    }
    if out.is_empty() {
        out.push('s');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_anchor_safe() {
        assert_eq!(
            slug("Percentiles & CIs (host.clocks)"),
            "percentiles-cis-host-clocks"
        );
        assert_eq!(slug("  µs "), "s");
        assert_eq!(slug("A--B"), "a-b");
    }

    #[test]
    fn problem_counts_are_bad_only_when_not_zero() {
        assert_eq!(Cell::problem_count(0).style, CellStyle::Number);
        let c = Cell::problem_count(3);
        assert_eq!((c.text.as_str(), c.style), ("3", CellStyle::Bad));
    }

    #[test]
    fn a_section_lists_its_tables_in_order() {
        let mut s = Section::new("s");
        s.push(Block::Table(Table::new("one", &[])))
            .push(Block::Paragraph("text".into()))
            .push(Block::Table(Table::new("two", &[])));
        let captions: Vec<&str> = s.tables().iter().map(|t| t.caption.as_str()).collect();
        assert_eq!(captions, ["one", "two"]);
    }

    #[test]
    fn a_new_table_has_its_header_and_no_rows() {
        let t = Table::new("cap", &["a", "b"]);
        assert_eq!(t.caption, "cap");
        assert_eq!(t.header, vec!["a".to_string(), "b".to_string()]);
        assert!(t.rows.is_empty());
    }
}
