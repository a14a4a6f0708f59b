//! The attribution of a result's excess time to causes (`latlab explain`), stored in the
//! result file's optional `explain` field (schema version 2; see `docs/results.md`).

use serde::{Deserialize, Serialize};

/// Time and occurrences of one cause.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CauseTime {
    /// The class: `irq`, `softirq`, `timer`, `ipi`, `preempted`, `workqueue`, `nmi`,
    /// `outside_kernel` or `unexplained`.
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
                CauseTime {
                    class: "irq".into(),
                    name: "virtio1".into(),
                    count: 2,
                    time_ns: 500,
                },
                CauseTime {
                    class: "irq".into(),
                    name: "eth0".into(),
                    count: 1,
                    time_ns: 400,
                },
                CauseTime {
                    class: "unexplained".into(),
                    name: String::new(),
                    count: 1,
                    time_ns: 100,
                },
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
