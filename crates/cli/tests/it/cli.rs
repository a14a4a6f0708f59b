//! End-to-end tests of the `latlab` binary: real measurements (short), result files read
//! back, plots, CSV, merging, and every bad-input path with its exit code.

use crate::util::{
    assert_contains, assert_one_line_error, assert_usage_error, latlab, latlab_line, run_ok,
    system_turn, text,
};
use latlab_core::results::ResultFile;
use std::path::{Path, PathBuf};

/// A short real run of `latlab host clocks` into `dir`, returning the result path.
fn clocks_run(dir: &Path, name: &str, extra: &[&str]) -> (PathBuf, String) {
    let path = dir.join(name);
    let out = latlab_line("host clocks --duration 150ms --calibration 20ms -o")
        .arg(&path)
        .args(extra)
        .output()
        .unwrap();
    assert!(out.status.success(), "clocks failed: {}", text(&out.stderr));
    (path, String::from_utf8(out.stdout).unwrap())
}

#[test]
fn help_lists_every_subcommand_and_examples() {
    let out = latlab().arg("--help").output().unwrap();
    assert!(out.status.success());
    let s = String::from_utf8(out.stdout).unwrap();
    assert_contains(
        &s,
        &[
            "host",
            "plot",
            "show",
            "report",
            "compare",
            "check",
            "Exit codes",
        ],
    );
    for args in [
        &["host", "clocks", "--help"][..],
        &["plot", "--help"],
        &["show", "--help"],
        &["report", "--help"],
        &["compare", "--help"],
        &["check", "--help"],
    ] {
        let out = latlab().args(args).output().unwrap();
        assert!(
            String::from_utf8(out.stdout).unwrap().contains("Examples:"),
            "{args:?}"
        );
    }
}

#[test]
fn bad_duration_is_one_line_naming_the_flag_exit_2() {
    assert_usage_error(
        ["host", "clocks", "--duration", "5xs"],
        &["--duration", "5xs", "250ns, 87.0us, 5.3ms, 1.5s, 3m"],
    );
}

#[test]
fn missing_required_argument_names_it_on_one_line_exit_2() {
    // clap's own message puts the missing flag on an indented second line; the one line
    // latlab prints must still name it.
    assert_usage_error(
        ["net", "delay", "--delay", "20us"],
        &["required arguments were not provided", "--ifaces"],
    );
    // Several missing: all named, on the same line.
    assert_usage_error(["compare"], &["not provided: <A>, <B>"]);
}

#[test]
fn other_bad_flags_exit_2() {
    let cases: [(&[&str], &[&str]); 7] = [
        (
            &["host", "clocks", "--sources", "rdtsc,sundial"],
            &["--sources", "sundial", "monotonic_raw"],
        ),
        (&["host", "clocks", "--duration", "0s"], &["--duration"]),
        (
            &["host", "clocks", "--duration", "10ms", "--fifo", "0"],
            &["--fifo", "1..=99"],
        ),
        (
            &["host", "clocks", "--duration", "10ms", "--cpu", "4095"],
            &["--cpu", "4095"],
        ),
        (
            &["host", "clocks", "--plot", "x.gif"],
            &["--plot", ".svg or .png"],
        ),
        (
            &["show", "x.json", "--percentiles", "101"],
            &["--percentiles", "101"],
        ),
        (&["frobnicate"], &["frobnicate"]),
    ];
    for (args, needles) in cases {
        assert_usage_error(args, needles);
    }
}

#[test]
fn host_clocks_measures_writes_and_plots() {
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("c.svg");
    let (path, stdout) = clocks_run(
        dir.path(),
        "c.json",
        &["--plot", svg.to_str().unwrap(), "--cpu", "0"],
    );
    // the table: at least five sources, and the rdtsc floor
    let rows = [
        "rdtsc",
        "rdtscp",
        "monotonic",
        "monotonic_raw",
        "realtime",
        "gettimeofday",
    ]
    .iter()
    .filter(|s| {
        stdout
            .lines()
            .any(|l| l.split_whitespace().next() == Some(**s))
    })
    .count();
    if cfg!(target_arch = "x86_64") {
        assert_eq!(rows, 6, "{stdout}");
        assert!(stdout.contains("rdtsc floor: "), "{stdout}");
    } else {
        assert!(rows >= 4, "{stdout}");
    }
    // the result file is complete and self-describing
    let r = ResultFile::load(&path).unwrap();
    assert_eq!(r.kind, "host.clocks");
    assert_eq!(r.schema_version, latlab_core::results::SCHEMA_VERSION);
    assert!(r.command_line.iter().any(|a| a == "clocks"));
    assert!(!r.provenance.host.kernel.is_empty());
    assert!(r.provenance.host.cpus_online >= 1);
    assert_eq!(r.provenance.threads[0].pinned_cpu, Some(0));
    assert_eq!(r.provenance.threads[0].observed_cpus, vec![0]);
    assert!(r.histograms.len() >= 4);
    for h in &r.histograms {
        assert!(h.count > 1000, "{}: {} samples", h.name, h.count);
    }
    let hlog = path.with_extension("hlog");
    let text = std::fs::read_to_string(&hlog).unwrap();
    assert!(text.contains("Tag=monotonic,"), "{text}");
    let svg_text = std::fs::read_to_string(&svg).unwrap();
    assert!(svg_text.starts_with("<svg") && svg_text.contains("monotonic_raw"));
}

#[test]
fn reloading_and_replotting_gives_identical_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let (path, stdout) = clocks_run(dir.path(), "r.json", &["--sources", "monotonic,realtime"]);
    // `show` recomputes from the file: its p50 equals the one the run printed
    let show_csv = || run_ok(latlab().arg("show").arg(&path).args(["--csv", "-"]));
    let csv = show_csv();
    let r = ResultFile::load(&path).unwrap();
    for name in ["monotonic", "realtime"] {
        let h = r.histogram(name).unwrap().unwrap();
        let p50 = h.value_at(latlab_core::parse::Percentile::LADDER[0]);
        let row = csv
            .lines()
            .find(|l| l.starts_with(&format!("{name},p50,")))
            .unwrap();
        assert_eq!(row.split(',').nth(2).unwrap(), p50.to_string());
        let printed = stdout
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap();
        assert_eq!(
            printed.split_whitespace().nth(2).unwrap(),
            latlab_core::units::format_ns(p50 as f64)
        );
    }
    // the same file gives the same CSV and the same figure, byte for byte
    assert_eq!(show_csv(), csv);
    let (a, b) = (dir.path().join("a.svg"), dir.path().join("b.svg"));
    for p in [&a, &b] {
        latlab()
            .arg("plot")
            .arg(&path)
            .arg("-o")
            .arg(p)
            .args(["--kind", "both"])
            .assert()
            .success();
    }
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    let png = dir.path().join("c.png");
    latlab()
        .arg("plot")
        .arg(&path)
        .arg("-o")
        .arg(&png)
        .args(["--series", "realtime"])
        .assert()
        .success();
    assert_eq!(&std::fs::read(&png).unwrap()[..8], b"\x89PNG\r\n\x1a\n");
}

#[test]
fn merging_runs_is_exact() {
    let dir = tempfile::tempdir().unwrap();
    let (a, _) = clocks_run(dir.path(), "a.json", &["--sources", "monotonic", "--quiet"]);
    let (b, _) = clocks_run(dir.path(), "b.json", &["--sources", "monotonic", "--quiet"]);
    let csv = dir.path().join("m.csv");
    latlab()
        .args(["show", "--merge"])
        .arg(&a)
        .arg(&b)
        .arg("--csv")
        .arg(&csv)
        .assert()
        .success();
    let n = |p: &Path| ResultFile::load(p).unwrap().histograms[0].count;
    let text = std::fs::read_to_string(&csv).unwrap();
    let row = text.lines().nth(1).unwrap();
    assert_eq!(
        row.rsplit(',').next().unwrap(),
        (n(&a) + n(&b)).to_string(),
        "{text}"
    );
}

#[test]
fn malformed_result_files_are_one_clear_line() {
    let dir = tempfile::tempdir().unwrap();
    let (good, _) = clocks_run(dir.path(), "g.json", &["--sources", "monotonic", "--quiet"]);
    let text = std::fs::read_to_string(&good).unwrap();
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("empty.json", Vec::new(), "empty file"),
        (
            "trunc.json",
            text.as_bytes()[..text.len() / 2].to_vec(),
            "truncated",
        ),
        (
            "newer.json",
            text.replace(
                &format!(
                    "\"schema_version\": {}",
                    latlab_core::results::SCHEMA_VERSION
                ),
                "\"schema_version\": 7",
            )
            .into_bytes(),
            "schema version 7",
        ),
        (
            "image.json",
            b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe".to_vec(),
            "not a latlab result",
        ),
        (
            "foreign.json",
            b"{\"hello\": \"world\"}".to_vec(),
            "not a latlab result",
        ),
    ];
    for (name, bytes, needle) in cases {
        let p = dir.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        for cmd in ["show", "plot", "report", "compare", "check"] {
            let mut c = latlab();
            c.arg(cmd).arg(&p);
            match cmd {
                "plot" => {
                    c.arg("-o").arg(dir.path().join("x.svg"));
                }
                "report" => {
                    c.arg("-o").arg(dir.path().join("x.html"));
                }
                "compare" => {
                    c.arg(&good);
                }
                "check" => {
                    c.args(["--budget", "max < 1s"]);
                }
                _ => {}
            }
            let out = c.output().unwrap();
            assert_one_line_error(&out, 2, &[name, needle]);
        }
    }
    for written in ["x.svg", "x.html", "x-figures"] {
        assert!(
            !dir.path().join(written).exists(),
            "nothing is written on bad input: {written}"
        );
    }
    let missing = dir.path().join("missing.json");
    assert_usage_error([Path::new("show"), &missing], &["missing.json"]);
}

#[test]
fn fifo_runs_as_root_or_says_why_not() {
    let _turn = system_turn();
    let dir = tempfile::tempdir().unwrap();
    let out = latlab_line(
        "host clocks --duration 50ms --calibration 10ms --sources monotonic --fifo 10 -q -o",
    )
    .arg(dir.path().join("f.json"))
    .output()
    .unwrap();
    if out.status.success() {
        let r = ResultFile::load(&dir.path().join("f.json")).unwrap();
        assert_eq!(r.provenance.threads[0].policy, "SCHED_FIFO");
        assert_eq!(r.provenance.threads[0].priority, 10);
    } else {
        eprintln!("not root: checking the refusal instead");
        assert_one_line_error(&out, 3, &["--fifo", "CAP_SYS_NICE"]);
    }
}

#[test]
fn monotonic_timebase_skips_tsc_sources_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let (path, stdout) = clocks_run(
        dir.path(),
        "m.json",
        &["--timebase", "monotonic", "--sources", "rdtsc,monotonic"],
    );
    assert!(
        stdout.contains("timebase: clock_monotonic (--timebase monotonic was given)"),
        "{stdout}"
    );
    assert!(stdout.contains("not measured: rdtsc"), "{stdout}");
    let r = ResultFile::load(&path).unwrap();
    assert_eq!(r.provenance.timebase.source, "clock_monotonic");
    assert!(r
        .warnings
        .iter()
        .any(|w| w.contains("timebase is CLOCK_MONOTONIC")));
    assert!(r
        .warnings
        .iter()
        .any(|w| w.starts_with("rdtsc: not measured")));
    assert_eq!(r.histograms.len(), 1);
}
