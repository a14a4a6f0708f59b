//! `latlab report` on real `latlab dfs` results: a small simulation pair (best effort and
//! DFS with a bandwidth drop) and, where mpirun works, short MPI runs of both modes and a
//! short MPI micro-benchmark. The report must build and carry the dfs sections and figures.

use crate::util::{
    assert_contains, assert_sections, latlab_line, mpirun, report_html, require_mpi, run_ok, text,
};
use std::path::Path;

/// Runs `latlab report` on `inputs`, returns the HTML and the figure files written.
fn report(dir: &Path, name: &str, inputs: &[&Path]) -> (String, Vec<String>) {
    let html = report_html(inputs, &dir.join(format!("{name}.html")), &[]);
    let figs = std::fs::read_dir(dir.join(format!("{name}-figures")))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    (html, figs)
}

#[test]
fn report_on_a_simulated_best_effort_and_dfs_pair() {
    let dir = tempfile::tempdir().unwrap();
    run_ok(
        latlab_line(
            "dfs sim --nodes 8 --time-slices 800 --ts-per-interval 40 --drop 4-6:0.75 -q -o",
        )
        .arg(dir.path().join("s.json")),
    );
    let be = dir.path().join("s-best-effort.json");
    let dfs = dir.path().join("s-dfs.json");
    let (html, figs) = report(dir.path(), "r", &[&be, &dfs]);
    assert_sections(
        &html,
        &[
            "dfs-simulation-configuration",
            "dfs-simulation-completion-accounting",
            "dfs-simulation-time-slice-completion-duration",
            "dfs-simulation-aggregate-bandwidth",
            "dfs-simulation-best-effort-against-dfs",
            "dfs-simulation-proposed-and-actual-interval-durations",
            "dfs-simulation-compute-buffer-fill",
            "distributions",
            "percentiles",
        ],
    );
    assert_contains(
        &html,
        &[
            "complete, all verified",
            "8 nodes: the model gives a median completion ratio best effort / DFS of ",
            "Interval durations (Fig. 8)",
            "bandwidth drop",
        ],
    );
    for f in [
        "completion-duration-box-plot.svg",
        "interval-durations-s-dfs.svg",
        "buffer-fill-by-rank-s-best-effort.svg",
    ] {
        assert!(
            figs.iter().any(|n| n.ends_with(f)),
            "no figure *{f} in {figs:?}"
        );
    }
}

/// Runs `latlab <args> -q -o <out>` on 4 MPI ranks.
fn mpirun4(args: &[&str], out: &Path) {
    let mut all = args.to_vec();
    all.push("-q");
    let o = mpirun(4, &all, out);
    assert!(o.status.success(), "{args:?}: {}", text(&o.stderr));
}

#[test]
fn report_on_mpi_runs_of_both_modes() {
    require_mpi!();
    let dir = tempfile::tempdir().unwrap();
    let mut outs = Vec::new();
    for mode in ["best-effort", "dfs"] {
        let out = dir.path().join(format!("run-{mode}.json"));
        mpirun4(
            &[
                "dfs",
                "run",
                "--inputs",
                "2",
                "--computes",
                "2",
                "--mode",
                mode,
                "--time-slices",
                "1000",
                "--mts-size",
                "4K",
                "--ts-per-interval",
                "100",
            ],
            &out,
        );
        outs.push(out);
    }
    let (html, figs) = report(dir.path(), "r", &[&outs[0], &outs[1]]);
    assert_sections(
        &html,
        &[
            "dfs-over-mpi-completion-accounting",
            "dfs-over-mpi-time-slice-completion-duration",
            "dfs-over-mpi-best-effort-against-dfs",
            "dfs-over-mpi-proposed-and-actual-interval-durations",
            "dfs-over-mpi-compute-buffer-fill",
        ],
    );
    assert!(html.contains("1000 of 1000") && html.contains("complete, all verified"));
    assert!(html.contains("4 nodes: this run gives a median completion ratio"));
    assert!(
        figs.iter()
            .any(|n| n.ends_with("interval-durations-run-dfs.svg")),
        "{figs:?}"
    );
}

#[test]
fn report_on_an_mpi_micro_benchmark() {
    require_mpi!();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("bench.json");
    mpirun4(
        &["dfs", "bench", "--sizes", "1K,16K", "--bytes", "1M"],
        &out,
    );
    let (html, figs) = report(dir.path(), "b", &[&out]);
    assert!(html.contains("id=\"mpi-put-micro-benchmark-bench\""));
    assert!(html.contains("16 KiB") && html.contains("Mix"));
    assert!(
        figs.iter()
            .any(|n| n.contains("bandwidth-per-sender-against-message-size")),
        "{figs:?}"
    );
}
