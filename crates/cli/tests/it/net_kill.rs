//! Killing latlab mid-run (SIGKILL, which no handler sees) leaves nothing behind: no
//! namespace it created and no XDP program attached (as root; a SKIP line otherwise).
//! The namespaces go through latlab's janitor (`latlab_sys::janitor`), the XDP programs
//! with the BPF links the kernel closes with the process.

use crate::util::{latlab, latlab_bin, ok, system_test, text};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The testbed's namespaces that exist now.
fn testbed_namespaces() -> Vec<String> {
    text(
        &Command::new("ip")
            .args(["netns", "list"])
            .output()
            .unwrap()
            .stdout,
    )
    .lines()
    .filter_map(|l| l.split_whitespace().next())
    .filter(|n| n.starts_with("latlab-gen") || *n == "latlab-nf")
    .map(str::to_string)
    .collect()
}

/// Whether any interface of the NF namespace has an XDP program.
fn xdp_in_nf() -> bool {
    Command::new("ip")
        .args(["-n", "latlab-nf", "link", "show"])
        .output()
        .map(|o| text(&o.stdout).contains("xdp"))
        .unwrap_or(false)
}

/// Processes whose command line mentions `needle`.
fn processes_mentioning(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(c) = std::fs::read(e.path().join("cmdline")) {
            let c = String::from_utf8_lossy(&c).replace('\0', " ");
            if c.contains(needle) {
                found.push(c);
            }
        }
    }
    found
}

#[test]
fn sigkill_mid_run_leaves_no_namespace_and_no_xdp_program() {
    let _turn = system_test!("network namespaces and XDP programs");
    ok(&latlab().args(["net", "testbed", "down"]).output().unwrap());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("cal");
    // calibrate brings the testbed up itself and runs its NF over AF_XDP
    let mut run = Command::new(latlab_bin())
        .args(["net", "calibrate", "--io", "xdp", "--delays", "0us,10us"])
        .args(["--rounds", "1", "-q", "-o"])
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while !xdp_in_nf() {
        if let Some(status) = run.try_wait().unwrap() {
            panic!("calibrate ended ({status}) before its NF attached an XDP program");
        }
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "no XDP program on the testbed after 120 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        !testbed_namespaces().is_empty(),
        "calibrate runs on the testbed"
    );
    run.kill().unwrap();
    let _ = run.wait();
    // the janitor deletes the namespaces; the NF, told by its closed stdin, exits
    let t0 = Instant::now();
    while (!testbed_namespaces().is_empty() || xdp_in_nf())
        && t0.elapsed() < Duration::from_secs(10)
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        testbed_namespaces(),
        Vec::<String>::new(),
        "namespaces left"
    );
    assert!(!xdp_in_nf(), "an XDP program stayed attached");
    let t0 = Instant::now();
    let needle = dir.path().to_string_lossy().to_string();
    while !processes_mentioning(&needle).is_empty() && t0.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        processes_mentioning(&needle),
        Vec::<String>::new(),
        "the run's children outlived it"
    );
}
