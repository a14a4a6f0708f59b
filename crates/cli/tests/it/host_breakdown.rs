//! End-to-end test of `latlab host breakdown` with a short duration: every step, the result
//! file read back, the classes, the stacked figure, and bad input.

use crate::util::{assert_usage_error, is_root, latlab_line, report_html, run_ok, system_turn};
use latlab_core::results::ResultFile;
use latlab_host::breakdown;

#[test]
fn short_breakdown_writes_every_step_with_a_class_and_the_figure() {
    let _turn = system_turn();
    let dir = tempfile::tempdir().unwrap();
    let result = dir.path().join("bd.json");
    let fig = dir.path().join("bd-udp.svg");
    let stdout = run_ok(
        latlab_line("host breakdown --duration 100ms --warmup 20ms -o")
            .arg(&result)
            .arg("--plot")
            .arg(&fig),
    );
    let r = ResultFile::load(&result).unwrap();
    assert_eq!(r.kind, breakdown::RESULT_KIND);
    let rows = breakdown::table(&r).unwrap();
    let two_cpus = latlab_sys::sched::allowed_cpus().len() >= 2;
    let root = is_root();
    // 3 single-CPU steps, 9 two-CPU steps, and with root veth_netns and latlab_nf.
    let expected = 3 + if two_cpus { 9 } else { 0 } + 2 * usize::from(two_cpus && root);
    assert_eq!(rows.len(), expected, "{stdout}");
    for row in &rows {
        assert!(row.samples > 0);
        assert!(stdout.contains(&row.step), "{stdout}");
        assert!(row.p50_ns <= row.p99_ns && row.p99_ns <= row.max_ns);
    }
    let d = breakdown::data(&r).unwrap();
    if two_cpus && root {
        // latlab's NF answers across the namespaces: a real, measured step.
        let nf = rows.iter().find(|r| r.step == "latlab_nf").unwrap();
        assert!(nf.samples > 0);
        assert!(!d.skipped.iter().any(|s| s.name == "latlab_nf"));
    } else {
        assert!(d.skipped.iter().any(|s| s.name == "latlab_nf"));
    }
    if !root {
        assert!(d
            .skipped
            .iter()
            .any(|s| s.name == "veth_netns" && s.reason.contains("root")));
    }
    if two_cpus {
        let med = |n: &str| rows.iter().find(|r| r.step == n).unwrap().p50_ns;
        assert!(med("cacheline_pingpong") < med("udp_loopback"));
        assert_eq!(d.decomposition.len(), 2);
        let svg = std::fs::read_to_string(&fig).unwrap();
        assert!(svg.contains("udp_loopback"));
    }
    assert!(rows.iter().all(|r| stdout.contains(&r.class.to_string())));

    // The HTML report of the real result has the breakdown's own section.
    let page = report_html([&result], &dir.path().join("bd.html"), &["--no-figures"]);
    assert!(
        page.contains("id=\"host-breakdown-bd\""),
        "no breakdown section"
    );
    assert!(page.contains("Ugly if p99.99 &gt; 20") || page.contains("Ugly if p99.99 > 20"));
    for row in &rows {
        assert!(page.contains(&row.step), "{}", row.step);
    }
    if two_cpus {
        assert!(page.contains("How a loopback UDP round trip decomposes"));
    }
}

/// `--dma-latency 0`: the hold is recorded in the result and said on the terminal (on a
/// guest whose idle CPUs halt, a cross-core wake-up step is 5–13 µs held against 70–80 µs
/// not; docs/host.md).
#[test]
fn breakdown_holds_the_idle_policy_when_asked() {
    let _turn = crate::util::system_test!("/dev/cpu_dma_latency");
    let dir = tempfile::tempdir().unwrap();
    let result = dir.path().join("bd.json");
    let stdout = run_ok(
        latlab_line(
            "host breakdown --steps futex_other_core --duration 100ms --warmup 0s --dma-latency 0 -o",
        )
        .arg(&result),
    );
    assert!(stdout.contains("held at 0 µs"), "{stdout}");
    let r = ResultFile::load(&result).unwrap();
    assert_eq!(r.provenance.idle.expect("idle recorded").held_us, Some(0));
}

#[test]
fn unknown_step_is_a_usage_error() {
    assert_usage_error(
        ["host", "breakdown", "--steps", "clock_read,warp_drive"],
        &["--steps", "warp_drive", "udp_loopback"],
    );
}
