//! One run of the killer-us ladder: a rung's NF (latlab's or testpmd, with a CPU hog where
//! the rung asks) and a probe against it; and why a rung or generator mode cannot run here.

use super::data::Step;
use super::outcome::ExperimentError;
use crate::nf::IoMode;
use crate::orchestrate::{self, Placement, ProbeJob};
use crate::probe::Sources;
use latlab_core::results::ResultFile;
use latlab_core::units::Nanos;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A CPU hog: a thread spinning on `cpu` until dropped.
struct Hog {
    stop: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl Hog {
    fn start(cpu: u32) -> Hog {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let handle = std::thread::spawn(move || {
            let _ = latlab_sys::sched::pin_current_thread(cpu);
            let mut x = 0u64;
            while !s.load(Ordering::Relaxed) {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                std::hint::black_box(x);
            }
        });
        Hog {
            stop,
            handle: Some(handle),
        }
    }
}

impl Drop for Hog {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// One NF + probe run: where it goes and how it is paced.
pub(super) struct RunPlan<'a> {
    pub exe: &'a Path,
    pub dir: &'a Path,
    pub placement: Placement,
    pub gen_cpu: u32,
    pub nf_cpu: u32,
    pub gen_fifo: Option<i32>,
    /// `--explain` for the probe (the rate trials run with it too: the recorder costs the
    /// generator time, and the rate they choose must hold for the ladder).
    pub explain: crate::explain::ExplainSpec,
}

impl RunPlan<'_> {
    /// Runs the NF of `step` and a probe against it (the generator's mode `gen_io`: its
    /// receive path, and with [`IoMode::Xdp`] its send path too) at `milli_pps`
    /// for `duration` after `warmup`, writing `nf-NAME.json` and `probe-NAME.json` (with
    /// `prefix`); returns the probe's result and both files.
    #[allow(clippy::too_many_arguments)]
    pub fn run(
        &self,
        step: &Step,
        loopback: bool,
        name: &str,
        gen_io: IoMode,
        milli_pps: u64,
        duration: Nanos,
        warmup: Nanos,
        sources: Sources,
    ) -> Result<(ResultFile, [PathBuf; 2]), ExperimentError> {
        let nf_path = self.dir.join(format!("nf-{name}.json"));
        let probe_path = self.dir.join(format!("probe-{name}.json"));
        let hog = step.hog.then(|| Hog::start(self.nf_cpu));
        let started = (
            latlab_sys::host::utc_now_rfc3339(),
            std::time::Instant::now(),
        );
        let nf = if step.testpmd {
            RungNf::Testpmd(crate::testpmd::Testpmd::start(
                crate::testpmd::Pmd::AfPacket,
                self.nf_cpu,
            )?)
        } else {
            RungNf::Latlab(orchestrate::start_nf(
                self.exe,
                self.placement,
                &step.nf_config(self.placement, self.nf_cpu),
                &nf_path,
            )?)
        };
        let mut probe = if step.testpmd {
            crate::testpmd::probe_config()
        } else {
            self.placement.probe_config()
        };
        probe.milli_pps = milli_pps;
        probe.duration = duration;
        probe.warmup = warmup;
        // xdp: whole frames over AF_XDP both ways, one busy loop (user stamps only)
        probe.rx_io = gen_io;
        if gen_io == IoMode::Xdp {
            probe.tx_io = IoMode::Xdp;
        }
        probe.tx_cpu = Some(self.gen_cpu);
        probe.rx_cpu = Some(self.gen_cpu);
        probe.fifo = self.gen_fifo;
        probe.sources = if gen_io == IoMode::Xdp {
            Sources::USER
        } else {
            sources
        };
        // every source this host can give: hardware where the interfaces have it
        probe.hardware_optional = true;
        probe.explain = self.explain;
        let pr = ProbeJob {
            nf: Some(step.describe(loopback, self.nf_cpu)),
            ..ProbeJob::new(probe.validated()?)
        };
        let res = orchestrate::run_probe(self.exe, self.placement, &pr, &probe_path);
        let mut forwarded = None;
        let nf_res = match nf {
            RungNf::Latlab(nf) => nf.finish().map(|_| ()).map_err(ExperimentError::from),
            RungNf::Testpmd(nf) => nf.stop().map_err(ExperimentError::from).and_then(|run| {
                let ns = Nanos::from(started.1.elapsed()).get();
                let argv = vec!["dpdk-testpmd".to_string()];
                let r = crate::testpmd::result(&run, argv, started.0, ns);
                forwarded = r.counters.get("sent").copied();
                Ok(r.save(&nf_path)?)
            }),
        };
        drop(hog);
        let mut res = res?;
        nf_res?;
        // testpmd's own count must cover what the generator received, or some probes did
        // not pass through it (seen intermittently; see docs/net.md)
        let received = res.counters.get("received_unique").copied().unwrap_or(0);
        if let Some(w) = crate::testpmd::bypass_warning(forwarded, received) {
            res.warnings.push(w);
            res.save(&probe_path)?;
        }
        Ok((res, [nf_path, probe_path]))
    }
}

/// The NF of one rung: latlab's, as a child, or testpmd.
enum RungNf {
    Latlab(orchestrate::NfChild),
    Testpmd(crate::testpmd::Testpmd),
}

/// Why `step` cannot run here (`None`: it can).
pub(super) fn rung_unavailable(step: &Step, loopback: bool, root: bool) -> Option<String> {
    if step.testpmd {
        if loopback {
            return Some(
                "testpmd forwards between the testbed's veths; this run is on loopback".into(),
            );
        }
        return crate::testpmd::program().err().map(|e| e.to_string());
    }
    if step.xdp {
        return mode_unavailable(IoMode::Xdp, loopback, root).map(str::to_string);
    }
    None
}

/// Why the generator cannot run in mode `io` here (`None`: it can).
pub(super) fn mode_unavailable(io: IoMode, loopback: bool, root: bool) -> Option<&'static str> {
    match io {
        IoMode::Xdp if loopback => {
            Some("AF_XDP needs the testbed's veths; this run is on loopback")
        }
        IoMode::Xdp if !root => Some("AF_XDP sockets and their XDP program need root"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::super::data::STEPS;
    use super::*;

    #[test]
    fn the_kernel_bypass_parts_need_the_testbed_and_root() {
        let xdp_step = STEPS.iter().find(|s| s.xdp).unwrap();
        let socket_step = &STEPS[0];
        for (loopback, root) in [(true, true), (true, false), (false, false)] {
            assert!(rung_unavailable(xdp_step, loopback, root).is_some());
            assert!(mode_unavailable(IoMode::Xdp, loopback, root).is_some());
        }
        assert_eq!(rung_unavailable(xdp_step, false, true), None);
        assert_eq!(mode_unavailable(IoMode::Xdp, false, true), None);
        for (loopback, root) in [(true, true), (true, false), (false, false), (false, true)] {
            assert_eq!(rung_unavailable(socket_step, loopback, root), None);
            assert_eq!(mode_unavailable(IoMode::Busy, loopback, root), None);
            assert_eq!(mode_unavailable(IoMode::Blocking, loopback, root), None);
        }
        let why = rung_unavailable(xdp_step, true, true).unwrap();
        assert!(why.contains("loopback"), "{why}");
        assert!(mode_unavailable(IoMode::Xdp, false, false)
            .unwrap()
            .contains("root"));
    }
}
