//! End-to-end tests of `latlab net`: the namespace testbed with a busy-polling forwarder
//! (as root; a SKIP line otherwise), ping-pong and bad input.

use crate::util::{
    assert_stopped_at_its_duration, assert_usage_error, is_root, latlab, latlab_bin, latlab_line,
    ok, require_root, run_ok, signal_and_wait, system_test, system_turn, text,
};
use latlab_core::results::ResultFile;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, ExitStatus, Output, Stdio};

/// Starts the network function `cmd` writing its result to `out` (it runs until its stdin
/// closes) and returns it with the first line it prints (its "ready").
pub(crate) fn spawn_nf(cmd: &mut std::process::Command, out: &Path) -> (Child, String) {
    let mut nf = cmd
        .arg(out)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(nf.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    (nf, line)
}

/// Runs the probe `latlab LINE OUT` against the running `nf`, then closes the NF's stdin:
/// the probe's output and the NF's exit status.
fn probe_beside(mut nf: Child, line: &str, out: &Path) -> (Output, ExitStatus) {
    let probe = latlab_line(line).arg(out).output().unwrap();
    drop(nf.stdin.take());
    (probe, nf.wait().unwrap())
}

/// The network namespaces that exist now.
fn netns_list() -> String {
    text(
        &std::process::Command::new("ip")
            .args(["netns", "list"])
            .output()
            .unwrap()
            .stdout,
    )
}

#[test]
fn testbed_up_probe_through_the_busy_forwarder_down() {
    let _turn = system_test!("the namespace testbed");
    let dir = tempfile::tempdir().unwrap();
    ok(&latlab().args(["net", "testbed", "up"]).output().unwrap());
    // idempotent
    let out = latlab().args(["net", "testbed", "up"]).output().unwrap();
    assert!(text(&out.stdout).contains("already up"));

    let nf_path = dir.path().join("nf.json");
    let (nf, ready) = spawn_nf(
        std::process::Command::new("ip")
            .args(["netns", "exec", "latlab-nf"])
            .arg(latlab_bin())
            .args("net forward --testbed --io busy --until-stdin-closes -q -o".split_whitespace()),
        &nf_path,
    );
    assert_eq!(ready.trim(), "ready");

    let probe_path = dir.path().join("probe.json");
    let (out, nf_status) = probe_beside(
        nf,
        "net probe --testbed --rate 5kpps --duration 1s --warmup 200ms --timestamps all -q -o",
        &probe_path,
    );
    ok(&out);
    assert!(nf_status.success());

    let r = ResultFile::load(&probe_path).unwrap();
    assert_eq!(r.kind, "net.probe");
    let c = &r.counters;
    assert_eq!(c["sent"], 6000, "{c:?}");
    // exact accounting: every probe is either received once or lost
    assert_eq!(c["received_unique"] + c["lost"], c["sent"], "{c:?}");
    assert_eq!(c["duplicates"], 0);
    // segments add up for every decomposed probe, and none was inconsistent
    assert_eq!(c["decomposition_out_of_order"], 0, "{c:?}");
    assert_eq!(c["decomposition_residence_too_long"], 0, "{c:?}");
    let seg = r.histogram("segment.end_to_end").unwrap().unwrap();
    assert_eq!(seg.count(), c["decomposed"]);
    assert!(c["decomposed"] > 0);
    let data = latlab_net::result::probe_data(&r).unwrap();
    for k in ["segment.tx_stack", "segment.wire_nf", "segment.rx_stack"] {
        assert!(data.segment_medians_ns.contains_key(k), "{k}");
    }
    // the child in the generator namespace judged the run too (outcomes depend on the load)
    let checks: Vec<&str> = r.self_checks.iter().map(|v| v.check.as_str()).collect();
    assert_eq!(
        checks,
        [
            "throughput",
            "schedule",
            "arrivals",
            "independence",
            "stationarity"
        ]
    );
    // veth has no hardware timestamps: `all` went on without them and said so
    assert!(
        r.warnings.iter().any(|w| w.contains("latlab-ga")),
        "{:?}",
        r.warnings
    );
    let nf_r = ResultFile::load(&nf_path).unwrap();
    assert_eq!(nf_r.kind, "net.nf");
    assert_eq!(nf_r.counters["malformed"], 0);
    assert!(nf_r.counters["sent"] >= c["received_unique"]);

    let out = latlab().args(["net", "testbed", "down"]).output().unwrap();
    assert!(out.status.success());
    let ns = netns_list();
    assert!(
        !ns.lines()
            .any(|l| l.starts_with("latlab-gen") || l.starts_with("latlab-nf")),
        "left behind: {ns}"
    );
    let out = latlab()
        .args(["net", "testbed", "status"])
        .output()
        .unwrap();
    assert!(text(&out.stdout).contains("testbed down"));
}

#[test]
fn pingpong_on_loopback_writes_a_result() {
    let _turn = system_turn();
    let dir = tempfile::tempdir().unwrap();
    let (nf, _) = spawn_nf(
        std::process::Command::new(latlab_bin()).args(
            "net reflect --bind 127.0.0.1:7301 --until-stdin-closes -q -o".split_whitespace(),
        ),
        &dir.path().join("nf.json"),
    );
    let p = dir.path().join("pp.json");
    let (out, _) = probe_beside(
        nf,
        "net probe --to 127.0.0.1:7301 --mode pingpong --duration 300ms --warmup 50ms -o",
        &p,
    );
    let stdout = ok(&out);
    assert!(stdout.contains("user.actual"), "{stdout}");
    let r = ResultFile::load(&p).unwrap();
    assert!(
        r.histogram("user.sched").is_none(),
        "closed loop has no schedule"
    );
    assert_eq!(r.counters["lost"], 0);
}

/// `--dma-latency 0` holds the PM QoS target for the probe's run: the result records the
/// hold (and the idle states), the terminal says so, and the target is back to what it
/// was once the command has exited. A run without the flag records the idle states but
/// no hold.
#[test]
fn dma_latency_on_a_probe_is_held_recorded_and_released() {
    let _turn = system_test!("/dev/cpu_dma_latency");
    let before = latlab_sys::idle::qos_target_us();
    let dir = tempfile::tempdir().unwrap();
    let mut results = Vec::new();
    for (name, flag) in [("held.json", " --dma-latency 0"), ("free.json", "")] {
        let (nf, _) = spawn_nf(
            std::process::Command::new(latlab_bin()).args(
                "net reflect --bind 127.0.0.1:7305 --until-stdin-closes -q -o".split_whitespace(),
            ),
            &dir.path().join("nf.json"),
        );
        let p = dir.path().join(name);
        let (out, _) = probe_beside(
            nf,
            &format!(
                "net probe --to 127.0.0.1:7305 --mode pingpong --duration 200ms --warmup 0s{flag} -o"
            ),
            &p,
        );
        let stdout = ok(&out);
        assert!(stdout.contains("idle: "), "{stdout}");
        assert_eq!(
            stdout.contains("held at 0 µs"),
            !flag.is_empty(),
            "{stdout}"
        );
        results.push(ResultFile::load(&p).unwrap());
    }
    let held = results[0].provenance.idle.clone().expect("idle recorded");
    assert_eq!(held.held_us, Some(0));
    assert!(!held.halting_allowed());
    let free = results[1].provenance.idle.clone().expect("idle recorded");
    assert_eq!(free.held_us, None);
    assert_eq!(free.cpus.len(), free.entries.len());
    assert_eq!(
        latlab_sys::idle::qos_target_us(),
        before,
        "the hold was released"
    );
}

/// `latlab host hold-idle` holds the target while its command runs and exits with the
/// command's status.
#[test]
fn hold_idle_runs_the_command_under_the_hold_and_returns_its_status() {
    let _turn = system_test!("/dev/cpu_dma_latency");
    let before = latlab_sys::idle::qos_target_us();
    let out = latlab()
        .args(["host", "hold-idle", "--dma-latency", "3", "--"])
        .args(["sh", "-c", "od -An -td4 /dev/cpu_dma_latency; exit 7"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(7), "{}", text(&out.stderr));
    let inside: i32 = text(&out.stdout).trim().parse().unwrap();
    assert!(inside <= 3, "target inside the command: {inside}");
    assert_eq!(
        latlab_sys::idle::qos_target_us(),
        before,
        "the hold was released"
    );
    let missing = latlab()
        .args([
            "host",
            "hold-idle",
            "--",
            "/nonexistent/latlab-no-such-program",
        ])
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(1));
    assert_eq!(text(&missing.stderr).trim_end().lines().count(), 1);
}

/// Self-checks through the CLI: the result carries a verdict per check, `show` and the
/// probe's summary print them, `check` gates on them; `--ci-width` either stops the run
/// early or says it reached the maximum. No outcome that depends on the machine's load is
/// asserted, only which verdicts there are and what ended each run.
#[test]
fn probe_results_carry_self_checks_and_the_ci_width_rule_says_what_ended_the_run() {
    let _turn = system_turn();
    let dir = tempfile::tempdir().unwrap();
    let (mut nf, _) = spawn_nf(
        std::process::Command::new(latlab_bin()).args(
            "net reflect --bind 127.0.0.1:7303 --until-stdin-closes -q -o".split_whitespace(),
        ),
        &dir.path().join("nf.json"),
    );
    let base = "net probe --to 127.0.0.1:7303 --rate 2kpps --warmup 50ms --interval 100ms --timestamps user";
    // a p50 interval narrower than 10 s: met at the first interval end, long before 30 s
    let early = dir.path().join("early.json");
    let out = latlab_line(&format!("{base} --duration 30s --ci-width p50:10s -o"))
        .arg(&early)
        .output()
        .unwrap();
    let summary = ok(&out);
    // a p99 interval of 1 ns: no run meets it, the 400 ms maximum ends it
    let limit = dir.path().join("limit.json");
    let out = latlab_line(&format!(
        "{base} --duration 400ms --ci-width p99:1ns --arrivals poisson -q -o"
    ))
    .arg(&limit)
    .output()
    .unwrap();
    ok(&out);
    drop(nf.stdin.take());
    assert!(nf.wait().unwrap().success());

    let r = ResultFile::load(&early).unwrap();
    let names: Vec<&str> = r.self_checks.iter().map(|v| v.check.as_str()).collect();
    assert_eq!(
        names,
        [
            "throughput",
            "schedule",
            "arrivals",
            "independence",
            "stationarity",
            "ci_width"
        ]
    );
    // 2 kpps is a rate any generator keeps: its whole schedule went out
    assert_eq!(r.counters["unsent"], 0, "{:?}", r.counters);
    assert_eq!(r.counters["scheduled"], r.counters["sent"]);
    assert_eq!(latlab_net::result::probe_data(&r).unwrap().unsent, 0);
    assert!(r.self_checks[1].passed(), "{}", r.self_checks[1].line());
    for v in &r.self_checks {
        assert!(
            summary.contains(&format!("self-check {}: ", v.check)),
            "{summary}"
        );
    }
    let ci = r.self_checks.last().unwrap();
    assert!(ci.passed(), "{}", ci.line());
    assert!(
        ci.detail.contains("the rule stopped the run after"),
        "{}",
        ci.detail
    );
    let stop = latlab_net::result::probe_data(&r).unwrap().ci_stop.unwrap();
    assert!(
        stop.stopped_early && stop.measured_ns < stop.max_ns,
        "{stop:?}"
    );
    assert_eq!(stop.target, "p50:10.0s");
    assert_eq!(r.duration_ns, stop.measured_ns);

    let r = ResultFile::load(&limit).unwrap();
    let ci = r
        .self_checks
        .iter()
        .find(|v| v.check == "ci_width")
        .unwrap();
    assert!(!ci.passed(), "{}", ci.line());
    assert!(
        ci.detail.contains("reached its maximum duration 400"),
        "{}",
        ci.detail
    );
    let stop = latlab_net::result::probe_data(&r).unwrap().ci_stop.unwrap();
    assert!(!stop.stopped_early);
    assert_eq!(
        (stop.measured_ns, r.duration_ns),
        (400_000_000, 400_000_000)
    );
    let arrivals = r
        .self_checks
        .iter()
        .find(|v| v.check == "arrivals")
        .unwrap();
    assert!(arrivals.statistic.contains("Anderson-Darling"));

    // show prints them; check gates on them (the failed ci_width fails the budget)
    let shown = run_ok(latlab().arg("show").arg(&limit));
    assert!(shown.contains("self-check ci_width: FAIL"), "{shown}");
    let out = latlab()
        .arg("check")
        .arg(&limit)
        .args(["--budget", "self_checks_failed == 0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    assert!(
        text(&out.stdout).contains("ci_width"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn bad_probe_input_is_one_line_with_exit_2() {
    for (args, needle) in [
        (vec!["--to", "127.0.0.1:9", "--size", "40"], "64..=1514"),
        (
            vec!["--to", "127.0.0.1:9", "--timestamps", "nic"],
            "accepted",
        ),
        (vec!["--to", "127.0.0.1:9", "--rate", "fast"], "--rate"),
        (vec!["--rate", "10kpps"], "--to"),
        (
            vec!["--to", "127.0.0.1:9", "--ci-width", "p99"],
            "pNN:WIDTH",
        ),
        (
            vec!["--to", "127.0.0.1:9", "--ci-width", "p99:0us"],
            "--ci-width",
        ),
        (
            vec!["--to", "127.0.0.1:9", "--ci-width", "p100:5us"],
            "--ci-width",
        ),
        (
            vec![
                "--to",
                "127.0.0.1:9",
                "--ci-width",
                "p99:5us",
                "--mode",
                "pingpong",
            ],
            "--ci-width needs the open loop",
        ),
    ] {
        assert_usage_error(["net", "probe"].iter().chain(&args), &[needle]);
    }
    let out = latlab()
        .args(["net", "reflect", "--delay", "uniform:5us"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// `--no-rt-throttle` switches `kernel.sched_rt_runtime_us` to -1 for the run, records it in
/// the result and writes the previous value back; without root it fails with one line
/// naming the flag.
#[test]
fn no_rt_throttle_is_recorded_and_restored() {
    let path = latlab_sys::rt_throttle::RT_RUNTIME_PATH;
    let before = latlab_sys::rt_throttle::read_limit(std::path::Path::new(path)).ok();
    // rt_runtime_us -1 also switches off deadline admission control: not while the
    // SCHED_DEADLINE tests run.
    let _turn = system_turn();
    let dir = tempfile::tempdir().unwrap();
    let out_path = dir.path().join("nf.json");
    let out = latlab_line("net reflect --bind 127.0.0.1:0 --duration 300ms --no-rt-throttle -q -o")
        .arg(&out_path)
        .output()
        .unwrap();
    if !is_root() {
        let err = text(&out.stderr);
        assert!(!out.status.success());
        assert!(
            err.contains("--no-rt-throttle") && err.contains(path),
            "{err}"
        );
    }
    require_root!("to write {path}; the refusal without root was checked");
    ok(&out);
    let after = latlab_sys::rt_throttle::read_limit(std::path::Path::new(path)).ok();
    assert_eq!(before, after, "the limit must be restored");
    let r = ResultFile::load(&out_path).unwrap();
    let note = r
        .warnings
        .iter()
        .find(|w| w.contains("real-time throttling was off"))
        .unwrap_or_else(|| panic!("no throttling note in {:?}", r.warnings));
    if before != Some(-1) {
        assert!(note.contains("restored after"), "{note}");
    }
}

/// `latlab net calibrate` builds the testbed when it is not up and takes it down again
/// afterwards, leaving no namespace behind that was not there before.
#[test]
fn calibrate_leaves_the_testbed_as_it_found_it() {
    let _turn = system_test!("the namespace testbed");
    let up = || {
        latlab_net::testbed::status()
            .map(|s| s.complete)
            .unwrap_or(false)
    };
    // start from no testbed
    let _ = latlab().args(["net", "testbed", "down"]).output().unwrap();
    assert!(!up());
    let dir = tempfile::tempdir().unwrap();
    run_ok(
        latlab_line(
            "net calibrate --delays 0ns,10us --duration 300ms --warmup 100ms --rounds 1 -q -o",
        )
        .arg(dir.path()),
    );
    let r = ResultFile::load(&dir.path().join("calibrate.json")).unwrap();
    assert_eq!(r.kind, "net.calibrate");
    // as root a calibration holds the idle state at 0 µs by default (--idle-as-is not given)
    let idle = r.provenance.idle.clone().expect("idle recorded");
    assert_eq!(idle.held_us, Some(0), "{idle:?}");
    assert!(!idle.halting_allowed());
    assert!(
        !up(),
        "calibrate brought the testbed up and must take it down"
    );
    let names = netns_list();
    assert!(
        !names.contains("latlab-gen") && !names.contains("latlab-nf"),
        "{names}"
    );
}

/// A reflector run without `--duration` ends on SIGINT (Ctrl-C) or SIGTERM like at its
/// deadline: exit 0 with its result written. As root the SIGTERM run also switches
/// real-time throttling off, which must be back after the signal.
#[test]
fn an_nf_stopped_by_a_signal_writes_its_result_and_restores_throttling() {
    let path = std::path::Path::new(latlab_sys::rt_throttle::RT_RUNTIME_PATH);
    // rt_runtime_us -1 also switches off deadline admission control (as above).
    let _turn = system_turn();
    let before = latlab_sys::rt_throttle::read_limit(path).ok();
    let dir = tempfile::tempdir().unwrap();
    for (i, (name, signal)) in [("SIGINT", "-INT"), ("SIGTERM", "-TERM")]
        .into_iter()
        .enumerate()
    {
        let unthrottle = is_root() && name == "SIGTERM";
        let out = dir.path().join(format!("nf-{i}.json"));
        let mut cmd = std::process::Command::new(latlab_bin());
        cmd.args("net reflect --bind 127.0.0.1:0 -q".split_whitespace());
        if unthrottle {
            cmd.arg("--no-rt-throttle");
        }
        let (mut nf, line) = spawn_nf(cmd.arg("-o"), &out);
        assert_eq!(line.trim(), "ready", "{name}");
        let pid = nf.id().to_string();
        let (status, _) = signal_and_wait(&mut nf, "the reflector", signal, &pid);
        assert!(status.success(), "{name}: {status}");
        let r = ResultFile::load(&out).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(r.kind, latlab_net::nf::NF_RESULT_KIND, "{name}");
        if unthrottle {
            assert_eq!(
                latlab_sys::rt_throttle::read_limit(path).ok(),
                before,
                "{name}: throttling restored"
            );
        }
    }
}

/// A probe cannot end its run early: with `--no-rt-throttle`, SIGTERM mid-run puts the
/// limit back and ends it (exit 143, one line, no result) instead of leaving real-time
/// throttling off behind a killed process.
#[test]
fn a_probe_ended_by_a_signal_restores_throttling() {
    let _turn = system_test!("to write kernel.sched_rt_runtime_us");
    let path = std::path::Path::new(latlab_sys::rt_throttle::RT_RUNTIME_PATH);
    let before = latlab_sys::rt_throttle::read_limit(path).unwrap();
    assert_ne!(
        before, -1,
        "the test needs throttling on to see it restored"
    );
    let sink = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("probe.json");
    let mut probe = std::process::Command::new(latlab_bin())
        .args(
            format!(
                "net probe --to {} --rate 1kpps --duration 60s --warmup 0s --no-rt-throttle -q -o",
                sink.local_addr().unwrap()
            )
            .split_whitespace(),
        )
        .arg(&out)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    crate::util::wait_while_running(&mut probe, "the probe", "throttling off", || {
        latlab_sys::rt_throttle::read_limit(path).unwrap() == -1
    });
    let pid = probe.id().to_string();
    let (status, err) = signal_and_wait(&mut probe, "the probe", "-TERM", &pid);
    assert_eq!(status.code(), Some(128 + 15), "{err}");
    assert!(
        err.contains("interrupted") && err.contains(&format!("back to {before}")),
        "{err}"
    );
    assert_eq!(latlab_sys::rt_throttle::read_limit(path).unwrap(), before);
    assert!(!out.exists(), "no result from a run cut short");
}

/// A rate far beyond what the generator reaches (20 Mpps; a few hundred kpps here): the
/// run still ends at its warm-up + duration + drain (+ 1 s for setup), and its result
/// counts the probes its schedule held and it did not send.
#[test]
fn a_probe_beyond_its_generator_ends_at_its_duration_and_counts_the_unsent() {
    let _turn = system_turn();
    let dir = tempfile::tempdir().unwrap();
    let (mut nf, _) = spawn_nf(
        std::process::Command::new(latlab_bin()).args(
            "net reflect --bind 127.0.0.1:7307 --until-stdin-closes -q -o".split_whitespace(),
        ),
        &dir.path().join("nf.json"),
    );
    let p = dir.path().join("fast.json");
    let mut probe = latlab_line(
        "net probe --to 127.0.0.1:7307 --rate 20Mpps -d 1s --warmup 200ms --drain 200ms --timestamps user -o",
    );
    probe.arg(&p);
    let t0 = std::time::Instant::now();
    let out = probe.output().unwrap();
    let wall = t0.elapsed();
    drop(nf.stdin.take());
    assert!(nf.wait().unwrap().success());
    let stdout = ok(&out);
    // 1 s + 200 ms warm-up + 200 ms drain + 1 s
    assert!(
        wall < std::time::Duration::from_millis(2_400),
        "took {wall:?}"
    );
    let r = ResultFile::load(&p).unwrap();
    let c = |k: &str| r.counters[k];
    // constant arrivals at 50 ns for 1.2 s: 24 000 000 probes scheduled, k · 50 ns < 1.2 s
    assert_eq!(c("scheduled"), 24_000_000, "{:?}", r.counters);
    assert_eq!(c("sent") + c("send_errors") + c("unsent"), c("scheduled"));
    assert!(c("unsent") > 0 && c("sent") > 0, "{:?}", r.counters);
    let d = latlab_net::result::probe_data(&r).unwrap();
    assert_eq!(d.unsent, c("unsent"));
    assert!(
        d.generator_behind,
        "a generator that left probes unsent fell behind"
    );
    // the achieved rate is the sends over the time the run took: well below 20 Mpps
    let elapsed_s = 1.2;
    assert!(
        d.achieved_pps > 0.0 && d.achieved_pps < 2.0 * c("sent") as f64 / elapsed_s,
        "{} pps for {} sends",
        d.achieved_pps,
        c("sent")
    );
    assert_stopped_at_its_duration(&r);
    assert!(
        r.warnings[0].starts_with("STOPPED AT ITS DURATION"),
        "{:?}",
        r.warnings
    );
    assert!(
        stdout.contains(&format!(
            "unsent {} (the run stopped at its duration)",
            c("unsent")
        )),
        "{stdout}"
    );
    eprintln!(
        "net probe --rate 20Mpps -d 1s: {wall:?} wall, {:?}",
        r.counters
    );
}
