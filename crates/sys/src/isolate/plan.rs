//! What isolating CPUs changes, decided from a [`Snapshot`] of the system: pure, so that
//! every rule is tested without root and `--dry-run` lists exactly what a run would do.

use crate::journal::entry::{format_cpu_mask, PF_KTHREAD, PF_NO_SETAFFINITY};
use crate::sched::format_cpu_list;
use std::path::PathBuf;

/// One device interrupt (`/proc/irq/N`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Irq {
    /// Its number.
    pub number: u32,
    /// Its action's name (`virtio1-req.0`), empty when it has none.
    pub name: String,
    /// `smp_affinity_list`.
    pub affinity: Vec<u32>,
    /// `effective_affinity_list`, where the kernel has it.
    pub effective: Option<Vec<u32>>,
}

/// One task (thread).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Task {
    /// Thread id.
    pub tid: i32,
    /// Its process id.
    pub pid: i32,
    /// Its name.
    pub comm: String,
    /// `/proc/TID/stat` flags (kernel thread, no affinity changes).
    pub flags: u64,
    /// The CPUs it may run on.
    pub affinity: Vec<u32>,
}

/// A cgroup v1 `cpuset` hierarchy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpusetV1 {
    /// Its root directory (`/sys/fs/cgroup/cpuset`).
    pub root: PathBuf,
    /// The root's `cpuset.mems`.
    pub mems: String,
    /// The processes in the root cpuset (`cgroup.procs`).
    pub procs: Vec<i32>,
}

/// What the system looks like before isolating.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// Online CPUs.
    pub online: Vec<u32>,
    /// Device interrupts.
    pub irqs: Vec<Irq>,
    /// `/proc/irq/default_smp_affinity` (hex mask) where readable.
    pub default_irq_mask: Option<String>,
    /// Unbound-workqueue cpumask files (the global one first) and their hex values.
    pub wq_masks: Vec<(PathBuf, String)>,
    /// The cgroup v1 cpuset hierarchy, when mounted.
    pub cpuset: Option<CpusetV1>,
    /// Every thread.
    pub tasks: Vec<Task>,
}

/// Why CPUs cannot be isolated (a usage error: exit 2).
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// A CPU that is not online.
    #[error("--isolate: CPU {cpu} is not online (online CPUs: {online}); accepted: a list of online CPUs such as 1 or 2-3")]
    Offline {
        /// The CPU.
        cpu: u32,
        /// The online CPUs, as a list.
        online: String,
    },
    /// No CPU would be left for everything else.
    #[error("--isolate: {cpus} would leave no housekeeping CPU (online CPUs: {online}); keep at least one online CPU out of the list")]
    NoHousekeeping {
        /// The asked CPUs.
        cpus: String,
        /// The online CPUs.
        online: String,
    },
    /// An empty list.
    #[error("--isolate: no CPU named; accepted: a list of online CPUs such as 1 or 2-3")]
    Empty,
}

/// The sysctls isolating sets: (file, value, why).
pub const SYSCTLS: [(&str, &str, &str); 3] = [
    (
        "/proc/sys/kernel/timer_migration",
        "0",
        "timers stay on the CPU that armed them",
    ),
    (
        "/proc/sys/vm/stat_interval",
        "10",
        "per-CPU vmstat work every 10 s instead of every second",
    ),
    (
        "/proc/sys/kernel/sched_rt_runtime_us",
        "-1",
        "no real-time throttling of a spinning SCHED_FIFO thread",
    ),
];

/// One change isolating makes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// A sysfs/procfs value.
    Write {
        /// What kind of knob: `irq`, `workqueue`, `sysctl`.
        kind: &'static str,
        /// The file.
        path: PathBuf,
        /// The value to write.
        value: String,
        /// What it is, for the reader (`IRQ 36 virtio1-req.0`).
        what: String,
    },
    /// User processes moved into a new cgroup v1 cpuset of the housekeeping CPUs.
    Cpuset {
        /// The hierarchy's root (where they are now).
        root: PathBuf,
        /// The cpuset to create.
        dir: PathBuf,
        /// Its `cpuset.mems`.
        mems: String,
        /// The processes and their names.
        procs: Vec<(i32, String)>,
    },
    /// A thread's affinity (kernel threads that allow it; user threads where there is no
    /// cpuset to move them into).
    Affinity {
        /// `kthread` or `task`.
        kind: &'static str,
        /// Thread id.
        tid: i32,
        /// Its name.
        comm: String,
        /// The CPUs to set.
        cpus: Vec<u32>,
    },
}

impl Step {
    /// The change in a few words.
    pub fn describe(&self) -> String {
        match self {
            Step::Write { what, value, .. } => format!("{what} → {value}"),
            Step::Cpuset {
                dir, procs, mems, ..
            } => {
                let names: Vec<String> = procs.iter().map(|(p, c)| format!("{c} {p}")).collect();
                format!(
                    "{} user processes moved into cpuset {} (mems {mems}): {}",
                    procs.len(),
                    dir.display(),
                    names.join(", ")
                )
            }
            Step::Affinity {
                kind,
                tid,
                comm,
                cpus,
            } => format!(
                "{} {comm} ({tid}) → CPUs {}",
                if *kind == "kthread" {
                    "kernel thread"
                } else {
                    "thread"
                },
                format_cpu_list(cpus)
            ),
        }
    }
}

/// The changes for isolating `cpus`, and the housekeeping CPUs left for the rest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// The isolated CPUs.
    pub cpus: Vec<u32>,
    /// The others.
    pub housekeeping: Vec<u32>,
    /// The changes, in the order they are made.
    pub steps: Vec<Step>,
    /// What only a reboot can do (kernel command-line parameters), as advice.
    pub boot_advice: Vec<String>,
}

/// The CPUs left for housekeeping when `cpus` are isolated, or why there are none.
///
/// # Errors
/// An empty list, an offline CPU, or no CPU left.
pub fn housekeeping(cpus: &[u32], online: &[u32]) -> Result<Vec<u32>, PlanError> {
    if cpus.is_empty() {
        return Err(PlanError::Empty);
    }
    if let Some(&cpu) = cpus.iter().find(|c| !online.contains(c)) {
        return Err(PlanError::Offline {
            cpu,
            online: format_cpu_list(online),
        });
    }
    let hk: Vec<u32> = online
        .iter()
        .copied()
        .filter(|c| !cpus.contains(c))
        .collect();
    if hk.is_empty() {
        return Err(PlanError::NoHousekeeping {
            cpus: format_cpu_list(cpus),
            online: format_cpu_list(online),
        });
    }
    Ok(hk)
}

/// The kernel command-line parameters that isolate `cpus` from boot on (printed, never
/// applied).
pub fn boot_advice(cpus: &[u32], housekeeping: &[u32]) -> Vec<String> {
    let l = format_cpu_list(cpus);
    vec![
        format!("isolcpus=managed_irq,domain,{l}"),
        format!("nohz_full={l}"),
        format!("rcu_nocbs={l}"),
        format!("irqaffinity={}", format_cpu_list(housekeeping)),
    ]
}

fn meets(a: &[u32], b: &[u32]) -> bool {
    a.iter().any(|c| b.contains(c))
}

/// The hex mask value `mask` with the bits of `cpus` cleared: is any of them set?
fn mask_meets(mask: &str, cpus: &[u32]) -> bool {
    let words: Vec<&str> = mask.trim().split(',').collect();
    cpus.iter().any(|&c| {
        let from_end = (c / 32) as usize;
        words
            .len()
            .checked_sub(1 + from_end)
            .and_then(|i| u32::from_str_radix(words[i], 16).ok())
            .is_some_and(|w| w & (1 << (c % 32)) != 0)
    })
}

/// The changes that isolate `cpus` on a system looking like `s`; `own_pid` (latlab) and
/// its threads are left where they are. `sysctls` are the current values of
/// [`SYSCTLS`]' files (`None` where unreadable).
///
/// # Errors
/// The CPU list is not acceptable ([`housekeeping`]).
pub fn plan(
    cpus: &[u32],
    s: &Snapshot,
    sysctls: &[Option<String>],
    own_pid: i32,
) -> Result<Plan, PlanError> {
    let mut cpus = cpus.to_vec();
    cpus.sort_unstable();
    cpus.dedup();
    let hk = housekeeping(&cpus, &s.online)?;
    let hk_list = format_cpu_list(&hk);
    let mut steps = Vec::new();
    for irq in &s.irqs {
        let eff = irq.effective.as_deref().unwrap_or(&irq.affinity);
        if meets(&irq.affinity, &cpus) || meets(eff, &cpus) {
            steps.push(Step::Write {
                kind: "irq",
                path: PathBuf::from(format!("/proc/irq/{}/smp_affinity_list", irq.number)),
                value: hk_list.clone(),
                what: format!("IRQ {} {}", irq.number, irq.name)
                    .trim_end()
                    .to_string(),
            });
        }
    }
    let hk_mask = format_cpu_mask(&hk);
    if s.default_irq_mask
        .as_deref()
        .is_some_and(|m| mask_meets(m, &cpus))
    {
        steps.push(Step::Write {
            kind: "irq",
            path: "/proc/irq/default_smp_affinity".into(),
            value: hk_mask.clone(),
            what: "default IRQ affinity".into(),
        });
    }
    for (path, mask) in &s.wq_masks {
        if mask_meets(mask, &cpus) {
            steps.push(Step::Write {
                kind: "workqueue",
                path: path.clone(),
                value: hk_mask.clone(),
                what: format!("workqueue cpumask {}", path.display()),
            });
        }
    }
    for ((file, value, _), now) in SYSCTLS.iter().zip(sysctls) {
        if now.as_deref().is_some_and(|n| n.trim() != *value) {
            let path = PathBuf::from(file);
            steps.push(Step::Write {
                kind: "sysctl",
                what: crate::journal::entry::knob_name(&path),
                path,
                value: (*value).to_string(),
            });
        }
    }
    let user = |t: &&Task| t.flags & PF_KTHREAD == 0 && t.pid != own_pid;
    match &s.cpuset {
        Some(cs) => {
            let procs: Vec<(i32, String)> = cs
                .procs
                .iter()
                .filter_map(|&p| {
                    let t = s.tasks.iter().find(|t| t.tid == p)?;
                    user(&t).then(|| (p, t.comm.clone()))
                })
                .collect();
            if !procs.is_empty() {
                steps.push(Step::Cpuset {
                    root: cs.root.clone(),
                    dir: cs.root.join(format!("latlab-housekeeping-{own_pid}")),
                    mems: cs.mems.clone(),
                    procs,
                });
            }
        }
        None => {
            for t in s.tasks.iter().filter(user) {
                push_affinity(&mut steps, "task", t, &cpus);
            }
        }
    }
    for t in &s.tasks {
        if t.flags & PF_KTHREAD != 0 && t.flags & PF_NO_SETAFFINITY == 0 {
            push_affinity(&mut steps, "kthread", t, &cpus);
        }
    }
    Ok(Plan {
        boot_advice: boot_advice(&cpus, &hk),
        cpus,
        housekeeping: hk,
        steps,
    })
}

/// A thread that may run on an isolated CPU and on others keeps only the others; one
/// bound to isolated CPUs alone (per-CPU work) stays.
fn push_affinity(steps: &mut Vec<Step>, kind: &'static str, t: &Task, cpus: &[u32]) {
    let keep: Vec<u32> = t
        .affinity
        .iter()
        .copied()
        .filter(|c| !cpus.contains(c))
        .collect();
    if keep.len() < t.affinity.len() && !keep.is_empty() {
        steps.push(Step::Affinity {
            kind,
            tid: t.tid,
            comm: t.comm.clone(),
            cpus: keep,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(tid: i32, pid: i32, comm: &str, flags: u64, affinity: &[u32]) -> Task {
        Task {
            tid,
            pid,
            comm: comm.into(),
            flags,
            affinity: affinity.to_vec(),
        }
    }

    fn guest() -> Snapshot {
        Snapshot {
            online: vec![0, 1],
            irqs: vec![
                Irq {
                    number: 36,
                    name: "virtio1-req.0".into(),
                    affinity: vec![0, 1],
                    effective: Some(vec![1]),
                },
                Irq {
                    number: 40,
                    name: "virtio3-config".into(),
                    affinity: vec![0],
                    effective: Some(vec![0]),
                },
            ],
            default_irq_mask: Some("3".into()),
            wq_masks: vec![("/sys/devices/virtual/workqueue/cpumask".into(), "3".into())],
            cpuset: Some(CpusetV1 {
                root: "/sys/fs/cgroup/cpuset".into(),
                mems: "0".into(),
                procs: vec![1, 2, 500, 900],
            }),
            tasks: vec![
                task(1, 1, "init", 0x400100, &[0, 1]),
                task(2, 2, "kthreadd", PF_KTHREAD, &[0, 1]),
                task(30, 30, "ksoftirqd/1", PF_KTHREAD | PF_NO_SETAFFINITY, &[1]),
                task(31, 31, "rcu_preempt", PF_KTHREAD, &[0, 1]),
                task(500, 500, "bash", 0x400100, &[0, 1]),
                task(900, 900, "latlab", 0x400100, &[0, 1]),
            ],
        }
    }

    #[test]
    fn the_guest_plan_moves_irqs_work_tasks_and_kernel_threads_off_cpu_1() {
        let sysctls = [Some("1".into()), Some("1".into()), Some("950000".into())];
        let p = plan(&[1], &guest(), &sysctls, 900).unwrap();
        assert_eq!(p.housekeeping, vec![0]);
        let d: Vec<String> = p.steps.iter().map(Step::describe).collect();
        assert_eq!(
            d,
            [
                "IRQ 36 virtio1-req.0 → 0",
                "default IRQ affinity → 1",
                "workqueue cpumask /sys/devices/virtual/workqueue/cpumask → 1",
                "kernel.timer_migration → 0",
                "vm.stat_interval → 10",
                "kernel.sched_rt_runtime_us → -1",
                "2 user processes moved into cpuset /sys/fs/cgroup/cpuset/latlab-housekeeping-900 (mems 0): init 1, bash 500",
                "kernel thread kthreadd (2) → CPUs 0",
                "kernel thread rcu_preempt (31) → CPUs 0",
            ]
        );
        assert!(
            matches!(&p.steps[6], Step::Cpuset { procs, .. } if procs == &[(1, "init".to_string()), (500, "bash".to_string())])
        );
        assert_eq!(p.boot_advice[1], "nohz_full=1");
        assert_eq!(p.boot_advice[3], "irqaffinity=0");
    }

    #[test]
    fn without_a_cpuset_user_threads_get_an_affinity_and_settled_values_are_left() {
        let mut s = guest();
        s.cpuset = None;
        let sysctls = [Some("0".into()), None, Some("-1".into())];
        let p = plan(&[1], &s, &sysctls, 900).unwrap();
        let d: Vec<String> = p.steps.iter().map(Step::describe).collect();
        assert!(
            d.contains(&"thread bash (500) → CPUs 0".to_string()),
            "{d:?}"
        );
        assert!(!d.iter().any(|x| x.contains("latlab")), "{d:?}");
        assert!(!d.iter().any(|x| x.contains("ksoftirqd")), "{d:?}");
        assert!(!d.iter().any(|x| x.contains("kernel.")), "{d:?}");
        assert!(!d.iter().any(|x| x.contains("vm.")), "{d:?}");
    }

    #[test]
    fn bad_lists_are_refused() {
        assert_eq!(
            housekeeping(&[0, 1], &[0, 1]).unwrap_err().to_string(),
            "--isolate: 0-1 would leave no housekeeping CPU (online CPUs: 0-1); keep at least one online CPU out of the list"
        );
        assert!(matches!(
            housekeeping(&[5], &[0, 1]),
            Err(PlanError::Offline { cpu: 5, .. })
        ));
        assert_eq!(housekeeping(&[], &[0, 1]), Err(PlanError::Empty));
        assert_eq!(housekeeping(&[1], &[0, 1, 2]), Ok(vec![0, 2]));
    }

    #[test]
    fn masks_are_read_by_bit() {
        assert!(mask_meets("3", &[1]));
        assert!(!mask_meets("1", &[1]));
        assert!(mask_meets("2,00000000", &[33]));
        assert!(!mask_meets("2,00000000", &[1]));
        assert!(!mask_meets("zz", &[0]));
    }
}
