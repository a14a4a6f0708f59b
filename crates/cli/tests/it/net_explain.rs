//! `--explain` on the net commands: a probe over the veth testbed attributes every sample
//! above its threshold (NET_RX among the causes), stores what `latlab explain --json`
//! prints, and a run without root says in one line that kernel events are missing and
//! carries on with the threads' stalls. Shares and timings are not asserted: they depend
//! on the load of the machine (they are measured in docs/benchmarks.md).

use crate::host_noise::explain_json;
use crate::util::{latlab, latlab_bin, ok, system_test, text};
use latlab_core::results::ResultFile;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};

/// Starts the network function `latlab ARGS… -o OUT` (after `prefix`, e.g. `ip netns exec
/// NS`), running until its stdin closes, and waits for its `ready` line.
pub(crate) fn start_nf(prefix: &[&str], args: &str, out: &Path) -> std::process::Child {
    let mut cmd = match prefix.split_first() {
        Some((first, rest)) => {
            let mut c = Command::new(first);
            c.args(rest).arg(latlab_bin());
            c
        }
        None => Command::new(latlab_bin()),
    };
    let mut nf = cmd
        .args(args.split_whitespace())
        .args(["--until-stdin-closes", "-q", "-o"])
        .arg(out)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut ready = String::new();
    BufReader::new(nf.stdout.take().unwrap())
        .read_line(&mut ready)
        .unwrap();
    assert_eq!(ready.trim(), "ready");
    nf
}

#[test]
fn a_probe_over_veth_attributes_every_sample_above_its_threshold() {
    let _turn = system_test!("the namespace testbed and tracefs");
    let dir = tempfile::tempdir().unwrap();
    ok(&latlab().args(["net", "testbed", "up"]).output().unwrap());
    let mut nf = start_nf(
        &["ip", "netns", "exec", "latlab-nf"],
        "net forward --testbed --io busy",
        &dir.path().join("nf.json"),
    );
    let p = dir.path().join("probe.json");
    // every sample lies above 1 µs over veth: each one is a window
    let out = latlab()
        .args(
            "net probe --testbed --rate 2kpps --duration 1s --warmup 200ms --explain-above 1us -o"
                .split_whitespace(),
        )
        .arg(&p)
        .output()
        .unwrap();
    drop(nf.stdin.take());
    let nf_status = nf.wait().unwrap();
    let _ = latlab().args(["net", "testbed", "down"]).output().unwrap();
    let stdout = ok(&out);
    assert!(nf_status.success());
    assert!(stdout.contains("explain: "), "{stdout}");
    assert!(stdout.contains("(--explain-above)"), "{stdout}");

    let r = ResultFile::load(&p).unwrap();
    let a = r
        .explain
        .as_ref()
        .expect("--explain stores the attribution");
    assert!(a.unavailable.is_none(), "{:?}", a.unavailable);
    let d = &r.data["explain"];
    let samples = d["samples"].as_u64().unwrap();
    let user = r.histogram("user.actual").unwrap().unwrap();
    assert_eq!(samples, user.count(), "every measured sample was logged");
    assert_eq!(d["threshold_ns"].as_u64(), Some(1_000));
    assert_eq!(
        a.windows, samples,
        "every sample is above 1 µs, so every one is a window"
    );
    // the causes add up to the excess (each converted to ns on its own: within 1 ns each)
    let sum: u64 = a.causes.iter().map(|c| c.time_ns).sum();
    assert!(
        sum.abs_diff(a.excess_ns) <= a.causes.len() as u64,
        "causes {sum} ns, excess {} ns",
        a.excess_ns
    );
    assert!(
        a.causes
            .iter()
            .any(|c| c.class == "softirq" && c.name == "NET_RX"),
        "the veth path's receive softirq is a cause: {:?}",
        a.causes
    );
    assert!(!a.worst.is_empty());

    // `latlab explain --json` prints the stored attribution as it is
    let j = explain_json(&p);
    let stored = serde_json::to_value(a).unwrap();
    for k in [
        "windows",
        "excess_ns",
        "explained_ns",
        "causes",
        "worst",
        "bands",
    ] {
        assert_eq!(j[k], stored[k], "{k}");
    }
    assert_eq!(j["kind"], "net.probe");
}

#[test]
fn without_root_a_probe_says_once_what_is_missing_and_keeps_the_gap_half() {
    let _turn = system_test!("setpriv to an unprivileged user");
    let dir = tempfile::tempdir().unwrap();
    // the unprivileged probe writes its result here
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let mut nf = start_nf(
        &[],
        "net reflect --bind 127.0.0.1:7341",
        &dir.path().join("nf.json"),
    );
    let p = dir.path().join("probe.json");
    let out = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
        ])
        .arg(latlab_bin())
        .args(
            "net probe --to 127.0.0.1:7341 --rate 2kpps --duration 300ms --warmup 50ms --rx-io busy --explain -o"
                .split_whitespace(),
        )
        .arg(&p)
        .output()
        .unwrap();
    drop(nf.stdin.take());
    nf.wait().unwrap();
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}\n{}", text(&out.stdout));
    let missing: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("kernel events unavailable"))
        .collect();
    assert_eq!(missing.len(), 1, "one line says what is missing: {stderr}");
    assert!(missing[0].contains("measuring gaps only"), "{stderr}");
    let r = ResultFile::load(&p).unwrap();
    let a = r.explain.as_ref().expect("the gap half still attributes");
    assert!(a.unavailable.is_some());
    assert!(!a.complete);
    assert_eq!(
        a.explained_ns, 0,
        "without kernel events nothing is explained"
    );
    assert_eq!(r.data["explain"]["threshold_rule"], "p99");
    assert!(r.data["explain"]["samples"].as_u64().unwrap() > 0);
}
