//! `latlab net forward --engine testpmd`: DPDK's testpmd forwards the probes on the
//! testbed (as root, with the dpdk-dev package; a SKIP line otherwise), and a missing
//! program is one line.

use crate::util::{assert_usage_error, latlab, latlab_bin, ok, skip, system_test, text};
use latlab_core::results::ResultFile;
use std::process::Command;

fn ip(args: &[&str]) -> String {
    text(&Command::new("ip").args(args).output().unwrap().stdout)
}

/// Every probe passes through testpmd, on a fresh testbed too: there the namespace's
/// `local` rule is still the kernel's own, and steering once left a second one ahead of
/// its rule, so that every probe went over loopback while testpmd counted 0 (issue 14).
#[test]
fn a_probe_through_testpmd_is_counted_alike_by_both() {
    let _turn = system_test!("the namespace testbed and dpdk-testpmd");
    if latlab_sys::supervise::find_on_path("dpdk-testpmd").is_none() {
        skip!("dpdk-testpmd is not installed (Debian package dpdk-dev: make deps-test)");
    }
    let dir = tempfile::tempdir().unwrap();
    // a fresh testbed: the case that failed
    ok(&latlab().args(["net", "testbed", "down"]).output().unwrap());
    ok(&latlab().args(["net", "testbed", "up"]).output().unwrap());
    let nf_path = dir.path().join("nf.json");
    let cpu = (latlab_sys::sched::online_cpus() - 1).to_string();
    let (mut nf, ready) = crate::net::spawn_nf(
        Command::new(latlab_bin())
            .args([
                "net",
                "forward",
                "--testbed",
                "--engine",
                "testpmd",
                "--cpu",
                &cpu,
            ])
            .args(["--until-stdin-closes", "-q", "-o"]),
        &nf_path,
    );
    assert_eq!(
        ready.trim(),
        "ready",
        "testpmd did not start (its error is above)"
    );
    // the steering is in place while testpmd runs
    let rules = ip(&["-n", "latlab-gen", "rule"]);
    assert!(
        rules.starts_with("10:") && rules.contains("lookup 7001"),
        "the steering rule comes first, no `local` rule ahead of it: {rules}"
    );
    let probe_path = dir.path().join("probe.json");
    let probe = Command::new("ip")
        .args(["netns", "exec", "latlab-gen"])
        .arg(latlab_bin())
        .args([
            "net",
            "probe",
            "--to",
            "10.201.2.1:7001",
            "--bind",
            "10.201.1.1:0",
        ])
        .args([
            "--rx-bind",
            "10.201.2.1:7001",
            "--tx-device",
            "latlab-ga",
            "--rate",
            "1kpps",
            "--duration",
            "1s",
        ])
        .args(["--warmup", "200ms", "-q", "-o"])
        .arg(&probe_path)
        .output()
        .unwrap();
    drop(nf.stdin.take());
    let nf_out = nf.wait_with_output().unwrap();
    ok(&probe);
    assert!(nf_out.status.success(), "{}", text(&nf_out.stderr));
    let prefix = n_prefix(&nf_path);
    assert!(
        !std::path::Path::new("/var/run/dpdk").join(&prefix).exists(),
        "EAL's runtime directory {prefix} left behind"
    );

    let p = ResultFile::load(&probe_path).unwrap();
    let c = &p.counters;
    assert_eq!(c["sent"], 1200, "{c:?}");
    assert_eq!(c["received_unique"] + c["lost"], c["sent"], "{c:?}");
    assert_eq!(
        c["duplicates"], 0,
        "the NF namespace's kernel forwarded a copy: {c:?}"
    );
    assert!(
        c["received_unique"] > 0,
        "nothing came through testpmd: {c:?}"
    );
    let n = ResultFile::load(&nf_path).unwrap();
    assert_eq!(n.kind, "net.nf");
    assert_eq!(n.data["engine"], "testpmd");
    // testpmd's port 0 received every probe sent, its port 1 sent what the receiver got
    assert_eq!(n.counters["received"], c["sent"], "{:?}", n.data);
    assert_eq!(n.counters["sent"], c["received_unique"], "{:?}", n.data);
    assert_eq!(n.counters["dropped"], 0, "{:?}", n.data);

    // nothing of the steering is left, and the checksum offload is back
    let rules = ip(&["-n", "latlab-gen", "rule"]);
    assert!(
        !rules.contains("7001") && rules.starts_with("0:"),
        "{rules}"
    );
    let k = ip(&["netns", "exec", "latlab-gen", "ethtool", "-k", "latlab-ga"]);
    assert!(k.contains("tx-checksumming: on"), "{k}");
    ok(&latlab().args(["net", "testbed", "down"]).output().unwrap());
}

/// The `--file-prefix` testpmd ran with, from the NF's result.
fn n_prefix(nf: &std::path::Path) -> String {
    let r = ResultFile::load(nf).unwrap();
    r.config["file_prefix"].as_str().unwrap().to_string()
}

#[test]
fn a_missing_testpmd_is_one_line_and_exit_3() {
    let dir = tempfile::tempdir().unwrap();
    let out_path = dir.path().join("nf.json");
    let out = latlab()
        .env("LATLAB_TESTPMD", "latlab-no-such-testpmd")
        .args(["net", "forward", "--testbed", "--engine", "testpmd", "-o"])
        .arg(&out_path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("latlab-no-such-testpmd was not found") && err.contains("dpdk-dev"),
        "{err}"
    );
    assert!(!out_path.exists());
    assert_usage_error(
        ["net", "forward", "--engine", "testpmd"],
        &["--engine testpmd", "--testbed"],
    );
    assert_usage_error(
        [
            "net",
            "probe",
            "--to",
            "127.0.0.1:9",
            "--tx-device",
            "no/such",
        ],
        &["--tx-device", "interface name"],
    );
}
