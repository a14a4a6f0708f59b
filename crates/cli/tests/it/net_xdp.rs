//! `--io xdp` end to end (as root; a SKIP line otherwise): probes over AF_XDP through the
//! testbed's forwarder over AF_XDP and through its socket forwarder, nothing attached after
//! a SIGKILL, `net calibrate --io xdp`, and the one-line errors of an interface without
//! native XDP and of a user without the privilege.

use crate::util::{
    assert_one_line_error, is_root, latlab, latlab_bin, latlab_line, ok, system_test, text,
};
use latlab_core::results::ResultFile;
use std::process::Command;
use std::time::{Duration, Instant};

/// `ip -n NS link show` of the testbed's namespace.
fn links(ns: &str) -> String {
    text(
        &Command::new("ip")
            .args(["-n", ns, "link", "show"])
            .output()
            .unwrap()
            .stdout,
    )
}

/// Starts `latlab net forward --testbed --io IO` in the NF namespace; returns it once it
/// printed "ready".
fn spawn_forwarder(io: &str, out: &std::path::Path) -> std::process::Child {
    let (nf, ready) = crate::net::spawn_nf(
        Command::new("ip")
            .args(["netns", "exec", "latlab-nf"])
            .arg(latlab_bin())
            .args([
                "net",
                "forward",
                "--testbed",
                "--direction",
                "a-to-b",
                "--io",
                io,
            ])
            .args(["--until-stdin-closes", "-q", "-o"]),
        out,
    );
    assert_eq!(ready.trim(), "ready", "forwarder --io {io} did not start");
    nf
}

/// One probe run over AF_XDP through a forwarder with `nf_io` (`cpus`: the probe's
/// placement flags): every probe is counted exactly once, as received or lost.
fn probe_through(nf_io: &str, cpus: &str) -> (ResultFile, ResultFile) {
    let dir = tempfile::tempdir().unwrap();
    let (nf_path, probe_path) = (dir.path().join("nf.json"), dir.path().join("probe.json"));
    let mut nf = spawn_forwarder(nf_io, &nf_path);
    let out = latlab_line(&format!(
        "net probe --testbed --io xdp --rate 5kpps --duration 400ms --warmup 100ms {cpus} -q -o"
    ))
    .arg(&probe_path)
    .output()
    .unwrap();
    drop(nf.stdin.take());
    assert!(nf.wait().unwrap().success());
    ok(&out);
    (
        ResultFile::load(&probe_path).unwrap(),
        ResultFile::load(&nf_path).unwrap(),
    )
}

#[test]
fn xdp_probes_through_xdp_and_socket_forwarders_are_all_counted() {
    let _turn = system_test!("the namespace testbed and XDP programs");
    ok(&latlab().args(["net", "testbed", "up"]).output().unwrap());
    // unpinned (TX and RX in one loop on one thread), and TX and RX threads on two CPUs
    let two = if latlab_sys::sched::allowed_cpus().len() >= 2 {
        "--tx-cpu 0 --rx-cpu 1"
    } else {
        ""
    };
    for (nf_io, cpus) in [("xdp", ""), ("busy", ""), ("xdp", two)] {
        let (r, nf) = probe_through(nf_io, cpus);
        let c = &r.counters;
        // 5 kpps for 500 ms; a generator held up for longer than the send grace at the end
        // of the run (a loaded host) leaves the last ones unsent, and counts them
        assert_eq!(c["scheduled"], 2500, "{nf_io}: {c:?}");
        assert_eq!(c["sent"] + c["unsent"], 2500, "{nf_io}: {c:?}");
        assert_eq!(
            c["received_unique"] + c["lost"],
            c["sent"],
            "{nf_io}: {c:?}"
        );
        assert_eq!(c["duplicates"], 0, "{nf_io}: {c:?}");
        assert_eq!(
            c["malformed_bad_magic"] + c["malformed_too_short"],
            0,
            "{c:?}"
        );
        // the frames latlab built were read by the forwarder as probes (the socket one
        // included: its kernel accepted their IPv4 and UDP checksums)
        assert!(nf.counters["received"] > 0, "{nf_io}: {:?}", nf.counters);
        assert_eq!(nf.counters["malformed"], 0, "{nf_io}: {:?}", nf.counters);
        let data = latlab_net::result::probe_data(&r).unwrap();
        assert!(
            data.xdp
                .iter()
                .any(|x| x.contains("native XDP") && x.contains("copy mode")),
            "{:?}",
            data.xdp
        );
        let nf_xdp = nf
            .data
            .get("xdp")
            .map(|v| v.to_string())
            .unwrap_or_default();
        assert_eq!(nf_xdp.contains("latlab-na"), nf_io == "xdp", "{nf_xdp}");
        let one_loop = data.xdp.iter().any(|x| x.contains("one loop"));
        assert_eq!(one_loop, cpus.is_empty(), "{cpus:?}: {:?}", data.xdp);
    }
    // nothing stays attached after the runs
    for ns in ["latlab-gen", "latlab-nf"] {
        assert!(!links(ns).contains("xdp"), "{}", links(ns));
    }
    ok(&latlab().args(["net", "testbed", "down"]).output().unwrap());
}

/// `net calibrate --io xdp` runs the forwarder and the generator over AF_XDP (briefly:
/// this checks that it works and what it compares, not how well).
#[test]
fn calibrate_over_xdp_compares_the_user_sources_of_af_xdp_runs() {
    let _turn = system_test!("the namespace testbed and XDP programs");
    let dir = tempfile::tempdir().unwrap();
    ok(&latlab_line(
        "net calibrate --io xdp --delays 0ns,10us --duration 300ms --warmup 100ms --rounds 1 \
         --rate 5kpps -q -o",
    )
    .arg(dir.path())
    .output()
    .unwrap());
    let r = ResultFile::load(&dir.path().join("calibrate.json")).unwrap();
    let data: latlab_net::calibrate::CalibrateData =
        serde_json::from_value(r.data.clone()).unwrap();
    // the user sources at 10 us, and no kernel source: none exists on an AF_XDP path
    let sources: std::collections::BTreeSet<&str> =
        data.rows.iter().map(|row| row.source.as_str()).collect();
    assert!(sources.contains("user (actual send)"), "{sources:?}");
    assert!(!sources.iter().any(|s| s.contains("kernel")), "{sources:?}");
    assert!(data.rows.iter().all(|row| row.injected_ns == 10_000));
    assert_eq!(data.runs.len(), 2, "{:?}", data.runs);
    for (_, path) in &data.runs {
        let p = ResultFile::load(std::path::Path::new(path)).unwrap();
        let probe = latlab_net::result::probe_data(&p).unwrap();
        // both directions of the generator on AF_XDP, every probe counted
        assert!(
            probe.xdp.iter().any(|x| x.contains("latlab-ga")),
            "{:?}",
            probe.xdp
        );
        // on one CPU: TX and RX in one loop, no RX thread to switch to
        assert!(
            probe.xdp.iter().any(|x| x.contains("one loop")),
            "{:?}",
            probe.xdp
        );
        let c = &p.counters;
        assert_eq!(c["received_unique"] + c["lost"], c["sent"], "{c:?}");
        assert!(c["received_unique"] > 0, "{c:?}");
    }
    for ns in ["latlab-gen", "latlab-nf"] {
        assert!(!links(ns).contains("xdp"), "{}", links(ns));
    }
}

#[test]
fn sigkill_leaves_no_xdp_program_attached() {
    let _turn = system_test!("the namespace testbed and XDP programs");
    ok(&latlab().args(["net", "testbed", "up"]).output().unwrap());
    let dir = tempfile::tempdir().unwrap();
    let mut nf = spawn_forwarder("xdp", &dir.path().join("nf.json"));
    assert!(links("latlab-nf").contains("xdp"), "{}", links("latlab-nf"));
    // `ip netns exec` execs latlab: this pid is the forwarder itself
    nf.kill().unwrap();
    let _ = nf.wait();
    // the BPF links close with the process: the kernel detaches the programs
    let t0 = Instant::now();
    while links("latlab-nf").contains("xdp") && t0.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        !links("latlab-nf").contains("xdp"),
        "{}",
        links("latlab-nf")
    );
    // the namespaces are the testbed's, not the process's: they stay until `down`
    let ns = text(
        &Command::new("ip")
            .args(["netns", "list"])
            .output()
            .unwrap()
            .stdout,
    );
    assert!(ns.contains("latlab-nf"), "{ns}");
    ok(&latlab().args(["net", "testbed", "down"]).output().unwrap());
}

#[test]
fn xdp_on_an_interface_without_native_xdp_is_one_line_exit_2() {
    if !is_root() {
        // without root the same command is refused for the privilege: exit 3
        let out = latlab_line("net reflect --bind 127.0.0.1:7390 --io xdp --duration 1s -q")
            .output()
            .unwrap();
        assert_one_line_error(&out, 3, &["--io xdp", "root"]);
        return;
    }
    let out = latlab_line("net reflect --bind 127.0.0.1:7390 --io xdp --duration 1s -q")
        .output()
        .unwrap();
    assert_one_line_error(&out, 2, &["--io xdp", "'lo'", "native"]);
    assert!(!text(
        &Command::new("ip")
            .args(["link", "show", "lo"])
            .output()
            .unwrap()
            .stdout
    )
    .contains("xdp"));
}

#[test]
fn xdp_without_privilege_is_one_line_exit_3() {
    if !is_root() {
        return; // covered by the test above when not root
    }
    // drop to nobody (no capabilities) for the one command
    let out = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--inh-caps=-all",
        ])
        .arg(latlab_bin())
        .args("net reflect --bind 127.0.0.1:7391 --io xdp --duration 1s -q".split_whitespace())
        .output()
        .unwrap();
    if out.status.code() == Some(127) || text(&out.stderr).contains("setpriv") {
        return; // no setpriv here, or it may not run the binary: nothing to check
    }
    assert_one_line_error(&out, 3, &["--io xdp", "root"]);
}

#[test]
fn killer_us_measures_every_rung_by_the_af_xdp_generator_and_leaves_nothing_behind() {
    let _turn = system_test!("the namespace testbed, XDP programs and SCHED_FIFO");
    use crate::net_kill::{namespaces, rt_runtime_us};
    let before = rt_runtime_us();
    let was_up = !namespaces(|n| n == "latlab-nf").is_empty();
    let dir = tempfile::tempdir().unwrap();
    let out = latlab_line("experiment killer-us --quick --rate 2kpps --duration 400ms -q -o")
        .arg(dir.path())
        .output()
        .unwrap();
    ok(&out);
    let r = ResultFile::load(&dir.path().join("killer-us.json")).unwrap();
    let d: latlab_net::killer_us::KillerUsData = serde_json::from_value(r.data.clone()).unwrap();
    let skipped: Vec<&str> = d.not_measured.iter().map(|(c, _)| c.as_str()).collect();
    for conf in latlab_net::killer_us::LADDER {
        if conf == latlab_net::killer_us::TESTPMD_RUNG && skipped.contains(&conf) {
            continue; // not installed, or its known intermittent bypass (docs/net.md)
        }
        assert!(!skipped.contains(&conf), "{conf}: {:?}", d.not_measured);
        for m in ["user-blocking", "user-busy", "user-xdp", "kernel"] {
            let h = r.histogram(&format!("{m}/{conf}")).unwrap().unwrap();
            // 800 probes at 2 kpps in 400 ms; a few may be lost
            assert!(h.count() >= 700, "{m}/{conf}: {} samples", h.count());
        }
        // the AF_XDP generator's runs went over AF_XDP (copy mode on veth), with user
        // stamps only
        let file = latlab_net::killer_us::STEPS
            .iter()
            .find(|s| s.name == conf)
            .unwrap()
            .file_name();
        let probe =
            ResultFile::load(&dir.path().join(format!("probe-{file}.rx-xdp.json"))).unwrap();
        let data = latlab_net::result::probe_data(&probe).unwrap();
        assert!(
            data.xdp.iter().any(|x| x.contains("copy mode")),
            "{conf}: {:?}",
            data.xdp
        );
        assert!(
            probe.histogram(latlab_net::probe::series::KERNEL).is_none(),
            "{conf}: no kernel stamps over AF_XDP"
        );
    }
    // the AF_XDP rung's NF forwarded over AF_XDP
    let nf = ResultFile::load(&dir.path().join("nf-AF-XDP-latlab-busy.rx-busy.json")).unwrap();
    assert!(nf.counters["received"] >= 700, "{:?}", nf.counters);
    let summary = std::fs::read_to_string(dir.path().join("summary.md")).unwrap();
    assert!(
        summary.contains("| user-xdp |") && summary.contains("AF_XDP (latlab, busy)"),
        "{summary}"
    );
    assert!(dir.path().join("ccdf-user-xdp.svg").exists());
    // nothing left: the testbed it built is down, throttling is as it was
    if !was_up {
        let left = namespaces(|n| n.starts_with("latlab-"));
        assert!(left.is_empty(), "{left:?}");
    }
    assert_eq!(rt_runtime_us(), before);
}
