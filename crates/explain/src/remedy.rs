//! The remedy table: for each cause an attribution names, the change that removes it from
//! a set of CPUs — a run-time change latlab can make and undo (`--isolate`, `latlab host
//! isolate`), or a kernel boot parameter when only a reboot can (printed as advice, never
//! applied) — with the kernel documentation of the knob. One place, pure: `latlab explain
//! --advise` and the report's "Why the tail" section read it; docs/host.md lists it.
//!
//! It is keyed on the cause's class and name as results store them (`irq`, `softirq`,
//! `timer`, `ipi`, `workqueue`, `preempted`, `nmi`, `outside_kernel`, `unexplained`).
//! A new cause class gets its arm in [`remedy`]; until it has one it falls to
//! [`Kind::Unknown`], which says so instead of guessing.

use latlab_core::results::{Attribution, CauseTime};

/// What kind of change removes a cause.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A change at run time, which latlab makes and undoes.
    Runtime,
    /// A kernel command-line parameter: only a reboot applies it.
    BootOnly,
    /// Nothing on this host removes it (the hypervisor, the workload itself), or latlab
    /// cannot tell what would.
    Elsewhere,
    /// A cause class this table has no row for yet.
    Unknown,
}

impl Kind {
    /// The word printed.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Runtime => "runtime",
            Kind::BootOnly => "boot-only",
            Kind::Elsewhere => "elsewhere",
            Kind::Unknown => "unknown",
        }
    }
}

/// The change that removes one cause from CPUs `cpus`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Remedy {
    /// Runtime, boot-only, or elsewhere.
    pub kind: Kind,
    /// The exact flag, command or parameter.
    pub change: String,
    /// The knob it sets.
    pub knob: &'static str,
    /// The kernel documentation of the knob.
    pub doc: &'static str,
}

const IRQ_DOC: &str = "Documentation/core-api/irq/irq-affinity.rst";
const WQ_DOC: &str = "Documentation/core-api/workqueue.rst (Affinity Scopes; /sys/devices/virtual/workqueue/cpumask)";
const CPUSET_DOC: &str =
    "Documentation/admin-guide/cgroup-v1/cpusets.rst; cgroup-v2.rst (cpuset.cpus.partition)";
const RT_DOC: &str = "Documentation/scheduler/sched-rt-group.rst";
const TIMER_DOC: &str = "Documentation/admin-guide/sysctl/kernel.rst (timer_migration)";
const VMSTAT_DOC: &str = "Documentation/admin-guide/sysctl/vm.rst (stat_interval)";
const NOHZ_DOC: &str =
    "Documentation/timers/no_hz.rst; admin-guide/kernel-parameters.txt (nohz_full)";
const RCU_DOC: &str = "Documentation/admin-guide/kernel-parameters.txt (rcu_nocbs)";
const ISOLCPUS_DOC: &str = "Documentation/admin-guide/kernel-parameters.txt (isolcpus)";
const NMI_DOC: &str = "Documentation/admin-guide/sysctl/kernel.rst (nmi_watchdog)";

fn runtime(change: String, knob: &'static str, doc: &'static str) -> Remedy {
    Remedy {
        kind: Kind::Runtime,
        change,
        knob,
        doc,
    }
}

fn boot(change: String, knob: &'static str, doc: &'static str) -> Remedy {
    Remedy {
        kind: Kind::BootOnly,
        change,
        knob,
        doc,
    }
}

fn elsewhere(change: &str, knob: &'static str) -> Remedy {
    Remedy {
        kind: Kind::Elsewhere,
        change: change.to_string(),
        knob,
        doc: "",
    }
}

/// The remedy for a cause of `class` named `name` on CPUs `cpus` (a kernel CPU list such
/// as `1` or `2-3`).
pub fn remedy(class: &str, name: &str, cpus: &str) -> Remedy {
    let iso = format!("--isolate {cpus} (or `latlab host isolate --cpus {cpus} -- CMD`)");
    match class {
        "irq" => runtime(iso, "/proc/irq/N/smp_affinity_list (checked against effective_affinity_list; a managed IRQ refuses: boot isolcpus=managed_irq)", IRQ_DOC),
        "softirq" => match name {
            "RCU" => boot(format!("rcu_nocbs={cpus} (with nohz_full={cpus})"), "rcu_nocbs", RCU_DOC),
            "TIMER" | "HRTIMER" | "SCHED" => boot(format!("nohz_full={cpus}"), "nohz_full (the tick)", NOHZ_DOC),
            // NET_RX, NET_TX, BLOCK, TASKLET, IRQ_POLL: run where their interrupt ran
            _ => runtime(iso, "the raising device IRQ's /proc/irq/N/smp_affinity_list", IRQ_DOC),
        },
        "timer" => match name {
            "local_timer" | "tick_nohz_handler" | "tick_sched_timer" | "" => {
                boot(format!("nohz_full={cpus}"), "nohz_full (the tick)", NOHZ_DOC)
            }
            _ => runtime(iso, "kernel.timer_migration = 0", TIMER_DOC),
        },
        "ipi" => match name {
            "reschedule" => runtime(iso, "other tasks moved off (cpuset), so none wakes there", CPUSET_DOC),
            _ => boot(format!("isolcpus=domain,managed_irq,{cpus} nohz_full={cpus}"), "isolcpus", ISOLCPUS_DOC),
        },
        "workqueue" => match name {
            "vmstat_update" => runtime(iso, "vm.stat_interval = 10 (per-CPU work: rarer, not moved)", VMSTAT_DOC),
            _ => runtime(iso, "/sys/devices/virtual/workqueue/cpumask (unbound work)", WQ_DOC),
        },
        "preempted" => preempted(name, cpus, iso),
        "nmi" => runtime("sysctl -w kernel.nmi_watchdog=0 (not applied by --isolate)".into(), "kernel.nmi_watchdog", NMI_DOC),
        "outside_kernel" => elsewhere(
            "the vCPU was not running: dedicate and pin host CPUs to this guest's vCPUs (outside this kernel)",
            "the hypervisor's vCPU placement",
        ),
        "unexplained" => elsewhere("no cause named: nothing to change", ""),
        // cause classes named since this table was written get their rows here
        other if other.contains("throttl") => rt_throttling(iso),
        other if other.contains("hypervisor") || other.contains("vcpu") || other.contains("steal") => remedy("outside_kernel", name, cpus),
        other if other.contains("ksoftirqd") => preempted("ksoftirqd", cpus, iso),
        other if other.contains("own") || other.contains("contention") => elsewhere(
            "latlab's own threads shared a CPU: give each its own CPU (--cpu, --tx-cpu, --rx-cpu)",
            "thread placement",
        ),
        _ => Remedy {
            kind: Kind::Unknown,
            change: format!("no remedy known for cause class {class}"),
            knob: "",
            doc: "",
        },
    }
}

fn rt_throttling(iso: String) -> Remedy {
    runtime(
        format!("{iso}, or --no-rt-throttle"),
        "kernel.sched_rt_runtime_us = -1",
        RT_DOC,
    )
}

/// A task that ran instead of the measured thread.
fn preempted(name: &str, cpus: &str, iso: String) -> Remedy {
    let base = name.split('/').next().unwrap_or(name);
    match base {
        // the idle task ran while the measured SCHED_FIFO thread was runnable: it was
        // throttled
        "swapper" => rt_throttling(iso),
        "ksoftirqd" => runtime(iso, "the device IRQs whose softirqs it runs: /proc/irq/N/smp_affinity_list", IRQ_DOC),
        "kworker" if name.starts_with("kworker/u") => runtime(iso, "/sys/devices/virtual/workqueue/cpumask (unbound work)", WQ_DOC),
        "kworker" => boot(format!("isolcpus=domain,{cpus} nohz_full={cpus} (per-CPU work stays)"), "isolcpus", ISOLCPUS_DOC),
        "rcuc" | "rcuog" | "rcuop" | "rcu_preempt" | "rcu_sched" => boot(format!("rcu_nocbs={cpus}"), "rcu_nocbs", RCU_DOC),
        "migration" | "cpuhp" | "idle_inject" => elsewhere("a per-CPU kernel thread of the scheduler: stays", ""),
        n if n.starts_with("latlab") => elsewhere(
            "latlab's own thread: give each measuring thread its own CPU (--cpu, --tx-cpu, --rx-cpu)",
            "thread placement",
        ),
        _ => runtime(iso, "other tasks moved into a cpuset of the other CPUs (cgroup v1 cpuset; v2 cpuset.cpus.partition)", CPUSET_DOC),
    }
}

/// One line of advice: a cause, its share of the excess, and its remedy.
#[derive(Clone, Debug, PartialEq)]
pub struct Advice {
    /// The cause as printed (`irq (virtio1-req.0)`).
    pub cause: String,
    /// Its time, ns.
    pub time_ns: u64,
    /// Its share of the excess, 0–1.
    pub share: f64,
    /// What removes it.
    pub remedy: Remedy,
}

/// The CPUs an attribution's tail was on: those of its worst windows, as a kernel CPU
/// list (`CPUS` when it has none).
pub fn tail_cpus(a: &Attribution) -> String {
    let mut cpus: Vec<u32> = a.worst.iter().map(|w| w.cpu).collect();
    cpus.sort_unstable();
    cpus.dedup();
    if cpus.is_empty() {
        return "CPUS".into();
    }
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        out.push(if i == j {
            cpus[i].to_string()
        } else {
            format!("{}-{}", cpus[i], cpus[j])
        });
        i = j + 1;
    }
    out.join(",")
}

/// Advice for the `top` causes of `a` by time (the ones with time), largest first.
pub fn advise(a: &Attribution, top: usize) -> Vec<Advice> {
    let cpus = tail_cpus(a);
    let mut causes: Vec<&CauseTime> = a.causes.iter().filter(|c| c.time_ns > 0).collect();
    causes.sort_by_key(|c| std::cmp::Reverse(c.time_ns));
    causes
        .into_iter()
        .take(top)
        .map(|c| Advice {
            cause: crate::class::label(&c.class, &c.name),
            time_ns: c.time_ns,
            share: if a.excess_ns == 0 {
                0.0
            } else {
                c.time_ns as f64 / a.excess_ns as f64
            },
            remedy: remedy(&c.class, &c.name, &cpus),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_class_gets_its_knob() {
        let r = remedy("irq", "virtio1-req.0", "1");
        assert_eq!(r.kind, Kind::Runtime);
        assert!(r.change.starts_with("--isolate 1"), "{}", r.change);
        assert_eq!(r.doc, IRQ_DOC);
        assert_eq!(remedy("timer", "local_timer", "1").change, "nohz_full=1");
        assert_eq!(remedy("timer", "local_timer", "1").kind, Kind::BootOnly);
        assert_eq!(remedy("softirq", "RCU", "2-3").kind, Kind::BootOnly);
        assert!(remedy("softirq", "RCU", "2-3")
            .change
            .starts_with("rcu_nocbs=2-3"));
        assert_eq!(remedy("softirq", "NET_RX", "1").kind, Kind::Runtime);
        assert_eq!(remedy("workqueue", "gc_worker", "1").doc, WQ_DOC);
        assert_eq!(remedy("workqueue", "vmstat_update", "1").doc, VMSTAT_DOC);
        assert_eq!(remedy("outside_kernel", "", "1").kind, Kind::Elsewhere);
        assert_eq!(
            remedy("nmi", "perf_event_nmi_handler", "1").knob,
            "kernel.nmi_watchdog"
        );
        assert_eq!(remedy("something_new", "", "1").kind, Kind::Unknown);
    }

    #[test]
    fn preempting_tasks_are_told_apart() {
        let knob = |n: &str| remedy("preempted", n, "1").knob;
        assert_eq!(knob("swapper/1"), "kernel.sched_rt_runtime_us = -1");
        assert!(remedy("preempted", "swapper/1", "1")
            .change
            .ends_with("--no-rt-throttle"));
        assert!(knob("bash").contains("cpuset"));
        assert!(knob("kworker/u4:2").contains("workqueue/cpumask"));
        assert_eq!(remedy("preempted", "kworker/1:1", "1").kind, Kind::BootOnly);
        assert_eq!(remedy("preempted", "rcuc/1", "1").kind, Kind::BootOnly);
        assert_eq!(remedy("preempted", "latlab-rx", "1").kind, Kind::Elsewhere);
        assert_eq!(remedy("preempted", "ksoftirqd/1", "1").doc, IRQ_DOC);
    }

    #[test]
    fn advice_ranks_causes_with_their_share_on_the_tail_cpus() {
        let ct = |class: &str, name: &str, time_ns| CauseTime {
            class: class.into(),
            name: name.into(),
            count: 1,
            time_ns,
        };
        let a = Attribution {
            excess_ns: 1000,
            causes: vec![
                ct("timer", "local_timer", 100),
                ct("preempted", "swapper/1", 840),
                ct("irq", "virtio1-req.0", 0),
            ],
            worst: vec![latlab_core::results::WorstWindow {
                cpu: 1,
                ..Default::default()
            }],
            ..Default::default()
        };
        let v = advise(&a, 5);
        assert_eq!(v.len(), 2, "a cause without time gets no advice");
        assert_eq!(v[0].cause, "preempted by task (swapper/1)");
        assert!((v[0].share - 0.84).abs() < 1e-9);
        assert!(v[0].remedy.change.starts_with("--isolate 1 "));
        assert_eq!(v[1].remedy.change, "nohz_full=1");
        assert_eq!(tail_cpus(&Attribution::default()), "CPUS");
        let mut b = a.clone();
        for c in [0, 2, 3, 2] {
            b.worst.push(latlab_core::results::WorstWindow {
                cpu: c,
                ..Default::default()
            });
        }
        assert_eq!(tail_cpus(&b), "0-3");
    }
}
