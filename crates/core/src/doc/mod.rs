//! The document model of latlab's reports, without any drawing.
//!
//! Data flow: a measurement writes a result file → the report loads it as an [`Input`]
//! (runs merged exactly) → the crate that owns the result's kind turns it into
//! [`Section`]s through its [`SectionProvider`] (paragraphs, warnings, tables, key–value
//! lists, code and [`Figure`] *specifications*) → `latlab-report`, the only crate that
//! draws, renders the document as one offline HTML file, and the figures as SVG or PNG.
//!
//! The measuring crates (net, host, sched, dfs) depend on this module, never on the
//! plotting crate; `--plot` and the HTML report draw the same specifications.

pub mod figure;
pub mod input;
mod model;

pub use figure::{
    BoxStat, ChartSpec, Corner, Curve, ErrorSeries, Line, LineChart, LineStyle, PlotKind, PlotSpec,
    StackedBar, TimelineColumns, TimelineRow, TimelineSpec, XySeries, XySpec, COLUMN_FULL,
};
pub use input::{stem, Input};
pub use model::{slug, Block, Cell, CellStyle, Figure, Report, Section, Severity, Table, Warning};

/// Why a [`FigureSink`] could not draw a figure.
pub type DrawError = Box<dyn std::error::Error + Send + Sync>;

/// Draws figure specifications into files (SVG or PNG by the path's extension). The
/// measuring crates say what to draw and where (an experiment's figure files); the CLI
/// passes `latlab-report`'s implementation, so no measuring crate links a plotting library.
pub trait FigureSink {
    /// Draws `figure` into `path`.
    ///
    /// # Errors
    /// Why it could not be drawn or written.
    fn draw(&self, figure: &Figure, path: &std::path::Path) -> Result<(), DrawError>;
}

/// Contributes the sections one kind of result needs (e.g. a `sched.run`'s timeline and
/// deadline table). Implemented by the crate that owns the kind.
pub trait SectionProvider {
    /// Whether this provider covers results of `kind` (e.g. `"host.clocks"`).
    fn handles(&self, kind: &str) -> bool;

    /// Sections for `inputs`, all of kinds this provider handles, in the order given.
    ///
    /// # Errors
    /// A description of what could not be read from the inputs.
    fn sections(&self, inputs: &[&Input]) -> Result<Vec<Section>, String>;

    /// Whether the report's generic distribution figures (every histogram overlaid) suit
    /// this kind. A provider that draws the distributions its own way (one figure per
    /// method, say) returns `false`, and the generic figures are left out for its inputs.
    fn generic_distributions(&self) -> bool {
        true
    }

    /// Sections that open the report, before the trust box and everything else: what was
    /// measured and the headline result, for a reader who reads only the first screen.
    /// With any lead section the report puts the figures next and the details (inputs,
    /// percentile tables, provenance) last. Default: none.
    ///
    /// # Errors
    /// A description of what could not be read from the inputs.
    fn lead(&self, _inputs: &[&Input]) -> Result<Vec<Section>, String> {
        Ok(Vec::new())
    }
}

/// A [`SectionProvider`] for results of exactly one kind: it names the kind and builds the
/// sections; [`SectionProvider::handles`] is `kind == KIND` for it.
pub trait KindSections {
    /// The kind covered (e.g. `"sched.run"`).
    const KIND: &'static str;

    /// Sections for `inputs`, all of kind [`Self::KIND`], in the order given.
    ///
    /// # Errors
    /// A description of what could not be read from the inputs.
    fn kind_sections(&self, inputs: &[&Input]) -> Result<Vec<Section>, String>;
}

impl<T: KindSections> SectionProvider for T {
    fn handles(&self, kind: &str) -> bool {
        kind == T::KIND
    }

    fn sections(&self, inputs: &[&Input]) -> Result<Vec<Section>, String> {
        self.kind_sections(inputs)
    }
}
