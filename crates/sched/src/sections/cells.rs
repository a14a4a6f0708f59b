//! Table cells shared by the run and analysis sections.

use crate::analyze::Stats;
use latlab_core::doc::{Cell, CellStyle};
use latlab_core::units::format_ns;

pub(super) fn ns(v: u64) -> Cell {
    Cell::number(format_ns(v as f64))
}

pub(super) fn stats_header(first: &[&str]) -> Vec<String> {
    first
        .iter()
        .chain(["n", "min", "median", "p90", "p99", "max"].iter())
        .map(|s| s.to_string())
        .collect()
}

pub(super) fn stats_cells(s: &Stats) -> Vec<Cell> {
    if s.n == 0 {
        let mut v = vec![Cell::number("0")];
        v.extend((0..5).map(|_| Cell::styled("none seen", CellStyle::Unsupported)));
        return v;
    }
    vec![
        Cell::number(s.n.to_string()),
        ns(s.min_ns),
        ns(s.median_ns),
        ns(s.p90_ns),
        ns(s.p99_ns),
        ns(s.max_ns),
    ]
}
