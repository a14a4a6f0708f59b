//! Running network functions and probes as `latlab` child processes, inside the testbed's
//! namespaces or on loopback: what `calibrate` and the `killer-us` experiment build on.
//!
//! A child is `latlab child JOBFILE` (inside `ip netns exec NS` on the testbed): the
//! orchestrator writes a [`ChildJob`] carrying the library's own resolved configuration
//! ([`NfJob`], [`ProbeJob`]), and the child makes the same library call ([`crate::run`])
//! as `latlab net forward|reflect|probe`. No flags are re-spelled, so a renamed flag cannot
//! break an orchestrator at run time.
//!
//! An NF child prints `ready` once listening, and writes its result when its standard
//! input is closed.

use crate::nf::{Directions, NfConfig};
use crate::probe::ProbeConfig;
use crate::run::role_name;
pub use crate::run::{NfJob, ProbeJob, NF_JOB, PROBE_JOB};
use crate::testbed;
use latlab_core::child::ChildJob;
use latlab_core::results::ResultFile;
use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};

/// Errors of orchestration.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OrchestrateError {
    /// A child could not be started or failed.
    #[error("{what}: {detail}")]
    Child {
        /// What was run.
        what: String,
        /// Why it failed (its stderr).
        detail: String,
    },
    /// A result file could not be read.
    #[error(transparent)]
    Result(#[from] latlab_core::results::ResultError),
    /// The testbed could not be built.
    #[error(transparent)]
    Testbed(#[from] testbed::TestbedError),
}

/// Where the NF and the generator run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// The namespace testbed: forwarder in `latlab-nf`, generator in `latlab-gen`.
    Testbed,
    /// A reflector on 127.0.0.1 in the current namespace.
    Loopback,
}

/// Port of the loopback reflector.
pub const LOOPBACK_PORT: u16 = 7100;

/// A job file for one child, removed again when dropped.
#[derive(Debug)]
pub struct JobFile(PathBuf);

impl JobFile {
    /// Writes `job` (configuration `config`, result to `result`) to a fresh file in the
    /// temporary directory.
    fn write(
        job: &str,
        config: &impl serde::Serialize,
        result: &Path,
    ) -> Result<JobFile, OrchestrateError> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let path = std::env::temp_dir().join(format!(
            "latlab-job-{}-{}.json",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        ChildJob::new(job, config, Some(result.to_path_buf()))
            .and_then(|mut j| {
                // the child holds (and records) the idle policy this process holds
                j.dma_latency_us = latlab_sys::idle::held_us();
                j.write(&path)
            })
            .map_err(|e| OrchestrateError::Child {
                what: format!("job {job}"),
                detail: e.to_string(),
            })?;
        Ok(JobFile(path))
    }

    /// `latlab child JOBFILE`, inside `ns` when given (`ip netns exec`).
    fn command(&self, exe: &Path, ns: Option<&str>) -> Command {
        let mut c = match ns {
            Some(ns) => latlab_sys::netns::exec_command(ns, exe),
            None => Command::new(exe),
        };
        c.arg("child").arg(&self.0);
        c
    }
}

impl Drop for JobFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

impl Placement {
    /// The namespace the NF runs in (`None`: the current one).
    fn nf_namespace(self) -> Option<&'static str> {
        match self {
            Placement::Testbed => Some(testbed::NF_NS),
            Placement::Loopback => None,
        }
    }

    /// The namespace the generator runs in (`None`: the current one).
    fn probe_namespace(self) -> Option<&'static str> {
        match self {
            Placement::Testbed => Some(testbed::GEN_NS),
            Placement::Loopback => None,
        }
    }

    /// The NF of this placement with default settings: the forwarder A→B on the testbed's
    /// addresses, or the reflector on 127.0.0.1:[`LOOPBACK_PORT`]. Callers set I/O mode,
    /// CPUs, priority and delay on it.
    pub fn nf_config(self) -> NfConfig {
        match self {
            Placement::Testbed => {
                let mut c = NfConfig::reflect(testbed::addresses().nf_a);
                c.role = testbed::forward_role(Directions::AToB);
                c
            }
            Placement::Loopback => {
                NfConfig::reflect(SocketAddr::from(([127, 0, 0, 1], LOOPBACK_PORT)))
            }
        }
    }

    /// A probe towards this placement's NF with default settings: from the generator's
    /// port A to the forwarder, answers on port B (testbed), or to the loopback reflector.
    pub fn probe_config(self) -> ProbeConfig {
        match self {
            Placement::Testbed => testbed::probe_config(),
            Placement::Loopback => {
                ProbeConfig::new(SocketAddr::from(([127, 0, 0, 1], LOOPBACK_PORT)))
            }
        }
    }
}

/// A running NF child.
pub struct NfChild {
    child: Child,
    stdin: Option<ChildStdin>,
    result: PathBuf,
    what: String,
    _job: JobFile,
}

/// Starts the network function `nf` as a child (`latlab child`, job [`NF_JOB`]) in the
/// placement's namespace, writing its result to `result`; returns once it is listening.
/// The child runs until [`NfChild::finish`] closes its standard input.
pub fn start_nf(
    exe: &Path,
    placement: Placement,
    nf: &NfConfig,
    result: &Path,
) -> Result<NfChild, OrchestrateError> {
    let job = JobFile::write(
        NF_JOB,
        &NfJob {
            nf: nf.clone(),
            duration: None,
            until_stdin_closes: true,
            explain: Default::default(),
        },
        result,
    )?;
    let mut c = job.command(exe, placement.nf_namespace());
    c.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let what = format!(
        "network function {} (io {}, delay {})",
        role_name(&nf.role),
        nf.io.name(),
        nf.delay.describe()
    );
    let mut child = c.spawn().map_err(|e| OrchestrateError::Child {
        what: what.clone(),
        detail: e.to_string(),
    })?;
    let stdout = child.stdout.take();
    let mut ready = false;
    if let Some(out) = stdout {
        let mut r = BufReader::new(out);
        let mut line = String::new();
        while r.read_line(&mut line).map(|n| n > 0).unwrap_or(false) {
            if line.trim() == "ready" {
                ready = true;
                break;
            }
            line.clear();
        }
        // keep draining its stdout so it never blocks on a full pipe
        std::thread::spawn(move || {
            let mut sink = Vec::new();
            let _ = r.read_to_end(&mut sink);
        });
    }
    if !ready {
        let mut err = String::new();
        if let Some(mut e) = child.stderr.take() {
            let _ = e.read_to_string(&mut err);
        }
        let _ = child.wait();
        return Err(OrchestrateError::Child {
            what,
            detail: err.trim().to_string(),
        });
    }
    let stdin = child.stdin.take();
    Ok(NfChild {
        child,
        stdin,
        result: result.to_path_buf(),
        what,
        _job: job,
    })
}

impl NfChild {
    /// Stops the NF (closes its stdin) and loads its result.
    pub fn finish(mut self) -> Result<ResultFile, OrchestrateError> {
        drop(self.stdin.take());
        let out = self
            .child
            .wait_with_output()
            .map_err(|e| OrchestrateError::Child {
                what: self.what.clone(),
                detail: e.to_string(),
            })?;
        if !out.status.success() {
            return Err(OrchestrateError::Child {
                what: self.what,
                detail: String::from_utf8_lossy(&out.stderr).trim().to_string(),
            });
        }
        Ok(ResultFile::load(&self.result)?)
    }
}

/// Runs the probe `job` as a child (`latlab child`, job [`PROBE_JOB`]) in the placement's
/// generator namespace and loads its result, written to `result`.
pub fn run_probe(
    exe: &Path,
    placement: Placement,
    job: &ProbeJob,
    result: &Path,
) -> Result<ResultFile, OrchestrateError> {
    let what = "latlab net probe".to_string();
    let (mut c, _job) = probe_command(exe, placement.probe_namespace(), job, result)?;
    let out = c
        .stdin(Stdio::null())
        .output()
        .map_err(|e| OrchestrateError::Child {
            what: what.clone(),
            detail: e.to_string(),
        })?;
    if !out.status.success() {
        return Err(OrchestrateError::Child {
            what,
            detail: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(ResultFile::load(result)?)
}

/// The command of a probe child: `latlab child JOBFILE` for `job` (job [`PROBE_JOB`]),
/// inside namespace `ns` when given, writing its result (and the interval log beside it)
/// to `result`. The job file lives as long as the returned [`JobFile`].
pub fn probe_command(
    exe: &Path,
    ns: Option<&str>,
    job: &ProbeJob,
    result: &Path,
) -> Result<(Command, JobFile), OrchestrateError> {
    let file = JobFile::write(PROBE_JOB, job, result)?;
    Ok((file.command(exe, ns), file))
}

/// CPUs for the NF and the generator: the first and the last allowed CPU (the same one
/// on a single-CPU machine).
pub fn cpus() -> (u32, u32) {
    let all = latlab_sys::sched::allowed_cpus();
    let first = all.first().copied().unwrap_or(0);
    let last = all.last().copied().unwrap_or(first);
    (first, last)
}

/// The testbed as an orchestrator found it: dropping this takes the testbed down again
/// if [`prepare`] brought it up, so an experiment leaves no namespace behind that was not
/// there before it.
#[derive(Debug)]
#[must_use = "the testbed is taken down when this is dropped"]
pub struct Prepared {
    brought_up: bool,
    /// Deletes the testbed's namespaces should this process be killed before it takes
    /// the testbed down (SIGKILL included); dismissed after [`Drop`] took it down.
    _janitor: Option<latlab_sys::janitor::Janitor>,
}

impl Drop for Prepared {
    fn drop(&mut self) {
        if self.brought_up {
            let _ = testbed::down();
        }
    }
}

/// Brings the testbed up for `placement` (no-op on loopback); the returned guard takes it
/// down again when dropped, unless it was already up.
pub fn prepare(placement: Placement) -> Result<Prepared, OrchestrateError> {
    let mut brought_up = false;
    let mut janitor = None;
    if placement == Placement::Testbed {
        brought_up = !testbed::status().map(|s| s.complete).unwrap_or(false);
        if brought_up {
            // started before the namespaces exist, so that a kill in the middle of
            // building them is covered too
            janitor = latlab_sys::janitor::Janitor::watch(&[
                testbed::gen_ns(0),
                testbed::NF_NS.to_string(),
            ])
            .ok();
        }
        testbed::up()?;
    }
    Ok(Prepared {
        brought_up,
        _janitor: janitor,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nf::{DelaySpec, IoMode, Role};
    use crate::probe::Sources;

    /// An orchestrated probe child gets its resolved configuration through the job
    /// envelope: the command is `[ip netns exec NS] latlab child JOBFILE`, and the file reads
    /// back into the same typed job, with the result path as its output.
    #[test]
    fn a_probe_child_gets_its_config_through_the_job_envelope() {
        let mut probe = Placement::Testbed.probe_config();
        probe.milli_pps = 20_000_000;
        probe.sources = Sources::ALL;
        probe.hardware_optional = true;
        probe.rx_io = IoMode::Busy;
        probe.tx_cpu = Some(3);
        let job = ProbeJob {
            nf: Some(serde_json::json!({"config": "pinned"})),
            ..ProbeJob::new(probe.validated().unwrap())
        };
        let result = std::env::temp_dir().join("latlab-orchestrate-test-probe.json");
        let exe = Path::new("/usr/bin/latlab");
        let (c, file) = probe_command(exe, Some(testbed::GEN_NS), &job, &result).unwrap();
        assert_eq!(c.get_program(), "ip");
        let args: Vec<String> = c
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            &args[..5],
            ["netns", "exec", "latlab-gen", "/usr/bin/latlab", "child"]
        );
        assert_eq!(args.len(), 6, "{args:?}: no flags besides the job file");
        let back = ChildJob::read(Path::new(&args[5])).unwrap();
        assert_eq!(back.job, PROBE_JOB);
        assert_eq!(back.output.as_deref(), Some(result.as_path()));
        assert_eq!(back.config::<ProbeJob>().unwrap(), job);
        let path = file.0.clone();
        drop(file);
        assert!(!path.exists(), "the job file goes with its guard");
    }

    /// The NF of each placement, as an orchestrator sets it up and a child reads it back.
    #[test]
    fn an_nf_child_gets_its_config_through_the_job_envelope() {
        let mut nf = Placement::Testbed.nf_config();
        nf.io = IoMode::Busy;
        nf.cpus = vec![0];
        nf.fifo = Some(50);
        nf.delay = DelaySpec::constant(10_000);
        assert!(matches!(
            nf.role,
            Role::Forward {
                directions: Directions::AToB,
                ..
            }
        ));
        let result = std::env::temp_dir().join("latlab-orchestrate-test-nf.json");
        let job = NfJob {
            nf: nf.clone(),
            duration: None,
            until_stdin_closes: true,
            explain: Default::default(),
        };
        let file = JobFile::write(NF_JOB, &job, &result).unwrap();
        let back = ChildJob::read(&file.0).unwrap();
        assert_eq!(back.job, NF_JOB);
        assert!(back.quiet);
        assert_eq!(back.config::<NfJob>().unwrap(), job);
        let c = file.command(Path::new("latlab"), Placement::Loopback.nf_namespace());
        assert_eq!(c.get_program(), "latlab");
        assert_eq!(
            Placement::Loopback.nf_config().role,
            Role::Reflect {
                bind: SocketAddr::from(([127, 0, 0, 1], LOOPBACK_PORT))
            }
        );
        assert_eq!(DelaySpec::constant(0), DelaySpec::None);
    }
}
