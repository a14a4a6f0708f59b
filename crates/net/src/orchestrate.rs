//! Running network functions and probes as `latlab` child processes, inside the testbed's
//! namespaces or on loopback: what `calibrate` and the `killer-us` experiment build on.
//!
//! An NF child is started with `--until-stdin-closes`; it prints `ready` once listening,
//! and writes its result when its standard input is closed.

use crate::testbed;
use latlab_core::results::ResultFile;
use latlab_core::units::Nanos;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};

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

fn command(exe: &Path, ns: Option<&str>) -> Command {
    match ns {
        Some(ns) => testbed::ns_command(ns, exe),
        None => Command::new(exe),
    }
}

/// A running NF child.
pub struct NfChild {
    child: Child,
    stdin: Option<ChildStdin>,
    result: PathBuf,
    what: String,
}

/// Starts an NF (`forward --testbed --direction a-to-b` or `reflect` on loopback) with
/// `extra` arguments, writing its result to `result`; returns once it is listening.
pub fn start_nf(
    exe: &Path,
    placement: Placement,
    extra: &[String],
    result: &Path,
) -> Result<NfChild, OrchestrateError> {
    let mut c = match placement {
        Placement::Testbed => {
            let mut c = command(exe, Some(testbed::NF_NS));
            c.args(["net", "forward", "--testbed", "--direction", "a-to-b"]);
            c
        }
        Placement::Loopback => {
            let mut c = command(exe, None);
            c.args(["net", "reflect", "--bind"])
                .arg(format!("127.0.0.1:{LOOPBACK_PORT}"));
            c
        }
    };
    c.args(extra)
        .args(["--until-stdin-closes", "--quiet", "-o"])
        .arg(result)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let what = format!("network function {}", extra.join(" "));
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

/// Probe settings an orchestrator varies.
#[derive(Clone, Debug)]
pub struct ProbeRun {
    /// Rate in milli-pps.
    pub milli_pps: u64,
    /// Measured duration.
    pub duration: Nanos,
    /// Warm-up.
    pub warmup: Nanos,
    /// `blocking` or `busy`.
    pub rx_io: &'static str,
    /// CPU for the generator's TX and RX threads.
    pub cpu: Option<u32>,
    /// `--timestamps` value.
    pub timestamps: &'static str,
    /// SCHED_FIFO priority of the generator's threads.
    pub fifo: Option<i32>,
    /// The NF configuration to record.
    pub nf_config: serde_json::Value,
}

/// Runs `latlab net probe` against the placement's NF and loads its result.
pub fn run_probe(
    exe: &Path,
    placement: Placement,
    p: &ProbeRun,
    result: &Path,
) -> Result<ResultFile, OrchestrateError> {
    let mut c = match placement {
        Placement::Testbed => {
            let mut c = command(exe, Some(testbed::GEN_NS));
            c.env("LATLAB_IN_NETNS", testbed::GEN_NS)
                .args(["net", "probe", "--testbed"]);
            c
        }
        Placement::Loopback => {
            let mut c = command(exe, None);
            c.args(["net", "probe", "--to"])
                .arg(format!("127.0.0.1:{LOOPBACK_PORT}"));
            c
        }
    };
    c.arg("--rate")
        .arg(format!(
            "{}.{:03}pps",
            p.milli_pps / 1000,
            p.milli_pps % 1000
        ))
        .arg("--duration")
        .arg(format!("{}ns", p.duration.get()))
        .arg("--warmup")
        .arg(format!("{}ns", p.warmup.get()))
        .args(["--rx-io", p.rx_io, "--timestamps", p.timestamps, "--quiet"])
        .arg("--nf-config")
        .arg(p.nf_config.to_string())
        .arg("-o")
        .arg(result);
    if let Some(prio) = p.fifo {
        c.args(["--fifo", &prio.to_string()]);
    }
    if let Some(cpu) = p.cpu {
        c.args(["--tx-cpu", &cpu.to_string(), "--rx-cpu", &cpu.to_string()]);
    }
    let out = c.output().map_err(|e| OrchestrateError::Child {
        what: "latlab net probe".into(),
        detail: e.to_string(),
    })?;
    if !out.status.success() {
        return Err(OrchestrateError::Child {
            what: "latlab net probe".into(),
            detail: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(ResultFile::load(result)?)
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
    if placement == Placement::Testbed {
        brought_up = !testbed::status().map(|s| s.complete).unwrap_or(false);
        testbed::up()?;
    }
    Ok(Prepared { brought_up })
}
