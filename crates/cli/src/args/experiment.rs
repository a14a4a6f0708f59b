//! `latlab experiment …`: each paper's key experiment, run on this machine. Every
//! experiment writes its result files first, then figures, a summary and an HTML report
//! built from those files.

use super::common::{duration_arg, positive_duration_arg, OutputArgs};
use crate::exit::usage;
use clap::{Args, Subcommand};
use latlab_core::units::Nanos;
use latlab_host::where_time::{App, WhereTimeConfig, WhereTimeError};
use latlab_sys::sched;
use std::path::PathBuf;

/// `--open-loop-rate`: a fixed request rate, or the closed-loop peer's own.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum OpenLoopRate {
    /// This many requests per second at every delay.
    Fixed(latlab_core::parse::Rate),
    /// This fraction of the rate the closed-loop client achieved just before, at the same
    /// delay (1: the same offered load).
    Peer(f64),
}

fn open_loop_rate_arg(s: &str) -> Result<OpenLoopRate, String> {
    let t = s.trim();
    if t == "peer" {
        return Ok(OpenLoopRate::Peer(1.0));
    }
    // The range of F is the library's to check (WhereTimeConfig::validate), once.
    if let Some(f) = t.strip_prefix("peer:") {
        return f.parse::<f64>().map(OpenLoopRate::Peer).map_err(|_| {
            format!(
                "'{s}' is not valid; peer:F takes a fraction F in (0, {}], e.g. peer:0.5",
                latlab_host::where_time::MAX_PEER_FRACTION
            )
        });
    }
    super::net_load::request_rate_arg(s)
        .map(OpenLoopRate::Fixed)
        .map_err(|e| format!("{e}, or 'peer' (the closed-loop client's own rate)"))
}

/// `latlab experiment …`
#[derive(Debug, Subcommand)]
pub enum ExperimentCommand {
    /// How to Measure the Killer Microsecond, on one host: every measurement method
    /// against an OS-configuration ladder of the network function, on the testbed.
    #[command(
        name = "killer-us",
        after_help = "Examples:
  sudo latlab experiment killer-us --quick          (within 2 minutes; fewer samples on a busy host)
  sudo latlab experiment killer-us --quick --rate 5kpps   (no rate trials)
  sudo latlab experiment killer-us -o results/killer-us
  latlab experiment killer-us --quick --loopback     (no root: reflector on loopback)

Methods: user TSC with blocking receive (netperf-like), user TSC with busy polling
(TRex-like), kernel bypass with user TSC (an AF_XDP generator, TRex/MoonGen-SW-like;
testbed, root), kernel timestamps (driver to driver), hardware where the NIC can. Ladder:
default (blocking, unpinned), pinned, pinned+busy-poll, pinned+busy-poll+SCHED_FIFO,
pinned+busy-poll with a CPU hog beside the NF, DPDK's testpmd (where installed) and
latlab's forwarder over AF_XDP (testbed, root). First it checks which CPUs are quiet and,
without --rate, the highest rate at which the generator keeps its schedule here, and says
what it chose. The SCHED_FIFO rung runs with real-time throttling off (root; restored
after, also on Ctrl-C) or is reported as not measurable. Writes every result file, one
CCDF per method, a report that leads with the answer, and a summary (summary.md,
summary.csv)."
    )]
    KillerUs(super::net::KillerUsArgs),

    /// The Hourglass paper's Section 5 scenarios adapted to this machine: context-switch
    /// cost, cache cost, dispatch latency, deadlines under receive load, response-time
    /// analysis, SCHED_DEADLINE reservations. Writes results, figures and a summary.
    #[command(after_help = "Examples:
  latlab experiment hourglass
  latlab experiment hourglass --duration 20s -o latlab-results/hourglass
  latlab experiment hourglass --duration 1s --quick --only 5.1,5.5")]
    Hourglass(super::sched::HourglassExperimentArgs),

    /// How much added network latency real applications bear (Where Has My Time Gone?,
    /// Fig. 1): memcached/memcaslap, nginx/wrk and PostgreSQL/pgbench across client, delay
    /// and server namespaces, with latlab's injector adding 0 to 1000 us per round trip.
    #[command(after_help = "Examples:
  latlab experiment where-time                          (11 delays x 5 repeats x 3 apps, about 13 min)
  latlab experiment where-time --quick                  (3 delays, 1 repeat, about 20 s)
  latlab experiment where-time --delays 0,10us,100us --repeats 3 --apps memcached
  latlab experiment where-time -o wt.json --plot wt.svg
  latlab experiment where-time --apps memcached,nginx --open-loop-rate 5krps   (+ latlab's open loop at 5k requests/s)

Needs root and the packages memcached, libmemcached-tools (memcaslap), nginx-light, wrk and
postgresql (postgres, initdb, pgbench; `make deps-demo` installs them). The servers and
clients are started and stopped by the experiment (PostgreSQL in a private cluster, as the
account postgres or nobody, deleted at the end); the delay applies to client-to-server frames, so a request/response round trip
gains exactly the added delay. Before the curve, the injector's base latency and its shift
at 20 us are measured and reported.")]
    WhereTime(WhereTimeArgs),

    /// The DFS experiment: a real MPI run (best effort vs DFS, plus the MPI_Put benchmark)
    /// on this machine and the simulator at 64–384 nodes, the paper's Figs. 6–9 and a
    /// summary table.
    #[command(after_help = "Examples:
  latlab experiment dfs
  latlab experiment dfs -o results/dfs --nodes 64,128 --no-mpi
  latlab experiment dfs --intervals 12 --drop-intervals 60

Writes into -o/--output: sim-<nodes>-<mode>.json, sim-drop-*.json, mpi-*.json, fig6..fig9
figures (.svg, or .png with --format png), summary.md and experiment.json (kind dfs.experiment).")]
    Dfs(super::dfs::DfsExperimentArgs),
}

/// Options of `latlab experiment where-time`.
#[derive(Debug, Args)]
pub struct WhereTimeArgs {
    /// Added round-trip delays, comma separated (must include 0); default: the paper's
    /// 0,1us,2us,5us,10us,20us,50us,100us,200us,500us,1ms.
    #[arg(long, value_delimiter = ',', value_parser = delay_arg)]
    pub delays: Vec<Nanos>,
    /// Runs per delay and application.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub repeats: u32,
    /// Length of one benchmark run (whole seconds).
    #[arg(long, default_value = "4s", value_parser = positive_duration_arg)]
    pub run_time: Nanos,
    /// Applications, comma separated: memcached, nginx, postgresql.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "memcached,nginx,postgresql"
    )]
    pub apps: Vec<String>,
    /// Directory of PostgreSQL's postgres, initdb and pgbench (default: the newest
    /// /usr/lib/postgresql/<version>/bin, then PATH).
    #[arg(long, value_name = "DIR")]
    pub pg_bin: Option<PathBuf>,
    /// Concurrent connections of each benchmark client.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub connections: u32,
    /// CPU of the injector (default: the last allowed CPU); servers and clients share the
    /// first allowed CPU.
    #[arg(long)]
    pub cpu: Option<u32>,
    /// Run the injector under SCHED_FIFO at this priority (1-99), so that other load on
    /// the host cannot preempt it; it then owns its CPU (servers and clients do not).
    #[arg(long, value_name = "PRIO", value_parser = clap::value_parser!(i32).range(1..=99))]
    pub fifo: Option<i32>,
    /// Also load memcached and nginx with latlab's open-loop generator (`latlab net load`)
    /// after each closed-loop run: at this fixed offered load (e.g. 5krps), or with `peer`
    /// at the rate the closed-loop client has just achieved (`peer:0.5`: half of it),
    /// beside that client's own latency (memcaslap -S, wrk --latency). Latency from the
    /// scheduled send.
    #[arg(long, value_name = "RATE|peer[:F]", value_parser = open_loop_rate_arg)]
    pub open_loop_rate: Option<OpenLoopRate>,
    /// How latlab's open loop waits (as `net load --io`): blocking (the default here: it
    /// shares its CPU with the server), adaptive or busy.
    #[arg(long, value_enum, default_value = "blocking", value_name = "IO")]
    pub open_loop_io: super::net_load::LoadIoArg,
    /// Do not attribute the injector's stalls during its check (by default, as root, the
    /// check records kernel events and the summary says how much of the injector's lost
    /// time lay outside the kernel).
    #[arg(long)]
    pub no_explain: bool,
    /// Quick mode for tests: delays 0,20us,200us, one repeat, 1 s runs.
    #[arg(long)]
    pub quick: bool,
    #[command(flatten)]
    pub out: OutputArgs,
    /// Draw normalised performance against added delay; FILE defaults to the result's
    /// name with .svg.
    #[arg(long, value_name = "FILE", num_args = 0..=1)]
    pub plot: Option<Option<PathBuf>>,
    #[command(flatten)]
    pub idle: super::common::IdleArgs,
    /// Leave the CPUs' idle policy alone during the injector check too. By default, as
    /// root, the check alone holds /dev/cpu_dma_latency at 0 µs, as `net delay --testbed`
    /// does (an endpoint that halts while the delay runs adds its wake-up to the shift);
    /// the application runs keep the run's idle policy (--dma-latency holds it for all).
    #[arg(long, conflicts_with = "dma_latency")]
    pub idle_as_is: bool,
}

impl WhereTimeArgs {
    /// The target the injector check holds on its own: the rule of every instrument check
    /// ([`super::common::IdleArgs::for_check`]), except that with `--dma-latency` the whole
    /// run is held (by `commands::run`) and the check with it, so it holds nothing more.
    pub fn check_idle_hold(&self, root: bool) -> Option<u32> {
        match self.idle.dma_latency {
            Some(_) => None,
            None => self.idle.for_check(root, self.idle_as_is),
        }
    }
}

fn delay_arg(s: &str) -> Result<Nanos, String> {
    if s.trim() == "0" {
        return Ok(Nanos(0));
    }
    duration_arg(s)
}

impl TryFrom<&WhereTimeArgs> for WhereTimeConfig {
    type Error = anyhow::Error;

    fn try_from(a: &WhereTimeArgs) -> anyhow::Result<WhereTimeConfig> {
        let mut cfg = if a.quick {
            WhereTimeConfig::quick()
        } else {
            WhereTimeConfig::default()
        };
        if !a.delays.is_empty() {
            cfg.delays_ns = a.delays.iter().map(|d| d.get()).collect();
            cfg.delays_ns.sort_unstable();
            cfg.delays_ns.dedup();
        }
        if !a.quick {
            cfg.repeats = a.repeats;
            cfg.run_time = a.run_time;
        }
        cfg.apps = a
            .apps
            .iter()
            .map(|n| {
                App::from_name(n.trim()).ok_or_else(|| {
                    usage(format!(
                        "--apps: unknown application '{n}'; accepted: memcached, nginx, postgresql"
                    ))
                })
            })
            .collect::<anyhow::Result<_>>()?;
        cfg.connections = a.connections;
        cfg.fifo = a.fifo;
        cfg.pg_bin.clone_from(&a.pg_bin);
        cfg.explain = !a.no_explain;
        cfg.check_idle_hold_us = a.check_idle_hold(latlab_sys::netns::is_root());
        cfg.open_loop_milli_rps = match a.open_loop_rate {
            Some(OpenLoopRate::Fixed(latlab_core::parse::Rate::MilliPps(m))) => Some(m),
            Some(OpenLoopRate::Fixed(_)) => {
                return Err(usage(
                    "--open-loop-rate: expected requests per second, e.g. 5krps, or 'peer'",
                ))
            }
            Some(OpenLoopRate::Peer(_)) | None => None,
        };
        cfg.open_loop_io = a.open_loop_io.into();
        cfg.open_loop_peer_fraction = match a.open_loop_rate {
            Some(OpenLoopRate::Peer(f)) => Some(f),
            _ => None,
        };
        let allowed = sched::allowed_cpus();
        cfg.place(a.cpu, &allowed);
        match cfg.validate(&allowed) {
            Err(WhereTimeError::Config(why)) => return Err(usage(why)),
            other => other?,
        }
        Ok(cfg)
    }
}
