//! Figures a browser opens fast: a long sched run's timeline is drawn
//! at pixel resolution, and a report stays under [`REPORT_MAX_BYTES`] (docs/report.md).
//! The run is a recorded trace made up here — 10 s of three threads, 150,000 blocks — in
//! the result file and sidecar format a real run writes, so `sched render` and `report`
//! take the same path as on a real one.

use crate::util::{fixture, latlab, ok, report_html, section};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The size every single report stays under (docs/report.md, "Report size").
pub const REPORT_MAX_BYTES: usize = 2 << 20;

/// The greys the timeline draws blocks in: full, then columns the thread ran part of.
const GREYS: [&str; 4] = ["#808080", "#B0B0B0", "#C8C8C8", "#E0E0E0"];

/// Ten seconds, three threads on two CPUs: thread 0 runs 1 ms every 5 ms on CPU 0, thread 1
/// runs throughout on CPU 1 but for a 2 us gap every 100 ms, thread 2 runs 30 us every
/// 70 us on CPU 0 (the periodic threads' blocks end in sleep, thread 1's in gaps). Written as `DIR/long.json` with its sidecar, from the committed
/// `sched-run` fixture (a real two-thread run) given a third thread.
fn ten_second_run(dir: &Path) -> PathBuf {
    let s10: u64 = 10_000_000_000;
    let mut r: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(fixture("report").join("sched-run.json")).unwrap(),
    )
    .unwrap();
    r["duration_ns"] = s10.into();
    let d = &mut r["data"];
    d["spec"]["duration_ns"] = s10.into();
    d["trace_file"] = "long.trace.tsv".into();
    let mut third = d["threads"][1].clone();
    third["spec"]["id"] = 2.into();
    d["threads"].as_array_mut().unwrap().push(third.clone());
    d["spec"]["threads"]
        .as_array_mut()
        .unwrap()
        .push(third["spec"].clone());
    let mut blocks: Vec<(u32, u32, u64, u64, char)> = Vec::new();
    for k in 0..s10 / 5_000_000 {
        blocks.push((0, 0, k * 5_000_000, k * 5_000_000 + 1_000_000, 's'));
    }
    let mut start = 0;
    for k in 1..=100 {
        let gap = k * 100_000_000 - 50_000_000;
        blocks.push((1, 1, start, gap, 'g'));
        start = gap + 2_000;
    }
    blocks.push((1, 1, start, s10, 'e'));
    for k in 0..s10 / 70_000 {
        // on CPU 0 between thread 0's jobs
        let s = k * 70_000;
        if s % 5_000_000 >= 1_000_000 && s % 5_000_000 < 4_900_000 {
            blocks.push((2, 0, s, s + 30_000, 's'));
        }
    }
    blocks.sort_by_key(|b| b.2);
    let mut tsv = String::from("# latlab sched trace v1\n");
    for (t, c, s, e, why) in &blocks {
        let _ = writeln!(tsv, "B\t{t}\t{c}\t{s}\t{e}\t{why}");
    }
    std::fs::write(dir.join("long.trace.tsv"), tsv).unwrap();
    let path = dir.join("long.json");
    std::fs::write(&path, serde_json::to_string(&r).unwrap()).unwrap();
    path
}

/// The fills of the timeline's grey `<rect>`s, by row (the rect's `y`).
fn grey_rects_by_row(svg: &str) -> BTreeMap<String, Vec<String>> {
    let attr = |r: &str, k: &str| -> String {
        r.split(&format!(" {k}=\""))
            .nth(1)
            .and_then(|v| v.split('"').next())
            .unwrap_or("")
            .to_owned()
    };
    let mut rows: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for r in svg.split("<rect").skip(1) {
        let fill = attr(r, "fill");
        if GREYS.contains(&fill.as_str()) {
            rows.entry(attr(r, "y")).or_default().push(fill);
        }
    }
    rows
}

#[test]
fn a_ten_second_three_thread_timeline_has_at_most_one_element_per_pixel_column_per_row() {
    let dir = tempfile::tempdir().unwrap();
    let run = ten_second_run(dir.path());
    let svg_path = dir.path().join("long.svg");
    ok(&latlab()
        .args(["sched", "render"])
        .arg(&run)
        .arg("-o")
        .arg(&svg_path)
        .args(["--from", "0s", "--to", "10s", "--cpus"])
        .output()
        .unwrap());
    let svg = std::fs::read_to_string(&svg_path).unwrap();
    let rows = grey_rects_by_row(&svg);
    assert_eq!(
        rows.len(),
        5,
        "three threads and two CPUs: {:?}",
        rows.keys()
    );
    for (y, fills) in &rows {
        assert!(
            fills.len() <= 1200,
            "row at y={y}: {} elements",
            fills.len()
        );
    }
    // thread 1's 100 gaps of 2 us (a pixel column is ~10 ms): each a lighter column
    // between full stretches, so each stays visible
    let t1 = rows
        .values()
        .find(|f| f.iter().filter(|x| *x == "#808080").count() == 101)
        .expect("thread 1's row: 101 full stretches");
    assert_eq!(t1.iter().filter(|x| *x == "#B0B0B0").count(), 100);
    let marks_and_rects = svg.matches("<rect").count() + svg.matches("<polyline").count();
    assert!(
        marks_and_rects <= 5 * 1200 + 100,
        "{marks_and_rects} elements"
    );

    // the report of the same run: its timeline bounded the same way, the whole under
    // the stated size
    let html = report_html([&run], &dir.path().join("r.html"), &["--no-figures"]);
    assert!(html.len() < REPORT_MAX_BYTES, "{} bytes", html.len());
    let t = section(&html, "sched-timeline-long");
    for (y, fills) in grey_rects_by_row(t) {
        assert!(fills.len() <= 1200, "report row at y={y}: {}", fills.len());
    }
}

#[test]
fn every_golden_report_fixture_renders_under_the_stated_size() {
    let dir = tempfile::tempdir().unwrap();
    let fx = fixture("report");
    for inputs in [
        vec!["killer-us.json"],
        vec!["net-probe.json"],
        vec!["host-breakdown.json"],
        vec!["where-time.json"],
        vec!["sched-run.json"],
        vec![
            "hourglass/experiment.json",
            "hourglass/5.2-cache-cost.json",
            "hourglass/5.5-native.json",
            "hourglass/5.5-hr.json",
            "hourglass/5.5-12ms.json",
        ],
        vec!["dfs-sim-best-effort.json", "dfs-sim-dfs.json"],
    ] {
        let paths: Vec<PathBuf> = inputs.iter().map(|p| fx.join(p)).collect();
        let html = report_html(&paths, &dir.path().join("r.html"), &["--no-figures"]);
        assert!(
            html.len() < REPORT_MAX_BYTES,
            "{inputs:?}: {} bytes",
            html.len()
        );
    }
}
