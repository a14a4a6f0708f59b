//! Running the experiment: servers in the server namespace, benchmark clients in the client
//! namespace, latlab's injector in the delay namespace, every (delay, application) pair in
//! turn.

use super::config::{check_programs, App, WhereTimeConfig, WhereTimeError};
use super::parse;
use super::stored::{AppRuns, RawRun, WhereTimeOutcome};
use latlab_net::delay::engine::{self, Direction, EngineConfig};
use latlab_net::delay::testbed::{self, Testbed};
use latlab_net::delay::DelaySpec;
use latlab_sys::netns;
use latlab_sys::tsc::Clock;
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

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

/// Starts `argv` inside namespace `ns` (through sys's `ip netns exec`), under `chrt -f
/// fifo` and `taskset -c cpu` when asked.
fn spawn_in(
    ns: &str,
    cpu: Option<u32>,
    fifo: Option<i32>,
    argv: &[&str],
) -> std::io::Result<Child> {
    let (fifo, cpu) = (fifo.map(|p| p.to_string()), cpu.map(|c| c.to_string()));
    let mut words: Vec<&str> = Vec::with_capacity(argv.len() + 6);
    if let Some(p) = &fifo {
        words.extend(["chrt", "-f", p]);
    }
    if let Some(c) = &cpu {
        words.extend(["taskset", "-c", c]);
    }
    words.extend(argv);
    let Some((exe, args)) = words.split_first() else {
        return Err(std::io::Error::other("nothing to run"));
    };
    netns::exec_command(ns, std::path::Path::new(exe))
        .args(args)
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
                    let drops = rep.lost();
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
