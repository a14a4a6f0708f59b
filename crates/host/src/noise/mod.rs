//! `latlab host noise`: what interrupts a CPU, and why (osnoise/oslat style).
//!
//! A thread pinned to one CPU spins reading the TSC; every step between two reads at or
//! above the threshold is a gap, kept in a preallocated [`GapRecorder`]. Meanwhile the
//! kernel-event recorder (`latlab_sys::ktrace`) records IRQs, softirqs, timers, IPIs, NMIs,
//! work items and context switches on that CPU and the others, on the same TSC timeline.
//! Afterwards every gap's time is split over the causes under it
//! ([`latlab_explain::attribute`]): the result holds the gap histogram, the counters and
//! the `explain` attribution. Without root or tracefs the gap half still runs and every gap
//! is *unexplained*, the attribution saying why.
//!
//! [`GapRecorder`]: latlab_explain::GapRecorder

mod config;
mod data;
mod run;
pub use config::{NoiseError, NoiseRun, MAX_DURATION};
pub use data::{
    summary, DataError, GapRecord, NoiseData, GAP_HISTOGRAM, MAX_GAP_CAUSES, MAX_LISTED_GAPS,
    RESULT_KIND,
};
pub use run::{run, run_with_progress, Written};
