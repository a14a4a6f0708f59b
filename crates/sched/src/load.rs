//! Background load sources: what the experiment runs beside a thread set to see how the
//! scheduler treats it under load. Each [`LoadSource`] starts a [`RunningLoad`], which is
//! stopped (or dropped, on an error path) and says what it delivered.
//!
//! - [`FsLoad`]: processes reading files over and over (page cache, syscalls), as the
//!   paper's recursive greps did.
//! - [`UdpFlood`]: a UDP sender and receiver over loopback pinned to one CPU.
//! - [`TestbedTraffic`]: the `latlab net` testbed: a forwarder pinned to one CPU and an
//!   open-loop generator on another (needs root).

use crate::error::Error;
use latlab_core::results::ResultFile;
use latlab_core::units::Nanos;
use latlab_net::orchestrate::{self, NfChild, OrchestrateError, Placement, Prepared, ProbeJob};
use latlab_sys::sched;
use std::net::UdpSocket;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// What a load got through while it ran (zero where the source does not measure it).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Delivered {
    /// Packets per second that made it through (testbed only).
    pub pps: f64,
    /// Throughput, Mbit/s (of frames on the testbed, of UDP payload on loopback).
    pub mbps: f64,
    /// Packets lost in the measured part (testbed only).
    pub lost: u64,
}

/// A background load that can be started.
pub trait LoadSource {
    /// Starts the load; it runs until the returned handle is stopped or dropped.
    ///
    /// # Errors
    /// When the load could not be started; nothing is left running then.
    fn start(&self) -> Result<Box<dyn RunningLoad>, Error>;
}

/// A load that is running.
pub trait RunningLoad {
    /// Stops the load and says what it delivered in `measured_ns` of measured time.
    ///
    /// # Errors
    /// When the load failed while it ran.
    fn stop(self: Box<Self>, measured_ns: u64) -> Result<Delivered, Error>;
}

/// `processes` loops each running `grep -r` over `/usr` for a string that is not there:
/// file-system and page-cache work, and syscalls. Each loop is a thread of latlab that
/// starts one `grep` after another ([`FS_LOAD_ARGV`]); stopping kills the running `grep`
/// at once, and a `grep` dies with its thread however latlab ends
/// ([`latlab_sys::process::die_with_spawning_thread`]). (A `sh -c 'while :; do grep …;
/// done'` loop killed at the stop left its current `grep`, ~10 s of scanning `/usr`,
/// running into the next scenario.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FsLoad {
    /// Processes to run.
    pub processes: usize,
}

/// The command each [`FsLoad`] loop runs, again and again.
pub const FS_LOAD_ARGV: [&str; 4] = ["grep", "-r", "latlab-no-such-string", "/usr"];

struct RunningFs {
    stop: Arc<AtomicBool>,
    loops: Vec<JoinHandle<std::io::Result<()>>>,
}

/// One loop: `grep` after `grep` until `stop`, polling the running one every 20 ms.
fn fs_loop(stop: &AtomicBool) -> std::io::Result<()> {
    while !stop.load(Ordering::Relaxed) {
        let mut cmd = Command::new(FS_LOAD_ARGV[0]);
        cmd.args(&FS_LOAD_ARGV[1..])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        latlab_sys::process::die_with_spawning_thread(&mut cmd);
        let mut grep = cmd.spawn()?;
        loop {
            if stop.load(Ordering::Relaxed) {
                let _ = grep.kill();
                let _ = grep.wait();
                return Ok(());
            }
            if grep.try_wait()?.is_some() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
    Ok(())
}

impl LoadSource for FsLoad {
    fn start(&self) -> Result<Box<dyn RunningLoad>, Error> {
        let mut running = RunningFs {
            stop: Arc::new(AtomicBool::new(false)),
            loops: Vec::new(),
        };
        for _ in 0..self.processes {
            let stop = Arc::clone(&running.stop);
            let h = std::thread::Builder::new()
                .name("latlab-fs-load".into())
                .spawn(move || fs_loop(&stop))
                .map_err(|e| Error::io("starting the file-system load (grep -r /usr)", e))?;
            running.loops.push(h);
        }
        Ok(Box::new(running))
    }
}

impl RunningFs {
    /// Stops every loop (killing its `grep`) and waits for them; the first failure.
    fn halt(&mut self) -> std::io::Result<()> {
        self.stop.store(true, Ordering::Relaxed);
        let mut first = Ok(());
        for h in self.loops.drain(..) {
            let r = h
                .join()
                .unwrap_or_else(|_| Err(std::io::Error::other("a load thread panicked")));
            if first.is_ok() {
                first = r;
            }
        }
        first
    }
}

impl RunningLoad for RunningFs {
    fn stop(mut self: Box<Self>, _measured_ns: u64) -> Result<Delivered, Error> {
        self.halt()
            .map_err(|e| Error::io("the file-system load (grep -r /usr)", e))?;
        Ok(Delivered::default())
    }
}

impl Drop for RunningFs {
    fn drop(&mut self) {
        let _ = self.halt();
    }
}

/// A UDP flood over loopback: a sender and a receiver, both pinned to `cpu`, so that the
/// packet processing competes with whatever else runs there. Delivers the receiver's
/// throughput.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UdpFlood {
    /// The CPU of both threads.
    pub cpu: u32,
}

struct RunningFlood {
    stop: Arc<AtomicBool>,
    bytes: Arc<AtomicU64>,
    handles: Vec<JoinHandle<()>>,
}

impl LoadSource for UdpFlood {
    fn start(&self) -> Result<Box<dyn RunningLoad>, Error> {
        let io = |e| Error::io("setting up the UDP flood over loopback", e);
        let cpu = self.cpu;
        let rx = UdpSocket::bind("127.0.0.1:0").map_err(io)?;
        rx.set_read_timeout(Some(std::time::Duration::from_millis(50)))
            .map_err(io)?;
        let addr = rx.local_addr().map_err(io)?;
        let tx = UdpSocket::bind("127.0.0.1:0").map_err(io)?;
        let stop = Arc::new(AtomicBool::new(false));
        let bytes = Arc::new(AtomicU64::new(0));
        let (s1, b1) = (Arc::clone(&stop), Arc::clone(&bytes));
        let r = std::thread::spawn(move || {
            let _ = sched::pin_current_thread(cpu);
            let mut buf = [0u8; 2048];
            while !s1.load(Ordering::Relaxed) {
                if let Ok(n) = rx.recv(&mut buf) {
                    b1.fetch_add(n as u64, Ordering::Relaxed);
                }
            }
        });
        let s2 = Arc::clone(&stop);
        let t = std::thread::spawn(move || {
            let _ = sched::pin_current_thread(cpu);
            let buf = [0x5au8; 1400];
            while !s2.load(Ordering::Relaxed) {
                let _ = tx.send_to(&buf, addr);
            }
        });
        Ok(Box::new(RunningFlood {
            stop,
            bytes,
            handles: vec![r, t],
        }))
    }
}

impl RunningFlood {
    fn halt(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for h in self.handles.drain(..) {
            let _ = h.join();
        }
    }
}

impl RunningLoad for RunningFlood {
    fn stop(mut self: Box<Self>, measured_ns: u64) -> Result<Delivered, Error> {
        self.halt();
        let bytes = self.bytes.load(Ordering::Relaxed);
        Ok(Delivered {
            pps: 0.0,
            mbps: bytes as f64 * 8.0 / (measured_ns as f64 / 1e9) / 1e6,
            lost: 0,
        })
    }
}

impl Drop for RunningFlood {
    fn drop(&mut self) {
        self.halt();
    }
}

/// Traffic through the `latlab net` testbed: a forwarder (blocking receive) pinned to
/// `nf_cpu`, and an open-loop generator on `gen_cpu` offering 64-byte probes at
/// `milli_pps` for `duration_ns` after a `warmup_ns` warm-up; the generator ends by
/// itself. Starting it brings the testbed up (as root) and waits out the warm-up;
/// stopping it takes the testbed down again if it was not up before.
#[derive(Clone, Debug, PartialEq)]
pub struct TestbedTraffic {
    /// The `latlab` binary the forwarder and the generator run as.
    pub exe: PathBuf,
    /// The forwarder's CPU.
    pub nf_cpu: u32,
    /// The generator's CPU.
    pub gen_cpu: u32,
    /// Offered rate, milli-pps.
    pub milli_pps: u64,
    /// Measured duration of the generator, ns.
    pub duration_ns: u64,
    /// The generator's warm-up, ns.
    pub warmup_ns: u64,
    /// Where the forwarder writes its result.
    pub nf_result: PathBuf,
    /// Where the generator writes its result.
    pub probe_result: PathBuf,
    /// What the traffic is for (recorded in the generator's NF configuration).
    pub purpose: String,
}

struct RunningTestbed {
    nf: NfChild,
    probe: JoinHandle<Result<ResultFile, OrchestrateError>>,
    /// Takes the testbed down when dropped if this run brought it up.
    prepared: Prepared,
}

impl LoadSource for TestbedTraffic {
    fn start(&self) -> Result<Box<dyn RunningLoad>, Error> {
        let prepared = orchestrate::prepare(Placement::Testbed)?;
        let mut nf_cfg = Placement::Testbed.nf_config();
        nf_cfg.cpus = vec![self.nf_cpu];
        let nf = orchestrate::start_nf(&self.exe, Placement::Testbed, &nf_cfg, &self.nf_result)?;
        let mut probe = Placement::Testbed.probe_config();
        probe.milli_pps = self.milli_pps;
        probe.duration = Nanos(self.duration_ns);
        probe.warmup = Nanos(self.warmup_ns);
        probe.tx_cpu = Some(self.gen_cpu);
        probe.rx_cpu = Some(self.gen_cpu);
        probe.sources = latlab_net::probe::Sources::USER;
        let run = ProbeJob {
            nf: Some(serde_json::json!({
                "role": "forward", "io": "blocking", "cpu": self.nf_cpu, "fifo": null,
                "purpose": self.purpose
            })),
            ..ProbeJob::new(
                probe
                    .validated()
                    .map_err(|e| Error::Config(e.to_string()))?,
            )
        };
        let (exe, path) = (self.exe.clone(), self.probe_result.clone());
        let probe = std::thread::spawn(move || {
            orchestrate::run_probe(&exe, Placement::Testbed, &run, &path)
        });
        // let the generator get past its warm-up before the caller measures
        std::thread::sleep(std::time::Duration::from_nanos(
            self.warmup_ns + 100_000_000,
        ));
        Ok(Box::new(RunningTestbed {
            nf,
            probe,
            prepared,
        }))
    }
}

impl RunningLoad for RunningTestbed {
    fn stop(self: Box<Self>, _measured_ns: u64) -> Result<Delivered, Error> {
        let RunningTestbed {
            nf,
            probe,
            prepared,
        } = *self;
        let pr = probe.join().map_err(|_| OrchestrateError::Child {
            what: "latlab net probe".into(),
            detail: "the generator thread panicked".into(),
        });
        let nf_res = nf.finish();
        drop(prepared);
        let pr = pr??;
        nf_res?;
        let c = |k: &str| pr.counters.get(k).copied().unwrap_or(0);
        let measured = c("received_unique").saturating_sub(c("received_warmup"));
        let secs = pr.duration_ns.max(1) as f64 / 1e9;
        let pps = measured as f64 / secs;
        Ok(Delivered {
            pps,
            // the probes are 64-byte Ethernet frames
            mbps: pps * 64.0 * 8.0 / 1e6,
            lost: c("lost_measured"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_udp_flood_delivers_and_stops() {
        let cpu = *sched::allowed_cpus().first().unwrap();
        let running = UdpFlood { cpu }.start().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(100));
        let d = running.stop(100_000_000).unwrap();
        assert!(d.mbps > 0.0, "{d:?}");
        assert_eq!((d.pps, d.lost), (0.0, 0));
    }

    /// The processes running the file-system load's `grep`, whoever's children they are
    /// (a `grep` orphaned by a killed shell loop counts too).
    fn load_greps() -> usize {
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter(|e| {
                let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
                let argv: Vec<&[u8]> = cmd.split(|&b| b == 0).collect();
                argv.len() >= 4
                    && argv[0].ends_with(b"grep")
                    && argv[2] == FS_LOAD_ARGV[2].as_bytes()
            })
            .count()
    }

    /// Waits up to 10 s for `n` load greps to run.
    fn until_greps(n: usize) {
        let t0 = std::time::Instant::now();
        while load_greps() < n {
            assert!(t0.elapsed().as_secs() < 10, "fewer than {n} greps started");
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }

    #[test]
    fn a_file_system_load_starts_and_is_taken_down() {
        assert_eq!(load_greps(), 0, "a load grep runs already");
        let running = FsLoad { processes: 2 }.start().unwrap();
        until_greps(2);
        assert_eq!(running.stop(0).unwrap(), Delivered::default());
        assert_eq!(load_greps(), 0, "a grep outlived the stop");
        // dropped without stop (an error path): the processes are killed too
        let running = FsLoad { processes: 1 }.start().unwrap();
        until_greps(1);
        drop(running);
        assert_eq!(load_greps(), 0, "a grep outlived the drop");
    }
}
