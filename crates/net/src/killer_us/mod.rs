//! `latlab experiment killer-us`: the analogue of the paper's Fig. 3 on one host. Every
//! measurement method against an OS-configuration ladder of the network function.
//!
//! Methods (each a histogram of a probe run):
//! - `user-blocking`: user TSC, blocking receive (netperf-like), `user.actual`;
//! - `user-busy`: user TSC, busy-polling receive (TRex-like), `user.actual`;
//! - `kernel`: software timestamps driver to driver, from the blocking run;
//! - `hardware`: NIC timestamps, where the interfaces have them.
//!
//! Ladder: `default` (blocking, unpinned) → `pinned` → `pinned+busy` →
//! `pinned+busy+fifo`, plus `hog` (pinned+busy with a CPU hog on the NF's core), and
//! `testpmd (DPDK, busy)`: the paper's DPDK NF ([`crate::testpmd`]) on the NF's core.
//!
//! [`run()`] takes a [`KillerUsConfig`] and writes every run, the summary ([`KillerUsData`],
//! kind [`RESULT_KIND`]), `summary.md` and `summary.csv` into its directory; the report
//! provider of the summary is [`KillerUsSections`]. The parts:
//!
//! - `config`: the settings and their defaults, resolved from what the command line asks
//!   ([`KillerUsConfig::resolve`]);
//! - `data`: the ladder ([`STEPS`]), the methods and the result's `data`;
//! - `fit`: what the host sustains, checked before the ladder (CPUs, priority, rate, duration);
//! - [`pace`]: the fit's pure rules (a rate trial's verdict, a quick run's length, the budget)
//!   and what the result records of the fit ([`HostFit`]);
//! - `rung`: one NF + probe run, and why a rung or generator mode cannot run here;
//! - `ladder`: the ladder's runs, each repeated once when the generator fell behind;
//! - `assemble`: the summary result, its histograms, rows and figures;
//! - `tables`: the summary's table, CSV and disagreement, read from the file alone;
//! - [`headline`]: the answer in sentences and one table;
//! - `sections`: what the HTML report shows.

mod assemble;
mod config;
mod data;
mod fit;
pub mod headline;
mod ladder;
mod outcome;
pub mod pace;
mod run;
mod rung;
mod sections;
mod tables;

pub use config::{
    KillerUsAsk, KillerUsConfig, CEILING_MILLI_PPS, DURATION, NOT_ROOT_NOTE, QUICK_BUDGET,
    QUICK_DURATION, QUICK_DURATION_CAP, QUICK_WARMUP, WARMUP,
};
pub use data::{
    behind_warning, BehindRun, KillerUsData, Step, SummaryRow, TailShare, GEN_MODES, LADDER,
    METHODS, RESULT_KIND, STEPS, TESTPMD_RUNG, XDP_RUNG,
};
pub use fit::GEN_FIFO;
pub use ladder::RETRIES;
pub use outcome::{ExperimentError, Summary};
pub use pace::{HostFit, RateTrial};
pub use run::run;
pub use sections::KillerUsSections;
pub use tables::{
    disagreement, disagreement_sentences, method_curves, render_csv, render_table, MethodCcdf,
};
