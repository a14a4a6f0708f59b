//! End-to-end tests of `latlab report`, `latlab compare` and `latlab check` on checked-in
//! fixtures (two short real `host clocks` runs) and on seeded synthetic results of known
//! distributions.

use crate::util::{
    assert_one_line_error, assert_sections, fixture, latlab, text, CLOCKS_REPORT_SECTIONS,
};
use latlab_core::hist::{HistConfig, LatencyHistogram};
use latlab_core::results::{Provenance, ResultFile, StoredHistogram};
use latlab_core::units::Nanos;
use std::path::{Path, PathBuf};

/// splitmix64, so synthetic runs are reproducible.
fn next(state: &mut u64) -> f64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (((z ^ (z >> 31)) >> 11) as f64 + 0.5) / (1u64 << 53) as f64
}

/// A synthetic result: `n` samples of 5 µs + Exp(mean), with counter `lost`.
fn synthetic(
    dir: &Path,
    name: &str,
    kind: &str,
    seed: u64,
    n: u64,
    mean: f64,
    lost: u64,
) -> PathBuf {
    let mut s = seed;
    let mut h = LatencyHistogram::new(HistConfig::default()).unwrap();
    for _ in 0..n {
        h.record(Nanos((5_000.0 - mean * next(&mut s).ln()) as u64));
    }
    let mut r = ResultFile::new(
        kind,
        vec!["synthetic".into()],
        serde_json::json!({"mean": mean}),
        Provenance::default(),
    );
    r.histograms.push(StoredHistogram::new("latency", &h));
    r.counters.insert("lost".into(), lost);
    let p = dir.join(name);
    r.save(&p).unwrap();
    p
}

#[test]
fn report_on_one_run_and_on_merged_runs() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (fixture("host-clocks-a.json"), fixture("host-clocks-b.json"));
    let one = dir.path().join("one.html");
    let out = latlab()
        .arg("report")
        .arg(&a)
        .arg("-o")
        .arg(&one)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let html = std::fs::read_to_string(&one).unwrap();
    assert_sections(&html, &CLOCKS_REPORT_SECTIONS);
    assert_eq!(
        html.matches("<figure class=\"dist\"").count(),
        2,
        "CCDF and CDF"
    );
    assert!(html.contains("The rdtsc floor"));
    // standalone figures beside the report
    let figs: Vec<_> = std::fs::read_dir(dir.path().join("one-figures"))
        .unwrap()
        .collect();
    assert_eq!(figs.len(), 4, "CCDF and CDF as SVG and PNG");

    // two runs as one merged group: sample counts add up exactly
    let merged = dir.path().join("merged.html");
    let group = format!("{},{}", a.display(), b.display());
    let out = latlab()
        .args(["report", &group, "--no-figures", "-o"])
        .arg(&merged)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let html = std::fs::read_to_string(&merged).unwrap();
    assert!(html.contains("host-clocks-a (+1 runs merged)"));
    let count = |p: &Path| -> u64 {
        let r = ResultFile::load(p).unwrap();
        r.histograms
            .iter()
            .find(|h| h.name == "rdtsc")
            .unwrap()
            .count
    };
    let total = count(&a) + count(&b);
    assert!(
        html.contains(&format!("<td class=\"num\">{total}</td>")),
        "merged rdtsc count {total}"
    );
    assert!(!dir.path().join("merged-figures").exists());
}

#[test]
fn report_refuses_a_bad_output_name_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = latlab()
        .arg("report")
        .arg(fixture("host-clocks-a.json"))
        .arg("-o")
        .arg(dir.path().join("r.pdf"))
        .output()
        .unwrap();
    assert_one_line_error(&out, 2, &["--output"]);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn compare_tells_same_from_different_configurations() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let a1 = synthetic(d, "a1.json", "synthetic", 11, 300_000, 3_000.0, 0);
    let a2 = synthetic(d, "a2.json", "synthetic", 12, 300_000, 3_000.0, 0);
    let b = synthetic(d, "b.json", "synthetic", 14, 300_000, 4_000.0, 0);

    // same configuration: no significant difference at any supported percentile
    let out = latlab().arg("compare").arg(&a1).arg(&a2).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let s = text(&out.stdout);
    assert!(!s.contains("slower") && !s.contains("faster"), "{s}");
    assert_eq!(
        s.matches("no significant difference").count(),
        5,
        "p50..p99.99: {s}"
    );
    assert!(
        s.contains("p99.999: not supported by either sample count"),
        "{s}"
    );

    // different configuration: B slower everywhere supported
    let out = latlab().arg("compare").arg(&a1).arg(&b).output().unwrap();
    let s = text(&out.stdout);
    assert_eq!(s.matches(": B is ").count(), 5, "{s}");
    assert!(s.contains("p50: B is") && s.contains("slower (±"), "{s}");

    // repeated runs merged before comparing: two runs of 60,000 support p99.99 together
    // (it needs 100,000 samples), one alone does not
    let s1 = synthetic(d, "s1.json", "synthetic", 21, 60_000, 3_000.0, 0);
    let s2 = synthetic(d, "s2.json", "synthetic", 22, 60_000, 3_000.0, 0);
    let out = latlab().arg("compare").arg(&s1).arg(&b).output().unwrap();
    let s = text(&out.stdout);
    assert!(
        s.contains("p99.99: not supported by A's sample count (60000)"),
        "{s}"
    );
    let group = format!("{},{}", s1.display(), s2.display());
    let out = latlab().args(["compare", &group]).arg(&b).output().unwrap();
    let s = text(&out.stdout);
    assert!(s.contains("2 runs merged exactly"), "{s}");
    assert!(s.contains("p99.99: B is"), "{s}");
}

#[test]
fn compare_refuses_different_kinds() {
    let dir = tempfile::tempdir().unwrap();
    let a = synthetic(dir.path(), "a.json", "synthetic", 1, 1000, 100.0, 0);
    let out = latlab()
        .arg("compare")
        .arg(&a)
        .arg(fixture("host-clocks-a.json"))
        .output()
        .unwrap();
    assert_one_line_error(&out, 2, &["different kinds", "host.clocks"]);
}

#[test]
fn check_exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    let r = synthetic(dir.path(), "r.json", "synthetic", 5, 100_000, 1_000.0, 0);
    let lossy = synthetic(
        dir.path(),
        "lossy.json",
        "synthetic",
        6,
        100_000,
        1_000.0,
        4,
    );
    let check = |file: &Path, budgets: &[&str]| {
        let mut c = latlab();
        c.arg("check").arg(file);
        for b in budgets {
            c.args(["--budget", b]);
        }
        c.output().unwrap()
    };
    // all hold: 0
    let out = check(
        &r,
        &["p99.9 < 50us", "max < 1s", "lost == 0", "count >= 100000"],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert_eq!(text(&out.stdout).matches("PASS").count(), 4);
    // one fails: 1, and every verdict is printed
    let out = check(&lossy, &["p99.9 < 50us", "lost == 0"]);
    assert_eq!(out.status.code(), Some(1));
    let s = text(&out.stdout);
    assert!(
        s.contains("PASS  p99.9 < 50us") && s.contains("FAIL  lost == 0") && s.contains("lost = 4"),
        "{s}"
    );
    assert!(text(&out.stderr).contains("1 of 2 budgets failed"));
    let out = check(&r, &["p50 < 5us"]);
    assert_eq!(out.status.code(), Some(1), "p50 is above 5 µs");
    // malformed budget: 2
    let out = check(&r, &["p99.99 << 5us"]);
    assert_one_line_error(&out, 2, &["--budget: budget 'p99.99 << 5us'"]);
    // unsupported percentile: 2, even beside a failing budget
    let out = check(&r, &["p50 < 1ns", "p99.9999 < 1ms"]);
    assert_one_line_error(&out, 2, &["not supported by its 100000 samples"]);
    // unknown counter: 2
    assert_eq!(check(&r, &["dropped == 0"]).status.code(), Some(2));
    // no budget: 2
    assert_eq!(check(&r, &[]).status.code(), Some(2));
    // budgets from TOML
    let toml = dir.path().join("b.toml");
    let check_file = |file: &Path| {
        latlab()
            .arg("check")
            .arg(file)
            .arg("--budgets")
            .arg(&toml)
            .output()
            .unwrap()
    };
    std::fs::write(&toml, "budgets = [\"p99 < 50us\", \"lost == 0\"]\n").unwrap();
    let out = check_file(&r);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(check_file(&lossy).status.code(), Some(1));
    std::fs::write(&toml, "budgets = 5\n").unwrap();
    assert_one_line_error(&check_file(&r), 2, &["b.toml: not a budget file"]);
}
