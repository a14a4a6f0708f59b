//! The HTML report in a real browser: headless Chromium (Debian's `chromium`, installed by
//! `make test`) loads reports rendered from the checked-in fixtures. One test asserts no
//! console errors, the expected sections, tables and figures, and that hovering a curve and
//! toggling a legend entry work (the page's own `#selftest` drives real DOM events and
//! records the outcome), and saves a screenshot as a test artefact. The other asserts, from
//! Chromium's network log, that the page makes no network request. A third loads a
//! result with an attribution and checks its "Why the tail" section in the DOM (heading,
//! causes table, bands, slowest windows, figures) and saves a screenshot of it.
//!
//! Without Chromium the tests print a SKIP line and pass without checking (outside CI).

use crate::util::{
    assert_sections, fixture, latlab, ok, shared_turn, skip, CLOCKS_REPORT_SECTIONS,
};
use std::path::{Path, PathBuf};
use std::process::Output;

fn chromium() -> Option<PathBuf> {
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .flat_map(|name| {
            std::env::var_os("PATH")
                .map(|p| {
                    std::env::split_paths(&p)
                        .map(|d| d.join(name))
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default()
        })
        .find(|p| p.is_file())
}

/// Where test artefacts (screenshots) go: target/test-artifacts/.
fn artifacts() -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .join("test-artifacts");
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Renders a report of the fixtures (one run, and both runs merged) into `dir`.
fn render_report(dir: &Path) -> PathBuf {
    let out_path = dir.join("report.html");
    let a = fixture("host-clocks-a.json");
    let b = fixture("host-clocks-b.json");
    ok(&latlab()
        .arg("report")
        .arg(&a)
        .arg(format!("{},{}", a.display(), b.display()))
        .args(["--no-figures", "--title", "browser test", "-o"])
        .arg(&out_path)
        .output()
        .unwrap());
    out_path
}

/// Chromium, a scratch directory and the report rendered in it; `None` without Chromium.
fn chromium_and_report() -> Option<(PathBuf, tempfile::TempDir, PathBuf)> {
    let bin = chromium()?;
    let dir = tempfile::tempdir().unwrap();
    let report = render_report(dir.path());
    Some((bin, dir, report))
}

/// Runs headless Chromium on `url` with the flags a closed network needs, plus `extra`.
fn run_chromium(bin: &Path, profile: &Path, url: &str, extra: &[String]) -> Output {
    let _shared = shared_turn();
    std::process::Command::new(bin)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            "--no-first-run",
            "--no-default-browser-check",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(url)
        .output()
        .expect("chromium runs")
}

/// Console messages Chromium logged for the page (`INFO:CONSOLE…] "text", source: …`).
fn console_messages(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        .map(str::to_string)
        .collect()
}

#[test]
fn report_renders_in_chromium_without_errors() {
    let Some((bin, dir, report)) = chromium_and_report() else {
        skip!("chromium not installed (make test installs Debian's chromium)");
    };
    let url = format!("file://{}#selftest", report.display());

    let out = run_chromium(&bin, &dir.path().join("p1"), &url, &["--dump-dom".into()]);
    let dom = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "chromium failed: {stderr}");
    let console = console_messages(&stderr);
    assert!(console.is_empty(), "console messages: {console:#?}");

    // The page's self-test hovered and toggled every distribution figure: 2 inputs x 6 clocks
    // is 12 curves, more than one figure holds, so each clock gets a CCDF and a CDF of its own.
    assert!(
        dom.contains("data-selftest=\"ok 12\""),
        "self-test: {}",
        dom.split("data-selftest")
            .nth(1)
            .map(|s| &s[..s.len().min(300)])
            .unwrap_or("absent")
    );
    assert_sections(&dom, &CLOCKS_REPORT_SECTIONS);
    // inputs, clock sources, percentiles
    assert_eq!(dom.matches("<table>").count(), 3, "tables");
    assert_eq!(
        dom.matches("class=\"curve\"").count(),
        24,
        "2 inputs x 6 clocks x 2 figures"
    );
    assert!(dom.contains("host-clocks-a (+1 runs merged)"));

    // screenshot as a test artefact
    screenshot(
        &bin,
        &dir.path().join("p2"),
        &url,
        "report.png",
        4000,
        50_000,
    );
}

/// Saves a screenshot of `url` (1400 px wide, `height` tall) as the test artefact `name`
/// and checks that it is a real PNG of more than `min_bytes`.
fn screenshot(bin: &Path, profile: &Path, url: &str, name: &str, height: u32, min_bytes: usize) {
    let shot = artifacts().join(name);
    let _ = std::fs::remove_file(&shot);
    let out = run_chromium(
        bin,
        profile,
        url,
        &[
            format!("--window-size=1400,{height}"),
            format!("--screenshot={}", shot.display()),
        ],
    );
    ok(&out);
    let png = std::fs::read(&shot).expect("screenshot written");
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > min_bytes,
        "a real screenshot"
    );
    eprintln!("screenshot: {}", shot.display());
}

/// URLs of requests the page itself started, from a Chromium NetLog (requests Chromium makes
/// for itself have the initiator "not an origin").
fn page_requests(netlog: &Path) -> Vec<String> {
    let log: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(netlog).expect("netlog written"))
            .expect("netlog is JSON");
    let start_job = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
        .as_u64()
        .expect("netlog constants");
    log["events"]
        .as_array()
        .expect("netlog events")
        .iter()
        .filter(|e| e["type"].as_u64() == Some(start_job))
        .filter(|e| e["params"]["initiator"].as_str() != Some("not an origin"))
        .filter_map(|e| e["params"]["url"].as_str().map(str::to_string))
        .filter(|u| !u.starts_with("file://"))
        .collect()
}

#[test]
fn report_makes_no_network_request() {
    let Some((bin, dir, report)) = chromium_and_report() else {
        skip!("chromium not installed (make test installs Debian's chromium)");
    };

    // The detector must see a request when there is one: a control page with a remote image.
    let control = dir.path().join("control.html");
    std::fs::write(
        &control,
        "<html><body><img src=\"http://192.0.2.1/x.png\"></body></html>",
    )
    .unwrap();
    let log = dir.path().join("control-netlog.json");
    run_chromium(
        &bin,
        &dir.path().join("c"),
        &format!("file://{}", control.display()),
        &[
            "--dump-dom".into(),
            format!("--log-net-log={}", log.display()),
        ],
    );
    assert_eq!(
        page_requests(&log),
        ["http://192.0.2.1/x.png"],
        "the detector works"
    );

    let log = dir.path().join("report-netlog.json");
    let out = run_chromium(
        &bin,
        &dir.path().join("r"),
        &format!("file://{}#selftest", report.display()),
        &[
            "--dump-dom".into(),
            format!("--log-net-log={}", log.display()),
        ],
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("data-selftest=\"ok"));
    assert_eq!(
        page_requests(&log),
        Vec::<String>::new(),
        "the report fetched something"
    );
}

/// A result with an attribution and nothing else (so that the section fills the page): a
/// "Why the tail" of known causes, bands (one unsupported) and two worst windows with
/// their kernel spans.
fn explained_result(dir: &Path) -> PathBuf {
    use latlab_core::results::{Attribution, Band, CauseSpan, CauseTime, CpuSteal, WorstWindow};
    let ct = CauseTime::new;
    let span = |class: &str, name: &str, start_ns, end_ns| CauseSpan {
        class: class.into(),
        name: name.into(),
        start_ns,
        end_ns,
    };
    let mut r = latlab_core::results::ResultFile::new(
        "host.noise",
        vec!["latlab".into()],
        Default::default(),
        Default::default(),
    );
    r.explain = Some(Attribution {
        complete: true,
        windows: 400,
        excess_ns: 9_000_000,
        explained_ns: 8_700_000,
        causes: vec![
            ct("preempted", "latlab-hog", 40, 6_000_000),
            ct("outside_kernel", "", 300, 1_500_000),
            ct("timer", "local_timer", 350, 1_200_000),
            ct("unexplained", "", 200, 300_000),
        ],
        worst: vec![
            WorstWindow {
                cpu: 1,
                start_tsc: 1_000_000,
                duration_ns: 230_000,
                causes: vec![
                    ct("preempted", "latlab-hog", 1, 200_000),
                    ct("outside_kernel", "", 1, 20_000),
                ],
                events: vec!["CPU 0: no kernel event meanwhile".into()],
                spans: vec![span("preempted", "latlab-hog", 22_000, 222_000)],
                ..Default::default()
            },
            WorstWindow {
                cpu: 1,
                start_tsc: 9_000_000,
                duration_ns: 40_000,
                causes: vec![ct("timer", "local_timer", 1, 30_000)],
                events: vec![],
                spans: vec![span("timer", "local_timer", 8_000, 38_000)],
                ..Default::default()
            },
        ],
        bands: vec![
            Band {
                from: "p90".into(),
                to: "p99".into(),
                supported: true,
                windows: 36,
                min_ns: 12_000,
                max_ns: 40_000,
                excess_ns: 900_000,
                causes: vec![
                    ct("timer", "local_timer", 30, 600_000),
                    ct("outside_kernel", "", 30, 300_000),
                ],
            },
            Band {
                from: "p99".into(),
                to: "p99.9".into(),
                supported: false,
                windows: 4,
                min_ns: 200_000,
                max_ns: 230_000,
                excess_ns: 850_000,
                causes: vec![ct("preempted", "latlab-hog", 4, 850_000)],
            },
        ],
        steal: vec![CpuSteal {
            cpu: 1,
            ns: 10_000_000,
            silent_ns: 0,
        }],
        ..Attribution::default()
    });
    let out = dir.join("explained.json");
    r.save(&out).unwrap();
    out
}

#[test]
fn the_why_the_tail_section_renders_in_chromium() {
    let Some(bin) = chromium() else {
        skip!("chromium not installed (make test installs Debian's chromium)");
    };
    let dir = tempfile::tempdir().unwrap();
    let input = explained_result(dir.path());
    let report = dir.path().join("explained.html");
    ok(&latlab()
        .arg("report")
        .arg(&input)
        .args(["--title", "why the tail", "-o"])
        .arg(&report)
        .output()
        .unwrap());
    let url = format!("file://{}", report.display());
    let out = run_chromium(&bin, &dir.path().join("p1"), &url, &["--dump-dom".into()]);
    let dom = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "chromium failed: {stderr}");
    let console = console_messages(&stderr);
    assert!(console.is_empty(), "console messages: {console:#?}");
    // the section, its heading, its causes table and figures, as the browser built the DOM
    let at = dom
        .find("id=\"why-the-tail-host-noise\"")
        .expect("the section is in the DOM");
    let s = &dom[at..];
    for needle in [
        "Why the tail (host.noise)",
        "Causes ranked by time (share of the excess)",
        "preempted by task (latlab-hog)",
        "outside the kernel",
        "explained: 8.70ms of 9.00ms excess (96.7%); outside the kernel: 16.7%",
        "steal time during the run",
        "Percentile bands of the attributed windows",
        "unsupported",
        "Slowest windows",
        "CPU 0: no kernel event meanwhile",
    ] {
        assert!(s.contains(needle), "{needle:?} missing from the section");
    }
    assert!(
        s.contains("<svg"),
        "the band bars and the timeline are drawn"
    );
    // screenshot of the section as a test artefact
    screenshot(
        &bin,
        &dir.path().join("p2"),
        &url,
        "why-the-tail.png",
        2400,
        30_000,
    );
}

/// The killer-us report leads with its answer: in a 1400×900 window the Result section
/// (what was measured, the winner, the p99.99 table) is the first thing and fits entirely
/// on the first screen, with the trust box starting below it. Saves the first screen as
/// `killer-us-first-screen.png`.
#[test]
fn killer_us_report_shows_its_result_on_the_first_screen() {
    let Some(bin) = chromium() else {
        skip!("chromium not installed (make test installs Debian's chromium)");
    };
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("killer-us.html");
    ok(&latlab()
        .arg("report")
        .arg(fixture("report/killer-us.json"))
        .args(["--no-figures", "--title", "killer-us", "-o"])
        .arg(&report)
        .output()
        .unwrap());
    let url = format!("file://{}#selftest", report.display());
    let size = "--window-size=1400,900".to_string();
    let out = run_chromium(
        &bin,
        &dir.path().join("p1"),
        &url,
        &["--dump-dom".into(), size.clone()],
    );
    let dom = String::from_utf8_lossy(&out.stdout).into_owned();
    let attr = |name: &str| {
        dom.split(&format!("{name}=\""))
            .nth(1)
            .and_then(|s| s.split('"').next())
            .unwrap_or("absent")
            .to_string()
    };
    let whole = attr("data-first-screen-whole");
    let starts = attr("data-first-screen");
    assert_eq!(
        whole.split(' ').next(),
        Some("result"),
        "the Result section must be whole on the first screen: {whole} (starting there: {starts})"
    );
    let first = dom.find("id=\"result\"").expect("a Result section");
    for later in ["id=\"trust\"", "<figure", "id=\"overview\""] {
        assert!(
            dom.find(later).is_some_and(|i| i > first),
            "{later} comes after the Result section"
        );
    }
    assert!(
        dom.contains("Measured: the latency of"),
        "what was measured"
    );
    let shot = artifacts().join("killer-us-first-screen.png");
    let _ = std::fs::remove_file(&shot);
    ok(&run_chromium(
        &bin,
        &dir.path().join("p2"),
        &url,
        &[size, format!("--screenshot={}", shot.display())],
    ));
    let png = std::fs::read(&shot).expect("screenshot written");
    assert!(png.starts_with(b"\x89PNG"), "a real screenshot");
    eprintln!("screenshot: {}", shot.display());
}
