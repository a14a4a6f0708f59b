//! `latlab report` on real `latlab sched` results: the run's own sections (thread set and
//! deadlines, execution timeline inline as SVG, inference), the missing-sidecar path, and
//! the report `latlab experiment hourglass` writes over its result files.

use crate::util::{
    assert_contains, latlab_line, ok, report_html, section, system_test, system_turn,
};
use std::path::Path;

fn report(result: &Path, html: &Path) -> String {
    report_html([result], html, &["--no-figures"])
}

#[test]
fn report_on_a_sched_run_has_its_sections_and_an_inline_timeline() {
    let _turn = system_turn();
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run.json");
    ok(
        &latlab_line("sched -n 2 -d 300ms -t 0 -w PERIODIC 1ms 5ms -i HR -t 1 -w CPU -o")
            .arg(&run)
            .output()
            .unwrap(),
    );
    let html = report(&run, &dir.path().join("r.html"));
    let s = section(&html, "sched-run-run");
    assert_contains(
        s,
        &[
            "Thread set as run",
            "PERIODIC",
            "Loop iteration time",
            "2 × median",
            "Buffers: what fitted",
            "Deadlines per periodic thread",
        ],
    );
    let t = section(&html, "sched-timeline-run");
    assert!(t.contains("Execution timeline of run"), "{t}");
    assert!(
        t.contains("<svg") && t.contains("#808080"),
        "no inline timeline with grey blocks: {t}"
    );
    let a = section(&html, "sched-analysis-run");
    assert!(a.contains("Direct context-switch cost"), "{a}");

    // Without the trace sidecar the report still builds and says what is missing.
    std::fs::remove_file(dir.path().join("run.trace.tsv")).unwrap();
    let html = report(&run, &dir.path().join("r2.html"));
    let s = section(&html, "sched-run-run");
    assert!(s.contains("run.trace.tsv is missing"), "{s}");
    assert!(!html.contains("id=\"sched-timeline-run\""));
}

#[test]
fn hourglass_experiment_writes_its_report() {
    let _turn = system_test!("scenario 5.5 needs SCHED_FIFO");
    let dir = tempfile::tempdir().unwrap();
    let stdout = ok(&latlab_line(
        "experiment hourglass --duration 200ms --quick --only 5.2,5.5 --dir",
    )
    .arg(dir.path())
    .output()
    .unwrap());
    let path = dir.path().join("report.html");
    assert!(
        stdout.contains(&format!("report: {}", path.display())),
        "{stdout}"
    );
    let html = std::fs::read_to_string(&path).unwrap();
    let overview = section(&html, "sched-hourglass-experiment");
    assert!(overview.contains("5.5"), "{overview}");
    let sc = section(&html, "sched-scenario-5-5");
    assert!(sc.contains("Linux 6.x versus the paper") && sc.contains("RTA bound"));
    let cc = section(&html, "sched-cache-cost-5-2-cache-cost");
    assert!(
        cc.contains("Cost per context switch versus working set") && cc.contains("<svg"),
        "{cc}"
    );
    // the summary first, then every run with its own sections
    let first = html.find("id=\"sched-hourglass-experiment\"").unwrap();
    for run in ["5-5-native", "5-5-hr", "5-5-12ms"] {
        let at = html
            .find(&format!("id=\"sched-run-{run}\""))
            .unwrap_or_else(|| panic!("no section for {run}"));
        assert!(at > first);
        let a = section(&html, &format!("sched-analysis-{run}"));
        assert!(a.contains("Response-time analysis"), "{a}");
    }
}
