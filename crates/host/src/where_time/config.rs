//! What the where-time experiment runs (applications, delays, placement), its errors, and
//! the check that the benchmark programs are installed.

use latlab_core::units::Nanos;
use latlab_net::delay::engine;
use latlab_net::delay::testbed;
use latlab_sys::netns;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The result kind.
pub const RESULT_KIND: &str = "experiment.where_time";

/// The paper's added delays (µs).
pub const PAPER_DELAYS_US: [u64; 11] = [0, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000];

/// An application and its benchmark.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum App {
    /// memcached + memcaslap.
    Memcached,
    /// nginx + wrk.
    Nginx,
    /// PostgreSQL + pgbench's TPC-B-like transactions (the paper's TPC-C on MySQL).
    Postgresql,
}

impl App {
    /// Every application, in the order of the paper's figure legend (and the default).
    pub const ALL: [App; 3] = [App::Memcached, App::Nginx, App::Postgresql];

    /// Name on the command line and in results.
    pub fn name(self) -> &'static str {
        match self {
            App::Memcached => "memcached",
            App::Nginx => "nginx",
            App::Postgresql => "postgresql",
        }
    }

    /// Parses a name.
    pub fn from_name(s: &str) -> Option<App> {
        App::ALL.into_iter().find(|a| a.name() == s)
    }

    /// The metric reported.
    pub fn metric(self) -> &'static str {
        match self {
            App::Memcached => "memcaslap throughput (ops/s)",
            App::Nginx => "wrk requests/s",
            App::Postgresql => "pgbench TPC-B-like transactions/s",
        }
    }

    /// The programs it needs (servers and tools, then the client) and the Debian packages
    /// providing them.
    pub fn programs(self) -> &'static [(&'static str, &'static str)] {
        match self {
            App::Memcached => &[
                ("memcached", "memcached"),
                ("memcaslap", "libmemcached-tools"),
            ],
            App::Nginx => &[("nginx", "nginx-light"), ("wrk", "wrk")],
            App::Postgresql => &[
                ("postgres", "postgresql"),
                ("initdb", "postgresql"),
                ("pgbench", "postgresql"),
            ],
        }
    }
}

/// What to run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WhereTimeConfig {
    /// Added round-trip delays, ns (must include 0, the baseline).
    pub delays_ns: Vec<u64>,
    /// Runs per (delay, application).
    pub repeats: u32,
    /// Length of one benchmark run.
    pub run_time: Nanos,
    /// Applications.
    pub apps: Vec<App>,
    /// Concurrent connections of each benchmark client (one client thread).
    pub connections: u32,
    /// CPU of the injector.
    pub engine_cpu: Option<u32>,
    /// CPU of servers and clients.
    pub endpoint_cpu: Option<u32>,
    /// Whether `--cpu` named the injector's CPU; otherwise the experiment spins on every
    /// allowed CPU first and gives the injector the quietest.
    #[serde(default)]
    pub cpu_asked: bool,
    /// Attribute the injector's stalls during its check to their causes from kernel
    /// events (`--no-explain` turns it off; absent in older files: off).
    #[serde(default)]
    pub explain: bool,
    /// Measured time of the injector check before the experiment.
    pub check_duration: Nanos,
    /// Hold `/dev/cpu_dma_latency` at this many µs during the injector check alone, as
    /// `latlab net delay --testbed` holds it for its check (absent in older files: not
    /// held). The application runs keep the idle policy the run has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check_idle_hold_us: Option<u32>,
    /// Run the injector under SCHED_FIFO at this priority, so that other load on the host
    /// cannot preempt it (it then owns its CPU, as a hardware appliance would). Servers and
    /// clients stay SCHED_OTHER: at equal FIFO priority a spinning client starves its server.
    pub fifo: Option<i32>,
    /// Where PostgreSQL's `postgres`, `initdb` and `pgbench` are; `None`: the newest
    /// `/usr/lib/postgresql/<version>/bin` (Debian's layout), then `PATH`.
    #[serde(default)]
    pub pg_bin: Option<PathBuf>,
    /// Also load memcached and nginx with latlab's open-loop generator at this fixed
    /// offered load (thousandths of requests per second), after their closed-loop client
    /// at every delay: latency percentiles from each request's scheduled send, beside the
    /// closed-loop client's saturation throughput (`--open-loop-rate`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_loop_milli_rps: Option<u64>,
    /// Also load memcached and nginx with latlab's open-loop generator at this fraction of
    /// the rate their closed-loop client has just achieved at the same delay and repeat
    /// (`--open-loop-rate peer`: 1, the same offered load; `peer:F`: F times it): the
    /// clients then also print their latency (memcaslap `-S`, wrk `--latency`), and each
    /// open-loop run is stored beside the peer's latency. Absent in older files: off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_loop_peer_fraction: Option<f64>,
    /// How latlab's open loop waits (`--open-loop-io`; default blocking: it shares its CPU
    /// with the server). Files written before it existed read as adaptive, what ran then.
    #[serde(default = "adaptive")]
    pub open_loop_io: latlab_net::rpc::LoadIo,
}

fn adaptive() -> latlab_net::rpc::LoadIo {
    latlab_net::rpc::LoadIo::Adaptive
}

impl Default for WhereTimeConfig {
    fn default() -> Self {
        WhereTimeConfig {
            delays_ns: PAPER_DELAYS_US.iter().map(|u| u * 1_000).collect(),
            repeats: 5,
            run_time: Nanos::from_secs(4),
            apps: App::ALL.to_vec(),
            connections: 4,
            engine_cpu: None,
            endpoint_cpu: None,
            cpu_asked: false,
            explain: true,
            check_duration: Nanos::from_secs(2),
            check_idle_hold_us: None,
            fifo: None,
            pg_bin: None,
            open_loop_milli_rps: None,
            open_loop_peer_fraction: None,
            open_loop_io: latlab_net::rpc::LoadIo::Blocking,
        }
    }
}

impl WhereTimeConfig {
    /// A quick configuration for tests: three delays, one repeat, 1 s runs.
    pub fn quick() -> WhereTimeConfig {
        WhereTimeConfig {
            delays_ns: vec![0, 20_000, 200_000],
            repeats: 1,
            run_time: Nanos::from_secs(1),
            check_duration: Nanos(500_000_000),
            ..WhereTimeConfig::default()
        }
    }

    /// Roughly how long a run takes, seconds.
    pub fn expected_secs(&self) -> f64 {
        let open = if self.open_loop_milli_rps.is_some() || self.open_loop_peer_fraction.is_some() {
            self.apps.iter().filter(|a| **a != App::Postgresql).count()
        } else {
            0
        };
        let runs =
            self.delays_ns.len() as f64 * f64::from(self.repeats) * (self.apps.len() + open) as f64;
        runs * (self.run_time.get() as f64 / 1e9 + 0.6)
            + (3 + super::injector::check_delays(&self.delays_ns).len()) as f64
                * self.check_duration.get() as f64
                / 1e9
            + 5.0
    }
}

/// Errors of the experiment.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WhereTimeError {
    /// A program is not installed.
    #[error(
        "'{program}' is not installed (Debian package {package}; `make deps-demo` installs it)"
    )]
    Missing {
        /// The program.
        program: &'static str,
        /// Its package.
        package: &'static str,
    },
    /// Bad configuration.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// Building the testbed.
    #[error(transparent)]
    Topology(#[from] netns::TopologyError),
    /// The injector.
    #[error(transparent)]
    Engine(#[from] engine::EngineError),
    /// The injector check.
    #[error(transparent)]
    Check(#[from] testbed::CheckError),
    /// A server or client failed.
    #[error("{0}")]
    Run(String),
    /// An OS error.
    #[error("{0}: {1}")]
    Io(String, #[source] std::io::Error),
    /// Starting or stopping memcached or nginx ([`latlab_net::serve`]).
    #[error(transparent)]
    Serve(#[from] latlab_net::serve::ServeError),
}

/// Debian installs each PostgreSQL major version's programs here, off `PATH`
/// (`/usr/bin/pgbench` is a wrapper that needs a configured cluster).
const DEBIAN_PG_ROOT: &str = "/usr/lib/postgresql";

/// The newest of `versions` (directory names like `15`, `9.6`), compared numerically part
/// by part; names that are not versions are ignored.
pub fn newest_version<'a>(versions: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let key = |v: &str| -> Option<Vec<u32>> { v.split('.').map(|p| p.parse().ok()).collect() };
    versions
        .into_iter()
        .filter_map(|v| Some((key(v)?, v)))
        .max()
        .map(|(_, v)| v)
}

/// Where PostgreSQL's programs are looked for: `pg_bin` when given (only there), else the
/// newest version's directory under `root` (Debian's layout) and then `path`.
pub fn pg_search_dirs(pg_bin: Option<&Path>, root: &Path, path: &[PathBuf]) -> Vec<PathBuf> {
    if let Some(d) = pg_bin {
        return vec![d.to_path_buf()];
    }
    let names: Vec<String> = std::fs::read_dir(root)
        .map(|rd| {
            rd.filter_map(|e| e.ok()?.file_name().into_string().ok())
                .collect()
        })
        .unwrap_or_default();
    newest_version(names.iter().map(String::as_str))
        .map(|v| root.join(v).join("bin"))
        .into_iter()
        .chain(path.iter().cloned())
        .collect()
}

fn path_dirs() -> Vec<PathBuf> {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default()
}

/// The first `dirs/program` that is a file.
fn find_in(program: &str, dirs: &[PathBuf]) -> Option<PathBuf> {
    dirs.iter().map(|d| d.join(program)).find(|p| p.is_file())
}

/// Every program of `apps`, found: the executable to run for each name.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Programs {
    found: Vec<(&'static str, PathBuf)>,
}

impl Programs {
    /// The executable of `program` (its bare name when it was not resolved).
    pub fn get(&self, program: &str) -> PathBuf {
        self.found
            .iter()
            .find(|(p, _)| *p == program)
            .map_or_else(|| PathBuf::from(program), |(_, path)| path.clone())
    }
}

/// Finds every program the configured applications need: PostgreSQL's in
/// [`pg_search_dirs`], the others on `PATH`.
///
/// # Errors
/// [`WhereTimeError::Missing`] for the first missing one.
pub fn find_programs(apps: &[App], pg_bin: Option<&Path>) -> Result<Programs, WhereTimeError> {
    let path = path_dirs();
    let pg = pg_search_dirs(pg_bin, Path::new(DEBIAN_PG_ROOT), &path);
    let mut found = Vec::new();
    for a in apps {
        let dirs = if *a == App::Postgresql { &pg } else { &path };
        for &(program, package) in a.programs() {
            let exe = find_in(program, dirs).ok_or(WhereTimeError::Missing { program, package })?;
            found.push((program, exe));
        }
    }
    Ok(Programs { found })
}

/// Checks that every program the configured applications need is installed (PostgreSQL's
/// where [`pg_search_dirs`] looks without `--pg-bin`).
///
/// # Errors
/// [`WhereTimeError::Missing`] for the first missing one.
pub fn check_programs(apps: &[App]) -> Result<(), WhereTimeError> {
    find_programs(apps, None).map(|_| ())
}
