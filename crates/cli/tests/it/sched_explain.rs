//! `latlab sched --explain`: the windows attributed are exactly the gaps at or above the
//! threshold and the missed deadlines, `latlab explain --json` prints the stored
//! attribution, a SCHED_FIFO hog on the thread's CPU is named, the Perfetto file carries
//! the kernel's tracks, and without root the gap half runs and says so in one line.

use crate::host_noise::{explain_json, measured_cpu, start_hog};
use crate::util::{assert_hog_found, latlab, ok, system_test, text};
use latlab_core::results::ResultFile;
use latlab_sched::explain::{SchedExplain, WindowKind};
use latlab_sched::model::Activation;
use latlab_sched::recorder::EndReason;
use latlab_sched::spec::Workload;
use std::path::Path;
use std::sync::atomic::Ordering;

/// `latlab sched WORDS -o DIR/run.json`: the output, the result and its explain data.
fn explained_run(dir: &Path, words: &str) -> (std::process::Output, ResultFile, SchedExplain) {
    let path = dir.join("run.json");
    let out = latlab()
        .arg("sched")
        .args(words.split_whitespace())
        .arg("-o")
        .arg(&path)
        .output()
        .unwrap();
    ok(&out);
    let r = ResultFile::load(&path).unwrap();
    let x: SchedExplain = serde_json::from_value(r.data["explain"].clone()).unwrap();
    (out, r, x)
}

/// The windows a run should have, computed here from its trace: (thread, kind, start, end).
fn expected_windows(
    r: &ResultFile,
    path: &Path,
    threshold: u64,
) -> Vec<(u32, WindowKind, u64, u64)> {
    let (d, trace) = latlab_sched::result::load(r, path).unwrap();
    let mut out = Vec::new();
    for t in &d.threads {
        let id = t.spec.id;
        let cpu_periodic = matches!(t.spec.workload, Workload::CpuPeriodic { .. });
        let end = t.spec.finish_ns.unwrap_or(d.spec.duration_ns);
        let missed: Vec<&Activation> = trace
            .activations_of(id)
            .filter(|a| {
                // unfinished when the thread's life ended, deadline after it: not a miss
                let open = !cpu_periodic && a.finish_ns.is_none() && a.deadline_ns > end;
                !a.hit(cpu_periodic) && !open
            })
            .collect();
        for a in &missed {
            out.push((id, WindowKind::Miss, a.release_ns, a.deadline_ns));
        }
        let blocks: Vec<_> = trace.blocks_of(id).collect();
        for p in blocks.windows(2) {
            let (s, e) = (p[0].end_ns, p[1].start_ns);
            let inside = missed.iter().any(|a| s < a.deadline_ns && e > a.release_ns);
            if p[0].end == EndReason::Gap && e >= s + threshold && !inside {
                out.push((id, WindowKind::Gap, s, e));
            }
        }
    }
    out.sort_by_key(|w| (w.2, w.0));
    out
}

#[test]
fn the_windows_are_the_gaps_above_the_threshold_and_the_misses() {
    let _turn = system_test!("kernel events need root and tracefs");
    let dir = tempfile::tempdir().unwrap();
    let cpu = measured_cpu();
    // two SCHED_OTHER threads share one CPU: each one's gaps are the other's turns, and the
    // periodic one (2 ms of every 3 ms) misses deadlines while the CPU-bound one runs
    let words = format!(
        "-d 1s -n 2 -t 0 -w PERIODIC 2ms 3ms -i HR --cpu {cpu} -t 1 -w CPU --cpu {cpu} \
         --explain-above 20us"
    );
    let (out, r, x) = explained_run(dir.path(), &words);
    let path = dir.path().join("run.json");
    let a = r.explain.clone().expect("an attribution");
    assert_eq!(x.threshold_ns, 20_000);
    assert_eq!(x.threshold_from, "--explain-above");
    let want = expected_windows(&r, &path, 20_000);
    let got: Vec<_> = x
        .windows
        .iter()
        .map(|w| (w.thread, w.kind, w.start_ns, w.end_ns))
        .collect();
    assert_eq!(got, want);
    assert!(
        !got.is_empty(),
        "a CPU-bound thread sharing its CPU has gaps"
    );
    assert_eq!(a.windows, want.len() as u64);
    assert!(a.unavailable.is_none(), "{:?}", a.unavailable);
    // each thread's gaps are the other's turns: preemption by a hourglass thread
    assert!(
        a.causes
            .iter()
            .any(|c| c.class == "preempted" && c.name.starts_with("hourglass-")),
        "{:?}",
        a.causes
    );
    // steal time was read over the run
    assert!(!a.steal.is_empty());
    // latlab explain --json prints the stored attribution as is
    let mut printed = explain_json(&path);
    let o = printed.as_object_mut().unwrap();
    assert_eq!(o.remove("kind").unwrap(), "sched.run");
    o.remove("result").unwrap();
    assert_eq!(printed, serde_json::to_value(&a).unwrap());
    // the summary says what was explained
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains(&format!("explain: {} windows", a.windows)),
        "{stdout}"
    );
    assert!(
        stdout.contains(&latlab_explain::render::explained_line(&a)),
        "{stdout}"
    );
    // Perfetto: the kernel's tracks carry every stored cause interval
    let pf: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("run.perfetto.json")).unwrap(),
    )
    .unwrap();
    let ev = pf["traceEvents"].as_array().unwrap();
    assert!(ev
        .iter()
        .any(|e| e["ph"] == "M" && e["args"]["name"] == "kernel (latlab explain)"));
    let kernel_slices = ev
        .iter()
        .filter(|e| e["ph"] == "X" && e["pid"] == 3 && e["cat"] != "explain")
        .count();
    assert!(!x.kernel.is_empty());
    assert_eq!(kernel_slices, x.kernel.len());
    let window_slices = ev
        .iter()
        .filter(|e| e["ph"] == "X" && e["cat"] == "explain")
        .count();
    assert_eq!(window_slices, x.windows.len());
}

#[test]
fn a_fifo_hog_on_the_threads_cpu_is_preemption_by_its_comm() {
    let _turn = system_test!("SCHED_FIFO hog and tracefs");
    let dir = tempfile::tempdir().unwrap();
    let cpu = measured_cpu();
    let (stop, h) = start_hog(cpu);
    let words = format!("-d 1s -n 1 -t 0 -w CPU --cpu {cpu} --explain-above 100us");
    let (out, r, x) = explained_run(dir.path(), &words);
    stop.store(true, Ordering::Relaxed);
    let runs = h.join().unwrap();
    assert!(!runs.is_empty());
    let a = r.explain.unwrap();
    assert_hog_found(&a);
    assert!(x.windows.iter().any(|w| w.cause == "preempted:latlab-hog"));
    // the summary names the windows; `latlab explain` lists every cause (the summary
    // only the top five, which on a shared machine may all be other tasks)
    assert!(
        text(&out.stdout).contains("explain: "),
        "{}",
        text(&out.stdout)
    );
    let listed = ok(&latlab()
        .arg("explain")
        .arg(dir.path().join("run.json"))
        .output()
        .unwrap());
    assert!(
        listed.contains("preempted by task (latlab-hog)"),
        "{listed}"
    );
}

#[test]
fn without_root_the_gap_half_runs_and_says_so_in_one_line() {
    let _turn = system_test!("setpriv to uid 65534 needs root");
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o777),
    )
    .unwrap();
    let path = dir.path().join("nobody.json");
    let out = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(crate::util::latlab_bin())
        .args("sched -d 300ms -n 1 -t 0 -w CPU --cpu 0 --explain -o".split(' '))
        .arg(&path)
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}\n{}", text(&out.stdout));
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("kernel events unavailable") && stderr.contains("measuring gaps only"),
        "{stderr}"
    );
    let r = ResultFile::load(&path).unwrap();
    let a = r.explain.unwrap();
    assert!(!a.complete);
    assert!(a.unavailable.as_deref().unwrap().contains("root"));
    assert_eq!(a.explained_ns, 0);
    let x: SchedExplain = serde_json::from_value(r.data["explain"].clone()).unwrap();
    assert_eq!(x.windows.len() as u64, a.windows);
    assert!(x.kernel.is_empty());
}
