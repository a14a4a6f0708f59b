//! `latlab net forward --engine testpmd`: DPDK's testpmd as the testbed's network function.

use crate::args::net::ForwardArgs;
use crate::exit::{testbed_err, usage};
use crate::output::result_path;
use anyhow::Context as _;
use latlab_net::testbed;
use latlab_net::testpmd::{self, Testpmd};
use latlab_sys::host;
use std::io::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Starts testpmd on the testbed, runs it until `--duration` passes, Ctrl-C, or (with
/// `--until-stdin-closes`) standard input closes, then writes its `net.nf` result.
pub fn forward(a: &ForwardArgs, argv: Vec<String>) -> anyhow::Result<()> {
    if !a.testbed {
        return Err(usage(
            "--engine testpmd forwards between the testbed's veths: add --testbed",
        ));
    }
    if a.nf.delay != latlab_net::nf::DelaySpec::None || a.nf.fifo.is_some() {
        return Err(usage(
            "--engine testpmd takes neither --delay nor --fifo (testpmd forwards as it is)",
        ));
    }
    // the missing program is the first thing said, before privileges and the testbed
    testpmd::program()?;
    if !testbed::is_root() {
        return Err(testbed_err(testbed::TestbedError::NotRoot));
    }
    let fwd_cpu = match a.nf.cpu.as_ref().map(|c| c.0.as_slice()) {
        Some([c]) => *c,
        Some(_) => {
            return Err(usage(
                "--cpu: --engine testpmd takes one CPU (its forwarding lcore), e.g. --cpu 1",
            ))
        }
        None => latlab_net::orchestrate::cpus().1,
    };
    let allowed = latlab_sys::sched::allowed_cpus();
    if !allowed.contains(&fwd_cpu) {
        return Err(usage(format!(
            "--cpu {fwd_cpu}: not an allowed CPU; allowed: {}",
            latlab_sys::sched::format_cpu_list(&allowed)
        )));
    }
    let quiet = a.nf.out.quiet;
    latlab_sys::signal::install_stop_handler().context("installing the Ctrl-C handler")?;
    let started_utc = host::utc_now_rfc3339();
    let nf = Testpmd::start(a.pmd.into(), fwd_cpu)?;
    let t0 = Instant::now();
    if !quiet {
        println!(
            "latlab net forward: dpdk-testpmd (pid {}) forwards latlab-na -> latlab-nb with {} on CPU {fwd_cpu}; probes: ip netns exec latlab-gen latlab net probe --to 10.201.2.1:7001 --bind 10.201.1.1:0 --rx-bind 10.201.2.1:7001 --tx-device latlab-ga",
            nf.id().unwrap_or(0),
            a.pmd_name(),
        );
    }
    println!("ready");
    std::io::stdout().flush().ok();
    let closed = Arc::new(AtomicBool::new(false));
    if a.nf.until_stdin_closes {
        latlab_net::run::raise_when_stdin_closes(closed.clone());
    }
    let limit = a.nf.duration.map(|d| Duration::from_nanos(d.get()));
    while !closed.load(Ordering::Relaxed)
        && !latlab_sys::signal::stop_requested()
        && !limit.is_some_and(|l| t0.elapsed() >= l)
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    let run = nf.stop()?;
    let duration_ns = u64::try_from(t0.elapsed().as_nanos()).unwrap_or(u64::MAX);
    let r = testpmd::result(&run, argv, started_utc.clone(), duration_ns);
    let path = result_path(&a.nf.out, "net-forward-testpmd", &started_utc);
    r.save(&path).context("writing the result")?;
    if !quiet {
        for (k, p) in run.stats.ports.iter().enumerate() {
            println!(
                "port {k}: RX {} (dropped {}), TX {} (dropped {})",
                p.rx, p.rx_dropped, p.tx, p.tx_dropped
            );
        }
        println!("result: {}", path.display());
    }
    Ok(())
}
