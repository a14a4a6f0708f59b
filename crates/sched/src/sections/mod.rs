//! The report sections of `latlab sched` results, through
//! [`latlab_core::doc::SectionProvider`]:
//!
//! - [`RunSections`] for `sched.run`: the thread set as run, the gap calibration evidence,
//!   what was dropped, per-thread deadline accounting and dispatch latency, the inference
//!   of `latlab sched analyze` ([`crate::analyze`], with its defaults) beside the
//!   response-time analysis ([`crate::rta`]), and the execution timeline (the paper's
//!   `render_trace`) over a readable window. The execution map lives in the trace sidecar
//!   next to the result file; when it is missing the sections say so and show what the
//!   result file alone holds.
//! - [`CacheCostSections`] for `sched.cache_cost`: the indirect cost of a context switch
//!   per working-set size with its 95% interval, and every trial.
//! - [`ExperimentSections`] for the summary of `latlab experiment hourglass`: one section
//!   per Section 5 scenario with its commands, findings, figures and where Linux 6.x
//!   differs from the paper.

mod analysis;
mod cache;
mod cells;
mod run;
mod timeline;

pub use crate::analyze::MERGE_GAP_NS;
pub use crate::experiment::{
    experiment_sections, ExperimentSections, ExperimentSummary, ScenarioSummary,
    KIND as EXPERIMENT_KIND,
};
pub use cache::CacheCostSections;
pub use run::{run_sections, RunSections};
pub use timeline::{timeline_window, TIMELINE_MAX_BLOCKS, TIMELINE_WINDOW_NS};

#[cfg(test)]
mod tests;
