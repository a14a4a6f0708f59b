//! Where and how a run was taken: the host, its clocks and the placement of the measuring
//! threads. Everything a reader needs to judge whether a tail is the machine's or the tool's.
//!
//! The structs here are plain data; `latlab-sys` fills them from the running system.

use serde::{Deserialize, Serialize};

/// Host and run provenance, stored in every result file.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    /// The host's static facts.
    pub host: HostInfo,
    /// The timebase used for this run and how it was established.
    pub timebase: Timebase,
    /// Each measuring thread: where it ran and under which policy.
    #[serde(default)]
    pub threads: Vec<ThreadPlacement>,
    /// Whether the process's memory was locked (`mlockall`) for the run.
    #[serde(default)]
    pub memory_locked: bool,
    /// UTC wall-clock time at which the run started, RFC 3339.
    pub started_utc: String,
    /// The CPUs' idle states (cpuidle) and the PM QoS target over the run; `None` in files
    /// written before latlab recorded them, or where the kernel exposes no cpuidle.
    #[serde(default)]
    pub idle: Option<IdleRecord>,
    /// The CPUs latlab isolated for the run (`--isolate`) and every change it made for
    /// that, all undone after the run; `None` when it isolated nothing (and in files
    /// written before latlab could).
    #[serde(default)]
    pub isolation: Option<IsolationRecord>,
}

/// What `--isolate` changed for a run (each change undone after it).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IsolationRecord {
    /// The isolated CPUs.
    pub cpus: Vec<u32>,
    /// The CPUs left for everything else.
    pub housekeeping: Vec<u32>,
    /// Each change made.
    #[serde(default)]
    pub changes: Vec<IsolationChange>,
    /// Each change the kernel refused (`IRQ 24 ACPI:Ged: effective affinity still 1`).
    #[serde(default)]
    pub refused: Vec<String>,
    /// Kernel command-line parameters that would isolate the CPUs from boot on (advice:
    /// latlab never applies them).
    #[serde(default)]
    pub boot_advice: Vec<String>,
}

/// One change `--isolate` made.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IsolationChange {
    /// `irq`, `workqueue`, `sysctl`, `cpuset`, `task` or `kthread`.
    pub kind: String,
    /// The change in words (`kernel.timer_migration 1 → 0`).
    pub what: String,
}

impl IsolationRecord {
    /// One line for terminals and reports: `isolated: CPU 1 (housekeeping 0): 3 irq, 1
    /// workqueue, 3 sysctl, 40 cpuset, 12 kthread changes, 2 refused; undone after the run`.
    pub fn summary(&self) -> String {
        let mut kinds: Vec<(&str, usize)> = Vec::new();
        for c in &self.changes {
            match kinds.iter_mut().find(|(k, _)| *k == c.kind) {
                Some((_, n)) => *n += 1,
                None => kinds.push((&c.kind, 1)),
            }
        }
        let counts: Vec<String> = kinds.iter().map(|(k, n)| format!("{n} {k}")).collect();
        let list = |v: &[u32]| v.iter().map(u32::to_string).collect::<Vec<_>>().join(",");
        format!(
            "isolated: CPU{} {} (housekeeping {}): {} change{}{}{}; undone after the run",
            if self.cpus.len() > 1 { "s" } else { "" },
            list(&self.cpus),
            list(&self.housekeeping),
            if counts.is_empty() {
                "no".to_string()
            } else {
                counts.join(", ")
            },
            if self.changes.len() == 1 { "" } else { "s" },
            if self.refused.is_empty() {
                String::new()
            } else {
                format!(", {} refused", self.refused.len())
            },
            if self.boot_advice.is_empty() {
                String::new()
            } else {
                format!("; boot-only: {}", self.boot_advice.join(" "))
            },
        )
    }
}

/// The CPUs' idle policy during a run: which idle states a CPU could enter, and how
/// often it did. On a virtual machine an idle state with an exit latency (e.g. `haltpoll`
/// with `guest_halt_poll_ns=0`: every idle CPU halts) can add tens of µs to each wake-up.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IdleRecord {
    /// The cpuidle driver, e.g. `haltpoll`, `intel_idle`, `acpi_idle`.
    pub driver: Option<String>,
    /// The cpuidle governor, e.g. `menu`, `teo`, `haltpoll`.
    pub governor: Option<String>,
    /// Each CPU's idle states at the start of the run.
    #[serde(default)]
    pub cpus: Vec<CpuIdle>,
    /// The `haltpoll` parameters (`guest_halt_poll_ns`, …) when that driver is loaded.
    #[serde(default)]
    pub haltpoll: Vec<(String, String)>,
    /// The PM QoS CPU latency target at the start (`/dev/cpu_dma_latency`), in µs;
    /// 2000000000 means no request is held by anyone.
    pub qos_target_us: Option<i32>,
    /// The target latlab itself held during the run (`--dma-latency`), in µs; `None` when
    /// latlab did not hold one.
    pub held_us: Option<u32>,
    /// Per CPU, the entries into each state during the run (usage at the end minus usage
    /// at the start), in the order of that CPU's `states`.
    #[serde(default)]
    pub entries: Vec<CpuIdleEntries>,
}

/// One CPU's idle states.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuIdle {
    /// The CPU number.
    pub cpu: u32,
    /// Its states, shallowest first (`state0`, `state1`, …).
    pub states: Vec<IdleState>,
}

/// One cpuidle state of one CPU (`/sys/devices/system/cpu/cpuN/cpuidle/stateK`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IdleState {
    /// `name`, e.g. `POLL`, `haltpoll idle`, `C1E`.
    pub name: String,
    /// `desc`.
    pub desc: String,
    /// `latency`: the exit latency, in µs.
    pub exit_latency_us: u64,
    /// `disable` is set (by the user, not by a PM QoS request).
    pub disabled: bool,
    /// `usage`: how many times the state was entered since boot.
    pub usage: u64,
    /// `time`: time spent in it since boot, in µs.
    pub time_us: u64,
}

/// One CPU's entries into each idle state during a run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuIdleEntries {
    /// The CPU number.
    pub cpu: u32,
    /// Entries per state, in the order of the CPU's states.
    pub entries: Vec<u64>,
}

impl IdleRecord {
    /// Whether, during the run, a CPU could enter an idle state whose exit latency is
    /// above zero: such a state is enabled and the QoS target (latlab's hold, else the
    /// target at the start) allows it.
    pub fn halting_allowed(&self) -> bool {
        let target = match self.held_us {
            Some(h) => Some(h as i64),
            None => self.qos_target_us.map(i64::from),
        };
        self.cpus.iter().flat_map(|c| &c.states).any(|s| {
            s.exit_latency_us > 0
                && !s.disabled
                && match target {
                    Some(t) => s.exit_latency_us as i64 <= t,
                    None => true,
                }
        })
    }

    /// The [`halts`](Self::halts) of every CPU together.
    pub fn total_halts(&self) -> u64 {
        self.halts().iter().map(|(_, n)| n).sum()
    }

    /// Per CPU, the entries during the run into states with an exit latency above zero
    /// (the ones that halt or sleep, not the polling state).
    pub fn halts(&self) -> Vec<(u32, u64)> {
        self.entries
            .iter()
            .map(|e| {
                let states = self
                    .cpus
                    .iter()
                    .find(|c| c.cpu == e.cpu)
                    .map(|c| c.states.as_slice())
                    .unwrap_or(&[]);
                let n = e
                    .entries
                    .iter()
                    .zip(states)
                    .filter(|(_, s)| s.exit_latency_us > 0)
                    .map(|(n, _)| *n)
                    .sum();
                (e.cpu, n)
            })
            .collect()
    }

    /// One line for terminals and reports, e.g. `idle: haltpoll, CPUs 0,1 halted
    /// 152,331 times during the run; not held` or `…; held at 0 µs`.
    pub fn summary(&self) -> String {
        let driver = self.driver.as_deref().unwrap_or("no cpuidle driver");
        let halts = self.halts();
        let counts = if halts.is_empty() {
            String::new()
        } else {
            let cpus: Vec<String> = halts.iter().map(|(c, _)| c.to_string()).collect();
            let ns: Vec<String> = halts.iter().map(|(_, n)| n.to_string()).collect();
            format!(
                ", CPU{} {} halted {} times during the run",
                if halts.len() > 1 { "s" } else { "" },
                cpus.join(","),
                ns.join(",")
            )
        };
        let held = match (self.held_us, self.qos_target_us) {
            (Some(us), _) => format!("held at {us} µs"),
            (None, Some(t)) if t < 2_000_000_000 => {
                format!("not held by latlab (QoS target {t} µs at the start)")
            }
            (None, _) => "not held".to_string(),
        };
        format!("idle: {driver}{counts}; {held}")
    }
}

/// Static facts about the host.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostInfo {
    /// `uname -n`.
    pub hostname: String,
    /// `uname -s -r`, e.g. `Linux 6.8.0`.
    pub kernel: String,
    /// `uname -v`, the kernel build string (preemption model shows here).
    pub kernel_version: String,
    /// `uname -m`.
    pub arch: String,
    /// CPU model name from `/proc/cpuinfo`.
    pub cpu_model: String,
    /// Online logical CPUs.
    pub cpus_online: u32,
    /// Whether SMT (hyper-threading) is active; `None` when the kernel does not say.
    pub smt_active: Option<bool>,
    /// Current clocksource (`/sys/devices/system/clocksource/clocksource0/current_clocksource`).
    pub clocksource: Option<String>,
    /// cpufreq governor of each CPU that has one, e.g. `performance`; empty when none exposed.
    #[serde(default)]
    pub governors: Vec<String>,
    /// The kernel command line.
    pub cmdline: String,
    /// `isolcpus=` from the command line, if present.
    pub isolcpus: Option<String>,
    /// `nohz_full=` from the command line, if present.
    pub nohz_full: Option<String>,
    /// The hypervisor, e.g. `KVM`, or `None` on bare metal.
    pub virtualization: Option<String>,
}

/// Which clock timestamps came from and how its rate was established.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Timebase {
    /// `"tsc"` or `"clock_monotonic"` (the fallback).
    pub source: String,
    /// Why the fallback was used; `None` when the TSC is in use.
    pub fallback_reason: Option<String>,
    /// Facts about the TSC, whether or not it was used.
    pub tsc: TscFacts,
}

/// TSC capabilities and rate.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TscFacts {
    /// The CPU has a TSC readable from user space (x86_64).
    pub present: bool,
    /// `rdtscp` is available (TSC and CPU number in one instruction).
    pub rdtscp: bool,
    /// `constant_tsc`: the rate does not follow CPU frequency changes.
    pub constant_tsc: bool,
    /// `nonstop_tsc`: the counter runs in deep C-states.
    pub nonstop_tsc: bool,
    /// `tsc_known_freq`: the kernel got the rate from the CPU or hypervisor, not by calibration.
    pub known_freq: bool,
    /// Invariant = constant and nonstop.
    pub invariant: bool,
    /// The rate used for conversions, in Hz.
    pub rate_hz: Option<u64>,
    /// Where `rate_hz` came from: `sysfs tsc_freq_khz`, `cpuid 0x15`, `cpuid 0x40000010`,
    /// `kernel log` or `calibration`.
    pub rate_source: Option<String>,
    /// The rate measured against `CLOCK_MONOTONIC_RAW`, in Hz.
    pub calibrated_hz: Option<u64>,
    /// The calibration window, in ns.
    pub calibration_window_ns: Option<u64>,
    /// Bound on the calibration's own error from the bracketing reads, in ppm.
    pub calibration_error_ppm: Option<f64>,
    /// Difference between the rate used and the calibrated one, in ppm (when both exist).
    pub rate_disagreement_ppm: Option<f64>,
}

/// Where one measuring thread ran.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadPlacement {
    /// What the thread did, e.g. `clock reader`.
    pub role: String,
    /// The CPU it was pinned to, `None` if it was free to migrate.
    pub pinned_cpu: Option<u32>,
    /// CPUs it was observed on (from `rdtscp`/`getcpu`), when known.
    #[serde(default)]
    pub observed_cpus: Vec<u32>,
    /// Scheduling policy, e.g. `SCHED_OTHER`, `SCHED_FIFO`.
    pub policy: String,
    /// Real-time priority (FIFO/RR) or nice value.
    pub priority: i32,
}

impl ThreadPlacement {
    /// A thread with the given role, pinned to `cpu` (and so observed there) or free to
    /// migrate, under `policy` at `priority`.
    pub fn pinned(
        role: impl Into<String>,
        cpu: Option<u32>,
        policy: impl Into<String>,
        priority: i32,
    ) -> ThreadPlacement {
        ThreadPlacement {
            role: role.into(),
            pinned_cpu: cpu,
            observed_cpus: cpu.into_iter().collect(),
            policy: policy.into(),
            priority,
        }
    }

    /// A thread that runs under `SCHED_FIFO` at `fifo` when given, else `SCHED_OTHER` at 0.
    pub fn with_fifo(
        role: impl Into<String>,
        cpu: Option<u32>,
        fifo: Option<i32>,
    ) -> ThreadPlacement {
        let policy = if fifo.is_some() {
            "SCHED_FIFO"
        } else {
            "SCHED_OTHER"
        };
        ThreadPlacement::pinned(role, cpu, policy, fifo.unwrap_or(0))
    }
}
