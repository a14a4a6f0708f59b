//! The attribution of a result's excess time to causes (`latlab explain`), stored in the
//! result file's optional `explain` field (schema version 2; see `docs/results.md`).

use serde::{Deserialize, Serialize};

/// Time and occurrences of one cause.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CauseTime {
    /// The class: `irq`, `softirq`, `timer`, `ipi`, `preempted`, `workqueue`, `nmi`,
    /// `rt_throttling`, `own_thread`, `softirq_deferred`, `outside_kernel` or
    /// `unexplained`.
    pub class: String,
    /// Within the class: the IRQ's name, the softirq vector, the hrtimer function, the
    /// IPI kind, the preempting task's comm, the work function; empty where the class has
    /// no names.
    pub name: String,
    /// Windows (gaps, samples) this cause overlapped.
    pub count: u64,
    /// Time of the windows it accounts for, ns.
    pub time_ns: u64,
}

impl CauseTime {
    /// A cause of `class` and `name` that overlapped `count` windows for `time_ns`.
    pub fn new(
        class: impl Into<String>,
        name: impl Into<String>,
        count: u64,
        time_ns: u64,
    ) -> CauseTime {
        CauseTime {
            class: class.into(),
            name: name.into(),
            count,
            time_ns,
        }
    }
}

/// One of the worst windows, with what lay under it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorstWindow {
    /// The CPU the window was observed on.
    pub cpu: u32,
    /// Its start, raw TSC.
    pub start_tsc: u64,
    /// Its length, ns.
    pub duration_ns: u64,
    /// Its time split by cause, largest first.
    pub causes: Vec<CauseTime>,
    /// The kernel events that overlapped it, one short line each (offset from the window's
    /// start, what, how long).
    pub events: Vec<String>,
    /// Where in the window each cause's time lay: the pieces of the CPU's timeline under
    /// it (innermost cause wins), clipped to the window, in time order. Absent in files
    /// written before it was recorded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub spans: Vec<CauseSpan>,
    /// Spans left out of `spans` because the window had more than the cap (the shortest
    /// go first): how many (0 when none were, and in files written before the cap).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub spans_omitted: u64,
    /// Their time in all, ns.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub spans_omitted_ns: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A piece of a worst window owned by one kernel cause, relative to the window's start.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CauseSpan {
    /// The cause's class (as in [`CauseTime::class`]).
    pub class: String,
    /// The cause's name (as in [`CauseTime::name`]).
    pub name: String,
    /// Start, ns after the window's start.
    pub start_ns: u64,
    /// End, ns after the window's start (`>= start_ns`, at most the window's length).
    pub end_ns: u64,
}

/// The attributed windows whose length ranks between two percentiles of all the
/// attributed windows' lengths (`p90`–`p99`, …, above `p99.99`), with their time by cause.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Band {
    /// The lower edge, e.g. `p99`: the band holds the windows ranked above it.
    pub from: String,
    /// The upper edge, e.g. `p99.9` (the window at that rank included); empty for the top
    /// band (everything above `from`).
    pub to: String,
    /// Whether the window count supports both edges (at least 10 windows beyond each, the
    /// rule of `latlab_core::stats::is_supported`); an unsupported band's split is shown
    /// flagged, never as a plain figure.
    pub supported: bool,
    /// Windows in the band.
    pub windows: u64,
    /// The shortest and longest window in it, ns (0 when empty).
    pub min_ns: u64,
    /// See `min_ns`.
    pub max_ns: u64,
    /// The excess time of its windows, ns.
    pub excess_ns: u64,
    /// Its causes ranked by time as [`Attribution::causes`] (count = windows of the band
    /// the cause overlapped).
    pub causes: Vec<CauseTime>,
}

impl Band {
    /// `p90–p99`, `above p99.99`.
    pub fn label(&self) -> String {
        if self.to.is_empty() {
            format!("above {}", self.from)
        } else {
            format!("{}–{}", self.from, self.to)
        }
    }
}

/// Where a result's excess time went.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attribution {
    /// False when kernel events were lost or unavailable: the split is then partial.
    pub complete: bool,
    /// Kernel events lost (ring overruns, drops).
    pub lost_events: u64,
    /// Windows attributed.
    pub windows: u64,
    /// Excess time of all windows, ns.
    pub excess_ns: u64,
    /// The part of it with a cause (every class but `unexplained`), ns.
    pub explained_ns: u64,
    /// Causes ranked by time, largest first (`unexplained` included).
    pub causes: Vec<CauseTime>,
    /// The worst windows, longest first.
    pub worst: Vec<WorstWindow>,
    /// Asked-for kernel events this kernel does not have.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing_events: Vec<String>,
    /// Why kernel events were not recorded at all, when they were not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
    /// The windows by length in percentile bands (`p90`–`p99`, `p99`–`p99.9`,
    /// `p99.9`–`p99.99`, above `p99.99`), each with its time by cause. Absent in files
    /// written before bands were recorded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bands: Vec<Band>,
    /// Steal time per CPU over the run (`/proc/stat` after minus before): the
    /// hypervisor's own account of time it ran something else, the cross-check for
    /// *outside the kernel*. Absent when not read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steal: Vec<CpuSteal>,
    /// How the kernel events were read: `trace_pipe_raw` (streamed during the run) or
    /// `text (why)` (each CPU's `trace` read after the run: asked for, or why the binary
    /// path could not be set up). Absent without kernel events and in older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reader: Option<String>,
}

/// Steal time of one CPU over a run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuSteal {
    /// The CPU.
    pub cpu: u32,
    /// Steal time, ns (the kernel counts it in USER_HZ ticks, 10 ms here).
    pub ns: u64,
    /// The time the kernel events show this CPU not running while a task ran there
    /// (*outside the kernel (vCPU not running)*: silent past its tick) over the whole
    /// run, ns; the figure to hold against `ns`. 0 where none was found, where the
    /// recording could not show it (one watched thread, events lost or filtered), and in
    /// files written before it was recorded.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub silent_ns: u64,
}

impl CpuSteal {
    /// Steal over a run from per-CPU readings before and after, ns.
    pub fn between(before: &[(u32, u64)], after: &[(u32, u64)]) -> Vec<CpuSteal> {
        after
            .iter()
            .filter_map(|&(cpu, a)| {
                let b = before.iter().find(|(c, _)| *c == cpu)?.1;
                Some(CpuSteal {
                    cpu,
                    ns: a.saturating_sub(b),
                    silent_ns: 0,
                })
            })
            .collect()
    }
}

impl Attribution {
    /// Share of the excess that has a cause, 0..=1 (0 when there is no excess).
    pub fn explained_share(&self) -> f64 {
        if self.excess_ns == 0 {
            0.0
        } else {
            self.explained_ns as f64 / self.excess_ns as f64
        }
    }

    /// Time attributed to `class` (all names), ns.
    pub fn class_time_ns(&self, class: &str) -> u64 {
        self.causes
            .iter()
            .filter(|c| c.class == class)
            .map(|c| c.time_ns)
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_and_class_totals() {
        let a = Attribution {
            excess_ns: 1000,
            explained_ns: 900,
            causes: vec![
                CauseTime::new("irq", "virtio1", 2, 500),
                CauseTime::new("irq", "eth0", 1, 400),
                CauseTime::new("unexplained", "", 1, 100),
            ],
            ..Attribution::default()
        };
        assert!((a.explained_share() - 0.9).abs() < 1e-12);
        assert_eq!(a.class_time_ns("irq"), 900);
        assert_eq!(Attribution::default().explained_share(), 0.0);
        let json = serde_json::to_string(&a).unwrap();
        assert!(!json.contains("unavailable"), "{json}");
        let back: Attribution = serde_json::from_str(&json).unwrap();
        assert_eq!(back, a);
    }
}
