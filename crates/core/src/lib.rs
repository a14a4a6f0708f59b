//! # latlab-core
//!
//! The measurement core every latlab command builds on:
//!
//! - [`units`]: integer time types (`Ticks`, `Nanos`, `TscRate`, instants vs durations);
//! - [`parse`]: durations, rates and percentiles as users write them (`87.0us`, `1.5Mpps`, `p99.99`);
//! - [`hist`]: latency histograms on HdrHistogram, exact merge, serialisation;
//! - [`stats`]: percentile ladders, the sample-support rule, order-statistic confidence
//!   intervals, CDF/CCDF series;
//! - [`results`]: the versioned result file, host provenance, interval logs and CSV export;
//! - [`doc`]: the plot-free document model of reports (sections, tables, figure specs);
//! - [`rng`]: the seeded xorshift64* generator of schedules, delays and test data;
//! - [`selfcheck`]: the self-checks that decide whether a run counts (throughput, arrivals,
//!   independence, stationarity, the confidence-interval stop rule), each a typed verdict;
//! - [`text`]: plain-text tables and latency cells as terminals and text files show them
//!   (an unsupported percentile is never a bare number);
//! - [`child`]: the versioned job envelope one latlab process hands another;
//! - [`progress`]: how libraries report the steps of long work (the CLI draws the bar).
//!
//! Nothing in this crate reads a clock or makes a system call: time is always passed in.
//! The only I/O is reading and writing result files (`results`).
#![deny(unsafe_code)]

pub mod btf;
pub mod child;
pub mod clockmap;
pub mod doc;
pub mod ftrace_compact;
pub mod ftrace_raw;
pub mod hist;
pub mod parse;
pub mod progress;
pub mod results;
pub mod rng;
pub mod selfcheck;
pub mod stats;
pub mod text;
pub mod units;

pub use hist::LatencyHistogram;
pub use units::{NanoInstant, Nanos, Ticks, TscInstant, TscRate};
