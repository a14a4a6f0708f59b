//! The timestamp baseline of *Where Has My Time Gone?* §2.2(1): read a clock back to back,
//! many times, and study the gaps between consecutive reads. The smallest gaps are the cost
//! of reading the clock; the long ones are the interruptions (interrupts, preemption,
//! hypervisor exits) that any busy thread on this CPU sees.
//!
//! ## Method
//! Reads are taken in chunks of [`ClocksConfig::chunk_reads`] into a preallocated buffer with
//! nothing between them but the store; the gaps of a chunk are histogrammed only after the
//! chunk is full. So a recorded gap is always a pure read-to-read interval, never polluted by
//! the bookkeeping. The price is that interruptions that fall into the bookkeeping between
//! chunks are not seen: [`SourceOutcome::coverage`] reports the fraction of the run's time
//! that was observed (78–86 % on a 2-core KVM guest).
//!
//! The run's deadline and the interval boundaries of the time series are checked once per
//! chunk against the run's [`Clock`](latlab_sys::tsc::Clock).

mod session;
mod source;

pub use session::{run, ClocksRun, RunError, TimebaseChoice, Written};
pub use source::{
    fill_result, intervals, measure, ClockSource, ClocksConfig, ClocksData, ClocksError,
    IntervalHist, SourceFacts, SourceOutcome, MAX_INTERVALS, RESULT_KIND,
};
