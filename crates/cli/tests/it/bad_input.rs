//! Bad input found by trying it: each case is rejected up front with
//! one line and exit 2 and writes nothing, or is handled honestly.

use crate::util::{
    assert_one_line_error, assert_usage_error, fixture, latlab, latlab_line, mpirun, require_mpi,
    run_ok, text,
};
use std::path::Path;

/// `latlab ARGS` run in `dir`; asserts exit 2, one line naming every needle, and that
/// `dir` is still empty (nothing written, not even a partial result).
fn rejected_in(dir: &Path, args: &[&str], needles: &[&str]) {
    let out = latlab().current_dir(dir).args(args).output().unwrap();
    assert_one_line_error(&out, 2, needles);
    let left: Vec<_> = std::fs::read_dir(dir).unwrap().collect();
    assert!(left.is_empty(), "{args:?} wrote {left:?}");
}

/// Every numeric flag of every command, from clap's own command tree as the binary parses
/// it: (subcommand words, --flag).
fn numeric_flags() -> Vec<(Vec<String>, String)> {
    let out = latlab()
        .env("LATLAB_LIST_NUMERIC_FLAGS", "1")
        .output()
        .unwrap();
    text(&out.stdout)
        .lines()
        .map(|l| {
            let (path, flag) = l.split_once('\t').expect("PATH<TAB>--FLAG");
            (
                path.split(' ').map(String::from).collect(),
                flag.to_string(),
            )
        })
        .collect()
}

#[test]
fn every_numeric_flag_rejects_nan_infinity_and_out_of_range_values() {
    let flags = numeric_flags();
    // the walk sees floats, integers, durations, percentiles and rates of every command
    for (path, flag) in [
        ("dfs sim", "--drift-ppm"),
        ("dfs run", "--drift-ppm"),
        ("dfs sim", "--inputs"),
        ("report", "--confidence"),
        ("show", "--percentiles"),
        ("net calibrate", "--duration"),
        ("net probe", "--rate"),
        ("experiment killer-us", "--duration"),
        ("host clocks", "--fifo"),
        ("net probe", "--dma-latency"),
        ("net reflect", "--dma-latency"),
        ("net load", "--dma-latency"),
        ("host noise", "--dma-latency"),
        ("host hold-idle", "--dma-latency"),
        ("experiment where-time", "--dma-latency"),
        ("experiment where-time", "--open-loop-rate"),
    ] {
        assert!(
            flags.iter().any(|(p, f)| p.join(" ") == path && f == flag),
            "{path} {flag} not listed"
        );
    }
    assert!(flags.len() > 80, "only {} numeric flags", flags.len());
    let dir = tempfile::tempdir().unwrap();
    for (path, flag) in &flags {
        for bad in ["NaN", "inf", "-inf", "1e300", "-1e300"] {
            let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
            args.extend([flag.as_str(), bad]);
            let out = latlab()
                .current_dir(dir.path())
                .args(&args)
                .output()
                .unwrap();
            let err = text(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
            assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
            assert!(err.contains(flag.as_str()), "{args:?}: {err}");
        }
    }
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(left.is_empty(), "wrote {left:?}");
}

/// `--dma-latency` takes a whole number of µs: fractions, negatives and values beyond
/// the PM QoS interface's i32 are refused up front, naming the flag.
#[test]
fn dma_latency_takes_whole_microseconds_only() {
    let dir = tempfile::tempdir().unwrap();
    for bad in ["1.5", "-1", "2000000001", "10us"] {
        rejected_in(
            dir.path(),
            &["net", "probe", "--to", "127.0.0.1:9", "--dma-latency", bad],
            &["--dma-latency"],
        );
        rejected_in(
            dir.path(),
            &["host", "hold-idle", "--dma-latency", bad, "--", "true"],
            &["--dma-latency"],
        );
    }
}

#[test]
fn dfs_sim_drift_that_stopped_clocks_is_rejected_instead_of_hanging() {
    // these ran forever: a drift of -10⁶ ppm or beyond stops or reverses a node's clock
    for bad in ["NaN", "inf", "1e300", "1e7", "-1e6"] {
        assert_usage_error(
            ["dfs", "sim", "--drift-ppm", bad],
            &["--drift-ppm", "finite number from 0 to 10000"],
        );
    }
    // a warm start longer than 10 s is a misspelt unit, not a model
    assert_usage_error(
        ["dfs", "sim", "--start-spread", "11s"],
        &["--start-spread", "0..=10s"],
    );
    // the library is the real guard: a configuration built without the CLI is refused too
    let mut cfg = latlab_dfs::sim::SimConfig::new(2, 2, latlab_dfs::Mode::Dfs);
    for bad in [f64::NAN, f64::INFINITY, 1e7, -1e6] {
        cfg.net.max_drift_ppm = bad;
        let e = cfg.validate().unwrap_err().to_string();
        assert!(e.contains("--drift-ppm"), "{bad}: {e}");
        assert!(latlab_dfs::sim::run(&cfg).is_err(), "{bad} ran");
    }
}

#[test]
fn zero_durations_are_refused_before_anything_starts() {
    for args in [
        &["net", "calibrate", "-d", "0s"][..],
        &["experiment", "killer-us", "--duration", "0s"],
        &["net", "reflect", "--duration", "0s"],
        &["net", "forward", "--duration", "0s"],
    ] {
        let dir = tempfile::tempdir().unwrap();
        rejected_in(dir.path(), args, &["--duration", "must be positive"]);
    }
}

#[test]
fn dfs_run_without_time_slices_is_refused() {
    assert_usage_error(
        ["dfs", "run", "--time-slices", "0"],
        &["--time-slices", "0"],
    );
    // the runtime refuses it too, whoever builds its configuration
    let mut cfg = latlab_dfs::mpidata::RunConfig::new(4, 4, latlab_dfs::Mode::Dfs);
    cfg.time_slices = 0;
    assert!(cfg
        .validate()
        .unwrap_err()
        .to_string()
        .contains("--time-slices"));
    require_mpi!();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let o = mpirun(
        2,
        &[
            "dfs",
            "run",
            "--inputs",
            "1",
            "--computes",
            "1",
            "--time-slices",
            "0",
        ],
        &out,
    );
    let all = format!("{}{}", text(&o.stdout), text(&o.stderr));
    assert!(!o.status.success(), "{all}");
    assert!(!all.contains("verified"), "{all}");
    assert!(all.contains("--time-slices"), "{all}");
    assert!(!out.exists());
}

#[test]
fn dfs_sim_with_one_input_prints_no_infinite_ratio() {
    let dir = tempfile::tempdir().unwrap();
    let stdout = run_ok(
        latlab_line("dfs sim --inputs 1 --computes 1 --time-slices 200 --ts-per-interval 20 -o")
            .arg(dir.path().join("q.json")),
    );
    assert!(!stdout.contains("inf"), "{stdout}");
    assert!(!stdout.contains("NaN"), "{stdout}");
    assert!(stdout.contains("median n/a"), "{stdout}");
    assert!(
        stdout.contains("ratio of zero durations is undefined"),
        "{stdout}"
    );
}

#[test]
fn dfs_sim_output_named_twice_is_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let q = dir.path().join("q.json");
    let line = "dfs sim -q --time-slices 200 --ts-per-interval 20 -o";
    run_ok(latlab_line(line).arg(&q));
    run_ok(latlab_line(line).arg(&q));
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["q-best-effort.json", "q-dfs.json"]);
}

/// A copy of a checked-in result with `edit` applied, written to `dir/name`.
fn edited(dir: &Path, name: &str, edit: impl FnOnce(&mut serde_json::Value)) -> std::path::PathBuf {
    let src = fixture("host-clocks-a.json");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(src).unwrap()).unwrap();
    edit(&mut v);
    let p = dir.join(name);
    std::fs::write(&p, serde_json::to_string(&v).unwrap()).unwrap();
    p
}

#[test]
fn error_text_is_one_plain_sentence() {
    let dir = tempfile::tempdir().unwrap();
    // the OS reason once, not "...(os error 2): No such file or directory (os error 2)"
    let out = latlab().args(["show", "no-such.json"]).output().unwrap();
    assert_one_line_error(&out, 2, &["no-such.json", "(os error 2)"]);
    assert_eq!(text(&out.stderr).matches("os error 2").count(), 1);

    // a truncated histogram: what is wrong, not HdrHistogram's Debug text
    let trunc = edited(dir.path(), "trunc.json", |v| {
        let data = v["histograms"][0]["data"].as_str().unwrap().to_string();
        let keep = (data.len() / 2) / 4 * 4; // whole base64 quanta: the payload ends early
        v["histograms"][0]["data"] = data[..keep].into();
    });
    let out = latlab().arg("show").arg(&trunc).output().unwrap();
    assert_one_line_error(&out, 2, &["trunc.json", "corrupt"]);
    let err = text(&out.stderr);
    for debug in ["IoError", "Custom {", "kind:", "UnexpectedEof"] {
        assert!(!err.contains(debug), "{err}");
    }

    // an invalid range: in words, not `HistConfig { lowest_ns: 0, .. }`
    let cfg = edited(dir.path(), "cfg.json", |v| {
        v["histograms"][0]["config"]["lowest_ns"] = 0.into();
    });
    let out = latlab().arg("show").arg(&cfg).output().unwrap();
    assert_one_line_error(&out, 2, &["cfg.json", "lowest 0 ns"]);
    assert!(!text(&out.stderr).contains("HistConfig"));

    // a schema_version of the wrong type is not "missing"
    let ver = edited(dir.path(), "ver.json", |v| v["schema_version"] = "1".into());
    let out = latlab().arg("show").arg(&ver).output().unwrap();
    assert_one_line_error(
        &out,
        2,
        &["ver.json", "'schema_version' is \"1\", not a whole number"],
    );
    let missing = edited(dir.path(), "nover.json", |v| {
        v.as_object_mut().unwrap().remove("schema_version");
    });
    let out = latlab().arg("show").arg(&missing).output().unwrap();
    assert_one_line_error(&out, 2, &["no 'schema_version' field"]);
}

#[test]
fn two_histograms_of_one_name_are_rejected_at_load() {
    let dir = tempfile::tempdir().unwrap();
    let dup = edited(dir.path(), "dup.json", |v| {
        let first = v["histograms"][0].clone();
        v["histograms"].as_array_mut().unwrap().push(first);
    });
    let name = {
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&dup).unwrap()).unwrap();
        v["histograms"][0]["name"].as_str().unwrap().to_string()
    };
    let html = dir.path().join("r.html");
    let svg = dir.path().join("p.svg");
    let dup_s = dup.to_str().unwrap();
    for args in [
        vec!["show", dup_s],
        vec!["report", dup_s, "-o", html.to_str().unwrap()],
        vec!["plot", dup_s, "-o", svg.to_str().unwrap()],
        vec!["check", dup_s, "--budget", "p99 < 1s"],
    ] {
        let out = latlab().args(&args).output().unwrap();
        assert_one_line_error(
            &out,
            2,
            &["dup.json", &format!("two histograms are named '{name}'")],
        );
    }
    assert!(!html.exists() && !svg.exists());
}

#[test]
fn negative_values_reach_the_flag_that_judges_them() {
    // not "unexpected argument '-0'": the flag's own line
    assert_usage_error(
        ["report", "x.json", "--confidence", "-0.5"],
        &["--confidence", "-0.5", "between 0 and 1"],
    );
    assert_usage_error(
        ["host", "clocks", "--duration", "-5ms"],
        &["--duration", "cannot be negative"],
    );
    assert_usage_error(
        ["dfs", "sim", "--noise", "-0.1"],
        &["--noise", "from 0 to 0.99"],
    );
    // meaningful where a rank's clock may drift backwards: parsed, and the run goes on to
    // its next check (one process is not the eight ranks this topology needs)
    let out = latlab_line("dfs run --drift-ppm -5").output().unwrap();
    assert_one_line_error(&out, 2, &["MPI ranks"]);
}

#[test]
fn a_dragonfly_that_cannot_hold_the_nodes_is_refused_before_anything_runs() {
    // 2 nodes per router, 2×2 routers per group, 1 global link per router: 5 groups of 8
    for args in [
        &[
            "dfs",
            "sim",
            "--network",
            "dragonfly",
            "--dragonfly-shape",
            "2:2x2:1",
            "--nodes",
            "42",
        ][..],
        &[
            "experiment",
            "dfs",
            "--no-mpi",
            "--network",
            "dragonfly",
            "--dragonfly-shape",
            "2:2x2:1",
            "--nodes",
            "8,42",
        ],
    ] {
        let dir = tempfile::tempdir().unwrap();
        rejected_in(
            dir.path(),
            args,
            &["--dragonfly-shape", "6 groups", "at most 5 groups"],
        );
    }
    for bad in ["0:16x6:10", "4:16x6", "4:16:6:10", "4:x6:10", "4:16x6:NaN"] {
        let dir = tempfile::tempdir().unwrap();
        rejected_in(
            dir.path(),
            &["dfs", "sim", "--dragonfly-shape", bad],
            &["--dragonfly-shape", "NODES:ROUTERSxCHASSIS:GLOBAL"],
        );
    }
}

#[test]
fn dfs_sim_refuses_a_malformed_noise_trace_with_one_line() {
    let traces = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    for (name, text, needle) in [
        ("words.txt", "duration_ns 1000\n10 x 3\n", "line 2"),
        ("nodur.txt", "10 20 3\n", "duration_ns"),
        ("empty.txt", "duration_ns 1000\n10 20 0\n", "no gaps"),
        (
            "overlap.txt",
            "duration_ns 10000\n5 9 1\n8 20 1\n",
            "line 3",
        ),
        ("foreign.json", "{\"schema\": 1}", "foreign.json"),
    ] {
        let p = traces.path().join(name);
        std::fs::write(&p, text).unwrap();
        let p = p.to_str().unwrap();
        rejected_in(
            out.path(),
            &["dfs", "sim", "--time-slices", "100", "--noise-trace", p],
            &["--noise-trace", needle],
        );
    }
    let missing = traces.path().join("missing.txt");
    rejected_in(
        out.path(),
        &["dfs", "sim", "--noise-trace", missing.to_str().unwrap()],
        &["--noise-trace", "cannot read"],
    );
    // the FLESnet policy exists only in the simulator: dfs run refuses it by name
    let args = ["dfs", "run", "--mode", "flesnet"];
    let o = latlab()
        .current_dir(out.path())
        .args(args)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
}

#[test]
fn dfs_sim_refuses_every_invalid_model_value_with_one_line_naming_its_flag() {
    let out = tempfile::tempdir().unwrap();
    for (args, needles) in [
        // more DDE replicas than compute nodes was silently clamped
        (
            &["--nodes", "8", "--dde-replicas", "99"][..],
            &["--dde-replicas", "99"][..],
        ),
        // delays of seconds: billions of noise and stall events before anything completes
        (&["--latency", "2s"], &["--latency", "0..=1s"]),
        (&["--jitter", "5s"], &["--jitter", "0..=1s"]),
        (&["--processing", "2s"], &["--processing", "0..=1s"]),
        (
            &["--noise-period", "10ns"],
            &["--noise-period", "at least 1us"],
        ),
        // allocations that abort instead of failing
        (
            &["--nodes", "8", "--slots", "4000000000"],
            &["--slots", "ring entries"],
        ),
        (&["--nodes", "100000"], &["--nodes", "ring entries"]),
        (
            &["--nodes", "8", "--ts-per-interval", "100000000000"],
            &["--ts-per-interval", "records"],
        ),
        // NaN, negative and zero where a factor must be in (0, 1]
        (
            &["--nodes", "8", "--slow", "input:99:0.5"],
            &["--slow", "below 4"],
        ),
        (&["--slow", "input:1:NaN"], &["--slow", "(0, 1]"]),
        (&["--slow", "compute:1:0"], &["--slow", "(0, 1]"]),
        (&["--slow", "input:1:-0.5"], &["--slow"]),
        (&["--drop", "15-25:NaN"], &["--drop", "(0, 1]"]),
        (&["--drop", "15-25:0"], &["--drop", "(0, 1]"]),
        (&["--drop", "15-25:-1"], &["--drop"]),
        (&["--drop", "25-15:0.5"], &["--drop", "FIRST-LAST:FACTOR"]),
        (
            &["--nodes", "8", "--kill-dde", "99@5ms"],
            &["--kill-dde", "99"],
        ),
        (&["--kill-dde", "0@NaN"], &["--kill-dde", "REPLICA@TIME"]),
        (&["--max-inflight", "0"], &["--max-inflight", "at least 1"]),
        (&["--slots", "0"], &["--slots", "at least 1"]),
        (&["--inputs", "0"], &["--inputs", "at least 1"]),
        (&["--nodes", "7"], &["--nodes", "even"]),
        (&["--bandwidth", "-1"], &["--bandwidth"]),
        (&["--bandwidth", "0"], &["--bandwidth"]),
        (&["--speed-spread", "-0.1"], &["--speed-spread"]),
        (&["--offered-load", "0"], &["--offered-load"]),
        (&["--drift-ppm", "NaN"], &["--drift-ppm"]),
        (&["--drift-ppm", "-1"], &["--drift-ppm"]),
        (&["--jobs", "0"], &["--jobs"]),
    ] {
        let mut a = vec!["dfs", "sim", "--time-slices", "64"];
        a.extend_from_slice(args);
        rejected_in(out.path(), &a, needles);
    }
}

#[test]
fn dfs_sim_refuses_malformed_traces_of_every_accepted_format() {
    let traces = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let sched: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("report/sched-run.json")).unwrap())
            .unwrap();
    // a `sched` result: its first `gap…` histogram over its duration
    let mut no_duration = sched.clone();
    no_duration["duration_ns"] = 0.into();
    let mut no_gap = sched.clone();
    no_gap["histograms"]
        .as_array_mut()
        .unwrap()
        .retain(|h| !h["name"].as_str().unwrap().starts_with("gap"));
    let mut corrupt = sched.clone();
    corrupt["histograms"][0]["data"] = "not base64 at all !".into();
    // a `host noise` result: a histogram named `gap`
    let mut host = sched.clone();
    host["kind"] = "host.noise".into();
    host["histograms"][0]["name"] = "gap".into();
    host["duration_ns"] = 1.into();
    let json = |v: &serde_json::Value| serde_json::to_string(v).unwrap();
    let cases: Vec<(&str, String, &str)> = vec![
        // text histograms
        (
            "twice.txt",
            "duration_ns 10\nduration_ns 10\n5 9 1\n".into(),
            "twice",
        ),
        ("neg.txt", "duration_ns 1000000\n5 9 -3\n".into(), "line 2"),
        (
            "zero-lo.txt",
            "duration_ns 1000000\n0 9 3\n".into(),
            "LO_NS",
        ),
        (
            "reversed.txt",
            "duration_ns 1000000\n9 5 3\n".into(),
            "LO_NS",
        ),
        ("nan.txt", "duration_ns NaN\n5 9 3\n".into(), "line 1"),
        (
            "huge-gap.txt",
            "duration_ns 100000000000000000\n5 9 1\n1000000000 99000000000 1\n".into(),
            "10 s",
        ),
        (
            "rate.txt",
            "duration_ns 1000000000\n1 1 2000000\n".into(),
            "stalls per second",
        ),
        (
            "overflow.txt",
            "duration_ns 1000\n1 1 18446744073709551615\n2 2 18446744073709551615\n".into(),
            "--noise-trace",
        ),
        (
            "half.txt",
            "duration_ns 1000000\n500000 900000 1\n".into(),
            "half",
        ),
        // result files
        ("sched-nodur.json", json(&no_duration), "duration_ns"),
        ("sched-nogap.json", json(&no_gap), "gap"),
        ("sched-corrupt.json", json(&corrupt), "sched-corrupt.json"),
        ("host-noise-1ns.json", json(&host), "host-noise-1ns.json"),
        (
            "truncated.json",
            json(&sched)[..200].to_string(),
            "truncated.json",
        ),
        (
            "foreign-kind.json",
            std::fs::read_to_string(fixture("report/dfs-sim-dfs.json")).unwrap(),
            "gap",
        ),
    ];
    for (name, text, needle) in &cases {
        let p = traces.path().join(name);
        std::fs::write(&p, text).unwrap();
        rejected_in(
            out.path(),
            &[
                "dfs",
                "sim",
                "--time-slices",
                "64",
                "--noise-trace",
                p.to_str().unwrap(),
            ],
            &["--noise-trace", needle],
        );
        // `dfs noise-trace FILE` reads the same files and refuses them the same way
        let o = latlab()
            .args(["dfs", "noise-trace", p.to_str().unwrap()])
            .output()
            .unwrap();
        assert_one_line_error(&o, 2, &["--noise-trace"]);
    }
    // the unmodified sched result is a usable trace (so the cases above fail for their
    // change, not for the format)
    let ok = traces.path().join("sched.json");
    std::fs::write(&ok, json(&sched)).unwrap();
    run_ok(latlab().args(["dfs", "noise-trace", ok.to_str().unwrap()]));
}

#[test]
fn experiment_dfs_refuses_sizes_the_simulator_cannot_hold() {
    for (args, needle) in [
        (&["--nodes", "100000"][..], "100000 nodes (--nodes"),
        (
            &["--nodes", "8", "--ts-per-interval", "100000000000"],
            "--ts-per-interval",
        ),
        (&["--nodes", "8", "--sweep-nodes", "20000"], "20000 nodes"),
        (
            &["--nodes", "8", "--mpi-time-slices", "0"],
            "--mpi-time-slices",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut a = vec!["experiment", "dfs", "--out-dir", "x"];
        if !args.contains(&"--mpi-time-slices") {
            a.push("--no-mpi");
        }
        a.extend_from_slice(args);
        rejected_in(dir.path(), &a, &[needle]);
    }
}
