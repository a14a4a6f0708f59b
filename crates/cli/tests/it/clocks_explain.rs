//! `latlab host clocks --explain`: each slow read on the reading CPU gets its causes; a
//! SCHED_FIFO hog on that CPU is named.

use crate::host_noise::{explain_json, measured_cpu, start_hog};
use crate::util::{assert_hog_found, latlab, ok, system_test};
use latlab_core::results::ResultFile;
use std::sync::atomic::Ordering;

#[test]
fn slow_reads_under_a_fifo_hog_are_preemption_by_its_comm() {
    let _turn = system_test!("SCHED_FIFO hog and tracefs");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("clocks.json");
    let cpu = measured_cpu();
    let (stop, h) = start_hog(cpu);
    let stdout = ok(&latlab()
        .args([
            "host",
            "clocks",
            "-d",
            "500ms",
            "--sources",
            "rdtsc,monotonic",
        ])
        .args(["--cpu", &cpu.to_string(), "--explain-above", "100us", "-o"])
        .arg(&out)
        .output()
        .unwrap());
    stop.store(true, Ordering::Relaxed);
    assert!(!h.join().unwrap().is_empty());
    let r = ResultFile::load(&out).unwrap();
    let a = r.explain.clone().expect("an attribution");
    assert!(a.unavailable.is_none(), "{:?}", a.unavailable);
    // the windows are the slow reads of both sources at or above the threshold
    let per: u64 = ["rdtsc", "monotonic"]
        .iter()
        .map(|s| {
            assert_eq!(r.data["explain"][s]["threshold_ns"], 100_000);
            r.data["explain"][s]["windows"].as_u64().unwrap()
        })
        .sum();
    assert_eq!(a.windows, per);
    assert_hog_found(&a);
    assert!(
        stdout.contains(&latlab_explain::render::explained_line(&a)),
        "{stdout}"
    );
    let mut printed = explain_json(&out);
    let o = printed.as_object_mut().unwrap();
    o.remove("kind");
    o.remove("result");
    assert_eq!(printed, serde_json::to_value(&a).unwrap());
}
