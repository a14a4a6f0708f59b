//! Arguments of `latlab report`, `latlab compare` and `latlab check`.

use super::common::{confidence_arg, percentile_arg};
use clap::Args;
use latlab_core::parse::Percentile;
use std::path::PathBuf;

/// Options of `latlab report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Result files. Runs of one configuration can be given as one comma-separated group
    /// (`a1.json,a2.json`), merged exactly into one input.
    #[arg(required = true, value_name = "RESULT")]
    pub results: Vec<String>,
    /// HTML file to write (default: latlab-results/report-<UTC time>.html).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Merge all inputs of the same kind exactly into one (repeated runs of one configuration).
    #[arg(long)]
    pub merge: bool,
    /// Report title.
    #[arg(long, default_value = "latlab report")]
    pub title: String,
    /// Also write every figure as standalone SVG and PNG into this directory (default:
    /// <report name>-figures/ beside the report).
    #[arg(long, value_name = "DIR")]
    pub figures: Option<PathBuf>,
    /// Do not write standalone figures.
    #[arg(long, conflicts_with = "figures")]
    pub no_figures: bool,
    /// Percentiles in the tables, comma separated (default: the ladder p50 … p99.9999).
    #[arg(long, short = 'p', value_delimiter = ',', value_parser = percentile_arg)]
    pub percentiles: Vec<Percentile>,
    /// Confidence level of the percentile intervals, in (0, 1).
    #[arg(long, default_value_t = 0.95, allow_hyphen_values = true, value_parser = confidence_arg)]
    pub confidence: f64,
    /// Print nothing but errors.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

/// Options of `latlab compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Baseline: a result file, or repeated runs as a comma-separated group, merged exactly.
    #[arg(value_name = "A")]
    pub a: String,
    /// Candidate, compared against A, in the same form.
    #[arg(value_name = "B")]
    pub b: String,
    /// Percentiles to compare, comma separated (default: the ladder p50 … p99.9999).
    #[arg(long, short = 'p', value_delimiter = ',', value_parser = percentile_arg)]
    pub percentiles: Vec<Percentile>,
    /// Only these histograms, comma separated (default: every histogram both have).
    #[arg(long, value_delimiter = ',')]
    pub series: Vec<String>,
    /// Confidence level of each side's percentile intervals, in (0, 1).
    #[arg(long, default_value_t = 0.95, allow_hyphen_values = true, value_parser = confidence_arg)]
    pub confidence: f64,
}

/// Options of `latlab check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Result files; several are merged exactly (repeated runs of one configuration).
    #[arg(required = true, value_name = "RESULT")]
    pub results: Vec<PathBuf>,
    /// A budget, [SERIES:]METRIC OP VALUE, e.g. 'p99.99 < 50us', 'max < 1ms', 'lost == 0'.
    /// Repeatable.
    #[arg(long, short = 'b', value_name = "BUDGET")]
    pub budget: Vec<String>,
    /// A TOML file of budgets: budgets = ["p99.99 < 50us", "lost == 0"].
    #[arg(long, value_name = "FILE")]
    pub budgets: Option<PathBuf>,
}
