//! The data a run produces and the trace, result, analysis and exports read: the TSC
//! anchor, blocks of CPU time, activations, each thread's record and the run's outcome.
//! Shared by [`crate::run`] (which fills them) and [`crate::trace`], [`crate::result`],
//! [`crate::analyze`] (which read them), so none of those needs another's internals.

use crate::recorder::{EndReason, LoopCalibration};
use crate::spec::{RunSpec, ThreadSpec};
use latlab_sys::clocks::monotonic_ns;
use latlab_sys::tsc;
use serde::{Deserialize, Serialize};

/// Converts between the TSC and `CLOCK_MONOTONIC` around one anchor point.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Anchor {
    /// TSC at the anchor.
    pub tsc: u64,
    /// `CLOCK_MONOTONIC` ns at the anchor.
    pub mono_ns: u64,
    /// TSC rate, Hz.
    pub hz: u64,
}

impl Anchor {
    /// Takes the anchor now: the tightest of 16 (tsc, monotonic, tsc) brackets.
    pub fn now(hz: u64) -> Anchor {
        let mut best = (u64::MAX, 0, 0);
        for _ in 0..16 {
            let a = tsc::read().0;
            let m = monotonic_ns();
            let b = tsc::read().0;
            if b.wrapping_sub(a) < best.0 {
                best = (b.wrapping_sub(a), m, a + (b - a) / 2);
            }
        }
        Anchor {
            tsc: best.2,
            mono_ns: best.1,
            hz,
        }
    }

    /// The TSC reading at monotonic time `mono_ns`.
    pub fn tsc_of(&self, mono_ns: u64) -> u64 {
        let d = i128::from(mono_ns) - i128::from(self.mono_ns);
        (i128::from(self.tsc) + d * i128::from(self.hz) / 1_000_000_000) as u64
    }

    /// The monotonic time of TSC reading `t`.
    pub fn mono_of(&self, t: u64) -> u64 {
        let d = i128::from(t) - i128::from(self.tsc);
        (i128::from(self.mono_ns) + d * 1_000_000_000 / i128::from(self.hz)) as u64
    }

    /// Ticks in `ns` nanoseconds.
    pub fn ticks(&self, ns: u64) -> u64 {
        (u128::from(ns) * u128::from(self.hz) / 1_000_000_000) as u64
    }
}

/// One block of CPU time, in ns from the run's start.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Block {
    /// Thread number.
    pub thread: u32,
    /// CPU it ran on.
    pub cpu: u32,
    /// Start, ns from the run's start.
    pub start_ns: u64,
    /// End, ns from the run's start.
    pub end_ns: u64,
    /// Why it ended.
    pub end: EndReason,
}

/// One activation of a periodic, CPU_PERIODIC or LAT thread, in ns from the run's start.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Activation {
    /// Activation number, from 0.
    pub index: u64,
    /// Release: the start of its period (LAT: the wakeup time asked for).
    pub release_ns: u64,
    /// When the job first ran after its release (LAT: when the thread woke).
    pub start_ns: u64,
    /// When it had received its amount of CPU (`None`: never, the run ended first).
    pub finish_ns: Option<u64>,
    /// Absolute deadline (the end of its period; LAT: the wakeup time asked for).
    pub deadline_ns: u64,
    /// CPU received in the job by its deadline, ns (CPU_PERIODIC: in the period).
    pub cpu_by_deadline_ns: u64,
    /// Whether the thread slept until the release (false: it was still catching up with
    /// earlier jobs, so `start - release` is backlog, not dispatch latency).
    pub waited: bool,
    /// Frames completed in the period (CPU_PERIODIC only).
    pub frames: u32,
}

impl Activation {
    /// Whether the deadline was met (CPU_PERIODIC: at least one frame in the period).
    pub fn hit(&self, model_is_cpu_periodic: bool) -> bool {
        if model_is_cpu_periodic {
            self.frames > 0
        } else {
            self.finish_ns.is_some_and(|f| f <= self.deadline_ns)
        }
    }
}

/// Everything one thread recorded, converted to ns from the run's start.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ThreadRun {
    /// The thread's specification.
    pub spec: ThreadSpec,
    /// Kernel thread id.
    pub tid: i32,
    /// The policy it ran under, as the kernel reports it, e.g. `SCHED_FIFO` 95.
    pub policy: String,
    /// Its priority (FIFO) or nice value.
    pub priority: i32,
    /// Timer slack in force, ns.
    pub timer_slack_ns: u64,
    /// Gap threshold used, ns.
    pub gap_ns: f64,
    /// Blocks of CPU time recorded (empty for LAT).
    #[serde(skip)]
    pub blocks: Vec<Block>,
    /// Capacity of its trace buffer, blocks.
    pub capacity: u64,
    /// Blocks that did not fit in the buffer.
    pub dropped: u64,
    /// CPU changes seen.
    pub migrations: u64,
    /// CPUs it ran on.
    pub cpus: Vec<u32>,
    /// Activations (periodic, CPU_PERIODIC, LAT).
    #[serde(skip)]
    pub activations: Vec<Activation>,
    /// Activations that did not fit in the activation buffer.
    pub activations_dropped: u64,
    /// timerfd expirations read (TIMERFD timer), counted exactly.
    pub timerfd_expirations: Option<u64>,
    /// Full passes over the scanned array (CPU_SCAN*: the unit of work).
    pub scan_passes: u64,
    /// Cache lines (64 bytes) read by the scan (CPU_SCAN*: the unit of work, exact to
    /// the line, unlike passes).
    #[serde(default)]
    pub scan_lines: u64,
    /// `sched_yield` calls.
    pub yields: u64,
    /// Voluntary context switches during its life (`getrusage`).
    pub voluntary_switches: u64,
    /// Involuntary context switches during its life.
    pub involuntary_switches: u64,
    /// Total CPU time received by the recorder's account, ns.
    pub cpu_received_ns: u64,
}

/// The outcome of a run.
#[derive(Clone, Debug)]
pub struct RunOutcome {
    /// The spec that ran.
    pub spec: RunSpec,
    /// Per thread, in id order.
    pub threads: Vec<ThreadRun>,
    /// Calibration evidence of every loop kind used.
    pub calibrations: Vec<LoopCalibration>,
    /// The run's start (t0) as `CLOCK_MONOTONIC` ns and its TSC anchor.
    pub anchor: Anchor,
    /// t0 in TSC ticks.
    pub t0_tsc: u64,
    /// Warnings (unlocked buffers, ...).
    pub warnings: Vec<String>,
    /// 1-minute load average before and after the run.
    pub loadavg: Option<(f64, f64)>,
}
