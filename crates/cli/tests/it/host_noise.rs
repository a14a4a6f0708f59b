//! `latlab host noise` and `latlab explain`: ground truth from a SCHED_FIFO hog of known
//! schedule, the idle run's explained share, the JSON form, and the refusals.

use crate::util::{
    assert_one_line_error, assert_usage_error, fixture, latlab, ok, require_root, system_turn,
};
use latlab_core::results::ResultFile;
use latlab_host::noise::NoiseData;
use latlab_sys::tsc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The CPU measured: the last one, so that CPU 0's housekeeping stays out of the way.
pub(crate) fn measured_cpu() -> u32 {
    latlab_sys::sched::online_cpus() - 1
}

/// A thread named `latlab-hog`, pinned to `cpu` under SCHED_FIFO 50, that spins for
/// `run` every `period` until `stop`, and returns the TSC interval of each spin.
pub(crate) fn hog(
    cpu: u32,
    run: Duration,
    period: Duration,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<Vec<(u64, u64)>> {
    std::thread::Builder::new()
        .name("latlab-hog".into())
        .spawn(move || {
            latlab_sys::sched::pin_current_thread(cpu).unwrap();
            latlab_sys::sched::set_fifo(50).unwrap();
            let (clock, _) = tsc::Clock::establish(latlab_core::units::Nanos::from_millis(20));
            let mut spans = Vec::with_capacity(4096);
            let mut next = std::time::Instant::now();
            while !stop.load(Ordering::Relaxed) {
                next += period;
                let a = clock.now();
                while clock.delta_nanos(a, clock.now()).to_std() < run {}
                spans.push((a, clock.now()));
                if let Some(d) = next.checked_duration_since(std::time::Instant::now()) {
                    std::thread::sleep(d);
                }
            }
            spans
        })
        .unwrap()
}

/// The hog on `cpu`: 200 µs every 10 ms until the flag is set; its handle returns
/// the TSC interval of each spin.
pub(crate) fn start_hog(cpu: u32) -> (Arc<AtomicBool>, std::thread::JoinHandle<Vec<(u64, u64)>>) {
    let stop = Arc::new(AtomicBool::new(false));
    let h = hog(
        cpu,
        Duration::from_micros(200),
        Duration::from_millis(10),
        stop.clone(),
    );
    (stop, h)
}

/// What `latlab explain --json RESULT` prints.
pub(crate) fn explain_json(result: &std::path::Path) -> serde_json::Value {
    let json = ok(&latlab()
        .args(["explain", "--json"])
        .arg(result)
        .output()
        .unwrap());
    serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}: {json}"))
}

fn overlaps(a: (u64, u64), b: (u64, u64)) -> bool {
    a.0 < b.1 && b.0 < a.1
}

#[test]
fn a_fifo_hog_is_found_as_preemption_by_its_comm() {
    require_root!("SCHED_FIFO hog and tracefs");
    let _turn = system_turn();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("hog.json");
    let cpu = measured_cpu();
    let (stop, h) = start_hog(cpu);
    let res = latlab()
        .args([
            "host",
            "noise",
            "--cpu",
            &cpu.to_string(),
            "--duration",
            "2s",
        ])
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    stop.store(true, Ordering::Relaxed);
    let spans = h.join().unwrap();
    let stdout = ok(&res);
    assert!(
        stdout.contains("preempted by task (latlab-hog)"),
        "{stdout}"
    );

    let r = ResultFile::load(&out).unwrap();
    let d = NoiseData::from_result(&r).unwrap();
    let tsc_hz = r.provenance.timebase.tsc.rate_hz.expect("a TSC timebase");
    let a = r
        .explain
        .as_ref()
        .expect("host noise stores its attribution");
    assert!(a.unavailable.is_none(), "{:?}", a.unavailable);
    let window = (d.start_tsc, d.end_tsc);
    let truth: Vec<(u64, u64)> = spans
        .into_iter()
        .filter(|s| s.0 > window.0 && s.1 < window.1)
        .collect();
    assert!(
        truth.len() >= 150,
        "{} hog runs inside the window",
        truth.len()
    );
    // A gap "names the hog" when the attribution gives the hog time in it; in a gap where
    // other tasks also ran (builds sharing the CPU) the hog need not be the top cause.
    let hog_ns = |g: &latlab_host::noise::GapRecord| -> u64 {
        g.causes
            .iter()
            .filter(|(c, _)| c == "preempted:latlab-hog")
            .map(|(_, t)| *t)
            .sum()
    };
    let hog_gaps: Vec<(u64, u64, u64)> = d
        .gap_list
        .iter()
        .filter(|g| g.duration_ns >= 5_000 && hog_ns(g) > 0)
        .map(|g| (g.start_tsc, g.end_tsc, hog_ns(g)))
        .collect();
    let true_pos = hog_gaps
        .iter()
        .filter(|g| truth.iter().any(|t| overlaps((g.0, g.1), *t)))
        .count();
    // A run is found when the gaps over it give the hog at least 90 % of the length of
    // the runs those gaps cover (a gap in which other tasks also ran may cover several).
    let len_ns = |t: &(u64, u64)| (t.1 - t.0) * 1_000_000_000 / tsc_hz;
    let mut errors_ns = Vec::new();
    let found = truth
        .iter()
        .filter(|t| {
            let gaps: Vec<&(u64, u64, u64)> = hog_gaps
                .iter()
                .filter(|g| overlaps((g.0, g.1), **t))
                .collect();
            let covered: Vec<&(u64, u64)> = truth
                .iter()
                .filter(|u| gaps.iter().any(|g| overlaps((g.0, g.1), **u)))
                .collect();
            let got: u64 = gaps.iter().map(|g| g.2).sum();
            let want: u64 = covered.iter().map(|u| len_ns(u)).sum();
            if covered.len() == 1 {
                errors_ns.push(got as i64 - want as i64);
            }
            !gaps.is_empty() && got * 10 >= want * 9
        })
        .count();
    errors_ns.sort_unstable();
    let q = |f: usize| {
        errors_ns
            .get(errors_ns.len() * f / 10)
            .copied()
            .unwrap_or(0)
    };
    let precision = true_pos as f64 / hog_gaps.len().max(1) as f64;
    let recall = found as f64 / truth.len() as f64;
    eprintln!(
        "hog: {} runs, {} gaps give it time; precision {precision:.3}, recall {recall:.3}; \
         hog time minus run length over {} single-run gaps: median {} ns, p10 {} ns, p90 {} ns",
        truth.len(),
        hog_gaps.len(),
        errors_ns.len(),
        q(5),
        q(1),
        q(9),
    );
    // what the gaps over the hog's runs were attributed to, for a failure message
    let mut under: std::collections::BTreeMap<&str, usize> = Default::default();
    for g in &d.gap_list {
        if truth.iter().any(|t| overlaps((g.start_tsc, g.end_tsc), *t)) {
            *under.entry(g.cause.as_str()).or_default() += 1;
        }
    }
    assert!(precision >= 0.9, "precision {precision:.3}; {under:?}");
    assert!(
        recall >= 0.9,
        "recall {recall:.3}; top causes of the gaps over hog runs: {under:?}; {} gaps, {:?}",
        d.gap_list.len(),
        r.explain.as_ref().map(|a| (a.lost_events, &a.unavailable))
    );

    // explain reads the same attribution back, as text and as JSON
    let text = ok(&latlab().arg("explain").arg(&out).output().unwrap());
    assert!(text.contains("preempted by task (latlab-hog)"), "{text}");
    assert!(text.contains("explained: "), "{text}");
    assert!(text.contains("worst:"), "{text}");
    let v = explain_json(&out);
    assert_eq!(v["excess_ns"].as_u64(), Some(a.excess_ns));
    assert_eq!(v["explained_ns"].as_u64(), Some(a.explained_ns));
    let causes = v["causes"].as_array().unwrap();
    let hog = causes
        .iter()
        .find(|c| c["class"] == "preempted" && c["name"] == "latlab-hog")
        .expect("the hog is among the causes");
    // the ranked causes and the gap list (top 8 causes per gap) say the same
    assert!(hog["count"].as_u64().unwrap() >= hog_gaps.len() as u64);
    let listed: u64 = hog_gaps.iter().map(|g| g.2).sum();
    let stored = hog["time_ns"].as_u64().unwrap();
    assert!(
        stored + hog_gaps.len() as u64 >= listed,
        "{stored} vs {listed}"
    );
}

/// The kernel's real-time bandwidth limit stops a spinning SCHED_FIFO thread for up to
/// 50 ms of every second (the default `kernel.sched_rt_runtime_us` 950000 of 1000000): the
/// run names it `rt throttling` with its time, and `latlab explain` shows it. The limit is
/// held at 950000 for the run through latlab's own guard, which puts back what was there
/// when it drops, the test failing or not.
#[test]
fn a_throttled_fifo_spinner_names_rt_throttling_with_its_time() {
    require_root!("SCHED_FIFO and kernel.sched_rt_runtime_us");
    let _turn = system_turn();
    let before = latlab_sys::rt_throttle::read_limit(std::path::Path::new(
        latlab_sys::rt_throttle::RT_RUNTIME_PATH,
    ))
    .unwrap();
    let limit = latlab_sys::rt_throttle::Unthrottled::set(950_000).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("throttled.json");
    let cpu = measured_cpu().to_string();
    let res = latlab()
        .args([
            "host", "noise", "--cpu", &cpu, "--fifo", "50", "-d", "3s", "-o",
        ])
        .arg(&out)
        .output()
        .unwrap();
    drop(limit);
    assert_eq!(
        latlab_sys::rt_throttle::read_limit(std::path::Path::new(
            latlab_sys::rt_throttle::RT_RUNTIME_PATH
        ))
        .unwrap(),
        before,
        "the limit is back"
    );
    let stdout = ok(&res);
    assert!(stdout.contains("rt throttling"), "{stdout}");
    let r = ResultFile::load(&out).unwrap();
    let d = NoiseData::from_result(&r).unwrap();
    let a = r.explain.as_ref().unwrap();
    assert!(a.unavailable.is_none(), "{:?}", a.unavailable);
    let throttled = a.class_time_ns("rt_throttling");
    let per_s = throttled as f64 / (d.elapsed_ns as f64 / 1e9) / 1e6;
    eprintln!(
        "rt throttling: {:.1} ms of {:.1} ms noise in {:.2} s ({per_s:.1} ms/s)",
        throttled as f64 / 1e6,
        d.noise_ns as f64 / 1e6,
        d.elapsed_ns as f64 / 1e9
    );
    // at most 50 ms of each 1-s period; a 3-s run spans three periods, or parts of four
    assert!(
        (15.0..=70.0).contains(&per_s),
        "{per_s:.1} ms/s of rt throttling; causes {:?}",
        a.causes
    );
    assert!(
        throttled * 2 >= a.excess_ns,
        "rt throttling {throttled} ns of {} ns excess: {:?}",
        a.excess_ns,
        a.causes
    );
    // nothing of it is called the idle task's preemption any more
    assert!(
        a.causes
            .iter()
            .all(|c| !(c.class == "preempted" && c.name.starts_with("swapper"))),
        "{:?}",
        a.causes
    );
    let text = ok(&latlab().arg("explain").arg(&out).output().unwrap());
    let row = text
        .lines()
        .find(|l| l.starts_with("rt throttling "))
        .unwrap_or_else(|| panic!("no rt throttling row in: {text}"));
    assert!(
        row.contains(&latlab_core::units::format_ns(throttled as f64)),
        "{row} vs {throttled} ns"
    );
}

#[test]
fn an_idle_run_reports_its_explained_share() {
    require_root!("tracefs");
    let _turn = system_turn();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("idle.json");
    let cpu = measured_cpu().to_string();
    let stdout = ok(&latlab()
        .args(["host", "noise", "--cpu", &cpu, "--duration", "1s", "-o"])
        .arg(&out)
        .output()
        .unwrap());
    let r = ResultFile::load(&out).unwrap();
    let a = r.explain.as_ref().unwrap();
    let d = NoiseData::from_result(&r).unwrap();
    assert_eq!(a.windows, d.gap_list.len() as u64);
    assert_eq!(r.counters["gaps"], d.gaps);
    assert_eq!(r.histogram("gap").unwrap().unwrap().count(), a.windows);
    assert!(a.explained_ns <= a.excess_ns);
    let line = stdout
        .lines()
        .find(|l| l.starts_with("explained: "))
        .unwrap_or_else(|| panic!("no explained share in: {stdout}"));
    eprintln!("idle: {line}");
    if a.excess_ns > 0 {
        let pct = format!("({:.1}%)", a.explained_share() * 100.0);
        assert!(line.contains(&pct), "{line} vs {pct}");
    }
    assert!(stdout.contains("outside the kernel"), "{stdout}");
}

#[test]
fn without_kernel_events_the_gap_half_runs_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("gaps.json");
    let stdout = ok(&latlab()
        .args([
            "host",
            "noise",
            "--cpu",
            "0",
            "--duration",
            "200ms",
            "--no-kernel",
            "--no-mlock",
            "-o",
        ])
        .arg(&out)
        .output()
        .unwrap());
    assert!(
        stdout.contains("kernel events unavailable: --no-kernel was given"),
        "{stdout}"
    );
    let r = ResultFile::load(&out).unwrap();
    let a = r.explain.unwrap();
    assert!(!a.complete);
    assert_eq!(a.explained_ns, 0);
}

#[test]
fn explain_refuses_a_result_without_attribution() {
    let f = fixture("host-clocks-a.json");
    let out = latlab().arg("explain").arg(&f).output().unwrap();
    assert_one_line_error(
        &out,
        2,
        &[
            "host-clocks-a.json",
            "no attribution",
            "run `latlab host clocks` with --explain",
        ],
    );
    assert!(out.stdout.is_empty());
    // a kind whose command records none is told which commands do
    let dir = tempfile::tempdir().unwrap();
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
    v["kind"] = "net.load".into();
    let load = dir.path().join("load.json");
    std::fs::write(&load, v.to_string()).unwrap();
    let out = latlab().arg("explain").arg(&load).output().unwrap();
    assert_one_line_error(
        &out,
        2,
        &[
            "load.json",
            "net.load",
            "records none",
            "`latlab host noise` does",
        ],
    );
}

#[test]
fn bad_numbers_are_usage_errors() {
    for (args, needle) in [
        (vec!["--cpu", "0", "--threshold", "nan"], "--threshold"),
        (vec!["--cpu", "0", "--duration", "inf"], "--duration"),
        (vec!["--cpu", "0", "--duration=-1s"], "--duration"),
        (vec!["--cpu", "0", "--duration", "2h"], "--duration"),
        (
            vec!["--cpu", "0", "--threshold", "10s", "--duration", "1s"],
            "--threshold",
        ),
        (vec!["--cpu", "0", "--fifo", "0"], "--fifo"),
        (vec!["--cpu", "0", "--buffer-kb", "1"], "--buffer-kb"),
        (vec!["--cpu=-1"], "--cpu"),
        (
            vec!["--cpu", "4096", "--no-kernel", "--duration", "10ms"],
            "CPU 4096",
        ),
    ] {
        let mut full = vec!["host", "noise"];
        full.extend(args);
        assert_usage_error(&full, &[needle]);
    }
}

/// The rows of the table captioned `caption` in `html`, each cell's text as written
/// (escaped), tags of notes left out.
pub(crate) fn table_rows(html: &str, caption: &str) -> Vec<Vec<String>> {
    let start = html
        .find(&format!("<caption>{caption}</caption>"))
        .unwrap_or_else(|| panic!("no table '{caption}'"));
    let table = &html[start..start + html[start..].find("</table>").unwrap()];
    let body = &table[table.find("</thead>").map_or(0, |i| i + 8)..];
    body.split("<tr>")
        .skip(1)
        .map(|row| {
            row.split("<td")
                .skip(1)
                .map(|cell| {
                    let text = &cell[cell.find('>').unwrap() + 1..];
                    text[..text.find(['<']).unwrap_or(text.len())].to_string()
                })
                .collect()
        })
        .collect()
}

pub(crate) fn html_escaped(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

/// A host.noise result with an attribution: recorded (as root), else built here.
fn noise_result(out: &std::path::Path) {
    if latlab_testutil::is_root() {
        let _turn = system_turn();
        let cpu = measured_cpu().to_string();
        ok(&latlab()
            .args(["host", "noise", "--cpu", &cpu, "-d", "1s", "--quiet", "-o"])
            .arg(out)
            .output()
            .unwrap());
        return;
    }
    eprintln!("not root: the host.noise result is built by the test");
    let mut r = ResultFile::new(
        "host.noise",
        vec!["latlab".into()],
        Default::default(),
        Default::default(),
    );
    let ct = latlab_core::results::CauseTime::new;
    r.explain = Some(latlab_core::results::Attribution {
        complete: true,
        windows: 3,
        excess_ns: 60_000,
        explained_ns: 55_000,
        causes: vec![
            ct("outside_kernel", "", 3, 40_000),
            ct("timer", "tick_nohz_handler", 2, 15_000),
            ct("unexplained", "", 1, 5_000),
        ],
        ..Default::default()
    });
    r.save(out).unwrap();
}

#[test]
fn the_report_explains_the_tail_with_the_numbers_of_latlab_explain() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("noise.json");
    noise_result(&out);
    let a: latlab_core::results::Attribution = serde_json::from_value(explain_json(&out)).unwrap();
    assert!(!a.causes.is_empty(), "{a:?}");
    let html = crate::util::report_html([&out], &dir.path().join("r.html"), &["--no-figures"]);
    let s = crate::util::section(&html, "why-the-tail-host-noise");
    let rows = table_rows(s, "Causes ranked by time (share of the excess)");
    let expected: Vec<Vec<String>> = a
        .causes
        .iter()
        .map(|c| {
            latlab_explain::render::cause_row(c, a.excess_ns)
                .iter()
                .map(|t| html_escaped(t))
                .collect()
        })
        .collect();
    assert_eq!(rows, expected);
    // the same shares as explain's text, and the count and time straight from the JSON
    for (row, c) in rows.iter().zip(&a.causes) {
        assert_eq!(row[1], c.count.to_string());
        assert_eq!(row[2], latlab_core::units::format_ns(c.time_ns as f64));
    }
    let text = ok(&latlab().arg("explain").arg(&out).output().unwrap());
    let explained = latlab_explain::render::explained_line(&a);
    assert!(text.contains(&explained), "{text}");
    assert!(
        s.contains(&html_escaped(&explained)),
        "explained line missing"
    );
    if a.windows > 0 && !a.bands.is_empty() {
        assert!(s.contains("Percentile bands of the attributed windows"));
    }
}
