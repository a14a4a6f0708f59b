//! `latlab net load` against servers started here: memcached over TCP and UDP and nginx,
//! each on loopback for a short run at a small rate. The counts must add up; nothing is
//! asserted about latencies or rates.

use crate::util::{assert_one_line_error, assert_stopped_at_its_duration, latlab, ok, skip};
use latlab_core::results::ResultFile;
use latlab_net::serve::{ServeSpec, ServerKind};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A memcached this test started, stopped by its own pid when dropped (SIGKILL: it has no
/// child processes to orphan).
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A loopback port nothing listens on right now.
fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

fn installed(program: &str) -> bool {
    [
        "/usr/bin",
        "/usr/sbin",
        "/usr/local/bin",
        "/usr/local/sbin",
        "/bin",
        "/sbin",
    ]
    .iter()
    .any(|d| Path::new(d).join(program).is_file())
}

fn wait_port(port: u16) {
    let start = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "nothing listens on {port}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn memcached(port: u16) -> Server {
    let p = port.to_string();
    let child = Command::new("memcached")
        .args(["-l", "127.0.0.1", "-p", &p, "-U", &p, "-t", "1", "-m", "32"])
        .args(if latlab_testutil::is_root() {
            &["-u", "root"][..]
        } else {
            &[]
        })
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let s = Server(child);
    wait_port(port);
    s
}

/// Runs a short load against `target` and returns the saved result.
fn load(dir: &Path, target: &str, extra: &[&str]) -> ResultFile {
    let out = dir.join(format!("load-{}.json", extra.len()));
    let mut args = vec![
        "net",
        "load",
        "--target",
        target,
        "--rate",
        "500rps",
        "--duration",
        "600ms",
        "--warmup",
        "100ms",
        "--drain",
        "1s",
        "-c",
        "2",
        "--keys",
        "100",
        "-o",
    ];
    let out_s = out.to_string_lossy().into_owned();
    args.push(&out_s);
    args.extend(extra);
    ok(&latlab().args(&args).output().unwrap());
    ResultFile::load(&out).unwrap()
}

/// Every request is accounted for, and some were answered.
fn assert_counts_add_up(r: &ResultFile) {
    let c = |k: &str| r.counters[k];
    assert_eq!(r.kind, "net.load");
    assert_eq!(c("scheduled"), c("sent") + c("unsent"), "{:?}", r.counters);
    assert_eq!(
        c("sent"),
        c("answered") + c("errors") + c("timed_out") + c("lost") + c("unanswered"),
        "{:?}",
        r.counters
    );
    assert!(c("answered") > 0, "{:?}", r.counters);
    let h = r.histogram("request.sched").unwrap().unwrap();
    assert_eq!(
        h.count(),
        c("answered") - answered_in_warmup(r),
        "every measured answer is one sample"
    );
    let names: Vec<&str> = r.self_checks.iter().map(|v| v.check.as_str()).collect();
    assert_eq!(
        names,
        [
            "throughput",
            "schedule",
            "arrivals",
            "independence",
            "stationarity"
        ]
    );
    // 500 requests/s is a load any server here keeps: the whole schedule went out
    assert_eq!(c("unsent"), 0, "{:?}", r.counters);
    assert!(r.self_checks[1].passed(), "{}", r.self_checks[1].line());
}

/// Answers to warm-up requests: sent in the warm-up and answered (errors none here).
fn answered_in_warmup(r: &ResultFile) -> u64 {
    assert_eq!(r.counters["errors"], 0, "{:?}", r.counters);
    assert_eq!(
        r.counters["lost"] + r.counters["timed_out"] + r.counters["unanswered"],
        0,
        "{:?}",
        r.counters
    );
    r.counters["sent_warmup"]
}

#[test]
fn memcached_over_tcp_and_udp_counts_add_up() {
    if !installed("memcached") {
        skip!("memcached not installed (Debian package memcached; `make deps-demo`)");
    }
    let port = free_port();
    let _server = memcached(port);
    let dir = tempfile::tempdir().unwrap();
    let tcp = load(dir.path(), &format!("memcached://127.0.0.1:{port}"), &[]);
    assert_counts_add_up(&tcp);
    assert!(tcp.histogram("get.sched").unwrap().unwrap().count() > 0);
    assert_eq!(tcp.config["io"], "adaptive", "the default way of waiting");
    // the other two ways of waiting answer every request too, and say which they were
    let busy = load(
        dir.path(),
        &format!("memcached://127.0.0.1:{port}"),
        &["--io", "busy"],
    );
    assert_counts_add_up(&busy);
    assert_eq!(busy.config["io"], "busy");
    let udp = load(
        dir.path(),
        &format!("memcached+udp://127.0.0.1:{port}"),
        &["--get-ratio", "0.5", "--io", "blocking"],
    );
    assert_counts_add_up(&udp);
    assert_eq!(udp.config["io"], "blocking");
    assert_eq!(udp.counters["misses"], 0, "the keys were preloaded");
}

/// A rate far beyond what memcached and the generator reach here (2 M requests/s): the run
/// still ends at its warm-up + duration + drain (+ 1 s for setup), and the requests its
/// schedule held and it did not send are counted.
#[test]
fn a_load_beyond_its_server_ends_at_its_duration_and_counts_the_unsent() {
    if !installed("memcached") {
        skip!("memcached not installed (Debian package memcached; `make deps-demo`)");
    }
    let port = free_port();
    let _server = memcached(port);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("fast.json");
    let target = format!("memcached://127.0.0.1:{port}");
    // the shared turn is taken before the clock starts: waiting for it is no part of the run
    let mut load = latlab();
    load.args(["net", "load", "--target", &target, "--rate", "2Mrps"])
        .args(["-d", "1s", "--warmup", "200ms", "--drain", "200ms"])
        .args(["-c", "2", "--keys", "100", "-o"])
        .arg(&out);
    let t0 = Instant::now();
    let run = load.output().unwrap();
    let wall = t0.elapsed();
    let stdout = ok(&run);
    // 1 s + 200 ms warm-up + 200 ms drain + 1 s
    assert!(wall < Duration::from_millis(2_400), "took {wall:?}");
    let r = ResultFile::load(&out).unwrap();
    let c = |k: &str| r.counters[k];
    // 2 M requests/s for 1.2 s: 2 400 000 scheduled (k · 500 ns < 1.2 s)
    assert_eq!(c("scheduled"), 2_400_000, "{:?}", r.counters);
    assert_eq!(c("sent") + c("unsent"), c("scheduled"));
    assert!(c("unsent") > 0 && c("answered") > 0, "{:?}", r.counters);
    assert_stopped_at_its_duration(&r);
    assert!(
        stdout.contains(&format!("unsent {}", c("unsent"))),
        "{stdout}"
    );
    eprintln!(
        "net load --rate 2Mrps -d 1s: {wall:?} wall, {:?}",
        r.counters
    );
}

#[test]
fn nginx_over_keep_alive_http_counts_add_up() {
    if !installed("nginx") {
        skip!("nginx not installed (Debian package nginx-light; `make deps-demo`)");
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let port = free_port();
    // started (and stopped, SIGTERM so the master takes its worker down) by the library
    // latlab's --serve uses, but loaded here as a server someone else runs
    let spec = ServeSpec::new(
        ServerKind::Nginx,
        format!("127.0.0.1:{port}").parse().unwrap(),
        &d.join("nginx"),
    );
    let server = latlab_net::serve::start(&spec).unwrap();
    let out = d.join("out");
    std::fs::create_dir_all(&out).unwrap();
    let r = load(
        &out,
        &format!("http://127.0.0.1:{port}/index.html"),
        &["--pipeline", "2"],
    );
    server.stop().unwrap();
    assert_counts_add_up(&r);
    assert!(
        r.histogram("get.sched").is_none(),
        "HTTP has no memcached series"
    );
}

#[test]
fn a_target_that_refuses_is_one_line_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port().to_string();
    for target in [
        format!("memcached://127.0.0.1:{port}"),
        format!("http://127.0.0.1:{port}/"),
    ] {
        let out = latlab()
            .current_dir(dir.path())
            .args(["net", "load", "--target", &target, "--duration", "10s"])
            .output()
            .unwrap();
        assert_one_line_error(&out, 2, &["--target", "cannot connect", "refused"]);
    }
    let out = latlab()
        .current_dir(dir.path())
        .args(["net", "load", "--target", "memcached://localhost:11211"])
        .output()
        .unwrap();
    assert_one_line_error(&out, 2, &["--target", "IP address"]);
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(left.is_empty(), "wrote {left:?}");
}

/// Whether process `pid` still exists.
fn alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// `net load --serve`: latlab starts the server on a free port, loads it, stops it; the
/// counts add up, the result names the server and how it stopped, and neither the server
/// nor its port nor its scratch directory is left.
#[test]
fn served_memcached_and_nginx_count_up_and_are_stopped_after() {
    for (server, scheme, path) in [
        ("memcached", "memcached", ""),
        ("memcached", "memcached+udp", ""),
        ("nginx", "http", "/"),
    ] {
        if !installed(server) {
            println!("SKIP {server}: not installed (`make deps-demo`)");
            continue;
        }
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let target = format!("{scheme}://127.0.0.1:{port}{path}");
        let r = load(
            dir.path(),
            &target,
            &["--serve", server, "--serve-cpu", "0"],
        );
        assert_counts_add_up(&r);
        let d = latlab_net::rpc::result::load_data(&r).unwrap();
        let s = d.served.expect("the result records the served server");
        assert_eq!(s.server, server);
        assert_eq!(s.cpu, Some(0));
        assert_eq!(s.stop, "stopped", "{s:?}");
        assert!(!alive(s.pid), "{server} (pid {}) still runs", s.pid);
        assert!(
            std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
            "something still listens on {port}"
        );
        let scratch = std::env::temp_dir().join(format!("latlab-serve-{server}-"));
        let left: Vec<_> = std::fs::read_dir(std::env::temp_dir())
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| {
                let p = e.path();
                p.to_string_lossy().starts_with(&*scratch.to_string_lossy())
                    && std::fs::read_to_string(p.join("nginx.conf"))
                        .is_ok_and(|c| c.contains(&format!(":{port};")))
            })
            .collect();
        assert!(left.is_empty(), "scratch left: {left:?}");
    }
}

/// Whether process `pid` has a handler for SIGTERM (bit 14 of `SigCgt`): the moment from
/// which a signal no longer kills it outright.
fn catches_sigterm(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            let mask = s.lines().find_map(|l| l.strip_prefix("SigCgt:"))?;
            u64::from_str_radix(mask.trim(), 16).ok()
        })
        .is_some_and(|m| m & (1 << 14) != 0)
}

/// `net load --serve` cannot end its load early: SIGTERM mid-run stops the server it
/// started (nginx with its workers) and ends with 143 and one line, writing no result and
/// leaving neither the server's port nor its scratch directory.
#[test]
fn a_served_load_ended_by_a_signal_stops_its_server() {
    for (server, scheme, path) in [("memcached", "memcached", ""), ("nginx", "http", "/")] {
        if !installed(server) {
            println!("SKIP {server}: not installed (`make deps-demo`)");
            continue;
        }
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("load.json");
        let port = free_port();
        let target = format!("{scheme}://127.0.0.1:{port}{path}");
        let mut run = Command::new(crate::util::latlab_bin())
            .args(["net", "load", "--target", &target, "--serve", server])
            .args([
                "--rate",
                "200rps",
                "--duration",
                "60s",
                "--warmup",
                "0s",
                "-q",
                "-o",
            ])
            .arg(&out)
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let pid = run.id();
        crate::util::wait_while_running(&mut run, server, "SIGTERM handler", || {
            catches_sigterm(pid)
        });
        wait_port(port);
        let (status, err) =
            crate::util::signal_and_wait(&mut run, server, "-TERM", &pid.to_string());
        assert_eq!(status.code(), Some(128 + 15), "{server}: {err}");
        assert!(
            err.contains("interrupted by SIGTERM") && err.contains(&format!("{server} stopped")),
            "{server}: {err}"
        );
        assert!(!out.exists(), "{server}: no result from a run cut short");
        assert!(
            std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
            "{server}: something still listens on {port}"
        );
        let scratch = format!("latlab-serve-{server}-");
        let left: Vec<_> = std::fs::read_dir(std::env::temp_dir())
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().starts_with(&scratch))
            .filter(|e| {
                std::fs::read_dir(e.path()).is_ok_and(|d| {
                    d.filter_map(|f| f.ok()).any(|f| {
                        std::fs::read_to_string(f.path())
                            .is_ok_and(|c| c.contains(&port.to_string()))
                    })
                })
            })
            .collect();
        assert!(left.is_empty(), "{server}: scratch left: {left:?}");
    }
}

#[test]
fn serve_without_its_program_or_with_a_foreign_target_is_one_line_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let empty = tempfile::tempdir().unwrap();
    for (server, package) in [("memcached", "memcached"), ("nginx", "nginx-light")] {
        let out = latlab()
            .current_dir(dir.path())
            .env("PATH", empty.path())
            .args(["net", "load", "--serve", server])
            .output()
            .unwrap();
        assert_one_line_error(
            &out,
            2,
            &[
                "--serve",
                "is not installed",
                &format!("Debian package {package}"),
            ],
        );
    }
    let bad = |line: &str| {
        latlab()
            .current_dir(dir.path())
            .args(line.split_whitespace())
            .output()
            .unwrap()
    };
    let out = bad("net load --serve nginx --target memcached://127.0.0.1:1");
    assert_one_line_error(&out, 2, &["--target", "--serve nginx", "http://"]);
    let out = bad("net load --serve memcached --serve-netns latlab-y4-no-such-namespace");
    assert_one_line_error(&out, 2, &["--serve-netns", "latlab-y4-no-such-namespace"]);
    let out = bad("net load --serve memcached --serve-cpu 100000");
    assert_one_line_error(&out, 2, &["--serve-cpu", "does not exist"]);
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(left.is_empty(), "wrote {left:?}");
}
