use super::charts::drop_ranges;
use super::data::compare;
use super::view::{bytes, ms, pairs, ratios, View};
use super::*;
use crate::params::Mode;
use crate::sim::result::RESULT_KIND as SIM_KIND;
use crate::sim::result::{test_input, test_provenance};
use crate::sim::{self, result::to_result, BandwidthDrop, DropWindow, SimConfig};
use crate::sim::{IntervalRow, SimData};
use latlab_core::doc::Input;
use latlab_core::doc::{Block, Section, SectionProvider, Table};
use std::path::PathBuf;

/// A small real simulation (`inputs` × `inputs` nodes, 400 time-slices, intervals of 20)
/// as a report input named `name`, with a 25 % bandwidth drop in intervals 5–7 if `drop`.
fn sim_input(name: &str, inputs: usize, mode: Mode, drop: bool) -> (Input, SimData) {
    let mut cfg = SimConfig::new(inputs, inputs, mode);
    cfg.time_slices = 400;
    cfg.params.ts_per_intvl = 20;
    if drop {
        cfg.drops.push(BandwidthDrop {
            window: DropWindow::Intervals { first: 5, last: 7 },
            factor: 0.75,
        });
    }
    let o = sim::run(&cfg).unwrap();
    let rf = to_result(
        &o,
        vec!["latlab".into(), "dfs".into(), "sim".into()],
        test_provenance(),
    );
    (
        Input::single(PathBuf::from(format!("{name}.json")), rf),
        o.data,
    )
}

fn section<'a>(secs: &'a [Section], id: &str) -> &'a Section {
    secs.iter()
        .find(|s| s.id == id)
        .unwrap_or_else(|| panic!("no section {id} in {:?}", ids(secs)))
}

fn ids(secs: &[Section]) -> Vec<&str> {
    secs.iter().map(|s| s.id.as_str()).collect()
}

/// The section's figures, each as its title and its specification spelled out (every
/// label, category and series name the renderer will draw), drawn or not.
fn figures(s: &Section) -> Vec<(&str, String)> {
    s.blocks
        .iter()
        .filter_map(|b| match b {
            Block::Figure(f) => Some((f.title(), format!("{f:?}"))),
            _ => None,
        })
        .collect()
}

fn paragraphs(s: &Section) -> String {
    s.paragraphs().join("\n")
}

/// The row of `t` whose first cell is `first`, as texts.
fn row(t: &Table, first: &str) -> Vec<String> {
    t.rows
        .iter()
        .find(|r| r[0].text == first)
        .unwrap_or_else(|| panic!("no row {first} in {}", t.caption))
        .iter()
        .map(|c| c.text.clone())
        .collect()
}

fn col(t: &Table, name: &str) -> usize {
    t.header.iter().position(|h| h == name).unwrap()
}

#[test]
fn sim_pair_gives_accounting_completion_ratios_and_figures() {
    let (be, be_d) = sim_input("be", 2, Mode::BestEffort, false);
    let (dfs, dfs_d) = sim_input("dfs", 2, Mode::Dfs, true);
    assert!(SimSections.handles("dfs.sim") && !SimSections.handles("net.probe"));
    let secs = SimSections.sections(&[&be, &dfs]).unwrap();
    assert_eq!(
        ids(&secs),
        [
            "dfs-simulation-configuration",
            "dfs-simulation-completion-accounting",
            "dfs-simulation-time-slice-completion-duration",
            "dfs-simulation-aggregate-bandwidth",
            "dfs-simulation-best-effort-against-dfs",
            "dfs-simulation-proposed-and-actual-interval-durations",
            "dfs-simulation-compute-buffer-fill",
        ]
    );

    let acc = section(&secs, "dfs-simulation-completion-accounting").tables();
    for (label, d) in [("be", &be_d), ("dfs", &dfs_d)] {
        let r = row(acc[0], label);
        assert_eq!(r[col(acc[0], "time-slices completed")], "400 of 400");
        assert_eq!(r[col(acc[0], "stored")], d.compute.stored.to_string());
        assert_eq!(r[col(acc[0], "stored")], "800");
        assert_eq!(r[col(acc[0], "checksums verified")], "800 of 800");
        assert_eq!(r[col(acc[0], "lost")], "0");
        assert_eq!(r[col(acc[0], "duplicated")], "0");
        assert_eq!(r[col(acc[0], "verdict")], "complete, all verified");
    }
    // The DFS engine table lists only the DFS input.
    assert_eq!(acc[1].rows.len(), 1);
    assert_eq!(
        row(acc[1], "dfs")[col(acc[1], "proposals used")],
        dfs_d.ie.proposals_used.to_string()
    );

    let comp = section(&secs, "dfs-simulation-time-slice-completion-duration");
    let t = comp.tables()[0];
    for (label, d) in [("be", &be_d), ("dfs", &dfs_d)] {
        let r = row(t, label);
        assert_eq!(r[col(t, "median")], ms(d.completion_ms.median));
        assert_eq!(r[col(t, "p90")], ms(d.completion_ms.p90));
        assert_eq!(r[col(t, "samples")], d.completion_ms.count.to_string());
    }
    let fig = figures(comp);
    assert_eq!(fig.len(), 1);
    assert!(fig[0].1.contains("best effort") && fig[0].1.contains("4 nodes"));

    let bw = section(&secs, "dfs-simulation-aggregate-bandwidth").tables()[0];
    assert_eq!(
        row(bw, "dfs")[col(bw, "GB/s")],
        format!("{:.2}", dfs_d.steady_bandwidth_gbs)
    );

    let cmp = section(&secs, "dfs-simulation-best-effort-against-dfs");
    let t = cmp.tables()[0];
    let c = compare(&be_d, &dfs_d);
    let r = row(t, "4");
    assert_eq!(
        r[col(t, "median completion, BE / DFS")],
        format!("{:.1}×", c.median_ratio)
    );
    assert_eq!(
        r[col(t, "bandwidth, DFS / BE")],
        format!("{:.3}×", c.bandwidth_ratio)
    );
    let verdict = paragraphs(cmp);
    assert!(
        verdict.contains(&format!(
            "4 nodes: the model gives a median completion ratio best effort / DFS of {:.1}×",
            c.median_ratio
        )),
        "{verdict}"
    );

    let iv = section(
        &secs,
        "dfs-simulation-proposed-and-actual-interval-durations",
    );
    let kv: Vec<&(String, String)> = iv
        .blocks
        .iter()
        .filter_map(|b| match b {
            Block::KeyValues(kv) => Some(kv),
            _ => None,
        })
        .flatten()
        .collect();
    assert!(kv
        .iter()
        .any(|(k, v)| k == "intervals" && *v == dfs_d.intervals.len().to_string()));
    assert!(kv
        .iter()
        .any(|(k, v)| k == "bandwidth drop" && v.starts_with("intervals 5–7")));
    let conf = section(&secs, "dfs-simulation-configuration");
    assert!(conf.blocks.iter().any(|b| matches!(b, Block::KeyValues(kv)
        if kv.iter().any(|(k, v)| k == "bandwidth drops" && v == "intervals 5–7 at 75 % bandwidth"))));
    let f = figures(iv);
    assert_eq!(f.len(), 1, "only the DFS input has intervals");
    assert!(f[0].1.contains("bandwidth drop") && f[0].1.contains("proposed"));

    // Fill over time and by connection rank, for each input.
    let fill = section(&secs, "dfs-simulation-compute-buffer-fill");
    assert_eq!(figures(fill).len(), 4);
    let t = fill.tables()[0];
    assert_eq!(
        row(t, "dfs")[col(t, "samples")],
        dfs_d.fill.len().to_string()
    );
}

#[test]
fn unpaired_inputs_say_how_to_get_ratios_and_draw_bandwidth_by_nodes() {
    let (be, _) = sim_input("be4", 2, Mode::BestEffort, false);
    let (dfs, _) = sim_input("dfs8", 4, Mode::Dfs, false);
    let secs = SimSections.sections(&[&be, &dfs]).unwrap();
    let cmp = section(&secs, "dfs-simulation-best-effort-against-dfs");
    assert!(cmp.tables().is_empty());
    assert!(paragraphs(cmp).contains("--mode both"));
    let bw = section(&secs, "dfs-simulation-aggregate-bandwidth");
    let f = figures(bw);
    assert_eq!(f.len(), 1, "two node counts give the Fig. 7 line chart");
    assert!(f[0].1.contains("DFS") && f[0].1.contains("best effort"));
}

#[test]
fn view_ratios_match_the_crates_comparison() {
    let (_, be) = sim_input("be", 2, Mode::BestEffort, false);
    let (_, dfs) = sim_input("dfs", 2, Mode::Dfs, false);
    let (mut a, mut b) = (View::of_sim("be", &be), View::of_sim("dfs", &dfs));
    let want = compare(&be, &dfs);
    assert_eq!(ratios(&a, &b), want);
    // Without the simulator data (the MPI path) the same formula.
    (a.sim, b.sim) = (None, None);
    assert_eq!(ratios(&a, &b), want);
    assert_eq!(pairs(&[a, b]).len(), 1);
}

#[test]
fn foreign_data_is_an_error_naming_the_input() {
    let i = test_input(SIM_KIND, &serde_json::json!({"x": 1}), "odd.json");
    let e = SimSections.sections(&[&i]).unwrap_err();
    assert!(e.contains("odd.json") && e.contains("dfs.sim"), "{e}");
}

#[test]
fn drop_ranges_join_consecutive_intervals() {
    let r = |index, dropped| IntervalRow {
        index,
        proposed_ms: Some(1.0),
        actual_ms: 1.0,
        start_spread_ms: 0.0,
        start_ms: 0.0,
        speedup: false,
        dropped,
    };
    let rows = [r(0, false), r(1, true), r(2, true), r(3, false), r(5, true)];
    assert_eq!(drop_ranges(&rows), vec![(0.5, 2.5), (4.5, 5.5)]);
    assert_eq!(bytes(65536), "64 KiB");
    assert_eq!(bytes(1 << 20), "1 MiB");
    assert_eq!(bytes(100), "100 B");
}

/// A `dfs.run` result carrying a small simulation's numbers (the MPI runtime writes
/// the same structures).
#[cfg(feature = "mpi")]
fn run_input(name: &str, d: &SimData) -> Input {
    use crate::mpirun::{RunConfig, RunData, RESULT_KIND};
    let c = &d.config;
    let data = RunData {
        config: RunConfig {
            topology: c.topology,
            params: c.params,
            mode: c.mode,
            time_slices: d.time_slices,
            dde_replicas: 2,
            kill_dde: Some((0, 5)),
            clock_skew_ns: 1_000,
            drift_ppm: 0.0,
            sample_ns: 100_000,
        },
        ranks: d.nodes,
        time_slices: d.time_slices,
        warmup_ts: d.warmup_ts,
        completion_ms: d.completion_ms,
        completion_var_ms2: d.completion_var_ms2,
        bandwidth_gbs: d.bandwidth_gbs,
        duration_ms: d.duration_ms,
        intervals: d.intervals.clone(),
        fill: d.fill.clone(),
        compute: d.compute,
        ie: d.ie,
        dde: d.dde,
        dde_killed: 1,
        sent: d.sent,
        expected: d.time_slices * c.topology.inputs as u64,
        lost: 0,
        verified: true,
        transport: crate::mpidata::Transport::Mpi,
        provider: None,
    };
    test_input(RESULT_KIND, &data, &format!("{name}.json"))
}

#[cfg(feature = "mpi")]
#[test]
fn run_sections_use_the_mpi_data() {
    let (_, be_d) = sim_input("be", 2, Mode::BestEffort, false);
    let (_, dfs_d) = sim_input("dfs", 2, Mode::Dfs, false);
    let (be, dfs) = (run_input("run-be", &be_d), run_input("run-dfs", &dfs_d));
    assert!(RunSections.handles("dfs.run") && !RunSections.handles("dfs.sim"));
    let secs = RunSections.sections(&[&be, &dfs]).unwrap();
    let acc = section(&secs, "dfs-over-mpi-completion-accounting").tables();
    assert_eq!(
        row(acc[0], "run-dfs")[col(acc[0], "verdict")],
        "complete, all verified"
    );
    assert_eq!(
        row(acc[1], "run-dfs")[col(acc[1], "DDE replicas stopped")],
        "1"
    );
    let t = section(&secs, "dfs-over-mpi-best-effort-against-dfs").tables()[0];
    let r = row(t, "4");
    let want = be_d.completion_ms.median / dfs_d.completion_ms.median;
    assert_eq!(
        r[col(t, "median completion, BE / DFS")],
        format!("{want:.1}×")
    );
    // Whole-run bandwidth (the MPI runtime has no warm-up split) and no reference.
    let bw = section(&secs, "dfs-over-mpi-aggregate-bandwidth").tables()[0];
    let r = row(bw, "run-dfs");
    assert_eq!(r[col(bw, "GB/s")], format!("{:.2}", dfs_d.bandwidth_gbs));
    assert_eq!(r[col(bw, "reference GB/s")], "—");
    let mut bad = be.clone();
    bad.runs[0].1.data = serde_json::json!([1, 2]);
    let e = RunSections.sections(&[&bad]).unwrap_err();
    assert!(e.contains("run-be.json") && e.contains("dfs.run"), "{e}");
}

#[cfg(feature = "mpi")]
#[test]
fn bench_sections_tabulate_and_draw_sizes() {
    use crate::mpibench::{BenchConfig, BenchData, BenchRow, RESULT_KIND};
    use crate::sim::FiveNum;
    let five = |m: f64| FiveNum {
        count: 100,
        min: m * 0.9,
        p10: m * 0.95,
        median: m,
        p90: m * 1.1,
        max: m * 2.0,
    };
    let rows: Vec<BenchRow> = [(4096u64, false, 10.0, 0.8), (65536, false, 40.0, 3.2)]
        .into_iter()
        .chain([(4096, true, 14.0, 0.6), (65536, true, 45.0, 2.9)])
        .map(|(size, mix, us, gbs)| BenchRow {
            size,
            mix,
            rounds: 100,
            round_us_mean: us,
            round_us: five(us),
            bw_per_sender_gbs: (gbs, gbs * 0.9, gbs * 1.1),
            aggregate_gbs: gbs * 4.0,
        })
        .collect();
    let data = BenchData {
        config: BenchConfig {
            sizes: vec![4096, 65536],
            bytes_per_size: 1 << 26,
            min_rounds: 100,
            mix: true,
        },
        senders: 4,
        receivers: 4,
        rows,
        transport: crate::mpidata::Transport::Mpi,
        provider: None,
    };
    let i = test_input(RESULT_KIND, &data, "bench.json");
    assert!(BenchSections.handles("dfs.bench"));
    let secs = BenchSections.sections(&[&i]).unwrap();
    let s = section(&secs, "mpi-put-micro-benchmark-bench");
    let t = s.tables()[0];
    assert_eq!(t.rows.len(), 4);
    let r = &t.rows[1];
    assert_eq!(r[0].text, "64 KiB");
    assert_eq!(r[col(t, "GB/s per sender")].text, "3.200");
    assert_eq!(r[col(t, "aggregate GB/s")].text, "12.80");
    assert_eq!(r[col(t, "median")].text, "40.0 µs");
    let f = figures(s);
    assert_eq!(f.len(), 2);
    assert!(f
        .iter()
        .all(|(_, svg)| svg.contains("Mix") && svg.contains("64 KiB")));
}
