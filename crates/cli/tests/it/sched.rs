//! End-to-end tests of `latlab sched`: short real runs (a few hundred ms), every output
//! file read back, and the bad-input and refusal paths with their exit codes.

use crate::util::{
    assert_one_line_error, assert_usage_error, is_root, latlab, latlab_line, ok, run_ok,
    system_test, system_turn,
};
use latlab_core::results::ResultFile;
use std::path::Path;

/// Runs `latlab sched ARGS -o DIR/NAME`, asserts it succeeded and returns the result path
/// and the standard output.
fn sched_run(dir: &Path, name: &str, args: &str) -> (std::path::PathBuf, String) {
    let path = dir.join(name);
    let stdout = run_ok(
        latlab()
            .arg("sched")
            .args(args.split_whitespace())
            .arg("-o")
            .arg(&path),
    );
    (path, stdout)
}

#[test]
fn the_papers_figure_3_command_writes_every_output() {
    let _turn = system_test!("-p HIGH runs thread 2 at nice -10");
    let dir = tempfile::tempdir().unwrap();
    let (path, stdout) = sched_run(
        dir.path(),
        "run.json",
        "-n 3 -d 300ms -t 0 -p LOW -t 1 -p NORMAL -t 2 -p HIGH",
    );
    assert!(stdout.contains("loop iteration"), "{stdout}");
    assert!(stdout.contains("gap threshold"), "{stdout}");
    let r = ResultFile::load(&path).unwrap();
    assert_eq!(r.kind, "sched.run");
    assert!(r.histogram("gap.t0").is_some());
    assert!(r.counters.contains_key("trace.dropped"));
    let d = &r.data;
    assert_eq!(d["threads"].as_array().unwrap().len(), 3);
    assert!(d["calibrations"][0]["p50_ns"].as_f64().unwrap() > 0.0);
    let trace = std::fs::read_to_string(dir.path().join("run.trace.tsv")).unwrap();
    assert!(trace.lines().filter(|l| l.starts_with("B\t")).count() >= 3);
    let txt = std::fs::read_to_string(dir.path().join("run.txt")).unwrap();
    let first = txt.lines().next().unwrap();
    assert_eq!(
        first.split(' ').count(),
        5,
        "thread start finish duration gap: {first}"
    );
    let pf: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("run.perfetto.json")).unwrap(),
    )
    .unwrap();
    let ev = pf["traceEvents"].as_array().unwrap();
    assert!(ev.iter().any(|e| e["ph"] == "X"));
    assert!(ev.iter().any(|e| e["name"] == "thread_name"));
    let svg = std::fs::read_to_string(dir.path().join("run.svg")).unwrap();
    assert!(svg.contains("<svg") && svg.contains("CPU"));

    // analyze and render the same run
    let s = run_ok(latlab().args(["sched", "analyze"]).arg(&path));
    assert!(
        s.contains("context switches") && s.contains("quantum of thread 2"),
        "{s}"
    );
    let png = dir.path().join("w.png");
    run_ok(
        latlab()
            .args(["sched", "render"])
            .arg(&path)
            .arg("-o")
            .arg(&png)
            .args(["--from", "100ms", "--to", "200ms", "--cpus"]),
    );
    assert!(std::fs::metadata(&png).unwrap().len() > 1000);
    assert_usage_error(
        [
            Path::new("sched"),
            Path::new("render"),
            &path,
            Path::new("-o"),
            &png,
            Path::new("--from"),
            Path::new("200ms"),
            Path::new("--to"),
            Path::new("100ms"),
        ],
        &["--to"],
    );
}

#[test]
fn periodic_and_lat_threads_print_the_papers_lines() {
    let _turn = system_turn();
    let dir = tempfile::tempdir().unwrap();
    let (hi, med) = if is_root() {
        ("RTHIGH", "RTMED")
    } else {
        eprintln!("not root: running the threads at NORMAL instead of SCHED_FIFO");
        ("NORMAL", "NORMAL")
    };
    let (path, stdout) = sched_run(dir.path(),
        "p.json",
        &format!("-n 2 -d 300ms -t 0 -p {hi} -w PERIODIC 1ms 10ms -i HR -t 1 -p {med} -w LAT 1ms -i TIMERFD --print-trace"),
    );
    assert!(stdout.contains("thread 0: missed "), "{stdout}");
    assert!(stdout.contains("latlate: "), "{stdout}");
    let r = ResultFile::load(&path).unwrap();
    let hits = r.counters["deadline.hits.t0"];
    let misses = r.counters["deadline.misses.t0"];
    assert_eq!(hits + misses, 30, "every activation is counted");
    assert!(r.histogram("dispatch.t1").unwrap().unwrap().count() > 0);
    let out = latlab()
        .args(["sched", "analyze"])
        .arg(&path)
        .output()
        .unwrap();
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(s.contains("dispatch latency of thread 1"), "{s}");
    assert!(s.contains("response-time analysis"), "{s}");
}

#[test]
fn scenario_file_and_deadline_reservation() {
    let _turn = system_test!("SCHED_DEADLINE and SCHED_IDLE need root or CAP_SYS_NICE");
    let dir = tempfile::tempdir().unwrap();
    let sc = dir.path().join("s.toml");
    std::fs::write(
        &sc,
        "duration = \"200ms\"\n[[thread]]\nworkload = \"PERIODIC 1ms 10ms\"\nreservation = { amount = \"2ms\", period = \"10ms\" }\n[[thread]]\nworkload = \"CPU_SCAN 16KB\"\npriority = \"IDLE\"\n",
    )
    .unwrap();
    let (path, _) = sched_run(
        dir.path(),
        "s.json",
        &format!("--scenario {} -q", sc.display()),
    );
    let r = ResultFile::load(&path).unwrap();
    let th = &r.data["threads"];
    assert_eq!(th[0]["policy"], "SCHED_DEADLINE");
    assert_eq!(th[1]["policy"], "SCHED_IDLE");
    assert_eq!(
        r.counters["deadline.hits.t0"] + r.counters["deadline.misses.t0"],
        20
    );
}

#[test]
fn refused_reservations_exit_3_with_the_reason() {
    let _turn = system_turn();
    // two reservations of 99% each on this machine's CPUs: more than 95% per CPU in all
    let cpus = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let n = cpus + 1;
    let out = latlab()
        .args([
            "sched",
            "-n",
            &n.to_string(),
            "-d",
            "100ms",
            "-a",
            "-w",
            "PERIODIC",
            "1ms",
            "10ms",
        ])
        .args(["-rh", "9.9ms", "10ms", "-q"])
        .output()
        .unwrap();
    if is_root() {
        assert_one_line_error(
            &out,
            3,
            &["SCHED_DEADLINE", "admission control", "sched_rt_runtime_us"],
        );
    } else {
        eprintln!("not root: checking the refusal without privilege instead");
        assert_one_line_error(&out, 3, &["SCHED_DEADLINE", "refused"]);
    }
}

#[test]
fn bad_input_is_one_line_naming_the_flag() {
    let cases: [(&[&str], &[&str]); 6] = [
        (&["-n", "2", "-t", "0", "-w", "WALK"], &["-w", "CPU_SCAN"]),
        (
            &["-n", "1", "-t", "0", "-i", "RTC"],
            &["-i", "HR", "TIMERFD"],
        ),
        (&["-n", "1", "-d", "5"], &["-d", "1.5s"]),
        (&["-d", "1s"], &["-n"]),
        (&["-n", "1", "-t", "3", "-p", "LOW"], &["-t", "0..0"]),
        (
            &["-n", "1", "-t", "0", "-rh", "2ms", "1ms"],
            &["-rh", "runtime <= deadline"],
        ),
    ];
    for (args, needles) in cases {
        assert_usage_error(["sched"].iter().chain(args), needles);
    }
    let dir = tempfile::tempdir().unwrap();
    let sc = dir.path().join("bad.toml");
    std::fs::write(&sc, "[[thread]]\ntimer = \"MM\"\n").unwrap();
    assert_usage_error(
        [Path::new("sched"), Path::new("--scenario"), &sc],
        &["bad.toml", "scenario timer"],
    );
    assert_usage_error(
        ["sched", "analyze", "/nonexistent/run.json"],
        &["/nonexistent/run.json"],
    );
    assert_usage_error(["sched", "cache-cost", "--sizes", "0"], &["--sizes"]);
}

#[test]
fn cache_cost_writes_a_result() {
    let _turn = system_turn();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cc.json");
    let cpu = std::thread::available_parallelism()
        .map(|n| n.get() - 1)
        .unwrap_or(0);
    run_ok(
        latlab_line("sched cache-cost --sizes 4,64 --trials 2 --duration 50ms")
            .args(["--threads", "3", "--cpu", &cpu.to_string(), "-o"])
            .arg(&path),
    );
    let r = ResultFile::load(&path).unwrap();
    assert_eq!(r.kind, "sched.cache_cost");
    assert_eq!(r.data["trials"].as_array().unwrap().len(), 4);
    // a trial whose threads got no CPU (a starved CPU) has no cost, never a made-up one
    for t in r.data["trials"].as_array().unwrap() {
        let w1 = t["w1"].as_u64().unwrap();
        let switches = t["switches"].as_u64().unwrap();
        assert_eq!(
            t["cost_ns"].is_null(),
            w1 == 0 || switches == 0 || t["cpun_ns"] == 0 || t["cpu1_ns"] == 0,
            "{t}"
        );
    }
}

/// Runs `latlab experiment hourglass ARGS -o DIR`, asserts it succeeded and returns
/// its standard output (`sched_report` names the directory with the older `--dir`).
fn hourglass(dir: &Path, args: &[&str]) -> String {
    let out = latlab()
        .args(["experiment", "hourglass"])
        .args(args)
        .arg("-o")
        .arg(dir)
        .output()
        .unwrap();
    ok(&out)
}

#[test]
fn hourglass_experiment_runs_selected_scenarios() {
    let _turn = system_test!("the scenarios need SCHED_FIFO and SCHED_DEADLINE");
    let dir = tempfile::tempdir().unwrap();
    let stdout = hourglass(
        dir.path(),
        &["--duration", "200ms", "--quick", "--only", "5.5,5.6"],
    );
    assert!(
        stdout.contains("== 5.5") && stdout.contains("== 5.6"),
        "{stdout}"
    );
    assert!(stdout.contains("RTA bound 3.00ms"), "{stdout}");
    let r = ResultFile::load(&dir.path().join("experiment.json")).unwrap();
    assert_eq!(r.kind, "sched.hourglass_experiment");
    let sc = r.data["scenarios"].as_array().unwrap();
    assert_eq!(sc.len(), 2);
    for s in sc {
        for f in s["results"].as_array().unwrap() {
            assert!(dir.path().join(f.as_str().unwrap()).exists(), "{f}");
        }
        assert!(!s["linux_note"].as_str().unwrap().is_empty());
    }
    assert_usage_error(
        ["experiment", "hourglass", "--only", "9.9"],
        &["--only", "5.1"],
    );
}

/// Scenario 5.4 as root: the `latlab net` testbed pushes traffic through a forwarder on
/// the RT thread's CPU; both traffic runs leave their generator results, the findings
/// give the forwarded rate alone and beside the RT thread, and a testbed the experiment
/// brought up is taken down again.
#[test]
fn hourglass_54_pushes_testbed_traffic_at_the_rt_thread() {
    let _turn = system_test!("the testbed and SCHED_FIFO");
    let was_up = latlab_net::testbed::status()
        .map(|s| s.complete)
        .unwrap_or(false);
    let dir = tempfile::tempdir().unwrap();
    let stdout = hourglass(dir.path(), &["--duration", "300ms", "--only", "5.4"]);
    assert!(
        stdout.contains("control 2 (testbed traffic alone): "),
        "{stdout}"
    );
    assert!(
        stdout.contains("RT thread during the testbed traffic: missed "),
        "{stdout}"
    );
    for tag in ["5.4-control-traffic", "5.4-traffic"] {
        let p = ResultFile::load(&dir.path().join(format!("{tag}-probe.json"))).unwrap();
        assert_eq!(p.kind, "net.probe");
        let got = p.counters["received_unique"] - p.counters["received_warmup"];
        assert!(got > 0, "{tag}: no probe came back through the forwarder");
        let nf = ResultFile::load(&dir.path().join(format!("{tag}-nf.json"))).unwrap();
        assert!(
            nf.counters["sent"] >= got,
            "{tag}: the forwarder sent fewer than arrived"
        );
    }
    let forwarded: Vec<f64> = stdout
        .lines()
        .filter_map(|l| {
            l.split(" pps forwarded")
                .next()
                .filter(|_| l.contains(" pps forwarded"))
        })
        .filter_map(|l| l.rsplit(' ').next().and_then(|n| n.parse().ok()))
        .collect();
    assert_eq!(forwarded.len(), 2, "{stdout}");
    assert!(forwarded.iter().all(|&x| x > 0.0), "{forwarded:?}");
    let now_up = latlab_net::testbed::status()
        .map(|s| s.complete)
        .unwrap_or(false);
    assert_eq!(was_up, now_up, "the testbed must be left as it was found");
}

#[test]
fn dma_latency_is_held_and_recorded() {
    let _turn = system_test!("/dev/cpu_dma_latency");
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = sched_run(
        dir.path(),
        "d.json",
        "-n 1 -d 100ms -t 0 -w LAT 1ms -i HR --dma-latency 0 -q",
    );
    let r = ResultFile::load(&path).unwrap();
    assert_eq!(r.config["dma_latency_us"], 0);
    let idle = r.provenance.idle.as_ref().expect("idle recorded");
    assert_eq!(idle.held_us, Some(0), "the sys hold records what it held");
    assert!(r.histogram("dispatch.t0").unwrap().unwrap().count() > 0);
}
