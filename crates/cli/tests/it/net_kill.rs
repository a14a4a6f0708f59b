//! Killing latlab mid-run (SIGKILL, which no handler sees) leaves nothing behind: no
//! namespace it created and no XDP program attached (as root; a SKIP line otherwise).
//! The namespaces go through latlab's janitor (`latlab_sys::janitor`), the XDP programs
//! with the BPF links the kernel closes with the process.

use crate::util::{latlab, latlab_bin, ok, signal_and_wait, system_test, text, wait_while_running};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The network namespaces that exist now and that `keep` accepts.
pub(crate) fn namespaces(keep: impl Fn(&str) -> bool) -> Vec<String> {
    text(
        &Command::new("ip")
            .args(["netns", "list"])
            .output()
            .unwrap()
            .stdout,
    )
    .lines()
    .filter_map(|l| l.split_whitespace().next())
    .filter(|n| keep(n))
    .map(str::to_string)
    .collect()
}

/// The testbed's namespaces that exist now.
fn testbed_namespaces() -> Vec<String> {
    namespaces(|n| n.starts_with("latlab-gen") || n == "latlab-nf")
}

/// Whether any interface of the NF namespace has an XDP program.
fn xdp_in_nf() -> bool {
    Command::new("ip")
        .args(["-n", "latlab-nf", "link", "show"])
        .output()
        .map(|o| text(&o.stdout).contains("xdp"))
        .unwrap_or(false)
}

/// Processes whose command line mentions `needle`.
fn processes_mentioning(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(c) = std::fs::read(e.path().join("cmdline")) {
            let c = String::from_utf8_lossy(&c).replace('\0', " ");
            if c.contains(needle) {
                found.push(c);
            }
        }
    }
    found
}

#[test]
fn sigkill_mid_run_leaves_no_namespace_and_no_xdp_program() {
    let _turn = system_test!("network namespaces and XDP programs");
    ok(&latlab().args(["net", "testbed", "down"]).output().unwrap());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("cal");
    // calibrate brings the testbed up itself and runs its NF over AF_XDP
    let mut run = Command::new(latlab_bin())
        .args(["net", "calibrate", "--io", "xdp", "--delays", "0us,10us"])
        .args(["--rounds", "1", "-q", "-o"])
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_while_running(
        &mut run,
        "calibrate",
        "XDP program on the testbed",
        xdp_in_nf,
    );
    assert!(
        !testbed_namespaces().is_empty(),
        "calibrate runs on the testbed"
    );
    run.kill().unwrap();
    let _ = run.wait();
    // the janitor deletes the namespaces; the NF, told by its closed stdin, exits
    let t0 = Instant::now();
    while (!testbed_namespaces().is_empty() || xdp_in_nf())
        && t0.elapsed() < Duration::from_secs(10)
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        testbed_namespaces(),
        Vec::<String>::new(),
        "namespaces left"
    );
    assert!(!xdp_in_nf(), "an XDP program stayed attached");
    let t0 = Instant::now();
    let needle = dir.path().to_string_lossy().to_string();
    while !processes_mentioning(&needle).is_empty() && t0.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        processes_mentioning(&needle),
        Vec::<String>::new(),
        "the run's children outlived it"
    );
}

/// The value of `kernel.sched_rt_runtime_us` now.
pub(crate) fn rt_runtime_us() -> String {
    std::fs::read_to_string("/proc/sys/kernel/sched_rt_runtime_us")
        .unwrap()
        .trim()
        .to_string()
}

/// The where-time testbed's namespaces that exist now.
fn where_time_namespaces() -> Vec<String> {
    namespaces(|n| n.starts_with("latlab-wt-"))
}

/// SIGTERM to latlab alone, and SIGINT to its whole process group (Ctrl-C in a terminal,
/// which interrupts the servers and peers too): either way one line saying it was
/// interrupted, and throttling, servers, clients and namespaces put back.
#[test]
fn sigterm_mid_where_time_puts_back_throttling_servers_and_namespaces() {
    let _turn = system_test!("network namespaces and kernel.sched_rt_runtime_us");
    for p in ["memcached", "memcaslap"] {
        if !Command::new("sh")
            .args(["-c", &format!("command -v {p}")])
            .output()
            .unwrap()
            .status
            .success()
        {
            crate::util::skip!("{p} is not installed (make deps-test)");
        }
    }
    let before = rt_runtime_us();
    for group in [false, true] {
        let how = if group {
            "SIGINT to the group"
        } else {
            "SIGTERM"
        };
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("wt.json");
        // its own process group (setsid execs in place) for the Ctrl-C case
        let mut cmd = if group {
            let mut c = Command::new("setsid");
            c.arg(latlab_bin());
            c
        } else {
            Command::new(latlab_bin())
        };
        // --fifo: the run switches real-time throttling off until it ends
        let mut run = cmd
            .args(["experiment", "where-time", "--apps", "memcached"])
            .args(["--delays", "0,200us", "--repeats", "50", "--run-time", "1s"])
            .args([
                "--fifo",
                "50",
                "--connections",
                "1",
                "--open-loop-rate",
                "peer",
            ])
            .args(["--no-explain", "-q", "-o"])
            .arg(&out)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        wait_while_running(&mut run, "where-time", "testbed", || {
            !where_time_namespaces().is_empty()
        });
        if before != "-1" {
            assert_eq!(
                rt_runtime_us(),
                "-1",
                "throttling is off while the FIFO injector runs"
            );
        }
        // into the runs: servers up, a client running
        std::thread::sleep(Duration::from_secs(1));
        let pid = run.id();
        let (status, err) = if group {
            signal_and_wait(&mut run, "where-time", "-INT", &format!("-{pid}"))
        } else {
            signal_and_wait(&mut run, "where-time", "-TERM", &pid.to_string())
        };
        assert_eq!(status.code(), Some(1), "{how}: {err}");
        assert!(err.contains("where-time: interrupted"), "{how}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{how}: {err}");
        assert_eq!(
            rt_runtime_us(),
            before,
            "{how}: real-time throttling put back"
        );
        assert_eq!(
            where_time_namespaces(),
            Vec::<String>::new(),
            "{how}: namespaces left"
        );
        // memcached listens on the testbed's server address, given on its command line
        let t0 = Instant::now();
        while !processes_mentioning("10.198.0.2").is_empty()
            && t0.elapsed() < Duration::from_secs(10)
        {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert_eq!(
            processes_mentioning("10.198.0.2"),
            Vec::<String>::new(),
            "{how}: a server or client outlived the run"
        );
        assert!(!out.exists(), "{how}: no result from an interrupted run");
    }
}

/// Ctrl-C in a terminal reaches killer-us and its children alike (one process group):
/// the experiment ends with the one line that says it was interrupted, not with the
/// interrupted probe's failure, and puts back real-time throttling and the testbed.
#[test]
fn ctrl_c_mid_killer_us_says_interrupted_and_puts_everything_back() {
    let _turn = system_test!("network namespaces and kernel.sched_rt_runtime_us");
    ok(&latlab().args(["net", "testbed", "down"]).output().unwrap());
    let before = rt_runtime_us();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("ku");
    // its own process group, as a shell's foreground job has
    let mut run = Command::new("setsid")
        .arg(latlab_bin())
        .args(["experiment", "killer-us", "--quick", "--rate", "2kpps"])
        .args(["--duration", "3s", "--no-explain", "-q", "-o"])
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // into a run: its NF child and its probe child (`latlab child` with a job file named
    // after the experiment's pid; setsid execs in place, so that is `run`'s)
    let jobs = format!("latlab-job-{}-", run.id());
    wait_while_running(&mut run, "killer-us", "NF and probe children", || {
        processes_mentioning(&jobs).len() >= 2
    });
    let pgid = format!("-{}", run.id());
    let (status, err) = signal_and_wait(&mut run, "killer-us", "-INT", &pgid);
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(err.contains("killer-us: interrupted"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert_eq!(rt_runtime_us(), before, "real-time throttling put back");
    assert_eq!(
        testbed_namespaces(),
        Vec::<String>::new(),
        "the testbed the experiment brought up is gone"
    );
    assert!(
        !out.join("killer-us.json").exists(),
        "no experiment result from an interrupted run"
    );
}
