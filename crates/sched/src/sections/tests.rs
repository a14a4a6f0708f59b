use super::*;
use crate::cache::KIND as CACHE_KIND;
use crate::model::{Activation, Block as RunBlock};
use crate::recorder::EndReason;
use crate::result::test_data;
use crate::result::{SchedRunData, KIND};
use crate::spec::Workload;
use crate::spec::{Priority, ThreadSpec};
use crate::trace::Trace;
use latlab_core::doc::Input;
use latlab_core::doc::TimelineRow;
use latlab_core::doc::{Block, CellStyle, Figure, Section, SectionProvider, Table};
use latlab_core::results::Provenance;
use latlab_core::results::ResultFile;
use latlab_core::units::format_ns;
use std::path::Path;
use std::path::PathBuf;

const MS: u64 = 1_000_000;

/// A result of `kind` carrying `data`, with `argv` and a default provenance.
fn result_with(kind: &str, argv: Vec<String>, data: serde_json::Value) -> ResultFile {
    let mut r = ResultFile::new(kind, argv, serde_json::Value::Null, Provenance::default());
    r.data = data;
    r
}

fn result_of(d: &SchedRunData) -> ResultFile {
    let argv = vec!["latlab".into(), "sched".into()];
    let mut r = result_with(KIND, argv, serde_json::to_value(d).unwrap());
    r.duration_ns = d.spec.duration_ns;
    r
}

fn blk(thread: u32, start_ns: u64, end_ns: u64, end: EndReason) -> RunBlock {
    RunBlock {
        thread,
        cpu: 0,
        start_ns,
        end_ns,
        end,
    }
}

fn act(index: u64, release_ns: u64, finish: u64, deadline_ns: u64, cpu: u64) -> Activation {
    Activation {
        index,
        release_ns,
        start_ns: release_ns,
        finish_ns: Some(finish),
        deadline_ns,
        cpu_by_deadline_ns: cpu,
        waited: true,
        frames: 0,
    }
}

/// The paper's two-task set on one CPU, with thread 1's second job 2 ms late.
fn two_task_run(dir: &Path) -> (PathBuf, ResultFile) {
    let d = test_data(crate::result::two_paper_tasks(), 66 * MS);
    let mut blocks = Vec::new();
    let mut acts = Vec::new();
    for k in 0..8 {
        let r = k * 8 * MS;
        blocks.push(blk(0, r, r + 3 * MS, EndReason::Sleep));
        acts.push((0, act(k, r, r + 3 * MS, r + 8 * MS, 3 * MS)));
    }
    blocks.push(blk(1, 3 * MS, 8 * MS, EndReason::Gap));
    blocks.push(blk(1, 11 * MS, 16 * MS, EndReason::Gap));
    blocks.push(blk(1, 19 * MS, 26 * MS, EndReason::Sleep));
    acts.push((1, act(0, 0, 26 * MS, 33 * MS, 17 * MS)));
    acts.push((1, act(1, 33 * MS, 68 * MS, 66 * MS, 15 * MS)));
    blocks.sort_by_key(|b| b.start_ns);
    let trace = Trace {
        blocks,
        activations: acts,
    };
    std::fs::write(dir.join(&d.trace_file), trace.to_tsv()).unwrap();
    (dir.join("run.json"), result_of(&d))
}

fn table<'a>(s: &'a Section, caption: &str) -> &'a Table {
    s.blocks
        .iter()
        .find_map(|b| match b {
            Block::Table(t) if t.caption.starts_with(caption) => Some(t),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no table '{caption}' in {}", s.title))
}

#[test]
fn a_run_gives_its_thread_set_deadlines_analysis_and_timeline() {
    let dir = tempfile::tempdir().unwrap();
    let (path, r) = two_task_run(dir.path());
    let input = Input::single(path, r);
    let secs = RunSections.sections(&[&input]).unwrap();
    let ids: Vec<&str> = secs.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(
        ids,
        ["sched-run-run", "sched-timeline-run", "sched-analysis-run"]
    );
    let threads = table(&secs[0], "Thread set");
    assert_eq!(threads.rows.len(), 2);
    assert_eq!(threads.rows[0][2].text, "SCHED_FIFO 50");
    let dl = table(&secs[0], "Deadlines");
    // thread 0: 8 jobs, all hit; thread 1: one hit, one miss 2 ms late
    assert_eq!(dl.rows[0][3].text, "8");
    assert_eq!(dl.rows[0][4].style, CellStyle::Good);
    assert_eq!(
        (dl.rows[1][3].text.as_str(), dl.rows[1][4].text.as_str()),
        ("1", "1")
    );
    assert_eq!(dl.rows[1][4].style, CellStyle::Bad);
    assert_eq!(dl.rows[1][7].text, format_ns(2e6));
    assert_eq!(
        dl.rows[1][8].style,
        CellStyle::Bad,
        "15 ms of 17 ms delivered"
    );
    // the RTA bound of the paper's set, 3 ms and 29 ms, beside 35 ms observed
    let rta = table(&secs[2], "Response-time analysis");
    assert_eq!(rta.rows[0][3].text, format_ns(3e6));
    assert_eq!(rta.rows[1][3].text, format_ns(29e6));
    assert_eq!(rta.rows[1][3].style, CellStyle::Bad);
    assert_eq!(rta.rows[1][6].text, format_ns(35e6));
    assert!(rta.rows[1][7].text.contains("exceeds"));
    assert_eq!(rta.rows[0][7].style, CellStyle::Good);
    let sw = table(&secs[2], "Direct context-switch cost");
    assert_eq!(sw.rows.len(), 2);
    // the timeline: a figure whose rows hold the grey blocks of CPU time received
    match secs[1].blocks.last().unwrap() {
        Block::Figure(Figure::Timeline { rows, .. }) => {
            assert!(rows.iter().any(|r| !r.blocks.is_empty()), "{rows:?}");
        }
        other => panic!("unexpected {other:?}"),
    }
    let Block::Paragraph(p) = &secs[1].blocks[0] else {
        panic!("no caption")
    };
    assert!(p.contains("around the first missed deadline"), "{p}");
}

/// A CPU-bound RTHIGH thread kept off its CPU for 50 ms twice, a second apart, on a
/// busy machine: the run section gives the load average and says the machine was
/// busy; the analysis gives the stalls with their interval and the fair-server note.
#[test]
fn rt_stalls_and_the_load_average_are_in_the_report() {
    let dir = tempfile::tempdir().unwrap();
    let mut t0 = ThreadSpec::new(0);
    t0.priority = Priority::Rthigh;
    t0.cpu = Some(0);
    let mut d = test_data(vec![t0], 2_200 * MS);
    d.loadavg = Some((3.5, 2.25));
    let trace = Trace {
        blocks: vec![
            blk(0, 0, 500 * MS, EndReason::Gap),
            blk(0, 550 * MS, 1_500 * MS, EndReason::Gap),
            blk(0, 1_550 * MS, 2_200 * MS, EndReason::End),
        ],
        activations: vec![],
    };
    std::fs::write(dir.path().join(&d.trace_file), trace.to_tsv()).unwrap();
    let input = Input::single(dir.path().join("run.json"), result_of(&d));
    let secs = RunSections.sections(&[&input]).unwrap();
    let load = secs[0]
        .blocks
        .iter()
        .find_map(|b| match b {
            Block::KeyValues(kv) => kv.iter().find(|(k, _)| k.starts_with("load average")),
            _ => None,
        })
        .expect("load average in the run section");
    assert!(load.1.starts_with("3.50 / 2.25 on "), "{}", load.1);
    assert!(load.1.contains("busy"), "{}", load.1);
    let analysis = secs
        .iter()
        .find(|s| s.id.starts_with("sched-analysis"))
        .unwrap();
    let st = table(analysis, "Real-time threads kept off the CPU");
    assert_eq!(st.rows.len(), 1);
    assert_eq!(st.rows[0][0].text, "0");
    assert_eq!(st.rows[0][1].text, "2", "two stalls");
    assert_eq!(st.rows[0][3].text, format_ns(50e6), "median stall");
    assert_eq!(st.rows[0][7].text, format_ns(1e9), "a second apart");
    assert!(analysis
        .blocks
        .iter()
        .any(|b| matches!(b, Block::Paragraph(p) if p.contains("fair deadline server"))));
}

#[test]
fn an_overloaded_set_has_no_bound_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let periodic = |id| {
        let mut t = ThreadSpec::new(id);
        t.priority = Priority::Rtmed;
        t.workload = Workload::Periodic {
            amount_ns: 3 * MS,
            period_ns: 5 * MS,
        };
        t.cpu = Some(0);
        t
    };
    let d = test_data(vec![periodic(0), periodic(1)], 10 * MS);
    let trace = Trace {
        blocks: vec![blk(0, 0, 3 * MS, EndReason::Sleep)],
        activations: vec![
            (0, act(0, 0, 3 * MS, 5 * MS, 3 * MS)),
            (1, act(0, 0, 6 * MS, 5 * MS, 2 * MS)),
        ],
    };
    std::fs::write(dir.path().join(&d.trace_file), trace.to_tsv()).unwrap();
    let input = Input::single(dir.path().join("over.json"), result_of(&d));
    let secs = RunSections.sections(&[&input]).unwrap();
    let rta = table(&secs[2], "Response-time analysis");
    assert_eq!(rta.rows[0][7].style, CellStyle::Good);
    assert_eq!(rta.rows[1][3].text, "unbounded");
    assert!(
        rta.rows[1][7].text.starts_with("no bound"),
        "{:?}",
        rta.rows[1]
    );
}

#[test]
fn a_missing_sidecar_is_said_not_fatal_and_foreign_data_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let (path, r) = two_task_run(dir.path());
    std::fs::remove_file(dir.path().join("t.tsv")).unwrap();
    let secs = RunSections
        .sections(&[&Input::single(path.clone(), r.clone())])
        .unwrap();
    assert_eq!(secs.len(), 1, "no timeline or inference without a trace");
    let said = secs[0].blocks.iter().any(|b| match b {
        Block::Warnings(w) => w[0].text.contains("t.tsv is missing"),
        _ => false,
    });
    assert!(said, "{:?}", secs[0].blocks);
    let mut r2 = r.clone();
    r2.counters.insert("deadline.hits.t1".into(), 4);
    r2.counters.insert("deadline.misses.t1".into(), 2);
    let secs = RunSections
        .sections(&[&Input::single(path.clone(), r2)])
        .unwrap();
    let dl = table(&secs[0], "Deadlines (from the result's counters)");
    assert_eq!(dl.rows[0][2].text, "4");
    assert_eq!(dl.rows[0][3].text, "2");

    let mut foreign = r;
    foreign.data = serde_json::json!({"probes": 3});
    let e = RunSections
        .sections(&[&Input::single(path, foreign)])
        .unwrap_err();
    assert!(e.contains("run.json") && e.contains("sched.run"), "{e}");
}

#[test]
fn the_window_is_the_start_or_around_the_first_miss_and_narrows_when_dense() {
    let row = |blocks: Vec<(f64, f64)>, marks: Vec<f64>| TimelineRow {
        label: "t".into(),
        blocks,
        marks,
    };
    let r = [row(vec![(0.0, 1e6)], vec![])];
    assert_eq!(timeline_window(&r, 5_000 * MS), (0, 100 * MS));
    assert_eq!(timeline_window(&r, 30 * MS), (0, 30 * MS));
    let r = [row(vec![], vec![900e6, 400e6])];
    assert_eq!(timeline_window(&r, 5_000 * MS), (350 * MS, 450 * MS));
    let r = [row(vec![], vec![4_990e6])];
    assert_eq!(timeline_window(&r, 5_000 * MS), (4_900 * MS, 5_000 * MS));
    // 30,000 blocks of 1 µs every 3 µs over the first 90 ms: halved once
    let dense: Vec<(f64, f64)> = (0..30_000)
        .map(|i| (i as f64 * 3000.0, i as f64 * 3000.0 + 1000.0))
        .collect();
    assert_eq!(
        timeline_window(&[row(dense, vec![])], 5_000 * MS),
        (0, 50 * MS)
    );
}

#[test]
fn experiment_summary_sections_inline_their_own_figures() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("5.1-switch-cdf.svg"),
        "<?xml version=\"1.0\"?><svg xmlns=\"http://www.w3.org/2000/svg\"></svg>",
    )
    .unwrap();
    let data = serde_json::json!({"scenarios": [{
        "id": "5.1", "title": "Direct cost of context switches",
        "commands": ["latlab sched -d 1s -n 10 -w CPU --cpu 1"],
        "results": ["5.1-cpu.json"],
        "figures": ["5.1-cpu.svg", "5.1-switch-cdf.svg", "5.1-gone.svg"],
        "findings": ["involuntary switches (CPU): n 12 min 1.20us"],
        "linux_note": "EEVDF, not 2.4's 60 ms quanta"}]});
    let mut r = result_with(EXPERIMENT_KIND, vec![], data);
    let path = dir.path().join("experiment.json");
    let secs = ExperimentSections
        .sections(&[&Input::single(path.clone(), r.clone())])
        .unwrap();
    assert_eq!(secs[0].id, "sched-hourglass-experiment");
    assert_eq!(table(&secs[0], "Scenarios").rows[0][0].text, "5.1");
    assert_eq!(secs[1].id, "sched-scenario-5-1");
    let figs: Vec<&str> = secs[1]
        .blocks
        .iter()
        .filter_map(|b| match b {
            Block::Figure(f) => Some(f.title()),
            _ => None,
        })
        .collect();
    assert_eq!(
        figs.len(),
        1,
        "the run's timeline is left to its own section"
    );
    assert!(figs[0].ends_with("5.1-switch-cdf.svg"));
    assert!(secs[1].blocks.iter().any(|b| matches!(b,
        Block::Paragraph(p) if p.contains("5.1-gone.svg could not be read"))));
    assert!(secs[1].blocks.iter().any(|b| matches!(b,
        Block::Paragraph(p) if p.contains("EEVDF"))));
    r.data = serde_json::json!({"rows": []});
    let e = ExperimentSections
        .sections(&[&Input::single(path, r)])
        .unwrap_err();
    assert!(e.contains("experiment.json"), "{e}");
}

#[test]
fn cache_cost_table_has_the_mean_and_interval() {
    let data = serde_json::json!({"cpu": 1, "threads": 10,
        "trials": [{"size_kb": 64, "w1": 1000, "wn": 900, "switches": 50,
            "kernel_involuntary": 52, "t_ns": 100000000, "cpu1_ns": 100000000,
            "cpun_ns": 100000000, "paper_cost_ns": 200000.0, "cost_ns": 200000.0}],
        "rows": [{"size_kb": 64, "n": 3, "mean_ns": 2500.0, "ci95_ns": 400.0}]});
    let mut r = result_with(CACHE_KIND, vec![], data);
    let path = PathBuf::from("cc.json");
    let secs = CacheCostSections
        .sections(&[&Input::single(path.clone(), r.clone())])
        .unwrap();
    let t = table(&secs[0], "Cost per context switch");
    assert_eq!(t.rows[0][2].text, format_ns(2500.0));
    assert_eq!(t.rows[0][3].text, format!("± {}", format_ns(400.0)));
    assert_eq!(table(&secs[0], "Every trial").rows[0][3].text, "50");
    assert!(secs[0].blocks.iter().any(|b| match b {
        Block::Figure(Figure::ErrorBars { series, .. }) => series[0].points.len() == 1,
        _ => false,
    }));
    r.data = serde_json::json!({"scenarios": []});
    let e = CacheCostSections
        .sections(&[&Input::single(path, r)])
        .unwrap_err();
    assert!(e.contains("cc.json"), "{e}");
}

/// Ten seconds of three threads on two CPUs (a CPU-bound thread with a 2 us gap every
/// 100 ms, a 100 us job every 1 ms, a 30 us job every 70 us missing every deadline):
/// 155,000 blocks and 150,000 misses, as a recorded trace.
fn ten_second_three_thread_run() -> (SchedRunData, Trace) {
    let s10 = 10_000 * MS;
    let mut threads = vec![ThreadSpec::new(0), ThreadSpec::new(1), ThreadSpec::new(2)];
    for (t, (c, p)) in threads[1..]
        .iter_mut()
        .zip([(100_000, MS), (30_000, 70_000)])
    {
        t.workload = Workload::Periodic {
            amount_ns: c,
            period_ns: p,
        };
    }
    let d = test_data(threads, s10);
    let mut blocks = Vec::new();
    let mut start = 0;
    for k in 1..=100 {
        let gap = k * 100 * MS - 50 * MS;
        blocks.push(RunBlock {
            cpu: 1,
            ..blk(0, start, gap, EndReason::Gap)
        });
        start = gap + 2_000;
    }
    blocks.push(RunBlock {
        cpu: 1,
        ..blk(0, start, s10, EndReason::End)
    });
    let mut acts = Vec::new();
    for k in 0..s10 / MS {
        blocks.push(blk(1, k * MS, k * MS + 100_000, EndReason::Sleep));
    }
    for k in 0..s10 / 70_000 {
        let r = k * 70_000;
        blocks.push(blk(2, r, r + 30_000, EndReason::Sleep));
        acts.push((2, act(k, r, r + 30_000, r + 20_000, 20_000)));
    }
    blocks.sort_by_key(|b| b.start_ns);
    (
        d,
        Trace {
            blocks,
            activations: acts,
        },
    )
}

#[test]
fn a_ten_second_three_thread_timeline_has_at_most_a_block_per_pixel_column_per_row() {
    use crate::figures::timeline_figure;
    use latlab_core::doc::{TimelineColumns, COLUMN_FULL};
    let (d, trace) = ten_second_three_thread_run();
    assert!(trace.blocks.len() > 150_000);
    let window = (0, d.spec.duration_ns);
    for cpus in [false, true] {
        let Figure::Timeline { rows, spec, .. } = timeline_figure(&d, &trace, window, cpus, 1200)
        else {
            panic!("not a timeline")
        };
        assert_eq!(rows.len(), if cpus { 5 } else { 3 });
        let full = crate::figures::timeline_rows(&d, &trace, cpus);
        let cols = TimelineColumns::new(spec.window, spec.width as usize);
        for (r, f) in rows.iter().zip(&full) {
            assert!(
                r.blocks.len() <= 1200 && r.marks.len() <= 1200,
                "{}",
                r.label
            );
            // the same CPU time in every pixel column as the full trace
            for (a, b) in cols
                .coverage(&r.blocks)
                .iter()
                .zip(cols.coverage(&f.blocks))
            {
                assert!((a - b).abs() < 1.0, "{}: {a} vs {b}", r.label);
            }
        }
        // thread 0's 100 short gaps: 100 columns not full, each the end of a block
        let levels: Vec<u8> = cols
            .coverage(&rows[0].blocks)
            .iter()
            .map(|&b| cols.level(b))
            .collect();
        assert_eq!(levels.iter().filter(|&&l| l != COLUMN_FULL).count(), 100);
        assert_eq!(rows[0].blocks.len(), 101);
        assert_eq!(rows[2].marks.len(), 1200, "one miss mark per pixel column");
    }
    // the report's own window holds the reduced rows too
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(&d.trace_file), trace.to_tsv()).unwrap();
    let input = Input::single(dir.path().join("run.json"), result_of(&d));
    let secs = RunSections.sections(&[&input]).unwrap();
    let fig = secs.iter().flat_map(|s| &s.blocks).find_map(|b| match b {
        Block::Figure(Figure::Timeline { rows, spec, .. }) => Some((rows, spec)),
        _ => None,
    });
    let (rows, spec) = fig.expect("a timeline in the report");
    assert!(rows
        .iter()
        .all(|r| r.blocks.len() <= spec.width as usize && r.marks.len() <= spec.width as usize));
}
