//! The indirect cost of a context switch versus working-set size (paper, Section 5.2 and
//! Figure 5): a thread scanning a working set alone for T, then N threads scanning
//! working sets of the same size on the same CPU for T; the work lost per switch is
//! C = ((W1 − W10)/W1)·(T/N10), with a 95% Student-t confidence interval over trials.

//!
//! `cost` holds the formulas and the data of a sweep, [`sweep()`] runs one.

mod cost;
mod sweep;

pub use cost::{
    cost_per_switch, cost_per_switch_cpu, figure_series, figure_spec, mean_ci95, summarize,
    switches_on, t95, CacheCostData, SizeRow, Trial, KIND,
};
pub use sweep::{measure, sweep, CacheCostConfig};
