//! What the where-time experiment runs (applications, delays, placement), its errors, and
//! the check that the benchmark programs are installed.

use latlab_core::units::Nanos;
use latlab_net::delay::engine;
use latlab_net::delay::testbed;
use latlab_sys::netns;
use serde::{Deserialize, Serialize};

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
}

impl App {
    /// Name on the command line and in results.
    pub fn name(self) -> &'static str {
        match self {
            App::Memcached => "memcached",
            App::Nginx => "nginx",
        }
    }

    /// Parses a name.
    pub fn from_name(s: &str) -> Option<App> {
        [App::Memcached, App::Nginx]
            .into_iter()
            .find(|a| a.name() == s)
    }

    /// The metric reported.
    pub fn metric(self) -> &'static str {
        match self {
            App::Memcached => "memcaslap throughput (ops/s)",
            App::Nginx => "wrk requests/s",
        }
    }

    /// The programs it needs (server, client) and the Debian packages providing them.
    pub fn programs(self) -> [(&'static str, &'static str); 2] {
        match self {
            App::Memcached => [
                ("memcached", "memcached"),
                ("memcaslap", "libmemcached-tools"),
            ],
            App::Nginx => [("nginx", "nginx-light"), ("wrk", "wrk")],
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
    /// Measured time of the injector check before the experiment.
    pub check_duration: Nanos,
    /// Run the injector under SCHED_FIFO at this priority, so that other load on the host
    /// cannot preempt it (it then owns its CPU, as a hardware appliance would). Servers and
    /// clients stay SCHED_OTHER: at equal FIFO priority a spinning client starves its server.
    pub fifo: Option<i32>,
}

impl Default for WhereTimeConfig {
    fn default() -> Self {
        WhereTimeConfig {
            delays_ns: PAPER_DELAYS_US.iter().map(|u| u * 1_000).collect(),
            repeats: 5,
            run_time: Nanos::from_secs(4),
            apps: vec![App::Memcached, App::Nginx],
            connections: 4,
            engine_cpu: None,
            endpoint_cpu: None,
            check_duration: Nanos::from_secs(2),
            fifo: None,
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
        let runs = self.delays_ns.len() as f64 * f64::from(self.repeats) * self.apps.len() as f64;
        runs * (self.run_time.get() as f64 / 1e9 + 0.6)
            + 3.0 * self.check_duration.get() as f64 / 1e9
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
}

fn which(program: &str) -> bool {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(program).is_file()))
        .unwrap_or(false)
}

/// Checks that every program the configured applications need is installed.
///
/// # Errors
/// [`WhereTimeError::Missing`] for the first missing one.
pub fn check_programs(apps: &[App]) -> Result<(), WhereTimeError> {
    for a in apps {
        for (program, package) in a.programs() {
            if !which(program) {
                return Err(WhereTimeError::Missing { program, package });
            }
        }
    }
    Ok(())
}
