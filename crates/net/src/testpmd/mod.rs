//! The paper's DPDK network function on the testbed: Debian's `dpdk-testpmd` in the NF
//! namespace, forwarding between the two veths through DPDK's AF_PACKET (or AF_XDP)
//! poll-mode driver, one busy-polling forwarding lcore pinned as asked, no hugepages.
//!
//! ## How probes reach the generator's receiver through it
//! testpmd forwards frames, not datagrams: it cannot rewrite IP addresses and ports as
//! latlab's socket forwarder does. So the generator addresses the probe to its own
//! receiver (`10.201.2.1:7001` on `latlab-gb`) and the testbed steers it out of port A
//! instead ([`steering`]): in namespace `latlab-gen` a policy rule (`from 10.201.1.1 to
//! 10.201.2.1 iif lo`, ahead of the `local` table) routes it out of `latlab-ga` with the
//! forwarder's port-A MAC as next hop. testpmd runs in MAC-forwarding mode: a frame from
//! port 0 leaves port 1 with the destination MAC of `latlab-gb`, where the kernel delivers
//! it to the receiver as any datagram (`accept_local` on `latlab-gb`, since its source
//! address is the generator's own). The veth's TX checksum offload is off on `latlab-ga`
//! while testpmd runs: a user-space NF copies the frame as it is on the wire, and a veth
//! leaves the UDP checksum to "hardware" that is never there. The NF namespace does not
//! route (`latlab-na` forwarding off), so the kernel's copy of each frame that the
//! AF_PACKET driver leaves it is dropped there, silently.
//!
//! [`Testpmd::start`] checks the program, steers, starts testpmd, and waits until both
//! links are up and forwarding has started; [`Testpmd::stop`] closes its standard input
//! (testpmd's non-interactive mode then stops forwarding and prints each port's forward
//! statistics), reads the counters and undoes the steering. Nothing of it is left behind:
//! dropping a [`Testpmd`] kills the program and undoes the steering too.

pub mod cmdline;
pub mod stats;
pub mod steering;

pub use self::cmdline::{Pmd, TestpmdConfig};
pub use self::stats::{ForwardStats, PortStats};

use crate::testbed;
use latlab_sys::supervise::{self, Supervised};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The program (Debian package `dpdk-dev`; its AF_PACKET and AF_XDP drivers are
/// `librte-net-af-packet23` and `librte-net-af-xdp23`).
pub const PROGRAM: &str = "dpdk-testpmd";
/// Environment variable that names another program to run instead (a path or a name on
/// `PATH`).
pub const PROGRAM_ENV: &str = "LATLAB_TESTPMD";
/// How long testpmd may take to bring both ports up and start forwarding.
pub const START_TIMEOUT: Duration = Duration::from_secs(30);
/// How long testpmd may take to stop after its input closes.
pub const STOP_GRACE: Duration = Duration::from_secs(15);

/// Errors of the DPDK network function.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TestpmdError {
    /// The program is not installed.
    #[error("{program} was not found (install the Debian packages dpdk-dev and librte-net-af-packet23: make deps-test)")]
    NotInstalled {
        /// What was looked for.
        program: String,
    },
    /// The testbed is not up.
    #[error("the testbed is not complete ({0}); run `latlab net testbed up` first")]
    NoTestbed(String),
    /// Steering or reading the testbed failed.
    #[error(transparent)]
    Testbed(#[from] testbed::TestbedError),
    /// testpmd could not be started.
    #[error("starting {program}: {source}")]
    Spawn {
        /// The program.
        program: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// testpmd gave up, or did not come up in time.
    #[error("dpdk-testpmd did not start forwarding: {0}")]
    NotForwarding(String),
    /// testpmd did not stop cleanly or printed no statistics.
    #[error("dpdk-testpmd did not stop cleanly: {0}")]
    Stop(String),
}

/// What a run of testpmd records in its result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestpmdRun {
    /// The program that ran.
    pub program: String,
    /// Its configuration.
    pub config: TestpmdConfig,
    /// Its forward statistics at the end.
    pub stats: ForwardStats,
}

/// The program to run: [`PROGRAM_ENV`] when set, else [`PROGRAM`], found on `PATH`.
///
/// # Errors
/// [`TestpmdError::NotInstalled`].
pub fn program() -> Result<PathBuf, TestpmdError> {
    let name = std::env::var(PROGRAM_ENV).unwrap_or_else(|_| PROGRAM.to_string());
    supervise::find_on_path(&name).ok_or(TestpmdError::NotInstalled { program: name })
}

/// A running testpmd on the testbed.
pub struct Testpmd {
    proc: Option<Supervised>,
    program: PathBuf,
    config: TestpmdConfig,
    steered: Option<steering::Steered>,
}

impl Testpmd {
    /// Starts testpmd on the testbed with `pmd`, forwarding on `fwd_cpu`; returns once it
    /// forwards.
    ///
    /// # Errors
    /// [`TestpmdError`]: the program missing (checked first), the testbed incomplete, or
    /// testpmd not forwarding within [`START_TIMEOUT`] (with its reason).
    pub fn start(pmd: Pmd, fwd_cpu: u32) -> Result<Testpmd, TestpmdError> {
        let program = program()?;
        let st = testbed::status()?;
        if !st.complete {
            return Err(TestpmdError::NoTestbed(st.missing.join(", ")));
        }
        let na = testbed::mac(testbed::NF_NS, "latlab-na")?;
        let ga = testbed::mac(testbed::GEN_NS, "latlab-ga")?;
        let gb = testbed::mac(testbed::GEN_NS, "latlab-gb")?;
        let config = TestpmdConfig::new(
            pmd,
            ["latlab-na".into(), "latlab-nb".into()],
            [ga, gb],
            fwd_cpu,
        );
        let mut me = Testpmd {
            proc: None,
            program: program.clone(),
            config,
            steered: Some(steering::Steered::apply(&na)?),
        };
        // testpmd writes its progress with stdio, fully buffered into a pipe: `stdbuf -oL`
        // (coreutils) makes it line-buffered, so the health check sees each line at once
        let (exe, args) = match supervise::find_on_path("stdbuf") {
            Some(stdbuf) => {
                let mut a = vec!["-oL".to_string(), program.display().to_string()];
                a.extend(me.config.args());
                (stdbuf, a)
            }
            None => (program.clone(), me.config.args()),
        };
        let proc = Supervised::spawn(Some(testbed::NF_NS), &exe, &args).map_err(|source| {
            TestpmdError::Spawn {
                program: program.display().to_string(),
                source,
            }
        })?;
        let proc = me.proc.insert(proc);
        let t0 = Instant::now();
        loop {
            let out = proc.output();
            match stats::health(&out, 2) {
                stats::Health::Forwarding => break,
                stats::Health::Failed => {
                    return Err(TestpmdError::NotForwarding(stats::failure_reason(&out)))
                }
                stats::Health::Starting => {}
            }
            if let Ok(Some(status)) = proc.exited() {
                return Err(TestpmdError::NotForwarding(format!(
                    "it exited ({status}): {}",
                    stats::failure_reason(&proc.output())
                )));
            }
            if t0.elapsed() > START_TIMEOUT {
                return Err(TestpmdError::NotForwarding(format!(
                    "not forwarding after {} s: {}",
                    START_TIMEOUT.as_secs(),
                    stats::failure_reason(&out)
                )));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(me)
    }

    /// Its configuration.
    pub fn config(&self) -> &TestpmdConfig {
        &self.config
    }

    /// Its process id.
    pub fn id(&self) -> Option<u32> {
        self.proc.as_ref().map(Supervised::id)
    }

    /// Stops testpmd and undoes the steering; returns its forward statistics.
    ///
    /// # Errors
    /// [`TestpmdError::Stop`] when it had to be killed or printed no statistics.
    pub fn stop(mut self) -> Result<TestpmdRun, TestpmdError> {
        let proc = self.proc.take();
        let ended = proc.map(|p| p.finish(STOP_GRACE));
        self.clean_up();
        let (status, out) = match ended {
            Some(Ok(x)) => x,
            Some(Err(e)) => return Err(TestpmdError::Stop(e.to_string())),
            None => return Err(TestpmdError::Stop("it was not running".into())),
        };
        if status.is_none() {
            return Err(TestpmdError::Stop(format!(
                "it did not end within {} s of its input closing and was killed",
                STOP_GRACE.as_secs()
            )));
        }
        let stats = stats::parse_forward_stats(&out).ok_or_else(|| {
            TestpmdError::Stop(format!(
                "no forward statistics in its output: {}",
                stats::failure_reason(&out)
            ))
        })?;
        Ok(TestpmdRun {
            program: self.program.display().to_string(),
            config: self.config.clone(),
            stats,
        })
    }
}

impl Drop for Testpmd {
    fn drop(&mut self) {
        // the program first (Supervised kills it when dropped), then the routes
        drop(self.proc.take());
        self.clean_up();
    }
}

impl Testpmd {
    /// Undoes the steering and removes EAL's runtime directory (testpmd has ended).
    fn clean_up(&mut self) {
        if let Some(s) = self.steered.take() {
            s.undo();
        }
        let _ = std::fs::remove_dir_all(self.config.runtime_dir());
    }
}

/// The probe through testpmd: from the generator's port A to its own receiver on port B
/// (the steering sends it out of port A).
pub fn probe_config() -> crate::probe::ProbeConfig {
    let t = testbed::addresses();
    let mut c = crate::probe::ProbeConfig::new(t.gen_b);
    c.tx_bind = t.gen_a;
    c.rx_bind = Some(t.gen_b);
    c.tx_device = Some("latlab-ga".into());
    c
}

/// Result kind of a testpmd run: the NF's (`net.nf`), with `data.engine` = `testpmd`.
pub use crate::nf::NF_RESULT_KIND;

/// The `net.nf` result of a testpmd run that lasted `duration_ns`: counters `received`
/// (port 0's RX: what the generator sent it), `sent` (port 1's TX: what it forwarded to
/// the generator's receiver), `dropped` (both ports, RX and TX), and the per-port
/// statistics and command line in `data`.
pub fn result(
    run: &TestpmdRun,
    argv: Vec<String>,
    started_utc: String,
    duration_ns: u64,
) -> latlab_core::results::ResultFile {
    let (_, timebase) =
        latlab_sys::tsc::Clock::establish(latlab_core::units::Nanos::from_millis(100));
    let threads = vec![latlab_core::results::ThreadPlacement::pinned(
        "nf testpmd forwarding lcore",
        Some(run.config.fwd_cpu),
        "SCHED_OTHER",
        0,
    )];
    let provenance = latlab_sys::host::provenance(timebase, threads, false, started_utc);
    let mut r = latlab_core::results::ResultFile::new(
        NF_RESULT_KIND,
        argv,
        serde_json::to_value(&run.config).unwrap_or(serde_json::Value::Null),
        provenance,
    );
    r.duration_ns = duration_ns;
    let (rx, tx) = run.stats.a_to_b();
    r.counters.insert("received".into(), rx);
    r.counters.insert("sent".into(), tx);
    r.counters.insert("dropped".into(), run.stats.dropped());
    r.data = serde_json::json!({
        "role": "forward",
        "engine": "testpmd",
        "pmd": run.config.pmd.name(),
        "program": run.program,
        "args": run.config.args(),
        "ports": run.stats.ports,
    });
    r
}

/// How a probe result's warning begins when testpmd counted fewer frames than the
/// generator received.
const BYPASS: &str = "testpmd counted";

/// The warning for a probe run through testpmd when testpmd's own count (`forwarded`)
/// falls short of what the generator `received`: some probes did not pass through it.
pub fn bypass_warning(forwarded: Option<u64>, received: u64) -> Option<String> {
    forwarded.filter(|f| *f < received).map(|f| format!(
        "{BYPASS} {f} frames forwarded but the generator received {received} probes: not every probe passed through testpmd, so this run's latencies are not testpmd's alone"
    ))
}

/// Whether a probe result carries [`bypass_warning`]'s warning.
pub fn bypassed(r: &latlab_core::results::ResultFile) -> bool {
    r.warnings.iter().any(|w| w.starts_with(BYPASS))
}

#[cfg(test)]
mod bypass_tests {
    use super::*;

    #[test]
    fn a_short_count_is_a_bypass_and_a_full_one_is_not() {
        let mut r = latlab_core::results::ResultFile::new(
            "net.probe",
            vec![],
            serde_json::json!({}),
            Default::default(),
        );
        assert_eq!(bypass_warning(Some(120), 120), None);
        assert_eq!(bypass_warning(None, 120), None);
        r.warnings.extend(bypass_warning(Some(0), 120));
        assert!(bypassed(&r), "{:?}", r.warnings);
    }
}
