//! `latlab experiment …`: each paper's key experiment, run on this machine. Every
//! experiment writes its result files first, then figures, a summary and an HTML report
//! built from those files.

use clap::Subcommand;

/// The built-in experiments.
#[derive(Debug, Subcommand)]
pub enum ExperimentCommand {
    /// How to Measure the Killer Microsecond, on one host: every measurement method
    /// against an OS-configuration ladder of the network function, on the testbed.
    #[command(
        name = "killer-us",
        after_help = "Examples:
  sudo latlab experiment killer-us --quick          (under 2 minutes)
  sudo latlab experiment killer-us -o results/killer-us
  latlab experiment killer-us --quick --loopback     (no root: reflector on loopback)

Methods: user TSC with blocking receive (netperf-like), user TSC with busy polling
(TRex-like), kernel timestamps (driver to driver), hardware where the NIC can. Ladder:
default (blocking, unpinned), pinned, pinned+busy-poll, pinned+busy-poll+SCHED_FIFO, and
pinned+busy-poll with a CPU hog beside the NF. Writes every result file, one CCDF per
method and a summary table (summary.md, summary.csv)."
    )]
    KillerUs(super::net::KillerUsArgs),

    /// The Hourglass paper's Section 5 scenarios adapted to this machine: context-switch
    /// cost, cache cost, dispatch latency, deadlines under receive load, response-time
    /// analysis, SCHED_DEADLINE reservations. Writes results, figures and a summary.
    #[command(after_help = "Examples:
  latlab experiment hourglass
  latlab experiment hourglass --duration 20s --dir latlab-results/hourglass
  latlab experiment hourglass --duration 1s --quick --only 5.1,5.5")]
    Hourglass(super::sched::HourglassExperimentArgs),
}
