use super::*;
use crate::report::ReportError;
use crate::sim::result::{test_input, test_provenance};
use latlab_core::doc::{Block, DrawError, Figure, FigureSink, Input, SectionProvider};
use latlab_core::results::ResultFile;

/// Writes each figure's title where the figure file goes: what the library asked to draw,
/// and where (drawing itself is latlab-report's, tested there and by the golden reports).
struct Titles;

impl FigureSink for Titles {
    fn draw(&self, figure: &Figure, path: &std::path::Path) -> Result<(), DrawError> {
        assert!(figure.drawable(), "{} has nothing to draw", figure.title());
        std::fs::write(path, figure.title())?;
        Ok(())
    }
}

/// The smallest experiment the configuration accepts, without MPI.
fn small() -> ExperimentConfig {
    ExperimentConfig {
        nodes: vec![4, 8],
        intervals: 4,
        ts_per_interval: 1_000,
        drop_intervals: 40,
        drop_nodes: 4,
        mpi: false,
        ranks: 8,
        mpi_time_slices: 10_000,
        seed: 1,
        fabric: None,
        format: FigureFormat::Svg,
        threads: 2,
        sweep_nodes: 0,
    }
}

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("latlab-dfs-exp-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// Runs the small experiment into a fresh directory.
fn run_small(name: &str) -> (PathBuf, ExperimentOutcome) {
    let dir = temp_dir(name);
    let cx = Context {
        argv: vec!["latlab".into(), "experiment".into(), "dfs".into()],
        provenance: &test_provenance,
        progress: &|_| {},
        elapsed: &|| 0.0,
        figures: &Titles,
    };
    let out = run(&small(), &dir, &cx).unwrap();
    (dir, out)
}

#[test]
fn the_configuration_is_checked_once_with_the_setting_named() {
    small().validate().unwrap();
    for (cfg, needle) in [
        (
            ExperimentConfig {
                nodes: vec![4, 7],
                ..small()
            },
            "--nodes",
        ),
        (
            ExperimentConfig {
                drop_nodes: 3,
                ..small()
            },
            "--drop-nodes",
        ),
        (
            ExperimentConfig {
                ranks: 0,
                ..small()
            },
            "--ranks",
        ),
        (
            ExperimentConfig {
                drop_intervals: 29,
                ..small()
            },
            "--drop-intervals",
        ),
    ] {
        let e = cfg.validate().unwrap_err().to_string();
        assert!(e.contains(needle), "{e}");
    }
}

#[test]
fn a_dragonfly_must_hold_the_sweep_too() {
    // 2 nodes per router, 2×2 routers per group, 1 global link each: at most 5 groups of 8
    let tiny = crate::sim::fabric::FabricParams {
        nodes_per_router: 2,
        chassis_routers: 2,
        group_chassis: 2,
        global_per_router: 1,
        ..Default::default()
    };
    let on = |sweep_nodes| ExperimentConfig {
        fabric: Some(tiny),
        sweep_nodes,
        ..small()
    };
    on(0).validate().unwrap();
    on(40).validate().unwrap();
    let e = on(42).validate().unwrap_err().to_string();
    assert!(e.contains("--dragonfly-shape"), "{e}");
}

#[test]
fn the_experiment_writes_its_schema_and_the_report_shows_its_findings() {
    let (dir, out) = run_small("report");
    // The one schema type reads back what it wrote.
    let path = dir.join("experiment.json");
    let r = ResultFile::load(&path).unwrap();
    let d = ExperimentData::from_result(&r).unwrap();
    // (floats through JSON to the last bit only with serde_json's float_roundtrip)
    assert_eq!(
        (&d.files, &d.mpi_skipped),
        (&out.data.files, &out.data.mpi_skipped)
    );
    let (a, b) = (d.drop.as_ref().unwrap(), out.data.drop.as_ref().unwrap());
    assert_eq!(a.speedups_after, b.speedups_after);
    for (x, y) in [
        (a.before_ms, b.before_ms),
        (a.actual_in_drop_ms, b.actual_in_drop_ms),
        (a.peak_ms, b.peak_ms),
        (a.last_ms, b.last_ms),
    ] {
        assert!((x - y).abs() < 1e-9, "{x} {y}");
    }
    for (a, b) in d.sim.iter().zip(&out.data.sim) {
        assert_eq!(a.nodes, b.nodes);
        assert!((a.bandwidth_ratio - b.bandwidth_ratio).abs() < 1e-12);
        assert!((a.median_ratio - b.median_ratio).abs() < 1e-12);
    }
    assert_eq!(d.sim.len(), 2);
    assert_eq!(d.mpi_skipped.as_deref(), Some("--no-mpi"));
    assert_eq!(d.drop_nodes(), Some(4));
    assert_eq!(r.config["nodes"], serde_json::json!([4, 8]));
    assert_eq!(
        out.results.len(),
        14,
        "three policies, cold and warm, at two node counts and the drop pair: {:?}",
        out.results
    );
    // every policy at every node count, in order, with the paper's figure where it has one
    let pol: Vec<_> = d
        .policies
        .iter()
        .map(|p| (p.nodes, p.policy.as_str(), p.warm))
        .collect();
    let mut want = Vec::new();
    for n in [4, 8] {
        for warm in [false, true] {
            for p in ["best-effort", "dfs", "flesnet"] {
                want.push((n, p, warm));
            }
        }
    }
    assert_eq!(pol, want);
    assert!(d
        .policies
        .iter()
        .all(|p| p.paced_intervals.is_some() == (p.policy == "dfs") && p.at_cap_pct.is_some()));
    assert!(d
        .policies
        .iter()
        .all(|p| p.paper_pct.is_none() && p.events > 0));
    assert!(d.sweep.is_empty());
    assert!(out.summary.extra.contains("Three policies"));
    for f in [
        "sim-8-flesnet.json",
        "fig6-completion.svg",
        "fig8-intervals.svg",
        "sim-drop-4.json",
    ] {
        assert!(d.files.iter().any(|x| x == f), "{f} not in {:?}", d.files);
        assert!(dir.join(f).exists(), "{f} missing");
    }
    // The summary: one row per node count, the findings, the files.
    assert_eq!(out.summary.rows.len(), 2);
    assert_eq!(out.summary.rows[1][0], "8");
    assert_eq!(out.summary.rows[1][1], "sim");
    let md = out.summary.markdown("TABLE\n");
    assert!(md.contains("```\nTABLE\n```"), "{md}");
    assert!(md.contains("- MPI part skipped: --no-mpi\n"), "{md}");
    assert!(md.contains("- fig7-bandwidth.svg\n"), "{md}");

    // `latlab report` on experiment.json: the provider's sections in the HTML.
    assert!(ExperimentSections.handles("dfs.experiment"));
    let input = Input::single(path.clone(), r);
    let sections = ExperimentSections.sections(&[&input]).unwrap();
    let ids: Vec<&str> = sections.iter().map(|s| s.id.as_str()).collect();
    let mut page = String::new();
    for b in sections.iter().flat_map(|s| &s.blocks) {
        match b {
            Block::Paragraph(t) | Block::Heading(t) => page.push_str(t),
            Block::Table(t) => t.rows.iter().flatten().for_each(|c| page.push_str(&c.text)),
            Block::KeyValues(kv) => kv
                .iter()
                .for_each(|(k, v)| page.push_str(&format!("{k}{v}"))),
            Block::Warnings(w) => w.iter().for_each(|w| page.push_str(&w.text)),
            Block::Code { text, .. } => page.push_str(text),
            Block::Figure(f) => page.push_str(f.title()),
        }
        page.push('\n');
    }
    for id in [
        "dfs-experiment-findings",
        "dfs-experiment-best-effort-against-dfs",
        "dfs-experiment-bandwidth-drop",
        "dfs-experiment-files",
    ] {
        assert!(ids.contains(&id), "no section {id} in {ids:?}");
    }
    let c = &d.sim[1];
    for text in [
        format!("{:.2}×", c.median_ratio),
        format!("{:.3}×", c.bandwidth_ratio),
        "MPI part skipped: --no-mpi".to_string(),
        "proposal peak".to_string(),
        "sim-nodrop-4.json".to_string(),
    ] {
        assert!(page.contains(&text), "report lacks '{text}'");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn another_kind_is_refused_naming_the_input() {
    let r = ResultFile::new(
        "dfs.sim",
        vec![],
        serde_json::Value::Null,
        test_provenance(),
    );
    assert!(matches!(
        ExperimentData::from_result(&r),
        Err(ReportError::Kind(..))
    ));
    let i = test_input(RESULT_KIND, &serde_json::json!({"sim": 1}), "odd.json");
    let e = ExperimentSections.sections(&[&i]).unwrap_err();
    assert!(
        e.contains("odd.json") && e.contains("dfs.experiment"),
        "{e}"
    );
}

#[test]
fn the_sweep_has_its_advertised_variants() {
    assert_eq!(policies::variants().len(), SWEEP_VARIANTS);
}

/// The sweep's configurations of variant `k` (best effort, DFS) as the experiment plans
/// them.
fn sweep_configs(
    plan: &[(crate::sim::SimConfig, String)],
    k: usize,
) -> [&crate::sim::SimConfig; 2] {
    let find = |mode: &str| {
        &plan
            .iter()
            .find(|(_, n)| *n == format!("sweep-{k}-{mode}.json"))
            .unwrap_or_else(|| panic!("no sweep-{k}-{mode}.json planned"))
            .0
    };
    [find("best-effort"), find("dfs")]
}

#[test]
fn every_sweep_variant_reaches_the_simulated_configuration() {
    let cfg = ExperimentConfig {
        sweep_nodes: 128,
        ..small()
    };
    let plan = planned_runs(&cfg);
    let vs = policies::variants();
    let base = sweep_configs(&plan, 0);
    assert_eq!(base[0].topology.inputs, 64);
    for (k, v) in vs.iter().enumerate().skip(1) {
        let field = v
            .field
            .expect("every variant but the default names its field");
        for (c, b) in sweep_configs(&plan, k).into_iter().zip(base) {
            assert_ne!(field(c), field(b), "{}: the field is the default's", v.name);
            assert_ne!(c, b, "{}", v.name);
            assert_eq!(c.mode, b.mode);
        }
    }
}

#[test]
fn every_sweep_variant_changes_a_small_run_or_reports_its_limit_never_bound() {
    // 16 nodes, 8 rounds per interval, 6 intervals: every variant, both modes
    let cfg = ExperimentConfig {
        sweep_nodes: 16,
        ts_per_interval: 64,
        intervals: 6,
        ..small()
    };
    let plan = planned_runs(&cfg);
    let vs = policies::variants();
    let run = |c: &crate::sim::SimConfig| crate::sim::run(c).unwrap().data;
    let base = sweep_configs(&plan, 0).map(run);
    for (k, v) in vs.iter().enumerate().skip(1) {
        let cs = sweep_configs(&plan, k);
        let ds = cs.map(run);
        // the row reads the changed field back from what was simulated
        let row = policies::sweep_row(v, &ds[0], &ds[1]);
        assert_eq!(row.simulated, v.field.map(|f| f(cs[0])), "{}", v.name);
        for ((c, b), d) in cs.into_iter().zip(&base).zip(ds) {
            let limits = d.limits.as_ref().expect("measured");
            assert_eq!(limits.inflight_share.len(), c.net.max_inflight as usize + 1);
            let sum: f64 = limits.inflight_share.iter().sum();
            assert!((sum - 1.0).abs() < 1e-9, "{}: shares sum to {sum}", v.name);
            let changed = d.completion_ms != b.completion_ms
                || d.steady_bandwidth_gbs != b.steady_bandwidth_gbs;
            if !changed {
                let bound = v
                    .bound
                    .unwrap_or_else(|| panic!("{} ({:?}) changed nothing", v.name, c.mode));
                assert!(
                    !bound(b.limits.as_ref().unwrap()) && !bound(limits),
                    "{} ({:?}): its limit bound yet nothing changed",
                    v.name,
                    c.mode
                );
            }
        }
    }
}

#[test]
fn every_policy_starts_cold_and_warm_from_the_same_state() {
    let plan = planned_runs(&small());
    for n in [4usize, 8] {
        let mut starts = Vec::new();
        for (c, name) in plan
            .iter()
            .filter(|(c, _)| c.topology.inputs * 2 == n)
            .take(6)
        {
            let warm = name.ends_with("-warm.json");
            assert_eq!(c.start_spread_ns > 0, warm, "{name}");
            // everything but the policy and the start is the same in all six
            let same = SimConfig {
                mode: Mode::Dfs,
                start_spread_ns: 0,
                ..c.clone()
            };
            starts.push((c.start_spread_ns, same));
        }
        assert_eq!(starts.len(), 6);
        assert!(starts.iter().all(|s| s.1 == starts[0].1), "{n} nodes");
        let spreads: Vec<i64> = starts.iter().map(|s| s.0).collect();
        let w = credit_window_ns(
            &plan
                .iter()
                .find(|(c, _)| c.topology.inputs * 2 == n)
                .unwrap()
                .0,
        );
        assert_eq!(spreads, [0, 0, 0, w, w, w], "{n} nodes");
    }
    // 16 slots × 64 computes × 64 KiB at 4 GB/s
    assert_eq!(
        credit_window_ns(&SimConfig::new(64, 64, Mode::Dfs)),
        16_777_216
    );
}

#[test]
fn the_default_run_length_gives_every_dfs_figure_twenty_paced_intervals() {
    // the experiment's node counts at the default length: 24 whole intervals each
    let cfg = ExperimentConfig {
        nodes: vec![128, 192, 384],
        intervals: DEFAULT_INTERVALS,
        ..small()
    };
    for (c, name) in planned_runs(&cfg)
        .iter()
        .filter(|(_, n)| n.starts_with("sim-") && !n.contains("drop"))
    {
        let len = c.params.interval_len(c.topology.computes);
        assert_eq!(c.total_ts() / len, DEFAULT_INTERVALS, "{name}");
    }
    // and a small DFS run of that many intervals, cold and warm, has 20 paced after
    // warm-up. Warm, an interval must last longer than the credit window (here 32 rounds
    // against 16 slots): inputs further apart than the proposal pipeline (two intervals)
    // start every interval before its proposal arrives and never pace
    let cfg = ExperimentConfig {
        nodes: vec![16],
        intervals: DEFAULT_INTERVALS,
        ts_per_interval: 256,
        ..small()
    };
    for (c, name) in planned_runs(&cfg)
        .iter()
        .filter(|(c, n)| c.mode == Mode::Dfs && n.starts_with("sim-16"))
    {
        let d = crate::sim::run(c).unwrap().data;
        assert!(
            d.paced_intervals() >= MIN_PACED_INTERVALS,
            "{name}: {} paced intervals",
            d.paced_intervals()
        );
    }
}
