//! The data of `latlab experiment killer-us` ([`super::run()`]): its ladder, its methods
//! and the result's `data`. Kept apart from the run so that the
//! summary's text ([`super::headline`]) and the report's sections read it without
//! importing the module that runs the experiment.

use super::pace::HostFit;
use crate::nf::IoMode;
use crate::orchestrate::Placement;
use crate::probe::series;
use serde::{Deserialize, Serialize};

/// Result kind of the experiment's summary.
pub const RESULT_KIND: &str = "net.killer_us";

/// The NF configurations of the ladder.
pub const LADDER: [&str; 7] = [
    "default",
    "pinned",
    "pinned+busy",
    "pinned+busy+fifo",
    "hog",
    TESTPMD_RUNG,
    XDP_RUNG,
];

/// The rung where DPDK's testpmd is the NF ([`crate::testpmd`]: AF_PACKET poll-mode
/// driver, one busy-polling lcore on the NF's CPU), the paper's own NF.
pub const TESTPMD_RUNG: &str = "testpmd (DPDK, busy)";

/// The rung where latlab's forwarder runs over AF_XDP (busy-polled UMEM rings, pinned to
/// the NF's CPU, testbed only): kernel bypass inside Linux, beside testpmd's.
pub const XDP_RUNG: &str = "AF_XDP (latlab, busy)";

/// One NF configuration of the ladder: what it changes from the default NF.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    /// Its name in [`LADDER`].
    pub name: &'static str,
    /// NF threads pinned to the NF's CPU.
    pub pinned: bool,
    /// Busy-polling I/O instead of blocking receives.
    pub busy: bool,
    /// `SCHED_FIFO` priority of the NF threads.
    pub fifo: Option<i32>,
    /// A CPU hog spins on the NF's CPU.
    pub hog: bool,
    /// DPDK's testpmd instead of latlab's forwarder (testbed only).
    pub testpmd: bool,
    /// latlab's forwarder over AF_XDP instead of sockets (testbed and root only).
    pub xdp: bool,
}

/// The ladder's steps, in [`LADDER`] order.
pub const STEPS: [Step; 7] = [
    Step {
        name: "default",
        pinned: false,
        busy: false,
        fifo: None,
        hog: false,
        testpmd: false,
        xdp: false,
    },
    Step {
        name: "pinned",
        pinned: true,
        busy: false,
        fifo: None,
        hog: false,
        testpmd: false,
        xdp: false,
    },
    Step {
        name: "pinned+busy",
        pinned: true,
        busy: true,
        fifo: None,
        hog: false,
        testpmd: false,
        xdp: false,
    },
    Step {
        name: "pinned+busy+fifo",
        pinned: true,
        busy: true,
        fifo: Some(50),
        hog: false,
        testpmd: false,
        xdp: false,
    },
    Step {
        name: "hog",
        pinned: true,
        busy: true,
        fifo: None,
        hog: true,
        testpmd: false,
        xdp: false,
    },
    Step {
        name: TESTPMD_RUNG,
        pinned: true,
        busy: true,
        fifo: None,
        hog: false,
        testpmd: true,
        xdp: false,
    },
    Step {
        name: XDP_RUNG,
        pinned: true,
        busy: true,
        fifo: None,
        hog: false,
        testpmd: false,
        xdp: true,
    },
];

impl Step {
    /// The NF of this step at `placement`, its threads on `nf_cpu` when pinned.
    pub fn nf_config(&self, placement: Placement, nf_cpu: u32) -> crate::nf::NfConfig {
        let mut nf = placement.nf_config();
        if self.pinned {
            nf.cpus = vec![nf_cpu];
        }
        if self.busy {
            nf.io = IoMode::Busy;
        }
        if self.xdp {
            nf.io = IoMode::Xdp;
        }
        nf.fifo = self.fifo;
        nf
    }

    /// The name of this step's files: `pinned-busy`, `testpmd-DPDK-busy`.
    pub fn file_name(&self) -> String {
        let mut out = String::new();
        for w in self
            .name
            .split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|w| !w.is_empty())
        {
            if !out.is_empty() {
                out.push('-');
            }
            out.push_str(w);
        }
        out
    }

    /// The NF description the probe results record.
    pub(crate) fn describe(&self, loopback: bool, nf_cpu: u32) -> serde_json::Value {
        serde_json::json!({
            "config": self.name,
            "role": if loopback { "reflect" } else { "forward" },
            "io": if self.xdp { "xdp" } else if self.busy { "busy" } else { "blocking" },
            "cpu": self.pinned.then_some(nf_cpu),
            "fifo": self.fifo,
            "cpu_hog": self.hog,
            "engine": if self.testpmd { "testpmd" } else { "latlab" },
        })
    }
}

/// The methods: (name, description, which run, histogram). The run is the generator's
/// receive mode: `blocking` and `busy` send and receive through sockets, `xdp` sends and
/// receives whole frames over AF_XDP in one busy loop (testbed and root only).
pub const METHODS: [(&str, &str, &str, &str); 5] = [
    (
        "user-blocking",
        "user TSC, blocking receive (netperf-like)",
        "blocking",
        series::USER_ACTUAL,
    ),
    (
        "user-busy",
        "user TSC, busy-polling receive (TRex-like)",
        "busy",
        series::USER_ACTUAL,
    ),
    (
        "user-xdp",
        "kernel bypass, user TSC: AF_XDP generator (TRex/MoonGen-SW-like)",
        "xdp",
        series::USER_ACTUAL,
    ),
    (
        "kernel",
        "kernel software timestamps, driver to driver",
        "blocking",
        series::KERNEL,
    ),
    (
        "hardware",
        "NIC hardware timestamps",
        "blocking",
        series::HARDWARE,
    ),
];

/// The generator's modes, one run each per rung: (name, receive and send path). `xdp`
/// needs the testbed and root.
pub const GEN_MODES: [(&str, IoMode); 3] = [
    ("blocking", IoMode::Blocking),
    ("busy", IoMode::Busy),
    ("xdp", IoMode::Xdp),
];

/// One line of the summary table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SummaryRow {
    /// Method name.
    pub method: String,
    /// NF configuration.
    pub config: String,
    /// Samples.
    pub count: u64,
    /// p50, p99, p99.9, p99.99 in ns, each with whether it is supported.
    pub percentiles: Vec<(String, u64, bool)>,
    /// Maximum, ns.
    pub max_ns: u64,
}

/// With `--explain`: how much of one NF configuration's tail (its runs' samples above
/// their p99, both receive modes together) lay outside the system under test.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TailShare {
    /// NF configuration.
    pub config: String,
    /// The tail samples' time above the runs' medians, ns.
    pub excess_ns: u64,
    /// Of it, time outside the kernel (the thread lost its CPU and no kernel event covers
    /// it: the hypervisor), ns.
    pub outside_kernel_ns: u64,
    /// Of it, time other tasks (not latlab's threads) held the path's CPUs, ns.
    pub other_tasks_ns: u64,
}

impl TailShare {
    /// Adds one run's tail (its attribution, where it has one) to its NF configuration's share.
    pub fn add(shares: &mut Vec<TailShare>, conf: &str, r: &latlab_core::results::ResultFile) {
        let Some(a) = r.explain.as_ref() else {
            return;
        };
        if a.unavailable.is_some() {
            return;
        }
        let i = match shares.iter().position(|s| s.config == conf) {
            Some(i) => i,
            None => {
                shares.push(TailShare {
                    config: conf.to_string(),
                    ..Default::default()
                });
                shares.len() - 1
            }
        };
        let s = &mut shares[i];
        s.excess_ns += a.excess_ns;
        s.outside_kernel_ns += a.class_time_ns("outside_kernel");
        s.other_tasks_ns += a.class_time_ns("preempted");
    }

    /// The share of the excess outside the system under test (hypervisor and other
    /// tasks), 0..=1; 0 without excess.
    pub fn outside_share(&self) -> f64 {
        if self.excess_ns == 0 {
            0.0
        } else {
            (self.outside_kernel_ns + self.other_tasks_ns) as f64 / self.excess_ns as f64
        }
    }
}

/// Data of a `net.killer_us` result.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct KillerUsData {
    /// `testbed` or `loopback`.
    pub placement: String,
    /// The summary table.
    pub rows: Vec<SummaryRow>,
    /// Per NF configuration: the lowest percentile from which the methods disagree by
    /// more than 1 µs (`None` when they agree up to the highest supported percentile).
    pub disagreement: Vec<(String, Option<String>)>,
    /// The same among the methods that time the same span (user send → user receive:
    /// `user-blocking` and `user-busy`); the kernel and hardware methods leave the host
    /// stacks out, so they differ from the user methods from the median on by design.
    #[serde(default)]
    pub disagreement_same_span: Vec<(String, Option<String>)>,
    /// Every probe and NF result file.
    pub files: Vec<String>,
    /// The CCDF figures, one per method.
    pub figures: Vec<String>,
    /// Notes.
    pub notes: Vec<String>,
    /// With `--explain`: per run, how much of its tail (the samples above its p99) lay
    /// outside the system under test (outside the kernel: the hypervisor), one line each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tails: Vec<String>,
    /// With `--explain`: per NF configuration, its tail's time outside the system under
    /// test; the headline uses it to tell a rung this host cannot rank.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tail_shares: Vec<TailShare>,
    /// What the experiment checked of the host and chose (CPUs, rate, duration), and why.
    #[serde(default)]
    pub host_fit: Option<HostFit>,
    /// NF configurations of the ladder that could not be measured meaningfully here,
    /// with the reason (e.g. SCHED_FIFO without root).
    #[serde(default)]
    pub not_measured: Vec<(String, String)>,
    /// What was done about real-time throttling, per NF configuration that needed it.
    #[serde(default)]
    pub rt_throttle: Vec<(String, String)>,
    /// The kept runs whose generator fell behind its schedule (after any repeat): their
    /// latencies include the generator's own delay, so the headline says which rungs
    /// could not be measured cleanly at the chosen rate.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub behind: Vec<BehindRun>,
}

/// A kept run whose generator fell behind its schedule.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BehindRun {
    /// Its NF configuration (a rung of [`LADDER`]).
    pub config: String,
    /// The run's name (`<step>.rx-<mode>`).
    pub run: String,
    /// Its lateness p99, ns.
    pub lateness_p99_ns: u64,
}

/// One warning for every run whose generator fell behind (instead of one per run): how
/// many, which, how late.
pub fn behind_warning(behind: &[BehindRun], runs: usize, milli_pps: u64) -> String {
    let lo = behind.iter().map(|b| b.lateness_p99_ns).min().unwrap_or(0);
    let hi = behind.iter().map(|b| b.lateness_p99_ns).max().unwrap_or(0);
    let names: Vec<&str> = behind.iter().map(|b| b.run.as_str()).collect();
    format!(
        "GENERATOR FELL BEHIND in {} of {runs} runs ({}): lateness p99 {} against a mean gap of {}, although a trial before the ladder kept the schedule at this rate — the host got busier; latencies of these runs include the generator's own delay. Rerun when the host is quieter, or at a lower --rate",
        behind.len(),
        names.join(", "),
        if lo == hi {
            latlab_core::units::format_ns(lo as f64)
        } else {
            format!("{} to {}", latlab_core::units::format_ns(lo as f64), latlab_core::units::format_ns(hi as f64))
        },
        latlab_core::units::format_ns(1e12 / milli_pps.max(1) as f64)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_steps_are_the_ladder() {
        let names: Vec<&str> = STEPS.iter().map(|s| s.name).collect();
        assert_eq!(names, LADDER);
        let files: Vec<String> = STEPS.iter().map(Step::file_name).collect();
        assert_eq!(
            files,
            [
                "default",
                "pinned",
                "pinned-busy",
                "pinned-busy-fifo",
                "hog",
                "testpmd-DPDK-busy",
                "AF-XDP-latlab-busy"
            ]
        );
        assert!(STEPS
            .iter()
            .filter(|s| s.testpmd)
            .all(|s| s.busy && s.pinned));
        // the AF_XDP rung's NF is latlab's forwarder over AF_XDP, pinned to the NF's CPU
        let xdp: Vec<&Step> = STEPS.iter().filter(|s| s.xdp).collect();
        assert_eq!(xdp.len(), 1);
        let nf = xdp[0].nf_config(Placement::Testbed, 3);
        assert_eq!(
            (nf.io, nf.cpus.clone(), nf.fifo),
            (IoMode::Xdp, vec![3], None)
        );
        assert_eq!(xdp[0].describe(false, 3)["io"], "xdp");
        // every method reads a run the ladder makes
        for (m, _, run, _) in METHODS {
            assert!(
                GEN_MODES.iter().any(|(g, _)| *g == run),
                "{m} reads run {run}"
            );
        }
    }
}
