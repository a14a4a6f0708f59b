//! Reports of `dfs.*` results, in three layers:
//!
//! - [`data`]: pure functions turning a loaded result file into the numbers and series a
//!   report needs (summary rows, the best-effort/DFS comparison, the drop summary).
//! - `view`: what the `dfs.sim` and `dfs.run` sections need of one result, whichever
//!   runtime wrote it, and the formats the sections share.
//! - the sections, through [`latlab_core::doc::SectionProvider`]:
//!   - `dfs.sim` ([`SimSections`]) and `dfs.run` ([`RunSections`], feature `mpi`): the
//!     configuration, completion accounting (time-slices completed, checksums verified,
//!     contributions lost or duplicated), the time-slice completion duration (min, p10,
//!     median, p90, max; the paper's Fig. 6) with a box plot, aggregate bandwidth (Fig. 7),
//!     proposed against actual interval durations (Fig. 8), compute-buffer fill over time
//!     and by connection rank (Fig. 9), and, for every best-effort and DFS input of the
//!     same node count, the ratios the paper reports (completion ≥ 30× shorter, bandwidth
//!     up to 1.5×) — `summary` holds the tabular sections, `charts` those built around
//!     figures;
//!   - `dfs.bench` ([`BenchSections`], feature `mpi`): round duration and bandwidth per
//!     sender over message sizes, plain and Mix (Figs. 3–5).
//!
//! The `dfs.experiment` provider lives with its schema in [`crate::experiment`].
//!
//! Without the `mpi` feature the `dfs.run` and `dfs.bench` providers are not compiled (their
//! data types are, in [`crate::mpidata`]), so those kinds get the report's generic sections
//! only.

#[cfg(feature = "mpi")]
mod bench;
mod charts;
pub mod data;
#[cfg(feature = "mpi")]
mod run;
mod sim;
mod summary;
pub(crate) mod view;

#[cfg(feature = "mpi")]
pub use bench::BenchSections;
pub use data::*;
#[cfg(feature = "mpi")]
pub use run::RunSections;
pub use sim::SimSections;

#[cfg(test)]
mod tests;
