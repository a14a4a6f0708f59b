//! End-to-end tests of `latlab net delay` and `latlab experiment where-time`: bad input,
//! the clear netem message, and (as root) an appliance run in a namespace testbed whose
//! queue overflows: drops are counted and reported and the run ends cleanly.

use crate::util::{
    assert_one_line_error, assert_usage_error, latlab, latlab_bin, latlab_line, ok, report_html,
    run_ok, skip, system_test,
};
use latlab_core::results::ResultFile;
use latlab_net::delay::report;
use latlab_net::delay::testbed::{self, Testbed};

#[test]
fn bad_delay_names_the_flag_and_the_forms() {
    assert_usage_error(
        ["net", "delay", "--ifaces", "a,b", "--delay", "20 parsecs"],
        &["--delay", "normal:20us,2us"],
    );
}

#[test]
fn compare_netem_takes_a_constant_delay() {
    assert_usage_error(
        [
            "net",
            "delay",
            "--testbed",
            "--delay",
            "uniform:10us,50us",
            "--compare-netem",
        ],
        &["--compare-netem", "constant --delay"],
    );
}

#[test]
fn interfaces_are_required_without_testbed() {
    assert_usage_error(
        ["net", "delay", "--delay", "20us"],
        &["required arguments", "--ifaces"],
    );
}

#[test]
fn compare_netem_says_clearly_when_netem_is_missing() {
    let _turn = system_test!("namespaces, AF_PACKET");
    if testbed::netem_available().is_ok() {
        skip!("this kernel has sch_netem");
    }
    let dir = tempfile::tempdir().unwrap();
    let out = latlab_line("net delay --testbed --delay 20us --compare-netem -o")
        .arg(dir.path().join("x.json"))
        .output()
        .unwrap();
    assert_one_line_error(
        &out,
        1,
        &[
            "--compare-netem",
            "sch_netem is not available on this kernel",
        ],
    );
}

#[test]
fn overflowing_queue_counts_drops_and_ends_cleanly() {
    let _turn = system_test!("namespaces, AF_PACKET");
    let tb = Testbed::build("cli-ov", false).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let result = dir.path().join("delay.json");
    let child = std::process::Command::new(latlab_bin())
        .args(["net", "delay", "--netns", &tb.delay, "--ifaces"])
        .arg(format!(
            "{},{}",
            testbed::DELAY_IF_CLIENT,
            testbed::DELAY_IF_SERVER
        ))
        .args("--delay 2ms --capacity 16 --duration 2s -o".split_whitespace())
        .arg(&result)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    let sent = std::thread::scope(|s| {
        s.spawn(|| {
            latlab_sys::netns::enter(&tb.client).unwrap();
            let sock = std::net::UdpSocket::bind(format!("{}:0", testbed::CLIENT_IP)).unwrap();
            sock.connect(format!("{}:9", testbed::SERVER_IP)).unwrap();
            (0..3_000).filter(|_| sock.send(&[0u8; 64]).is_ok()).count()
        })
        .join()
        .unwrap()
    });
    let out = child.wait_with_output().unwrap();
    let stdout = ok(&out);
    let r = ResultFile::load(&result).unwrap();
    assert_eq!(r.kind, report::RUN_KIND);
    let dropped = r.counters["a_to_b.dropped_full"];
    assert!(dropped > 0, "{:?}", r.counters);
    assert!(r.counters["a_to_b.enqueued"] + dropped <= sent as u64);
    assert!(
        r.warnings.iter().any(|w| w.contains("queue full")),
        "{:?}",
        r.warnings
    );
    assert!(
        stdout.contains("dropped (queue full)") && stdout.contains(&dropped.to_string()),
        "{stdout}"
    );
    let page = report_html([&result], &dir.path().join("delay.html"), &["--no-figures"]);
    assert!(page.contains("id=\"latency-injector-run-delay\""));
    assert!(page.contains(&format!(
        "{dropped} frames dropped because the queue was full"
    )));
}

#[test]
fn testbed_check_is_reported_with_its_shift_verdicts() {
    let _turn = system_test!("namespaces, AF_PACKET");
    let dir = tempfile::tempdir().unwrap();
    let result = dir.path().join("check.json");
    run_ok(
        latlab_line("net delay --testbed --delay 20us --check-duration 300ms --rounds 1 -o")
            .arg(&result),
    );
    let r = ResultFile::load(&result).unwrap();
    assert_eq!(r.kind, report::CHECK_KIND);
    let s = report::check_summary(&r).unwrap();
    let page = report_html([&result], &dir.path().join("check.html"), &["--no-figures"]);
    assert!(page.contains("id=\"latency-injector-check-20-0us-added-check\""));
    assert!(page.contains("Measured shift against the configured delay"));
    // The verdict table shows the shift recomputed from the histograms.
    let shift = latlab_core::units::format_ns(s.median_shift_ns.unsigned_abs() as f64);
    assert!(page.contains(&shift), "{shift}");
}

/// A drawn delay is checked as a distribution: the delayed round trips against the 0 µs
/// ones convolved with `uniform:10us,50us`, the Kolmogorov–Smirnov verdict passing, the
/// quantiles side by side in the result, the terminal and the report, and the verdict
/// among the result's self-checks. The endpoints run as the check of the injector alone
/// should (SCHED_FIFO, a busy-polling client). On a host loaded by other work the frames'
/// time in the injector is exposed to interrupts and steal, which widens the delayed
/// round trips beyond the asked spread and rightly fails a check now and then
/// (docs/host.md): up to four checks are run, each failure printed and checked to
/// be a real one (distance above the bound); an injector that drew another distribution
/// fails them all.
#[test]
fn testbed_check_verifies_a_uniform_delay_as_a_distribution() {
    const ATTEMPTS: usize = 4;
    let _turn = system_test!("namespaces, AF_PACKET");
    let dir = tempfile::tempdir().unwrap();
    let mut passed = None;
    for attempt in 1..=ATTEMPTS {
        let result = dir.path().join(format!("uniform{attempt}.json"));
        let out = run_ok(
            latlab_line(
                "net delay --testbed --delay uniform:10us,50us --fifo 50 --busy-client --check-duration 4s --rounds 8 -o",
            )
            .arg(&result),
        );
        let r = ResultFile::load(&result).unwrap();
        assert_eq!(r.kind, report::CHECK_KIND);
        let d = report::check_summary(&r)
            .unwrap()
            .distribution
            .expect("a distribution is judged by its shape");
        let names: Vec<&str> = d.quantiles.iter().map(|q| q.name.as_str()).collect();
        assert_eq!(names, ["p10", "p50", "p90", "p99"]);
        for q in &d.quantiles {
            assert!(q.measured_ns > 10_000 && q.expected_ns > 10_000, "{q:?}");
        }
        // The expected p10..p90 span is most of the uniform's 40 µs.
        assert!(
            d.quantiles[2].expected_ns - d.quantiles[0].expected_ns > 25_000,
            "{d:?}"
        );
        assert!(d.measured > 1_000 && d.base > 1_000, "{d:?}");
        let v = r
            .self_checks
            .iter()
            .find(|v| v.check == report::DISTRIBUTION_CHECK)
            .expect("the verdict is a self-check");
        assert_eq!(v.passed(), d.passed, "{v:?}");
        assert_eq!(d.passed, d.ks_distance <= d.bound, "{d:?}");
        assert!(out.contains("p99") && out.contains("expected"), "{out}");
        if d.passed {
            assert!(out.contains("distribution: pass"), "{out}");
            passed = Some(result);
            break;
        }
        assert!(out.contains("distribution: FAIL"), "{out}");
        eprintln!("attempt {attempt} of {ATTEMPTS} failed on this host:\n{out}");
    }
    let result = passed.expect("the uniform delay's check passes in one of the attempts");
    let page = report_html([&result], &dir.path().join("u.html"), &["--no-figures"]);
    assert!(page.contains("Kolmogorov"), "the report shows the verdict");
}

/// The testbed check holds the idle policy at 0 µs by default as root, as `net calibrate`
/// does (the idle CPUs' halts otherwise land in the shift: 47–54 µs for 20 µs added on
/// this guest, 18.6–22.5 µs held; docs/host.md): recorded in the result and said with the
/// idle line. `--idle-as-is` leaves it alone.
#[test]
fn testbed_check_holds_the_idle_policy_unless_told_not_to() {
    let _turn = system_test!("namespaces, AF_PACKET, /dev/cpu_dma_latency");
    let before = latlab_sys::idle::qos_target_us();
    let dir = tempfile::tempdir().unwrap();
    for (flag, held) in [("", true), (" --idle-as-is", false)] {
        let result = dir.path().join(format!("check{}.json", flag.len()));
        let out = run_ok(
            latlab_line(&format!(
                "net delay --testbed --delay 20us --check-duration 300ms --rounds 1{flag} -o"
            ))
            .arg(&result),
        );
        assert!(out.contains("idle: "), "{out}");
        assert_eq!(out.contains("held at 0 µs"), held, "{flag}: {out}");
        let r = ResultFile::load(&result).unwrap();
        let idle = r.provenance.idle.expect("idle recorded");
        assert_eq!(idle.held_us, held.then_some(0), "{flag}");
        assert_eq!(latlab_sys::idle::qos_target_us(), before, "hold released");
    }
}

#[test]
fn where_time_rejects_a_curve_without_baseline() {
    assert_usage_error(
        ["experiment", "where-time", "--delays", "10us,20us"],
        &["--delays must include 0"],
    );
}

#[test]
fn where_time_open_loop_rate_is_a_rate_or_peer() {
    assert_usage_error(
        ["experiment", "where-time", "--open-loop-rate", "fast"],
        &["--open-loop-rate", "500rps", "'peer'"],
    );
    assert_usage_error(
        ["experiment", "where-time", "--open-loop-rate", "1Gbps"],
        &["--open-loop-rate", "'peer'"],
    );
    for bad in [
        "peer:0", "peer:-1", "peer:NaN", "peer:inf", "peer:3", "peer:x",
    ] {
        assert_usage_error(
            ["experiment", "where-time", "--open-loop-rate", bad],
            &["--open-loop-rate", "peer:F", "(0, 2]"],
        );
    }
}

/// `latlab experiment where-time --apps postgresql --pg-bin DIR` where DIR holds `present`
/// (empty stand-ins): the one-line error and its exit code.
fn where_time_pg_missing(present: &[&str]) -> std::process::Output {
    let dir = tempfile::tempdir().unwrap();
    for p in present {
        std::fs::write(dir.path().join(p), "").unwrap();
    }
    latlab()
        .args([
            "experiment",
            "where-time",
            "--quick",
            "--apps",
            "postgresql",
            "--pg-bin",
        ])
        .arg(dir.path())
        .output()
        .unwrap()
}

#[test]
fn where_time_names_the_missing_postgresql_program_and_its_package() {
    let out = where_time_pg_missing(&[]);
    assert_one_line_error(
        &out,
        1,
        &["'postgres' is not installed", "Debian package postgresql"],
    );
    let out = where_time_pg_missing(&["postgres", "initdb"]);
    assert_one_line_error(
        &out,
        1,
        &["'pgbench' is not installed", "Debian package postgresql"],
    );
}

#[test]
fn where_time_quick_writes_every_raw_figure_and_the_figure() {
    let _turn = system_test!("namespaces, AF_PACKET");
    if let Err(e) = latlab_host::where_time::check_programs(&latlab_host::where_time::App::ALL) {
        skip!("{e}");
    }
    let dir = tempfile::tempdir().unwrap();
    // The experiment's scratch directory (PostgreSQL's cluster among it) goes here; its
    // unprivileged account must be able to reach it.
    let scratch = tempfile::tempdir().unwrap();
    std::fs::set_permissions(
        scratch.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let result = dir.path().join("wt.json");
    let fig = dir.path().join("wt.svg");
    let stdout = run_ok(
        latlab()
            .env("TMPDIR", scratch.path())
            .args(["experiment", "where-time", "--quick", "-o"])
            .arg(&result)
            .arg("--plot")
            .arg(&fig),
    );
    let r = ResultFile::load(&result).unwrap();
    assert_eq!(r.kind, latlab_host::where_time::RESULT_KIND);
    let d = latlab_host::where_time::data(&r).unwrap();
    let names: Vec<&str> = d.apps.iter().map(|a| a.app.as_str()).collect();
    assert_eq!(names, ["memcached", "nginx", "postgresql"]);
    for a in &d.apps {
        assert_eq!(a.runs.len(), 3, "{}", a.app);
        assert!(
            a.runs.iter().all(|r| r.value > 0.0 && r.completed > 0),
            "{}",
            a.app
        );
        let n = latlab_host::where_time::normalise(&a.runs).unwrap();
        assert_eq!(n[0].delay_ns, 0);
        assert!((n[0].mean - 1.0).abs() < 1e-12);
    }
    assert!(
        stdout.contains("paper: memcached -25% at 20 us"),
        "{stdout}"
    );
    // The injector check measured every asked delay, judged each shift and labels each
    // delay with what it measured.
    let checks: Vec<&str> = r.self_checks.iter().map(|v| v.check.as_str()).collect();
    assert_eq!(checks, ["injector_shift_20us", "injector_shift_200us"]);
    assert_eq!(d.injector.shifts.len(), 1, "200 µs besides 20 µs");
    assert!(stdout.contains("20.0us (measured "), "{stdout}");
    assert_eq!(d.check_idle_held_us, Some(0), "held for the check as root");
    assert_eq!(
        r.provenance.idle.as_ref().and_then(|i| i.held_us),
        None,
        "the applications ran under the idle policy as it is"
    );
    assert!(
        stdout.contains("paper: tpc-c on mysql (here: postgresql) -3% at 100 us"),
        "{stdout}"
    );
    // Three curves with error bars in the figure.
    let svg = std::fs::read_to_string(&fig).unwrap();
    for app in names {
        assert!(svg.contains(app), "{app} missing from the figure");
    }
    // The database was stopped and its cluster deleted: nothing runs in, or is left in,
    // the scratch directory.
    assert_eq!(
        latlab_sys::process::pids_under(scratch.path()),
        Vec::<u32>::new(),
        "processes left in the scratch directory"
    );
    let left: Vec<_> = std::fs::read_dir(scratch.path()).unwrap().collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    // The experiment writes its HTML report beside the result and says where.
    let page_path = dir.path().join("wt-report").join("report.html");
    assert!(
        stdout.contains(&format!("report: {}", page_path.display())),
        "{stdout}"
    );
    let page = std::fs::read_to_string(&page_path).unwrap();
    assert!(page.contains("id=\"where-has-my-time-gone-performance-against-added-delay-wt\""));
    assert!(page.contains("Against the paper") && page.contains("nginx"));
    assert!(page.contains("postgresql"));
}
