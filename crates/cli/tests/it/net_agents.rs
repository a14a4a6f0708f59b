//! End-to-end tests of `latlab net probe --agents` under mpirun: a rank that cannot start
//! (a refusing target, another latlab version, a missing generator namespace) stops every
//! rank with one line naming it, and a run from two generator namespaces writes one result
//! whose histograms are the exact sum of the agents'. Every mpirun runs under `timeout`,
//! so a rank that hung would fail the test instead of hanging it.

use crate::net_explain::start_nf;
use crate::util::{latlab, latlab_bin, ok, require_mpi, shared_turn, system_test, text};
use latlab_core::results::ResultFile;
use std::path::Path;
use std::process::{Child, Output};

/// `timeout 120 mpirun -n RANKS latlab ARGS -o OUT`, with `env` set for every rank.
fn agents(ranks: u32, args: &str, env: &[(&str, &str)], out: &Path) -> Output {
    let _shared = shared_turn();
    let mut c = std::process::Command::new("timeout");
    c.args([
        "120",
        "mpirun",
        "--allow-run-as-root",
        "--oversubscribe",
        "-n",
    ])
    .arg(ranks.to_string())
    .env("OMPI_MCA_btl_vader_single_copy_mechanism", "none")
    .arg(latlab_bin())
    .args(args.split_whitespace())
    .arg("-o")
    .arg(out);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

/// The lines latlab printed on stderr (mpirun's own banners left out).
fn latlab_errors(o: &Output) -> Vec<String> {
    text(&o.stderr)
        .lines()
        .filter(|l| l.starts_with("latlab: error"))
        .map(str::to_string)
        .collect()
}

fn assert_one_line(o: &Output, code: i32, says: &[&str]) {
    assert_eq!(o.status.code(), Some(code), "{}", text(&o.stderr));
    let lines = latlab_errors(o);
    assert_eq!(lines.len(), 1, "{lines:?}");
    for s in says {
        assert!(lines[0].contains(s), "{:?} lacks {s}", lines[0]);
    }
}

/// A failing `--agents` run: ranks, `--flows`, environment, exit code, what its line says.
type Case = (
    u32,
    &'static str,
    &'static [(&'static str, &'static str)],
    i32,
    &'static [&'static str],
);

#[test]
fn a_rank_that_cannot_start_stops_every_rank_with_one_line() {
    require_mpi!();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("agents.json");
    // (ranks, flows, hook, exit code, what the one line says); nothing listens on the
    // discard port 9, so a first datagram there is refused
    let cases: [Case; 5] = [
        (3, "2", &[], 1, &["rank 1:", "127.0.0.1:9 refuses"]),
        // rank 2 claims another latlab
        (
            3,
            "2",
            &[("LATLAB_TEST_AGENT_VERSION", "2:0.0.1")],
            2,
            &["rank 2:", "0.0.1", "same latlab"],
        ),
        // a load that cannot be split, and too few ranks: rank 0 refuses the command line
        (3, "1", &[], 2, &["rank 0:", "--flows"]),
        (1, "1", &[], 2, &["rank 0:", "at least 2 MPI ranks"]),
        // a clock test hook that does not parse is refused with the form it takes
        (
            3,
            "2",
            &[("LATLAB_TEST_AGENT_CLOCK", "2:5ms:20")],
            2,
            &[
                "rank 0:",
                "LATLAB_TEST_AGENT_CLOCK",
                "RANK:OFFSET_NS:DRIFT_PPM",
            ],
        ),
    ];
    for (ranks, flows, env, code, says) in cases {
        let args = format!("net probe --agents --to 127.0.0.1:9 --flows {flows} --duration 1s");
        assert_one_line(&agents(ranks, &args, env, &out), code, says);
    }
    assert!(!out.exists(), "a failed run wrote a result");
}

/// Removes the testbed when the test ends, however it ends.
struct TestbedDown;

impl Drop for TestbedDown {
    fn drop(&mut self) {
        let _ = latlab().args(["net", "testbed", "down"]).output();
    }
}

/// The testbed with two generator namespaces (removed when the first value drops) and a
/// scratch directory.
fn two_generators() -> (TestbedDown, tempfile::TempDir) {
    let down = TestbedDown;
    ok(&latlab()
        .args(["net", "testbed", "up", "--generators", "2"])
        .output()
        .unwrap());
    (down, tempfile::tempdir().unwrap())
}

/// A forwarder for generator `j` in the NF namespace, until its stdin closes.
fn forwarder(j: usize, out: &Path) -> Child {
    start_nf(
        &["ip", "netns", "exec", "latlab-nf"],
        &format!("net forward --testbed --generator {j}"),
        out,
    )
}

/// Runs `line` on 3 ranks (rank 0 and one agent in each generator namespace) through a
/// forwarder per generator (their results in `dir`), and asserts that every process
/// succeeded.
fn agents_through_both_forwarders(dir: &Path, line: &str, env: &[(&str, &str)], out: &Path) {
    let nfs: Vec<Child> = (0..2)
        .map(|j| forwarder(j, &dir.join(format!("nf{j}.json"))))
        .collect();
    let o = agents(3, line, env, out);
    for mut nf in nfs {
        drop(nf.stdin.take());
        assert!(nf.wait().unwrap().success());
    }
    ok(&o);
}

#[test]
fn agents_in_two_generator_namespaces_merge_exactly_and_one_without_stops_every_rank() {
    let _turn = system_test!("the namespace testbed");
    require_mpi!();
    let (_down, dir) = two_generators();
    let out = dir.path().join("agents.json");
    agents_through_both_forwarders(
        dir.path(),
        "net probe --agents --testbed --rate 2kpps --flows 3 --arrivals poisson --duration 1s --warmup 200ms -q",
        &[("LATLAB_TEST_AGENT_CLOCK", "2:5000000:20")],
        &out,
    );

    let merged = ResultFile::load(&out).unwrap();
    assert_eq!(merged.kind, "net.probe");
    let d = latlab_net::agents::agents_data(&merged).unwrap();
    assert_eq!(d.agents.len(), 2);
    // the load as configured: 1 kpps each, flows 2 + 1, their own seeds and namespaces
    assert_eq!(d.configured_pps, 2000.0);
    let flows: Vec<u16> = d.agents.iter().map(|a| a.flows).collect();
    assert_eq!(flows, [2, 1]);
    assert!(d.agents.iter().all(|a| a.configured_pps == 1000.0));
    assert_ne!(d.agents[0].seed, d.agents[1].seed);
    let ns: Vec<_> = d.agents.iter().map(|a| a.namespace.clone()).collect();
    assert_eq!(ns, [Some("latlab-gen".into()), Some("latlab-gen1".into())]);
    // rank 2's clock was pushed 5 ms ahead: the estimate found it (whatever its bound)
    let c2 = d.agents[1].clock.unwrap();
    assert!(
        (c2.offset_ns - 5e6).abs() <= c2.uncertainty_ns.max(1e6),
        "{c2:?}"
    );

    let parts: Vec<ResultFile> = d
        .agents
        .iter()
        .map(|a| ResultFile::load(&dir.path().join(&a.result_file)).unwrap())
        .collect();
    // every histogram of the merge is the sum of the agents', bucket for bucket
    assert!(!merged.histograms.is_empty());
    for h in &merged.histograms {
        let m = merged.histogram(&h.name).unwrap().unwrap();
        let mut sum: Option<latlab_core::hist::LatencyHistogram> = None;
        for p in &parts {
            if let Some(x) = p.histogram(&h.name) {
                let x = x.unwrap();
                match &mut sum {
                    Some(s) => s.merge(&x).unwrap(),
                    None => sum = Some(x),
                }
            }
        }
        let sum = sum.unwrap();
        assert_eq!(m.count(), sum.count(), "{}", h.name);
        let buckets = |x: &latlab_core::hist::LatencyHistogram| x.buckets().collect::<Vec<_>>();
        assert_eq!(buckets(&m), buckets(&sum), "{}", h.name);
    }
    for k in ["sent", "received_unique", "lost", "sent_warmup"] {
        let total: u64 = parts.iter().map(|p| p.counters[k]).sum();
        assert_eq!(merged.counters[k], total, "{k}");
    }
    assert!(merged.counters["sent"] > 0);
    assert!(merged
        .self_checks
        .iter()
        .any(|v| v.check == "throughput" && v.detail.starts_with("achieved")));

    // one generator namespace for two agents: rank 2 has none to enter
    ok(&latlab().args(["net", "testbed", "up"]).output().unwrap());
    let mut nf = forwarder(0, &dir.path().join("nf0.json"));
    let out = dir.path().join("lonely.json");
    let o = agents(
        3,
        "net probe --agents --testbed --rate 2kpps --flows 2 --duration 1s",
        &[],
        &out,
    );
    drop(nf.stdin.take());
    nf.wait().unwrap();
    assert_one_line(&o, 1, &["rank 2:", "latlab-gen1"]);
    assert!(!out.exists());
}

/// Without `--flows`, an `--agents` run has one flow per agent (and an explicit `--flows`
/// fewer than the agents is refused: `a_rank_that_cannot_start_stops_every_rank_with_one_line`).
#[test]
fn agents_without_flows_get_one_flow_each() {
    let _turn = system_test!("the namespace testbed");
    require_mpi!();
    let (_down, dir) = two_generators();
    let out = dir.path().join("agents.json");
    agents_through_both_forwarders(
        dir.path(),
        "net probe --agents --testbed --rate 2kpps --duration 1s --warmup 200ms -q",
        &[],
        &out,
    );
    let merged = ResultFile::load(&out).unwrap();
    assert_eq!(merged.config["flows"], 2, "{}", merged.config);
    let d = latlab_net::agents::agents_data(&merged).unwrap();
    let flows: Vec<u16> = d.agents.iter().map(|a| a.flows).collect();
    assert_eq!(flows, [1, 1]);
    assert!(merged.counters["sent"] > 0);
    // 1 kpps each: both agents sent their whole schedule, and the merged check says so
    assert_eq!(merged.counters["unsent"], 0, "{:?}", merged.counters);
    let whole = merged
        .self_checks
        .iter()
        .rfind(|v| v.check == "schedule")
        .unwrap();
    assert!(whole.passed(), "{}", whole.line());
    assert_eq!(
        merged.counters["scheduled"],
        merged.counters["sent"] + merged.counters["send_errors"]
    );
}

/// One `--agents` run of 2 agents on the testbed (already up), with the clock hook set to
/// `hook`: its merged result's one-way figures.
fn one_way_run(dir: &Path, name: &str, hook: &str) -> latlab_net::agents::oneway::OneWayData {
    let nfs: Vec<Child> = (0..2)
        .map(|j| forwarder(j, &dir.join(format!("{name}-nf{j}.json"))))
        .collect();
    let out = dir.join(format!("{name}.json"));
    let o = agents(
        3,
        "net probe --agents --testbed --rate 2kpps --flows 2 --duration 2s --warmup 300ms",
        &[("LATLAB_TEST_AGENT_CLOCK", hook)],
        &out,
    );
    for mut nf in nfs {
        drop(nf.stdin.take());
        assert!(nf.wait().unwrap().success());
    }
    ok(&o);
    // the terminal shows the corrected one-way percentiles with their uncertainty
    let said = text(&o.stdout);
    assert!(
        said.contains("rank 1 → 2") && said.contains(" ± "),
        "{said}"
    );
    let d = latlab_net::agents::agents_data(&ResultFile::load(&out).unwrap()).unwrap();
    d.one_way.unwrap()
}

#[test]
fn one_way_delays_across_agents_clocks_are_corrected_within_their_uncertainty() {
    let _turn = system_test!("the namespace testbed");
    require_mpi!();
    let (_down, dir) = two_generators();
    // the hook with no skew: the same clocks, and the truth known as well
    let plain = one_way_run(dir.path(), "plain", "2:0:0");
    // rank 2's clock 5 ms ahead and 20 ppm fast: it receives rank 1's stream and sends
    // the stream rank 1 receives
    let skewed = one_way_run(dir.path(), "skewed", "2:5000000:20");
    for w in [&plain, &skewed] {
        let pairs: Vec<(usize, usize)> = w
            .streams
            .iter()
            .map(|s| (s.sender_rank, s.receiver_rank))
            .collect();
        assert_eq!(pairs, [(1, 2), (2, 1)]);
        for s in &w.streams {
            assert!(s.samples > 0 && s.samples <= s.sent, "{s:?}");
            // the estimator's actual error stays within the bound it reports (1 ns of
            // rounding at each end)
            let t = s.truth.unwrap();
            assert!(
                t.max_error_ns as f64 <= s.uncertainty_ns + 2.0,
                "error {} ns > ± {} ns: {s:?}",
                t.max_error_ns,
                s.uncertainty_ns
            );
        }
        assert!(w.all.is_some());
    }
    for (p, s) in plain.streams.iter().zip(&skewed.streams) {
        // uncorrected, the injection shows (5 ms one way or the other) ...
        assert!(
            (s.uncorrected.p50 - s.corrected.p50).abs() > 1_000_000,
            "{s:?}"
        );
        assert!((p.uncorrected.p50 - p.corrected.p50).abs() as f64 <= p.uncertainty_ns + 2.0);
        // ... corrected, the two runs' medians differ by no more than their true medians
        // do plus the two uncertainties (the path itself is slower or faster from run to
        // run on a loaded host; that is no clock error)
        let (tp, ts) = (p.truth.unwrap().delays.p50, s.truth.unwrap().delays.p50);
        let gap = (s.corrected.p50 - p.corrected.p50).abs() as f64;
        assert!(
            gap <= (ts - tp).abs() as f64 + p.uncertainty_ns + s.uncertainty_ns + 4.0,
            "{p:?} vs {s:?}"
        );
    }
}
