//! `latlab experiment where-time`: how much added network latency an application can bear
//! (*Where Has My Time Gone?* Fig. 1).
//!
//! Client ⇄ delay ⇄ server network namespaces ([`latlab_net::delay::testbed`]); latlab's
//! injector ([`latlab_net::delay::engine`]) runs pinned in the delay namespace and adds the
//! delay to every client → server frame, so a request/response round trip gains exactly
//! the added delay. Real servers run in the server namespace and real benchmark clients in
//! the client namespace, started and stopped here:
//!
//! - memcached driven by `memcaslap` (Debian `libmemcached-tools`), metric: throughput
//!   (TPS, operations per second);
//! - nginx driven by `wrk`, metric: requests per second (the paper used Apache with `ab`;
//!   nginx/wrk is the closest pair Debian packages well).
//!
//! The experiment first verifies the injector ([`latlab_net::delay::testbed::check`]:
//! base latency and the shift at 20 µs), then runs every (delay, application) pair
//! `repeats` times, interleaved (repeat 1 of every delay, then repeat 2, ...), so that slow
//! drifts of the host's load spread over all delays. Results are normalised to the
//! zero-delay mean of the same application ([`normalise`]).

pub mod parse;
pub mod sections;
mod session;

pub use session::{run_to_file, SessionError};

use latlab_core::units::Nanos;
use latlab_net::delay::engine::{self, Direction, EngineConfig};
use latlab_net::delay::testbed::{self, Testbed};
use latlab_net::delay::DelaySpec;
use latlab_sys::netns;
use latlab_sys::tsc::Clock;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

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

/// One benchmark run's raw figures.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RawRun {
    /// Added delay, ns.
    pub delay_ns: u64,
    /// Repeat index (0-based).
    pub repeat: u32,
    /// The metric (ops/s or requests/s).
    pub value: f64,
    /// Operations/requests completed.
    pub completed: u64,
    /// Errors the client reported (wrk socket errors + non-2xx; memcaslap get misses).
    pub errors: u64,
    /// Frames the injector dropped during the run (should be 0).
    pub injector_drops: u64,
}

/// All runs of one application.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AppRuns {
    /// Application name.
    pub app: String,
    /// What `value` measures.
    pub metric: String,
    /// Every run, in execution order.
    pub runs: Vec<RawRun>,
}

/// One point of the normalised curve.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NormPoint {
    /// Added delay, ns.
    pub delay_ns: u64,
    /// Runs at this delay.
    pub n: usize,
    /// Mean of the runs / mean of the zero-delay runs.
    pub mean: f64,
    /// Sample standard deviation of the normalised runs (0 with one run).
    pub sd: f64,
    /// Smallest normalised run.
    pub min: f64,
    /// Largest normalised run.
    pub max: f64,
}

/// The `data` of a where-time result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WhereTimeData {
    /// Raw runs per application.
    pub apps: Vec<AppRuns>,
    /// The injector check before the experiment.
    pub injector: latlab_net::delay::report::CheckSummary,
}

/// Normalises an application's runs to its zero-delay mean; points in increasing delay.
/// `None` without zero-delay runs or with a zero baseline.
pub fn normalise(runs: &[RawRun]) -> Option<Vec<NormPoint>> {
    let base: Vec<f64> = runs
        .iter()
        .filter(|r| r.delay_ns == 0)
        .map(|r| r.value)
        .collect();
    if base.is_empty() {
        return None;
    }
    let b = base.iter().sum::<f64>() / base.len() as f64;
    if b <= 0.0 || !b.is_finite() {
        return None;
    }
    let mut delays: Vec<u64> = runs.iter().map(|r| r.delay_ns).collect();
    delays.sort_unstable();
    delays.dedup();
    Some(
        delays
            .into_iter()
            .map(|d| {
                let v: Vec<f64> = runs
                    .iter()
                    .filter(|r| r.delay_ns == d)
                    .map(|r| r.value / b)
                    .collect();
                let n = v.len();
                let mean = v.iter().sum::<f64>() / n as f64;
                let sd = if n > 1 {
                    (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
                } else {
                    0.0
                };
                NormPoint {
                    delay_ns: d,
                    n,
                    mean,
                    sd,
                    min: v.iter().copied().fold(f64::INFINITY, f64::min),
                    max: v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                }
            })
            .collect(),
    )
}

/// The paper's reported drops (fraction of the baseline lost) for comparison:
/// `(application, delay µs, drop)`.
pub const PAPER_DROPS: [(&str, u64, f64); 3] = [
    ("memcached", 20, 0.25),
    ("memcached", 100, 0.75),
    ("apache (here: nginx)", 100, 0.46),
];

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

/// A server process in the server namespace, killed (by its pid) when dropped.
struct Server {
    child: Child,
    name: &'static str,
}

impl Drop for Server {
    fn drop(&mut self) {
        // SIGTERM first: nginx's master then stops its workers (SIGKILL would orphan them).
        let _ = latlab_sys::process::terminate(self.child.id());
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(3) {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn spawn_in(
    ns: &str,
    cpu: Option<u32>,
    fifo: Option<i32>,
    argv: &[&str],
) -> std::io::Result<Child> {
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", ns]);
    if let Some(p) = fifo {
        cmd.args(["chrt", "-f", &p.to_string()]);
    }
    if let Some(c) = cpu {
        cmd.args(["taskset", "-c", &c.to_string()]);
    }
    cmd.args(argv)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
}

fn run_in(
    ns: &str,
    cpu: Option<u32>,
    fifo: Option<i32>,
    argv: &[&str],
    limit: Duration,
) -> Result<String, WhereTimeError> {
    let child = spawn_in(ns, cpu, fifo, argv)
        .map_err(|e| WhereTimeError::Io(format!("starting {}", argv[0]), e))?;
    let start = Instant::now();
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let out = match rx.recv_timeout(limit) {
        Ok(r) => r.map_err(|e| WhereTimeError::Io(format!("running {}", argv[0]), e))?,
        Err(_) => {
            // Our own child, by its pid.
            let _ = latlab_sys::process::terminate(pid);
            return Err(WhereTimeError::Run(format!(
                "{} did not finish within {:.0} s",
                argv[0],
                start.elapsed().as_secs_f64()
            )));
        }
    };
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if !out.status.success() {
        return Err(WhereTimeError::Run(format!(
            "{} failed ({}): {}",
            argv[0],
            out.status,
            text.lines().last().unwrap_or("")
        )));
    }
    Ok(text)
}

fn wait_port(ns: &str, addr: &str, timeout: Duration) -> Result<(), WhereTimeError> {
    let (ns, addr) = (ns.to_string(), addr.to_string());
    std::thread::spawn(move || -> Result<(), String> {
        netns::enter(&ns).map_err(|e| e.to_string())?;
        let start = Instant::now();
        let a: std::net::SocketAddr = addr.parse().map_err(|_| format!("bad address {addr}"))?;
        loop {
            if std::net::TcpStream::connect_timeout(&a, Duration::from_millis(100)).is_ok() {
                return Ok(());
            }
            if start.elapsed() > timeout {
                return Err(format!("nothing listens on {addr} after {timeout:?}"));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    })
    .join()
    .expect("port waiter panicked")
    .map_err(WhereTimeError::Run)
}

const MEMCACHED_PORT: u16 = 11_211;
const NGINX_PORT: u16 = 8_080;

fn nginx_conf(dir: &std::path::Path) -> String {
    format!(
        "user root;\nworker_processes 1;\ndaemon off;\npid {d}/nginx.pid;\nerror_log {d}/error.log;\n\
         events {{ worker_connections 1024; }}\n\
         http {{\n  access_log off;\n  client_body_temp_path {d};\n  proxy_temp_path {d};\n  fastcgi_temp_path {d};\n  uwsgi_temp_path {d};\n  scgi_temp_path {d};\n\
         server {{ listen {ip}:{NGINX_PORT}; location / {{ root {d}/www; }} }}\n}}\n",
        d = dir.display(),
        ip = testbed::SERVER_IP
    )
}

fn start_server(
    tb: &Testbed,
    app: App,
    cpu: Option<u32>,
    fifo: Option<i32>,
    dir: &std::path::Path,
) -> Result<Server, WhereTimeError> {
    let io = |what: &str| {
        let w = what.to_string();
        move |e| WhereTimeError::Io(w, e)
    };
    let (child, port) = match app {
        App::Memcached => (
            spawn_in(
                &tb.server,
                cpu,
                fifo,
                &[
                    "memcached",
                    "-u",
                    "root",
                    "-l",
                    testbed::SERVER_IP,
                    "-p",
                    &MEMCACHED_PORT.to_string(),
                    "-U",
                    "0",
                    "-t",
                    "1",
                    "-m",
                    "256",
                ],
            )
            .map_err(io("starting memcached"))?,
            MEMCACHED_PORT,
        ),
        App::Nginx => {
            std::fs::create_dir_all(dir.join("www")).map_err(io("creating nginx's directory"))?;
            // A small page, as the paper's Apache benchmark served.
            std::fs::write(
                dir.join("www/index.html"),
                "<html><body>latlab where-time</body></html>\n".repeat(16),
            )
            .map_err(io("writing nginx's page"))?;
            let conf = dir.join("nginx.conf");
            std::fs::write(&conf, nginx_conf(dir)).map_err(io("writing nginx.conf"))?;
            let conf_s = conf.to_string_lossy().into_owned();
            let prefix = dir.to_string_lossy().into_owned();
            (
                spawn_in(
                    &tb.server,
                    cpu,
                    fifo,
                    &["nginx", "-c", &conf_s, "-p", &prefix],
                )
                .map_err(io("starting nginx"))?,
                NGINX_PORT,
            )
        }
    };
    let server = Server {
        child,
        name: app.name(),
    };
    wait_port(
        &tb.server,
        &format!("{}:{port}", testbed::SERVER_IP),
        Duration::from_secs(5),
    )
    .map_err(|e| WhereTimeError::Run(format!("{} did not come up: {e}", server.name)))?;
    Ok(server)
}

fn bench(tb: &Testbed, app: App, cfg: &WhereTimeConfig) -> Result<(f64, u64, u64), WhereTimeError> {
    let secs = (cfg.run_time.get() / 1_000_000_000).max(1);
    let limit = Duration::from_secs(secs + 20);
    let conns = cfg.connections.to_string();
    match app {
        App::Memcached => {
            let server = format!("{}:{MEMCACHED_PORT}", testbed::SERVER_IP);
            let t = format!("{secs}s");
            let out = run_in(
                &tb.client,
                cfg.endpoint_cpu,
                None,
                &[
                    "memcaslap",
                    "-s",
                    &server,
                    "-T",
                    "1",
                    "-c",
                    &conns,
                    "-t",
                    &t,
                ],
                limit,
            )?;
            let r = parse::memcaslap(&out)
                .map_err(|e| WhereTimeError::Run(format!("memcaslap: {e}")))?;
            Ok((r.tps, r.ops, r.get_misses))
        }
        App::Nginx => {
            let url = format!("http://{}:{NGINX_PORT}/", testbed::SERVER_IP);
            let d = format!("{secs}s");
            let out = run_in(
                &tb.client,
                cfg.endpoint_cpu,
                None,
                &["wrk", "-t", "1", "-c", &conns, "-d", &d, &url],
                limit,
            )?;
            let r = parse::wrk(&out).map_err(|e| WhereTimeError::Run(format!("wrk: {e}")))?;
            Ok((r.requests_per_sec, r.requests, r.socket_errors + r.non_2xx))
        }
    }
}

/// Everything an experiment produced.
#[derive(Debug)]
pub struct WhereTimeOutcome {
    /// Raw runs per application.
    pub apps: Vec<AppRuns>,
    /// The injector check.
    pub check: testbed::CheckOutcome,
}

/// Runs the experiment. `progress` is called with a short label before each run.
///
/// # Errors
/// [`WhereTimeError`]; servers and namespaces are cleaned up on every path.
pub fn run(
    cfg: &WhereTimeConfig,
    clock: &Clock,
    mut progress: impl FnMut(&str),
) -> Result<WhereTimeOutcome, WhereTimeError> {
    if !cfg.delays_ns.contains(&0) {
        return Err(WhereTimeError::Config(
            "the delays must include 0 (the baseline)".into(),
        ));
    }
    if cfg.repeats == 0 || cfg.apps.is_empty() {
        return Err(WhereTimeError::Config(
            "need at least one repeat and one application".into(),
        ));
    }
    check_programs(&cfg.apps)?;
    progress("verifying the injector");
    let check = testbed::check(
        &testbed::CheckConfig {
            delay_ns: 20_000,
            duration: cfg.check_duration,
            rounds: 2,
            compare_netem: false,
            engine_cpu: cfg.engine_cpu,
            endpoint_cpu: cfg.endpoint_cpu,
            fifo: cfg.fifo,
            busy_client: false,
        },
        clock,
    )?;
    let tb = Testbed::build("wt", false)?;
    let dir: PathBuf =
        std::env::temp_dir().join(format!("latlab-where-time-{}", std::process::id()));
    std::fs::create_dir_all(&dir)
        .map_err(|e| WhereTimeError::Io("creating a scratch directory".into(), e))?;
    let mut apps: Vec<AppRuns> = cfg
        .apps
        .iter()
        .map(|a| AppRuns {
            app: a.name().into(),
            metric: a.metric().into(),
            runs: Vec::new(),
        })
        .collect();
    let result = (|| -> Result<(), WhereTimeError> {
        let servers: Vec<Server> = cfg
            .apps
            .iter()
            .map(|a| start_server(&tb, *a, cfg.endpoint_cpu, None, &dir))
            .collect::<Result<_, _>>()?;
        for repeat in 0..cfg.repeats {
            for &d in &cfg.delays_ns {
                let mut ecfg = EngineConfig::new(
                    testbed::DELAY_IF_CLIENT,
                    testbed::DELAY_IF_SERVER,
                    DelaySpec::Constant { ns: d },
                );
                ecfg.direction = Direction::AToB;
                ecfg.capacity = 65_536;
                let stop = AtomicBool::new(false);
                let res = std::thread::scope(|s| -> Result<(), WhereTimeError> {
                    let (tx, rx) = std::sync::mpsc::channel();
                    let (stop_r, ecfg_r, tb_r) = (&stop, &ecfg, &tb);
                    let h = s.spawn(move || -> Result<engine::EngineReport, WhereTimeError> {
                        netns::enter(&tb_r.delay)
                            .map_err(|e| WhereTimeError::Run(e.to_string()))?;
                        if let Some(c) = cfg.engine_cpu {
                            latlab_sys::sched::pin_current_thread(c)
                                .map_err(|e| WhereTimeError::Run(e.to_string()))?;
                        }
                        if let Some(p) = cfg.fifo {
                            latlab_sys::sched::set_fifo(p)
                                .map_err(|e| WhereTimeError::Run(e.to_string()))?;
                        }
                        Ok(engine::run(ecfg_r, clock, stop_r, || {
                            let _ = tx.send(());
                        })?)
                    });
                    if rx.recv().is_err() {
                        return Err(h.join().expect("injector panicked").err().unwrap_or_else(
                            || WhereTimeError::Run("injector ended early".into()),
                        ));
                    }
                    let mut out = Vec::new();
                    let mut err = None;
                    for (i, a) in cfg.apps.iter().enumerate() {
                        progress(&format!(
                            "{} at {} (repeat {}/{})",
                            a.name(),
                            latlab_core::units::format_ns(d as f64),
                            repeat + 1,
                            cfg.repeats
                        ));
                        match bench(&tb, *a, cfg) {
                            Ok(v) => out.push((i, v)),
                            Err(e) => {
                                err = Some(e);
                                break;
                            }
                        }
                    }
                    stop_r.store(true, Ordering::Relaxed);
                    let rep = h.join().expect("injector panicked")?;
                    if let Some(e) = err {
                        return Err(e);
                    }
                    let drops: u64 = rep
                        .directions
                        .iter()
                        .map(|x| {
                            x.queue.dropped_full
                                + x.queue.dropped_oversize
                                + x.send_failures
                                + x.kernel_rx.drops
                        })
                        .sum();
                    for (i, (value, completed, errors)) in out {
                        apps[i].runs.push(RawRun {
                            delay_ns: d,
                            repeat,
                            value,
                            completed,
                            errors,
                            injector_drops: drops,
                        });
                    }
                    Ok(())
                });
                res?;
            }
        }
        drop(servers);
        Ok(())
    })();
    let _ = std::fs::remove_dir_all(&dir);
    drop(tb);
    result?;
    Ok(WhereTimeOutcome { apps, check })
}

/// Fills the result: the injector check's histograms, every raw run in `data`, counters of
/// runs, errors and injector drops, and warnings.
///
/// # Errors
/// When the check's histograms cannot be merged.
pub fn fill_result(
    r: &mut latlab_core::results::ResultFile,
    o: &WhereTimeOutcome,
) -> Result<(), latlab_core::hist::HistError> {
    latlab_net::delay::report::fill_check(r, &o.check, 20_000)?;
    let check: latlab_net::delay::report::CheckData =
        serde_json::from_value(r.data.clone()).expect("fill_check wrote CheckData");
    for a in &o.apps {
        let errors: u64 = a.runs.iter().map(|x| x.errors).sum();
        let drops: u64 = a.runs.iter().map(|x| x.injector_drops).sum();
        r.counters
            .insert(format!("{}.runs", a.app), a.runs.len() as u64);
        r.counters.insert(format!("{}.errors", a.app), errors);
        r.counters
            .insert(format!("{}.injector_drops", a.app), drops);
        if errors > 0 {
            r.warnings.push(format!(
                "{}: the benchmark client reported {errors} errors",
                a.app
            ));
        }
        if drops > 0 {
            r.warnings.push(format!(
                "{}: the injector dropped {drops} frames during its runs",
                a.app
            ));
        }
    }
    r.data = serde_json::to_value(WhereTimeData {
        apps: o.apps.clone(),
        injector: check.summary,
    })
    .expect("plain data serialises");
    Ok(())
}

/// Reads the data of a where-time result.
///
/// # Errors
/// A message for another kind or malformed data.
pub fn data(r: &latlab_core::results::ResultFile) -> Result<WhereTimeData, String> {
    if r.kind != RESULT_KIND {
        return Err(format!(
            "result kind is '{}', expected '{RESULT_KIND}'",
            r.kind
        ));
    }
    serde_json::from_value(r.data.clone()).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(d: u64, v: f64) -> RawRun {
        RawRun {
            delay_ns: d,
            repeat: 0,
            value: v,
            completed: 1,
            errors: 0,
            injector_drops: 0,
        }
    }

    #[test]
    fn normalise_to_the_zero_delay_mean() {
        let runs = vec![
            run(0, 90.0),
            run(0, 110.0),
            run(20_000, 75.0),
            run(20_000, 75.0),
            run(100_000, 20.0),
        ];
        let n = normalise(&runs).unwrap();
        assert_eq!(n.len(), 3);
        assert_eq!(n[0].delay_ns, 0);
        assert!((n[0].mean - 1.0).abs() < 1e-12);
        assert!(
            (n[0].sd - (2.0f64 * 0.01).sqrt()).abs() < 1e-9,
            "{}",
            n[0].sd
        );
        assert!((n[1].mean - 0.75).abs() < 1e-12 && n[1].sd == 0.0);
        assert!((n[2].mean - 0.2).abs() < 1e-12 && n[2].n == 1);
        assert!(n[0].min <= n[0].mean && n[0].mean <= n[0].max);
    }

    #[test]
    fn normalise_needs_a_baseline() {
        assert!(normalise(&[run(20_000, 1.0)]).is_none());
        assert!(normalise(&[run(0, 0.0)]).is_none());
    }

    #[test]
    fn programs_are_named_with_packages() {
        assert_eq!(
            App::Memcached.programs()[1],
            ("memcaslap", "libmemcached-tools")
        );
        assert_eq!(App::from_name("nginx"), Some(App::Nginx));
        let e = WhereTimeError::Missing {
            program: "wrk",
            package: "wrk",
        };
        assert!(e.to_string().contains("package wrk"));
    }

    #[test]
    fn config_needs_a_baseline() {
        let cfg = WhereTimeConfig {
            delays_ns: vec![10_000],
            ..WhereTimeConfig::quick()
        };
        let clock = Clock::monotonic();
        assert!(matches!(
            super::run(&cfg, &clock, |_| {}),
            Err(WhereTimeError::Config(_))
        ));
    }

    #[test]
    fn quick_experiment_runs_end_to_end() {
        if !netns::is_root() {
            eprintln!("skipped: needs root for network namespaces");
            return;
        }
        if let Err(e) = check_programs(&[App::Memcached, App::Nginx]) {
            eprintln!("skipped: {e}");
            return;
        }
        let cpus = latlab_sys::sched::allowed_cpus();
        let cfg = WhereTimeConfig {
            engine_cpu: cpus.last().copied(),
            endpoint_cpu: cpus.first().copied(),
            ..WhereTimeConfig::quick()
        };
        let (clock, _) = Clock::establish(Nanos(20_000_000));
        let o = super::run(&cfg, &clock, |_| {}).unwrap();
        for a in &o.apps {
            assert_eq!(a.runs.len(), 3, "{}", a.app);
            assert!(a.runs.iter().all(|r| r.value > 0.0 && r.completed > 0));
            let n = normalise(&a.runs).unwrap();
            assert_eq!(n.len(), 3);
            assert!((n[0].mean - 1.0).abs() < 1e-12);
        }
    }
}
