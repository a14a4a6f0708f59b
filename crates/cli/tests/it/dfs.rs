//! End-to-end tests of `latlab dfs`: the simulator through the binary, and the MPI runtime
//! under `mpirun` (skipped with a SKIP line when mpirun or MPI support is missing).

use crate::util::{assert_usage_error, latlab_bin, latlab_line, mpirun, require_mpi, run_ok, text};
use latlab_core::results::ResultFile;
use std::path::Path;

fn data(path: &Path) -> serde_json::Value {
    ResultFile::load(path).unwrap().data
}

#[test]
fn sim_writes_both_modes_and_prints_ratios() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("s.json");
    let stdout = run_ok(
        latlab_line("dfs sim --nodes 8 --time-slices 400 --ts-per-interval 40 -o").arg(&out),
    );
    assert!(stdout.contains("best effort / DFS"), "{stdout}");
    for m in ["best-effort", "dfs"] {
        let p = dir.path().join(format!("s-{m}.json"));
        let r = ResultFile::load(&p).unwrap();
        assert_eq!(r.kind, "dfs.sim");
        assert_eq!(r.counters["completed"], 400);
        assert_eq!(r.counters["contributions_stored"], 1600);
        assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    }
}

#[test]
fn sim_rejects_bad_input_with_exit_2() {
    for args in [
        ["--nodes", "7"],
        ["--drop", "15-25"],
        ["--slow", "router:1:0.5"],
        ["--theta", "150"],
    ] {
        assert_usage_error(["dfs", "sim"].iter().chain(&args), &[args[0]]);
    }
}

/// `latlab dfs run --inputs 4 --computes 4 ARGS` on 8 MPI ranks, into `dir/name`.
fn mpi_run(dir: &Path, name: &str, args: &[&str]) -> (std::process::Output, std::path::PathBuf) {
    let out = dir.join(name);
    let mut all = vec!["dfs", "run", "--inputs", "4", "--computes", "4", "-q"];
    all.extend(args);
    (mpirun(8, &all, &out), out)
}

/// Asserts that the `dfs.run` result at `out` built `ts` time-slices from `inputs` inputs
/// with every contribution sent, stored and verified, nothing lost, duplicated or corrupt.
fn assert_all_verified(out: &Path, mode: &str, ts: u64, inputs: u64) -> ResultFile {
    let r = ResultFile::load(out).unwrap();
    assert_eq!(r.kind, "dfs.run");
    let c = &r.counters;
    assert_eq!(c["completed"], ts, "{mode}");
    assert_eq!(c["contributions_stored"], ts * inputs, "{mode}");
    assert_eq!(c["contributions_sent"], ts * inputs, "{mode}");
    for k in [
        "contributions_lost",
        "duplicates",
        "checksum_failures",
        "overruns",
        "misrouted",
        "incomplete",
    ] {
        assert_eq!(c[k], 0, "{mode}: {k}");
    }
    assert_eq!(data(out)["verified"], true, "{mode}");
    r
}

#[test]
fn mpi_both_modes_build_10000_time_slices_verified() {
    require_mpi!();
    let dir = tempfile::tempdir().unwrap();
    for mode in ["best-effort", "dfs"] {
        let (o, out) = mpi_run(
            dir.path(),
            &format!("{mode}.json"),
            &["--mode", mode, "--time-slices", "10000", "--mts-size", "4K"],
        );
        assert!(o.status.success(), "{mode}: {}", text(&o.stderr));
        let r = assert_all_verified(&out, mode, 10_000, 4);
        let c = &r.counters;
        let d = data(&out);
        assert_eq!(
            r.histograms[0].count,
            10_000 - d["warmup_ts"].as_u64().unwrap()
        );
        if mode == "dfs" {
            assert!(c["proposals_used"] > 0, "DFS never used a proposal");
        }
    }
}

#[test]
fn mpi_run_survives_killing_one_of_two_dde_replicas() {
    require_mpi!();
    let dir = tempfile::tempdir().unwrap();
    // 2,000 time-slices in intervals of 100: replica 0 stops at interval 8 of 20
    let (o, out) = mpi_run(
        dir.path(),
        "kill.json",
        &[
            "--mode",
            "dfs",
            "--time-slices",
            "2000",
            "--ts-per-interval",
            "100",
            "--mts-size",
            "4K",
            "--dde-replicas",
            "2",
            "--kill-dde",
            "0@8",
            // injected clock offsets and drift: the synchroniser must cope
            "--clock-skew",
            "2ms",
            "--drift-ppm",
            "20",
        ],
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let r = ResultFile::load(&out).unwrap();
    let c = &r.counters;
    assert_eq!(c["dde_killed"], 1);
    assert_eq!(c["completed"], 2_000);
    assert_eq!(c["contributions_lost"], 0);
    assert_eq!(c["duplicates"], 0);
    assert_eq!(c["checksum_failures"], 0);
    let d = data(&out);
    assert_eq!(d["verified"], true);
    // the surviving replica kept proposing after the kill: intervals past 10 were proposed
    let intervals = d["intervals"].as_array().unwrap();
    let late_proposed = intervals
        .iter()
        .filter(|i| i["index"].as_u64().unwrap() > 10 && !i["proposed_ms"].is_null())
        .count();
    assert!(
        late_proposed > 0,
        "no proposals after the kill: {intervals:?}"
    );
    assert!(
        c["proposals_used"] > 40,
        "proposals used: {}",
        c["proposals_used"]
    );
}

#[test]
fn experiment_writes_results_figures_and_summary() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("exp");
    let stdout = run_ok(latlab_line("experiment dfs --no-mpi --nodes 4,8 --intervals 4 --drop-nodes 4 --drop-intervals 40 --sweep-nodes 4 --jobs 2 -q -o").arg(&out));
    for f in [
        "sim-4-best-effort.json",
        "sim-8-flesnet.json",
        "sweep-10-dfs.json",
        "sim-8-dfs.json",
        "sim-8-dfs-warm.json",
        "sim-drop-4.json",
        "sim-nodrop-4.json",
        "fig6-completion.svg",
        "fig7-bandwidth.svg",
        "fig8-intervals.svg",
        "fig9-buffer-fill.svg",
        "summary.md",
        "experiment.json",
    ] {
        assert!(out.join(f).exists(), "{f} missing");
    }
    let r = ResultFile::load(&out.join("experiment.json")).unwrap();
    assert_eq!(r.kind, "dfs.experiment");
    assert_eq!(r.data["sim"].as_array().unwrap().len(), 2);
    assert_eq!(r.data["mpi_skipped"], "--no-mpi");
    assert!(stdout.contains("median BE/DFS"), "{stdout}");
    // three policies, cold and warm, at two node counts, and every sweep variant at 4 nodes
    assert_eq!(r.data["policies"].as_array().unwrap().len(), 12);
    assert_eq!(r.data["sweep"].as_array().unwrap().len(), 11);
    assert!(
        stdout.contains("Sensitivity sweep") && stdout.contains("no node stalls"),
        "{stdout}"
    );
    let svg = std::fs::read_to_string(out.join("fig6-completion.svg")).unwrap();
    assert!(svg.contains("best effort") && svg.contains("DFS"));
}

/// Returns from the calling test with a SKIP line when latlab has no libfabric support.
macro_rules! require_ofi {
    () => {
        require_mpi!();
        if !cfg!(feature = "ofi") {
            crate::util::skip!("latlab built without the ofi feature (libfabric)");
        }
    };
}

#[test]
fn ofi_run_both_modes_verify_every_contribution() {
    require_ofi!();
    let dir = tempfile::tempdir().unwrap();
    for mode in ["best-effort", "dfs"] {
        let out = dir.path().join(format!("ofi-{mode}.json"));
        let mut args: Vec<&str> = "dfs run --transport ofi --inputs 2 --computes 2 -q \
             --time-slices 1000 --ts-per-interval 100 --mts-size 4K --mode"
            .split_whitespace()
            .collect();
        args.push(mode);
        let o = mpirun(4, &args, &out);
        assert!(o.status.success(), "{mode}: {}", text(&o.stderr));
        let r = assert_all_verified(&out, mode, 1_000, 2);
        let d = data(&out);
        assert_eq!(d["transport"], "ofi", "{mode}");
        assert!(!d["provider"].as_str().unwrap().is_empty(), "{mode}");
        assert_eq!(r.histograms[0].labels["transport"], "ofi");
    }
}

#[test]
fn ofi_bench_measures_every_size_and_variant() {
    require_ofi!();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("ofi-bench.json");
    let args = [
        "dfs",
        "bench",
        "--sizes",
        "1K,4K",
        "--bytes",
        "64K",
        "--min-rounds",
        "5",
        "-q",
        "--transport",
        "ofi",
    ];
    let o = mpirun(4, &args, &out);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let r = ResultFile::load(&out).unwrap();
    assert_eq!(r.kind, "dfs.bench");
    let d = data(&out);
    assert_eq!(d["transport"], "ofi");
    assert!(!d["provider"].as_str().unwrap().is_empty());
    let rows = d["rows"].as_array().unwrap();
    let got: Vec<(u64, bool)> = rows
        .iter()
        .map(|r| (r["size"].as_u64().unwrap(), r["mix"].as_bool().unwrap()))
        .collect();
    assert_eq!(
        got,
        [(1024, false), (1024, true), (4096, false), (4096, true)]
    );
    for (row, h) in rows.iter().zip(&r.histograms) {
        // 64 KiB to 2 receivers: 32 rounds of 1 KiB, 8 of 4 KiB; every round recorded
        let rounds = row["rounds"].as_u64().unwrap();
        assert_eq!(rounds, if row["size"] == 1024 { 32 } else { 8 });
        assert_eq!(h.count, rounds * 2, "two senders");
        assert!(row["aggregate_gbs"].as_f64().unwrap() > 0.0);
    }
}

#[test]
fn ofi_unknown_provider_is_one_line_and_exit_2() {
    require_ofi!();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("none.json");
    let args = [
        "dfs",
        "bench",
        "--transport",
        "ofi",
        "--ofi-provider",
        "no-such-provider",
    ];
    let o = mpirun(2, &args, &out);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    let err = text(&o.stderr);
    let line = err
        .lines()
        .find(|l| l.contains("no-such-provider"))
        .unwrap_or_else(|| panic!("{err}"));
    assert!(
        line.contains("--ofi-provider") && line.contains("available"),
        "{line}"
    );
    assert!(!out.exists(), "nothing written");
}

#[test]
fn ofi_provider_without_ofi_transport_is_refused() {
    for cmd in ["run", "bench"] {
        assert_usage_error(
            ["dfs", cmd, "--ofi-provider", "shm"],
            &["--ofi-provider", "--transport ofi"],
        );
    }
}

#[test]
fn dfs_sim_runs_three_policies_with_a_users_noise_trace() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.txt");
    std::fs::write(&trace, "duration_ns 1000000000\n20000 40000 500\n").unwrap();
    let shown = run_ok(latlab_line("dfs noise-trace").arg(&trace));
    assert!(
        shown.contains("500 gaps") && shown.contains("500.0 stalls/s"),
        "{shown}"
    );
    let out = dir.path().join("q.json");
    let stdout = run_ok(
        latlab_line("dfs sim --nodes 8 --time-slices 200 --ts-per-interval 20 --mode all --speed-spread 0.05 --noise-trace")
            .arg(&trace)
            .arg("-o")
            .arg(&out),
    );
    for m in ["best-effort", "dfs", "flesnet"] {
        assert!(
            dir.path().join(format!("q-{m}.json")).exists(),
            "{m}: {stdout}"
        );
    }
    assert!(stdout.contains("steady state and cost:"), "{stdout}");
    assert!(stdout.contains("best effort / DFS:"), "{stdout}");
    let r = latlab_core::results::ResultFile::load(&dir.path().join("q-flesnet.json")).unwrap();
    assert_eq!(r.data["config"]["stalls"]["bins"][0]["count"], 500);
    assert_eq!(r.data["config"]["speed_spread"], 0.05);
}

/// libfabric is loaded only by the commands that use it (`--transport ofi`): a latlab that
/// linked it would, through Debian's libfabric1, load libinfinipath, whose constructor pins
/// the process to CPU 0 and sleeps about 0.1 s at every start, whatever the command.
#[test]
fn a_command_without_libfabric_does_not_load_it() {
    let out = std::process::Command::new(latlab_bin())
        .arg("--version")
        .env("LD_DEBUG", "files")
        .output()
        .unwrap();
    assert!(out.status.success());
    let loads = text(&out.stderr);
    // the dynamic loader reports every object it loads: libc is one
    assert!(loads.contains("file=libc.so.6"), "{loads}");
    for lib in ["libfabric", "libinfinipath", "libpsm"] {
        assert!(
            !loads.contains(lib),
            "latlab --version loaded {lib}:\n{loads}"
        );
    }
}
