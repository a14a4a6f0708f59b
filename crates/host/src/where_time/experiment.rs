//! Running the experiment: servers in the server namespace, benchmark clients in the client
//! namespace, latlab's injector in the delay namespace, every (delay, application) pair in
//! turn.

use super::config::{find_programs, App, Programs, WhereTimeConfig, WhereTimeError};
use super::injector::{check_delays, CHECK_DELAY_NS};
use super::parse;
use super::stored::{AppRuns, OpenLoopRun, PeerLatency, PeerStatistic, RawRun, WhereTimeOutcome};
use latlab_net::delay::engine::{self, Direction, EngineConfig};
use latlab_net::delay::testbed::{self, Testbed};
use latlab_net::delay::DelaySpec;
use latlab_net::serve::{self, command_in, wait_port, ServeSpec, Server, ServerKind};
use latlab_sys::netns;
use latlab_sys::process::Account;
use latlab_sys::tsc::Clock;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

fn run_in(
    ns: &str,
    cpu: Option<u32>,
    account: Option<&Account>,
    argv: &[&str],
    limit: Duration,
) -> Result<String, WhereTimeError> {
    let child = command_in(Some(ns), cpu, None, account, argv)
        .and_then(|mut c| c.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn())
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
        // The last two lines: pgbench, for one, says what failed before it gives up.
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        return Err(WhereTimeError::Run(format!(
            "{} failed ({}): {}",
            Path::new(argv[0])
                .file_name()
                .map_or(argv[0].into(), |n| n.to_string_lossy()),
            out.status,
            lines[lines.len().saturating_sub(2)..].join(" | ")
        )));
    }
    Ok(text)
}

const MEMCACHED_PORT: u16 = 11_211;
const NGINX_PORT: u16 = 8_080;

/// An OS error while doing `what`.
fn io(what: &str) -> impl FnOnce(std::io::Error) -> WhereTimeError {
    let w = what.to_string();
    move |e| WhereTimeError::Io(w, e)
}

const POSTGRES_PORT: u16 = 5_432;
/// The database (and superuser) pgbench uses.
const POSTGRES_DB: &str = "postgres";
/// The accounts PostgreSQL may run under, in order of preference (it refuses root).
const POSTGRES_ACCOUNTS: [&str; 2] = ["postgres", "nobody"];

/// pgbench's scale factor for `connections` clients: one branch row per client, as
/// pgbench's documentation advises (fewer make the clients queue on the branch rows' locks),
/// at most 16 (16 × 100,000 accounts, about 250 MB, loads in seconds).
pub(super) fn pgbench_scale(connections: u32) -> u32 {
    connections.clamp(1, 16)
}

/// `pgbench` with `options`, connecting to the testbed's server as [`POSTGRES_DB`].
fn pgbench_argv(pgbench: &str, options: &[&str]) -> Vec<String> {
    let port = POSTGRES_PORT.to_string();
    std::iter::once(pgbench)
        .chain(options.iter().copied())
        .chain([
            "-h",
            testbed::SERVER_IP,
            "-p",
            &port,
            "-U",
            POSTGRES_DB,
            POSTGRES_DB,
        ])
        .map(str::to_string)
        .collect()
}

/// The last lines of a server's log, for an error message.
fn log_tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(3)..].join(" | ")
}

/// A private PostgreSQL cluster in `dir/postgresql`: created with `initdb` (as an
/// unprivileged account, trusting connections from the testbed's two addresses), started in
/// the server namespace listening on the server address only (TCP, no Unix socket), without
/// flushes to disk (`fsync`, `synchronous_commit` and `full_page_writes` off), and
/// loaded with `pgbench -i` from the server namespace, so that loading does not go through
/// the injector (which runs only while a delay is measured).
fn start_postgres(
    tb: &Testbed,
    cpu: Option<u32>,
    connections: u32,
    programs: &Programs,
    dir: &Path,
) -> Result<Server, WhereTimeError> {
    let account = POSTGRES_ACCOUNTS
        .into_iter()
        .find_map(Account::lookup)
        .ok_or_else(|| {
            WhereTimeError::Run(format!(
                "postgresql: PostgreSQL refuses to run as root and none of the accounts {} exists",
                POSTGRES_ACCOUNTS.join(", ")
            ))
        })?;
    let home = dir.join("postgresql");
    std::fs::create_dir_all(&home).map_err(io("creating PostgreSQL's directory"))?;
    account
        .own_tree(&home)
        .map_err(io("giving PostgreSQL's directory to its account"))?;
    let data = home.join("data");
    let data_s = data.to_string_lossy().into_owned();
    let (initdb, postgres, pgbench) = (
        programs.get("initdb").to_string_lossy().into_owned(),
        programs.get("postgres").to_string_lossy().into_owned(),
        programs.get("pgbench").to_string_lossy().into_owned(),
    );
    run_in(
        &tb.server,
        cpu,
        Some(&account),
        &[
            &initdb,
            "-D",
            &data_s,
            "-U",
            POSTGRES_DB,
            "--auth=trust",
            "-E",
            "UTF8",
            "--no-sync",
        ],
        Duration::from_secs(120),
    )?;
    let mut hba = std::fs::OpenOptions::new()
        .append(true)
        .open(data.join("pg_hba.conf"))
        .map_err(io("opening pg_hba.conf"))?;
    std::io::Write::write_all(
        &mut hba,
        format!(
            "host all all {}/32 trust\nhost all all {}/32 trust\n",
            testbed::CLIENT_IP,
            testbed::SERVER_IP
        )
        .as_bytes(),
    )
    .map_err(io("writing pg_hba.conf"))?;
    let log = home.join("server.log");
    let log_file = std::fs::File::create(&log).map_err(io("creating PostgreSQL's log"))?;
    let log_err = log_file
        .try_clone()
        .map_err(io("creating PostgreSQL's log"))?;
    let max_conn = format!("max_connections={}", connections + 10);
    let listen = format!("listen_addresses={}", testbed::SERVER_IP);
    let port = POSTGRES_PORT.to_string();
    let child = command_in(
        Some(&tb.server),
        cpu,
        None,
        Some(&account),
        &[
            &postgres,
            "-D",
            &data_s,
            "-p",
            &port,
            "-c",
            &listen,
            "-c",
            "unix_socket_directories=",
            "-c",
            &max_conn,
            // English messages: the start-up wait below reads them.
            "-c",
            "lc_messages=C",
            // A scratch cluster nobody keeps: no flushes to disk. On a shared host the
            // disk's flush time (other users' I/O) otherwise decides the throughput and
            // swamps the delay's effect (see docs/host.md).
            "-c",
            "fsync=off",
            "-c",
            "synchronous_commit=off",
            "-c",
            "full_page_writes=off",
        ],
    )
    .and_then(|mut c| c.stdout(log_file).stderr(log_err).spawn())
    .map_err(io("starting postgres"))?;
    let mut server = Server::new(child, App::Postgresql.name(), Some(home));
    server.interrupt = true;
    wait_port(
        Some(&tb.server),
        format!("{}:{POSTGRES_PORT}", testbed::SERVER_IP)
            .parse()
            .expect("the testbed's address"),
        Duration::from_secs(30),
    )
    .map_err(|e| {
        WhereTimeError::Run(format!(
            "postgres did not come up: {e}; its log: {}",
            log_tail(&log)
        ))
    })?;
    // The port opens before the server accepts sessions ("the database system is starting
    // up"): the load is retried until it does.
    let scale = pgbench_scale(connections).to_string();
    let load = pgbench_argv(&pgbench, &["-i", "-q", "-s", &scale]);
    let load: Vec<&str> = load.iter().map(String::as_str).collect();
    let start = Instant::now();
    loop {
        match run_in(&tb.server, cpu, None, &load, Duration::from_secs(300)) {
            Ok(_) => break,
            Err(WhereTimeError::Run(why))
                if why.contains("starting up") && start.elapsed() < Duration::from_secs(30) =>
            {
                std::thread::sleep(Duration::from_millis(200));
            }
            Err(e) => return Err(e),
        }
    }
    Ok(server)
}

fn start_server(
    tb: &Testbed,
    app: App,
    cfg: &WhereTimeConfig,
    programs: &Programs,
    dir: &Path,
) -> Result<Server, WhereTimeError> {
    let (kind, port) = match app {
        App::Postgresql => {
            return start_postgres(tb, cfg.endpoint_cpu, cfg.connections, programs, dir)
        }
        App::Memcached => (ServerKind::Memcached, MEMCACHED_PORT),
        App::Nginx => (ServerKind::Nginx, NGINX_PORT),
    };
    let ip: std::net::IpAddr = testbed::SERVER_IP.parse().expect("the testbed's address");
    let mut spec = ServeSpec::new(kind, std::net::SocketAddr::new(ip, port), dir);
    spec.netns = Some(tb.server.clone());
    spec.cpu = cfg.endpoint_cpu;
    Ok(serve::start(&spec)?)
}

/// What one closed-loop run reported: the metric, operations completed, errors, and, when
/// the open loop runs at the peer's rate, the client's own latency figure.
struct Bench {
    value: f64,
    completed: u64,
    errors: u64,
    latency: Option<PeerLatency>,
}

/// The client's latency figure when it was asked to time (`timed`): `ns` as `statistic`,
/// or the error `missing` when its output had none.
fn peer_latency(
    timed: bool,
    statistic: PeerStatistic,
    ns: Option<u64>,
    missing: &str,
) -> Result<Option<PeerLatency>, WhereTimeError> {
    match (timed, ns) {
        (false, _) => Ok(None),
        (true, Some(ns)) => Ok(Some(PeerLatency { statistic, ns })),
        (true, None) => Err(WhereTimeError::Run(missing.into())),
    }
}

fn bench(
    tb: &Testbed,
    app: App,
    cfg: &WhereTimeConfig,
    programs: &Programs,
) -> Result<Bench, WhereTimeError> {
    let secs = (cfg.run_time.get() / 1_000_000_000).max(1);
    let limit = Duration::from_secs(secs + 20);
    let conns = cfg.connections.to_string();
    // The clients time their requests only when their latency is compared: memcaslap's
    // timing takes a lock per operation, which the paper's throughput runs do without.
    let timed = cfg.open_loop_peer_fraction.is_some();
    match app {
        App::Memcached => {
            let server = format!("{}:{MEMCACHED_PORT}", testbed::SERVER_IP);
            let t = format!("{secs}s");
            let mut argv = vec![
                "memcaslap",
                "-s",
                &server,
                "-T",
                "1",
                "-c",
                &conns,
                "-t",
                &t,
            ];
            if timed {
                // Statistics once, over the whole run.
                argv.extend(["-S", &t]);
            }
            let out = run_in(&tb.client, cfg.endpoint_cpu, None, &argv, limit)?;
            let r = parse::memcaslap(&out)
                .map_err(|e| WhereTimeError::Run(format!("memcaslap: {e}")))?;
            let latency = peer_latency(
                timed,
                PeerStatistic::GeometricMean,
                r.latency.map(|l| (l.geo_us * 1_000.0).round() as u64),
                "memcaslap: -S printed no 'Total Statistics' block",
            )?;
            Ok(Bench {
                value: r.tps,
                completed: r.ops,
                errors: r.get_misses,
                latency,
            })
        }
        App::Nginx => {
            let url = format!("http://{}:{NGINX_PORT}/", testbed::SERVER_IP);
            let d = format!("{secs}s");
            let mut argv = vec!["wrk", "-t", "1", "-c", &conns, "-d", &d];
            if timed {
                argv.push("--latency");
            }
            argv.push(&url);
            let out = run_in(&tb.client, cfg.endpoint_cpu, None, &argv, limit)?;
            let r = parse::wrk(&out).map_err(|e| WhereTimeError::Run(format!("wrk: {e}")))?;
            let latency = peer_latency(
                timed,
                PeerStatistic::Median,
                r.p50_ns,
                "wrk: --latency printed no 50% line",
            )?;
            Ok(Bench {
                value: r.requests_per_sec,
                completed: r.requests,
                errors: r.socket_errors + r.non_2xx,
                latency,
            })
        }
        App::Postgresql => {
            // The built-in TPC-B-like transaction over TCP through the injector; no vacuum
            // before the run (-n: it would add a delay-dependent pause to every run).
            let pgbench = programs.get("pgbench").to_string_lossy().into_owned();
            let t = secs.to_string();
            let argv = pgbench_argv(&pgbench, &["-n", "-c", &conns, "-j", "1", "-T", &t]);
            let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
            let out = run_in(&tb.client, cfg.endpoint_cpu, None, &argv, limit)?;
            let r =
                parse::pgbench(&out).map_err(|e| WhereTimeError::Run(format!("pgbench: {e}")))?;
            Ok(Bench {
                value: r.tps,
                completed: r.transactions,
                errors: r.failed,
                latency: None,
            })
        }
    }
}

/// The CPUs of the run and the sentence saying why: `--cpu` as asked; otherwise, with
/// several CPUs allowed, the injector gets the CPU that lost the least time while a thread
/// spun on each (its precision is what every curve rests on) and the endpoints another.
fn place(cfg: &WhereTimeConfig) -> (WhereTimeConfig, String) {
    let allowed = latlab_sys::sched::allowed_cpus();
    let mut placed = cfg.clone();
    let cpu = |c: Option<u32>| c.map_or_else(|| "any CPU".to_string(), |c| format!("CPU {c}"));
    if cfg.cpu_asked || allowed.len() < 2 || cfg.engine_cpu.is_none() {
        let why = if cfg.cpu_asked {
            "as asked (--cpu)"
        } else {
            "the CPUs allowed"
        };
        return (
            placed,
            format!(
                "the injector on {}, servers and clients on {}, {why}.",
                cpu(cfg.engine_cpu),
                cpu(cfg.endpoint_cpu)
            ),
        );
    }
    let quiet = latlab_net::fit::probe_cpus(&allowed, None);
    if let Some((other, quietest)) = latlab_net::fit::choose_cpus(&quiet) {
        placed.engine_cpu = Some(quietest);
        placed.endpoint_cpu = Some(other);
    }
    let sentence = format!(
        "the injector on {}, the quietest CPU, servers and clients on {}; {}; pass --cpu to choose.",
        cpu(placed.engine_cpu),
        cpu(placed.endpoint_cpu),
        latlab_net::fit::probe_clause(&quiet)
    );
    (placed, sentence)
}

/// Requests each connection of latlab's open-loop generator may have outstanding: enough
/// that a server's queue forms at the server, not in the generator.
const OPEN_LOOP_PIPELINE: u32 = 8;

/// latlab's open-loop generator against `app`'s server at `milli_rps`, from the client
/// namespace on the clients' CPU, for the benchmark's run time.
fn open_loop_bench(
    tb: &Testbed,
    app: App,
    cfg: &WhereTimeConfig,
    milli_rps: u64,
    clock: &Clock,
) -> Result<(f64, f64, latlab_net::rpc::LoadOutcome), WhereTimeError> {
    use latlab_net::rpc::{self, LoadConfig, Target};
    let url = match app {
        App::Memcached => format!("memcached://{}:{MEMCACHED_PORT}", testbed::SERVER_IP),
        App::Nginx => format!("http://{}:{NGINX_PORT}/", testbed::SERVER_IP),
        App::Postgresql => {
            return Err(WhereTimeError::Config(
                "no open-loop generator speaks PostgreSQL".into(),
            ))
        }
    };
    let target = Target::parse(&url).map_err(WhereTimeError::Config)?;
    let mut lc = LoadConfig::new(target);
    lc.milli_rps = milli_rps;
    lc.duration = cfg.run_time;
    lc.warmup = latlab_core::units::Nanos::from_millis(500);
    lc.connections = cfg.connections;
    lc.pipeline = OPEN_LOOP_PIPELINE;
    // The client shares its CPU with the server: by default (blocking) it waits only in
    // the kernel, as the closed-loop clients do, instead of polling before each send on
    // the CPU the server needs for the previous request.
    lc.io = cfg.open_loop_io;
    if app == App::Memcached {
        // memcaslap's own request mix (it prints set_prop=0.10 get_prop=0.90; its defaults
        // are 64-byte keys and 1024-byte values), so that both clients load one workload.
        lc.get_ratio = 0.9;
        lc.key_size = rpc::SizeRange { min: 64, max: 64 };
        lc.value_size = rpc::SizeRange {
            min: 1_024,
            max: 1_024,
        };
    }
    let ns = tb.client.clone();
    let cpu = cfg.endpoint_cpu;
    let o = std::thread::scope(|s| {
        s.spawn(|| -> Result<rpc::LoadOutcome, WhereTimeError> {
            netns::enter(&ns).map_err(|e| WhereTimeError::Run(e.to_string()))?;
            if let Some(c) = cpu {
                latlab_sys::sched::pin_current_thread(c)
                    .map_err(|e| WhereTimeError::Run(e.to_string()))?;
            }
            rpc::run(&lc, clock).map_err(|e| WhereTimeError::Run(format!("latlab open loop: {e}")))
        })
        .join()
        .expect("open-loop generator panicked")
    })?;
    Ok((lc.rps(), o.achieved_rps, o))
}

/// The stored figures of an open-loop run; `peer`: the closed-loop client's latency at the
/// same offered load, when the run was at its rate.
fn open_loop_run(
    delay_ns: u64,
    repeat: u32,
    offered: f64,
    achieved: f64,
    o: &latlab_net::rpc::LoadOutcome,
    peer: Option<PeerLatency>,
) -> OpenLoopRun {
    let series = |name: &str| {
        o.histograms
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, h)| h)
    };
    let h = series(latlab_net::rpc::record::series::SCHED);
    let actual = series(latlab_net::rpc::record::series::ACTUAL);
    let lateness = series(latlab_net::rpc::record::series::LATENESS);
    let ladder = |h: &latlab_core::hist::LatencyHistogram, p: usize| {
        h.value_at(latlab_core::parse::Percentile::LADDER[p])
    };
    let at = |p: usize| h.map_or(0, |h| ladder(h, p));
    let c = &o.counters;
    OpenLoopRun {
        delay_ns,
        repeat,
        offered_rps: offered,
        achieved_rps: achieved,
        p50_ns: at(0),
        p99_ns: at(2),
        samples: h.map_or(0, |h| h.count()),
        late: c.late,
        problems: c.unsent + c.lost + c.timed_out + c.unanswered + c.errors,
        geo_mean_ns: h.map(|h| h.geometric_mean().round() as u64),
        actual_p50_ns: actual.map(|h| ladder(h, 0)),
        actual_geo_mean_ns: actual.map(|h| h.geometric_mean().round() as u64),
        lateness_p50_ns: lateness.map(|h| ladder(h, 0)),
        peer,
    }
}

/// Runs the experiment. `progress` is called with a short label before each run. Call
/// [`latlab_sys::signal::install_stop_handler`] first for SIGINT/SIGTERM to stop it between
/// runs, with everything it changed put back.
///
/// # Errors
/// [`WhereTimeError`]; servers and namespaces are cleaned up on every path.
pub fn run(
    cfg: &WhereTimeConfig,
    clock: &Clock,
    progress: impl FnMut(&str),
) -> Result<WhereTimeOutcome, WhereTimeError> {
    // Ctrl-C reaches the servers and peers too (one process group): a client that failed
    // because it was interrupted is the interruption, not that client's failure.
    run_inner(cfg, clock, progress).map_err(|e| {
        if latlab_sys::signal::stop_requested() {
            interrupted()
        } else {
            e
        }
    })
}

/// The error of a run stopped by SIGINT/SIGTERM (servers and namespaces already put back).
fn interrupted() -> WhereTimeError {
    WhereTimeError::Run("interrupted: stopped, nothing left behind".into())
}

fn run_inner(
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
    let programs = find_programs(&cfg.apps, cfg.pg_bin.as_deref())?;
    progress("choosing CPUs");
    let (placed, mut placement) = place(cfg);
    let cfg = &placed;
    // A spinning SCHED_FIFO injector is stopped by real-time throttling for 50 ms of every
    // second, and every frame of those 50 ms waits (measured: 40-50 ms p99 through it).
    // Held until the run returns, on every path.
    let _unthrottled = match cfg
        .fifo
        .map(|_| latlab_net::fit::unthrottle_for_fifo("injector"))
    {
        Some(Ok((guard, note))) => {
            placement = format!("{placement} The injector {note}.");
            guard
        }
        Some(Err(reason)) => {
            placement = format!("{placement} The injector ran throttled: {reason}.");
            None
        }
        None => None,
    };
    progress("verifying the injector");
    let mut notices = Vec::new();
    let ks = cfg.explain.then(|| {
        latlab_explain::KernelSession::start(
            &latlab_net::explain::kernel_request(
                clock,
                None,
                &latlab_net::explain::ExplainSpec::P99,
            ),
            &mut |l: &str| notices.push(l.to_string()),
        )
    });
    let span_start = clock.now();
    let check = testbed::check(
        &testbed::CheckConfig {
            also_ns: check_delays(&cfg.delays_ns),
            duration: cfg.check_duration,
            rounds: 2,
            engine_cpu: cfg.engine_cpu,
            endpoint_cpu: cfg.endpoint_cpu,
            fifo: cfg.fifo,
            stalls: cfg.explain,
            idle_hold_us: cfg.check_idle_hold_us,
            ..testbed::CheckConfig::new(DelaySpec::Constant { ns: CHECK_DELAY_NS })
        },
        clock,
    );
    let span_end = clock.now();
    let got = ks.map(|k| k.finish(&mut |l: &str| notices.push(l.to_string())));
    let check = check?;
    let explained = got.map(|g| {
        latlab_net::explain::attribute_stalls(
            &g,
            clock,
            None,
            &check.engine_stalls(cfg.engine_cpu),
            (span_start, span_end),
        )
    });
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
            open_loop: Vec::new(),
        })
        .collect();
    let result = (|| -> Result<(), WhereTimeError> {
        let servers: Vec<Server> = cfg
            .apps
            .iter()
            .map(|a| start_server(&tb, *a, cfg, &programs, &dir))
            .collect::<Result<_, _>>()?;
        for repeat in 0..cfg.repeats {
            for &d in &cfg.delays_ns {
                // SIGINT/SIGTERM (with the handler installed): stop between runs, so that
                // every server, namespace and setting is put back on the way out.
                if latlab_sys::signal::stop_requested() {
                    return Err(interrupted());
                }
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
                    let mut ol = Vec::new();
                    let mut err = None;
                    for (i, a) in cfg.apps.iter().enumerate() {
                        progress(&format!(
                            "{} at {} (repeat {}/{})",
                            a.name(),
                            latlab_core::units::format_ns(d as f64),
                            repeat + 1,
                            cfg.repeats
                        ));
                        let peer = match bench(&tb, *a, cfg, &programs) {
                            Ok(b) => b,
                            Err(e) => {
                                err = Some(e);
                                break;
                            }
                        };
                        let rate = match cfg.open_loop_peer_fraction {
                            // The closed loop's own offered load (what it just achieved),
                            // or a fraction of it.
                            Some(f) => Some((peer.value * f * 1_000.0).round().max(1_000.0) as u64),
                            None => cfg.open_loop_milli_rps,
                        };
                        let peer_latency = peer.latency;
                        out.push((i, (peer.value, peer.completed, peer.errors)));
                        let Some(rate) = rate.filter(|_| *a != App::Postgresql) else {
                            continue;
                        };
                        progress(&format!(
                            "{} at {}: latlab open loop at {} requests/s",
                            a.name(),
                            latlab_core::units::format_ns(d as f64),
                            rate / 1000
                        ));
                        match open_loop_bench(&tb, *a, cfg, rate, clock) {
                            Ok((offered, achieved, o)) => {
                                ol.push((
                                    i,
                                    open_loop_run(d, repeat, offered, achieved, &o, peer_latency),
                                ));
                            }
                            Err(e) => {
                                err = Some(e);
                                break;
                            }
                        }
                    }
                    // The clients' last frames (a closing FIN, PostgreSQL's Terminate) may
                    // still wait in the injector's queue: let them through before it stops,
                    // or the server keeps the session open.
                    std::thread::sleep(Duration::from_nanos(d) + Duration::from_millis(20));
                    stop_r.store(true, Ordering::Relaxed);
                    let rep = h.join().expect("injector panicked")?;
                    if let Some(e) = err {
                        return Err(e);
                    }
                    let drops = rep.lost();
                    for (i, r) in ol {
                        apps[i].open_loop.push(r);
                    }
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
        // Every server is stopped; the first failure to stop cleanly is the error.
        servers
            .into_iter()
            .map(|s| s.stop().map_err(WhereTimeError::from))
            .fold(Ok(()), Result::and)
    })();
    let _ = std::fs::remove_dir_all(&dir);
    drop(tb);
    result?;
    Ok(WhereTimeOutcome {
        apps,
        check,
        placement,
        check_idle_held_us: cfg.check_idle_hold_us,
        explained,
        notices,
    })
}
