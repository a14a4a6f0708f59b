//! What a run is made of: threads with an execution model, a priority or reservation, a
//! timer and a placement. Plain data, filled by the Hourglass command line
//! ([`crate::cmdline`]) or a scenario file ([`crate::scenario`]).

use latlab_core::units::Nanos;
use serde::{Deserialize, Serialize};

/// A thread's priority (`-p`). Timesharing levels are nice values, real-time levels
/// `SCHED_FIFO` priorities (see [`Priority::policy`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Priority {
    /// `SCHED_IDLE`.
    Idle,
    /// `SCHED_OTHER`, nice 10.
    Low,
    /// `SCHED_OTHER`, nice 0 (the default).
    Normal,
    /// `SCHED_OTHER`, nice -10.
    High,
    /// `SCHED_OTHER`, nice -20.
    Highest,
    /// `SCHED_FIFO` 10.
    Rtlow,
    /// `SCHED_FIFO` 50.
    Rtmed,
    /// `SCHED_FIFO` 95 (as cyclictest's and rtla's measuring threads; 99 is left to the
    /// kernel's housekeeping).
    Rthigh,
}

/// The policy a [`Priority`] maps to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// `SCHED_IDLE`.
    Idle,
    /// `SCHED_OTHER` at this nice value.
    Nice(i32),
    /// `SCHED_FIFO` at this priority.
    Fifo(u32),
}

impl Priority {
    /// Every level, in the order of the paper's usage text.
    pub const ALL: [Priority; 8] = [
        Priority::Idle,
        Priority::Low,
        Priority::Normal,
        Priority::High,
        Priority::Highest,
        Priority::Rtlow,
        Priority::Rtmed,
        Priority::Rthigh,
    ];

    /// The name on the command line, e.g. `RTHIGH`.
    pub fn name(self) -> &'static str {
        match self {
            Priority::Idle => "IDLE",
            Priority::Low => "LOW",
            Priority::Normal => "NORMAL",
            Priority::High => "HIGH",
            Priority::Highest => "HIGHEST",
            Priority::Rtlow => "RTLOW",
            Priority::Rtmed => "RTMED",
            Priority::Rthigh => "RTHIGH",
        }
    }

    /// Parses a name (case-insensitive).
    pub fn from_name(s: &str) -> Option<Priority> {
        Priority::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(s))
    }

    /// The Linux policy this level maps to.
    pub fn policy(self) -> Policy {
        match self {
            Priority::Idle => Policy::Idle,
            Priority::Low => Policy::Nice(10),
            Priority::Normal => Policy::Nice(0),
            Priority::High => Policy::Nice(-10),
            Priority::Highest => Policy::Nice(-20),
            Priority::Rtlow => Policy::Fifo(10),
            Priority::Rtmed => Policy::Fifo(50),
            Priority::Rthigh => Policy::Fifo(95),
        }
    }

    /// A rank for fixed-priority analysis: higher runs first. Pure.
    pub fn rank(self) -> i32 {
        match self.policy() {
            Policy::Idle => -100,
            Policy::Nice(n) => -n - 40,
            Policy::Fifo(p) => p as i32,
        }
    }
}

/// A CPU reservation (`-rh` hard, `-rs` soft) → `SCHED_DEADLINE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reservation {
    /// Budget per period, ns.
    pub amount_ns: u64,
    /// Period (and relative deadline), ns.
    pub period_ns: u64,
    /// Soft (`-rs`): `SCHED_FLAG_RECLAIM`, may use idle bandwidth beyond the budget.
    pub soft: bool,
}

/// A thread execution model (`-w`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "model", rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Workload {
    /// Always runnable, records its execution map.
    Cpu,
    /// CPU-bound and scanning an array of `kb` KiB, one cache line per loop iteration.
    CpuScan {
        /// Array size, KiB.
        kb: u64,
    },
    /// CPU-bound, yields after each `amount_ns` of CPU received.
    CpuYield {
        /// CPU time between yields, ns.
        amount_ns: u64,
    },
    /// Scanning and yielding.
    CpuScanYield {
        /// Array size, KiB.
        kb: u64,
        /// CPU time between yields, ns.
        amount_ns: u64,
    },
    /// Needs `amount_ns` of CPU in every `period_ns`, blocking on its timer in between; a
    /// job not done by the end of its period is a deadline miss. Jobs are never skipped:
    /// a late job is followed at once by the next one (catch-up).
    Periodic {
        /// CPU per period, ns.
        amount_ns: u64,
        /// Period and relative deadline, ns.
        period_ns: u64,
    },
    /// Never blocks: a frame is done every `amount_ns` of CPU; each period without a frame
    /// completed in it is a miss.
    CpuPeriodic {
        /// CPU per frame, ns.
        amount_ns: u64,
        /// Period, ns.
        period_ns: u64,
    },
    /// Dispatch-latency test: sleeps `period_ns` from each wakeup and records how late it
    /// woke. Records no execution map.
    Lat {
        /// Sleep, ns.
        period_ns: u64,
    },
}

impl Workload {
    /// The model's name as on the command line.
    pub fn name(&self) -> &'static str {
        match self {
            Workload::Cpu => "CPU",
            Workload::CpuScan { .. } => "CPU_SCAN",
            Workload::CpuYield { .. } => "CPU_YIELD",
            Workload::CpuScanYield { .. } => "CPU_SCAN_YIELD",
            Workload::Periodic { .. } => "PERIODIC",
            Workload::CpuPeriodic { .. } => "CPU_PERIODIC",
            Workload::Lat { .. } => "LAT",
        }
    }

    /// The model with its parameters, e.g. `PERIODIC 4ms 5ms`.
    pub fn describe(&self) -> String {
        let d = |ns: u64| latlab_core::units::format_ns(ns as f64);
        match *self {
            Workload::Cpu => "CPU".into(),
            Workload::CpuScan { kb } => format!("CPU_SCAN {kb}KB"),
            Workload::CpuYield { amount_ns } => format!("CPU_YIELD {}", d(amount_ns)),
            Workload::CpuScanYield { kb, amount_ns } => {
                format!("CPU_SCAN_YIELD {kb}KB {}", d(amount_ns))
            }
            Workload::Periodic {
                amount_ns,
                period_ns,
            } => format!("PERIODIC {} {}", d(amount_ns), d(period_ns)),
            Workload::CpuPeriodic {
                amount_ns,
                period_ns,
            } => format!("CPU_PERIODIC {} {}", d(amount_ns), d(period_ns)),
            Workload::Lat { period_ns } => format!("LAT {}", d(period_ns)),
        }
    }

    /// Whether the model never blocks or yields by itself.
    pub fn never_blocks(&self) -> bool {
        matches!(
            self,
            Workload::Cpu | Workload::CpuScan { .. } | Workload::CpuPeriodic { .. }
        )
    }

    /// Whether the model yields the CPU voluntarily.
    pub fn yields(&self) -> bool {
        matches!(
            self,
            Workload::CpuYield { .. } | Workload::CpuScanYield { .. }
        )
    }

    /// The array size scanned, KiB, if any.
    pub fn scan_kb(&self) -> Option<u64> {
        match *self {
            Workload::CpuScan { kb } | Workload::CpuScanYield { kb, .. } => Some(kb),
            _ => None,
        }
    }
}

/// How a thread waits for a time (`-i`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Timer {
    /// Relative `nanosleep` to the time (the paper's `usleep`).
    Native,
    /// `clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)`.
    Hr,
    /// A `timerfd` (absolute, periodic for periodic models; expirations counted).
    Timerfd,
    /// Spin until the time.
    Busy,
}

impl Timer {
    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Timer::Native => "NATIVE",
            Timer::Hr => "HR",
            Timer::Timerfd => "TIMERFD",
            Timer::Busy => "BUSY",
        }
    }

    /// Parses a timer name; the paper's `RTC` and `MM` give an error naming the modern
    /// equivalent.
    pub fn from_name(s: &str) -> Result<Timer, String> {
        match s.to_ascii_uppercase().as_str() {
            "NATIVE" => Ok(Timer::Native),
            "HR" => Ok(Timer::Hr),
            "TIMERFD" => Ok(Timer::Timerfd),
            "BUSY" => Ok(Timer::Busy),
            "RTC" => Err(
                "RTC (/dev/rtc periodic interrupts) is obsolete on Linux: every \
                          sleep is an hrtimer now; use HR (clock_nanosleep TIMER_ABSTIME) or \
                          TIMERFD"
                    .into(),
            ),
            "MM" => Err(
                "MM (Win32 multimedia timers) does not exist on Linux; use HR \
                         (clock_nanosleep TIMER_ABSTIME) or TIMERFD"
                    .into(),
            ),
            _ => Err(format!(
                "unknown timer '{s}'; accepted: NATIVE, HR, TIMERFD, BUSY"
            )),
        }
    }
}

/// One thread of a run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadSpec {
    /// Thread number, 0-based.
    pub id: u32,
    /// Priority.
    pub priority: Priority,
    /// Execution model.
    pub workload: Workload,
    /// Timer.
    pub timer: Timer,
    /// Start offset into the run, ns.
    pub start_ns: u64,
    /// Finish offset into the run, ns (`None`: the run's end).
    pub finish_ns: Option<u64>,
    /// CPU reservation, instead of the priority.
    pub reservation: Option<Reservation>,
    /// CPU to pin to (`None`: free to migrate).
    pub cpu: Option<u32>,
}

impl ThreadSpec {
    /// Thread `id` with every default: NORMAL, CPU, NATIVE, whole run, free.
    pub fn new(id: u32) -> ThreadSpec {
        ThreadSpec {
            id,
            priority: Priority::Normal,
            workload: Workload::Cpu,
            timer: Timer::Native,
            start_ns: 0,
            finish_ns: None,
            reservation: None,
            cpu: None,
        }
    }

    /// The policy description, e.g. `SCHED_FIFO 95` or `SCHED_DEADLINE 3ms/8ms`.
    pub fn policy_label(&self) -> String {
        if let Some(r) = self.reservation {
            return format!(
                "SCHED_DEADLINE{} {}/{}",
                if r.soft { " reclaim" } else { "" },
                latlab_core::units::format_ns(r.amount_ns as f64),
                latlab_core::units::format_ns(r.period_ns as f64)
            );
        }
        match self.priority.policy() {
            Policy::Idle => "SCHED_IDLE".into(),
            Policy::Nice(n) => format!("SCHED_OTHER nice {n}"),
            Policy::Fifo(p) => format!("SCHED_FIFO {p}"),
        }
    }
}

/// A whole run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunSpec {
    /// The threads, ids 0..n.
    pub threads: Vec<ThreadSpec>,
    /// Run length, ns (`-d`, default 10 s).
    pub duration_ns: u64,
    /// Trace records in all (`-e`, default 300,000), shared equally by the recording
    /// threads.
    pub records: u64,
    /// Also print the raw trace in TSC cycles (`-c`).
    pub raw_cycles: bool,
    /// Gap threshold, ns (`--gap`; `None`: calibrated).
    pub gap_ns: Option<u64>,
    /// Timer slack to set on every thread, ns (`--timer-slack`; `None`: leave as is).
    pub timer_slack_ns: Option<u64>,
    /// Hold `/dev/cpu_dma_latency` at this many µs during the run (`--dma-latency`, as
    /// cyclictest does with 0 by default and rtla with `--dma-latency`): keeps CPUs out of
    /// deep idle states, which changes wakeup latency (by µs in a haltpoll guest).
    #[serde(default)]
    pub dma_latency_us: Option<u32>,
}

impl RunSpec {
    /// Hourglass's defaults.
    pub const DEFAULT_DURATION: Nanos = Nanos::from_secs(10);
    /// Hourglass's default trace size (about 5 MB in 2002).
    pub const DEFAULT_RECORDS: u64 = 300_000;
}
