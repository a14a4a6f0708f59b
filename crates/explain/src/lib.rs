//! # latlab-explain
//!
//! Every gap and tail sample gets its cause, from kernel events on the same TSC timeline
//! (issue 13).
//!
//! - [`decode`]: the text of a tracefs `trace` file as typed events;
//! - [`timeline`]: per-CPU cause intervals (IRQ, softirq, timer, IPI, NMI, workqueue,
//!   preemption of a watched thread), nested, innermost wins;
//! - [`runnable`]: causes told from who could run (rt throttling, a thread waiting for
//!   its own, softirqs deferred to ksoftirqd, a vCPU that was not running);
//! - [`filter`]: kernel-side event filters the timeline provably does without;
//! - [`gaps`]: a preallocated gap recorder for spinning loops;
//! - [`path`]: windows carried by several CPUs (a probe's trip), split by one rule;
//! - [`render`]: an attribution as terminal text;
//! - [`remedy`]: for each cause, the change that removes it (run time or boot only);
//! - [`sections`]: the report's "Why the tail" section, for any result with an attribution;
//! - [`session`]: the kernel half of `--explain` as every command uses it (start, finish,
//!   attribute; a missing kernel half is a notice, never an error);
//! - [`threads`]: windows of several watched threads attributed as one;
//! - [`attribute`]: each window's time split over the causes under it, aggregated into the
//!   result file's [`latlab_core::results::Attribution`].
//!
//! Recording is `latlab_sys::ktrace`; [`recording::kernel_timeline`] turns its recording
//! into a timeline.
#![deny(unsafe_code)]

pub mod attribute;
pub mod class;
pub mod decode;
pub mod filter;
pub mod gaps;
pub mod path;
mod pieces;
pub mod raw;
pub mod recording;
pub mod remedy;
pub mod render;
pub mod runnable;
pub mod sections;
pub mod session;
pub mod threads;
pub mod timeline;

pub use attribute::{attribute, AttributeOptions, Window, WindowSplit};
pub use gaps::{Gap, GapRecorder};
pub use path::{attribute_paths, PathWindow, Stall};
pub use recording::{kernel_timeline, kernel_timeline_watching, KernelTimeline};
pub use session::{ExplainOptions, KernelCollected, KernelRequest, KernelSession};
pub use threads::{intervals_under, CauseInterval, ThreadWindow, ThreadsAttributed};
pub use timeline::{Cause, Class, Timeline, TimelineOptions, Watch};
