//! Command-line definitions (clap derive) and their one resolve step into library
//! configurations (`TryFrom<&Args>` per command, in the submodules). No measurement
//! happens here; resolving may look up facts it needs (the CPUs this process may use,
//! whether it runs as root). `commands` makes the one library call and prints.

mod common;
pub mod dfs;
pub mod experiment;
pub mod host_breakdown;
pub mod host_clocks;
pub mod host_noise;
pub mod net;
pub mod net_delay;
pub mod net_load;
pub mod report;
pub mod sched;

use clap::{Args, Parser, Subcommand, ValueEnum};
use common::{confidence_arg, percentile_arg};
use latlab_core::parse::Percentile;
use std::path::PathBuf;

pub use common::OutputArgs;
pub use host_clocks::ClocksArgs;
pub use report::{CheckArgs, CompareArgs, ReportArgs};

/// Whether `a` takes a number: its value parser yields one of the numeric types latlab's
/// flags use (floats, integers, durations, percentiles, rates).
pub fn is_numeric(a: &clap::Arg) -> bool {
    use std::any::TypeId;
    let t = a.get_value_parser().type_id();
    a.get_action().takes_values()
        && [
            TypeId::of::<f64>(),
            TypeId::of::<u8>(),
            TypeId::of::<u16>(),
            TypeId::of::<u32>(),
            TypeId::of::<u64>(),
            TypeId::of::<usize>(),
            TypeId::of::<i32>(),
            TypeId::of::<i64>(),
            TypeId::of::<latlab_core::units::Nanos>(),
            TypeId::of::<Percentile>(),
            TypeId::of::<latlab_core::parse::Rate>(),
            TypeId::of::<latlab_core::selfcheck::CiTarget>(),
            TypeId::of::<experiment::OpenLoopRate>(),
        ]
        .iter()
        .any(|id| t == *id)
}

/// The command tree the binary parses with: [`Cli`]'s, where every numeric flag also takes
/// a value starting with '-', so that `--confidence -0.5` reaches the flag's value parser
/// (which accepts it where negative numbers mean something and otherwise says why not in
/// one line) instead of being read as an unknown flag `-0`.
pub fn command() -> clap::Command {
    fn numeric_takes_hyphen(c: clap::Command) -> clap::Command {
        c.mut_args(|a| {
            if is_numeric(&a) {
                a.allow_hyphen_values(true)
            } else {
                a
            }
        })
        .mut_subcommands(numeric_takes_hyphen)
    }
    numeric_takes_hyphen(<Cli as clap::CommandFactory>::command())
}

/// One line per numeric flag of every command, "SUBCOMMAND PATH<TAB>--FLAG", for the test
/// that feeds each one NaN, infinities and out-of-range values
/// (`LATLAB_LIST_NUMERIC_FLAGS=1 latlab`).
pub fn numeric_flags() -> String {
    fn walk(c: &clap::Command, path: &str, out: &mut String) {
        for a in c.get_arguments().filter(|a| is_numeric(a)) {
            if let Some(long) = a.get_long() {
                out.push_str(&format!("{path}\t--{long}\n"));
            }
        }
        for s in c.get_subcommands() {
            let p = format!("{path} {}", s.get_name());
            walk(s, p.trim(), out);
        }
    }
    let mut out = String::new();
    walk(&command(), "", &mut out);
    out
}

const EXIT_CODES: &str = "\
Exit codes:
  0  success
  1  the measurement or rendering failed at run time
  2  bad usage or bad input (invalid flag value; unreadable, corrupt or foreign file)
  3  not permitted (e.g. --fifo without root or CAP_SYS_NICE)";

/// latlab — find out where the microseconds go on Linux hosts and networks.
///
/// Every measurement writes a versioned result file first (configuration, host provenance,
/// full histograms); tables and plots are rendered from result files.
#[derive(Debug, Parser)]
#[command(name = "latlab", version, after_help = EXIT_CODES, propagate_version = true)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// In-host latency: clock-read baseline and the breakdown of a request's path.
    #[command(subcommand)]
    Host(HostCommand),
    /// Network latency: generator, network functions, timestamps, testbed, latency injector.
    #[command(subcommand)]
    Net(net::NetCommand),
    /// Hourglass on Linux: map when each of several differently-behaving threads ran,
    /// with deadline accounting; render, analyze, cache-cost.
    Sched(sched::SchedArgs),
    /// The Data-Flow Scheduler: time-slice building over MPI, its simulator and benchmark.
    #[command(subcommand)]
    Dfs(dfs::DfsCommand),
    /// Each paper's key experiment on this machine: results, figures, summary and report.
    #[command(subcommand)]
    Experiment(experiment::ExperimentCommand),
    /// Write a self-contained HTML report (provenance, trust warnings, percentile tables,
    /// interactive CDF/CCDF figures) from result files.
    #[command(after_help = "Examples:
  latlab report latlab-results/host-clocks-*.json -o clocks.html
  latlab report run1.json,run2.json,run3.json -o merged.html   (three runs merged exactly)
  latlab report base.json tuned.json --figures paper-figs/ -o ab.html

The report works offline: styles, script and figures are inline, nothing is fetched.
Figures are also written as standalone SVG and PNG (see --figures).")]
    Report(ReportArgs),
    /// Compare two configurations percentile by percentile, with a significance verdict.
    #[command(after_help = "Examples:
  latlab compare base.json tuned.json
  latlab compare a1.json,a2.json,a3.json b1.json,b2.json   (repeated runs merged exactly)
  latlab compare base.json tuned.json --series rdtsc -p 50,99,99.99

A difference is significant when the two confidence intervals do not overlap (see
docs/cli.md); percentiles either sample count cannot support get no verdict.")]
    Compare(CompareArgs),
    /// Check latency budgets for CI: exit 0 when all hold, 1 when one fails, 2 on a malformed
    /// budget or a percentile the sample count cannot support.
    #[command(after_help = "Examples:
  latlab check run.json --budget 'p99.99 < 50us' --budget 'max < 1ms' --budget 'lost == 0'
  latlab check run.json --budget 'rdtsc:p50 <= 30ns'
  latlab check run1.json run2.json --budgets budgets.toml
  latlab check probe.json --budget 'self_checks_failed == 0'   (the run's self-checks)

Budget form: [SERIES:]METRIC OP VALUE; METRIC is pNN, min, max, mean (durations such as
50us), count, self_checks_failed or a counter of the result (whole numbers); OP is
< <= > >= == !=. Without
SERIES a latency budget must hold for every histogram. A budget file is TOML:
  budgets = [\"p99.99 < 50us\", \"lost == 0\"]

Exit codes: 0 every budget holds; 1 a budget fails; 2 malformed budget, unsupported
percentile, unknown histogram or counter, or unreadable result.")]
    Check(CheckArgs),
    /// Print the percentile table of result files, optionally as CSV; merge runs exactly.
    #[command(after_help = "Examples:
  latlab show run.json
  latlab show run1.json run2.json --merge --csv merged.csv
  latlab show run.json --percentiles 50,99.9,99.999")]
    Show(ShowArgs),
    /// Draw CDF/CCDF figures from result files.
    #[command(after_help = "Examples:
  latlab plot latlab-results/host-clocks-*.json -o clocks.svg          (CDF and CCDF side by side)
  latlab plot run.json --kind ccdf -o tail.svg                          (the tail alone, log scale)
  latlab plot a.json b.json --kind both --series rdtsc -o rdtsc.png")]
    Plot(PlotArgs),
    /// Why the tail: per result, the causes its excess time went to (kernel events on the
    /// TSC timeline), ranked, and the worst samples with the events under them.
    #[command(after_help = "Examples:
  latlab explain latlab-results/host-noise-*.json
  latlab explain noise.json --json

A result without an attribution is refused in one line (exit 2). The classes, the JSON
schema and how time is split are in docs/explain.md.")]
    Explain(host_noise::ExplainArgs),
    /// Internal: run a job another latlab process wrote (a versioned JSON envelope holding
    /// a resolved library configuration; see `latlab_core::child`). Not for users.
    #[command(hide = true)]
    Child(ChildArgs),
}

/// `latlab child JOBFILE` (internal).
#[derive(Debug, Args)]
pub struct ChildArgs {
    /// The job file (`latlab.child` envelope).
    pub job: PathBuf,
}

/// `latlab host …`
#[derive(Debug, Subcommand)]
pub enum HostCommand {
    /// Read each clock back to back and histogram the gaps between reads: the cost of
    /// reading the time and the interruptions a busy thread sees.
    #[command(after_help = "Examples:
  latlab host clocks
  latlab host clocks --duration 5s --cpu 1 --fifo 50 --plot
  latlab host clocks --sources rdtsc,monotonic -o clocks.json --quiet

Each source is read for --duration on the calling thread. Gaps are recorded in chunks of
back-to-back reads (see docs/cli.md); the table's reads/s column is the read rate, p50 the
cost of one read. Percentiles without 10 samples beyond them are shown as 'unsupported'.")]
    Clocks(host_clocks::ClocksArgs),
    /// What each step inside a host costs, from a clock read to a round trip between two
    /// network namespaces, each a full histogram classified Good / Bad / Ugly.
    #[command(after_help = "Examples:
  latlab host breakdown                                  (every step, 2 s each, about 35 s)
  latlab host breakdown --duration 500ms --plot udp.svg
  latlab host breakdown --steps null_syscall,udp_loopback,udp_loopback_busy --cpus 1,0

Each sample of a round-trip step is one full round trip between two pinned threads; every
sample also contains one clock read (the clock_read step). veth_netns needs root (it
creates two network namespaces); without root it is skipped and says so. The class rule
is in docs/host.md.")]
    Breakdown(host_breakdown::BreakdownArgs),
    /// What interrupts a CPU, and why: a pinned thread spins on the TSC, records every gap,
    /// and each gap is attributed to the kernel events under it (osnoise/oslat style).
    #[command(after_help = "Examples:
  latlab host noise --cpu 1 --duration 10s
  latlab host noise --cpu 1 --threshold 2us --fifo 50 -o noise.json
  latlab host noise --cpu 0 --no-kernel

Kernel events need root and tracefs (mounted when absent, and said so); without them the
gaps are still measured and all their time is unexplained. Time no kernel event covers
on a CPU that logged nothing is 'outside the kernel' (hypervisor, SMI, firmware). See
docs/host.md and docs/explain.md.")]
    Noise(host_noise::NoiseArgs),
    /// Run a command while /dev/cpu_dma_latency is held (default 0: idle CPUs poll, never
    /// halt): compare peers (wrk, memaslap, sockperf) under the idle policy latlab's
    /// --dma-latency sets. Exits with the command's status.
    #[command(after_help = "Examples:
  latlab host hold-idle -- wrk -t1 -c1 -d10s http://10.0.0.2/
  latlab host hold-idle --dma-latency 10 -- memaslap -s 10.0.0.2:11211 -t 10s

The hold is system-wide and ends when the command exits (or latlab dies). Needs root
(exit 3 without). A command that cannot start exits 1; otherwise the exit status is the
command's own (128 + N when signal N ended it).")]
    HoldIdle(HoldIdleArgs),
    /// Isolate CPUs at run time while a command runs: device IRQs, unbound workqueues,
    /// other user processes (a cgroup v1 cpuset of the other CPUs) and the kernel threads
    /// that allow it moved off them, timer migration off, vmstat work rarer, real-time
    /// throttling off; every value restored after. Exits with the command's status.
    #[command(after_help = "Examples:
  latlab host isolate --cpus 1 --dry-run
  latlab host isolate --cpus 1 -- cyclictest -m -p 90 -a 1 -D 10s
  latlab host isolate --undo

Every change is written to an undo journal (/run/latlab/journal) before it is made, so it
is undone when the command ends, on Ctrl-C, and — after SIGKILL — by the next latlab
command (or --undo). Boot-only isolation (isolcpus, nohz_full, rcu_nocbs, irqaffinity) is
printed as advice, never applied. Needs root (exit 3 without); --dry-run lists the changes
without root. A list naming an offline CPU or leaving no other CPU exits 2. See
docs/host.md.")]
    Isolate(IsolateArgs),
}

/// Options of `latlab host isolate`.
#[derive(Debug, Args)]
pub struct IsolateArgs {
    /// The CPUs to isolate, e.g. 1 or 2-3,5 (at least one online CPU must stay out).
    #[arg(long, value_name = "LIST", value_parser = common::cpu_set_arg, required_unless_present = "undo")]
    pub cpus: Option<common::CpuSet>,
    /// List every change that would be made, change nothing (no root needed).
    #[arg(long, conflicts_with = "undo")]
    pub dry_run: bool,
    /// Undo the changes of latlab processes that ended without undoing them, and say what
    /// was undone.
    #[arg(long, conflicts_with = "cpus")]
    pub undo: bool,
    /// The command and its arguments, after `--`.
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<std::ffi::OsString>,
}

/// Options of `latlab host hold-idle`.
#[derive(Debug, Args)]
pub struct HoldIdleArgs {
    /// The PM QoS CPU latency target to hold, in µs (0: no idle state with an exit latency).
    #[arg(long, value_name = "US", default_value_t = 0, value_parser = common::dma_latency_arg)]
    pub dma_latency: u32,
    /// The command and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<std::ffi::OsString>,
}

/// Which curves `latlab plot` draws.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PlotKindArg {
    /// Complementary CDF on a log y-axis (the tail view).
    Ccdf,
    /// CDF on a linear y-axis.
    Cdf,
    /// CDF and CCDF side by side.
    Both,
}

/// Options of `latlab plot`.
#[derive(Debug, Args)]
pub struct PlotArgs {
    /// Result files; every histogram of each is drawn (see --series).
    #[arg(required = true, value_name = "RESULT")]
    pub results: Vec<PathBuf>,
    /// Image to write: .svg or .png.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: PathBuf,
    /// What to draw.
    #[arg(long, value_enum, default_value_t = PlotKindArg::Both)]
    pub kind: PlotKindArg,
    /// Only these series (histogram names), comma separated.
    #[arg(long, value_delimiter = ',')]
    pub series: Vec<String>,
    /// Figure title.
    #[arg(long, default_value = "")]
    pub title: String,
}

/// Options of `latlab show`.
#[derive(Debug, Args)]
pub struct ShowArgs {
    /// Result files.
    #[arg(required = true, value_name = "RESULT")]
    pub results: Vec<PathBuf>,
    /// Percentiles to show, comma separated (default: 50,90,99,99.9,99.99,99.999,99.9999).
    #[arg(long, short = 'p', value_delimiter = ',', value_parser = percentile_arg)]
    pub percentiles: Vec<Percentile>,
    /// Merge histograms of the same name across all files, exactly, before summarising.
    #[arg(long)]
    pub merge: bool,
    /// Also write the table as CSV to this file ('-' for stdout).
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Confidence level of the percentile intervals, in (0, 1).
    #[arg(long, default_value_t = 0.95, value_parser = confidence_arg)]
    pub confidence: f64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;
    use latlab_core::units::Nanos;

    #[test]
    fn clap_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn duration_flag_parses_user_forms() {
        let cli =
            Cli::try_parse_from(["latlab", "host", "clocks", "--duration", "87.0us"]).unwrap();
        let Command::Host(HostCommand::Clocks(a)) = cli.command else {
            panic!()
        };
        assert_eq!(a.duration, Nanos(87_000));
        assert!(a.plot.is_none());
        let cli = Cli::try_parse_from(["latlab", "host", "clocks", "--plot"]).unwrap();
        let Command::Host(HostCommand::Clocks(a)) = cli.command else {
            panic!()
        };
        assert_eq!(a.plot, Some(None));
    }

    #[test]
    fn bad_duration_names_the_flag() {
        let e = Cli::try_parse_from(["latlab", "host", "clocks", "--duration", "5xs"]).unwrap_err();
        let s = e.to_string();
        assert!(s.contains("--duration"), "{s}");
        assert!(s.contains("250ns, 87.0us"), "{s}");
    }

    fn calibrate(args: &[&str]) -> net::CalibrateArgs {
        let cli = Cli::try_parse_from(["latlab", "net", "calibrate"].iter().chain(args)).unwrap();
        let Command::Net(net::NetCommand::Calibrate(a)) = cli.command else {
            panic!()
        };
        a
    }

    #[test]
    fn calibration_holds_the_idle_state_at_0_as_root_unless_told_otherwise() {
        assert_eq!(calibrate(&[]).dma_latency(true), Some(0));
        assert_eq!(
            calibrate(&[]).dma_latency(false),
            None,
            "no hold without root"
        );
        assert_eq!(calibrate(&["--idle-as-is"]).dma_latency(true), None);
        assert_eq!(
            calibrate(&["--dma-latency", "20"]).dma_latency(true),
            Some(20)
        );
        let e = Cli::try_parse_from([
            "latlab",
            "net",
            "calibrate",
            "--idle-as-is",
            "--dma-latency",
            "0",
        ])
        .unwrap_err();
        assert!(e.to_string().contains("--idle-as-is"), "{e}");
    }

    fn probe(args: &[&str]) -> net::ProbeArgs {
        let cli = Cli::try_parse_from(["latlab", "net", "probe"].iter().chain(args)).unwrap();
        let Command::Net(net::NetCommand::Probe(a)) = cli.command else {
            panic!()
        };
        a
    }

    /// Without --flows: one flow, or one per agent; a --flows given is kept as given (the
    /// agents' split refuses one fewer than the agents).
    #[test]
    fn flows_default_to_one_per_agent_and_a_given_one_is_kept() {
        let to = ["--to", "127.0.0.1:7000"];
        let flows = |extra: &[&str], agents| {
            let args: Vec<&str> = to.iter().chain(extra).copied().collect();
            probe(&args).job(agents).unwrap().probe.flows
        };
        assert_eq!(flows(&[], None), 1);
        assert_eq!(flows(&[], Some(3)), 3);
        assert_eq!(flows(&["--flows", "1"], Some(3)), 1);
        assert_eq!(flows(&["--flows", "4"], None), 4);
        assert_eq!(flows(&["--flows", "4"], Some(2)), 4);
        let job = latlab_net::run::ProbeJob::try_from(&probe(&to)).unwrap();
        assert_eq!(job.probe.flows, 1);
    }

    #[test]
    fn where_times_injector_check_holds_the_idle_state_as_the_other_checks_do() {
        let wt = |args: &[&str]| {
            let cli =
                Cli::try_parse_from(["latlab", "experiment", "where-time"].iter().chain(args))
                    .unwrap();
            let Command::Experiment(experiment::ExperimentCommand::WhereTime(a)) = cli.command
            else {
                panic!()
            };
            a
        };
        assert_eq!(wt(&[]).check_idle_hold(true), Some(0));
        assert_eq!(wt(&[]).check_idle_hold(false), None, "no hold without root");
        assert_eq!(wt(&["--idle-as-is"]).check_idle_hold(true), None);
        assert_eq!(
            wt(&["--dma-latency", "20"]).check_idle_hold(true),
            None,
            "the whole run is held, the check within it"
        );
        assert!(Cli::try_parse_from([
            "latlab",
            "experiment",
            "where-time",
            "--idle-as-is",
            "--dma-latency",
            "0",
        ])
        .is_err());
    }
}
