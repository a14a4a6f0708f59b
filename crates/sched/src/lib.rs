//! # latlab-sched
//!
//! Hourglass (Regehr, USENIX 2002) rebuilt for Linux 6.x on SMP machines: synthetic threads
//! with different execution models spin on `rdtscp` and record when they ran
//! ([`recorder`]), periodic and latency threads sleep on a chosen timer and account every
//! activation ([`run`]), and the execution map is analysed for context-switch cost,
//! interrupt load, quanta, dispatch latency and deadlines, beside a response-time analysis
//! ([`analyze`], [`rta`]).
//!
//! The data a run produces is in [`model`]; [`session`] runs a spec and writes the result,
//! trace, text ([`text`]) and Perfetto file; [`cache`] measures the indirect cost of a
//! switch; [`experiment`] is the paper's Section 5 on this machine, with background load
//! from [`load`]. This crate says what to draw ([`figures::Draw`]) but does not draw: the
//! caller does.
#![deny(unsafe_code)]

pub mod analyze;
pub mod cache;
pub mod clock;
pub mod cmdline;
pub mod error;
pub mod experiment;
pub mod explain;
pub mod figures;
pub mod load;
pub mod model;
pub mod perfetto;
pub mod recorder;
pub mod result;
pub mod rta;
pub mod run;
pub mod scenario;
pub mod sections;
pub mod session;
pub mod spec;
pub mod text;
pub mod trace;

pub use error::Error;
